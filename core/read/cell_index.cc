#include "core/read/cell_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstring>
#include <map>
#include <numeric>
#include <optional>
#include <span>
#include <unordered_set>

#include "core/read/coords.h"
#include "core/read/parallel.h"
#include "core/read/sparse_order.h"

namespace tiledbfs::core {
namespace {

using I128 = __int128;

I128 RangeLo(const Dimension& d, const Range& r) { return ToInt128(d.type, r.lo); }
I128 RangeHi(const Dimension& d, const Range& r) { return ToInt128(d.type, r.hi); }

// Row-major strides of a box with the given extents.
std::vector<uint64_t> Strides(const std::vector<uint64_t>& shape) {
  std::vector<uint64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

}  // namespace

Result<DenseLocator> DenseLocator::Make(const ViewInputs& in, const std::vector<I128>& box_lo,
                                        const std::vector<uint64_t>& shape) {
  DenseLocator loc;
  loc.lo_ = box_lo;
  loc.shape_ = shape;
  loc.strides_ = Strides(shape);
  const size_t dims = shape.size();
  for (const auto& fp : in.fragments) {
    const FragmentMetadata& frag = *fp;
    const FragmentFooter& ft = frag.footer();
    Frag f;
    if (ft.null_non_empty_domain || ft.non_empty_domain.size() != dims) {
      loc.frags_.push_back(std::move(f));
      continue;
    }
    if (!frag.dense()) {
      // Old TileDB versions could write sparse fragments into dense arrays.
      // Reading them needs a coordinate overlay that is not built yet: say
      // so rather than show wrong cells.
      return Error::Unsupported(
          fmt::format("{}: a sparse fragment in a dense array is not supported yet", frag.dir()));
    }
    const ArraySchema& fs = frag.schema();
    f.empty = false;
    f.tile_order = fs.tile_order;
    f.cell_order = fs.cell_order;
    f.a.resize(dims), f.b.resize(dims), f.dom_lo.resize(dims), f.ext.resize(dims);
    f.tile_first.resize(dims), f.tiles_per_dim.resize(dims), f.cell_ext.resize(dims);
    for (size_t d = 0; d < dims; ++d) {
      const Dimension& dim = fs.dimensions[d];
      f.a[d] = RangeLo(dim, ft.non_empty_domain[d]);
      f.b[d] = RangeHi(dim, ft.non_empty_domain[d]);
      f.dom_lo[d] = ToInt128(dim.type, dim.domain.lo);
      f.ext[d] = dim.tile_extent ? ToInt128(dim.type, *dim.tile_extent)
                                 : ToInt128(dim.type, dim.domain.hi) - f.dom_lo[d] + 1;
      if (f.ext[d] <= 0 || f.a[d] < f.dom_lo[d] || f.b[d] < f.a[d]) {
        return Error::Corrupt(
            fmt::format("{}: non-empty domain outside the array domain", frag.dir()));
      }
      f.tile_first[d] = static_cast<uint64_t>((f.a[d] - f.dom_lo[d]) / f.ext[d]);
      f.tiles_per_dim[d] =
          static_cast<uint64_t>((f.b[d] - f.dom_lo[d]) / f.ext[d]) - f.tile_first[d] + 1;
      f.cell_ext[d] = static_cast<uint64_t>(f.ext[d]);
    }
    if (f.cell_order == Layout::kColMajor) {
      for (size_t d = 0; d + 1 < dims; ++d) f.last_step *= f.cell_ext[d];
    }
    uint64_t tiles = 1;
    for (uint64_t t : f.tiles_per_dim) tiles *= t;
    if (tiles != frag.tile_num()) {
      return Error::Corrupt(fmt::format("{}: {} tiles cover the non-empty domain, metadata has {}",
                                        frag.dir(), tiles, frag.tile_num()));
    }
    loc.frags_.push_back(std::move(f));
  }
  return loc;
}

void DenseLocator::Coords(uint64_t i, I128* c) const {
  for (size_t d = 0; d < shape_.size(); ++d)
    c[d] = lo_[d] + static_cast<I128>((i / strides_[d]) % shape_[d]);
}

int DenseLocator::Winner(const I128* c) const {
  const size_t dims = shape_.size();
  // Newest fragment first: a cell belongs to the newest fragment that wrote it.
  for (size_t fi = frags_.size(); fi-- > 0;) {
    const Frag& f = frags_[fi];
    if (f.empty) continue;
    bool inside = true;
    for (size_t d = 0; d < dims && inside; ++d) inside = c[d] >= f.a[d] && c[d] <= f.b[d];
    if (inside) return static_cast<int>(fi);
  }
  return -1;
}

CellRef DenseLocator::RefIn(size_t fi, const I128* c) const {
  const size_t dims = shape_.size();
  const Frag& f = frags_[fi];
  // Tile index in tile order, position in cell order (row-major: last
  // dimension fastest; col-major: first fastest).
  uint64_t tile = 0, pos = 0;
  for (size_t k = 0; k < dims; ++k) {
    size_t dt = f.tile_order == Layout::kColMajor ? dims - 1 - k : k;
    size_t dc = f.cell_order == Layout::kColMajor ? dims - 1 - k : k;
    I128 rt = c[dt] - f.dom_lo[dt], rc = c[dc] - f.dom_lo[dc];
    tile = tile * f.tiles_per_dim[dt] + (static_cast<uint64_t>(rt / f.ext[dt]) - f.tile_first[dt]);
    pos = pos * f.cell_ext[dc] + static_cast<uint64_t>(rc % f.ext[dc]);
  }
  CellRef ref;
  ref.fragment = static_cast<uint32_t>(fi);
  ref.tile = tile;
  ref.pos = static_cast<uint32_t>(pos);
  return ref;
}

namespace {

// Coordinates of one cell on the stack (heap only for absurd dimension counts).
class CoordBuffer {
 public:
  explicit CoordBuffer(size_t dims) {
    if (dims > 16) big_.resize(dims);
  }
  I128* data() { return big_.empty() ? small_ : big_.data(); }

