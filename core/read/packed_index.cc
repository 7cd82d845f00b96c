#include "core/read/packed_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "core/read/coord_tiles.h"
#include "core/read/run_index.h"
#include "core/util/stop.h"

namespace tiledbfs::core {

std::optional<KeyPacking> PackedPlan::Packing(size_t tiles, uint64_t lo0, uint64_t hi0) const {
  if (lo.empty()) return std::nullopt;
  const uint64_t last = tiles == 0 ? 0 : uint64_t{tiles} - 1;
  const int ord_bits = BitsFor((last << order.pos_bits) | max_tile_cells);
  std::vector<uint64_t> l = lo, h = hi;
  l[0] = std::max(l[0], lo0);
  h[0] = std::min(h[0], hi0);
  return KeyPacking::Plan(std::move(l), std::move(h), ord_bits);
}

void AddPlanTiles(const ViewInputs& in, size_t fi, PackedPlan& plan) {
  const ArraySchema& schema = *in.schema;
  const FragmentMetadata& frag = *in.fragments[fi];
  const bool sliced = !in.subarray.empty();
  // A slice reads only the tiles whose rectangles meet it (unknown
  // rectangles do: their cells are checked).
  if (sliced && !BoxMeets(schema, in.subarray, frag.footer().non_empty_domain)) return;
  auto mbrs = sliced ? frag.Mbrs() : Result<const std::vector<std::vector<Range>>*>(nullptr);
  for (uint64_t t = 0; t < frag.tile_num(); ++t) {
    if (sliced && mbrs.ok() && t < (*mbrs)->size() && !BoxMeets(schema, in.subarray, (**mbrs)[t])) {
      continue;
    }
    const uint64_t n = frag.TileCellNum(t);
    plan.max_tile_cells = std::max(plan.max_tile_cells, n);
    plan.total_cells += n;
    OrderTile ot;
    ot.fragment = static_cast<uint32_t>(fi);
    ot.tile = t;
    ot.stamp = frag.name().t1;
    plan.order.tiles.push_back(std::move(ot));
  }
}

Result<std::optional<PackedPlan>> PlanPackedIndex(const ViewInputs& in) {
  const ArraySchema& schema = *in.schema;
  const size_t dims = schema.dimensions.size();
  if (dims == 0) return std::optional<PackedPlan>();
  PackedPlan plan;
  OrderInput& order = plan.order;
  for (const Dimension& d : schema.dimensions) {
    if (d.var() || !Packable(d.type)) return std::optional<PackedPlan>();
    order.types.push_back(d.type);
  }
  order.dedup = in.dedup && !schema.allows_dups;
  // The subarray's ranges as OrderedValue bounds.
  plan.sub_lo.assign(dims, 0);
  plan.sub_hi.assign(dims, UINT64_MAX);
  for (size_t d = 0; d < in.subarray.size() && d < dims; ++d) {
    if (!in.subarray[d]) continue;
    const Range& r = *in.subarray[d];
    const uint64_t size = DatatypeSize(order.types[d]);
    if (r.lo.size() != size || r.hi.size() != size) return std::optional<PackedPlan>();
    plan.sub_lo[d] = OrderedValue(order.types[d], r.lo.data());
    plan.sub_hi[d] = OrderedValue(order.types[d], r.hi.data());
  }
  std::vector<uint64_t>& lo = plan.lo;
  std::vector<uint64_t>& hi = plan.hi;
  lo.assign(dims, UINT64_MAX);
  hi.assign(dims, 0);
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    const FragmentMetadata& frag = *in.fragments[fi];
    TRY(CheckDimensionCount(in, frag));
    if (frag.tile_num() == 0) continue;
    const FragmentFooter& ft = frag.footer();
    if (ft.null_non_empty_domain || ft.non_empty_domain.size() != dims) {
      return std::optional<PackedPlan>();
    }
    for (size_t d = 0; d < dims; ++d) {
      const Range& r = ft.non_empty_domain[d];
      const uint64_t size = DatatypeSize(order.types[d]);
      if (r.lo.size() != size || r.hi.size() != size) return std::optional<PackedPlan>();
      lo[d] = std::min(lo[d], OrderedValue(order.types[d], r.lo.data()));
      hi[d] = std::max(hi[d], OrderedValue(order.types[d], r.hi.data()));
    }
    AddPlanTiles(in, fi, plan);
  }
  for (size_t d = 0; d < dims; ++d) {
    lo[d] = std::max(lo[d], plan.sub_lo[d]);
    hi[d] = std::min(hi[d], plan.sub_hi[d]);
    // No cell of the fragments lies in the slice.
    if (lo[d] > hi[d]) {
      order.tiles.clear();
      plan.total_cells = plan.max_tile_cells = 0;
    }
  }
  if (order.tiles.empty()) return std::optional<PackedPlan>(std::move(plan));
  order.pos_bits = BitsFor(plan.max_tile_cells);
  if (order.pos_bits > 32 || BitsFor(order.tiles.size()) + order.pos_bits > 63) {
    return std::optional<PackedPlan>();
  }
  if (plan.total_cells > in.limits.max_view_cells) {
    return Error::OutOfMemory(
        fmt::format("sparse view of more than {} cells", in.limits.max_view_cells));
  }
  return std::optional<PackedPlan>(std::move(plan));
}

