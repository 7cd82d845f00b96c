// Groups: a folder holding __tiledb_group.tdb (empty marker) and/or
// __group/<timestamped name> group details files (one generic tile each),
// plus group metadata in __meta (read with LoadMetadata(storage, "__meta",
// ...)). Spec: format_spec/group_file_hierarchy.md, format_spec/group.md;
// TileDB's GroupDetails/GroupMember V1/V2 (tiledb/sm/group/) are the
// reference where the spec is wrong or silent (the member count is a uint64,
// not the uint32 the spec's table says).
//
// Group details file (the generic tile's data):
//   offset  type      field                 since
//   0       uint32    version               (1 or 2)
//   4       uint64    number of members
//   12      Member[]
//
// Member:
//   type      field                 since (member version)
//   uint32    member version        (1 or 2; may differ from the file's)
//   uint8     object type           (0 invalid/unknown, 1 group, 2 array)
//   uint8     relative              (URI relative to the group folder)
//   uint64    URI length
//   uint8[]   URI
//   uint8     name set
//   uint64    name length           only if name set
//   uint8[]   name                  only if name set
//   uint8     deleted               2
//
// Which details files count at timestamp T: those of __group whose range
// lies within [0, T] and that no visible vacuum file retires (as for
// metadata, core/metadata/metadata.h), ordered by (t1, t2, uuid). If the
// latest of them is a version-1 file (its name carries no format version or
// version 1), it alone is the group (TileDB's load_group_from_uri).
// Otherwise every file is applied in order; each must be a version-2 file.
// Applying a member: its key is its name if set, else its URI; a deleted
// member removes the key, any other replaces it.
//
// Legacy groups (a __tiledb_group.tdb marker and no __group folder, written
// before format 12) have no member list: TileDB opens them with no members.
// ListChildObjects lists their subfolders the way tiledb_object_ls does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/filters/filter_pipeline.h"
#include "core/storage/storage.h"
#include "core/util/bytes.h"
#include "core/util/limits.h"
#include "core/util/result.h"

namespace tiledbfs::core {

inline constexpr char kGroupMarkerFile[] = "__tiledb_group.tdb";
inline constexpr char kGroupDetailsDir[] = "__group";
inline constexpr char kGroupMetadataDir[] = "__meta";

// Format-version predicates (docs/style.md 3).
inline bool HasMemberDeletedFlag(uint32_t member_version) { return member_version >= 2; }
inline bool IsKnownGroupDetailsVersion(uint32_t v) { return v == 1 || v == 2; }

struct GroupMember {
  enum Type : uint8_t { kArray, kGroup, kUnknown };  // kUnknown: TileDB's INVALID (0)

  // The member's name; when none was set, the last path part of its URI.
  std::string name;
  bool name_set = false;
  // As stored: relative to the group folder when `relative`, else an
  // absolute URI ("file:///...", "s3://...", "tiledb://...").
  std::string uri;
  bool relative = false;
  Type type = kUnknown;

  // TileDB's member key: the name if set, else the URI.
  const std::string& key() const { return name_set ? name : uri; }
  bool operator==(const GroupMember&) const = default;
};

// One member record of a details file.
struct GroupMemberRecord {
  uint32_t version = 0;
  GroupMember member;
  bool deleted = false;  // always false for member version 1
};

struct GroupDetailsFile {
  uint32_t version = 0;
  std::vector<GroupMemberRecord> members;
};

// Parses the data of one details file's generic tile. The data must be
// consumed exactly. Errors: kCorrupt (truncation, a bool byte other than 0/1,
// trailing bytes, a member count larger than the bytes could hold),
// kUnsupported (a file or member version other than 1 or 2, an object type
// byte other than 0, 1, 2).
Result<GroupDetailsFile> ParseGroupDetails(Bytes payload, uint64_t file_offset);

// True if the storage root is a group: it holds __tiledb_group.tdb or a
// __group folder (TileDB's is_group).
bool IsGroup(const Storage& storage);

// The members of the group at the storage root as of `timestamp_end`
// (UINT64_MAX: latest), sorted by key. A group without a __group folder
// (legacy or new and empty) has none. `key` decrypts the details tiles of an
// encrypted group. Errors carry the file's path: those of listing and vacuum
// files (as LoadMetadata), of the generic tile (kKey: missing or wrong key),
// of ParseGroupDetails, and kCorrupt for a version-1 details file that is not
// the latest when the latest is version 2.
Result<std::vector<GroupMember>> LoadGroupMembers(const Storage& storage, uint64_t timestamp_end,
                                                  const EncryptionKey* key, const Limits& limits);

// The subfolders of the storage root that are arrays (hold __schema/ or
// __array_schema.tdb) or groups (IsGroup), as relative members named after
// the folder, sorted by name. This is what tiledb_object_ls reports and how
// the contents of legacy groups were enumerated; it reads no file contents.
Result<std::vector<GroupMember>> ListChildObjects(const Storage& storage);

}  // namespace tiledbfs::core