 private:
  I128 small_[16];
  std::vector<I128> big_;
};

}  // namespace

CellRef DenseLocator::Locate(uint64_t i) const {
  CoordBuffer buf(shape_.size());
  I128* c = buf.data();
  Coords(i, c);
  int w = Winner(c);
  return w < 0 ? CellRef{} : RefIn(static_cast<size_t>(w), c);
}

CellRun DenseLocator::LocateRun(uint64_t i, uint64_t max) const {
  const size_t dims = shape_.size();
  const size_t last = dims - 1;
  CoordBuffer buf(dims);
  I128* c = buf.data();
  Coords(i, c);
  int w = Winner(c);
  // Along the last dimension (the view's fastest), to the end of the row.
  I128 n = std::min<I128>(max, shape_[last] - i % shape_[last]);
  // A newer fragment (any fragment, for fill values) that starts further
  // along this row takes over there.
  for (size_t gi = w < 0 ? 0 : static_cast<size_t>(w) + 1; gi < frags_.size(); ++gi) {
    const Frag& g = frags_[gi];
    if (g.empty || g.a[last] <= c[last]) continue;
    bool inside = true;
    for (size_t d = 0; d < last && inside; ++d) inside = c[d] >= g.a[d] && c[d] <= g.b[d];
    if (inside) n = std::min(n, g.a[last] - c[last]);
  }
  CellRun run;
  if (w >= 0) {
    const Frag& f = frags_[static_cast<size_t>(w)];
    n = std::min(n, f.b[last] - c[last] + 1);
    n = std::min(n, f.ext[last] - (c[last] - f.dom_lo[last]) % f.ext[last]);
    run.ref = RefIn(static_cast<size_t>(w), c);
    run.step = f.last_step;
  }
  run.count = static_cast<uint64_t>(n);
  return run;
}

CellRun CellIndex::RunAt(uint64_t i, uint64_t max) const {
  if (dense) return dense->LocateRun(i, max);
  CellRun run;
  const uint64_t n = std::min<uint64_t>(max, cell_count - i);
  if (!runs.empty()) {
    const auto r = RunOf(i);
    const uint64_t end = r + 1 != runs.end() ? (r + 1)->first : cell_count;
    run.ref = RefOf(r->second + (i - r->first));
    run.count = std::min(n, end - i);
    return run;
  }
  uint64_t k = 1;
  uint64_t o;
  if (packing) {
    const uint64_t* p = packed.data() + i;
    o = packing->OrdinalOf(p[0]);
    while (k < n && packing->OrdinalOf(p[k]) == o + k) ++k;
  } else {
    const uint64_t* p = ordinals.data() + i;
    o = p[0];
    while (k < n && p[k] == o + k) ++k;
  }
  run.ref = RefOf(o);
  run.count = k;
  return run;
}

uint64_t CellIndex::footprint() const {
  uint64_t bytes = sizeof(*this) + sparse_tiles.size() * sizeof(SparseTile) +
                   (ordinals.size() + packed.size() + 2 * runs.size()) * 8;
  for (const Column& c : dims) bytes += c.data.size() + c.offsets.size() * 8 + c.validity.size();
  return bytes;
}

Result<CellIndex> BuildDenseIndex(const ViewInputs& in) {
  const ArraySchema& schema = *in.schema;
  const size_t dims = schema.dimensions.size();
  CellIndex index;
  // The bounding box of the non-empty domains.
  std::vector<I128> lo(dims), hi(dims);
  bool any = false;
  for (const auto& f : in.fragments) {
    const FragmentFooter& ft = f->footer();
    if (ft.null_non_empty_domain || ft.non_empty_domain.size() != dims) continue;
    for (size_t d = 0; d < dims; ++d) {
      I128 a = RangeLo(schema.dimensions[d], ft.non_empty_domain[d]);
      I128 b = RangeHi(schema.dimensions[d], ft.non_empty_domain[d]);
      if (!any || a < lo[d]) lo[d] = a;
      if (!any || b > hi[d]) hi[d] = b;
    }
    any = true;
  }
  if (!in.subarray.empty()) {
    // A slice: its own box, the bounding box's extent where a dimension is unnamed.
    bool named = true;
    for (size_t d = 0; d < dims && d < in.subarray.size(); ++d) {
      if (!in.subarray[d]) {
        named = false;
        continue;
      }
      lo[d] = RangeLo(schema.dimensions[d], *in.subarray[d]);
      hi[d] = RangeHi(schema.dimensions[d], *in.subarray[d]);
    }
    any = any || (named && in.subarray.size() == dims);
  }
  if (!any) return index;
  uint64_t n = 1;
  index.shape.resize(dims);
  index.box.resize(dims);
  for (size_t d = 0; d < dims; ++d) {
    if (hi[d] < lo[d]) return Error::Corrupt("dense non-empty domain with low above high");
    I128 extent = hi[d] - lo[d] + 1;
    if (extent > (I128(1) << 62)) return Error::OutOfMemory("dense view too large");
    index.shape[d] = static_cast<uint64_t>(extent);
    if (MulOverflow(n, index.shape[d], &n) || n > DefaultLimits().max_view_cells) {
      return Error::OutOfMemory(
          fmt::format("dense view of more than {} cells", DefaultLimits().max_view_cells));
    }
    const Dimension& dim = schema.dimensions[d];
    index.box[d].lo.resize(DatatypeSize(dim.type), 0);
    index.box[d].hi.resize(DatatypeSize(dim.type), 0);
    FromInt128(dim.type, lo[d], index.box[d].lo.data());
    FromInt128(dim.type, hi[d], index.box[d].hi.data());
  }
  index.cell_count = n;
  ASSIGN_OR_RETURN(DenseLocator loc, DenseLocator::Make(in, lo, index.shape));
  index.dense = std::move(loc);
  return index;
}

Column DenseDimensionColumn(const ArraySchema& schema, const CellIndex& index, size_t d,
                            uint64_t first, uint64_t count) {
  const Dimension& dim = schema.dimensions[d];
  Column c;
  c.name = dim.name;
  c.type = dim.type;
  c.cell_val_num = 1;
  c.cell_count = count;
  uint64_t size = DatatypeSize(dim.type);
  c.data.resize(count * size);
  if (count == 0) return c;
  I128 lo = ToInt128(dim.type, index.box[d].lo);
  uint64_t inner = 1;
  for (size_t k = d + 1; k < index.shape.size(); ++k) inner *= index.shape[k];
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t coord = ((first + i) / inner) % index.shape[d];
    FromInt128(dim.type, lo + coord, c.data.data() + i * size);
  }
  return c;
}

namespace {

struct SparseEntry {
  uint32_t fragment;
  uint32_t pos;
  uint64_t tile;
  uint64_t timestamp;
};

// Decoded coordinate tiles of every fragment: coords[f][tile][dim].
using CoordTiles = std::vector<std::vector<std::vector<DecodedTile>>>;

// Old sparse fragments keep every dimension's values in one zipped tile.
bool ZippedCoords(const FragmentMetadata& frag) {
  return !frag.dense() && frag.FieldIndex(FieldRef::Coords()) >= 0 &&
         frag.FieldIndex(FieldRef::Dimension(0)) < 0;
}

// The coordinate tiles of tile `t`, one per dimension (split from the
// zipped coordinates of old fragments).
Result<std::vector<DecodedTile>> ReadCoordTiles(const FragmentMetadata& frag, uint64_t t,
                                                size_t dims, bool encrypted) {
  if (ZippedCoords(frag)) return ReadZippedCoordsTile(frag, t, encrypted);
  std::vector<DecodedTile> out;
  for (size_t d = 0; d < dims; ++d) {
    ASSIGN_OR_RETURN(DecodedTile dt, ReadTile(frag, FieldRef::Dimension(d), t, encrypted));
    out.push_back(std::move(dt));
  }
  return out;
}

// ReadCoordTiles of many tiles, the small tile files of all of them read
// together (ReadTiles). Result i is ReadCoordTiles's for tiles[i].
std::vector<Result<std::vector<DecodedTile>>> ReadCoordTileBatch(
    const ViewInputs& in, std::span<const std::pair<uint32_t, uint64_t>> tiles, size_t dims) {
  std::vector<TileRequest> requests;
  std::vector<size_t> zipped;
  for (size_t i = 0; i < tiles.size(); ++i) {
    const FragmentMetadata& frag = *in.fragments[tiles[i].first];
    if (ZippedCoords(frag)) {
      zipped.push_back(i);
      continue;
    }
    for (size_t d = 0; d < dims; ++d) {
      requests.push_back({&frag, FieldRef::Dimension(static_cast<uint32_t>(d)), tiles[i].second});
    }
  }
  std::vector<Result<DecodedTile>> got = ReadTiles(requests, in.encrypted);
  std::vector<std::optional<Result<std::vector<DecodedTile>>>> out(tiles.size());
  ParallelFor(zipped.size(), [&](size_t k) {
    const auto& [fi, t] = tiles[zipped[k]];
    out[zipped[k]] = ReadCoordTiles(*in.fragments[fi], t, dims, in.encrypted);
  });
  size_t r = 0;
  for (size_t i = 0; i < tiles.size(); ++i) {
    if (out[i]) continue;
    std::vector<DecodedTile> per_dim;
    std::optional<Error> failed;
    for (size_t d = 0; d < dims; ++d, ++r) {
      if (failed) continue;
      if (!got[r].ok()) {
        failed = got[r].error();
      } else {
        per_dim.push_back(std::move(got[r]).value());
      }
    }
    if (failed) {
      out[i] = *failed;
    } else {
      out[i] = std::move(per_dim);
    }
  }
  std::vector<Result<std::vector<DecodedTile>>> results;
  results.reserve(tiles.size());
  for (auto& o : out) results.push_back(std::move(*o));
  return results;
}

// Tile `t`'s per-cell timestamps (into *stamps, when the fragment has them)
// and delete timestamps (into *deleted, when the view filters by time),
// each checked to hold `cell_num` values.
Status ReadTileStamps(const ViewInputs& in, const FragmentMetadata& frag, uint64_t t,
                      uint64_t cell_num, DecodedTile* stamps, DecodedTile* deleted) {
  const FragmentFooter& ft = frag.footer();
  if (ft.has_timestamps) {
    ASSIGN_OR_RETURN(*stamps, ReadTile(frag, FieldRef::Timestamps(), t, in.encrypted));
    if (stamps->fixed.size() != cell_num * 8) {
      return Error::Corrupt(fmt::format("{}: tile {} has {} timestamp bytes for {} cells",
                                        frag.dir(), t, stamps->fixed.size(), cell_num));
    }
  }
  if (ft.has_delete_meta && in.filter_timestamps) {
    ASSIGN_OR_RETURN(*deleted, ReadTile(frag, FieldRef::DeleteTimestamps(), t, in.encrypted));
    if (deleted->fixed.size() != cell_num * 8) {
      return Error::Corrupt(fmt::format("{}: tile {} has {} delete timestamp bytes for {} cells",
                                        frag.dir(), t, deleted->fixed.size(), cell_num));
    }
  }
  return Ok();
}

// Appends `base | p` for every cell p of a tile written by the view's
// instant (`stamps`, when filtering; null: every cell). Cells deleted by
// then stay: DropDeletedCells takes them out after the dedup.
void AppendVisibleCells(const ViewInputs& in, const DecodedTile* stamps, uint64_t base,
                        uint64_t cell_num, std::vector<uint64_t>& cells) {
  // Written through a pointer: a push_back per cell was a call per cell.
  const size_t from = cells.size();
  cells.resize(from + cell_num);
  uint64_t* out = cells.data() + from;
  if (stamps == nullptr) {
    for (uint64_t p = 0; p < cell_num; ++p) out[p] = base | p;
    return;
  }
  size_t n = 0;
  for (uint64_t p = 0; p < cell_num; ++p) {
    uint64_t stamp;
    std::memcpy(&stamp, stamps->fixed.data() + p * 8, 8);
    out[n] = base | p;
    n += stamp <= in.timestamp ? 1 : 0;
  }
  cells.resize(from + n);
}

// Where tile gt of the order (of a fragment with footer `ft`) keeps its
// delete timestamps: a slot of `deleted`, sized for every tile of the
// order at the first fragment that has them; null when the view does not
// read them (ReadTileStamps then leaves them).
DecodedTile* DeletedSlot(const ViewInputs& in, const FragmentFooter& ft,
                         std::vector<DecodedTile>& deleted, size_t gt, size_t tiles) {
  if (!ft.has_delete_meta || !in.filter_timestamps) return nullptr;
  if (deleted.empty()) deleted.resize(tiles);
  return &deleted[gt];
}

// Takes out of `cells` (sorted and deduplicated; the ordinal of each in
// `ordinal(cell)`) those that a fragment's delete timestamps (`deleted`,
// per tile of the order; empty for tiles without) say were deleted by the
// view's instant. After the dedup, as TileDB applies them: the newest
// version of a cell, deleted, still hides the older versions it replaced
// (which a delete condition matching only the newest leaves as they are).
template <typename Ordinal>
void DropDeletedCells(const ViewInputs& in, const std::vector<DecodedTile>& deleted, int pos_bits,
                      Ordinal ordinal, std::vector<uint64_t>& cells) {
  const uint64_t pos_mask = (uint64_t{1} << pos_bits) - 1;
  size_t w = 0;
  for (size_t r = 0; r < cells.size(); ++r) {
    const uint64_t ord = ordinal(cells[r]);
    const DecodedTile& del = deleted[ord >> pos_bits];
    if (!del.fixed.empty()) {
      uint64_t deleted_at;
      std::memcpy(&deleted_at, del.fixed.data() + (ord & pos_mask) * 8, 8);
      const bool shown =
          in.timestamp == UINT64_MAX ? deleted_at == UINT64_MAX : deleted_at > in.timestamp;
      if (!shown) continue;
    }
    cells[w++] = cells[r];
  }
  cells.resize(w);
}

class EntryCellValues : public CellValues {
 public:
  EntryCellValues(const ViewInputs& in, const CoordTiles& coords,
                  std::vector<std::map<std::pair<uint64_t, std::string>, DecodedTile>>& cache)
      : in_(in), coords_(coords), cache_(cache) {}
  void Set(const SparseEntry& e) { e_ = &e; }
  const ArraySchema& schema() const override { return in_.fragments[e_->fragment]->schema(); }

