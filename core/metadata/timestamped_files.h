// Internal to tiledbfs_metadata: choosing the files of a folder of timestamped
// files (__meta, __group) that are read when opening at a timestamp. The same
// rules hold for array metadata, group metadata and group details (TileDB's
// ArrayDirectory::compute_uris_to_vacuum / compute_filtered_uris with
// full-overlap semantics, and GroupDirectory's copies of them):
//   - ".tmp" files are partial writes: skipped;
//   - a ".vac" file whose range lies within [0, T] retires the files it
//     names (one URI per line, matched by last path part); so does one,
//     whatever its range, some of whose files are gone while others remain
//     (a vacuum under way: tiledbfs shows what is left after it);
//   - every other file whose range lies within [0, T] is read, in order of
//     (t1, t2, uuid).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/directory/timestamped_name.h"
#include "core/storage/storage.h"
#include "core/util/limits.h"
#include "core/util/result.h"

namespace tiledbfs::core::internal {

struct TimestampedFile {
  std::string path;  // "<dir>/<file name>"
  TimestampedName name;
};

struct TimestampedFolder {
  std::vector<TimestampedFile> files;    // non-vacuum files, sorted by name (t1, t2, uuid)
  std::vector<TimestampedFile> vacuums;  // ".vac" files
};

// Lists `dir` (missing: empty). Subfolders are ignored; a file whose name is
// not a timestamped name is kCorrupt.
Result<TimestampedFolder> ListTimestampedFolder(const Storage& storage, const std::string& dir,
                                                const Limits& limits);

// The files read at `timestamp_end`, in application order.
Result<std::vector<TimestampedFile>> SelectAtTimestamp(const Storage& storage,
                                                       const TimestampedFolder& folder,
                                                       uint64_t timestamp_end,
                                                       const Limits& limits);

}  // namespace tiledbfs::core::internal
