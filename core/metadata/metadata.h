// Array and group metadata: <dir>/__meta/<timestamped name>, one generic tile
// per file whose data is a list of entries, applied file by file in timestamp
// order. Spec: format_spec/metadata.md. Where the spec is silent, TileDB's
// Metadata::deserialize (tiledb/sm/metadata/metadata.cc) and
// ArrayDirectory::load_array_meta_uris / GroupDirectory::load_group_meta_uris
// (which files are read when opening at a timestamp) are the reference.
//
// One entry (entries follow each other until the tile data ends):
//   offset  type      field              present
//   0       uint32    key length
//   4       uint8[]   key
//   .       uint8     deletion           1 = the key is deleted, 0 = put
//   .       uint8     value type         put only (a Datatype byte)
//   .       uint32    number of values   put only
//   .       uint8[]   value              put only: number * size of the type
//
// Which files count when the array (or group) is opened at timestamp T:
//   - names ending in ".tmp" are partial writes and are skipped;
//   - a vacuum file <name>.vac with t2 <= T retires every file it lists
//     (one URI per line; matched by last path part against this folder);
//   - every other file with t2 <= T is read (t1 >= 0 always holds);
//   - files are applied in order of (t1, t2, uuid); within the map a later
//     put replaces a key, a deletion removes it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/directory/timestamped_name.h"
#include "core/filters/filter_pipeline.h"
#include "core/format/datatype.h"
#include "core/storage/storage.h"
#include "core/util/bytes.h"
#include "core/util/limits.h"
#include "core/util/result.h"

namespace tiledbfs::core {

struct MetadataValue {
  Datatype type = Datatype::kUInt8;
  uint32_t num = 0;  // number of values (TileDB allows 0: a key with no value)
  ByteVec value;     // exactly num * DatatypeSize(type) bytes

  bool operator==(const MetadataValue&) const = default;
};

struct MetadataEntry {
  std::string key;  // arbitrary bytes (may contain '/', '%', NUL)
  bool deleted = false;
  MetadataValue value;  // empty when deleted
};

// Parses the unfiltered data of one metadata file's generic tile. Entries are
// returned in file order. `file_offset` is the offset of payload[0] as shown
// in messages (the loader passes 0: the data is the tile's unfiltered bytes).
// Errors: kCorrupt (truncated entry, deletion byte other than 0/1, value
// longer than the bytes left), kUnsupported (unknown value type byte). No
// allocation is made from a length before it is checked against the bytes
// present.
Result<std::vector<MetadataEntry>> ParseMetadataFile(Bytes payload, uint64_t file_offset);

// Applies parsed entries of one file on top of `map` (put replaces, deletion
// removes).
void ApplyMetadataEntries(std::vector<MetadataEntry> entries,
                          std::map<std::string, MetadataValue>* map);

// A metadata file chosen for reading at some timestamp.
struct MetadataFile {
  std::string path;  // storage-relative: "<meta_dir>/<name>"
  TimestampedName name;
};

// The files of `meta_dir` that are read when opening at `timestamp_end`, in
// the order they are applied (see the header comment). A missing folder
// yields no files. Errors: kCorrupt for an entry whose name is not a
// timestamped name (the message quotes it), errors of the storage, of vacuum
// files (read whole, capped at limits.max_metadata_bytes: kOutOfMemory), or
// kOutOfMemory for more than limits.max_files entries.
Result<std::vector<MetadataFile>> SelectMetadataFiles(const Storage& storage,
                                                      const std::string& meta_dir,
                                                      uint64_t timestamp_end, const Limits& limits);

// The metadata as of `timestamp_end` (UINT64_MAX: latest): every selected file
// decoded as a generic tile (decrypted with `key` when the array is
// encrypted) and applied in order. `meta_dir` is the folder relative to the
// storage root, "__meta" for an array or group at the root. A missing folder
// means no metadata (an empty map). Errors carry the file's path as context:
// those of SelectMetadataFiles, of the generic tile (kKey for a missing or
// wrong key) and of ParseMetadataFile.
Result<std::map<std::string, MetadataValue>> LoadMetadata(const Storage& storage,
                                                          const std::string& meta_dir,
                                                          uint64_t timestamp_end,
                                                          const EncryptionKey* key,
                                                          const Limits& limits);

// The instants at which the metadata changed, for the history listing: the
// sorted, distinct end timestamps (t2) of the metadata files in `meta_dir`
// (vacuum and .tmp files excluded). Opening at one of these instants shows
// the metadata written up to and including it. A missing folder yields none.
// Reads no file contents.
Result<std::vector<uint64_t>> MetadataTimestamps(const Storage& storage,
                                                 const std::string& meta_dir, const Limits& limits);

}  // namespace tiledbfs::core
