#include "core/read/tile_source.h"

#include <fmt/format.h>

#include <algorithm>

namespace tiledbfs::core {
namespace {

// Shape of the internal uint64 fields (t.tdb, dt.tdb, dci.tdb).
FieldShape Uint64Shape(const ArraySchema& schema) {
  FieldShape s;
  s.type = Datatype::kUInt64;
  s.filters = &schema.coords_filters;
  return s;
}

// A tile file the fragment's metadata lists but that is gone (a vacuum
// under an open view) is an I/O error, not a name that does not exist.
Result<ByteVec> ReadRange(const FragmentMetadata& fragment, const std::string& file,
                          FragmentMetadata::TileLocation loc) {
  auto r = fragment.storage().Read(file, loc.offset, loc.size);
  if (!r.ok() && r.error().code() == ErrorCode::kNotFound) {
    return Error::Io(r.error().message());
  }
  return r;
}

TileContext MakeContext(const FragmentMetadata& fragment, const std::string& file, uint64_t offset,
                        Datatype type, uint64_t cell_size, bool encrypted) {
  TileContext ctx;
  ctx.type = type;
  ctx.cell_size = cell_size;
  ctx.format_version = fragment.version();
  ctx.key = fragment.key();
  ctx.encrypted = encrypted;
  ctx.file = file;
  ctx.file_offset = offset;
  return ctx;
}

}  // namespace

FieldShape ShapeOf(const FragmentMetadata& fragment, FieldRef field) {
  const ArraySchema& schema = fragment.schema();
  FieldShape s;
  switch (field.kind) {
    case FieldRef::Kind::kAttribute: {
      const Attribute& a = schema.attributes[field.index];
      s.type = a.type;
      s.cell_val_num = a.cell_val_num;
      s.nullable = a.nullable;
      s.filters = &a.filters;
      return s;
    }
    case FieldRef::Kind::kDimension: {
      const Dimension& d = schema.dimensions[field.index];
      s.type = d.type;
      s.cell_val_num = d.cell_val_num;
      s.filters = d.filters.empty() ? &schema.coords_filters : &d.filters;
      return s;
    }
    case FieldRef::Kind::kCoords: {
      s.type = schema.dimensions.empty() ? Datatype::kUInt8 : schema.dimensions[0].type;
      s.cell_val_num = static_cast<uint32_t>(schema.dimensions.size());
      s.filters = &schema.coords_filters;
      return s;
    }
    case FieldRef::Kind::kTimestamps:
    case FieldRef::Kind::kDeleteTimestamps:
    case FieldRef::Kind::kDeleteConditionIndex:
      return Uint64Shape(schema);
  }
  return s;
}

Result<DecodedTile> ReadTile(const FragmentMetadata& fragment, FieldRef field, uint64_t tile,
                             bool encrypted) {
  if (tile >= fragment.tile_num()) {
    return Error::InvalidArgument(
        fmt::format("{}: tile {} of {}", fragment.dir(), tile, fragment.tile_num()));
  }
  FieldShape shape = ShapeOf(fragment, field);
  const ArraySchema& schema = fragment.schema();
  DecodedTile out;
  out.cell_num = fragment.TileCellNum(tile);

  std::string file = fragment.DataFile(field);
  ASSIGN_OR_RETURN(FragmentMetadata::TileLocation loc, fragment.FixedTile(field, tile));
  ASSIGN_OR_RETURN(ByteVec raw, ReadRange(fragment, file, loc));
  if (!shape.var()) {
    TileContext ctx =
        MakeContext(fragment, file, loc.offset, shape.type, shape.cell_size(), encrypted);
    ASSIGN_OR_RETURN(out.fixed, UnfilterTile(*shape.filters, raw, ctx));
    out.cell_size = shape.cell_size();
    uint64_t want = 0;
    if (MulOverflow(out.cell_num, out.cell_size, &want) || out.fixed.size() != want) {
      return Error::Corrupt(
          fmt::format("{}: tile {} at offset {}: {} bytes, expected {} ({} cells)", file, tile,
                      loc.offset, out.fixed.size(), want, out.cell_num));
    }
  } else {
    std::string var_file = fragment.VarFile(field);
    ASSIGN_OR_RETURN(FragmentMetadata::TileLocation vloc, fragment.VarTile(field, tile));
    ASSIGN_OR_RETURN(ByteVec vraw, ReadRange(fragment, var_file, vloc));
    uint64_t var_size = 0;
    auto sizes = fragment.TileVarSizes(field);
    if (sizes.ok() && tile < (*sizes)->size()) var_size = (**sizes)[tile];
    TileContext octx = MakeContext(fragment, file, loc.offset, Datatype::kUInt64, 8, encrypted);
    TileContext vctx = MakeContext(fragment, var_file, vloc.offset, shape.type,
                                   DatatypeSize(shape.type), encrypted);
    ASSIGN_OR_RETURN(VarTile vt, UnfilterVarTile(schema.offsets_filters, raw, octx, *shape.filters,
                                                 vraw, vctx, var_size));
    if (vt.offsets.size() != out.cell_num) {
      return Error::Corrupt(fmt::format("{}: tile {} at offset {}: {} offsets for {} cells", file,
                                        tile, loc.offset, vt.offsets.size(), out.cell_num));
    }
    out.offsets = std::move(vt.offsets);
    out.offsets.push_back(vt.data.size());
    for (uint64_t i = 0; i + 1 < out.offsets.size(); ++i) {
      if (out.offsets[i] > out.offsets[i + 1]) {
        return Error::Corrupt(
            fmt::format("{}: tile {}: offsets decrease at cell {}", file, tile, i));
      }
    }
    out.var = std::move(vt.data);
  }
  if (shape.nullable) {
    std::string vfile = fragment.ValidityFile(field);
    ASSIGN_OR_RETURN(FragmentMetadata::TileLocation vl, fragment.ValidityTile(field, tile));
    ASSIGN_OR_RETURN(ByteVec vr, ReadRange(fragment, vfile, vl));
    TileContext ctx = MakeContext(fragment, vfile, vl.offset, Datatype::kUInt8, 1, encrypted);
    ASSIGN_OR_RETURN(out.validity, UnfilterTile(schema.validity_filters, vr, ctx));
    if (out.validity.size() != out.cell_num) {
      return Error::Corrupt(fmt::format("{}: tile {}: {} validity bytes for {} cells", vfile, tile,
                                        out.validity.size(), out.cell_num));
    }
  }
  return out;
}

Result<TilePart> ReadTilePart(const FragmentMetadata& fragment, FieldRef field, uint64_t tile,
                              bool encrypted, uint64_t from, uint64_t to) {
  if (tile >= fragment.tile_num()) {
    return Error::InvalidArgument(
        fmt::format("{}: tile {} of {}", fragment.dir(), tile, fragment.tile_num()));
  }
  const uint64_t cell_num = fragment.TileCellNum(tile);
  if (from >= to || to > cell_num) {
    return Error::InvalidArgument(fmt::format("{}: cells [{}, {}) of tile {} of {} cells",
                                              fragment.dir(), from, to, tile, cell_num));
  }
  FieldShape shape = ShapeOf(fragment, field);
  const uint64_t cs = shape.cell_size();
  TilePart part;
  if (shape.var() || shape.nullable || cs == 0) {
    ASSIGN_OR_RETURN(part.tile, ReadTile(fragment, field, tile, encrypted));
    return part;
  }
  std::string file = fragment.DataFile(field);
  ASSIGN_OR_RETURN(FragmentMetadata::TileLocation loc, fragment.FixedTile(field, tile));
  ASSIGN_OR_RETURN(ByteVec raw, ReadRange(fragment, file, loc));
  uint64_t want = 0;
  if (MulOverflow(cell_num, cs, &want)) {
    return Error::Corrupt(
        fmt::format("{}: tile {}: {} cells of {} bytes overflow", file, tile, cell_num, cs));
  }
  TileContext ctx = MakeContext(fragment, file, loc.offset, shape.type, cs, encrypted);
  ctx.expected_size = want;  // the chunks must add up to the whole tile
  uint64_t start = 0;
  ASSIGN_OR_RETURN(ByteVec bytes,
                   UnfilterTileRange(*shape.filters, raw, ctx, from * cs, to * cs, &start));
  if (start % cs != 0 || bytes.size() % cs != 0) {  // chunks cut cells: decode it all
    ASSIGN_OR_RETURN(part.tile, ReadTile(fragment, field, tile, encrypted));
    return part;
  }
  part.first = start / cs;
  part.tile.cell_size = cs;
  part.tile.cell_num = bytes.size() / cs;
  part.tile.fixed = std::move(bytes);
  if (part.first > from || part.first + part.tile.cell_num < to) {
    return Error::Corrupt(fmt::format("{}: tile {} at offset {}: cells [{}, {}) not in its chunks",
                                      file, tile, loc.offset, from, to));
  }
  return part;
}

Result<std::vector<DecodedTile>> ReadZippedCoordsTile(const FragmentMetadata& fragment,
                                                      uint64_t tile, bool encrypted) {
  ASSIGN_OR_RETURN(DecodedTile zipped, ReadTile(fragment, FieldRef::Coords(), tile, encrypted));
  const ArraySchema& schema = fragment.schema();
  size_t dims = schema.dimensions.size();
  std::vector<DecodedTile> out(dims);
  if (dims == 0) return out;
  uint64_t vsize = DatatypeSize(schema.dimensions[0].type);
  for (size_t d = 0; d < dims; ++d) {
    out[d].cell_num = zipped.cell_num;
    out[d].cell_size = vsize;
    out[d].fixed.resize(zipped.cell_num * vsize);
    for (uint64_t c = 0; c < zipped.cell_num; ++c) {
      std::copy_n(zipped.fixed.data() + (c * dims + d) * vsize, vsize,
                  out[d].fixed.data() + c * vsize);
    }
  }
  return out;
}

}  // namespace tiledbfs::core
