// What an array folder holds, read from listings and the small commit
// files: schemas, fragments and how each was committed, vacuum and ignore
// records, consolidated commit lists, delete/update commits, array metadata
// files and consolidated fragment metadata. No fragment metadata is read here,
// and nothing is decided about timestamps: the listing reports facts, a view
// at a timestamp is computed from it elsewhere.
// Spec: format_spec/array_file_hierarchy.md, consolidated_commits_file.md,
// vacuum_file.md, ignore_file.md, timestamped_name.md; TileDB's
// tiledb/sm/array/array_directory.cc where the spec is silent.
//
// Which fragments are committed (as TileDB decides):
//   __fragments/<n>  committed by __commits/<n>.wrt or by a "__commits/<n>.wrt"
//                    line of a __commits/*.con file not named in any .ign file.
//                    TileDB never lists __fragments: a commit whose folder is
//                    missing still counts (dir_exists = false).
//   <n> (legacy)     a folder in the array root, committed by <n>.ok beside it,
//                    by a "<n>.ok" line of a .con file (not ignored), or, when
//                    its name implies format < 5, by <n>/__fragment_metadata.tdb.
// Precedence of the commit recorded: .con, then .wrt/.ok, then implicit.
//
// Folder entries are of a known kind by folder and extension; a known kind
// with a malformed timestamped name is kCorrupt naming the file. Everything
// else is ignored:
//   root             legacy fragment folders (see above; a folder whose name
//                    is not a timestamped name is ignored), <n>.ok, <n>.vac,
//                    <n>.meta, __array_schema.tdb
//   __schema/        files without extension (the __enumerations folder is not
//                    a schema)
//   __fragments/     folders; a name that is not a timestamped name is ignored
//                    (TileDB finds fragments only through commit files)
//   __commits/       .wrt .del .upd .con .ign .vac
//   __fragment_meta/ .meta
//   __meta/          files without extension (metadata) and .vac; others
//                    (".tmp" partial writes) ignored
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/directory/timestamped_name.h"
#include "core/storage/storage.h"
#include "core/util/bytes.h"
#include "core/util/limits.h"