Result<std::optional<CellIndex>> BuildPackedCells(const ViewInputs& in, const PackedPlan& plan,
                                                  std::span<const PackedTile> tiles, uint64_t lo,
                                                  uint64_t hi, CoordCarry* carry,
                                                  std::vector<uint64_t> reuse) {
  using Built = std::optional<CellIndex>;
  const size_t dims = plan.order.types.size();
  const std::vector<Datatype>& types = plan.order.types;
  // This build's own order: its tiles alone, numbered as in `tiles`, so
  // that an ordinal takes few bits whatever the view's size.
  OrderInput order;
  order.types = types;
  order.dedup = plan.order.dedup;
  order.pos_bits = plan.order.pos_bits;
  order.tiles.reserve(tiles.size());
  for (const PackedTile& pt : tiles) {
    if (pt.tile >= plan.order.tiles.size()) {
      return Error::InvalidArgument(
          fmt::format("packed tile {} of {}", pt.tile, plan.order.tiles.size()));
    }
    order.tiles.push_back(plan.order.tiles[pt.tile]);
  }
  if (dims == 0 || plan.lo.size() != dims) return Built();
  const std::optional<KeyPacking> packing =
      plan.Packing(tiles.size(), std::max(lo, plan.lo[0]), std::min(hi, plan.hi[0]));
  if (!packing) return Built();
  const KeyPacking& k = *packing;
  std::vector<uint64_t> cells = std::move(reuse);
  cells.clear();
  // Room for the cells expected in [lo, hi]: each tile's spread evenly
  // over its rows (exact for a build of every row), and a little more.
  double expected = 0;
  uint64_t most = 0;
  for (const PackedTile& pt : tiles) {
    const OrderTile& ot = plan.order.tiles[pt.tile];
    const uint64_t n = in.fragments[ot.fragment]->TileCellNum(ot.tile);
    most = std::max(most, n);
    if (lo <= pt.lo && hi >= pt.hi) {
      expected += static_cast<double>(n);
    } else if (lo <= pt.hi && hi >= pt.lo) {
      const double rows = static_cast<double>(pt.hi - pt.lo) + 1.0;
      const double in_range = static_cast<double>(std::min(hi, pt.hi) - std::max(lo, pt.lo)) + 1.0;
      expected += static_cast<double>(n) * in_range / rows;
    }
  }
  const bool whole = lo == 0 && hi == UINT64_MAX;
  cells.reserve(static_cast<uint64_t>(expected * (whole ? 1.0 : 1.125)) + (whole ? 0 : most));
  std::vector<DecodedTile> stamps(tiles.size());
  // Per tile of the order once a fragment has delete timestamps, else empty.
  std::vector<DecodedTile> deleted;
  CoordCarry kept;
  // Coordinate tiles are read a window at a time (at most 256 tiles or
  // about 8 MiB of coordinates), their small files together and decoded on
  // every core (ReadTiles): a view of many small fragments would otherwise
  // open and read its files one after another. Tiles the previous build
  // carried over are not read again.
  std::vector<std::optional<Result<std::vector<DecodedTile>>>> window;
  size_t window_first = 0;
  auto read_window = [&](size_t from) {
    constexpr size_t kMaxTiles = 256;
    constexpr uint64_t kMaxBytes = uint64_t{8} << 20;
    size_t to = from;
    uint64_t bytes = 0;
    std::vector<std::pair<uint32_t, uint64_t>> wanted;
    std::vector<size_t> slots;
    window.clear();
    while (to < tiles.size() && to - from < kMaxTiles && bytes < kMaxBytes) {
      const size_t gt = tiles[to].tile;
      const OrderTile& ot = order.tiles[to];
      window.emplace_back();
      if (carry != nullptr) {
        auto it = carry->find(gt);
        if (it != carry->end()) {
          window.back() = std::move(it->second);
          carry->erase(it);
          ++to;
          continue;
        }
      }
      bytes += in.fragments[ot.fragment]->TileCellNum(ot.tile) * dims * 8;
      wanted.emplace_back(ot.fragment, ot.tile);
      slots.push_back(to - from);
      ++to;
    }
    std::vector<Result<std::vector<DecodedTile>>> got = ReadCoordTileBatch(in, wanted, dims);
    for (size_t i = 0; i < got.size(); ++i) window[slots[i]] = std::move(got[i]);
    window_first = from;
  };
  // A stop of the process (core/util/stop.h) is looked for between tiles and
  // before the sort: a tile's cells take milliseconds.
  constexpr std::string_view kWhat = "sparse cell index";
  for (size_t i = 0; i < tiles.size(); ++i) {
    TRY(CheckStop(kWhat));
    const PackedTile& pt = tiles[i];
    const OrderTile& ot = order.tiles[i];
    const FragmentMetadata& frag = *in.fragments[ot.fragment];
    if (i >= window_first + window.size()) read_window(i);
    ASSIGN_OR_RETURN(std::vector<DecodedTile> coords, std::move(*window[i - window_first]));
    const uint64_t t = ot.tile;
    const uint64_t cell_num = frag.TileCellNum(t);
    if (coords.size() != dims) {
      return Error::Corrupt(fmt::format("{}: tile {} has {} coordinate tiles for {} dimensions",
                                        frag.dir(), t, coords.size(), dims));
    }
    for (size_t d = 0; d < dims; ++d) {
      const DecodedTile& dt = coords[d];
      if (dt.cell_num != cell_num) {
        return Error::Corrupt(fmt::format("{}: tile {} has {} coordinates, expected {}", frag.dir(),
                                          t, dt.cell_num, cell_num));
      }
      if (!dt.offsets.empty() || dt.cell_size != DatatypeSize(types[d])) return Built();
    }
    const size_t first = cells.size();
    TRY(AppendTileCells(in, order, i, &stamps[i], deleted, cells));
    // Dimension d's value of each cell from `first` on, less `base`, to
    // each(c, v): int64-like values inline (the common case), the rest
    // through OrderedLoadFor.
    const uint64_t pos_mask = (uint64_t{1} << order.pos_bits) - 1;
    auto for_each_value = [&](size_t d, uint64_t base, auto each) {
      const uint8_t* values = coords[d].fixed.data();
      const size_t end = cells.size();
      if (DatatypeSize(types[d]) == 8 && types[d] != Datatype::kUInt64) {
        for (size_t c = first; c < end; ++c) {
          uint64_t raw;
          std::memcpy(&raw, values + (cells[c] & pos_mask) * 8, 8);
          each(c, (raw ^ (uint64_t{1} << 63)) - base);
        }
        return;
      }
      const OrderedLoad load = OrderedLoadFor(types[d]);
      const uint64_t size = DatatypeSize(types[d]);
      for (size_t c = first; c < end; ++c)
        each(c, load(values + (cells[c] & pos_mask) * size) - base);
    };
    // Keys, dimension by dimension. A coordinate outside the bounds means
    // the non-empty domain lied: take the generic path. Where cells may
    // fall outside the key's range (a window of rows, a slice) or the
    // tile's rectangle is narrower than it, the values are checked one by
    // one: only the cells in the range stay, so that the next dimensions
    // are packed into those alone, and each cell in the slice must lie in
    // its tile's rectangle [pt.lo, pt.hi] (or a build of another range
    // would have missed it).
    uint64_t bad = 0, outside = 0;
    for (size_t d = 0; d < dims; ++d) {
      const int at = k.ord_bits + k.shift[d];
      // A dimension with one value may sit at bit 64: no key bits.
      const int sh = at < 64 ? at : 0;
      const uint64_t keep = at < 64 ? ~uint64_t{0} : 0;
      const uint64_t klo = k.lo[d], khi = k.hi[d];
      const uint64_t slo = plan.sub_lo[d], shi = plan.sub_hi[d];
      const uint64_t tlo = d == 0 ? pt.lo : 0, thi = d == 0 ? pt.hi : UINT64_MAX;
      const bool checked = klo > plan.lo[d] || khi < plan.hi[d] || slo > 0 || shi < UINT64_MAX ||
                           tlo > klo || thi < khi;
      if (!checked) {
        const uint64_t range = khi - klo;
        for_each_value(d, klo, [&](size_t c, uint64_t v) {
          bad |= static_cast<uint64_t>(v > range);
          cells[c] |= (v << sh) & keep;
        });
        continue;
      }
      const uint64_t plo = plan.lo[d], phi = plan.hi[d];
      size_t w = first;
      for_each_value(d, 0, [&](size_t c, uint64_t a) {
        const uint64_t in_slice = static_cast<uint64_t>(a >= slo) & static_cast<uint64_t>(a <= shi);
        bad |= in_slice & (static_cast<uint64_t>(a < plo) | static_cast<uint64_t>(a > phi));
        outside |= in_slice & (static_cast<uint64_t>(a < tlo) | static_cast<uint64_t>(a > thi));
        cells[w] = cells[c] | (((a - klo) << sh) & keep);
        w += a >= klo && a <= khi ? 1 : 0;
      });
      cells.resize(w);
    }
    if (bad) return Built();
    if (outside) {
      return Error::Corrupt(
          fmt::format("{}: tile {} holds a cell outside its bounding rectangle (dimension {})",
                      frag.dir(), t, in.schema->dimensions[0].name));
    }
    if (carry != nullptr && pt.hi > hi) kept.emplace(pt.tile, std::move(coords));
  }
  if (carry != nullptr) *carry = std::move(kept);
  TRY(CheckStop(kWhat));
  SortPackedCells(order, k, cells);
  TRY(CheckStop(kWhat));
  if (!deleted.empty()) {
    DropDeletedCells(
        in, deleted, order.pos_bits, [&k](uint64_t c) { return k.OrdinalOf(c); }, cells);
  }
  if (!in.deletes.empty()) {
    // The conditions read the coordinates from the keys, and the
    // attributes' tiles of this build alone.
    std::vector<std::array<uint8_t, 8>> values(dims);
    TRY(DropConditionDeletedCells(
        in, order, [&k](uint64_t c) { return k.OrdinalOf(c); },
        [&](uint64_t c, const JudgedCell&, size_t d) {
          FromOrdered(types[d], k.Coordinate(c, d), values[d].data());
          return Bytes(values[d].data(), DatatypeSize(types[d]));
        },
        cells));
  }
  // Cells dropped, or a range that kept only part of its tiles' cells:
  // give back the rest. A range keeps up to half as much again (what it
  // reserved, or a reused buffer's room), for the next build to reuse.
  if (cells.capacity() - cells.size() > cells.size() / (whole ? 8 : 2)) cells.shrink_to_fit();
  return Built(MakePackedIndex(order, k, std::move(cells)));
}

