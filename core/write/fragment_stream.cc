#include "core/write/fragment_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <random>
#include <type_traits>

#include "core/fragment/dense_tile_grid.h"
#include "core/util/byte_writer.h"
#include "core/write/cell_values.h"
#include "core/write/filter_writer.h"
#include "core/write/fragment_writer.h"
#include "core/write/schema_writer.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

constexpr uint32_t kRTreeFanout = 10;  // TileDB's constants::rtree_fanout

bool HasMinMax(const WriteField& f) {
  if (f.is_dim) return false;
  if (f.var && f.type != Datatype::kChar && f.type != Datatype::kStringAscii) return false;
  if (!f.var && f.cell_val_num != 1 && f.type != Datatype::kChar &&
      f.type != Datatype::kStringAscii) {
    return false;
  }
  return !(f.type == Datatype::kAny || IsBlobLike(f.type) ||
           (IsString(f.type) && f.type != Datatype::kStringAscii && f.type != Datatype::kChar));
}

bool HasSum(const WriteField& f) {
  if (f.var || f.cell_val_num != 1) return false;
  return !(f.type == Datatype::kAny || IsBlobLike(f.type) || IsString(f.type));
}

Bytes CellAt(const WriteField& f, const TileBuf& t, uint64_t i) {
  if (!f.var) return Bytes(t.data.data() + i * f.cell_size, f.cell_size);
  uint64_t end = i + 1 < t.cells ? t.offsets[i + 1] : t.data.size();
  return Bytes(t.data.data() + t.offsets[i], end - t.offsets[i]);
}

// The statistics of one tile of one field.
struct TileStats {
  ByteVec min, max;
  uint64_t sum = 0, nulls = 0;
};

// Single-value numbers: a typed loop (the hot path of big writes). Same
// results as the generic loop: sums include NaN, min/max skip it, the first
// of equal values is kept.
template <class T>
void NumericTileStats(const WriteField& f, const TileBuf& t, bool want_minmax, bool want_sum,
                      TileStats& st) {
  const uint8_t* p = t.data.data();
  bool have = false;
  T mn{}, mx{};
  int64_t si = 0;
  uint64_t su = 0;
  double sd = 0;
  for (uint64_t i = 0; i < t.cells; ++i) {
    if (f.nullable && t.validity[i] == 0) {
      ++st.nulls;
      continue;
    }
    T v;
    std::memcpy(&v, p + i * sizeof(T), sizeof(T));
    if (want_sum) {
      if constexpr (std::is_floating_point_v<T>) {
        sd += static_cast<double>(v);
      } else if constexpr (std::is_signed_v<T>) {
        int64_t r;
        if (__builtin_add_overflow(si, static_cast<int64_t>(v), &r)) {
          r = v > 0 ? INT64_MAX : INT64_MIN;
        }
        si = r;
      } else {
        uint64_t r;
        if (__builtin_add_overflow(su, static_cast<uint64_t>(v), &r)) r = UINT64_MAX;
        su = r;
      }
    }
    if (want_minmax) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(v)) continue;
      }
      if (!have) {
        mn = mx = v;
        have = true;
      } else {
        if (v < mn) mn = v;
        if (v > mx) mx = v;
      }
    }
  }
  if (want_minmax) {
    st.min.assign(sizeof(T), 0);
    st.max.assign(sizeof(T), 0);
    if (have) {
      std::memcpy(st.min.data(), &mn, sizeof(T));
      std::memcpy(st.max.data(), &mx, sizeof(T));
    }
  }
  if (want_sum) {
    if constexpr (std::is_floating_point_v<T>) {
      std::memcpy(&st.sum, &sd, 8);
    } else if constexpr (std::is_signed_v<T>) {
      std::memcpy(&st.sum, &si, 8);
    } else {
      st.sum = su;
    }
  }
}

template <class F>
bool DispatchNumeric(Datatype type, F&& f) {
  const uint8_t zero[8] = {};
  const Num::Kind kind = LoadNum(type, zero).kind;
  const uint64_t size = DatatypeSize(type);
  switch (kind) {
    case Num::kSigned:
      if (size == 1) return f(int8_t{}), true;
      if (size == 2) return f(int16_t{}), true;
      if (size == 4) return f(int32_t{}), true;
      if (size == 8) return f(int64_t{}), true;
      return false;
    case Num::kUnsigned:
      if (size == 1) return f(uint8_t{}), true;
      if (size == 2) return f(uint16_t{}), true;
      if (size == 4) return f(uint32_t{}), true;
      if (size == 8) return f(uint64_t{}), true;
      return false;
    case Num::kFloat:
      if (size == 4) return f(float{}), true;
      if (size == 8) return f(double{}), true;
      return false;
    default:
      return false;
  }
}

