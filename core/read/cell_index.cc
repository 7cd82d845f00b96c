#include "core/read/cell_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <map>
#include <numeric>

#include "core/read/coords.h"
#include "core/read/parallel.h"

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
  run.ref = refs[i];
  run.count = 1;
  while (run.count < max) {
    const CellRef& r = refs[i + run.count];
    if (r.fragment != run.ref.fragment || r.tile != run.ref.tile ||
        r.pos != run.ref.pos + run.count) {
      break;
    }
    ++run.count;
  }
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
    index.box[d].lo.resize(DatatypeSize(dim.type));
    index.box[d].hi.resize(DatatypeSize(dim.type));
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

}  // namespace

Result<CellIndex> BuildSparseIndex(const ViewInputs& in) {
  const ArraySchema& schema = *in.schema;
  const size_t dims = schema.dimensions.size();
  CoordTiles coords(in.fragments.size());
  std::vector<SparseEntry> entries;
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    const FragmentMetadata& frag = *in.fragments[fi];
    if (frag.schema().dimensions.size() != dims) {
      return Error::Corrupt(fmt::format("{}: schema has {} dimensions, the array {}", frag.dir(),
                                        frag.schema().dimensions.size(), dims));
    }
    const FragmentFooter& ft = frag.footer();
    uint64_t tiles = frag.tile_num();
    coords[fi].resize(tiles);
    bool zipped = !frag.dense() && frag.FieldIndex(FieldRef::Coords()) >= 0 &&
                  frag.FieldIndex(FieldRef::Dimension(0)) < 0;
    for (uint64_t t = 0; t < tiles; ++t) {
      if (zipped) {
        ASSIGN_OR_RETURN(coords[fi][t], ReadZippedCoordsTile(frag, t, in.encrypted));
      } else {
        for (size_t d = 0; d < dims; ++d) {
          ASSIGN_OR_RETURN(DecodedTile dt, ReadTile(frag, FieldRef::Dimension(d), t, in.encrypted));
          coords[fi][t].push_back(std::move(dt));
        }
      }
      uint64_t cells = frag.TileCellNum(t);
      for (const auto& dt : coords[fi][t]) {
        if (dt.cell_num != cells) {
          return Error::Corrupt(fmt::format("{}: tile {} has {} coordinates, expected {}",
                                            frag.dir(), t, dt.cell_num, cells));
        }
      }
      DecodedTile ts, del;
      if (ft.has_timestamps) {
        ASSIGN_OR_RETURN(ts, ReadTile(frag, FieldRef::Timestamps(), t, in.encrypted));
      }
      if (ft.has_delete_meta && in.filter_timestamps) {
        ASSIGN_OR_RETURN(del, ReadTile(frag, FieldRef::DeleteTimestamps(), t, in.encrypted));
      }
      for (uint64_t p = 0; p < cells; ++p) {
        uint64_t stamp = frag.name().t1;
        if (ft.has_timestamps) std::memcpy(&stamp, ts.fixed.data() + p * 8, 8);
        if (in.filter_timestamps && ft.has_timestamps && stamp > in.timestamp) continue;
        if (!del.fixed.empty()) {
          uint64_t deleted_at;
          std::memcpy(&deleted_at, del.fixed.data() + p * 8, 8);
          bool visible =
              in.timestamp == UINT64_MAX ? deleted_at >= in.timestamp : deleted_at > in.timestamp;
          if (!visible) continue;
        }
        entries.push_back({static_cast<uint32_t>(fi), static_cast<uint32_t>(p), t, stamp});
      }
    }
  }
  auto coord = [&](const SparseEntry& e, size_t d) {
    return coords[e.fragment][e.tile][d].cell(e.pos);
  };
  auto compare_coords = [&](const SparseEntry& a, const SparseEntry& b) {
    for (size_t d = 0; d < dims; ++d) {
      int c = CompareValues(schema.dimensions[d].type, coord(a, d), coord(b, d));
      if (c != 0) return c;
    }
    return 0;
  };
  std::sort(entries.begin(), entries.end(), [&](const SparseEntry& a, const SparseEntry& b) {
    int c = compare_coords(a, b);
    if (c != 0) return c < 0;
    // Newest first: timestamp, then fragment order.
    if (a.timestamp != b.timestamp) return a.timestamp > b.timestamp;
    if (a.fragment != b.fragment) return a.fragment > b.fragment;
    return a.pos > b.pos;
  });
  if (in.dedup && !schema.allows_dups && !entries.empty()) {
    size_t w = 1;
    for (size_t r = 1; r < entries.size(); ++r) {
      if (compare_coords(entries[w - 1], entries[r]) != 0) entries[w++] = entries[r];
    }
    entries.resize(w);
  }
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
    for (size_t r = 0; r < entries.size(); ++r) {
      const SparseEntry& e = entries[r];
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
      if (!deleted) entries[w++] = e;
    }
    entries.resize(w);
  }

  CellIndex index;
  index.cell_count = entries.size();
  index.refs.reserve(entries.size());
  for (const auto& e : entries) index.refs.push_back({e.fragment, e.pos, e.tile});
  index.dims.resize(dims);
  index.box.resize(dims);
  for (size_t d = 0; d < dims; ++d) {
    const Dimension& dim = schema.dimensions[d];
    Column& c = index.dims[d];
    c.name = dim.name;
    c.type = dim.type;
    c.cell_val_num = dim.cell_val_num;
    c.cell_count = entries.size();
    if (dim.var()) c.offsets.reserve(entries.size() + 1);
    for (const auto& e : entries) {
      Bytes v = coord(e, d);
      if (dim.var()) c.offsets.push_back(c.data.size());
      c.data.insert(c.data.end(), v.begin(), v.end());
    }
    if (dim.var()) c.offsets.push_back(c.data.size());
  }
  return index;
}