  Result<std::optional<Bytes>> Value(const std::string& field) const override {
    const FragmentMetadata& frag = *in_.fragments[e_->fragment];
    const ArraySchema& fs = frag.schema();
    int d = fs.DimensionIndex(field);
    if (d >= 0) return std::optional<Bytes>(coords_[e_->fragment][e_->tile][d].cell(e_->pos));
    int a = fs.AttributeIndex(field);
    if (a < 0) return std::optional<Bytes>();
    auto& cache = cache_[e_->fragment];
    auto key = std::make_pair(e_->tile, field);
    auto it = cache.find(key);
    if (it == cache.end()) {
      ASSIGN_OR_RETURN(DecodedTile t,
                       ReadTile(frag, FieldRef::Attribute(a), e_->tile, in_.encrypted));
      it = cache.emplace(key, std::move(t)).first;
    }
    if (!it->second.valid(e_->pos)) return std::optional<Bytes>();
    return std::optional<Bytes>(it->second.cell(e_->pos));
  }

 private:
  const ViewInputs& in_;
  const CoordTiles& coords_;
  std::vector<std::map<std::pair<uint64_t, std::string>, DecodedTile>>& cache_;
  const SparseEntry* e_ = nullptr;
};

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

// Any sparse view: every coordinate tile decoded and kept until the
// coordinate columns are built.
Result<CellIndex> BuildSparseIndexGeneric(const ViewInputs& in) {
  const ArraySchema& schema = *in.schema;
  const size_t dims = schema.dimensions.size();
  CoordTiles coords(in.fragments.size());
  std::vector<std::vector<DecodedTile>> stamps(in.fragments.size());
  OrderInput order;
  order.dedup = in.dedup && !schema.allows_dups;
  for (const Dimension& d : schema.dimensions) order.types.push_back(d.type);
  // Every tile's place in the ordinal space, and the widest tile.
  uint64_t max_cells = 0;
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    const FragmentMetadata& frag = *in.fragments[fi];
    if (frag.schema().dimensions.size() != dims) {
      return Error::Corrupt(fmt::format("{}: schema has {} dimensions, the array {}", frag.dir(),
                                        frag.schema().dimensions.size(), dims));
    }
    coords[fi].resize(frag.tile_num());
    if (frag.footer().has_timestamps) stamps[fi].resize(frag.tile_num());
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
  std::vector<uint64_t> cells;
  // Per tile of the order once a fragment has delete timestamps, else empty.
  std::vector<DecodedTile> deleted;
  std::vector<std::pair<uint32_t, uint64_t>> wanted;
  wanted.reserve(order.tiles.size());
  for (const OrderTile& ot : order.tiles) wanted.emplace_back(ot.fragment, ot.tile);
  std::vector<Result<std::vector<DecodedTile>>> read = ReadCoordTileBatch(in, wanted, dims);
  for (size_t gt = 0; gt < order.tiles.size(); ++gt) {
    OrderTile& ot = order.tiles[gt];
    const size_t fi = ot.fragment;
    const uint64_t t = ot.tile;
    const FragmentMetadata& frag = *in.fragments[fi];
    const FragmentFooter& ft = frag.footer();
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
    DecodedTile* tile_stamps = ft.has_timestamps ? &stamps[fi][t] : nullptr;
    TRY(ReadTileStamps(in, frag, t, cell_num, tile_stamps,
                       DeletedSlot(in, ft, deleted, gt, order.tiles.size())));
    ot.stamps = tile_stamps;
    const uint64_t base = uint64_t{gt} << order.pos_bits;
    const bool filter = in.filter_timestamps && ft.has_timestamps;
    const size_t from = cells.size();
    AppendVisibleCells(in, filter ? tile_stamps : nullptr, base, cell_num, cells);
    if (!in.subarray.empty()) DropCellsOutside(in, ot, from, order.pos_bits, cells);
  }
  SortSparseCells(order, cells);
  if (!deleted.empty()) {
    DropDeletedCells(
        in, deleted, order.pos_bits, [](uint64_t c) { return c; }, cells);
  }

  const uint64_t pos_mask = (uint64_t{1} << order.pos_bits) - 1;
  auto entry_of = [&](uint64_t ord) {
    const OrderTile& t = order.tiles[ord >> order.pos_bits];
    uint64_t pos = ord & pos_mask;
    uint64_t stamp = t.stamp;
    if (t.stamps != nullptr) std::memcpy(&stamp, t.stamps->fixed.data() + pos * 8, 8);
    return SparseEntry{t.fragment, static_cast<uint32_t>(pos), t.tile, stamp};
  };
  if (!in.deletes.empty()) {
    std::vector<std::map<std::pair<uint64_t, std::string>, DecodedTile>> cache(in.fragments.size());
    std::vector<const std::vector<std::string>*> processed(in.fragments.size(), nullptr);
    for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
      if (in.fragments[fi]->footer().has_delete_meta) {
        auto p = in.fragments[fi]->ProcessedConditions();
        if (p.ok()) processed[fi] = *p;
      }
    }
    EntryCellValues values(in, coords, cache);
    size_t w = 0;
    for (size_t r = 0; r < cells.size(); ++r) {
      const SparseEntry e = entry_of(cells[r]);
      const FragmentMetadata& frag = *in.fragments[e.fragment];
      bool deleted = false;
      for (const DeleteRule& rule : in.deletes) {
        if (rule.timestamp < frag.name().t1) continue;
        if (processed[e.fragment] != nullptr &&
            std::find(processed[e.fragment]->begin(), processed[e.fragment]->end(), rule.marker) !=
                processed[e.fragment]->end()) {
          continue;
        }
        if (frag.footer().has_timestamps && rule.timestamp <= frag.name().t2 &&
            e.timestamp > rule.timestamp) {
          continue;
        }
        values.Set(e);
        ASSIGN_OR_RETURN(bool m, rule.matches(values));
        if (m) {
          deleted = true;
          break;
        }
      }
      if (!deleted) cells[w++] = cells[r];
    }
    cells.resize(w);
  }