TileStats StatsOf(const WriteField& f, const TileBuf& t) {
  TileStats st;
  const bool want_minmax = HasMinMax(f), want_sum = HasSum(f);
  const bool single = !f.var && f.cell_val_num == 1;
  if (!want_minmax && !want_sum) {
    if (f.nullable) {
      for (uint64_t i = 0; i < t.cells; ++i) st.nulls += t.validity[i] == 0;
    }
    return st;
  }
  if (single && DispatchNumeric(f.type, [&](auto x) {
        NumericTileStats<decltype(x)>(f, t, want_minmax, want_sum, st);
      })) {
    return st;
  }
  std::optional<Bytes> mn, mx;
  for (uint64_t i = 0; i < t.cells; ++i) {
    if (f.nullable && t.validity[i] == 0) {
      ++st.nulls;
      continue;
    }
    Bytes cell = CellAt(f, t, i);
    if (want_sum) st.sum = AddSum(st.sum, LoadNum(f.type, cell.data()));
    if (want_minmax) {
      if (single && IsFloat(f.type) && std::isnan(LoadNum(f.type, cell.data()).d)) continue;
      if (!mn || CompareCells(f.type, single, cell, *mn) < 0) mn = cell;
      if (!mx || CompareCells(f.type, single, cell, *mx) > 0) mx = cell;
    }
  }
  if (want_minmax) {
    ByteVec zero(f.var ? 0 : f.cell_size, 0);
    st.min = mn ? ByteVec(mn->begin(), mn->end()) : zero;
    st.max = mx ? ByteVec(mx->begin(), mx->end()) : zero;
  }
  return st;
}

// The range of a dimension's coordinates in a tile (at least one cell).
Range CoordRange(const WriteField& f, const TileBuf& t) {
  Range r;
  if (!f.var && DispatchNumeric(f.type, [&](auto x) {
        using T = decltype(x);
        T mn, mx;
        std::memcpy(&mn, t.data.data(), sizeof(T));
        mx = mn;
        for (uint64_t i = 1; i < t.cells; ++i) {
          T v;
          std::memcpy(&v, t.data.data() + i * sizeof(T), sizeof(T));
          if (v < mn) mn = v;
          if (v > mx) mx = v;
        }
        r.lo.resize(sizeof(T), 0);
        r.hi.resize(sizeof(T), 0);
        std::memcpy(r.lo.data(), &mn, sizeof(T));
        std::memcpy(r.hi.data(), &mx, sizeof(T));
      })) {
    return r;
  }
  const bool single = !f.var;
  Bytes mn = CellAt(f, t, 0), mx = mn;
  for (uint64_t i = 1; i < t.cells; ++i) {
    Bytes c = CellAt(f, t, i);
    if (CompareCells(f.type, single, c, mn) < 0) mn = c;
    if (CompareCells(f.type, single, c, mx) > 0) mx = c;
  }
  r.lo.assign(mn.begin(), mn.end());
  r.hi.assign(mx.begin(), mx.end());
  return r;
}

Range ExpandRange(const Dimension& d, const Range& a, const Range& b) {
  Range out = a;
  bool single = !d.var();
  if (CompareCells(d.type, single, b.lo, out.lo) < 0) out.lo = b.lo;
  if (CompareCells(d.type, single, b.hi, out.hi) > 0) out.hi = b.hi;
  return out;
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

Status WriteWholeFile(const fs::path& p, Bytes b) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (!f) return Error::Io(fmt::format("cannot create {}: {}", p.string(), std::strerror(errno)));
  bool ok = b.empty() || std::fwrite(b.data(), 1, b.size(), f) == b.size();
  ok = std::fclose(f) == 0 && ok;
  if (!ok) return Error::Io(fmt::format("cannot write {}", p.string()));
  return Ok();
}