CellIndex MakePackedIndex(const OrderInput& order, const KeyPacking& k,
                          std::vector<uint64_t> cells) {
  const std::vector<Datatype>& types = order.types;
  const size_t dims = types.size();
  CellIndex index;
  index.box.resize(dims);
  index.cell_count = cells.size();
  index.pos_bits = order.pos_bits;
  index.sparse_tiles.reserve(order.tiles.size());
  for (const OrderTile& t : order.tiles) index.sparse_tiles.push_back({t.fragment, t.tile});
  for (size_t d = 0; d < dims && !cells.empty(); ++d) {
    uint64_t mn = UINT64_MAX, mx = 0;
    if (d == 0) {
      mn = k.Coordinate(cells.front(), 0), mx = k.Coordinate(cells.back(), 0);
    } else {
      for (uint64_t c : cells) {
        uint64_t v = k.Coordinate(c, d);
        mn = std::min(mn, v);
        mx = std::max(mx, v);
      }
    }
    const uint64_t size = DatatypeSize(types[d]);
    index.box[d].lo.resize(size, 0);
    index.box[d].hi.resize(size, 0);
    FromOrdered(types[d], mn, index.box[d].lo.data());
    FromOrdered(types[d], mx, index.box[d].hi.data());
  }
  index.packed = std::move(cells);
  index.packing = k;
  return index;
}

