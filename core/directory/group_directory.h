// What a group folder holds, from its listing and vacuum files: the group
// details files, the legacy marker, the group metadata files. The contents of
// the details and metadata files are parsed elsewhere (core/metadata).
// Spec: format_spec/group_file_hierarchy.md, vacuum_file.md; TileDB's
// tiledb/sm/group/group_directory.cc where the spec is silent.
//
//   __tiledb_group.tdb     empty marker (every TileDB version writes it)
//   __group/<name>         group details files (timestamped names, format 2+
//                          carry the group format version)
//   __group/<name>.vac     vacuum files of consolidated details files
//   __meta/<name>          group metadata files
//   __meta/<name>.vac      vacuum files of consolidated metadata (TileDB writes
//                          absolute URIs here at every version)
// Member arrays and groups are ordinary subfolders and are not listed here.
// Malformed names of known kinds are kCorrupt naming the file; other entries
// (".tmp" partial writes, folders) are ignored.
#pragma once

#include <vector>

#include "core/directory/array_directory.h"
#include "core/directory/timestamped_name.h"
#include "core/storage/storage.h"
#include "core/util/limits.h"

namespace tiledbfs::core {

struct GroupListing {
  bool has_group_file = false;                  // __tiledb_group.tdb
  std::vector<TimestampedName> detail_files;    // __group/<name> (not .vac), sorted
  std::vector<VacuumFile> detail_vacuums;       // __group/*.vac, sorted by name
  std::vector<TimestampedName> metadata_files;  // __meta/<name> (not .vac), sorted
  std::vector<VacuumFile> metadata_vacuums;     // __meta/*.vac, sorted by name
};

// Lists the group at the storage root. kNotFound if it is not a group
// (neither __tiledb_group.tdb nor __group/ exists). Errors as ListArray.
Result<GroupListing> ListGroup(const Storage& storage, const Limits& limits);

}  // namespace tiledbfs::core