// An append-only data file.
class OutFile {
 public:
  ~OutFile() {
    if (f_) std::fclose(f_);
  }
  Status Open(const fs::path& p) {
    path_ = p;
    f_ = std::fopen(p.c_str(), "wb");
    if (!f_)
      return Error::Io(fmt::format("cannot create {}: {}", p.string(), std::strerror(errno)));
    return Ok();
  }
  bool is_open() const { return f_ != nullptr; }
  uint64_t size() const { return size_; }
  Status Append(Bytes b) {
    if (!b.empty() && std::fwrite(b.data(), 1, b.size(), f_) != b.size()) {
      return Error::Io(fmt::format("cannot write {}: {}", path_.string(), std::strerror(errno)));
    }
    size_ += b.size();
    return Ok();
  }
  Status Close() {
    if (!f_) return Ok();
    int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) return Error::Io(fmt::format("cannot write {}", path_.string()));
    return Ok();
  }

 private:
  fs::path path_;
  std::FILE* f_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace

// Per field: its files and the per-tile metadata gathered so far.
struct FragmentFileWriter::FieldState {
  OutFile fixed, var, validity;
  bool has_min_max = false, has_sum = false;
  std::vector<uint64_t> offsets, var_offsets, var_sizes, validity_offsets;
  std::vector<ByteVec> mins, maxs;
  std::vector<uint64_t> sums, null_counts;
};

std::vector<WriteField> FragmentFields(const ArraySchema& s) {
  std::vector<WriteField> out;
  for (size_t i = 0; i < s.attributes.size(); ++i) {
    const Attribute& a = s.attributes[i];
    WriteField f;
    f.name = a.name;
    f.file_base = fmt::format("a{}", i);
    f.type = a.type;
    f.cell_val_num = a.cell_val_num;
    f.var = a.var();
    f.nullable = a.nullable;
    f.cell_size = f.var ? 8 : DatatypeSize(a.type) * a.cell_val_num;
    f.filters = &a.filters;
    f.fill = a.fill_value;
    f.fill_validity = a.fill_value_validity;
    out.push_back(std::move(f));
  }
  if (!s.dense()) {
    for (size_t d = 0; d < s.dimensions.size(); ++d) {
      const Dimension& dd = s.dimensions[d];
      WriteField f;
      f.name = dd.name;
      f.file_base = fmt::format("d{}", d);
      f.type = dd.type;
      f.cell_val_num = dd.cell_val_num;
      f.var = dd.var();
      f.is_dim = true;
      f.cell_size = f.var ? 8 : DatatypeSize(dd.type) * dd.cell_val_num;
      f.filters = &s.dim_filters(d);
      out.push_back(std::move(f));
    }
  }
  return out;
}

FragmentFileWriter::FragmentFileWriter(const fs::path& dir, const ArraySchema& schema)
    : dir_(dir), schema_(schema) {
  // The pipelines point into our own copy of the schema.
  fields_ = FragmentFields(schema_);
  capacity_ = schema_.capacity == 0 ? 10000 : schema_.capacity;
}

FragmentFileWriter::~FragmentFileWriter() = default;

Result<std::unique_ptr<FragmentFileWriter>> FragmentFileWriter::Open(
    const fs::path& dir, const ArraySchema& schema, const std::vector<Range>& subarray) {
  if (schema.name.empty()) return Error::InvalidArgument("the schema has no file name");
  std::unique_ptr<FragmentFileWriter> w(new FragmentFileWriter(dir, schema));
  const ArraySchema& s = w->schema_;
  if (s.dense()) {
    if (subarray.size() != s.dimensions.size()) {
      return Error::InvalidArgument("a dense write needs a subarray with a range per dimension");
    }
    for (size_t d = 0; d < s.dimensions.size(); ++d) {
      const Dimension& dd = s.dimensions[d];
      const Range& r = subarray[d];
      if (r.lo.size() != DatatypeSize(dd.type) || r.hi.size() != r.lo.size() ||
          CompareCells(dd.type, true, r.lo, r.hi) > 0 ||
          CompareCells(dd.type, true, r.lo, dd.domain.lo) < 0 ||
          CompareCells(dd.type, true, r.hi, dd.domain.hi) > 0) {
        return Error::InvalidArgument(
            fmt::format("subarray of '{}' is empty or outside the domain", dd.name));
      }
    }
    ASSIGN_OR_RETURN(DenseTileGrid grid, ComputeDenseTileGrid(s, subarray));
    w->dense_tile_cells_ = grid.cells_per_tile;
    w->subarray_ = subarray;
  } else if (s.cell_order == Layout::kHilbert) {
    return Error::Unsupported("writing arrays with hilbert cell order is not supported yet");
  }
  w->tile_.resize(w->fields_.size());
  for (const WriteField& f : w->fields_) {
    TRY(CheckWritablePipeline(*f.filters, f.type, f.var));
    auto st = std::make_unique<FieldState>();
    st->has_min_max = HasMinMax(f);
    st->has_sum = HasSum(f);
    TRY(st->fixed.Open(dir / (f.file_base + ".tdb")));
    if (f.var) TRY(st->var.Open(dir / (f.file_base + "_var.tdb")));
    if (f.nullable) TRY(st->validity.Open(dir / (f.file_base + "_validity.tdb")));
    w->state_.push_back(std::move(st));
  }
  return w;
}