CellIndex PlanTiles(const PackedPlan& plan) {
  CellIndex index;
  index.box.resize(plan.order.types.size());
  index.pos_bits = plan.order.pos_bits;
  index.sparse_tiles.reserve(plan.order.tiles.size());
  for (const OrderTile& t : plan.order.tiles) index.sparse_tiles.push_back({t.fragment, t.tile});
  return index;
}

Result<std::optional<CellIndex>> BuildPackedIndex(const ViewInputs& in) {
  ASSIGN_OR_RETURN(std::optional<PackedPlan> plan, PlanPackedIndex(in));
  if (!plan) return std::optional<CellIndex>();
  if (plan->order.tiles.empty()) {
    CellIndex index;
    index.box.resize(in.schema->dimensions.size());
    return std::optional<CellIndex>(std::move(index));
  }
  std::vector<PackedTile> tiles(plan->order.tiles.size());
  for (size_t t = 0; t < tiles.size(); ++t) tiles[t].tile = t;
  return BuildPackedCells(in, *plan, tiles, 0, UINT64_MAX, nullptr);
}

std::optional<std::vector<uint64_t>> CountDimensionValues(const CellIndex& index, size_t d,
                                                          std::span<const uint64_t> bounds) {
  if (!index.packing || d >= index.packing->shift.size()) return std::nullopt;
  const KeyPacking& k = *index.packing;
  const uint64_t* cells = index.packed.data();
  const size_t n = index.packed.size();
  std::vector<uint64_t> counts(bounds.size() + 1, 0);
  // The bits above dimension d hold the dimensions before it: a run of
  // cells equal there is one segment, in which dimension d ascends.
  const int above = d == 0 ? 64 : k.ord_bits + k.shift[d - 1];
  auto segment = [&](uint64_t c) { return above >= 64 ? 0 : c >> above; };
  auto value = [&](uint64_t c) { return k.Coordinate(c, d); };
  for (size_t i = 0; i < n;) {
    // The segment's end: galloping from i, then a binary search.
    const uint64_t seg = segment(cells[i]);
    size_t step = 1, lo = i, hi = i + 1;
    while (hi < n && segment(cells[hi]) == seg) {
      lo = hi;
      step *= 2;
      hi = std::min(n, hi + step);
    }
    const size_t end = std::partition_point(cells + lo, cells + hi,
                                            [&](uint64_t c) { return segment(c) == seg; }) -
                       cells;
    // The class of the segment's first value, then the bounds up to its
    // last value, each found by a binary search.
    size_t b = std::upper_bound(bounds.begin(), bounds.end(), value(cells[i])) - bounds.begin();
    const uint64_t last = value(cells[end - 1]);
    size_t from = i;
    for (; b < bounds.size() && bounds[b] <= last; ++b) {
      const size_t at = std::partition_point(cells + from, cells + end,
                                             [&](uint64_t c) { return value(c) < bounds[b]; }) -
                        cells;
      counts[b] += at - from;
      from = at;
    }
    counts[b] += end - from;
    i = end;
  }
  return counts;
}

