#include "core/fragment/fragment_footer.h"

#include <fmt/format.h>

namespace tiledbfs::core {
namespace {

bool AllDimsFixed(const ArraySchema& schema) {
  for (const auto& d : schema.dimensions) {
    if (d.var()) return false;
  }
  return true;
}

// n uint64 values; the count is checked against the bytes left first.
Result<std::vector<uint64_t>> ReadU64Array(ByteReader& r, uint64_t n, std::string_view field) {
  if (n > r.remaining() / 8) {
    return r.Corrupt(field, fmt::format("{} values need {} bytes, {} left (truncated)", n, n * 8,
                                        r.remaining()));
  }
  std::vector<uint64_t> out;
  out.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(uint64_t v, r.Read<uint64_t>(field));
    out.push_back(v);
  }
  return out;
}

Result<Range> ReadFixedRange(ByteReader& r, uint64_t coord_size, std::string_view field) {
  ASSIGN_OR_RETURN(Bytes lo, r.ReadBytes(coord_size, field));
  ASSIGN_OR_RETURN(Bytes hi, r.ReadBytes(coord_size, field));
  return Range{ByteVec(lo.begin(), lo.end()), ByteVec(hi.begin(), hi.end())};
}

Status CheckSchemaUsable(const ArraySchema& schema) {
  if (schema.dimensions.empty()) {
    return Error::Corrupt(fmt::format("schema {} has no dimensions", schema.name));
  }
  return Ok();
}

// Every tile of a sparse fragment is stored in the file of each fixed-size
// coordinate field, and a stored tile takes at least its 8-byte chunk count
// (tile.md): the tile count cannot exceed that file's size / 8. Checked here,
// where the count is read, so that nothing is sized from an impossible one.
Status CheckSparseTileNum(const FragmentFooter& f, const ArraySchema& schema,
                          uint64_t file_sizes_offset) {
  if (f.dense || f.sparse_tile_num == 0) return Ok();
  int k = -1;
  if (!HasPerDimensionFiles(f.version)) {
    k = FooterFieldIndex(schema, f.version, f.has_timestamps, f.has_delete_meta,
                         FieldRef::Coords());
  } else {
    for (uint32_t d = 0; d < schema.dimensions.size() && k < 0; ++d) {
      if (schema.dimensions[d].var()) continue;
      k = FooterFieldIndex(schema, f.version, f.has_timestamps, f.has_delete_meta,
                           FieldRef::Dimension(d));
    }
  }
  if (k < 0 || static_cast<uint64_t>(k) >= f.file_sizes.size()) return Ok();
  const uint64_t size = f.file_sizes[static_cast<size_t>(k)];
  if (f.sparse_tile_num > size / 8) {
    return Error::Corrupt(fmt::format(
        "offset {}: fragment footer: sparse tile num: {} tiles cannot fit in a coordinate file "
        "of {} bytes",
        file_sizes_offset + 8 * static_cast<uint64_t>(k), f.sparse_tile_num, size));
  }
  return Ok();
}

Result<FooterPrefix> ReadPrefix(ByteReader& r) {
  FooterPrefix p;
  const uint64_t start = r.offset();
  ASSIGN_OR_RETURN(p.version, r.Read<uint32_t>("fragment footer: version"));
  if (p.version > kMaxFragmentVersion) {
    return Error::Unsupported(fmt::format(
        "offset {}: fragment footer: format version {} is newer than the newest supported ({})",
        start, p.version, kMaxFragmentVersion));
  }
  if (!HasFragmentFooter(p.version)) {
    return Error::Corrupt(
        fmt::format("offset {}: fragment footer: version {}: fragments of format {} have no footer",
                    start, p.version, p.version));
  }
  if (HasSchemaName(p.version)) {
    ASSIGN_OR_RETURN(uint64_t size, r.Read<uint64_t>("fragment footer: schema name size"));
    if (size == 0) return r.Corrupt("fragment footer: schema name size", "is zero");
    ASSIGN_OR_RETURN(p.array_schema_name, r.ReadString(size, "fragment footer: schema name"));
  } else {
    p.array_schema_name = kLegacySchemaName;
  }
  return p;
}

}  // namespace

uint64_t CoordSize(const Dimension& d) {
  return DatatypeSize(d.type) * (d.var() ? 1 : d.cell_val_num);
}