Status FragmentFileWriter::FlushTile() {
  if (finished_) return Error::InvalidArgument("the fragment is finished");
  const uint64_t n = tile_.empty() ? 0 : tile_[0].cells;
  if (n == 0) return Error::InvalidArgument("a tile needs at least one cell");
  if (schema_.dense() && n != dense_tile_cells_) {
    return Error::InvalidArgument(
        fmt::format("dense tile of {} cells, the tile extents hold {}", n, dense_tile_cells_));
  }
  for (size_t k = 0; k < fields_.size(); ++k) {
    const WriteField& f = fields_[k];
    const TileBuf& t = tile_[k];
    if (t.cells != n || (f.var ? t.offsets.size() != n : t.data.size() != n * f.cell_size) ||
        (f.nullable && t.validity.size() != n)) {
      return Error::InvalidArgument(fmt::format("field '{}': tile of {} cells, field '{}' has {}",
                                                f.name, t.cells, fields_[0].name, n));
    }
    if (f.var && (t.offsets[0] != 0 || !std::is_sorted(t.offsets.begin(), t.offsets.end()) ||
                  t.offsets.back() > t.data.size())) {
      return Error::InvalidArgument(fmt::format("field '{}': bad cell offsets", f.name));
    }
  }
  if (!schema_.dense()) {
    std::vector<Range> mbr;
    for (size_t k = schema_.attributes.size(); k < fields_.size(); ++k) {
      mbr.push_back(CoordRange(fields_[k], tile_[k]));
    }
    mbrs_.push_back(std::move(mbr));
  }
  for (size_t k = 0; k < fields_.size(); ++k) {
    const WriteField& f = fields_[k];
    const TileBuf& t = tile_[k];
    FieldState& st = *state_[k];
    TileStats ts = StatsOf(f, t);
    if (st.has_min_max) {
      st.mins.push_back(std::move(ts.min));
      st.maxs.push_back(std::move(ts.max));
    }
    if (st.has_sum) st.sums.push_back(ts.sum);
    if (f.nullable) st.null_counts.push_back(ts.nulls);
    st.offsets.push_back(st.fixed.size());
    if (f.var) {
      ByteWriter offs;
      offs.bytes().reserve(t.offsets.size() * 8);
      for (uint64_t o : t.offsets) offs.Put<uint64_t>(o);
      ASSIGN_OR_RETURN(
          ByteVec ot, FilterFixedTile(schema_.offsets_filters, offs.bytes(), Datatype::kUInt64, 8));
      TRY(st.fixed.Append(ot));
      st.var_offsets.push_back(st.var.size());
      st.var_sizes.push_back(t.data.size());
      ASSIGN_OR_RETURN_CTX(ByteVec vt, FilterVarDataTile(*f.filters, t.data, f.type, t.offsets),
                           "field '" + f.name + "'");
      TRY(st.var.Append(vt));
    } else {
      st.var_offsets.push_back(0);
      st.var_sizes.push_back(0);
      ASSIGN_OR_RETURN_CTX(ByteVec ft, FilterFixedTile(*f.filters, t.data, f.type, f.cell_size),
                           "field '" + f.name + "'");
      TRY(st.fixed.Append(ft));
    }
    if (f.nullable) {
      st.validity_offsets.push_back(st.validity.size());
      ASSIGN_OR_RETURN(ByteVec vt,
                       FilterFixedTile(schema_.validity_filters, t.validity, Datatype::kUInt8, 1));
      TRY(st.validity.Append(vt));
    } else {
      st.validity_offsets.push_back(0);
    }
  }
  for (TileBuf& t : tile_) t.Clear();
  tile_cells_.push_back(n);
  ++tile_num_;
  cell_num_ += n;
  return Ok();
}

