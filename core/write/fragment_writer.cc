#include "core/write/fragment_writer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <random>

#include "core/fragment/dense_tile_grid.h"
#include "core/write/byte_writer.h"
#include "core/write/filter_writer.h"
#include "core/write/schema_writer.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kRTreeFanout = 10;  // TileDB's constants::rtree_fanout

// The cells of one tile of one field, unfiltered.
struct TileBuf {
  ByteVec data;
  std::vector<uint64_t> offsets;  // var: start of each cell in data
  ByteVec validity;
  uint64_t cells = 0;
};

// What a field is, for tiling, filtering and statistics.
struct FieldInfo {
  std::string name;
  std::string file_base;  // "a0", "d1"
  Datatype type;
  uint32_t cell_val_num;
  bool var;
  bool nullable;
  bool is_dim;
  uint64_t cell_size;  // fixed: bytes per cell
  const FilterPipeline* filters;
  const FieldCells* cells;
  ByteVec fill;
  uint8_t fill_validity;
};

Bytes CellOf(const FieldInfo& f, uint64_t i) {
  const FieldCells& c = *f.cells;
  if (!f.var) return Bytes(c.data.data() + i * f.cell_size, f.cell_size);
  uint64_t end = i + 1 < c.offsets.size() ? c.offsets[i + 1] : c.data.size();
  return Bytes(c.data.data() + c.offsets[i], end - c.offsets[i]);
}

void AppendCell(TileBuf& t, const FieldInfo& f, Bytes cell, uint8_t valid) {
  if (f.var) t.offsets.push_back(t.data.size());
  t.data.insert(t.data.end(), cell.begin(), cell.end());
  if (f.nullable) t.validity.push_back(valid);
  ++t.cells;
}

// Numbers of a fixed-size type.
struct Num {
  enum Kind { kSigned, kUnsigned, kFloat, kNone } kind = kNone;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
};

Num LoadNum(Datatype t, const uint8_t* p) {
  Num n;
  auto get = [&](auto x) {
    std::memcpy(&x, p, sizeof(x));
    return x;
  };
  switch (t) {
    case Datatype::kInt8:
      n.kind = Num::kSigned;
      n.i = get(int8_t{});
      break;
    case Datatype::kInt16:
      n.kind = Num::kSigned;
      n.i = get(int16_t{});
      break;
    case Datatype::kInt32:
      n.kind = Num::kSigned;
      n.i = get(int32_t{});
      break;
    case Datatype::kInt64:
      n.kind = Num::kSigned;
      n.i = get(int64_t{});
      break;
    case Datatype::kUInt8:
    case Datatype::kBool:
      n.kind = Num::kUnsigned;
      n.u = get(uint8_t{});
      break;
    case Datatype::kUInt16:
      n.kind = Num::kUnsigned;
      n.u = get(uint16_t{});
      break;
    case Datatype::kUInt32:
      n.kind = Num::kUnsigned;
      n.u = get(uint32_t{});
      break;
    case Datatype::kUInt64:
      n.kind = Num::kUnsigned;
      n.u = get(uint64_t{});
      break;
    case Datatype::kFloat32:
      n.kind = Num::kFloat;
      n.d = get(float{});
      break;
    case Datatype::kFloat64:
      n.kind = Num::kFloat;
      n.d = get(double{});
      break;
    default:
      if (IsDatetime(t) || IsTime(t)) {
        n.kind = Num::kSigned;
        n.i = get(int64_t{});
      }
      break;
  }
  return n;
}

// <0, 0, >0. Numbers by value (single-value cells), anything else bytewise.
int CompareCells(Datatype t, bool single, Bytes a, Bytes b) {
  if (single && a.size() == DatatypeSize(t) && b.size() == a.size()) {
    Num x = LoadNum(t, a.data()), y = LoadNum(t, b.data());
    switch (x.kind) {
      case Num::kSigned:
        return x.i < y.i ? -1 : x.i > y.i;
      case Num::kUnsigned:
        return x.u < y.u ? -1 : x.u > y.u;
      case Num::kFloat:
        return x.d < y.d ? -1 : x.d > y.d;
      default:
        break;
    }
  }
  size_t n = std::min(a.size(), b.size());
  int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
  if (c != 0) return c;
  return a.size() < b.size() ? -1 : a.size() > b.size();
}