uint64_t FooterFieldCount(const ArraySchema& schema, uint32_t version, bool has_timestamps,
                          bool has_delete_meta) {
  const uint64_t a = schema.attributes.size();
  if (!HasPerDimensionFiles(version)) return a + 1;
  return a + 1 + schema.dimensions.size() + (has_timestamps ? 1 : 0) + (has_delete_meta ? 2 : 0);
}

int FooterFieldIndex(const ArraySchema& schema, uint32_t version, bool has_timestamps,
                     bool has_delete_meta, FieldRef f) {
  const uint64_t a = schema.attributes.size();
  const uint64_t d = schema.dimensions.size();
  const bool split = HasPerDimensionFiles(version);
  const uint64_t after_dims = a + 1 + d;
  switch (f.kind) {
    case FieldRef::Kind::kAttribute:
      return f.index < a ? static_cast<int>(f.index) : -1;
    case FieldRef::Kind::kCoords:
      return static_cast<int>(a);
    case FieldRef::Kind::kDimension:
      return split && f.index < d ? static_cast<int>(a + 1 + f.index) : -1;
    case FieldRef::Kind::kTimestamps:
      return split && has_timestamps ? static_cast<int>(after_dims) : -1;
    case FieldRef::Kind::kDeleteTimestamps:
      return split && has_delete_meta ? static_cast<int>(after_dims + (has_timestamps ? 1 : 0))
                                      : -1;
    case FieldRef::Kind::kDeleteConditionIndex:
      return split && has_delete_meta ? static_cast<int>(after_dims + (has_timestamps ? 1 : 0) + 1)
                                      : -1;
  }
  return -1;
}

Result<std::vector<Range>> ReadNdRange(ByteReader& r, const ArraySchema& schema,
                                       std::string_view field) {
  std::vector<Range> out;
  out.reserve(schema.dimensions.size());
  for (const auto& d : schema.dimensions) {
    if (!d.var()) {
      ASSIGN_OR_RETURN(Range range, ReadFixedRange(r, CoordSize(d), field));
      out.push_back(std::move(range));
      continue;
    }
    ASSIGN_OR_RETURN(uint64_t size, r.Read<uint64_t>(field));
    ASSIGN_OR_RETURN(uint64_t lo_size, r.Read<uint64_t>(field));
    if (lo_size > size) {
      return r.Corrupt(field, fmt::format("dimension {}: start size {} exceeds range size {}",
                                          d.name, lo_size, size));
    }
    ASSIGN_OR_RETURN(Bytes bytes, r.ReadBytes(size, field));
    out.push_back(Range{ByteVec(bytes.begin(), bytes.begin() + lo_size),
                        ByteVec(bytes.begin() + lo_size, bytes.end())});
  }
  return out;
}

Result<std::vector<Range>> ReadFixedNdRange(ByteReader& r, const ArraySchema& schema,
                                            bool use_first_dim_size, std::string_view field) {
  TRY(CheckSchemaUsable(schema));
  std::vector<Range> out;
  out.reserve(schema.dimensions.size());
  for (const auto& d : schema.dimensions) {
    const Dimension& sized = use_first_dim_size ? schema.dimensions[0] : d;
    if (d.var() || sized.var()) {
      return r.Corrupt(field, fmt::format("dimension {} is var-sized in a pre-5 layout", d.name));
    }
    ASSIGN_OR_RETURN(Range range, ReadFixedRange(r, CoordSize(sized), field));
    out.push_back(std::move(range));
  }
  return out;
}

bool FooterHasLengthField(const ArraySchema& schema, uint32_t version) {
  return HasFooterLength(version) || !AllDimsFixed(schema);
}

Result<uint64_t> FixedFooterSize(const ArraySchema& schema, uint32_t version) {
  TRY(CheckSchemaUsable(schema));
  if (!HasFragmentFooter(version) || HasFooterLength(version) || !AllDimsFixed(schema)) {
    return Error::InvalidArgument(
        fmt::format("format {} footer size is not computed from the schema", version));
  }
  const uint64_t a = schema.attributes.size();
  const uint64_t dims = schema.dimensions.size();
  uint64_t size = 4 + 1 + 1 + 8 + 8 + 8;  // version, dense, null NED, tile nums, R-tree
  if (!HasPerDimensionFiles(version)) {
    size += 2 * dims * CoordSize(schema.dimensions[0]);
    size += 8 * ((a + 1) + a);      // file sizes, file var sizes
    size += 8 * ((a + 1) + a + a);  // tile offsets, var offsets, var sizes
    return size;
  }
  for (const auto& d : schema.dimensions) size += 2 * CoordSize(d);
  const uint64_t n = a + dims + 1;
  const uint64_t arrays = HasValiditySections(version) ? 7 : 5;
  size += 8 * n * arrays;
  return size;
}

