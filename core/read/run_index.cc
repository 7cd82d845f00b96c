#include "core/read/run_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "core/read/coord_tiles.h"
#include "core/read/tile_source.h"
#include "core/util/stop.h"

namespace tiledbfs::core {
namespace {

// Cells of one tile in one row, their second coordinate ascending.
struct Segment {
  uint64_t row = 0;  // first coordinate (OrderedValue)
  // Second coordinate of the first and last cell; with rows_only, the
  // fragment's rank in both.
  uint64_t c_first = 0, c_last = 0;
  uint64_t ordinal = 0;  // of the first cell: local tile << pos_bits | pos
  uint64_t count = 0;
};

// What one tile's scan found: segments appended, or why runs do not apply.
enum class Scan { kOk, kNoRuns, kOutside };

// Bounds a tile's scan checks its cells against (OrderedValue).
struct ScanBounds {
  uint64_t rlo, rhi;    // the window's rows within the slice: cells kept
  uint64_t slo, shi;    // the slice's rows: cells checked
  uint64_t nlo0, nhi0;  // the view's bounds (non-empty domains)
  uint64_t nlo1, nhi1;
  uint64_t tlo, thi;  // the tile's rectangle along the first dimension
  bool dups;          // equal second coordinates may follow each other
};

// Splits one tile's cells into segments (appended to `out`): row values
// from `row(p)`, second-coordinate values from `col(p)`.
template <typename Row, typename Col>
Scan ScanTile(uint64_t cells, uint64_t base, const ScanBounds& b, Row row, Col col,
              std::vector<Segment>& out) {
  bool open = false;
  Segment s;
  uint64_t prev = 0;
  for (uint64_t p = 0; p < cells; ++p) {
    const uint64_t r = row(p);
    if (r >= b.slo && r <= b.shi) {
      if (r < b.nlo0 || r > b.nhi0) return Scan::kNoRuns;
      if (r < b.tlo || r > b.thi) return Scan::kOutside;
    }
    if (r < b.rlo || r > b.rhi) {
      if (open) out.push_back(s);
      open = false;
      continue;
    }
    const uint64_t c = col(p);
    if (c < b.nlo1 || c > b.nhi1) return Scan::kNoRuns;
    if (open && r == s.row && (c > prev || (b.dups && c == prev))) {
      ++s.count;
      s.c_last = prev = c;
      continue;
    }
    if (open) out.push_back(s);
    s = Segment{r, c, c, base | p, 1};
    prev = c;
    open = true;
  }
  if (open) out.push_back(s);
  return Scan::kOk;
}

// ScanTile without the second coordinate (RunPlan::rows_only): each run of
// cells of one row is one segment, found by comparing the row values a
// block at a time; the bounds are checked once per segment.
template <typename Row>
Scan ScanRows(uint64_t cells, uint64_t base, uint64_t rank, const ScanBounds& b, Row row,
              std::vector<Segment>& out) {
  constexpr uint64_t kBlock = 8;
  for (uint64_t p = 0; p < cells;) {
    const uint64_t r = row(p);
    uint64_t q = p + 1;
    for (; q + kBlock <= cells; q += kBlock) {
      uint64_t differ = 0;
      for (uint64_t k = 0; k < kBlock; ++k) differ |= row(q + k) ^ r;
      if (differ != 0) break;
    }
    while (q < cells && row(q) == r) ++q;
    if (r >= b.slo && r <= b.shi) {
      if (r < b.nlo0 || r > b.nhi0) return Scan::kNoRuns;
      if (r < b.tlo || r > b.thi) return Scan::kOutside;
    }
    if (r >= b.rlo && r <= b.rhi) out.push_back(Segment{r, rank, rank, base | p, q - p});
    p = q;
  }
  return Scan::kOk;
}

// The first dimension's value as OrderedValue, for 8-byte signed integers
// inline (the common case).
struct SignedLoad {
  const uint8_t* values;
  uint64_t operator()(uint64_t p) const {
    uint64_t raw;
    std::memcpy(&raw, values + p * 8, 8);
    return raw ^ (uint64_t{1} << 63);
  }
};
struct AnyLoad {
  const uint8_t* values;
  uint64_t size;
  OrderedLoad load;
  uint64_t operator()(uint64_t p) const { return load(values + p * size); }
};

// The coordinate tiles of `tiles`, the first `dims` dimensions of each.
std::vector<Result<std::vector<DecodedTile>>> ReadRunTiles(
    const ViewInputs& in, std::span<const std::pair<uint32_t, uint64_t>> tiles, size_t dims) {
  if (dims == 2) return ReadCoordTileBatch(in, tiles, 2);
  std::vector<TileRequest> requests;
  requests.reserve(tiles.size());
  for (const auto& [f, t] : tiles) {
    requests.push_back({in.fragments[f].get(), FieldRef::Dimension(0), t});
  }
  std::vector<Result<DecodedTile>> got = ReadTiles(requests, in.encrypted);
  std::vector<Result<std::vector<DecodedTile>>> out;
  out.reserve(got.size());
  for (auto& g : got) {
    if (!g.ok()) {
      out.push_back(g.error());
      continue;
    }
    std::vector<DecodedTile> one;
    one.push_back(std::move(g).value());
    out.push_back(std::move(one));
  }
  return out;
}

bool Signed8(Datatype t) { return DatatypeSize(t) == 8 && t != Datatype::kUInt64; }

// Sorts segments by row, then by their first value: counting by row where
// the rows are few beside the segments, else a sort.
void SortSegments(std::vector<Segment>& segs, uint64_t rlo, uint64_t rhi) {
  auto by_row_col = [](const Segment& a, const Segment& b) {
    if (a.row != b.row) return a.row < b.row;
    return a.c_first != b.c_first ? a.c_first < b.c_first : a.ordinal < b.ordinal;
  };
  const uint64_t rows = rhi - rlo;
  if (segs.empty() || rows >= 4 * uint64_t{segs.size()}) {
    std::sort(segs.begin(), segs.end(), by_row_col);
    return;
  }
  std::vector<uint64_t> start(rows + 2, 0);
  for (const Segment& s : segs) ++start[s.row - rlo + 1];
  for (uint64_t i = 1; i < start.size(); ++i) start[i] += start[i - 1];
  std::vector<Segment> sorted(segs.size());
  for (const Segment& s : segs) sorted[start[s.row - rlo]++] = s;
  // Within a row: few segments, mostly in order already (tiles come in
  // fragment order), each row's in stored order.
  for (size_t i = 1; i < sorted.size(); ++i) {
    Segment s = sorted[i];
    size_t j = i;
    for (; j > 0 && sorted[j - 1].row == s.row && by_row_col(s, sorted[j - 1]); --j) {
      sorted[j] = sorted[j - 1];
    }
    sorted[j] = s;
  }
  segs.swap(sorted);
}

}  // namespace

std::optional<RunPlan> PlanRuns(const ViewInputs& in, const PackedPlan& plan) {
  const ArraySchema& schema = *in.schema;
  std::optional<RunPlan> none;
  if (schema.dimensions.size() != 2 || !in.deletes.empty() || plan.sub_lo.size() != 2) return none;
  if (schema.cell_order != Layout::kRowMajor && schema.cell_order != Layout::kColMajor) return none;
  if (plan.sub_lo[1] != 0 || plan.sub_hi[1] != UINT64_MAX) return none;
  for (const Dimension& d : schema.dimensions) {
    if (d.var() || !Packable(d.type)) return none;
  }
  // Per fragment with tiles: its non-empty domain (OrderedValue), dimension
  // 0 then 1, and its index.
  struct Box {
    uint64_t lo0, hi0, lo1, hi1;
    uint32_t fragment;
  };
  std::vector<Box> boxes;
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    const FragmentMetadata& f = *in.fragments[fi];
    if (f.tile_num() == 0) continue;
    const FragmentFooter& ft = f.footer();
    if (ft.has_timestamps || ft.has_delete_meta || ZippedCoords(f)) return none;
    if (ft.null_non_empty_domain || ft.non_empty_domain.size() != 2) return none;
    uint64_t v[4];
    for (size_t d = 0; d < 2; ++d) {
      const Range& r = ft.non_empty_domain[d];
      const Datatype t = schema.dimensions[d].type;
      if (r.lo.size() != DatatypeSize(t) || r.hi.size() != DatatypeSize(t)) return none;
      v[2 * d] = OrderedValue(t, r.lo.data());
      v[2 * d + 1] = OrderedValue(t, r.hi.data());
    }
    boxes.push_back({v[0], v[1], v[2], v[3], static_cast<uint32_t>(fi)});
  }
  RunPlan runs;
  // Rows alone need fragments that lie apart along the second dimension
  // wherever they share rows: by the second dimension's low end, each
  // against those starting within it (a bounded number of pairs).
  runs.rows_only = in.subarray.empty();
  std::sort(boxes.begin(), boxes.end(), [](const Box& a, const Box& b) { return a.lo1 < b.lo1; });
  uint64_t budget = 64 * uint64_t{boxes.size()};
  for (size_t i = 0; i < boxes.size() && runs.rows_only; ++i) {
    for (size_t j = i + 1; j < boxes.size() && boxes[j].lo1 <= boxes[i].hi1; ++j) {
      if (budget-- == 0 || (boxes[j].lo0 <= boxes[i].hi0 && boxes[i].lo0 <= boxes[j].hi0)) {
        runs.rows_only = false;
        break;
      }
    }
  }
  runs.rank.assign(in.fragments.size(), 0);
  for (size_t i = 0; i < boxes.size(); ++i) runs.rank[boxes[i].fragment] = static_cast<uint32_t>(i);
  return runs;
}

