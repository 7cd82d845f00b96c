#include "core/fragment/legacy_fragment_metadata.h"

#include <fmt/format.h>

namespace tiledbfs::core {
namespace {

Result<std::vector<uint64_t>> ReadCountedList(ByteReader& r, std::string_view field) {
  ASSIGN_OR_RETURN(uint64_t count, r.Read<uint64_t>(field));
  if (count > r.remaining() / 8) {
    return r.Corrupt(
        field, fmt::format("count {} needs more than the {} bytes left", count, r.remaining()));
  }
  std::vector<uint64_t> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    ASSIGN_OR_RETURN(uint64_t v, r.Read<uint64_t>(field));
    out.push_back(v);
  }
  return out;
}

Result<std::vector<uint64_t>> ReadFixedList(ByteReader& r, uint64_t n, std::string_view field) {
  if (n > r.remaining() / 8) {
    return r.Corrupt(field,
                     fmt::format("{} values need more than the {} bytes left", n, r.remaining()));
  }
  std::vector<uint64_t> out;
  out.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(uint64_t v, r.Read<uint64_t>(field));
    out.push_back(v);
  }
  return out;
}

}  // namespace

Result<LegacyFragmentMetadata> ParseLegacyFragmentMetadata(Bytes payload, uint64_t file_offset,
                                                           const ArraySchema& schema, bool dense) {
  if (schema.dimensions.empty()) {
    return Error::Corrupt(fmt::format("schema {} has no dimensions", schema.name));
  }
  ByteReader r(payload, file_offset);
  LegacyFragmentMetadata m;
  FragmentFooter& f = m.footer;
  f.dense = dense;
  f.array_schema_name = kLegacySchemaName;
  ASSIGN_OR_RETURN(f.version, r.Read<uint32_t>("legacy fragment metadata: version"));
  if (f.version == 0 || f.version > 2) {
    return Error::Corrupt(
        fmt::format("offset {}: legacy fragment metadata: version {} (expected 1 or 2)",
                    file_offset, f.version));
  }

  uint64_t domain_bytes = 0;
  for (const auto& d : schema.dimensions) {
    if (d.var()) {
      return Error::Corrupt(
          fmt::format("legacy fragment metadata: dimension {} is var-sized in a format {} fragment",
                      d.name, f.version));
    }
    domain_bytes += 2 * CoordSize(d);
  }

  ASSIGN_OR_RETURN(uint64_t ned_size,
                   r.Read<uint64_t>("legacy fragment metadata: non-empty domain size"));
  if (ned_size == 0) {
    f.null_non_empty_domain = true;
  } else {
    if (ned_size != domain_bytes) {
      return r.Corrupt("legacy fragment metadata: non-empty domain size",
                       fmt::format("{} bytes, expected {}", ned_size, domain_bytes));
    }
    ASSIGN_OR_RETURN(
        f.non_empty_domain,
        ReadFixedNdRange(r, schema, false, "legacy fragment metadata: non-empty domain"));
  }

  ASSIGN_OR_RETURN(uint64_t mbr_num, r.Read<uint64_t>("legacy fragment metadata: MBR num"));
  if (mbr_num > r.remaining() / domain_bytes) {
    return r.Corrupt(
        "legacy fragment metadata: MBR num",
        fmt::format("{} MBRs cannot fit in the {} bytes left", mbr_num, r.remaining()));
  }
  m.mbrs.reserve(mbr_num);
  for (uint64_t i = 0; i < mbr_num; ++i) {
    ASSIGN_OR_RETURN(auto mbr, ReadFixedNdRange(r, schema, false, "legacy fragment metadata: MBR"));
    m.mbrs.push_back(std::move(mbr));
  }
  f.sparse_tile_num = mbr_num;

  ASSIGN_OR_RETURN(uint64_t bounding_num,
                   r.Read<uint64_t>("legacy fragment metadata: bounding coords num"));
  // Each entry is the first and last coordinates: 2 x (all dimensions).
  if (bounding_num > r.remaining() / domain_bytes) {
    return r.Corrupt(
        "legacy fragment metadata: bounding coords num",
        fmt::format("{} entries cannot fit in the {} bytes left", bounding_num, r.remaining()));
  }
  TRY(r.Skip(bounding_num * domain_bytes, "legacy fragment metadata: bounding coords"));

  const uint64_t a = schema.attributes.size();
  m.tile_offsets.reserve(a + 1);
  for (uint64_t i = 0; i < a + 1; ++i) {
    ASSIGN_OR_RETURN(auto list, ReadCountedList(r, "legacy fragment metadata: tile offsets"));
    m.tile_offsets.push_back(std::move(list));
  }
  for (uint64_t i = 0; i < a; ++i) {
    ASSIGN_OR_RETURN(auto list, ReadCountedList(r, "legacy fragment metadata: tile var offsets"));
    m.tile_var_offsets.push_back(std::move(list));
  }
  m.tile_var_offsets.emplace_back();
  for (uint64_t i = 0; i < a; ++i) {
    ASSIGN_OR_RETURN(auto list, ReadCountedList(r, "legacy fragment metadata: tile var sizes"));
    m.tile_var_sizes.push_back(std::move(list));
  }
  m.tile_var_sizes.emplace_back();
  ASSIGN_OR_RETURN(f.last_tile_cell_num,
                   r.Read<uint64_t>("legacy fragment metadata: last tile cell num"));
  ASSIGN_OR_RETURN(f.file_sizes, ReadFixedList(r, a + 1, "legacy fragment metadata: file sizes"));
  ASSIGN_OR_RETURN(f.file_var_sizes,
                   ReadFixedList(r, a, "legacy fragment metadata: file var sizes"));
  f.file_var_sizes.push_back(0);
  if (!r.empty()) {
    return r.Corrupt("legacy fragment metadata",
                     fmt::format("{} unexpected trailing bytes", r.remaining()));
  }
  f.footer_size = 0;
  return m;
}

}  // namespace tiledbfs::core