Result<FooterPrefix> PeekFragmentFooter(Bytes footer, uint64_t file_offset) {
  ByteReader r(footer, file_offset);
  return ReadPrefix(r);
}

Result<FragmentFooter> ParseFragmentFooterFields(Bytes footer, uint64_t file_offset,
                                                 const ArraySchema& schema, uint32_t version_hint,
                                                 uint64_t* consumed) {
  TRY(CheckSchemaUsable(schema));
  ByteReader r(footer, file_offset);
  ASSIGN_OR_RETURN(FooterPrefix prefix, ReadPrefix(r));
  FragmentFooter f;
  f.version = prefix.version;
  f.array_schema_name = std::move(prefix.array_schema_name);
  const uint32_t v = f.version;
  if (version_hint != 0) {
    const bool matches = version_hint >= 5 ? v == version_hint : (version_hint >= 3 && v < 5);
    if (!matches) {
      return Error::Corrupt(fmt::format(
          "offset {}: fragment footer: version {} does not match the fragment name's ({})",
          file_offset, v, version_hint));
    }
  }

  ASSIGN_OR_RETURN(f.dense, r.ReadBool("fragment footer: dense"));
  ASSIGN_OR_RETURN(f.null_non_empty_domain, r.ReadBool("fragment footer: null non-empty domain"));
  if (!f.null_non_empty_domain) {
    if (HasPerDimensionFiles(v)) {
      ASSIGN_OR_RETURN(f.non_empty_domain,
                       ReadNdRange(r, schema, "fragment footer: non-empty domain"));
    } else {
      ASSIGN_OR_RETURN(f.non_empty_domain,
                       ReadFixedNdRange(r, schema, true, "fragment footer: non-empty domain"));
    }
  } else if (AllDimsFixed(schema)) {
    // Format quirk: a writer with no non-empty domain still writes zeros of
    // the size of a fixed domain (dimension 0's coord size for every
    // dimension), which TileDB's own footer size computation counts.
    const uint64_t dummy = 2 * schema.dimensions.size() * CoordSize(schema.dimensions[0]);
    TRY(r.Skip(dummy, "fragment footer: non-empty domain (null)"));
  }
  ASSIGN_OR_RETURN(f.sparse_tile_num, r.Read<uint64_t>("fragment footer: sparse tile num"));
  ASSIGN_OR_RETURN(f.last_tile_cell_num, r.Read<uint64_t>("fragment footer: last tile cell num"));
  if (HasTimestampsFlag(v)) {
    ASSIGN_OR_RETURN(f.has_timestamps, r.ReadBool("fragment footer: has timestamps"));
  }
  if (HasDeleteMetaFlag(v)) {
    ASSIGN_OR_RETURN(f.has_delete_meta, r.ReadBool("fragment footer: has delete meta"));
  }

  const uint64_t n = FooterFieldCount(schema, v, f.has_timestamps, f.has_delete_meta);
  // Before 5 the var arrays have no slot for the coords (the last index).
  const bool short_var = !HasPerDimensionFiles(v);
  const uint64_t n_var = short_var ? n - 1 : n;
  auto pad_var = [&](std::vector<uint64_t>& a) {
    if (short_var) a.push_back(0);
  };

  const uint64_t file_sizes_offset = r.offset();
  ASSIGN_OR_RETURN(f.file_sizes, ReadU64Array(r, n, "fragment footer: file sizes"));
  TRY(CheckSparseTileNum(f, schema, file_sizes_offset));
  ASSIGN_OR_RETURN(f.file_var_sizes, ReadU64Array(r, n_var, "fragment footer: file var sizes"));
  pad_var(f.file_var_sizes);
  if (HasValiditySections(v)) {
    ASSIGN_OR_RETURN(f.file_validity_sizes,
                     ReadU64Array(r, n, "fragment footer: file validity sizes"));
  }
  ASSIGN_OR_RETURN(f.rtree_offset, r.Read<uint64_t>("fragment footer: R-tree offset"));
  ASSIGN_OR_RETURN(f.tile_offsets_offsets,
                   ReadU64Array(r, n, "fragment footer: tile offsets offsets"));
  ASSIGN_OR_RETURN(f.tile_var_offsets_offsets,
                   ReadU64Array(r, n_var, "fragment footer: tile var offsets offsets"));
  pad_var(f.tile_var_offsets_offsets);
  ASSIGN_OR_RETURN(f.tile_var_sizes_offsets,
                   ReadU64Array(r, n_var, "fragment footer: tile var sizes offsets"));
  pad_var(f.tile_var_sizes_offsets);
  if (HasValiditySections(v)) {
    ASSIGN_OR_RETURN(f.tile_validity_offsets_offsets,
                     ReadU64Array(r, n, "fragment footer: tile validity offsets offsets"));
  }
  if (HasTileMetadata(v)) {
    ASSIGN_OR_RETURN(f.tile_min_offsets, ReadU64Array(r, n, "fragment footer: tile min offsets"));
    ASSIGN_OR_RETURN(f.tile_max_offsets, ReadU64Array(r, n, "fragment footer: tile max offsets"));
    ASSIGN_OR_RETURN(f.tile_sum_offsets, ReadU64Array(r, n, "fragment footer: tile sum offsets"));
    ASSIGN_OR_RETURN(f.tile_null_count_offsets,
                     ReadU64Array(r, n, "fragment footer: tile null count offsets"));
  }
  if (HasFragmentStatistics(v)) {
    ASSIGN_OR_RETURN(f.fragment_min_max_sum_null_count_offset,
                     r.Read<uint64_t>("fragment footer: fragment min/max/sum/null count offset"));
  }
  if (HasProcessedConditions(v)) {
    ASSIGN_OR_RETURN(f.processed_conditions_offset,
                     r.Read<uint64_t>("fragment footer: processed conditions offset"));
  }
  if (HasOptionalSections(v)) {
    ASSIGN_OR_RETURN(uint32_t count, r.Read<uint32_t>("fragment footer: optional section count"));
    // Each section takes at least 12 bytes: bounds the loop by the bytes left.
    if (count > r.remaining() / 12) {
      return r.Corrupt("fragment footer: optional section count",
                       fmt::format("{} sections cannot fit in {} bytes", count, r.remaining()));
    }
    for (uint32_t i = 0; i < count; ++i) {
      ASSIGN_OR_RETURN(uint64_t id, r.Read<uint64_t>("fragment footer: optional section id"));
      ASSIGN_OR_RETURN(uint32_t size, r.Read<uint32_t>("fragment footer: optional section size"));
      ASSIGN_OR_RETURN(Bytes data, r.ReadBytes(size, "fragment footer: optional section data"));
      if (id != static_cast<uint64_t>(OptionalSectionId::kTileGlobalOrderBounds)) {
        continue;  // unknown sections are ignored (fragment.md#optional-section)
      }
      const uint64_t dims = schema.dimensions.size();
      if (size != 2 * dims * 8) {
        return Error::Corrupt(fmt::format(
            "offset {}: fragment footer: tile global order bounds section: size {}, expected {}",
            r.offset() - size, size, 2 * dims * 8));
      }
      ByteReader s(data, r.offset() - size);
      ASSIGN_OR_RETURN(f.tile_global_order_min_offsets,
                       ReadU64Array(s, dims, "fragment footer: tile global order min offsets"));
      ASSIGN_OR_RETURN(f.tile_global_order_max_offsets,
                       ReadU64Array(s, dims, "fragment footer: tile global order max offsets"));
      f.has_tile_global_order_bounds = true;
    }
  }
  *consumed = r.position();
  f.footer_size = r.position();
  return f;
}

Result<FragmentFooter> ParseFragmentFooter(Bytes footer, uint64_t file_offset,
                                           const ArraySchema& schema, uint32_t version_hint) {
  uint64_t consumed = 0;
  ASSIGN_OR_RETURN(FragmentFooter f,
                   ParseFragmentFooterFields(footer, file_offset, schema, version_hint, &consumed));
  ByteReader r(footer.subspan(consumed), file_offset + consumed);
  if (FooterHasLengthField(schema, f.version)) {
    ASSIGN_OR_RETURN(uint64_t length, r.Read<uint64_t>("fragment footer: footer length"));
    if (length != consumed) {
      return Error::Corrupt(
          fmt::format("offset {}: fragment footer: footer length {} but its fields take {} bytes",
                      file_offset + consumed, length, consumed));
    }
  }
  if (!r.empty()) {
    return r.Corrupt("fragment footer", fmt::format("{} unexpected trailing bytes", r.remaining()));
  }
  f.footer_size = footer.size();
  return f;
}

}  // namespace tiledbfs::core
