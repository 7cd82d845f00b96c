#include "core/metadata/metadata.h"

#include <fmt/format.h>

#include <algorithm>

#include "core/metadata/timestamped_files.h"
#include "core/tile/generic_tile.h"
#include "core/util/byte_reader.h"

namespace tiledbfs::core {

Result<std::vector<MetadataEntry>> ParseMetadataFile(Bytes payload, uint64_t file_offset) {
  ByteReader r(payload, file_offset);
  std::vector<MetadataEntry> entries;
  while (!r.empty()) {
    MetadataEntry e;
    ASSIGN_OR_RETURN(uint32_t key_length, r.Read<uint32_t>("metadata entry.key length"));
    ASSIGN_OR_RETURN(e.key, r.ReadString(key_length, "metadata entry.key"));
    ASSIGN_OR_RETURN(e.deleted, r.ReadBool("metadata entry.deletion"));
    if (!e.deleted) {
      const uint64_t type_offset = r.offset();
      ASSIGN_OR_RETURN(uint8_t type_byte, r.Read<uint8_t>("metadata entry.value type"));
      auto type = ParseDatatype(type_byte);
      if (!type.ok()) {
        return Error(type.error().code(),
                     fmt::format("offset {}: metadata entry.value type of key '{}': {}",
                                 type_offset, e.key, type.error().message()));
      }
      e.value.type = *type;
      ASSIGN_OR_RETURN(e.value.num, r.Read<uint32_t>("metadata entry.number of values"));
      // num < 2^32 and a type is at most 8 bytes: the product cannot overflow.
      const uint64_t value_size = uint64_t{e.value.num} * DatatypeSize(e.value.type);
      ASSIGN_OR_RETURN(Bytes value, r.ReadBytes(value_size, "metadata entry.value"));
      e.value.value.assign(value.begin(), value.end());
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

void ApplyMetadataEntries(std::vector<MetadataEntry> entries,
                          std::map<std::string, MetadataValue>* map) {
  for (MetadataEntry& e : entries) {
    if (e.deleted) {
      map->erase(e.key);
    } else {
      map->insert_or_assign(std::move(e.key), std::move(e.value));
    }
  }
}

Result<std::vector<MetadataFile>> SelectMetadataFiles(const Storage& storage,
                                                      const std::string& meta_dir,
                                                      uint64_t timestamp_end,
                                                      const Limits& limits) {
  ASSIGN_OR_RETURN(internal::TimestampedFolder folder,
                   internal::ListTimestampedFolder(storage, meta_dir, limits));
  ASSIGN_OR_RETURN(std::vector<internal::TimestampedFile> selected,
                   internal::SelectAtTimestamp(storage, folder, timestamp_end, limits));
  std::vector<MetadataFile> out;
  out.reserve(selected.size());
  for (auto& f : selected) out.push_back(MetadataFile{std::move(f.path), std::move(f.name)});
  return out;
}

Result<std::map<std::string, MetadataValue>> LoadMetadata(const Storage& storage,
                                                          const std::string& meta_dir,
                                                          uint64_t timestamp_end,
                                                          const EncryptionKey* key,
                                                          const Limits& limits) {
  ASSIGN_OR_RETURN(std::vector<MetadataFile> files,
                   SelectMetadataFiles(storage, meta_dir, timestamp_end, limits));
  std::map<std::string, MetadataValue> map;
  for (const MetadataFile& f : files) {
    ASSIGN_OR_RETURN(GenericTile tile, ReadGenericTile(storage, f.path, 0, key, limits));
    ASSIGN_OR_RETURN_CTX(std::vector<MetadataEntry> entries, ParseMetadataFile(tile.data, 0),
                         f.path + " (tile data)");
    ApplyMetadataEntries(std::move(entries), &map);
  }
  return map;
}

Result<std::vector<uint64_t>> MetadataTimestamps(const Storage& storage,
                                                 const std::string& meta_dir,
                                                 const Limits& limits) {
  ASSIGN_OR_RETURN(internal::TimestampedFolder folder,
                   internal::ListTimestampedFolder(storage, meta_dir, limits));
  std::vector<uint64_t> out;
  out.reserve(folder.files.size());
  for (const auto& f : folder.files) out.push_back(f.name.t2);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace tiledbfs::core