bool HasMinMax(const FieldInfo& f) {
  if (f.is_dim) return false;
  if (f.var && f.type != Datatype::kChar && f.type != Datatype::kStringAscii) return false;
  if (!f.var && f.cell_val_num != 1 && f.type != Datatype::kChar &&
      f.type != Datatype::kStringAscii) {
    return false;
  }
  return !(f.type == Datatype::kAny || IsBlobLike(f.type) ||
           (IsString(f.type) && f.type != Datatype::kStringAscii && f.type != Datatype::kChar));
}

bool HasSum(const FieldInfo& f) {
  if (f.var || f.cell_val_num != 1) return false;
  return !(f.type == Datatype::kAny || IsBlobLike(f.type) || IsString(f.type));
}

// Per-tile statistics of one field.
struct Stats {
  std::vector<ByteVec> mins, maxs;
  std::vector<uint64_t> sums, null_counts;
};

// Adds v to a sum kept as TileDB stores it: int64 for signed types, uint64
// for unsigned, double for floats (integers saturate instead of wrapping).
uint64_t AddSum(uint64_t acc, Num v) {
  switch (v.kind) {
    case Num::kSigned: {
      int64_t s;
      std::memcpy(&s, &acc, 8);
      int64_t r;
      if (__builtin_add_overflow(s, v.i, &r)) r = v.i > 0 ? INT64_MAX : INT64_MIN;
      std::memcpy(&acc, &r, 8);
      return acc;
    }
    case Num::kUnsigned: {
      uint64_t r;
      if (__builtin_add_overflow(acc, v.u, &r)) r = UINT64_MAX;
      return r;
    }
    case Num::kFloat: {
      double s;
      std::memcpy(&s, &acc, 8);
      s += v.d;
      std::memcpy(&acc, &s, 8);
      return acc;
    }
    default:
      return acc;
  }
}

void TileStatsOf(const FieldInfo& f, const TileBuf& t, Stats& st) {
  const bool single = !f.var && f.cell_val_num == 1;
  std::optional<ByteVec> mn, mx;
  uint64_t sum = 0, nulls = 0;
  for (uint64_t i = 0; i < t.cells; ++i) {
    if (f.nullable && t.validity[i] == 0) {
      ++nulls;
      continue;
    }
    Bytes cell = f.var ? Bytes(t.data.data() + t.offsets[i],
                               (i + 1 < t.cells ? t.offsets[i + 1] : t.data.size()) - t.offsets[i])
                       : Bytes(t.data.data() + i * f.cell_size, f.cell_size);
    if (HasSum(f)) sum = AddSum(sum, LoadNum(f.type, cell.data()));
    if (HasMinMax(f)) {
      if (single && IsFloat(f.type) && std::isnan(LoadNum(f.type, cell.data()).d)) continue;
      if (!mn || CompareCells(f.type, single, cell, *mn) < 0)
        mn = ByteVec(cell.begin(), cell.end());
      if (!mx || CompareCells(f.type, single, cell, *mx) > 0)
        mx = ByteVec(cell.begin(), cell.end());
    }
  }
  if (HasMinMax(f)) {
    ByteVec zero(f.var ? 0 : f.cell_size, 0);
    st.mins.push_back(mn.value_or(zero));
    st.maxs.push_back(mx.value_or(zero));
  }
  if (HasSum(f)) st.sums.push_back(sum);
  if (f.nullable) st.null_counts.push_back(nulls);
}

void PutNdRange(const std::vector<Range>& r, const ArraySchema& s, ByteWriter& w) {
  for (size_t d = 0; d < r.size(); ++d) {
    if (s.dimensions[d].var()) {
      w.Put<uint64_t>(r[d].lo.size() + r[d].hi.size());
      w.Put<uint64_t>(r[d].lo.size());
    }
    w.PutBytes(r[d].lo);
    w.PutBytes(r[d].hi);
  }
}

Range ExpandRange(const Dimension& d, const Range& a, const Range& b) {
  Range out = a;
  bool single = !d.var();
  if (CompareCells(d.type, single, b.lo, out.lo) < 0) out.lo = b.lo;
  if (CompareCells(d.type, single, b.hi, out.hi) > 0) out.hi = b.hi;
  return out;
}

