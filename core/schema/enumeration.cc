// Enumeration files: __schema/__enumerations/__<uuid>_<v>, one generic tile.
// Spec: format_spec/enumeration.md. TileDB writes (and its own reader
// expects) the enumeration's name and path name right after the version,
// which the spec table leaves out:
//
//   uint32 version (0) | uint32 name length, name | uint32 path name length,
//   path name | uint8 datatype | uint32 cell_val_num | bool ordered |
//   uint64 data size, data | (var only) uint64 offsets size, offsets
#include <fmt/format.h>

#include <cstring>

#include "core/schema/array_schema.h"
#include "core/tile/generic_tile.h"
#include "core/util/byte_reader.h"

namespace tiledbfs::core {
namespace {

constexpr uint32_t kEnumerationVersion = 0;

Result<Enumeration> ParseEnumerationBody(ByteReader& r) {
  Enumeration e;
  uint64_t at = r.offset();
  ASSIGN_OR_RETURN(uint32_t version, r.Read<uint32_t>("enumeration.version"));
  if (version > kEnumerationVersion) {
    return Error::Unsupported(fmt::format("offset {}: enumeration.version: {} is newer than {}", at,
                                          version, kEnumerationVersion));
  }
  ASSIGN_OR_RETURN(uint32_t name_size, r.Read<uint32_t>("enumeration.name_size"));
  ASSIGN_OR_RETURN(e.name, r.ReadString(name_size, "enumeration.name"));
  ASSIGN_OR_RETURN(uint32_t path_size, r.Read<uint32_t>("enumeration.path_name_size"));
  ASSIGN_OR_RETURN(e.path_name, r.ReadString(path_size, "enumeration.path_name"));
  if (e.name.empty() || e.path_name.find('/') != std::string::npos) {
    return Error::Corrupt(
        fmt::format("offset {}: enumeration: bad name '{}' or path '{}'", at, e.name, e.path_name));
  }
  at = r.offset();
  ASSIGN_OR_RETURN(uint8_t type_byte, r.Read<uint8_t>("enumeration.datatype"));
  auto type = ParseDatatype(type_byte);
  if (!type.ok())
    return type.error().WithContext(fmt::format("offset {}: enumeration.datatype", at));
  e.type = *type;
  at = r.offset();
  ASSIGN_OR_RETURN(e.cell_val_num, r.Read<uint32_t>("enumeration.cell_val_num"));
  if (e.cell_val_num == 0) {
    return Error::Corrupt(fmt::format("offset {}: enumeration.cell_val_num: 0", at));
  }
  ASSIGN_OR_RETURN(e.ordered, r.ReadBool("enumeration.ordered"));

  ASSIGN_OR_RETURN(uint64_t data_size, r.Read<uint64_t>("enumeration.data_size"));
  at = r.offset();
  ASSIGN_OR_RETURN(Bytes data, r.ReadBytes(data_size, "enumeration.data"));
  if (e.cell_val_num != kVarNum) {
    uint64_t cell = DatatypeSize(e.type) * e.cell_val_num;
    if (data_size % cell != 0) {
      return Error::Corrupt(fmt::format(
          "offset {}: enumeration.data: {} bytes is not a multiple of the value size {}", at,
          data_size, cell));
    }
  } else {
    ASSIGN_OR_RETURN(uint64_t offsets_size, r.Read<uint64_t>("enumeration.offsets_size"));
    at = r.offset();
    ASSIGN_OR_RETURN(Bytes offsets, r.ReadBytes(offsets_size, "enumeration.offsets"));
    if (offsets_size % 8 != 0 || (offsets_size == 0 && data_size != 0)) {
      return Error::Corrupt(fmt::format("offset {}: enumeration.offsets: size {} for {} data bytes",
                                        at, offsets_size, data_size));
    }
    e.offsets.resize(offsets_size / 8);
    uint64_t prev = 0;
    for (size_t i = 0; i < e.offsets.size(); ++i) {
      uint64_t o;
      std::memcpy(&o, offsets.data() + 8 * i, 8);
      if (o < prev || o > data_size) {
        return Error::Corrupt(fmt::format(
            "offset {}: enumeration.offsets: offset {} is {} (previous {}, data size {})",
            at + 8 * i, i, o, prev, data_size));
      }
      e.offsets[i] = prev = o;
    }
  }
  e.data.assign(data.begin(), data.end());
  if (!r.empty()) {
    return r.Corrupt("enumeration", fmt::format("{} trailing bytes", r.remaining()));
  }
  return e;
}

}  // namespace

uint64_t Enumeration::size() const {
  if (cell_val_num == kVarNum) return offsets.size();
  uint64_t cell = DatatypeSize(type) * cell_val_num;
  return cell == 0 ? 0 : data.size() / cell;
}

Bytes Enumeration::value(uint64_t i) const {
  Bytes all(data);
  if (i >= size()) return {};
  if (cell_val_num == kVarNum) {
    uint64_t end = i + 1 < offsets.size() ? offsets[i + 1] : data.size();
    return all.subspan(offsets[i], end - offsets[i]);
  }
  uint64_t cell = DatatypeSize(type) * cell_val_num;
  return all.subspan(i * cell, cell);
}

Result<Enumeration> ParseEnumeration(Bytes payload, uint64_t file_offset) {
  ByteReader r(payload, file_offset);
  auto e = ParseEnumerationBody(r);
  if (!e.ok()) return e.error().WithContext("enumeration");
  return e;
}

Result<Enumeration> LoadEnumeration(const Storage& storage, const std::string& path,
                                    const EncryptionKey* key, const Limits& limits) {
  Limits metadata = limits;
  metadata.max_tile_bytes = metadata.max_metadata_bytes;
  ASSIGN_OR_RETURN(GenericTile tile, ReadGenericTile(storage, path, 0, key, metadata));
  ASSIGN_OR_RETURN_CTX(Enumeration e, ParseEnumeration(tile.data), path);
  return e;
}

Result<std::vector<Enumeration>> LoadSchemaEnumerations(const Storage& storage,
                                                        const ArraySchema& schema,
                                                        const EncryptionKey* key,
                                                        const Limits& limits) {
  std::vector<Enumeration> out;
  for (const EnumerationRef& ref : schema.enumerations) {
    std::string path = "__schema/__enumerations/" + ref.path_name;
    ASSIGN_OR_RETURN(Enumeration e, LoadEnumeration(storage, path, key, limits));
    if (e.name != ref.name) {
      return Error::Corrupt(fmt::format("{}: enumeration is named '{}', schema {} expects '{}'",
                                        path, e.name, schema.name, ref.name));
    }
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace tiledbfs::core
