#include "core/tile/generic_tile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace tiledbfs::core {

namespace {

bool HasEncryptionFilter(const FilterPipeline& p) {
  return p.Has(FilterType::kEncryptionAes256Gcm);
}

}  // namespace

Result<GenericTileHeader> ParseGenericTileHeader(ByteReader& r, const Limits& limits) {
  GenericTileHeader h;
  const uint64_t start = r.position();
  ASSIGN_OR_RETURN(h.version, r.Read<uint32_t>("generic tile: version"));
  if (h.version > kMaxGenericTileVersion) {
    return Error::Unsupported(
        fmt::format("offset {}: generic tile: format version {} is newer "
                    "than the newest supported ({})",
                    r.offset() - 4, h.version, kMaxGenericTileVersion));
  }
  ASSIGN_OR_RETURN(h.persisted_size, r.Read<uint64_t>("generic tile: persisted size"));
  ASSIGN_OR_RETURN(h.tile_size, r.Read<uint64_t>("generic tile: tile size"));
  if (h.tile_size > limits.max_metadata_bytes) {
    return Error::OutOfMemory(
        fmt::format("offset {}: generic tile: tile size {} exceeds the "
                    "limit of {} bytes",
                    r.offset() - 8, h.tile_size, limits.max_metadata_bytes));
  }
  ASSIGN_OR_RETURN(uint8_t datatype, r.Read<uint8_t>("generic tile: datatype"));
  auto dt = ParseDatatype(datatype);
  if (!dt.ok())
    return r.Corrupt("generic tile: datatype", fmt::format("unknown datatype {}", datatype));
  h.datatype = *dt;
  ASSIGN_OR_RETURN(h.cell_size, r.Read<uint64_t>("generic tile: cell size"));
  ASSIGN_OR_RETURN(h.encryption_type, r.Read<uint8_t>("generic tile: encryption type"));
  if (h.encryption_type != kGenericTileNoEncryption && h.encryption_type != kGenericTileAes256Gcm) {
    return Error::Unsupported(fmt::format("offset {}: generic tile: unknown encryption type {}",
                                          r.offset() - 1, h.encryption_type));
  }
  ASSIGN_OR_RETURN(h.filter_pipeline_size, r.Read<uint32_t>("generic tile: filter pipeline size"));
  const uint64_t pipeline_offset = r.offset();
  ASSIGN_OR_RETURN(Bytes pipeline,
                   r.ReadBytes(h.filter_pipeline_size, "generic tile: filter pipeline"));
  ByteReader pr(pipeline, pipeline_offset);
  ASSIGN_OR_RETURN(h.filters, ParseFilterPipeline(pr, h.version));
  if (!pr.empty()) {
    return pr.Corrupt("generic tile: filter pipeline",
                      fmt::format("{} bytes past the last filter", pr.remaining()));
  }
  if (HasEncryptionFilter(h.filters) != (h.encryption_type == kGenericTileAes256Gcm)) {
    return Error::Corrupt(fmt::format(
        "offset {}: generic tile: encryption type {} but the pipeline {} the AES-256-GCM filter",
        pipeline_offset, h.encryption_type, HasEncryptionFilter(h.filters) ? "has" : "lacks"));
  }
  h.header_size = r.position() - start;
  return h;
}

Result<GenericTile> DecodeGenericTile(Bytes bytes, const std::string& file, uint64_t file_offset,
                                      const EncryptionKey* key, const Limits& limits) {
  ByteReader r(bytes, file_offset);
  auto header = ParseGenericTileHeader(r, limits);
  if (!header.ok()) return header.error().WithContext(file);
  const GenericTileHeader& h = *header;
  auto data = r.ReadBytes(h.persisted_size, "generic tile: tile data");
  if (!data.ok()) return data.error().WithContext(file);
  if (h.encryption_type == kGenericTileAes256Gcm && key == nullptr) {
    return Error::Key(
        fmt::format("{}: generic tile at offset {} is encrypted (AES-256-GCM) and "
                    "no key was given",
                    file, file_offset));
  }
  Limits tile_limits = limits;
  tile_limits.max_tile_bytes = std::min(limits.max_tile_bytes, limits.max_metadata_bytes);
  TileContext ctx(tile_limits);
  ctx.type = h.datatype;
  ctx.cell_size = h.cell_size;
  ctx.format_version = h.version;
  ctx.key = key;
  ctx.encrypted = false;  // the pipeline lists the encryption filter itself
  ctx.file = file;
  ctx.file_offset = file_offset + h.header_size;
  ctx.expected_size = h.tile_size;
  GenericTile out;
  ASSIGN_OR_RETURN(out.data, UnfilterTile(h.filters, *data, ctx));
  out.disk_size = h.header_size + h.persisted_size;
  return out;
}

Result<GenericTile> ReadGenericTile(const Storage& storage, const std::string& path,
                                    uint64_t offset, const EncryptionKey* key,
                                    const Limits& limits) {
  ASSIGN_OR_RETURN(uint64_t file_size, storage.Size(path));
  if (offset > file_size || file_size - offset < kGenericTileFixedHeaderSize) {
    return Error::Corrupt(fmt::format(
        "{}: offset {}: generic tile: need {} header bytes, {} left "
        "(truncated)",
        path, offset, kGenericTileFixedHeaderSize, offset > file_size ? 0 : file_size - offset));
  }
  ASSIGN_OR_RETURN(ByteVec fixed, storage.Read(path, offset, kGenericTileFixedHeaderSize));
  // Only the sizes are needed here; DecodeGenericTile checks every field.
  uint64_t persisted;
  uint32_t pipeline_size;
  std::memcpy(&persisted, fixed.data() + 4, 8);
  std::memcpy(&pipeline_size, fixed.data() + 30, 4);
  uint64_t total;
  if (AddOverflow(kGenericTileFixedHeaderSize + pipeline_size, persisted, &total) ||
      total > file_size - offset) {
    // Let the parser name the field that does not fit.
    auto r = DecodeGenericTile(fixed, path, offset, key, limits);
    if (!r.ok()) return r.error();
    return Error::Corrupt(fmt::format("{}: offset {}: generic tile: truncated", path, offset));
  }
  ASSIGN_OR_RETURN(ByteVec bytes, storage.Read(path, offset, total));
  return DecodeGenericTile(bytes, path, offset, key, limits);
}

}  // namespace tiledbfs::core