ByteVec RTreePayload(const ArraySchema& s, const std::vector<std::vector<Range>>& leaves) {
  std::vector<std::vector<std::vector<Range>>> levels;
  if (!leaves.empty()) levels.push_back(leaves);
  while (!levels.empty() && levels.back().size() > 1) {
    const auto& cur = levels.back();
    std::vector<std::vector<Range>> next;
    for (size_t i = 0; i < cur.size(); i += kRTreeFanout) {
      std::vector<Range> m = cur[i];
      for (size_t j = i + 1; j < std::min(cur.size(), i + kRTreeFanout); ++j) {
        for (size_t d = 0; d < m.size(); ++d) m[d] = ExpandRange(s.dimensions[d], m[d], cur[j][d]);
      }
      next.push_back(std::move(m));
    }
    levels.push_back(std::move(next));
  }
  std::reverse(levels.begin(), levels.end());
  ByteWriter w;
  w.Put<uint32_t>(kRTreeFanout);
  w.Put<uint32_t>(static_cast<uint32_t>(levels.size()));
  for (const auto& level : levels) {
    w.Put<uint64_t>(level.size());
    for (const auto& mbr : level) PutNdRange(mbr, s, w);
  }
  return w.Take();
}

ByteVec U64List(const std::vector<uint64_t>& v) {
  ByteWriter w;
  w.Put<uint64_t>(v.size());
  for (uint64_t x : v) w.Put<uint64_t>(x);
  return w.Take();
}

Status WriteFile(const fs::path& p, Bytes b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (!out) return Error::Io(fmt::format("cannot create {}", p.string()));
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  out.close();
  if (!out) return Error::Io(fmt::format("cannot write {}", p.string()));
  return Ok();
}

Result<__int128> IntCoord(const Dimension& d, Bytes b) { return DimensionValue(d.type, b); }

// Builds the dense tiles of every field: the grid over the subarray expanded
// to tile boundaries, each tile whole (fill values outside the subarray).
Result<std::vector<std::vector<TileBuf>>> DenseTiles(const ArraySchema& s,
                                                     const std::vector<FieldInfo>& fields,
                                                     const std::vector<Range>& sub,
                                                     uint64_t cell_count, uint64_t* tile_num,
                                                     uint64_t* cells_per_tile) {
  const size_t D = s.dimensions.size();
  ASSIGN_OR_RETURN(DenseTileGrid grid, ComputeDenseTileGrid(s, sub));
  std::vector<__int128> lo(D), hi(D), dom_lo(D);
  for (size_t d = 0; d < D; ++d) {
    ASSIGN_OR_RETURN(lo[d], IntCoord(s.dimensions[d], sub[d].lo));
    ASSIGN_OR_RETURN(hi[d], IntCoord(s.dimensions[d], sub[d].hi));
    ASSIGN_OR_RETURN(dom_lo[d], IntCoord(s.dimensions[d], s.dimensions[d].domain.lo));
  }
  std::vector<uint64_t> stride(D, 1);
  for (size_t d = D - 1; d-- > 0;)
    stride[d] = stride[d + 1] * static_cast<uint64_t>(hi[d + 1] - lo[d + 1] + 1);
  uint64_t expect = stride[0] * static_cast<uint64_t>(hi[0] - lo[0] + 1);
  if (expect != cell_count) {
    return Error::InvalidArgument(
        fmt::format("dense write of {} cells, but the subarray holds {}", cell_count, expect));
  }
  *tile_num = grid.tile_num;
  *cells_per_tile = grid.cells_per_tile;
  std::vector<std::vector<TileBuf>> tiles(fields.size(), std::vector<TileBuf>(grid.tile_num));
  // Decomposes an index into per-dimension indices, `order` deciding which
  // dimension runs fastest.
  auto decompose = [&](uint64_t idx, const std::vector<uint64_t>& counts, Layout order) {
    std::vector<uint64_t> out(D);
    if (order == Layout::kColMajor) {
      for (size_t d = 0; d < D; ++d) {
        out[d] = idx % counts[d];
        idx /= counts[d];
      }
    } else {
      for (size_t d = D; d-- > 0;) {
        out[d] = idx % counts[d];
        idx /= counts[d];
      }
    }
    return out;
  };
  std::vector<__int128> coord(D);
  for (uint64_t t = 0; t < grid.tile_num; ++t) {
    std::vector<uint64_t> ti = decompose(t, grid.tiles_per_dim, s.tile_order);
    for (uint64_t c = 0; c < grid.cells_per_tile; ++c) {
      std::vector<uint64_t> ci = decompose(c, grid.extents, s.cell_order);
      bool inside = true;
      uint64_t src = 0;
      for (size_t d = 0; d < D; ++d) {
        coord[d] =
            dom_lo[d] + static_cast<__int128>(grid.first_tile[d] + ti[d]) * grid.extents[d] + ci[d];
        if (coord[d] < lo[d] || coord[d] > hi[d])
          inside = false;
        else
          src += static_cast<uint64_t>(coord[d] - lo[d]) * stride[d];
      }
      for (size_t f = 0; f < fields.size(); ++f) {
        const FieldInfo& fi = fields[f];
        if (inside) {
          uint8_t valid = fi.nullable ? fi.cells->validity[src] : 1;
          AppendCell(tiles[f][t], fi, CellOf(fi, src), valid);
        } else {
          AppendCell(tiles[f][t], fi, fi.fill, fi.fill_validity);
        }
      }
    }
  }
  return tiles;
}

