#include "core/read/sparse_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "core/read/coord_tiles.h"
#include "core/read/coords.h"
#include "core/read/packed_index.h"
#include "core/util/stop.h"

namespace tiledbfs::core {
namespace {

// Decoded coordinate tiles of every fragment: coords[f][tile][dim].
using CoordTiles = std::vector<std::vector<std::vector<DecodedTile>>>;

// A slice: whether fragment `frag`'s non-empty domain, or its tile t's
// MBR, meets the view's subarray (unknown rectangles do).
bool FragmentMeets(const ViewInputs& in, const FragmentMetadata& frag) {
  const FragmentFooter& ft = frag.footer();
  return ft.null_non_empty_domain || BoxMeets(*in.schema, in.subarray, ft.non_empty_domain);
}

bool TileMeets(const ViewInputs& in, const FragmentMetadata& frag, uint64_t t) {
  auto mbrs = frag.Mbrs();
  if (!mbrs.ok() || t >= (*mbrs)->size()) return true;
  return BoxMeets(*in.schema, in.subarray, (**mbrs)[t]);
}

// Takes out of cells[from...] (ordinals of tile `ot`) those outside the
// view's subarray.
void DropCellsOutside(const ViewInputs& in, const OrderTile& ot, size_t from, int pos_bits,
                      std::vector<uint64_t>& cells) {
  const uint64_t pos_mask = (uint64_t{1} << pos_bits) - 1;
  size_t w = from;
  for (size_t r = from; r < cells.size(); ++r) {
    const uint64_t pos = cells[r] & pos_mask;
    if (CellIn(*in.schema, in.subarray, [&](size_t d) { return ot.dims[d]->cell(pos); })) {
      cells[w++] = cells[r];
    }
  }
  cells.resize(w);
}

// The cells of the first coordinate's keys in [lo, hi] (WindowKey): a
// window of a view whose coordinates do not pack.
struct KeyFilter {
  WindowKey key;
  uint64_t lo = 0, hi = UINT64_MAX;          // the window's
  uint64_t all_lo = 0, all_hi = UINT64_MAX;  // the view's: a cell outside is in no window
  std::span<const PackedTile> tiles;         // per tile of the order, its keys' bounds
};

Result<CellIndex> IndexTiles(const ViewInputs& in, OrderInput order, const KeyFilter* filter);

// Keeps of cells[from...] (ordinals of tile gt of the order, `ot`) those
// whose first coordinate's key lies in the filter's window. kCorrupt for a
// cell outside its tile's bounds (another window would miss it) or outside
// the view's (no window holds it).
Status KeepCellsOfKeys(const ViewInputs& in, const KeyFilter& f, const OrderTile& ot, size_t gt,
                       size_t from, int pos_bits, std::vector<uint64_t>& cells) {
  const uint64_t pos_mask = (uint64_t{1} << pos_bits) - 1;
  const PackedTile& bounds = f.tiles[gt];
  size_t w = from;
  for (size_t r = from; r < cells.size(); ++r) {
    const uint64_t key = f.key(ot.dims[0]->cell(cells[r] & pos_mask));
    if (key < bounds.lo || key > bounds.hi || key < f.all_lo || key > f.all_hi) {
      const FragmentMetadata& frag = *in.fragments[ot.fragment];
      return Error::Corrupt(fmt::format(
          "{}: tile {} holds a cell outside its bounding rectangle or the non-empty domain "
          "(dimension {})",
          frag.dir(), ot.tile, in.schema->dimensions[0].name));
    }
    if (key >= f.lo && key <= f.hi) cells[w++] = cells[r];
  }
  cells.resize(w);
  return Ok();
}

// Any sparse view: every coordinate tile decoded and kept until the
// coordinate columns are built.
Result<CellIndex> BuildSparseIndexGeneric(const ViewInputs& in) {
  const ArraySchema& schema = *in.schema;
  OrderInput order;
  order.dedup = in.dedup && !schema.allows_dups;
  for (const Dimension& d : schema.dimensions) order.types.push_back(d.type);
  // Every tile's place in the ordinal space, and the widest tile.
  uint64_t max_cells = 0;
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    const FragmentMetadata& frag = *in.fragments[fi];
    TRY(CheckDimensionCount(in, frag));
    // A slice reads only the tiles whose rectangles meet it.
    const bool sliced = !in.subarray.empty();
    if (sliced && !FragmentMeets(in, frag)) continue;
    for (uint64_t t = 0; t < frag.tile_num(); ++t) {
      if (sliced && !TileMeets(in, frag, t)) continue;
      max_cells = std::max(max_cells, frag.TileCellNum(t));
      OrderTile ot;
      ot.fragment = static_cast<uint32_t>(fi);
      ot.tile = t;
      ot.stamp = frag.name().t1;
      order.tiles.push_back(std::move(ot));
    }
  }
  // pos_bits holds cell_num itself, so that the ordinal after a tile's last
  // cell is no cell of the next tile.
  order.pos_bits = BitsFor(max_cells);
  if (order.pos_bits > 32 || BitsFor(order.tiles.size()) + order.pos_bits > 63) {
    return Error::Unsupported(
        fmt::format("sparse view of {} tiles of up to {} cells", order.tiles.size(), max_cells));
  }
  return IndexTiles(in, std::move(order), nullptr);
}

// The cells of `order`'s tiles (its pos_bits set), every coordinate tile
// decoded and kept until the coordinate columns are built; with `filter`,
// those of its keys alone.
Result<CellIndex> IndexTiles(const ViewInputs& in, OrderInput order, const KeyFilter* filter) {
  const ArraySchema& schema = *in.schema;
  const size_t dims = schema.dimensions.size();
  CoordTiles coords(in.fragments.size());
  std::vector<std::vector<DecodedTile>> stamps(in.fragments.size());
  for (const OrderTile& ot : order.tiles) {
    const FragmentMetadata& frag = *in.fragments[ot.fragment];
    if (coords[ot.fragment].empty()) coords[ot.fragment].resize(frag.tile_num());
    if (frag.footer().has_timestamps && stamps[ot.fragment].empty()) {
      stamps[ot.fragment].resize(frag.tile_num());
    }
  }
  std::vector<uint64_t> cells;
  // Per tile of the order once a fragment has delete timestamps, else empty.
  std::vector<DecodedTile> deleted;
  std::vector<std::pair<uint32_t, uint64_t>> wanted;
  wanted.reserve(order.tiles.size());
  for (const OrderTile& ot : order.tiles) wanted.emplace_back(ot.fragment, ot.tile);
  std::vector<Result<std::vector<DecodedTile>>> read = ReadCoordTileBatch(in, wanted, dims);
  // A stop of the process (core/util/stop.h) is looked for between tiles and
  // passes: a tile's cells take milliseconds, a pass over all cells seconds.
  constexpr std::string_view kWhat = "sparse cell index";
  for (size_t gt = 0; gt < order.tiles.size(); ++gt) {
    OrderTile& ot = order.tiles[gt];
    const size_t fi = ot.fragment;
    const uint64_t t = ot.tile;
    const FragmentMetadata& frag = *in.fragments[fi];
    const FragmentFooter& ft = frag.footer();
    TRY(CheckStop(kWhat));
    if (!read[gt].ok()) return read[gt].error();
    coords[fi][t] = std::move(read[gt]).value();
    uint64_t cell_num = frag.TileCellNum(t);
    for (const auto& dt : coords[fi][t]) {
      if (dt.cell_num != cell_num) {
        return Error::Corrupt(fmt::format("{}: tile {} has {} coordinates, expected {}", frag.dir(),
                                          t, dt.cell_num, cell_num));
      }
    }
    for (const auto& dt : coords[fi][t]) ot.dims.push_back(&dt);
    const size_t from = cells.size();
    TRY(AppendTileCells(in, order, gt, ft.has_timestamps ? &stamps[fi][t] : nullptr, deleted,
                        cells));
    if (!in.subarray.empty()) DropCellsOutside(in, ot, from, order.pos_bits, cells);
    if (filter != nullptr) TRY(KeepCellsOfKeys(in, *filter, ot, gt, from, order.pos_bits, cells));
    if (cells.size() > in.limits.max_view_cells) {
      return Error::OutOfMemory(
          fmt::format("sparse view of more than {} cells", in.limits.max_view_cells));
    }
  }
  TRY(CheckStop(kWhat));
  SortSparseCells(order, cells);
  TRY(CheckStop(kWhat));
  if (!deleted.empty()) {
    DropDeletedCells(
        in, deleted, order.pos_bits, [](uint64_t c) { return c; }, cells);
  }

  if (!in.deletes.empty()) {
    TRY(DropConditionDeletedCells(
        in, order, [](uint64_t c) { return c; },
        [&](uint64_t, const JudgedCell& cell, size_t d) {
          return coords[cell.fragment][cell.tile][d].cell(cell.pos);
        },
        cells));
  }

  const uint64_t pos_mask = (uint64_t{1} << order.pos_bits) - 1;
  CellIndex index;
  index.cell_count = cells.size();
  index.pos_bits = order.pos_bits;
  index.sparse_tiles.reserve(order.tiles.size());
  for (const OrderTile& t : order.tiles) index.sparse_tiles.push_back({t.fragment, t.tile});
  // The coordinate columns, run by run.
  index.dims.resize(dims);
  index.box.resize(dims);
  for (size_t d = 0; d < dims; ++d) {
    TRY(CheckStop(kWhat));
    const Dimension& dim = schema.dimensions[d];
    Column& c = index.dims[d];
    c.name = dim.name;
    c.type = dim.type;
    c.cell_val_num = dim.cell_val_num;
    c.cell_count = cells.size();
    if (dim.var()) c.offsets.reserve(cells.size() + 1);
    const uint64_t size = dim.var() ? 0 : DatatypeSize(dim.type);
    if (!dim.var()) c.data.resize(cells.size() * size);
    for (size_t i = 0; i < cells.size();) {
      const uint64_t ord = cells[i];
      size_t j = i + 1;
      while (j < cells.size() && cells[j] == ord + (j - i)) ++j;
      const DecodedTile& dt = *order.tiles[ord >> order.pos_bits].dims[d];
      const uint64_t pos = ord & pos_mask;
      if (!dim.var() && dt.offsets.empty() && dt.cell_size == size) {
        std::memcpy(c.data.data() + i * size, dt.fixed.data() + pos * size, (j - i) * size);
      } else if (!dim.var()) {
        return Error::Corrupt(fmt::format("dimension '{}': cells of {} bytes, expected {}",
                                          dim.name, dt.cell_size, size));
      } else {
        for (uint64_t k = 0; k < j - i; ++k) {
          Bytes v = dt.cell(pos + k);
          c.offsets.push_back(c.data.size());
          AppendBytes(c.data, v);
        }
      }
      i = j;
    }
    if (dim.var()) c.offsets.push_back(c.data.size());
  }
  for (size_t d = 0; d < dims && !cells.empty(); ++d) {
    const Column& c = index.dims[d];
    Bytes lo = c.cell(0), hi = c.cell(0);
    for (uint64_t i = 1; i < c.cell_count; ++i) {
      Bytes v = c.cell(i);
      if (CompareValues(c.type, v, lo) < 0) lo = v;
      if (CompareValues(c.type, v, hi) > 0) hi = v;
    }
    index.box[d].lo.assign(lo.begin(), lo.end());
    index.box[d].hi.assign(hi.begin(), hi.end());
  }
  index.ordinals = std::move(cells);
  return index;
}

}  // namespace