std::vector<uint64_t> TileEnds(const ViewInputs& in, const CellIndex& index) {
  std::vector<uint64_t> ends;
  if (!index.packing && !index.runs.empty()) return RunTileEnds(index);
  if (!index.packing) return ends;
  const KeyPacking& k = *index.packing;
  const std::vector<Dimension>& dims = in.schema->dimensions;
  if (k.lo.size() != dims.size() || k.shift.size() != dims.size()) return ends;
  const uint64_t ordinals = k.ord_bits == 0 ? 0 : ~uint64_t{0} >> (64 - k.ord_bits);
  ends.assign(index.sparse_tiles.size(), UINT64_MAX);
  for (size_t t = 0; t < index.sparse_tiles.size(); ++t) {
    const CellIndex::SparseTile& st = index.sparse_tiles[t];
    if (st.fragment >= in.fragments.size()) continue;
    auto mbrs = in.fragments[st.fragment]->Mbrs();
    if (!mbrs.ok() || st.tile >= (*mbrs)->size() || (**mbrs)[st.tile].size() != dims.size()) {
      continue;
    }
    // The MBR's upper corner, packed as a cell with the highest ordinal: no
    // cell of the tile packs above it.
    uint64_t key = 0;
    bool known = true;
    for (size_t d = 0; d < dims.size() && known; ++d) {
      const Range& r = (**mbrs)[st.tile][d];
      if (!Packable(dims[d].type) || r.hi.size() != DatatypeSize(dims[d].type)) {
        known = false;
        break;
      }
      // Clamped to the view's highest value: no cell of the view is above it.
      const uint64_t v = std::min(OrderedValue(dims[d].type, r.hi.data()), k.hi[d]);
      if (v < k.lo[d]) known = false;
      if (known && k.shift[d] < 64) key |= (v - k.lo[d]) << k.shift[d];
    }
    if (!known) continue;
    const uint64_t hi = (k.key_bits > 0 && k.ord_bits < 64 ? key << k.ord_bits : 0) | ordinals;
    ends[t] = static_cast<uint64_t>(std::upper_bound(index.packed.begin(), index.packed.end(), hi) -
                                    index.packed.begin());
  }
  return ends;
}
}  // namespace tiledbfs::core