namespace {

// Decodes, several at once, the tiles of cells [first, end) that the cache
// lacks (at most what fits in half the cache), so that a read needing a
// new row of tiles uses every core. Errors are left for the gather pass,
// which decodes the tile again and reports them.
void DecodeMissingTiles(const ViewInputs& in, const CellIndex& index, const std::vector<int>& field,
                        const std::vector<int>& footer_index, uint64_t first, uint64_t end,
                        TileCache& cache) {
  struct Missing {
    TileKey key;
    uint32_t fragment;
  };
  std::vector<Missing> missing;
  TileKey last;
  for (uint64_t i = first; i < end;) {
    CellRun run = index.RunAt(i, end - i);
    i += run.count;
    const CellRef& r = run.ref;
    if (r.fragment == CellRef::kFill || field[r.fragment] < 0) continue;
    TileKey key{in.fragments[r.fragment].get(), footer_index[r.fragment], r.tile};
    if (key == last) continue;
    last = key;
    bool seen = false;
    for (const Missing& m : missing) seen = seen || m.key == key;
    if (seen || cache.Contains(key)) continue;
    missing.push_back({key, r.fragment});
    if (missing.size() >= 256) break;
  }
  if (missing.size() < 2) return;
  // Tiles of a field have about the same size: stop at half the budget.
  std::atomic<uint64_t> decoded_bytes{0};
  const uint64_t limit = cache.budget_bytes() / 2;
  ParallelFor(missing.size(), [&](size_t k) {
    if (decoded_bytes.load() >= limit) return;
    const Missing& m = missing[k];
    const FragmentMetadata& frag = *in.fragments[m.fragment];
    auto t = ReadTile(frag, FieldRef::Attribute(field[m.fragment]), m.key.tile, in.encrypted);
    if (!t.ok()) return;
    auto tile = std::make_shared<const DecodedTile>(std::move(t).value());
    decoded_bytes += tile->fixed.size() + tile->var.size() + tile->offsets.size() * 8;
    cache.Put(m.key, std::move(tile), in.fragments[m.fragment]);
  });
}

}  // namespace

Result<Column> GatherAttribute(const ViewInputs& in, const CellIndex& index,
                               const std::string& name, uint64_t first, uint64_t count,
                               TileCache& cache) {
  const ArraySchema& schema = *in.schema;
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
    ByteVec cell(cs);
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
    field[f] = in.fragments[f]->schema().AttributeIndex(name);
    if (field[f] >= 0) {
      footer_index[f] = in.fragments[f]->FieldIndex(FieldRef::Attribute(field[f]));
    }
  }
  if (attr.var())
    c.offsets.reserve(count + 1);
  else
    c.data.reserve(count * attr.cell_size());
  if (attr.nullable) c.validity.reserve(count);

  const uint64_t end = first + count;
  DecodeMissingTiles(in, index, field, footer_index, first, end, cache);
  std::shared_ptr<const DecodedTile> tile;
  TileKey tile_key;
  for (uint64_t i = first; i < end;) {
    CellRun run = index.RunAt(i, end - i);
    i += run.count;
    const CellRef& r = run.ref;
    if (r.fragment == CellRef::kFill || field[r.fragment] < 0) {
      for (uint64_t k = 0; k < run.count; ++k) {
        if (attr.var()) c.offsets.push_back(c.data.size());
        c.data.insert(c.data.end(), fill.begin(), fill.end());
      }
      if (attr.nullable) c.validity.insert(c.validity.end(), run.count, attr.fill_value_validity);
      continue;
    }
    const FragmentMetadata& frag = *in.fragments[r.fragment];
    TileKey key{&frag, footer_index[r.fragment], r.tile};
    if (!tile || !(key == tile_key)) {
      tile = cache.Get(key);
      if (!tile) {
        ASSIGN_OR_RETURN(DecodedTile t, ReadTile(frag, FieldRef::Attribute(field[r.fragment]),
                                                 r.tile, in.encrypted));
        tile = std::make_shared<const DecodedTile>(std::move(t));
        cache.Put(key, tile, in.fragments[r.fragment]);
      }
      tile_key = key;
      if (!attr.var() && tile->cell_size != attr.cell_size()) {
        return Error::Corrupt(fmt::format("{}: attribute '{}' cell of {} bytes, expected {}",
                                          frag.dir(), name, tile->cell_size, attr.cell_size()));
      }
    }
    // The run's last position, overflow-checked, must lie in the tile.
    uint64_t last_pos;
    if (MulOverflow(run.count - 1, run.step, &last_pos) ||
        AddOverflow(last_pos, uint64_t{r.pos}, &last_pos) || last_pos >= tile->cell_num) {
      return Error::Corrupt(fmt::format("{}: cells from {} of tile {} beyond its {} cells",
                                        frag.dir(), r.pos, r.tile, tile->cell_num));
    }
    if (!attr.var() && run.step == 1) {
      const uint8_t* src = tile->fixed.data() + uint64_t{r.pos} * tile->cell_size;
      c.data.insert(c.data.end(), src, src + run.count * tile->cell_size);
    } else {
      for (uint64_t k = 0, pos = r.pos; k < run.count; ++k, pos += run.step) {
        Bytes value = tile->cell(pos);
        if (attr.var()) c.offsets.push_back(c.data.size());
        c.data.insert(c.data.end(), value.begin(), value.end());
      }
    }
    if (attr.nullable) {
      for (uint64_t k = 0, pos = r.pos; k < run.count; ++k, pos += run.step) {
        c.validity.push_back(tile->valid(pos) ? 1 : 0);
      }
    }
  }
  if (attr.var()) c.offsets.push_back(c.data.size());
  return c;
}

}  // namespace tiledbfs::core