// Sparse: sorts the cells into the global order, checks the domain and
// duplicates, and cuts tiles of `capacity` cells. `mbrs` gets one per tile.
Result<std::vector<std::vector<TileBuf>>> SparseTiles(const ArraySchema& s,
                                                      const std::vector<FieldInfo>& fields,
                                                      uint64_t n,
                                                      std::vector<std::vector<Range>>* mbrs) {
  const size_t D = s.dimensions.size();
  const size_t A = s.attributes.size();
  // fields: attributes first, then dimensions.
  auto dim = [&](size_t d) -> const FieldInfo& { return fields[A + d]; };
  // Per cell and dimension: the space tile index (fixed dims with extents).
  std::vector<std::vector<double>> tile_id(D);
  for (size_t d = 0; d < D; ++d) {
    const Dimension& dd = s.dimensions[d];
    if (dd.var()) continue;
    Num lo = LoadNum(dd.type, dd.domain.lo.data()), hi = LoadNum(dd.type, dd.domain.hi.data());
    std::optional<Num> ext;
    if (dd.tile_extent) ext = LoadNum(dd.type, dd.tile_extent->data());
    tile_id[d].resize(n);
    for (uint64_t i = 0; i < n; ++i) {
      Num v = LoadNum(dd.type, CellOf(dim(d), i).data());
      bool out = false;
      long double pos = 0, e = 1;
      if (v.kind == Num::kSigned) {
        out = v.i < lo.i || v.i > hi.i;
        pos = static_cast<long double>(v.i) - lo.i;
        if (ext) e = ext->i;
      } else if (v.kind == Num::kUnsigned) {
        out = v.u < lo.u || v.u > hi.u;
        pos = static_cast<long double>(v.u - lo.u);
        if (ext) e = ext->u;
      } else if (v.kind == Num::kFloat) {
        out = !(v.d >= lo.d && v.d <= hi.d);
        pos = v.d - lo.d;
        if (ext) e = ext->d;
      }
      if (out) {
        return Error::InvalidArgument(
            fmt::format("cell {}: coordinate of '{}' is outside the domain", i + 1, dd.name));
      }
      tile_id[d][i] = ext ? static_cast<double>(std::floor(pos / e)) : 0.0;
    }
  }
  std::vector<uint64_t> perm(n);
  std::iota(perm.begin(), perm.end(), 0);
  auto dims_in = [&](Layout order) {
    std::vector<size_t> v(D);
    std::iota(v.begin(), v.end(), 0);
    if (order == Layout::kColMajor) std::reverse(v.begin(), v.end());
    return v;
  };
  if (s.cell_order == Layout::kHilbert) {
    return Error::Unsupported("writing arrays with hilbert cell order is not supported yet");
  }
  const auto tile_dims = dims_in(s.tile_order), cell_dims = dims_in(s.cell_order);
  auto cmp_coords = [&](uint64_t a, uint64_t b) {
    for (size_t d : cell_dims) {
      int c = CompareCells(s.dimensions[d].type, !s.dimensions[d].var(), CellOf(dim(d), a),
                           CellOf(dim(d), b));
      if (c != 0) return c;
    }
    return 0;
  };
  std::stable_sort(perm.begin(), perm.end(), [&](uint64_t a, uint64_t b) {
    for (size_t d : tile_dims) {
      if (tile_id[d].empty()) continue;
      if (tile_id[d][a] != tile_id[d][b]) return tile_id[d][a] < tile_id[d][b];
    }
    return cmp_coords(a, b) < 0;
  });
  if (!s.allows_dups) {
    for (uint64_t i = 1; i < n; ++i) {
      if (cmp_coords(perm[i - 1], perm[i]) == 0) {
        return Error::InvalidArgument(fmt::format(
            "cells {} and {} have the same coordinates and the array does not allow duplicates",
            perm[i - 1] + 1, perm[i] + 1));
      }
    }
  }
  const uint64_t cap = s.capacity == 0 ? 10000 : s.capacity;
  const uint64_t tile_num = (n + cap - 1) / cap;
  std::vector<std::vector<TileBuf>> tiles(fields.size(), std::vector<TileBuf>(tile_num));
  mbrs->assign(tile_num, {});
  for (uint64_t k = 0; k < n; ++k) {
    uint64_t t = k / cap, src = perm[k];
    for (size_t f = 0; f < fields.size(); ++f) {
      const FieldInfo& fi = fields[f];
      AppendCell(tiles[f][t], fi, CellOf(fi, src), fi.nullable ? fi.cells->validity[src] : 1);
    }
    std::vector<Range>& mbr = (*mbrs)[t];
    for (size_t d = 0; d < D; ++d) {
      Bytes c = CellOf(dim(d), src);
      Range r{ByteVec(c.begin(), c.end()), ByteVec(c.begin(), c.end())};
      if (mbr.size() <= d)
        mbr.push_back(r);
      else
        mbr[d] = ExpandRange(s.dimensions[d], mbr[d], r);
    }
  }
  return tiles;
}

