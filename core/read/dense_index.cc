#include "core/read/dense_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "core/read/coords.h"

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
    if (MulOverflow(n, index.shape[d], &n) || n > in.limits.max_view_cells) {
      return Error::OutOfMemory(
          fmt::format("dense view of more than {} cells", in.limits.max_view_cells));
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

namespace {

// `n` copies of the `size` bytes at `value`, from `out` on.
void FillCells(uint8_t* out, const uint8_t* value, uint64_t size, uint64_t n) {
  auto fill = [&]<class T>(T) {
    T v;
    std::memcpy(&v, value, sizeof(T));
    for (uint64_t i = 0; i < n; ++i) std::memcpy(out + i * sizeof(T), &v, sizeof(T));
  };
  switch (size) {
    case 1:
      std::memset(out, value[0], n);
      return;
    case 2:
      return fill(uint16_t{});
    case 4:
      return fill(uint32_t{});
    case 8:
      return fill(uint64_t{});
    default:
      for (uint64_t i = 0; i < n; ++i) std::memcpy(out + i * size, value, size);
  }
}

}  // namespace

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
  // Row-major: the coordinate holds for runs of `inner` cells, then steps,
  // wrapping at the extent. Each run's value is encoded once, then copied
  // (a cell at a time cost a third of a cat of data.parquet).
  const uint64_t extent = index.shape[d];
  uint64_t coord = (first / inner) % extent;
  uint64_t left = inner - first % inner;  // cells of the first run in the read
  uint8_t* out = c.data.data();
  if (inner == 1 && (size == 1 || size == 2 || size == 4 || size == 8)) {
    // The last dimension: a value per cell, counting up (FromInt128: the
    // low bytes of the two's complement).
    auto count_up = [&]<class T>(T) {
      const uint64_t v0 = static_cast<uint64_t>(lo);
      uint64_t v = static_cast<uint64_t>(lo + coord);
      for (uint64_t i = 0; i < count; ++i) {
        const T t = static_cast<T>(v);
        std::memcpy(out + i * sizeof(T), &t, sizeof(T));
        if (++coord == extent) {
          coord = 0;
          v = v0;
        } else {
          ++v;
        }
      }
    };
    if (size == 1) count_up(uint8_t{});
    if (size == 2) count_up(uint16_t{});
    if (size == 4) count_up(uint32_t{});
    if (size == 8) count_up(uint64_t{});
    return c;
  }
  uint8_t value[16] = {};
  for (uint64_t i = 0; i < count;) {
    const uint64_t run = std::min(left, count - i);
    FromInt128(dim.type, lo + coord, value);
    FillCells(out + i * size, value, size, run);
    i += run;
    left = inner;
    coord = coord + 1 == extent ? 0 : coord + 1;
  }
  return c;
}
}  // namespace tiledbfs::core
