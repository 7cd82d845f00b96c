// What an array folder holds, read from listings and the small commit
// files: schemas, fragments and how each was committed, vacuum and ignore
// records, consolidated commit lists, delete/update commits, array metadata
// files and consolidated fragment metadata. No fragment metadata is read here.
// Spec: format_spec/array_file_hierarchy.md, consolidated_commits_file.md,
// vacuum_file.md, ignore_file.md, timestamped_name.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/directory/timestamped_name.h"
#include "core/storage/storage.h"
#include "core/util/limits.h"

namespace tiledbfs::core {

enum class CommitKind {
  kOk,            // legacy <name>.ok next to the fragment folder (< 12)
  kWrt,           // __commits/<name>.wrt
  kConsolidated,  // listed in a __commits/*.con file
  kImplicit,      // format < 5: committed when __fragment_metadata.tdb exists
};

struct SchemaFile {
  std::string path;   // "__schema/<name>" or "__array_schema.tdb"
  std::string name;   // "<name>" or "__array_schema.tdb"
  uint64_t t1 = 0, t2 = 0;  // legacy file: 0, 0 (older than any __schema one)
};

struct FragmentEntry {
  std::string dir;          // "__fragments/<name>" or legacy "<name>"
  TimestampedName name;
  CommitKind commit = CommitKind::kWrt;
  std::string commit_file;  // path of the .ok/.wrt/.con that commits it
};

// A delete (.del) or update (.upd) commit: the serialized condition lives in
// the file, parsed by core/format/delete_condition.h.
struct ConditionCommit {
  std::string path;         // "__commits/<name>.del"
  TimestampedName name;
  bool is_update = false;
  // When the commit is inside a .con file, its serialized bytes are here and
  // path names the .con file.
  bool in_consolidated_file = false;
  ByteVec contents;
};

// A vacuum file: fragments (or metadata files) superseded by consolidation.
struct VacuumFile {
  std::string path;
  TimestampedName name;
  std::vector<std::string> entries;  // storage-relative paths of what it retires
};

struct ArrayListing {
  std::vector<SchemaFile> schemas;          // sorted by (t1, t2, name)
  std::vector<FragmentEntry> fragments;     // committed only, sorted by (t1, t2, uuid)
  std::vector<std::string> uncommitted;     // fragment dirs with no commit (never read)
  std::vector<std::string> ignored;         // fragment dirs named in .ign files
  std::vector<VacuumFile> fragment_vacuums; // __commits/*.vac and legacy *.vac
  std::vector<ConditionCommit> conditions;  // deletes and updates, sorted by name
  std::vector<std::string> consolidated_commit_files;  // __commits/*.con
  std::vector<TimestampedName> metadata_files;         // __meta/<name> (not .vac/.ok)
  std::vector<VacuumFile> metadata_vacuums;            // __meta/*.vac
  std::vector<std::string> fragment_meta_files;        // __fragment_meta/*.meta and legacy *.meta
  bool has_enumerations_dir = false;
};

// Lists the array at the storage root. kNotFound if it is not an array (no
// schema at all). Unknown files are ignored; malformed names of known kinds
// are kCorrupt errors naming the file.
Result<ArrayListing> ListArray(const Storage& storage, const Limits& limits = DefaultLimits());

// Parses a consolidated commits file (.con): a text list of commit paths
// relative to the array, one per line. Returns each entry.
Result<std::vector<std::string>> ParseConsolidatedCommits(Bytes contents);

// Parses a vacuum (.vac) or ignore (.ign) file: one URI per line; entries are
// reduced to storage-relative paths (the part after the array's folder).
Result<std::vector<std::string>> ParseUriList(Bytes contents);

}  // namespace tiledbfs::core