Result<std::optional<CellIndex>> BuildRunCells(const ViewInputs& in, const PackedPlan& plan,
                                               const RunPlan& runs,
                                               std::span<const PackedTile> tiles, uint64_t lo,
                                               uint64_t hi, CoordCarry* carry,
                                               std::vector<std::pair<uint64_t, uint64_t>>* cuts,
                                               size_t subs) {
  // On nullopt the carry is dropped: the build from keys wants every
  // dimension's tiles, and the tiles taken from it are gone.
  auto none = [carry] {
    if (carry != nullptr) carry->clear();
    return std::optional<CellIndex>();
  };
  const bool rows_only = runs.rows_only;
  const size_t read_dims = rows_only ? 1 : 2;
  const std::vector<Datatype>& types = plan.order.types;
  if (types.size() != 2 || plan.lo.size() != 2 || runs.rank.size() != in.fragments.size()) {
    return none();
  }
  const int pos_bits = plan.order.pos_bits;
  ScanBounds b;
  b.slo = plan.sub_lo[0];
  b.shi = plan.sub_hi[0];
  b.rlo = std::max(lo, b.slo);
  b.rhi = std::min(hi, b.shi);
  b.nlo0 = plan.lo[0];
  b.nhi0 = plan.hi[0];
  b.nlo1 = plan.lo[1];
  b.nhi1 = plan.hi[1];
  b.dups = !plan.order.dedup;
  uint64_t stored = 0;
  for (const PackedTile& pt : tiles) {
    if (pt.tile >= plan.order.tiles.size()) {
      return Error::InvalidArgument(
          fmt::format("packed tile {} of {}", pt.tile, plan.order.tiles.size()));
    }
    const OrderTile& ot = plan.order.tiles[pt.tile];
    stored += in.fragments[ot.fragment]->TileCellNum(ot.tile);
  }
  // More segments than a quarter of the cells: keys cost less.
  const uint64_t most_segments = std::max<uint64_t>(1024, stored / 4);
  std::vector<Segment> segs;
  CoordCarry kept;
  // Coordinate tiles are read as BuildPackedCells reads them: a batch of
  // at most 256 tiles or about 8 MiB at a time, the carry's not again.
  constexpr size_t kMaxTiles = 256;
  constexpr uint64_t kMaxBytes = uint64_t{8} << 20;
  constexpr std::string_view kWhat = "sparse cell index";
  for (size_t from = 0; from < tiles.size();) {
    std::vector<std::optional<Result<std::vector<DecodedTile>>>> batch;
    std::vector<std::pair<uint32_t, uint64_t>> wanted;
    std::vector<size_t> slots;
    uint64_t bytes = 0;
    size_t to = from;
    for (; to < tiles.size() && to - from < kMaxTiles && bytes < kMaxBytes; ++to) {
      batch.emplace_back();
      const OrderTile& ot = plan.order.tiles[tiles[to].tile];
      if (carry != nullptr) {
        auto it = carry->find(tiles[to].tile);
        if (it != carry->end()) {
          batch.back() = std::move(it->second);
          carry->erase(it);
          continue;
        }
      }
      bytes += in.fragments[ot.fragment]->TileCellNum(ot.tile) * 8 * read_dims;
      wanted.emplace_back(ot.fragment, ot.tile);
      slots.push_back(to - from);
    }
    std::vector<Result<std::vector<DecodedTile>>> got = ReadRunTiles(in, wanted, read_dims);
    for (size_t i = 0; i < got.size(); ++i) batch[slots[i]] = std::move(got[i]);
    for (size_t i = from; i < to; ++i) {
      TRY(CheckStop(kWhat));
      const PackedTile& pt = tiles[i];
      const OrderTile& ot = plan.order.tiles[pt.tile];
      const FragmentMetadata& frag = *in.fragments[ot.fragment];
      ASSIGN_OR_RETURN(std::vector<DecodedTile> coords, std::move(*batch[i - from]));
      const uint64_t cells = frag.TileCellNum(ot.tile);
      // A carry from a build from keys holds every dimension's tiles.
      if (coords.size() < read_dims) {
        return Error::Corrupt(fmt::format("{}: tile {} has {} coordinate tiles for {} dimensions",
                                          frag.dir(), ot.tile, coords.size(), read_dims));
      }
      for (size_t d = 0; d < read_dims; ++d) {
        const DecodedTile& dt = coords[d];
        if (dt.cell_num != cells) {
          return Error::Corrupt(fmt::format("{}: tile {} has {} coordinates, expected {}",
                                            frag.dir(), ot.tile, dt.cell_num, cells));
        }
        if (!dt.offsets.empty() || dt.cell_size != DatatypeSize(types[d])) return none();
      }
      b.tlo = pt.lo;
      b.thi = pt.hi;
      const uint64_t base = uint64_t{i} << pos_bits;
      const uint8_t* rv = coords[0].fixed.data();
      const uint8_t* cv = rows_only ? nullptr : coords[1].fixed.data();
      const uint64_t rank = runs.rank[ot.fragment];
      const AnyLoad any_r{rv, DatatypeSize(types[0]), OrderedLoadFor(types[0])};
      const AnyLoad any_c{cv, DatatypeSize(types[1]), OrderedLoadFor(types[1])};
      Scan scan;
      if (rows_only && Signed8(types[0])) {
        scan = ScanRows(cells, base, rank, b, SignedLoad{rv}, segs);
      } else if (rows_only) {
        scan = ScanRows(cells, base, rank, b, any_r, segs);
      } else if (Signed8(types[0]) && Signed8(types[1])) {
        scan = ScanTile(cells, base, b, SignedLoad{rv}, SignedLoad{cv}, segs);
      } else {
        scan = ScanTile(cells, base, b, any_r, any_c, segs);
      }
      if (scan == Scan::kOutside) {
        return Error::Corrupt(
            fmt::format("{}: tile {} holds a cell outside its bounding rectangle (dimension {})",
                        frag.dir(), ot.tile, in.schema->dimensions[0].name));
      }
      if (scan == Scan::kNoRuns || segs.size() > most_segments) return none();
      if (carry != nullptr && pt.hi > hi) kept.emplace(pt.tile, std::move(coords));
    }
    from = to;
  }
  TRY(CheckStop(kWhat));
  SortSegments(segs, b.rlo, std::max(b.rlo, b.rhi));
  // Within a row, each segment must end before the next begins (with
  // rows_only, the plan saw to it).
  for (size_t i = 1; i < segs.size() && !rows_only; ++i) {
    if (segs[i].row == segs[i - 1].row && segs[i].c_first <= segs[i - 1].c_last) return none();
  }
  CellIndex index;
  index.pos_bits = pos_bits;
  index.sparse_tiles.reserve(tiles.size());
  for (const PackedTile& pt : tiles) {
    const OrderTile& ot = plan.order.tiles[pt.tile];
    index.sparse_tiles.push_back({ot.fragment, ot.tile});
  }
  uint64_t cell = 0, clo = UINT64_MAX, chi = 0;
  std::vector<bool> has_cells(rows_only ? tiles.size() : 0, false);
  for (const Segment& s : segs) {
    // A segment going on from the last one in the same tile (the next row
    // of a tile alone in its rows) extends its run.
    const bool extends = !index.runs.empty() &&
                         index.runs.back().second + (cell - index.runs.back().first) == s.ordinal;
    if (!extends) index.runs.emplace_back(cell, s.ordinal);
    cell += s.count;
    if (rows_only) {
      has_cells[s.ordinal >> pos_bits] = true;
    } else {
      clo = std::min(clo, s.c_first);
      chi = std::max(chi, s.c_last);
    }
  }
  // The second dimension's bounds, with rows_only, from the rectangles of
  // the tiles with cells here: over every window, those of every tile, as
  // exact as a pass over the cells (a rectangle bounds its tile's cells).
  for (size_t i = 0; i < has_cells.size(); ++i) {
    if (!has_cells[i]) continue;
    const OrderTile& ot = plan.order.tiles[tiles[i].tile];
    const Range* r = TileMbr(*in.fragments[ot.fragment], ot.tile, 1, 2);
    if (r == nullptr || r->lo.size() != DatatypeSize(types[1]) ||
        r->hi.size() != DatatypeSize(types[1])) {
      return none();
    }
    clo = std::min(clo, std::max(plan.lo[1], OrderedValue(types[1], r->lo.data())));
    chi = std::max(chi, std::min(plan.hi[1], OrderedValue(types[1], r->hi.data())));
  }
  index.cell_count = cell;
  index.runs.shrink_to_fit();
  // The segments are in rows: a cut where a row starts once a part's
  // cells have gone by.
  if (cuts != nullptr && subs > 1) {
    cuts->clear();
    uint64_t at = 0;
    size_t next = 1;
    for (size_t i = 0; i < segs.size() && next < subs; ++i) {
      if (i > 0 && segs[i].row != segs[i - 1].row && at >= cell / subs * next) {
        cuts->emplace_back(segs[i].row, at);
        while (next < subs && at >= cell / subs * next) ++next;
      }
      at += segs[i].count;
    }
  }
  index.box.resize(2);
  if (!segs.empty()) {
    const uint64_t lows[2] = {segs.front().row, clo}, highs[2] = {segs.back().row, chi};
    for (size_t d = 0; d < 2; ++d) {
      const uint64_t size = DatatypeSize(types[d]);
      index.box[d].lo.assign(size, 0);
      index.box[d].hi.assign(size, 0);
      FromOrdered(types[d], lows[d], index.box[d].lo.data());
      FromOrdered(types[d], highs[d], index.box[d].hi.data());
    }
  }
  if (carry != nullptr) *carry = std::move(kept);
  return std::optional<CellIndex>(std::move(index));
}

std::vector<uint64_t> RunTileEnds(const CellIndex& index) {
  std::vector<uint64_t> ends(index.sparse_tiles.size(), 0);
  for (size_t j = 0; j < index.runs.size(); ++j) {
    const uint64_t t = index.runs[j].second >> index.pos_bits;
    const uint64_t end = j + 1 < index.runs.size() ? index.runs[j + 1].first : index.cell_count;
    if (t < ends.size()) ends[t] = std::max(ends[t], end);
  }
  return ends;
}

}  // namespace tiledbfs::core