  CellIndex index;
  index.cell_count = cells.size();
  index.pos_bits = order.pos_bits;
  index.sparse_tiles.reserve(order.tiles.size());
  for (const OrderTile& t : order.tiles) index.sparse_tiles.push_back({t.fragment, t.tile});
  // The coordinate columns, run by run.
  index.dims.resize(dims);
  index.box.resize(dims);
  for (size_t d = 0; d < dims; ++d) {
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

// Views over integer coordinates whose bounds (the fragments' non-empty
// domains) pack with the ordinal into 64 bits: each coordinate tile is
// decoded, turned into keys and dropped, and the index keeps one uint64 per
// cell. nullopt when the view does not qualify (or a coordinate lies outside
// its fragment's non-empty domain): the caller takes the generic path.
}  // namespace

Result<std::optional<PackedPlan>> PlanPackedIndex(const ViewInputs& in) {
  const ArraySchema& schema = *in.schema;
  const size_t dims = schema.dimensions.size();
  if (!in.deletes.empty() || dims == 0 || !in.subarray.empty()) return std::optional<PackedPlan>();
  PackedPlan plan;
  OrderInput& order = plan.order;
  for (const Dimension& d : schema.dimensions) {
    if (d.var() || !Packable(d.type)) return std::optional<PackedPlan>();
    order.types.push_back(d.type);
  }
  order.dedup = in.dedup && !schema.allows_dups;
  std::vector<uint64_t> lo(dims, UINT64_MAX), hi(dims, 0);
  uint64_t max_cells = 0;
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    const FragmentMetadata& frag = *in.fragments[fi];
    if (frag.schema().dimensions.size() != dims) {
      return Error::Corrupt(fmt::format("{}: schema has {} dimensions, the array {}", frag.dir(),
                                        frag.schema().dimensions.size(), dims));
    }
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
    for (uint64_t t = 0; t < frag.tile_num(); ++t) {
      const uint64_t n = frag.TileCellNum(t);
      max_cells = std::max(max_cells, n);
      plan.total_cells += n;
      OrderTile ot;
      ot.fragment = static_cast<uint32_t>(fi);
      ot.tile = t;
      ot.stamp = frag.name().t1;
      order.tiles.push_back(std::move(ot));
    }
  }
  if (order.tiles.empty()) return std::optional<PackedPlan>(std::move(plan));
  order.pos_bits = BitsFor(max_cells);
  if (order.pos_bits > 32 || BitsFor(order.tiles.size()) + order.pos_bits > 63) {
    return std::optional<PackedPlan>();
  }
  const int ord_bits = BitsFor(((order.tiles.size() - 1) << order.pos_bits) | max_cells);
  std::optional<KeyPacking> packing = KeyPacking::Plan(lo, hi, ord_bits);
  if (!packing) return std::optional<PackedPlan>();
  plan.packing = std::move(*packing);
  if (plan.total_cells > DefaultLimits().max_view_cells) {
    return Error::OutOfMemory(
        fmt::format("sparse view of more than {} cells", DefaultLimits().max_view_cells));
  }
  return std::optional<PackedPlan>(std::move(plan));
}

Result<std::optional<std::vector<uint64_t>>> BuildPackedCells(
    const ViewInputs& in, const PackedPlan& plan, std::span<const PackedTile> tiles, uint64_t lo,
    uint64_t hi, CoordCarry* carry, std::vector<uint64_t> reuse) {
  using Cells = std::optional<std::vector<uint64_t>>;
  const KeyPacking& k = plan.packing;
  const size_t dims = plan.order.types.size();
  const std::vector<Datatype>& types = plan.order.types;
  OrderInput order = plan.order;  // its tiles get this build's stamps
  std::vector<uint64_t> cells = std::move(reuse);
  cells.clear();
  // Room for the cells expected in [lo, hi]: each tile's spread evenly
  // over its rows (exact for a build of every row), and a little more.
  double expected = 0;
  uint64_t most = 0;
  for (const PackedTile& pt : tiles) {
    if (pt.tile >= order.tiles.size()) {
      return Error::InvalidArgument(
          fmt::format("packed tile {} of {}", pt.tile, order.tiles.size()));
    }
    const OrderTile& ot = order.tiles[pt.tile];
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
      const OrderTile& ot = order.tiles[gt];
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
  const int at0 = k.ord_bits + k.shift[0];
  for (size_t i = 0; i < tiles.size(); ++i) {
    const PackedTile& pt = tiles[i];
    const size_t gt = pt.tile;
    OrderTile& ot = order.tiles[gt];
    const FragmentMetadata& frag = *in.fragments[ot.fragment];
    const FragmentFooter& ft = frag.footer();
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
      if (!dt.offsets.empty() || dt.cell_size != DatatypeSize(types[d])) return Cells();
    }
    DecodedTile* tile_stamps = ft.has_timestamps ? &stamps[i] : nullptr;
    TRY(ReadTileStamps(in, frag, t, cell_num, tile_stamps,
                       DeletedSlot(in, ft, deleted, gt, order.tiles.size())));
    ot.stamps = tile_stamps;
    const uint64_t base = uint64_t{gt} << order.pos_bits;
    const bool filter = in.filter_timestamps && ft.has_timestamps;
    const size_t first = cells.size();
    AppendVisibleCells(in, filter ? tile_stamps : nullptr, base, cell_num, cells);
    // Dimension d's value of each cell from `first` on, less its bound, to
    // each(c, v): int64-like values inline (the common case), the rest
    // through OrderedLoadFor.
    const uint64_t pos_mask = (uint64_t{1} << order.pos_bits) - 1;
    auto for_each_value = [&](size_t d, auto each) {
      const uint8_t* values = coords[d].fixed.data();
      const uint64_t dlo = k.lo[d];
      const size_t end = cells.size();
      if (DatatypeSize(types[d]) == 8 && types[d] != Datatype::kUInt64) {
        for (size_t c = first; c < end; ++c) {
          uint64_t raw;
          std::memcpy(&raw, values + (cells[c] & pos_mask) * 8, 8);
          each(c, (raw ^ (uint64_t{1} << 63)) - dlo);
        }
        return;
      }
      const OrderedLoad load = OrderedLoadFor(types[d]);
      const uint64_t size = DatatypeSize(types[d]);
      for (size_t c = first; c < end; ++c)
        each(c, load(values + (cells[c] & pos_mask) * size) - dlo);
    };
    // Keys, dimension by dimension; a coordinate outside the bounds means
    // the non-empty domain lied: take the generic path. A build of some
    // rows only (or of a tile whose rectangle is narrower than the bounds)
    // takes the first dimension first: each cell must lie in its tile's
    // rectangle [pt.lo, pt.hi] (or a build of another range would have
    // missed it), and only the cells whose first coordinate lies in
    // [lo, hi] stay, so that the other dimensions are packed into those
    // alone.
    uint64_t bad = 0, outside = 0;
    size_t packed_dims = 0;
    if (at0 < 64 && (lo > k.lo[0] || hi < k.hi[0] || pt.lo > k.lo[0] || pt.hi < k.hi[0])) {
      const uint64_t range = k.hi[0] - k.lo[0];
      const uint64_t rlo = std::max(lo, k.lo[0]) - k.lo[0];
      const uint64_t rhi = std::min(hi, k.hi[0]) - k.lo[0];
      const uint64_t tlo = std::max(pt.lo, k.lo[0]) - k.lo[0];
      const uint64_t thi = std::min(pt.hi, k.hi[0]) - k.lo[0];
      size_t w = first;
      for_each_value(0, [&](size_t c, uint64_t v) {
        bad |= static_cast<uint64_t>(v > range);
        outside |= static_cast<uint64_t>(v < tlo) | static_cast<uint64_t>(v > thi);
        cells[w] = cells[c] | (v << at0);
        w += v >= rlo && v <= rhi ? 1 : 0;
      });
      cells.resize(w);
      packed_dims = 1;
    }
    for (size_t d = packed_dims; d < dims; ++d) {
      const uint64_t range = k.hi[d] - k.lo[d];
      const int at = k.ord_bits + k.shift[d];
      // A dimension with one value may sit at bit 64: no key bits.
      const int sh = at < 64 ? at : 0;
      const uint64_t keep = at < 64 ? ~uint64_t{0} : 0;
      for_each_value(d, [&](size_t c, uint64_t v) {
        bad |= static_cast<uint64_t>(v > range);
        cells[c] |= (v << sh) & keep;
      });
    }
    if (bad) return Cells();
    if (outside) {
      return Error::Corrupt(
          fmt::format("{}: tile {} holds a cell outside its bounding rectangle (dimension {})",
                      frag.dir(), t, in.schema->dimensions[0].name));
    }
    if (carry != nullptr && pt.hi > hi) kept.emplace(gt, std::move(coords));
  }
  if (carry != nullptr) *carry = std::move(kept);
  SortPackedCells(order, k, cells);
  if (!deleted.empty()) {
    DropDeletedCells(
        in, deleted, order.pos_bits, [&k](uint64_t c) { return k.OrdinalOf(c); }, cells);
  }
  // Cells dropped, or a range that kept only part of its tiles' cells:
  // give back the rest. A range keeps up to half as much again (what it
  // reserved, or a reused buffer's room), for the next build to reuse.
  if (cells.capacity() - cells.size() > cells.size() / (whole ? 8 : 2)) cells.shrink_to_fit();
  return Cells(std::move(cells));
}

CellIndex MakePackedIndex(const PackedPlan& plan, std::vector<uint64_t> cells) {
  const KeyPacking& k = plan.packing;
  const std::vector<Datatype>& types = plan.order.types;
  const size_t dims = types.size();
  CellIndex index;
  index.box.resize(dims);
  index.cell_count = cells.size();
  index.pos_bits = plan.order.pos_bits;
  index.sparse_tiles.reserve(plan.order.tiles.size());
  for (const OrderTile& t : plan.order.tiles) index.sparse_tiles.push_back({t.fragment, t.tile});
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
  index.packing = plan.packing;
  return index;
}

namespace {

Result<std::optional<CellIndex>> BuildSparseIndexPacked(const ViewInputs& in) {
  ASSIGN_OR_RETURN(std::optional<PackedPlan> plan, PlanPackedIndex(in));
  if (!plan) return std::optional<CellIndex>();
  if (plan->order.tiles.empty()) {
    CellIndex index;
    index.box.resize(in.schema->dimensions.size());
    return std::optional<CellIndex>(std::move(index));
  }
  std::vector<PackedTile> tiles(plan->order.tiles.size());
  for (size_t t = 0; t < tiles.size(); ++t) tiles[t].tile = t;
  ASSIGN_OR_RETURN(std::optional<std::vector<uint64_t>> cells,
                   BuildPackedCells(in, *plan, tiles, 0, UINT64_MAX, nullptr));
  if (!cells) return std::optional<CellIndex>();
  return std::optional<CellIndex>(MakePackedIndex(*plan, std::move(*cells)));
}

}  // namespace

Result<StoredOrder> StoredOrder::Make(const CellIndex& index,
                                      const std::vector<uint64_t>& tile_cells,
                                      uint64_t chunk_cells) {
  return Make(
      index, index.cell_count, tile_cells, chunk_cells,
      [&index](const std::function<Status(const CellIndex&)>& each) { return each(index); });
}

Result<StoredOrder> StoredOrder::Make(const CellIndex& index, uint64_t cell_count,
                                      const std::vector<uint64_t>& tile_cells, uint64_t chunk_cells,
                                      const PartVisitor& visit) {
  if (index.dense) return Error::InvalidArgument("stored order of a dense view");
  const size_t tiles = index.sparse_tiles.size();
  if (tile_cells.size() != tiles) {
    return Error::InvalidArgument(
        fmt::format("stored order: {} tile sizes for {} tiles", tile_cells.size(), tiles));
  }
  chunk_cells = std::max<uint64_t>(chunk_cells, 1);
  StoredOrder o;
  o.index_ = &index;
  o.tile_base_.assign(tiles + 1, 0);
  for (size_t t = 0; t < tiles; ++t) {
    if (AddOverflow(o.tile_base_[t], tile_cells[t], &o.tile_base_[t + 1])) {
      return Error::Corrupt("stored order: the tiles hold more than 2^64 cells");
    }
  }
  const uint64_t total = o.tile_base_[tiles];
  // The index names distinct stored cells: as many as there are means all.
  o.all_ = cell_count == total;
  o.chunk_bit_.push_back(0);
  if (o.all_) {
    for (uint64_t at = 0; at < total; at += chunk_cells) {
      o.chunk_bit_.push_back(std::min(total, at + chunk_cells));
      o.chunk_cells_.push_back(o.chunk_bit_.back() - at);
    }
    o.CountChunks();
    return o;
  }
  const uint64_t mask = (uint64_t{1} << index.pos_bits) - 1;
  o.bits_.assign((total + 63) / 64, 0);
  uint64_t seen = 0;
  TRY(visit([&](const CellIndex& part) -> Status {
    if (part.pos_bits != index.pos_bits || part.sparse_tiles.size() != tiles) {
      return Error::InvalidArgument("stored order: a part on other tiles");
    }
    for (uint64_t i = 0; i < part.cell_count; ++i, ++seen) {
      const uint64_t ord = part.OrdinalAt(i), t = ord >> index.pos_bits;
      if (t >= tiles || (ord & mask) >= tile_cells[t]) {
        return Error::Corrupt(
            fmt::format("view cell {}: cell {} of tile {} of {}", seen, ord & mask, t, tiles));
      }
      const uint64_t b = o.tile_base_[t] + (ord & mask);
      o.bits_[b / 64] |= uint64_t{1} << (b % 64);
    }
    return Ok();
  }));
  // Chunk boundaries: after every chunk_cells kept cells.
  uint64_t in_chunk = 0, kept = 0;
  for (size_t w = 0; w < o.bits_.size(); ++w) {
    uint64_t word = o.bits_[w];
    const uint64_t n = static_cast<uint64_t>(std::popcount(word));
    kept += n;
    if (in_chunk + n < chunk_cells) {
      in_chunk += n;
      continue;
    }
    // The chunk ends in this word (perhaps more than one does).
    for (; word != 0; word &= word - 1) {
      if (++in_chunk < chunk_cells) continue;
      o.chunk_bit_.push_back(w * 64 + static_cast<uint64_t>(std::countr_zero(word)) + 1);
      o.chunk_cells_.push_back(in_chunk);
      in_chunk = 0;
    }
  }
  if (kept != cell_count || seen != cell_count) {
    return Error::Corrupt(
        fmt::format("view of {} cells names {} distinct stored cells", cell_count, kept));
  }
  if (in_chunk > 0) {
    o.chunk_bit_.push_back(total);
    o.chunk_cells_.push_back(in_chunk);
  }
  o.CountChunks();
  return o;
}

std::pair<size_t, size_t> StoredOrder::ChunkTiles(size_t k) const {
  const size_t tiles = tile_base_.size() - 1;
  const uint64_t from = chunk_bit_[k], to = chunk_bit_[k + 1];
  // The last tile starting at or before `from` (a tile of no cells there
  // ends at `from`: not crossed), to the first starting at or after `to`.
  const size_t a = static_cast<size_t>(
      std::upper_bound(tile_base_.begin(), tile_base_.end(), from) - tile_base_.begin());
  const size_t b = static_cast<size_t>(std::lower_bound(tile_base_.begin(), tile_base_.end(), to) -
                                       tile_base_.begin());
  return {std::min(a == 0 ? 0 : a - 1, tiles), std::min(b, tiles)};
}

void StoredOrder::CountChunks() {
  const size_t tiles = tile_base_.size() - 1;
  unfinished_ = std::make_unique<std::atomic<uint32_t>[]>(tiles);
  finished_ = std::make_unique<std::atomic<bool>[]>(chunks());
  for (size_t k = 0; k < chunks(); ++k) {
    const auto [a, b] = ChunkTiles(k);
    for (size_t t = a; t < b; ++t) unfinished_[t].fetch_add(1, std::memory_order_relaxed);
  }
}

std::vector<size_t> StoredOrder::Finish(size_t k) const {
  std::vector<size_t> done;
  if (k >= chunks() || finished_[k].exchange(true)) return done;
  const auto [a, b] = ChunkTiles(k);
  for (size_t t = a; t < b; ++t) {
    if (unfinished_[t].fetch_sub(1) == 1) done.push_back(t);
  }
  return done;
}

CellIndex StoredOrder::Chunk(size_t k) const {
  CellIndex c;
  c.cell_count = chunk_cells_[k];
  c.sparse_tiles = index_->sparse_tiles;
  c.pos_bits = index_->pos_bits;
  const uint64_t from = chunk_bit_[k], to = chunk_bit_[k + 1];
  size_t t = static_cast<size_t>(std::upper_bound(tile_base_.begin(), tile_base_.end(), from) -
                                 tile_base_.begin()) -
             1;
  if (all_) {
    // Every cell of the tiles from `from` to `to`: a run per tile.
    for (uint64_t b = from; b < to; ++t) {
      const uint64_t end = std::min(to, tile_base_[t + 1]);
      if (end > b) c.runs.emplace_back(b - from, (uint64_t{t} << c.pos_bits) | (b - tile_base_[t]));
      b = end;
    }
    return c;
  }
  c.ordinals.resize(c.cell_count);
  uint64_t* out = c.ordinals.data();
  for (uint64_t w = from / 64; w * 64 < to; ++w) {
    uint64_t word = bits_[w];
    if (w == from / 64) word &= ~uint64_t{0} << (from % 64);
    if ((w + 1) * 64 > to) word &= ~uint64_t{0} >> (64 - to % 64);
    for (; word != 0; word &= word - 1) {
      const uint64_t b = w * 64 + static_cast<uint64_t>(std::countr_zero(word));
      while (tile_base_[t + 1] <= b) ++t;
      *out++ = (uint64_t{t} << c.pos_bits) | (b - tile_base_[t]);
    }
  }
  return c;
}

Result<CellIndex> BuildSparseIndex(const ViewInputs& in) {
  ASSIGN_OR_RETURN(std::optional<CellIndex> packed, BuildSparseIndexPacked(in));
  if (packed) return std::move(*packed);
  return BuildSparseIndexGeneric(in);
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

bool KeepsEveryStoredCell(const ViewInputs& in) {
  const ArraySchema& schema = *in.schema;
  if (schema.dense() || !in.deletes.empty() || !in.subarray.empty()) return false;
  const bool dedup = in.dedup && !schema.allows_dups;
  const size_t dims = schema.dimensions.size();
  // With dedup: each fragment's non-empty domain as OrderedValue bounds,
  // lo then hi per dimension.
  std::vector<std::vector<uint64_t>> boxes;
  for (const auto& f : in.fragments) {
    if (f->tile_num() == 0) continue;
    const FragmentFooter& ft = f->footer();
    if (ft.has_delete_meta) return false;
    if (ft.has_timestamps && (dedup || (in.filter_timestamps && f->name().t2 > in.timestamp))) {
      return false;
    }
    if (!dedup) continue;
    if (ft.null_non_empty_domain || ft.non_empty_domain.size() != dims) return false;
    std::vector<uint64_t> box(2 * dims);
    for (size_t d = 0; d < dims; ++d) {
      const Dimension& dim = schema.dimensions[d];
      const Range& r = ft.non_empty_domain[d];
      if (dim.var() || !Packable(dim.type) || r.lo.size() != DatatypeSize(dim.type) ||
          r.hi.size() != r.lo.size()) {
        return false;
      }
      box[2 * d] = OrderedValue(dim.type, r.lo.data());
      box[2 * d + 1] = OrderedValue(dim.type, r.hi.data());
    }
    boxes.push_back(std::move(box));
  }
  if (boxes.size() < 2) return true;
  // Pairwise disjoint: by the first dimension's low end, each box against
  // those starting within it along that dimension.
  std::sort(boxes.begin(), boxes.end());
  uint64_t budget = 64 * uint64_t{boxes.size()};
  for (size_t i = 0; i < boxes.size(); ++i) {
    for (size_t j = i + 1; j < boxes.size() && boxes[j][0] <= boxes[i][1]; ++j) {
      if (budget-- == 0) return false;
      bool overlap = true;
      for (size_t d = 1; d < dims && overlap; ++d) {
        overlap = boxes[j][2 * d] <= boxes[i][2 * d + 1] && boxes[i][2 * d] <= boxes[j][2 * d + 1];
      }
      if (overlap) return false;
    }
  }
  return true;
}

Result<CellIndex> BuildStoredIndex(const ViewInputs& in) {
  CellIndex index;
  uint64_t max_cells = 0;
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    const FragmentMetadata& frag = *in.fragments[fi];
    if (frag.tile_num() > 0 && frag.schema().dimensions.size() != in.schema->dimensions.size()) {
      return Error::Corrupt(fmt::format("{}: schema has {} dimensions, the array {}", frag.dir(),
                                        frag.schema().dimensions.size(),
                                        in.schema->dimensions.size()));
    }
    for (uint64_t t = 0; t < frag.tile_num(); ++t) {
      const uint64_t n = frag.TileCellNum(t);
      max_cells = std::max(max_cells, n);
      if (AddOverflow(index.cell_count, n, &index.cell_count)) {
        return Error::Corrupt("the fragments hold more than 2^64 cells");
      }
      index.sparse_tiles.push_back({static_cast<uint32_t>(fi), t});
    }
  }
  index.pos_bits = BitsFor(max_cells);
  if (index.pos_bits > 32 || BitsFor(index.sparse_tiles.size()) + index.pos_bits > 63) {
    return Error::Unsupported(fmt::format("sparse view of {} tiles of up to {} cells",
                                          index.sparse_tiles.size(), max_cells));
  }
  return index;
}

const Range* TileMbr(const FragmentMetadata& frag, uint64_t t, size_t d, size_t dims) {
  const FragmentFooter& ft = frag.footer();
  if (frag.tile_num() == 1 && !ft.null_non_empty_domain && ft.non_empty_domain.size() == dims) {
    return &ft.non_empty_domain[d];
  }
  auto mbrs = frag.Mbrs();
  if (!mbrs.ok() || t >= (*mbrs)->size() || (**mbrs)[t].size() != dims) return nullptr;
  return &(**mbrs)[t][d];
}

Result<std::optional<std::vector<uint64_t>>> CountStoredDimensionValues(
    const ViewInputs& in, size_t d, std::span<const uint64_t> bounds) {
  const ArraySchema& schema = *in.schema;
  const size_t dims = schema.dimensions.size();
  if (d >= dims) return Error::InvalidArgument(fmt::format("dimension {} of {}", d, dims));
  const Dimension& dim = schema.dimensions[d];
  if (dim.var() || !Packable(dim.type)) return std::optional<std::vector<uint64_t>>();
  const uint64_t size = DatatypeSize(dim.type);
  const OrderedLoad load = OrderedLoadFor(dim.type);
  auto interval = [&](uint64_t v) {
    return static_cast<size_t>(std::upper_bound(bounds.begin(), bounds.end(), v) - bounds.begin());
  };
  std::vector<uint64_t> counts(bounds.size() + 1, 0);
  // The tiles whose MBR does not settle it: their values are read.
  std::vector<std::pair<uint32_t, uint64_t>> unsettled;
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    const FragmentMetadata& frag = *in.fragments[fi];
    if (frag.tile_num() > 0 && frag.schema().dimensions.size() != dims) {
      return Error::Corrupt(fmt::format("{}: schema has {} dimensions, the array {}", frag.dir(),
                                        frag.schema().dimensions.size(), dims));
    }
    for (uint64_t t = 0; t < frag.tile_num(); ++t) {
      const Range* r = TileMbr(frag, t, d, dims);
      if (r != nullptr && r->lo.size() == size && r->hi.size() == size) {
        const size_t k = interval(OrderedValue(dim.type, r->lo.data()));
        if (k == interval(OrderedValue(dim.type, r->hi.data()))) {
          counts[k] += frag.TileCellNum(t);
          continue;
        }
      }
      unsettled.emplace_back(static_cast<uint32_t>(fi), t);
    }
  }
  // A window of at most 256 tiles at a time, their files read together.
  constexpr size_t kWindow = 256;
  for (size_t from = 0; from < unsettled.size(); from += kWindow) {
    const auto window =
        std::span(unsettled).subspan(from, std::min(kWindow, unsettled.size() - from));
    std::vector<TileRequest> requests;
    for (const auto& [fi, t] : window) {
      if (!ZippedCoords(*in.fragments[fi])) {
        requests.push_back(
            {in.fragments[fi].get(), FieldRef::Dimension(static_cast<uint32_t>(d)), t});
      }
    }
    std::vector<Result<DecodedTile>> got = ReadTiles(requests, in.encrypted);
    size_t r = 0;
    for (const auto& [fi, t] : window) {
      const FragmentMetadata& frag = *in.fragments[fi];
      DecodedTile tile;
      if (ZippedCoords(frag)) {
        ASSIGN_OR_RETURN(std::vector<DecodedTile> all, ReadZippedCoordsTile(frag, t, in.encrypted));
        if (all.size() != dims) {
          return Error::Corrupt(fmt::format("{}: tile {} has coordinates of {} dimensions",
                                            frag.dir(), t, all.size()));
        }
        tile = std::move(all[d]);
      } else {
        ASSIGN_OR_RETURN(tile, std::move(got[r++]));
      }
      const uint64_t cell_num = frag.TileCellNum(t);
      if (tile.cell_num != cell_num || !tile.offsets.empty() || tile.cell_size != size ||
          tile.fixed.size() != cell_num * size) {
        return Error::Corrupt(
            fmt::format("{}: tile {} of dimension '{}' has {} coordinates of {} "
                        "bytes, expected {} of {}",
                        frag.dir(), t, dim.name, tile.cell_num, tile.cell_size, cell_num, size));
      }
      for (uint64_t p = 0; p < cell_num; ++p)
        ++counts[interval(load(tile.fixed.data() + p * size))];
    }
  }
  return std::optional<std::vector<uint64_t>>(std::move(counts));
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

namespace {

// The most bytes a read may take for its tiles to be decoded in part
// (ReadState::parts): FUSE's largest read.
constexpr uint64_t kPartReadBytes = uint64_t{1} << 20;

// The most tiles one read decodes together before its gather: a piece of a
// view over 10,000 small fragments crosses thousands (each its own files).
constexpr size_t kMaxMissingTiles = 4096;

// The tile of `key` in `tiles`, or null, looking from `*from` on and
// wrapping around, and leaving `*from` just past the tile found. A gather
// takes its tiles about in the order DecodeMissingTiles listed them: the
// next one is most often the first looked at. (A scan from the start each
// time made a read crossing the 10,000 one-tile fragments of issue 5's
// array (c) quadratic.)
std::shared_ptr<const DecodedTile> FindFrom(const HeldTiles& tiles, const TileKey& key,
                                            size_t* from) {
  const size_t n = tiles.size();
  for (size_t k = 0; k < n; ++k) {
    const size_t i = (*from + k) % n;
    if (tiles[i].second && tiles[i].first == key) {
      *from = i + 1;
      return tiles[i].second;
    }
  }
  return nullptr;
}

// The same from the first tile.
std::shared_ptr<const DecodedTile> Find(const HeldTiles& tiles, const TileKey& key) {
  size_t from = 0;
  return FindFrom(tiles, key, &from);
}

// About the bytes tile `tile` of attribute `f` takes decoded: its cells'
// fixed bytes (offsets, validity) plus, for var fields, the values' size as
// stored when the fragment says it (else as much again). nullopt on overflow.
std::optional<uint64_t> DecodedTileBytes(const FragmentMetadata& frag, FieldRef f, uint64_t tile) {
  const FieldShape shape = ShapeOf(frag, f);
  uint64_t bytes = 0;
  if (MulOverflow(frag.TileCellNum(tile), shape.cell_size() + (shape.nullable ? 1 : 0), &bytes)) {
    return std::nullopt;
  }
  if (shape.var()) {
    auto sizes = frag.TileVarSizes(f);
    const uint64_t values = sizes.ok() && tile < (*sizes)->size() ? (**sizes)[tile] : bytes;
    if (AddOverflow(bytes, values, &bytes)) return std::nullopt;
  }
  return bytes;
}

// A tile that a read's cells come from.
struct Crossed {
  TileKey key;
  uint32_t fragment;
};

// The distinct tiles that cells [first, end) come from, in the order the
// cells need them, up to kMaxCrossedTiles.
constexpr size_t kMaxCrossedTiles = 4 * kMaxMissingTiles;
std::vector<Crossed> CrossedTiles(const ViewInputs& in, const CellIndex& index,
                                  const std::vector<int>& field,
                                  const std::vector<int>& footer_index, uint64_t first,
                                  uint64_t end) {
  std::vector<Crossed> crossed;
  std::unordered_set<TileKey, TileKeyHash> seen;
  // The keys met last, by slot: the tiles of a row, crossed again and
  // again, are found here without hashing.
  std::array<TileKey, 64> recent{};
  for (uint64_t i = first; i < end && crossed.size() < kMaxCrossedTiles;) {
    CellRun run = index.RunAt(i, end - i);
    i += run.count;
    const CellRef& r = run.ref;
    if (r.fragment == CellRef::kFill || field[r.fragment] < 0) continue;
    TileKey key{in.fragments[r.fragment].get(), footer_index[r.fragment], r.tile};
    TileKey& last = recent[(r.tile * 7 + r.fragment) % recent.size()];
    if (key == last) continue;
    last = key;
    if (seen.insert(key).second) crossed.push_back({key, r.fragment});
  }
  return crossed;
}

// The bytes the tiles `crossed` take decoded, as far as `limit` (past it,
// limit + 1): what a read takes in whole tiles.
uint64_t CrossedTileBytes(const ViewInputs& in, const std::vector<int>& field,
                          const std::vector<Crossed>& crossed, uint64_t limit) {
  uint64_t bytes = 0;
  for (const Crossed& c : crossed) {
    if (bytes > limit) break;
    const FieldRef f = FieldRef::Attribute(field[c.fragment]);
    bytes += DecodedTileBytes(*in.fragments[c.fragment], f, c.key.tile).value_or(limit + 1);
  }
  return std::min(bytes, limit + 1);
}

// Decodes, several at once, the tiles `crossed` (of a read's cells) that
// neither the cache nor the reader's `held` tiles have (up to a quarter of
// the cache's budget), so that a read needing a new row of tiles uses every
// core. Returns them by key: the gather takes them from there, so a cache
// too small to keep them does not make it decode them again. Errors are
// left for the gather, which decodes the tile again and reports them.
HeldTiles DecodeMissingTiles(const ViewInputs& in, const std::vector<int>& field,
                             const std::vector<Crossed>& crossed, TileCache& cache,
                             const HeldTiles* held) {
  std::vector<Crossed> missing;
  for (const Crossed& c : crossed) {
    if (cache.Contains(c.key) || (held != nullptr && Find(*held, c.key))) continue;
    missing.push_back(c);
    if (missing.size() >= kMaxMissingTiles) break;
  }
  if (missing.size() < 2) return {};
  // Tiles of a field have about the same size: stop at the limit (the
  // gather holds them until it ends; the rest it decodes one at a time).
  // A quarter of the budget covers a row of tiles that a piece of a
  // row-major file crosses (32 tiles of 1 MiB in the benchmark's dense1,
  // with the default 128 MiB of tiles).
  const uint64_t limit = cache.budget_bytes() / 4;
  uint64_t bytes = 0;
  std::vector<TileKey> keys;
  std::vector<std::shared_ptr<FragmentMetadata>> frags;
  std::vector<TileRequest> requests;
  for (const Crossed& m : missing) {
    if (bytes >= limit) break;
    // Being decoded ahead (or by another reader): the gather waits for it.
    if (!cache.BeginDecode(m.key)) continue;
    const FragmentMetadata& frag = *in.fragments[m.fragment];
    const FieldRef f = FieldRef::Attribute(field[m.fragment]);
    bytes += DecodedTileBytes(frag, f, m.key.tile).value_or(limit);
    keys.push_back(m.key);
    frags.push_back(in.fragments[m.fragment]);
    requests.push_back({&frag, f, m.key.tile});
  }
  // The small tile files of a group of them read together, then decoded on
  // every core (ReadTiles); groups of kTilesPerGroup bound the stored bytes
  // held at once. Errors are left for the gather.
  constexpr size_t kTilesPerGroup = 256;
  HeldTiles ahead(keys.size());
  for (size_t g = 0; g < keys.size(); g += kTilesPerGroup) {
    const size_t n = std::min(kTilesPerGroup, keys.size() - g);
    std::vector<Result<DecodedTile>> got;
    try {
      got = ReadTiles(std::span(requests).subspan(g, n), in.encrypted);
    } catch (...) {
      // Out of memory: left for the gather, which reports it.
    }
    for (size_t k = 0; k < n; ++k) {
      std::shared_ptr<const DecodedTile> tile;
      if (k < got.size() && got[k].ok()) {
        try {
          tile = std::make_shared<const DecodedTile>(std::move(got[k]).value());
        } catch (...) {
        }
      }
      tile = cache.EndDecode(keys[g + k], std::move(tile), frags[g + k]);
      if (tile) ahead[g + k] = {keys[g + k], std::move(tile)};
    }
  }
  return ahead;
}

// A sequential reader's next cells [end, ...): sends the tiles they need to
// be decoded in the background (TileCache::DecodeAhead), as far as a
// quarter of the cache's budget of cell values from `end` or until the
// cache takes no more. Each reader walks each cell once (`ahead.to`).
// `cell_bytes`: a cell's fixed bytes (offset, validity), for the window.
void DecodeAhead(const ViewInputs& in, const CellIndex& index, const std::vector<int>& field,
                 const std::vector<int>& footer_index, uint64_t end, uint64_t cell_bytes,
                 TileCache& cache, ReadState::Ahead& ahead) {
  const uint64_t window = cache.ahead_budget() / std::max<uint64_t>(cell_bytes, 1);
  const uint64_t to = end + std::min(window, index.cell_count - end);
  uint64_t i = std::max(ahead.to, end);
  if (ahead.sent.size() > 4096) {
    ahead.sent.clear();
    ahead.recent.fill(TileKey{});
  }
  while (i < to) {
    CellRun run = index.RunAt(i, to - i);
    const CellRef& r = run.ref;
    if (r.fragment != CellRef::kFill && field[r.fragment] >= 0) {
      TileKey key{in.fragments[r.fragment].get(), footer_index[r.fragment], r.tile};
      TileKey& recent = ahead.recent[(r.tile * 7 + r.fragment) % ahead.recent.size()];
      if (!(recent == key)) {  // else sent already
        if (!ahead.sent.count(key) && !cache.Contains(key)) {
          const FragmentMetadata& frag = *in.fragments[r.fragment];
          const FieldRef f = FieldRef::Attribute(field[r.fragment]);
          const std::optional<uint64_t> bytes = DecodedTileBytes(frag, f, r.tile);
          if (!bytes) break;
          AheadTile t{key, in.fragments[r.fragment], f, in.encrypted, *bytes};
          if (!cache.DecodeAhead(std::move(t))) break;  // the cache is full ahead: later
        }
        ahead.sent.insert(key);
        recent = key;
      }
    }
    i += run.count;
  }
  ahead.to = i;
}

// The part in `parts` of tile `key` that holds cells [from, to], or null.
const HeldPart* FindPart(const std::vector<HeldPart>& parts, const TileKey& key, uint64_t from,
                         uint64_t to) {
  for (const HeldPart& p : parts) {
    if (p.key == key && p.first <= from && to - p.first < p.tile->cell_num) return &p;
  }
  return nullptr;
}

// The key of the one chunk of tile `key` (its chunks' places: `map`) that
// holds bytes [lo, hi) in whole cells of `cs` bytes; chunk 0 (none) when
// the bytes span several chunks.
TileKey ChunkKey(TileKey key, const ChunkMap& map, uint64_t lo, uint64_t hi, uint64_t cs) {
  const auto [a, b] = ChunksHolding(map, lo, hi);
  key.chunk = 0;
  if (b == a + 1 && map[a].unfiltered_offset % cs == 0 && map[a].unfiltered_size % cs == 0) {
    key.chunk = static_cast<uint32_t>(a) + 1;
  }
  return key;
}

// The most bytes of parts a reader keeps per field (ReadState::held_parts).
constexpr uint64_t kHeldPartBytes = uint64_t{8} << 20;

}  // namespace

int FragmentAttribute(const FragmentMetadata& frag, const Attribute& attr) {
  const ArraySchema& own = frag.schema();
  const int a = own.AttributeIndex(attr.name);
  if (a < 0 || own.attributes[a].var() != attr.var()) return -1;
  return a;
}

Result<Column> GatherAttribute(const ViewInputs& in, const CellIndex& index,
                               const std::string& name, uint64_t first, uint64_t count,
                               TileCache& cache, ReadState* state, uint8_t* into, Pieces* pieces) {
  const ArraySchema& schema = *in.schema;
  HeldTiles* held = state != nullptr ? &state->held[name] : nullptr;
  HeldTiles used;  // the tiles this gather takes (the next held ones)
  int ai = schema.AttributeIndex(name);
  if (ai < 0) return Error::NotFound(fmt::format("no attribute '{}'", name));
  if (first > index.cell_count || count > index.cell_count - first) {
    return Error::InvalidArgument(
        fmt::format("cells [{}, +{}) of {}", first, count, index.cell_count));
  }
  const Attribute& attr = schema.attributes[ai];
  Column c;
  c.name = attr.name;
  c.type = attr.type;
  c.cell_val_num = attr.cell_val_num;
  c.nullable = attr.nullable;
  c.cell_count = count;

  // The fill cell: the schema's fill value, repeated or cut to a whole cell.
  ByteVec fill = attr.fill_value;
  if (!attr.var()) {
    uint64_t cs = attr.cell_size();
    ByteVec cell(cs, 0);
    if (!fill.empty()) {
      for (uint64_t i = 0; i < cs; ++i) cell[i] = fill[i % fill.size()];
    }
    fill = std::move(cell);
  }

  // Per fragment: the attribute's index in the fragment's own schema (-1:
  // the fragment predates the attribute).
  const size_t nf = in.fragments.size();
  std::vector<int> field(nf, -1), footer_index(nf, -1);
  for (size_t f = 0; f < nf; ++f) {
    field[f] = FragmentAttribute(*in.fragments[f], attr);
    if (field[f] >= 0) {
      footer_index[f] = in.fragments[f]->FieldIndex(FieldRef::Attribute(field[f]));
    }
  }
  const bool var = attr.var();
  const uint64_t cs = attr.cell_size();
  uint8_t* fixed_out = into;  // where fixed-size values go
  if (var) {
    c.offsets.resize(count + 1);
  } else if (pieces != nullptr) {
    fixed_out = nullptr;  // each run's values go to `pieces`
  } else if (into == nullptr) {
    c.data.resize(count * cs);
    fixed_out = c.data.data();
  }
  // Where a run of n fixed-size values that are not a span of a tile goes.
  auto fixed_dst = [&](uint64_t done_cells, uint64_t n) {
    return pieces != nullptr ? pieces->AddOwned(n * cs) : fixed_out + done_cells * cs;
  };
  if (attr.nullable) c.validity.resize(count);

  const uint64_t end = first + count;
  // Sequential: going on from the last read, or from the first cell.
  bool sequential = false;
  if (state != nullptr) {
    auto it = state->next.find(name);
    sequential = first == 0 || (it != state->next.end() && it->second == first);
    state->next[name] = end;
  }
  // A seek (ReadState::parts) decodes only the chunks it needs of the tiles
  // not at hand; a read going on from the last one decodes whole tiles, as
  // long as the cache's StreamBudget takes the tiles it crosses.
  const bool part_field = state != nullptr && state->parts && !var && !attr.nullable &&
                          count <= kPartReadBytes / std::max<uint64_t>(cs, 1);
  bool parts = part_field && !sequential;
  std::vector<Crossed> crossed;  // the tiles of the read, when it takes whole ones
  if (!parts) crossed = CrossedTiles(in, index, field, footer_index, first, end);
  StreamShare* share = part_field ? &state->streams[name] : nullptr;
  if (share != nullptr) {
    if (sequential) {
      const uint64_t limit = cache.budget_bytes() / 2;
      parts = !share->Ask(cache.stream_budget(), CrossedTileBytes(in, field, crossed, limit));
    } else {
      share->Drop();
    }
  }
  std::vector<HeldPart>* held_parts = part_field ? &state->held_parts[name] : nullptr;
  std::vector<HeldPart> used_parts;  // the parts this gather takes (the next held ones)
  const HeldTiles ahead = parts ? HeldTiles{} : DecodeMissingTiles(in, field, crossed, cache, held);
  size_t ahead_from = 0;  // FindFrom's cursor in `ahead`
  // Tiles at hand, a few slots by (fragment, tile): views whose runs
  // alternate between fragments, or between the tiles of a row (32 in a
  // row of the benchmark's dense arrays: consecutive tiles take distinct
  // slots), go to the shared cache once per tile, not once per run.
  struct Slot {
    uint32_t fragment = CellRef::kFill;
    uint64_t tile = 0;
    uint64_t first = 0;  // of the cells t holds (a part: ReadTilePart)
    std::shared_ptr<const DecodedTile> t;
    bool kept = false;  // t is in pieces->keep
  };
  constexpr size_t kSlots = 64;
  std::array<Slot, kSlots> slots;
  uint64_t done = 0;  // cells written
  for (uint64_t i = first; i < end;) {
    CellRun run = index.RunAt(i, end - i);
    i += run.count;
    const CellRef& r = run.ref;
    if (r.fragment == CellRef::kFill || field[r.fragment] < 0) {
      if (var) {
        for (uint64_t k = 0; k < run.count; ++k) {
          c.offsets[done + k] = c.data.size();
          AppendBytes(c.data, fill.data(), fill.size());
        }
      } else if (cs > 0) {
        uint8_t* dst = fixed_dst(done, run.count);
        for (uint64_t k = 0; k < run.count; ++k) std::memcpy(dst + k * cs, fill.data(), cs);
      }
      if (attr.nullable) {
        std::memset(c.validity.data() + done, static_cast<uint8_t>(attr.fill_value_validity),
                    run.count);
      }
      done += run.count;
      continue;
    }
    const FragmentMetadata& frag = *in.fragments[r.fragment];
    // The run's last position, overflow-checked, must lie in the tile.
    uint64_t last_pos;
    if (MulOverflow(run.count - 1, run.step, &last_pos) ||
        AddOverflow(last_pos, uint64_t{r.pos}, &last_pos) || last_pos >= frag.TileCellNum(r.tile)) {
      return Error::Corrupt(fmt::format("{}: cells from {} of tile {} beyond its {} cells",
                                        frag.dir(), r.pos, r.tile, frag.TileCellNum(r.tile)));
    }
    Slot& slot = slots[(r.tile * 7 + r.fragment) % kSlots];
    if (!slot.t || slot.fragment != r.fragment || slot.tile != r.tile || r.pos < slot.first ||
        last_pos - slot.first >= slot.t->cell_num) {
      slot.kept = false;
      TileKey key{&frag, footer_index[r.fragment], r.tile};
      std::shared_ptr<const DecodedTile> tile = held != nullptr ? Find(*held, key) : nullptr;
      if (!tile) tile = FindFrom(ahead, key, &ahead_from);
      if (!tile) tile = cache.Get(key);
      slot.first = 0;
      const HeldPart* kept = nullptr;
      if (!tile && held_parts != nullptr) {
        kept = FindPart(used_parts, key, r.pos, last_pos);
        if (kept == nullptr) {
          kept = FindPart(*held_parts, key, r.pos, last_pos);
          if (kept != nullptr) used_parts.push_back(*kept);
        }
      }
      if (kept != nullptr) {
        slot.fragment = r.fragment;
        slot.tile = r.tile;
        slot.first = kept->first;
        slot.t = kept->tile;
      } else if (!tile && parts) {
        // Only the chunks of the run's cells; the tile's chunk map (cached)
        // lets the next parts of the tile read only their own chunks. A
        // run within one chunk takes that chunk alone, shared with other
        // readers through the cache.
        std::shared_ptr<const ChunkMap> map = cache.GetChunkMap(key);
        const bool mapped = map != nullptr;
        const uint64_t lo = uint64_t{r.pos} * cs, hi = (last_pos + 1) * cs;
        TileKey chunk_key = map ? ChunkKey(key, *map, lo, hi, cs) : key;
        std::shared_ptr<const DecodedTile> shared =
            chunk_key.chunk != 0 ? cache.Get(chunk_key) : nullptr;
        slot.fragment = r.fragment;
        slot.tile = r.tile;
        if (shared) {
          slot.first = (*map)[chunk_key.chunk - 1].unfiltered_offset / cs;
          slot.t = std::move(shared);
        } else {
          ASSIGN_OR_RETURN(TilePart part,
                           ReadTilePart(frag, FieldRef::Attribute(field[r.fragment]), r.tile,
                                        in.encrypted, r.pos, last_pos + 1, &map));
          if (part.tile.cell_size != cs) {
            return Error::Corrupt(fmt::format("{}: attribute '{}' cell of {} bytes, expected {}",
                                              frag.dir(), name, part.tile.cell_size, cs));
          }
          if (!mapped && map) {  // made by this read
            cache.PutChunkMap(key, map, in.fragments[r.fragment]);
            chunk_key = ChunkKey(key, *map, lo, hi, cs);
          }
          slot.first = part.first;
          slot.t = std::make_shared<const DecodedTile>(std::move(part.tile));
          if (chunk_key.chunk != 0) {
            const ChunkSpan& c = (*map)[chunk_key.chunk - 1];
            if (c.unfiltered_offset == slot.first * cs &&
                c.unfiltered_size == slot.t->cell_num * cs) {
              slot.t = cache.Put(chunk_key, slot.t, in.fragments[r.fragment]);
            }
          }
        }
        if (held_parts != nullptr) used_parts.push_back({key, slot.first, slot.t});
      } else {
        if (!tile) {
          ASSIGN_OR_RETURN(DecodedTile t, ReadTile(frag, FieldRef::Attribute(field[r.fragment]),
                                                   r.tile, in.encrypted));
          tile = cache.Put(key, std::make_shared<const DecodedTile>(std::move(t)),
                           in.fragments[r.fragment]);
        }
        if (!var && tile->cell_size != cs) {
          return Error::Corrupt(fmt::format("{}: attribute '{}' cell of {} bytes, expected {}",
                                            frag.dir(), name, tile->cell_size, cs));
        }
        if (held != nullptr) used.emplace_back(key, tile);
        slot.fragment = r.fragment;
        slot.tile = r.tile;
        slot.t = std::move(tile);
      }
    }
    const DecodedTile& tile = *slot.t;
    if (r.pos < slot.first || last_pos - slot.first >= tile.cell_num) {
      return Error::Corrupt(fmt::format("{}: cells from {} of tile {} beyond its {} cells",
                                        frag.dir(), r.pos, r.tile, tile.cell_num));
    }
    const uint64_t at = r.pos - slot.first;  // the run's first cell in slot.t
    if (!var && run.step == 1 && pieces != nullptr) {
      if (!slot.kept) {
        pieces->keep.push_back(slot.t);
        slot.kept = true;
      }
      pieces->Add(tile.fixed.data() + at * cs, run.count * cs);
    } else if (!var) {
      uint8_t* dst = fixed_dst(done, run.count);
      const uint8_t* src = tile.fixed.data() + at * cs;
      if (run.step == 1) {
        std::memcpy(dst, src, run.count * cs);
      } else {
        for (uint64_t k = 0; k < run.count; ++k)
          std::memcpy(dst + k * cs, src + k * run.step * cs, cs);
      }
    } else if (run.step == 1 && !tile.offsets.empty()) {
      // One block of values; offsets shifted to this column's.
      const uint64_t from = tile.offsets[r.pos], to = tile.offsets[r.pos + run.count];
      const uint64_t shift = c.data.size() - from;
      for (uint64_t k = 0; k < run.count; ++k)
        c.offsets[done + k] = tile.offsets[r.pos + k] + shift;
      AppendBytes(c.data, tile.var.data() + from, to - from);
    } else {
      for (uint64_t k = 0, pos = r.pos; k < run.count; ++k, pos += run.step) {
        Bytes value = tile.cell(pos);
        c.offsets[done + k] = c.data.size();
        AppendBytes(c.data, value);
      }
    }
    if (attr.nullable) {
      for (uint64_t k = 0, pos = r.pos; k < run.count; ++k, pos += run.step) {
        c.validity[done + k] = tile.valid(pos) ? 1 : 0;
      }
    }
    done += run.count;
  }
  if (var) c.offsets[count] = c.data.size();
  if (held_parts != nullptr) {
    // The parts used last first, each once, up to kHeldPartBytes.
    uint64_t bytes = 0;
    held_parts->clear();
    for (auto it = used_parts.rbegin(); it != used_parts.rend() && bytes < kHeldPartBytes; ++it) {
      if (FindPart(*held_parts, it->key, it->first, it->first + it->tile->cell_num - 1)) continue;
      bytes += TileCache::SizeOf(*it->tile);
      held_parts->push_back(std::move(*it));
    }
  }
  if (share != nullptr && end == index.cell_count) share->Drop();  // the field is read
  if (sequential && !parts && end < index.cell_count) {
    DecodeAhead(in, index, field, footer_index, end, cs + (attr.nullable ? 1 : 0), cache,
                state->ahead[name]);
  }
  if (held != nullptr) {
    // The tiles used last first (the next read starts where this one ended),
    // each once, up to a sixteenth of the budget or 16 MiB (enough for one
    // piece of a sparse view over a few overlapping fragments).
    const uint64_t cap = std::max(cache.budget_bytes() / 16, uint64_t{16} << 20);
    std::unordered_set<TileKey, TileKeyHash> taken;
    uint64_t bytes = 0;
    held->clear();
    for (auto it = used.rbegin(); it != used.rend() && bytes < cap; ++it) {
      if (!taken.insert(it->first).second) continue;
      bytes += TileCache::SizeOf(*it->second);
      held->push_back(std::move(*it));
    }
  }
  return c;
}

std::vector<uint64_t> TileEnds(const ViewInputs& in, const CellIndex& index) {
  std::vector<uint64_t> ends;
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

uint64_t AttributeTileBytes(const ViewInputs& in, const CellIndex& index, const std::string& name) {
  const int va = in.schema->AttributeIndex(name);
  if (va < 0) return 0;
  uint64_t bytes = 0;
  for (const CellIndex::SparseTile& t : index.sparse_tiles) {
    if (t.fragment >= in.fragments.size()) continue;
    const FragmentMetadata& frag = *in.fragments[t.fragment];
    const int a = FragmentAttribute(frag, in.schema->attributes[va]);
    if (a < 0) continue;
    const uint64_t b = DecodedTileBytes(frag, FieldRef::Attribute(a), t.tile).value_or(UINT64_MAX);
    if (AddOverflow(bytes, b, &bytes)) return UINT64_MAX;
  }
  return bytes;
}

}  // namespace tiledbfs::core