Status FragmentFileWriter::Finish() {
  if (finished_) return Error::InvalidArgument("the fragment is finished");
  if (!schema_.dense() && !tile_.empty() && tile_[0].cells > 0) TRY(FlushTile());
  for (const TileBuf& t : tile_) {
    if (t.cells != 0) return Error::InvalidArgument("a dense tile was left unflushed");
  }
  if (cell_num_ == 0) return Error::InvalidArgument("a write needs at least one cell");
  if (schema_.dense()) {
    ASSIGN_OR_RETURN(DenseTileGrid grid, ComputeDenseTileGrid(schema_, subarray_));
    if (tile_num_ != grid.tile_num) {
      return Error::InvalidArgument(fmt::format(
          "dense fragment of {} tiles, its subarray covers {}", tile_num_, grid.tile_num));
    }
  }
  for (auto& st : state_) {
    TRY(st->fixed.Close());
    TRY(st->var.Close());
    TRY(st->validity.Close());
  }
  TRY(WriteMetadata());
  finished_ = true;
  return Ok();
}

Status FragmentFileWriter::WriteMetadata() {
  const ArraySchema& s = schema_;
  const size_t A = s.attributes.size(), D = s.dimensions.size();
  const bool dense = s.dense();
  const uint64_t tile_num = tile_num_;
  // Footer field index: a0..aA-1, __coords, d0..dD-1; fields_ holds the
  // attributes then the dimensions, so field k sits at k (attributes) or
  // k + 1 (dimensions).
  const size_t N = A + 1 + D;
  auto field_at = [&](size_t idx) -> int {
    if (idx < A) return static_cast<int>(idx);
    if (idx > A && !dense) return static_cast<int>(idx - 1);
    return -1;
  };
  std::vector<uint64_t> file_sizes(N, 0), var_sizes(N, 0), validity_sizes(N, 0);
  const std::vector<uint64_t> zeros(tile_num, 0);
  std::vector<std::vector<uint64_t>> tile_offsets(N, zeros), tile_var_offsets(N, zeros),
      tile_var_sizes(N, zeros), tile_validity_offsets(N, zeros), sums(N), nulls(N);
  std::vector<std::vector<ByteVec>> mins(N), maxs(N);
  std::vector<bool> has_min_max(N, false), has_sum(N, false), has_nulls(N, false);
  for (size_t idx = 0; idx < N; ++idx) {
    int k = field_at(idx);
    if (k < 0) continue;
    const WriteField& f = fields_[k];
    FieldState& st = *state_[k];
    has_min_max[idx] = st.has_min_max;
    has_sum[idx] = st.has_sum;
    has_nulls[idx] = f.nullable;
    file_sizes[idx] = st.fixed.size();
    if (f.var) var_sizes[idx] = st.var.size();
    if (f.nullable) validity_sizes[idx] = st.validity.size();
    tile_offsets[idx] = std::move(st.offsets);
    if (f.var) {
      tile_var_offsets[idx] = std::move(st.var_offsets);
      tile_var_sizes[idx] = std::move(st.var_sizes);
    }
    if (f.nullable) tile_validity_offsets[idx] = std::move(st.validity_offsets);
    mins[idx] = std::move(st.mins);
    maxs[idx] = std::move(st.maxs);
    sums[idx] = std::move(st.sums);
    nulls[idx] = std::move(st.null_counts);
  }
  // The legacy __coords slot: TileDB gives it the statistics of a field of
  // dimension 0's type, all zero: tile mins/maxes of dim_num values of that
  // type each (its ArraySchema::cell_size), fragment min/max of one value.
  WriteField coords;
  coords.type = s.dimensions[0].type;
  coords.cell_size = DatatypeSize(coords.type);
  if (!s.dimensions[0].var()) {
    has_min_max[A] = HasMinMax(coords);
    has_sum[A] = HasSum(coords);
    if (has_min_max[A]) {
      mins[A].assign(tile_num, ByteVec(D * coords.cell_size, 0));
      maxs[A] = mins[A];
    }
    if (has_sum[A]) sums[A].assign(tile_num, 0);
  }

  std::vector<Range> non_empty = subarray_;
  if (!dense) {
    non_empty = mbrs_[0];
    for (const auto& m : mbrs_) {
      for (size_t d = 0; d < D; ++d) {
        non_empty[d] = ExpandRange(s.dimensions[d], non_empty[d], m[d]);
      }
    }
  }

  // __fragment_metadata.tdb: generic tiles in TileDB's order, then the footer.
  ByteVec meta;
  auto put_tile = [&](Bytes payload) -> Result<uint64_t> {
    uint64_t at = meta.size();
    ASSIGN_OR_RETURN(ByteVec t, EncodeGenericTile(payload, kWriteFormatVersion));
    AppendBytes(meta, t);
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
  ASSIGN_OR_RETURN(uint64_t rtree_at, put_tile(RTreePayload(s, mbrs_)));
  ASSIGN_OR_RETURN(auto offsets_at, put_lists(tile_offsets));
  ASSIGN_OR_RETURN(auto var_offsets_at, put_lists(tile_var_offsets));
  ASSIGN_OR_RETURN(auto var_sizes_at, put_lists(tile_var_sizes));
  ASSIGN_OR_RETURN(auto validity_at, put_lists(tile_validity_offsets));
  auto is_var_field = [&](size_t idx) {
    if (idx < A) return s.attributes[idx].var();
    if (idx > A) return s.dimensions[idx - A - 1].var();
    return false;
  };
  auto minmax_payload = [&](size_t idx, bool max) {
    ByteWriter fixed, var;
    if (has_min_max[idx]) {
      for (const ByteVec& v : max ? maxs[idx] : mins[idx]) {
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
  ASSIGN_OR_RETURN(auto sums_at, put_lists(sums));
  ASSIGN_OR_RETURN(auto nulls_at, put_lists(nulls));
  // Fragment min/max/sum/null count per field.
  ByteWriter fs_w;
  for (size_t i = 0; i < N; ++i) {
    const int k = field_at(i);
    const WriteField* fi = k >= 0 ? &fields_[k] : nullptr;
    ByteVec mn, mx;
    if (i == A && has_min_max[i]) {
      mn = mx = ByteVec(DatatypeSize(s.dimensions[0].type), 0);
    } else if (has_min_max[i] && fi) {
      const bool single = !fi->var && fi->cell_val_num == 1;
      bool first = true;
      for (uint64_t t = 0; t < tile_num; ++t) {
        // Tiles whose cells are all null have no min/max of their own.
        if (has_nulls[i] && nulls[i][t] == tile_cells_[t]) continue;
        const ByteVec& a = mins[i][t];
        const ByteVec& b = maxs[i][t];
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
    const uint8_t zero[8] = {};
    const Num::Kind kind = fi ? LoadNum(fi->type, zero).kind : Num::kNone;
    for (uint64_t v : sums[i]) {
      Num x;
      x.kind = kind;
      std::memcpy(&x.i, &v, 8);
      x.u = v;
      std::memcpy(&x.d, &v, 8);
      sum = AddSum(sum, x);
    }
    for (uint64_t v : nulls[i]) nc += v;
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
  f.Put<uint64_t>(tile_cells_.back());  // last tile cell num
  f.Put<uint8_t>(0);                    // has timestamps
  f.Put<uint8_t>(0);                    // has delete meta
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
  AppendBytes(meta, f.bytes());
  return WriteWholeFile(dir_ / "__fragment_metadata.tdb", meta);
}

Status WriteDenseTiles(FragmentFileWriter& w, const std::vector<Range>& sub, CellSource& src) {
  const ArraySchema& s = w.schema();
  const size_t D = s.dimensions.size();
  const std::vector<WriteField>& fields = w.fields();
  ASSIGN_OR_RETURN(DenseTileGrid grid, ComputeDenseTileGrid(s, sub));
  std::vector<__int128> lo(D), hi(D), dom_lo(D);
  for (size_t d = 0; d < D; ++d) {
    ASSIGN_OR_RETURN(lo[d], DimensionValue(s.dimensions[d].type, sub[d].lo));
    ASSIGN_OR_RETURN(hi[d], DimensionValue(s.dimensions[d].type, sub[d].hi));
    ASSIGN_OR_RETURN(dom_lo[d], DimensionValue(s.dimensions[d].type, s.dimensions[d].domain.lo));
  }
  // Dimensions from the slowest to the fastest, in tile and in cell order.
  auto dims_in = [&](Layout order) {
    std::vector<size_t> v(D);
    for (size_t d = 0; d < D; ++d) v[d] = order == Layout::kColMajor ? D - 1 - d : d;
    return v;
  };
  const std::vector<size_t> tile_dims = dims_in(s.tile_order), cell_dims = dims_in(s.cell_order);
  const size_t fast = cell_dims[D - 1];
  auto append_fill = [&](uint64_t count) {
    std::vector<TileBuf>& tiles = w.tile();
    for (size_t k = 0; k < fields.size(); ++k) {
      for (uint64_t i = 0; i < count; ++i) {
        AppendCell(tiles[k], fields[k], fields[k].fill, fields[k].fill_validity);
      }
    }
  };
  std::vector<uint64_t> ti(D, 0);  // tile index per dimension, odometer in tile order
  std::vector<__int128> tlo(D), thi(D), c(D);
  for (uint64_t t = 0; t < grid.tile_num; ++t) {
    for (size_t d = 0; d < D; ++d) {
      tlo[d] = dom_lo[d] + static_cast<__int128>(grid.first_tile[d] + ti[d]) * grid.extents[d];
      thi[d] = tlo[d] + grid.extents[d] - 1;
      c[d] = tlo[d];
    }
    // Lines along the fastest cell dimension; the others as an odometer.
    const __int128 run_lo = std::max(tlo[fast], lo[fast]), run_hi = std::min(thi[fast], hi[fast]);
    for (;;) {
      bool inside = true;
      for (size_t d = 0; d < D; ++d) {
        if (d != fast && (c[d] < lo[d] || c[d] > hi[d])) inside = false;
      }
      if (!inside || run_lo > run_hi) {
        append_fill(grid.extents[fast]);
      } else {
        append_fill(static_cast<uint64_t>(run_lo - tlo[fast]));
        c[fast] = run_lo;
        TRY(src.AppendRun(c.data(), fast, static_cast<uint64_t>(run_hi - run_lo + 1), w.tile()));
        c[fast] = tlo[fast];
        append_fill(static_cast<uint64_t>(thi[fast] - run_hi));
      }
      size_t p = D - 1;
      bool done = true;
      while (p-- > 0) {
        size_t d = cell_dims[p];
        if (++c[d] <= thi[d]) {
          done = false;
          break;
        }
        c[d] = tlo[d];
      }
      if (done) break;
    }
    TRY(w.FlushTile());
    for (size_t p = D; p-- > 0;) {
      size_t d = tile_dims[p];
      if (++ti[d] < grid.tiles_per_dim[d]) break;
      ti[d] = 0;
    }
  }
  return Ok();
}

Result<std::string> WriteStreamedFragment(
    const std::string& array_dir, const ArraySchema& schema, uint64_t t1, uint64_t t2,
    const std::vector<Range>& subarray, const std::function<Status(FragmentFileWriter&)>& produce) {
  if (schema.name.empty()) return Error::InvalidArgument("the schema has no file name");
  if (t1 > t2) return Error::InvalidArgument(fmt::format("timestamps {} > {}", t1, t2));
  std::string name = NewTimestampedName(t1, t2, kWriteFormatVersion);
  fs::path root(array_dir);
  fs::path dir = root / "__fragments" / name;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::Io(fmt::format("cannot create {}: {}", dir.string(), ec.message()));
  fs::create_directories(root / "__commits", ec);
  Status st = [&]() -> Status {
    ASSIGN_OR_RETURN(std::unique_ptr<FragmentFileWriter> w,
                     FragmentFileWriter::Open(dir, schema, subarray));
    TRY(produce(*w));
    TRY(w->Finish());
    return WriteWholeFile(root / "__commits" / (name + ".wrt"), {});
  }();
  if (st.ok()) return name;
  fs::remove_all(dir, ec);
  return st.error();
}

}  // namespace tiledbfs::core