Result<std::string> WriteFragmentFiles(const fs::path& dir, const ArraySchema& s,
                                       const WriteBatch& batch, const std::string& name) {
  const size_t A = s.attributes.size(), D = s.dimensions.size();
  const bool dense = s.dense();
  std::vector<FieldInfo> fields;
  uint64_t n = UINT64_MAX;
  auto add = [&](const std::string& fname, std::string base, Datatype type, uint32_t cvn,
                 bool nullable, bool is_dim, const FilterPipeline* filters, ByteVec fill,
                 uint8_t fill_validity) -> Status {
    auto it = batch.fields.find(fname);
    if (it == batch.fields.end()) {
      return Error::InvalidArgument(fmt::format("no values for field '{}'", fname));
    }
    FieldInfo f{fname,
                std::move(base),
                type,
                cvn,
                cvn == kVarNum,
                nullable,
                is_dim,
                cvn == kVarNum ? 8 : DatatypeSize(type) * cvn,
                filters,
                &it->second,
                std::move(fill),
                fill_validity};
    TRY(CheckWritablePipeline(*filters, type, f.var));
    const FieldCells& c = it->second;
    uint64_t cells = f.var ? c.offsets.size() : c.data.size() / f.cell_size;
    if (!f.var && c.data.size() % f.cell_size != 0) {
      return Error::InvalidArgument(fmt::format("field '{}': data is not whole cells", fname));
    }
    if (f.var) {
      for (size_t i = 0; i < c.offsets.size(); ++i) {
        if (c.offsets[i] > c.data.size() || (i > 0 && c.offsets[i] < c.offsets[i - 1])) {
          return Error::InvalidArgument(fmt::format("field '{}': bad offset of cell {}", fname, i));
        }
      }
    }
    if (nullable && c.validity.size() != cells) {
      return Error::InvalidArgument(fmt::format("field '{}': {} validity bytes for {} cells", fname,
                                                c.validity.size(), cells));
    }
    if (n != UINT64_MAX && cells != n) {
      return Error::InvalidArgument(
          fmt::format("field '{}' has {} cells, other fields {}", fname, cells, n));
    }
    n = cells;
    fields.push_back(std::move(f));
    return Ok();
  };
  for (size_t i = 0; i < A; ++i) {
    const Attribute& a = s.attributes[i];
    TRY(add(a.name, fmt::format("a{}", i), a.type, a.cell_val_num, a.nullable, false, &a.filters,
            a.fill_value, a.fill_value_validity));
  }
  if (!dense) {
    for (size_t d = 0; d < D; ++d) {
      const Dimension& dd = s.dimensions[d];
      TRY(add(dd.name, fmt::format("d{}", d), dd.type, dd.cell_val_num, false, true,
              &s.dim_filters(d), {}, 1));
    }
  }
  if (n == 0 || n == UINT64_MAX) return Error::InvalidArgument("a write needs at least one cell");

  std::vector<std::vector<TileBuf>> tiles;
  std::vector<std::vector<Range>> mbrs;
  std::vector<Range> non_empty;
  uint64_t tile_num = 0, last_tile_cells = 0;
  if (dense) {
    if (batch.subarray.size() != D) {
      return Error::InvalidArgument("a dense write needs a subarray with a range per dimension");
    }
    for (size_t d = 0; d < D; ++d) {
      const Dimension& dd = s.dimensions[d];
      const Range& r = batch.subarray[d];
      if (r.lo.size() != DatatypeSize(dd.type) || r.hi.size() != r.lo.size() ||
          CompareCells(dd.type, true, r.lo, r.hi) > 0 ||
          CompareCells(dd.type, true, r.lo, dd.domain.lo) < 0 ||
          CompareCells(dd.type, true, r.hi, dd.domain.hi) > 0) {
        return Error::InvalidArgument(
            fmt::format("subarray of '{}' is empty or outside the domain", dd.name));
      }
    }
    uint64_t cells_per_tile = 0;
    ASSIGN_OR_RETURN(tiles, DenseTiles(s, fields, batch.subarray, n, &tile_num, &cells_per_tile));
    last_tile_cells = cells_per_tile;
    non_empty = batch.subarray;
  } else {
    ASSIGN_OR_RETURN(tiles, SparseTiles(s, fields, n, &mbrs));
    tile_num = mbrs.size();
    last_tile_cells = n % s.capacity == 0 ? s.capacity : n % s.capacity;
    non_empty = mbrs[0];
    for (const auto& m : mbrs) {
      for (size_t d = 0; d < D; ++d)
        non_empty[d] = ExpandRange(s.dimensions[d], non_empty[d], m[d]);
    }
  }

  // Footer field index: a0..aA-1, __coords, d0..dD-1.
  const size_t N = A + 1 + D;
  auto index_of = [&](const FieldInfo& f, size_t k) { return f.is_dim ? A + 1 + (k - A) : k; };
  std::vector<uint64_t> file_sizes(N, 0), var_sizes(N, 0), validity_sizes(N, 0);
  std::vector<std::vector<uint64_t>> tile_offsets(N, std::vector<uint64_t>(tile_num, 0)),
      tile_var_offsets = tile_offsets, tile_var_sizes = tile_offsets,
      tile_validity_offsets = tile_offsets;
  std::vector<Stats> stats(N);
  std::vector<bool> has_min_max(N, false), has_sum(N, false), has_nulls(N, false);
  for (size_t k = 0; k < fields.size(); ++k) {
    const FieldInfo& f = fields[k];
    const size_t idx = index_of(f, k);
    has_min_max[idx] = HasMinMax(f);
    has_sum[idx] = HasSum(f);
    has_nulls[idx] = f.nullable;
    ByteVec fixed, var, validity;
    for (uint64_t t = 0; t < tile_num; ++t) {
      const TileBuf& tb = tiles[k][t];
      TileStatsOf(f, tb, stats[idx]);
      tile_offsets[idx][t] = fixed.size();
      if (f.var) {
        ByteWriter offs;
        for (uint64_t o : tb.offsets) offs.Put<uint64_t>(o);
        ASSIGN_OR_RETURN(ByteVec ot,
                         FilterFixedTile(s.offsets_filters, offs.bytes(), Datatype::kUInt64, 8));
        fixed.insert(fixed.end(), ot.begin(), ot.end());
        tile_var_offsets[idx][t] = var.size();
        tile_var_sizes[idx][t] = tb.data.size();
        ASSIGN_OR_RETURN_CTX(ByteVec vt, FilterVarDataTile(*f.filters, tb.data, f.type, tb.offsets),
                             "field '" + f.name + "'");
        var.insert(var.end(), vt.begin(), vt.end());
      } else {
        ASSIGN_OR_RETURN_CTX(ByteVec ft, FilterFixedTile(*f.filters, tb.data, f.type, f.cell_size),
                             "field '" + f.name + "'");
        fixed.insert(fixed.end(), ft.begin(), ft.end());
      }
      if (f.nullable) {
        tile_validity_offsets[idx][t] = validity.size();
        ASSIGN_OR_RETURN(ByteVec vt,
                         FilterFixedTile(s.validity_filters, tb.validity, Datatype::kUInt8, 1));
        validity.insert(validity.end(), vt.begin(), vt.end());
      }
    }
    TRY(WriteFile(dir / (f.file_base + ".tdb"), fixed));
    file_sizes[idx] = fixed.size();
    if (f.var) {
      TRY(WriteFile(dir / (f.file_base + "_var.tdb"), var));
      var_sizes[idx] = var.size();
    }
    if (f.nullable) {
      TRY(WriteFile(dir / (f.file_base + "_validity.tdb"), validity));
      validity_sizes[idx] = validity.size();
    }
  }

  // The legacy __coords slot: TileDB gives it the statistics of a field of
  // dimension 0's type, all zero: tile mins/maxes of dim_num values of that
  // type each (its ArraySchema::cell_size), fragment min/max of one value.
  {
    FieldInfo coords{"__coords",
                     "",
                     s.dimensions[0].type,
                     1,
                     false,
                     false,
                     false,
                     DatatypeSize(s.dimensions[0].type),
                     nullptr,
                     nullptr,
                     {},
                     1};
    if (!s.dimensions[0].var()) {
      has_min_max[A] = HasMinMax(coords);
      has_sum[A] = HasSum(coords);
      if (has_min_max[A]) {
        stats[A].mins.assign(tile_num, ByteVec(D * coords.cell_size, 0));
        stats[A].maxs = stats[A].mins;
      }
      if (has_sum[A]) stats[A].sums.assign(tile_num, 0);
    }
  }

  // __fragment_metadata.tdb: generic tiles in TileDB's order, then the footer.
  ByteVec meta;
  auto put_tile = [&](Bytes payload) -> Result<uint64_t> {
    uint64_t at = meta.size();
    ASSIGN_OR_RETURN(ByteVec t, EncodeGenericTile(payload, kWriteFormatVersion));
    meta.insert(meta.end(), t.begin(), t.end());
    return at;
  };
  auto put_lists =
      [&](const std::vector<std::vector<uint64_t>>& lists) -> Result<std::vector<uint64_t>> {
    std::vector<uint64_t> at;
    for (const auto& l : lists) {
      ASSIGN_OR_RETURN(uint64_t o, put_tile(U64List(l)));
      at.push_back(o);
    }
    return at;
  };
  ASSIGN_OR_RETURN(uint64_t rtree_at, put_tile(RTreePayload(s, mbrs)));
  ASSIGN_OR_RETURN(auto offsets_at, put_lists(tile_offsets));
  ASSIGN_OR_RETURN(auto var_offsets_at, put_lists(tile_var_offsets));
  ASSIGN_OR_RETURN(auto var_sizes_at, put_lists(tile_var_sizes));
  ASSIGN_OR_RETURN(auto validity_at, put_lists(tile_validity_offsets));
  auto is_var_field = [&](size_t idx) {
    if (idx < A) return s.attributes[idx].var();
    if (idx > A) return s.dimensions[idx - A - 1].var();
    return false;
  };
  auto minmax_payload = [&](size_t idx, bool maxs) {
    ByteWriter fixed, var;
    if (has_min_max[idx]) {
      for (const ByteVec& v : maxs ? stats[idx].maxs : stats[idx].mins) {
        if (is_var_field(idx)) {
          fixed.Put<uint64_t>(var.size());
          var.PutBytes(v);
        } else {
          fixed.PutBytes(v);
        }
      }
    }
    ByteWriter w;
    w.Put<uint64_t>(fixed.size());
    w.Put<uint64_t>(var.size());
    w.PutBytes(fixed.bytes());
    w.PutBytes(var.bytes());
    return w.Take();
  };
  std::vector<uint64_t> mins_at, maxs_at;
  for (size_t i = 0; i < N; ++i) {
    ASSIGN_OR_RETURN(uint64_t o, put_tile(minmax_payload(i, false)));
    mins_at.push_back(o);
  }
  for (size_t i = 0; i < N; ++i) {
    ASSIGN_OR_RETURN(uint64_t o, put_tile(minmax_payload(i, true)));
    maxs_at.push_back(o);
  }
  std::vector<std::vector<uint64_t>> sums(N), nulls(N);
  for (size_t i = 0; i < N; ++i) {
    sums[i] = stats[i].sums;
    nulls[i] = stats[i].null_counts;
  }
  ASSIGN_OR_RETURN(auto sums_at, put_lists(sums));
  ASSIGN_OR_RETURN(auto nulls_at, put_lists(nulls));
  // Fragment min/max/sum/null count per field.
  ByteWriter fs_w;
  for (size_t i = 0; i < N; ++i) {
    ByteVec mn, mx;
    if (i == A && has_min_max[i]) {
      mn = mx = ByteVec(DatatypeSize(s.dimensions[0].type), 0);
    } else if (has_min_max[i]) {
      const FieldInfo* fi = nullptr;
      for (size_t k = 0; k < fields.size(); ++k)
        if (index_of(fields[k], k) == i) fi = &fields[k];
      const bool single = fi && !fi->var && fi->cell_val_num == 1;
      bool first = true;
      for (uint64_t t = 0; t < tile_num; ++t) {
        // Tiles whose cells are all null have no min/max of their own.
        if (has_nulls[i] && stats[i].null_counts[t] == tiles[0][t].cells) continue;
        const ByteVec& a = stats[i].mins[t];
        const ByteVec& b = stats[i].maxs[t];
        if (first || CompareCells(fi->type, single, a, mn) < 0) mn = a;
        if (first || CompareCells(fi->type, single, b, mx) > 0) mx = b;
        first = false;
      }
    }
    fs_w.Put<uint64_t>(mn.size());
    fs_w.PutBytes(mn);
    fs_w.Put<uint64_t>(mx.size());
    fs_w.PutBytes(mx);
    uint64_t sum = 0, nc = 0;
    const FieldInfo* fi = nullptr;
    for (size_t k = 0; k < fields.size(); ++k)
      if (index_of(fields[k], k) == i) fi = &fields[k];
    const uint8_t zero[8] = {};
    const Num::Kind kind = fi ? LoadNum(fi->type, zero).kind : Num::kNone;
    for (uint64_t v : stats[i].sums) {
      Num x;
      x.kind = kind;
      std::memcpy(&x.i, &v, 8);
      x.u = v;
      std::memcpy(&x.d, &v, 8);
      sum = AddSum(sum, x);
    }
    for (uint64_t v : stats[i].null_counts) nc += v;
    fs_w.Put<uint64_t>(sum);
    fs_w.Put<uint64_t>(nc);
  }
  ASSIGN_OR_RETURN(uint64_t frag_stats_at, put_tile(fs_w.bytes()));
  ASSIGN_OR_RETURN(uint64_t conditions_at, put_tile(U64List({})));

  ByteWriter f;
  f.Put<uint32_t>(kWriteFormatVersion);
  f.Put<uint64_t>(s.name.size());
  f.PutString(s.name);
  f.Put<uint8_t>(dense ? 1 : 0);
  f.Put<uint8_t>(0);  // null non-empty domain
  PutNdRange(non_empty, s, f);
  f.Put<uint64_t>(dense ? 0 : tile_num);
  f.Put<uint64_t>(last_tile_cells);
  f.Put<uint8_t>(0);  // has timestamps
  f.Put<uint8_t>(0);  // has delete meta
  for (auto* v : {&file_sizes, &var_sizes, &validity_sizes})
    for (uint64_t x : *v) f.Put<uint64_t>(x);
  f.Put<uint64_t>(rtree_at);
  for (auto* v : {&offsets_at, &var_offsets_at, &var_sizes_at, &validity_at, &mins_at, &maxs_at,
                  &sums_at, &nulls_at}) {
    for (uint64_t x : *v) f.Put<uint64_t>(x);
  }
  f.Put<uint64_t>(frag_stats_at);
  f.Put<uint64_t>(conditions_at);
  uint64_t footer_size = f.size();
  f.Put<uint64_t>(footer_size);
  meta.insert(meta.end(), f.bytes().begin(), f.bytes().end());
  TRY(WriteFile(dir / "__fragment_metadata.tdb", meta));
  return name;
}

}  // namespace