Result<CellIndex> BuildKeyWindow(const ViewInputs& in, const OrderInput& plan,
                                 std::span<const PackedTile> tiles, const WindowKey& key,
                                 uint64_t lo, uint64_t hi, uint64_t all_lo, uint64_t all_hi) {
  OrderInput order;
  order.types = plan.types;
  order.dedup = plan.dedup;
  order.pos_bits = plan.pos_bits;
  order.tiles.reserve(tiles.size());
  for (const PackedTile& pt : tiles) {
    if (pt.tile >= plan.tiles.size()) {
      return Error::InvalidArgument(
          fmt::format("window tile {} of {}", pt.tile, plan.tiles.size()));
    }
    order.tiles.push_back(plan.tiles[pt.tile]);
  }
  const KeyFilter filter{key, lo, hi, all_lo, all_hi, tiles};
  return IndexTiles(in, std::move(order), &filter);
}

Result<CellIndex> BuildSparseIndex(const ViewInputs& in) {
  ASSIGN_OR_RETURN(std::optional<CellIndex> packed, BuildPackedIndex(in));
  if (packed) return std::move(*packed);
  return BuildSparseIndexGeneric(in);
}

Column SparseDimensionColumn(const ArraySchema& schema, const CellIndex& index, size_t d,
                             uint64_t first, uint64_t count) {
  const Dimension& dim = schema.dimensions[d];
  Column c;
  c.name = dim.name;
  c.type = dim.type;
  c.cell_val_num = dim.cell_val_num;
  c.cell_count = count;
  if (index.packing) {
    const uint64_t size = DatatypeSize(dim.type);
    c.data.resize(count * size);
    const KeyPacking& k = *index.packing;
    uint8_t* out = c.data.data();
    const uint64_t* cells = index.packed.data() + first;
    if (size == 8) {
      // 8-byte packable types: uint64 as it is, the others signed. The
      // packing in locals: the stores through `out` could alias it.
      const uint64_t flip = dim.type == Datatype::kUInt64 ? 0 : uint64_t{1} << 63;
      const int at = k.ord_bits + k.shift[d];
      const uint64_t mask = at < 64 ? k.mask[d] : 0, lo = k.lo[d];
      const int sh = at < 64 ? at : 0;
      for (uint64_t i = 0; i < count; ++i) {
        const uint64_t v = (((cells[i] >> sh) & mask) + lo) ^ flip;
        std::memcpy(out + i * 8, &v, 8);
      }
    } else {
      for (uint64_t i = 0; i < count; ++i) {
        FromOrdered(dim.type, k.Coordinate(cells[i], d), out + i * size);
      }
    }
    return c;
  }
  if (d >= index.dims.size()) {  // a view without cells
    if (dim.var()) c.offsets.push_back(0);
    return c;
  }
  const Column& all = index.dims[d];
  if (all.var()) {
    uint64_t base = all.offsets[first];
    c.offsets.reserve(count + 1);
    for (uint64_t i = first; i <= first + count; ++i) c.offsets.push_back(all.offsets[i] - base);
    c.data = CopyBytes(Bytes(all.data).subspan(base, all.offsets[first + count] - base));
  } else {
    uint64_t cs = all.cell_size();
    c.data = CopyBytes(Bytes(all.data).subspan(first * cs, count * cs));
  }
  return c;
}
}  // namespace tiledbfs::core