namespace tiledbfs::core {

// Commit files exist from format version 5; before, a fragment folder holding
// __fragment_metadata.tdb is committed.
inline bool HasCommitFiles(uint32_t format_version) { return format_version >= 5; }

enum class CommitKind {
  kOk,            // legacy <name>.ok next to the fragment folder (< 12)
  kWrt,           // __commits/<name>.wrt
  kConsolidated,  // listed in a __commits/*.con file
  kImplicit,      // format < 5: committed when __fragment_metadata.tdb exists
};

struct SchemaFile {
  std::string path;         // "__schema/<name>" or "__array_schema.tdb"
  std::string name;         // "<name>" or "__array_schema.tdb"
  uint64_t t1 = 0, t2 = 0;  // legacy file: 0, 0 (older than any __schema one)
};

struct FragmentEntry {
  std::string dir;  // "__fragments/<name>" or legacy "<name>"
  TimestampedName name;
  CommitKind commit = CommitKind::kWrt;
  // Path of the .ok/.wrt/.con that commits it; for kImplicit the
  // "<dir>/__fragment_metadata.tdb" whose existence commits it.
  std::string commit_file;
  // Whether the fragment folder exists. A .wrt or .con commit of a folder that
  // is gone (deleted without an .ign entry) still counts, as in TileDB; such a
  // fragment cannot be read.
  bool dir_exists = true;
};

// A delete (.del) or update (.upd) commit: the serialized condition lives in
// the file (a generic tile), parsed by core/metadata.
struct ConditionCommit {
  std::string path;      // "__commits/<name>.del", or the .con file
  TimestampedName name;  // name of the .del/.upd commit itself
  bool is_update = false;
  // When the commit is inside a .con file, path names the .con file, contents
  // holds the condition bytes (what the .del/.upd file held) and offset is
  // where they start in the .con file. Otherwise contents is empty and the
  // condition is the whole file at path.
  bool in_consolidated_file = false;
  uint64_t offset = 0;
  ByteVec contents;
  // The .con entry is named in an .ign file. TileDB still applies such a
  // condition (its ignore files only drop fragment commits); reported so the
  // reader can decide.
  bool ignored = false;
};

// A vacuum file: fragments (or metadata files) superseded by consolidation.
struct VacuumFile {
  std::string path;
  TimestampedName name;
  std::vector<std::string> entries;  // storage-relative paths of what it retires
};

struct ArrayListing {
  std::vector<SchemaFile> schemas;       // sorted by (t1, t2, name)
  std::vector<FragmentEntry> fragments;  // committed only, sorted by (t1, t2, uuid)
  std::vector<std::string> uncommitted;  // fragment dirs with no commit (never read), sorted
  // Fragment dirs named (by their .wrt/.ok) in .ign files and committed no
  // other way, sorted. Informational: `fragments` already excludes them.
  std::vector<std::string> ignored;
  std::vector<VacuumFile> fragment_vacuums;  // __commits/*.vac and legacy *.vac, sorted by name
  std::vector<ConditionCommit> conditions;   // deletes and updates, sorted by name (t1, t2, uuid)
  std::vector<std::string> consolidated_commit_files;  // __commits/*.con, sorted
  std::vector<std::string> ignore_files;               // __commits/*.ign, sorted
  std::vector<TimestampedName> metadata_files;         // __meta/<name> (not .vac), sorted
  std::vector<VacuumFile> metadata_vacuums;            // __meta/*.vac, sorted by name
  // Legacy root *.meta first, then __fragment_meta/*.meta, each by name: the
  // order in which TileDB consults them (the first file holding a fragment's
  // footer wins).
  std::vector<std::string> fragment_meta_files;
  bool has_enumerations_dir = false;  // __schema/__enumerations
  bool has_labels_dir = false;        // __labels (dimension labels, format 18+)
};

// Lists the array at the storage root. kNotFound if it is not an array (no
// schema at all). Reads only the .con, .ign and .vac files. Errors: kCorrupt
// for malformed names of known kinds and malformed commit/vacuum files (the
// message names the file), kOutOfMemory when a folder holds more than
// limits.max_files entries or a commit/vacuum file exceeds
// limits.max_metadata_bytes, kIo from the storage.
Result<ArrayListing> ListArray(const Storage& storage, const Limits& limits);

// Whether folder `dir` (storage-relative) never changes once it exists: a
// fragment's, "__fragments/<name>" or a legacy "__<t1>_<t2>_<uuid>" in the
// root (hex digits and '_' only, unlike __schema, __meta...), and any folder
// below one. What a storage may cache forever (StorageOptions, given to
// OpenStorage by whoever opens an array or group).
bool IsImmutableFolder(std::string_view dir);

// Whether file `path` (storage-relative) is metadata read whole to open an
// array or group and list it, not cell data: a fragment's
// __fragment_metadata.tdb, and every file outside a fragment's folder
// (schemas, commits, consolidated footers, array metadata, group files).
// What a store over the network may keep in the persistent index
// (StorageOptions::kept_file).
bool IsMetadataFile(std::string_view path);

// Whether `after` only adds to `before` what happened after `latest` (the
// newest instant of `before`), so that every view at T <= latest reads the
// same in both: nothing committed before is gone or retired (vacuum files
// come with consolidations, .ign files drop fragments), and everything new
// starts after `latest`. Anything else (a consolidation, a vacuum, a write
// at an old timestamp) may have rewritten a past view.
bool OnlyAppended(const ArrayListing& before, uint64_t latest, const ArrayListing& after);

// One entry of a consolidated commits file.
struct ConsolidatedCommit {
  std::string path;      // as written, reduced by ReduceToStoragePath ("__commits/<n>.wrt")
  TimestampedName name;  // parsed from the last component (extension included)
  // .del/.upd entries: the serialized condition (a whole .del/.upd file) and
  // its offset in the .con file.
  uint64_t condition_offset = 0;
  ByteVec condition;
};

// Parses a consolidated commits file (.con): lines "<path>\n" relative to the
// array, where a path ending in .del or .upd is followed by a uint64 size and
// that many bytes of serialized condition. Entries must end in .ok, .wrt,
// .del or .upd and carry timestamped names. `file_offset` is the offset of
// contents[0] (for messages). kCorrupt (with offset) on anything else,
// including a condition size beyond the bytes present (nothing allocated).
Result<std::vector<ConsolidatedCommit>> ParseConsolidatedCommits(Bytes contents,
                                                                 uint64_t file_offset = 0);

// Parses a vacuum (.vac) or ignore (.ign) file: one URI or path per line (the
// last newline optional); entries are reduced to storage-relative paths with
// ReduceToStoragePath. kCorrupt on an empty line or an entry with no name.
Result<std::vector<std::string>> ParseUriList(Bytes contents, uint64_t file_offset = 0);

// Reduces a URI or path naming something in an array (or group) folder to its
// storage-relative path: "<folder>/<name>" when the parent is one of
// __fragments, __commits, __meta, __fragment_meta, __schema, __group, else
// "<name>" (a legacy fragment in the root). Accepts absolute URIs
// ("file:///a/arr/__fragments/x", written before format 19), paths relative
// to the array with or without a leading '/', and one trailing '/'.
// kCorrupt if the last component is empty, "." or "..".
Result<std::string> ReduceToStoragePath(std::string_view uri);

}  // namespace tiledbfs::core