std::string NewTimestampedName(uint64_t timestamp, uint32_t version) {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string uuid = fmt::format("{:016x}{:016x}", rng(), rng());
  std::string name = fmt::format("__{}_{}_{}", timestamp, timestamp, uuid);
  if (version != 0) name += fmt::format("_{}", version);
  return name;
}

Result<std::string> CreateArray(const std::string& array_dir, const ArraySchema& schema,
                                uint64_t timestamp) {
  std::error_code ec;
  fs::path dir(array_dir);
  if (fs::exists(dir, ec) && !fs::is_empty(dir, ec)) {
    return Error::InvalidArgument(fmt::format("{} exists and is not empty", array_dir));
  }
  ASSIGN_OR_RETURN(ByteVec payload, SerializeArraySchema(schema));
  ASSIGN_OR_RETURN(ByteVec tile, EncodeGenericTile(payload, kWriteFormatVersion));
  for (const char* sub : {"__schema", "__commits", "__fragments"}) {
    fs::create_directories(dir / sub, ec);
    if (ec) return Error::Io(fmt::format("cannot create {}/{}: {}", array_dir, sub, ec.message()));
  }
  std::string name = NewTimestampedName(timestamp, 0);
  TRY(WriteFile(dir / "__schema" / name, tile));
  return name;
}

Result<std::string> WriteFragment(const std::string& array_dir, const ArraySchema& schema,
                                  uint64_t timestamp, const WriteBatch& batch) {
  if (schema.name.empty()) return Error::InvalidArgument("the schema has no file name");
  std::string name = NewTimestampedName(timestamp, kWriteFormatVersion);
  fs::path root(array_dir);
  fs::path dir = root / "__fragments" / name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::Io(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  fs::create_directories(root / "__commits", ec);
  auto r = WriteFragmentFiles(dir, schema, batch, name);
  if (r.ok()) {
    Status c = WriteFile(root / "__commits" / (name + ".wrt"), {});
    if (c.ok()) return name;
    r = c.error();
  }
  fs::remove_all(dir, ec);
  return r.error();
}

}  // namespace tiledbfs::core
