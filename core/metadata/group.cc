#include "core/metadata/group.h"

#include <fmt/format.h>

#include <map>
#include <string_view>

#include "core/metadata/timestamped_files.h"
#include "core/tile/generic_tile.h"
#include "core/util/byte_reader.h"

namespace tiledbfs::core {
namespace {

// Smallest member record: version, type, relative, URI length, name set.
constexpr uint64_t kMinMemberSize = 4 + 1 + 1 + 8 + 1;

Result<GroupMember::Type> ParseObjectType(uint8_t byte, uint64_t offset) {
  switch (byte) {
    case 0:
      return GroupMember::kUnknown;
    case 1:
      return GroupMember::kGroup;
    case 2:
      return GroupMember::kArray;
    default:
      return Error::Unsupported(
          fmt::format("offset {}: group member.object type: unknown object type {}", offset, byte));
  }
}

std::string LastPathPart(std::string_view uri) {
  while (!uri.empty() && uri.back() == '/') uri.remove_suffix(1);
  size_t slash = uri.find_last_of('/');
  return std::string(slash == std::string_view::npos ? uri : uri.substr(slash + 1));
}

Result<GroupMemberRecord> ParseMember(ByteReader& r) {
  GroupMemberRecord rec;
  const uint64_t version_offset = r.offset();
  ASSIGN_OR_RETURN(rec.version, r.Read<uint32_t>("group member.version"));
  if (!IsKnownGroupDetailsVersion(rec.version)) {
    return Error::Unsupported(
        fmt::format("offset {}: group member.version: unsupported group member version {}",
                    version_offset, rec.version));
  }
  const uint64_t type_offset = r.offset();
  ASSIGN_OR_RETURN(uint8_t type_byte, r.Read<uint8_t>("group member.object type"));
  ASSIGN_OR_RETURN(rec.member.type, ParseObjectType(type_byte, type_offset));
  ASSIGN_OR_RETURN(rec.member.relative, r.ReadBool("group member.relative"));
  ASSIGN_OR_RETURN(uint64_t uri_length, r.Read<uint64_t>("group member.URI length"));
  ASSIGN_OR_RETURN(rec.member.uri, r.ReadString(uri_length, "group member.URI"));
  ASSIGN_OR_RETURN(rec.member.name_set, r.ReadBool("group member.name set"));
  if (rec.member.name_set) {
    ASSIGN_OR_RETURN(uint64_t name_length, r.Read<uint64_t>("group member.name length"));
    ASSIGN_OR_RETURN(rec.member.name, r.ReadString(name_length, "group member.name"));
  } else {
    rec.member.name = LastPathPart(rec.member.uri);
  }
  if (HasMemberDeletedFlag(rec.version)) {
    ASSIGN_OR_RETURN(rec.deleted, r.ReadBool("group member.deleted"));
  }
  return rec;
}

void Apply(const GroupMemberRecord& rec, bool honour_deletions,
           std::map<std::string, GroupMember>* members) {
  const std::string& key = rec.member.key();
  if (honour_deletions && rec.deleted) {
    members->erase(key);
  } else {
    members->insert_or_assign(key, rec.member);
  }
}

Result<GroupDetailsFile> ReadDetails(const Storage& storage, const std::string& path,
                                     const EncryptionKey* key, const Limits& limits) {
  ASSIGN_OR_RETURN(GenericTile tile, ReadGenericTile(storage, path, 0, key, limits));
  ASSIGN_OR_RETURN_CTX(GroupDetailsFile details, ParseGroupDetails(tile.data, 0),
                       path + " (tile data)");
  return details;
}

}  // namespace

Result<GroupDetailsFile> ParseGroupDetails(Bytes payload, uint64_t file_offset) {
  ByteReader r(payload, file_offset);
  GroupDetailsFile out;
  const uint64_t version_offset = r.offset();
  ASSIGN_OR_RETURN(out.version, r.Read<uint32_t>("group details.version"));
  if (!IsKnownGroupDetailsVersion(out.version)) {
    return Error::Unsupported(
        fmt::format("offset {}: group details.version: unsupported group version {}",
                    version_offset, out.version));
  }
  ASSIGN_OR_RETURN(uint64_t count, r.Read<uint64_t>("group details.number of members"));
  if (count > r.remaining() / kMinMemberSize) {
    return r.Corrupt(
        "group details.number of members",
        fmt::format("{} members cannot fit in the {} bytes left", count, r.remaining()));
  }
  out.members.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(GroupMemberRecord rec, ParseMember(r));
    out.members.push_back(std::move(rec));
  }
  if (!r.empty()) {
    return r.Corrupt("group details", fmt::format("{} bytes after the last member", r.remaining()));
  }
  return out;
}

bool IsGroup(const Storage& storage) {
  return storage.IsDir(kGroupDetailsDir) || storage.Exists(kGroupMarkerFile);
}

Result<std::vector<GroupMember>> LoadGroupMembers(const Storage& storage, uint64_t timestamp_end,
                                                  const EncryptionKey* key, const Limits& limits) {
  ASSIGN_OR_RETURN(internal::TimestampedFolder folder,
                   internal::ListTimestampedFolder(storage, kGroupDetailsDir, limits));
  ASSIGN_OR_RETURN(std::vector<internal::TimestampedFile> files,
                   internal::SelectAtTimestamp(storage, folder, timestamp_end, limits));
  std::map<std::string, GroupMember> members;
  if (!files.empty()) {
    const internal::TimestampedFile& latest = files.back();
    // TileDB decides by the latest file's name: no version (four '_') or
    // version 1 means a version-1 group, whose latest file holds all members.
    if (latest.name.version <= 1) {
      ASSIGN_OR_RETURN(GroupDetailsFile details, ReadDetails(storage, latest.path, key, limits));
      // A version-1 details file adds every member it lists (deleted flags of
      // version-2 member records inside it are not looked at).
      const bool honour_deletions = details.version >= 2;
      for (const GroupMemberRecord& rec : details.members) Apply(rec, honour_deletions, &members);
    } else {
      for (const internal::TimestampedFile& f : files) {
        ASSIGN_OR_RETURN(GroupDetailsFile details, ReadDetails(storage, f.path, key, limits));
        if (details.version != 2) {
          return Error::Corrupt(
              fmt::format("{}: group details version {} among version-2 details files; expected 2",
                          f.path, details.version));
        }
        for (const GroupMemberRecord& rec : details.members) Apply(rec, true, &members);
      }
    }
  }
  std::vector<GroupMember> out;
  out.reserve(members.size());
  for (auto& [k, m] : members) out.push_back(std::move(m));
  return out;
}

Result<std::vector<GroupMember>> ListChildObjects(const Storage& storage) {
  ASSIGN_OR_RETURN(std::vector<DirEntry> entries, storage.List(""));
  std::vector<GroupMember> out;
  for (const DirEntry& e : entries) {
    if (!e.is_dir) continue;
    GroupMember m;
    m.name = e.name;
    m.name_set = false;
    m.uri = e.name;
    m.relative = true;
    if (storage.IsDir(JoinPath(e.name, "__schema")) ||
        (storage.Exists(JoinPath(e.name, "__array_schema.tdb")) &&
         !storage.IsDir(JoinPath(e.name, "__array_schema.tdb")))) {
      m.type = GroupMember::kArray;
    } else if (storage.IsDir(JoinPath(e.name, kGroupDetailsDir)) ||
               storage.Exists(JoinPath(e.name, kGroupMarkerFile))) {
      m.type = GroupMember::kGroup;
    } else {
      continue;
    }
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace tiledbfs::core
