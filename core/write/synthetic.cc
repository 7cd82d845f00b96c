#include "core/write/synthetic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <set>

#include "core/fragment/dense_tile_grid.h"
#include "core/write/fragment_stream.h"
#include "core/write/fragment_writer.h"

namespace tiledbfs::core {
namespace {

using u128 = unsigned __int128;

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ull;
constexpr uint64_t kKeyStart = 0x243F6A8885A308D3ull;
constexpr uint64_t kValidSalt = 0x5BD1E9955BD1E995ull;
constexpr uint64_t kLengthSalt = 0x27D4EB2F165667C5ull;

// splitmix64's finalizer: a bijective mix of 64 bits.
inline uint64_t Fmix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The key of a cell: its coordinates folded dimension by dimension, each
// coordinate as 64 bits (integers sign- or zero-extended, floats their
// bits, strings their FNV-1a hash).
inline uint64_t FoldKey(uint64_t acc, size_t d, uint64_t bits) {
  return Fmix(acc ^ Fmix(bits + kGolden * (d + 1)));
}

uint64_t Fnv1a(Bytes b) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (uint8_t c : b) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

bool IsIntegerDim(const Dimension& d) {
  return !d.var() && (IsInteger(d.type) || IsDatetime(d.type) || IsTime(d.type));
}

uint64_t CoordBits(const Dimension& d, Bytes c) {
  if (d.var()) return Fnv1a(c);
  if (IsIntegerDim(d)) {
    auto v = DimensionValue(d.type, c);
    return v.ok() ? static_cast<uint64_t>(*v) : 0;
  }
  uint64_t bits = 0;
  std::memcpy(&bits, c.data(), std::min<size_t>(c.size(), 8));
  return bits;
}

// A deterministic stream of pseudo-random numbers.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(Fmix(seed ^ 0x6A09E667F3BCC909ull)) {}
  uint64_t Next() { return Fmix(state_ += kGolden); }
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }

 private:
  uint64_t state_;
};

// How values of a type are made from 64 random bits.
struct ValueKind {
  enum Kind { kFloat64, kFloat32, kText, kBool, kRaw } kind = kRaw;
  uint64_t size = 0;
};

ValueKind KindOf(Datatype t) {
  ValueKind k;
  k.size = DatatypeSize(t);
  if (t == Datatype::kFloat64) {
    k.kind = ValueKind::kFloat64;
  } else if (t == Datatype::kFloat32) {
    k.kind = ValueKind::kFloat32;
  } else if (IsString(t)) {
    k.kind = ValueKind::kText;
  } else if (t == Datatype::kBool) {
    k.kind = ValueKind::kBool;
  }
  return k;
}

// One value: floats uniform in [-1000, 1000), text letters, integers and
// anything else the low bytes of g.
inline void PutValue(const ValueKind& k, uint64_t g, uint8_t* out) {
  switch (k.kind) {
    case ValueKind::kFloat64: {
      const double d = static_cast<double>(g >> 11) * 0x1.0p-53 * 2000.0 - 1000.0;
      std::memcpy(out, &d, 8);
      return;
    }
    case ValueKind::kFloat32: {
      const float f =
          static_cast<float>(static_cast<double>(g >> 11) * 0x1.0p-53 * 2000.0 - 1000.0);
      std::memcpy(out, &f, 4);
      return;
    }
    case ValueKind::kText:
      for (uint64_t i = 0; i < k.size; ++i) {
        out[i] = static_cast<uint8_t>('a' + ((g >> (5 * (i % 12))) & 31) % 26);
      }
      return;
    case ValueKind::kBool:
      out[0] = g & 1;
      return;
    case ValueKind::kRaw:
      std::memcpy(out, &g, std::min<uint64_t>(k.size, 8));
      return;
  }
}

// The values of every attribute of a cell, from its key.
class SyntheticValues {
 public:
  SyntheticValues(const std::vector<WriteField>& fields, size_t attribute_count, uint64_t seed)
      : fields_(fields) {
    for (size_t a = 0; a < attribute_count; ++a) {
      salts_.push_back(Fmix(seed * kGolden + 0xA5A5A5A5ull + a));
      kinds_.push_back(KindOf(fields[a].type));
      text_.push_back(IsString(fields[a].type) || IsBlobLike(fields[a].type));
    }
  }

  // Appends one cell of every attribute to bufs[a] (TileBuf or FieldCells).
  template <class Buf>
  void Append(uint64_t key, std::vector<Buf*>& bufs) {
    for (size_t a = 0; a < salts_.size(); ++a) {
      const WriteField& f = fields_[a];
      Buf& b = *bufs[a];
      const uint64_t h = Fmix(key ^ salts_[a]);
      if (f.nullable) b.validity.push_back(Fmix(h ^ kValidSalt) % 10 != 0);
      const ValueKind& kind = kinds_[a];
      const uint64_t vs = kind.size;
      if (!f.var) {
        const size_t at = b.data.size();
        b.data.resize(at + f.cell_size, 0);
        for (uint32_t k = 0; k < f.cell_val_num; ++k) {
          PutValue(kind, Fmix(h + kGolden * (k + 1)), b.data.data() + at + k * vs);
        }
      } else {
        b.offsets.push_back(b.data.size());
        const uint64_t len = Fmix(h ^ kLengthSalt);
        const bool text = text_[a];
        const uint64_t count = text ? len % 13 : len % 4;
        const size_t at = b.data.size();
        b.data.resize(at + count * vs, 0);
        uint8_t* out = b.data.data() + at;
        if (text && vs == 1) {
          const uint64_t g = Fmix(h + kGolden);
          for (uint64_t i = 0; i < count; ++i) {
            out[i] = static_cast<uint8_t>('a' + ((g >> (5 * i)) & 31) % 26);
          }
        } else {
          for (uint64_t i = 0; i < count; ++i) {
            PutValue(kind, Fmix(h + kGolden * (i + 1)), out + i * vs);
          }
        }
      }
      Count(b);
    }
  }

 private:
  static void Count(TileBuf& b) { ++b.cells; }
  static void Count(FieldCells&) {}

  const std::vector<WriteField>& fields_;
  std::vector<uint64_t> salts_;
  std::vector<ValueKind> kinds_;
  std::vector<bool> text_;  // var cells of 0 to 12 values, else 0 to 3
};

// Dense: the synthetic values of runs of cells.
class SyntheticSource : public CellSource {
 public:
  SyntheticSource(const ArraySchema& s, const std::vector<WriteField>& fields, uint64_t seed)
      : values_(fields, s.attributes.size(), seed), bufs_(fields.size()) {}
  Status AppendRun(const __int128* coords, size_t dim, uint64_t count,
                   std::vector<TileBuf>& tiles) override {
    for (size_t k = 0; k < tiles.size(); ++k) bufs_[k] = &tiles[k];
    const size_t D = dims_;
    for (uint64_t i = 0; i < count; ++i) {
      uint64_t key = kKeyStart;
      for (size_t d = 0; d < D; ++d) {
        __int128 c = coords[d] + (d == dim ? static_cast<__int128>(i) : 0);
        key = FoldKey(key, d, static_cast<uint64_t>(c));
      }
      values_.Append(key, bufs_);
    }
    return Ok();
  }
  void set_dims(size_t d) { dims_ = d; }

 private:
  SyntheticValues values_;
  std::vector<TileBuf*> bufs_;
  size_t dims_ = 0;
};

// Splits n cells between two parts of sizes a and b (a + b >= n): about
// n * a / (a + b), hypergeometric-like spread, always feasible.
uint64_t SplitCount(Rng& rng, uint64_t n, long double a, long double b) {
  const long double total = a + b;
  const uint64_t lo = static_cast<long double>(n) > b ? n - static_cast<uint64_t>(b) : 0;
  const uint64_t hi = static_cast<long double>(n) < a ? n : static_cast<uint64_t>(a);
  if (lo >= hi) return lo;
  const double p = static_cast<double>(a / total);
  uint64_t k = 0;
  if (n <= 32) {
    for (uint64_t i = 0; i < n; ++i) k += rng.Uniform() < p;
  } else {
    double var = static_cast<double>(n) * p * (1 - p);
    if (total > 1) var *= static_cast<double>((total - n) / (total - 1));
    const double u1 = std::max(rng.Uniform(), 0x1.0p-60), u2 = rng.Uniform();
    const double z = std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    const double x = std::round(static_cast<double>(n) * p + z * std::sqrt(std::max(var, 0.0)));
    k = x <= 0 ? 0 : static_cast<uint64_t>(std::min(x, static_cast<double>(n)));
  }
  return std::clamp(k, lo, hi);
}

// The recursive sampler of SampleSparseCells.
class SparseSampler {
 public:
  SparseSampler(const ArraySchema& s, uint64_t seed,
                const std::function<Status(const __int128*)>& emit)
      : D_(s.dimensions.size()), rng_(seed), emit_(emit) {
    for (size_t d = 0; d < D_; ++d) {
      const size_t td = s.tile_order == Layout::kColMajor ? D_ - 1 - d : d;
      const size_t cd = s.cell_order == Layout::kColMajor ? D_ - 1 - d : d;
      order_.push_back(td);
      cell_order_.push_back(cd);
    }
    order_.insert(order_.end(), cell_order_.begin(), cell_order_.end());
    for (const Dimension& dim : s.dimensions) {
      __int128 lo = *DimensionValue(dim.type, dim.domain.lo);
      __int128 hi = *DimensionValue(dim.type, dim.domain.hi);
      dom_lo_.push_back(lo);
      u128 ext = static_cast<u128>(hi - lo) + 1;  // a null extent: one tile
      if (dim.tile_extent) {
        auto e = DimensionValue(dim.type, *dim.tile_extent);
        if (e.ok() && *e > 0) ext = static_cast<u128>(*e);
      }
      ext_.push_back(ext);
    }
  }

  Status Run(std::vector<__int128> lo, std::vector<__int128> hi, uint64_t n, size_t p) {
    if (n == 0) return Ok();
    const size_t P = 2 * D_;
    for (; p < P; ++p) {
      const size_t d = order_[p];
      if (p < D_ ? Tile(d, lo[d]) != Tile(d, hi[d]) : lo[d] != hi[d]) break;
    }
    if (p == P) return emit_(lo.data());  // one cell, n == 1
    if (p >= D_) {
      // Inside one space tile: small boxes are sampled cell by cell.
      long double size = 1;
      for (size_t d = 0; d < D_; ++d) size *= static_cast<long double>(hi[d] - lo[d] + 1);
      if (size <= 4.0L * n + 16) return Enumerate(lo, hi, n, static_cast<uint64_t>(size));
    }
    const size_t d = order_[p];
    __int128 cut;  // the left part ends at cut
    if (p < D_) {
      const u128 tl = Tile(d, lo[d]), th = Tile(d, hi[d]);
      cut = dom_lo_[d] + static_cast<__int128>((tl + (th - tl) / 2 + 1) * ext_[d]) - 1;
    } else {
      cut = lo[d] + (hi[d] - lo[d]) / 2;
    }
    const long double a = static_cast<long double>(cut - lo[d] + 1);
    const long double b = static_cast<long double>(hi[d] - cut);
    long double rest = 1;
    for (size_t e = 0; e < D_; ++e) {
      if (e != d) rest *= static_cast<long double>(hi[e] - lo[e] + 1);
    }
    const uint64_t k = SplitCount(rng_, n, a * rest, b * rest);
    std::vector<__int128> left_hi = hi, right_lo = lo;
    left_hi[d] = cut;
    right_lo[d] = cut + 1;
    TRY(Run(lo, std::move(left_hi), k, p));
    return Run(std::move(right_lo), hi, n - k, p);
  }

 private:
  u128 Tile(size_t d, __int128 x) const { return static_cast<u128>(x - dom_lo_[d]) / ext_[d]; }

  // Selection sampling (Knuth's algorithm S) over the cells of a box inside
  // one space tile, in cell order.
  Status Enumerate(const std::vector<__int128>& lo, const std::vector<__int128>& hi, uint64_t n,
                   uint64_t size) {
    std::vector<__int128> c = lo;
    uint64_t need = n, left = size;
    while (need > 0) {
      if (static_cast<double>(left) * rng_.Uniform() < static_cast<double>(need)) {
        TRY(emit_(c.data()));
        --need;
      }
      --left;
      for (size_t q = D_; q-- > 0;) {
        const size_t d = cell_order_[q];
        if (++c[d] <= hi[d]) break;
        c[d] = lo[d];
      }
    }
    return Ok();
  }

  size_t D_;
  Rng rng_;
  const std::function<Status(const __int128*)>& emit_;
  std::vector<size_t> order_;       // tile order dims, then cell order dims
  std::vector<size_t> cell_order_;  // slowest to fastest
  std::vector<__int128> dom_lo_;
  std::vector<u128> ext_;
};

// A coordinate uniformly in the domain of an integer or float dimension.
ByteVec RandomCoord(const Dimension& d, uint64_t h) {
  ByteVec out(DatatypeSize(d.type), 0);
  if (IsFloat(d.type)) {
    const double u = static_cast<double>(h >> 11) * 0x1.0p-53;
    if (d.type == Datatype::kFloat32) {
      float l, g;
      std::memcpy(&l, d.domain.lo.data(), 4);
      std::memcpy(&g, d.domain.hi.data(), 4);
      float v = std::min(g, static_cast<float>(l + u * (static_cast<double>(g) - l)));
      std::memcpy(out.data(), &v, 4);
      return out;
    }
    double lo, hi;
    std::memcpy(&lo, d.domain.lo.data(), 8);
    std::memcpy(&hi, d.domain.hi.data(), 8);
    double v = std::min(hi, lo + u * (hi - lo));
    std::memcpy(out.data(), &v, 8);
    return out;
  }
  uint64_t lo = 0, hi = 0;
  std::memcpy(&lo, d.domain.lo.data(), out.size());
  std::memcpy(&hi, d.domain.hi.data(), out.size());
  const uint64_t mask = out.size() == 8 ? UINT64_MAX : (uint64_t{1} << (8 * out.size())) - 1;
  const uint64_t width = (hi - lo) & mask;
  const uint64_t v = lo + (width == UINT64_MAX ? h : h % (width + 1));
  std::memcpy(out.data(), &v, out.size());
  return out;
}

std::string RandomWord(uint64_t h) {
  std::string s(h % 13, 'a');
  for (size_t k = 0; k < s.size(); ++k) s[k] = static_cast<char>('a' + (h >> (5 + 3 * k)) % 26);
  return s;
}

// Sparse arrays with a float or string dimension: random distinct cells,
// sorted by WriteFragment.
Result<std::string> WriteUnorderedSparse(const std::string& array_dir, const ArraySchema& s,
                                         uint64_t t, uint64_t seed, uint64_t n) {
  const std::vector<WriteField> fields = FragmentFields(s);
  const size_t A = s.attributes.size(), D = s.dimensions.size();
  WriteBatch batch;
  std::vector<FieldCells*> attr_bufs;
  for (size_t a = 0; a < A; ++a) attr_bufs.push_back(&batch.fields[s.attributes[a].name]);
  SyntheticValues values(fields, A, seed);
  std::set<std::string> seen;  // the coordinates of the cells so far (`key_bytes`)
  Rng rng(seed);
  for (uint64_t i = 0, tries = 0; i < n; ++tries) {
    if (tries > 20 * n + 1000) {
      return Error::InvalidArgument("the domain is too small for that many distinct cells");
    }
    std::string key_bytes;  // each coordinate, then 0xFF
    std::vector<ByteVec> coords;
    uint64_t key = kKeyStart;
    for (size_t d = 0; d < D; ++d) {
      const Dimension& dim = s.dimensions[d];
      const uint64_t h = rng.Next();
      ByteVec c;
      if (dim.var()) {
        std::string w = RandomWord(h);
        c = CopyBytes(AsBytes(w));
      } else {
        c = RandomCoord(dim, h);
      }
      key = FoldKey(key, d, CoordBits(dim, c));
      key_bytes.append(AsStringView(c));
      key_bytes.push_back('\xFF');
      coords.push_back(std::move(c));
    }
    if (!s.allows_dups && !seen.insert(key_bytes).second) continue;
    for (size_t d = 0; d < D; ++d) {
      FieldCells& fc = batch.fields[s.dimensions[d].name];
      if (s.dimensions[d].var()) fc.offsets.push_back(fc.data.size());
      AppendBytes(fc.data, coords[d]);
    }
    values.Append(key, attr_bufs);
    ++i;
  }
  return WriteFragment(array_dir, s, t, batch);
}

ByteVec DimBytes(const Dimension& d, __int128 v) {
  ByteVec out(DatatypeSize(d.type), 0);
  std::memcpy(out.data(), &v, out.size());  // little-endian: the low bytes
  return out;
}

}  // namespace

Status SampleSparseCells(const ArraySchema& s, const std::vector<__int128>& lo,
                         const std::vector<__int128>& hi, uint64_t n, uint64_t seed,
                         const std::function<Status(const __int128*)>& emit) {
  const size_t D = s.dimensions.size();
  if (lo.size() != D || hi.size() != D)
    return Error::InvalidArgument("a box needs every dimension");
  long double size = 1;
  for (size_t d = 0; d < D; ++d) {
    if (!IsIntegerDim(s.dimensions[d])) {
      return Error::InvalidArgument(
          fmt::format("dimension '{}' is not an integer dimension", s.dimensions[d].name));
    }
    if (lo[d] > hi[d]) return Error::InvalidArgument("an empty box");
    size *= static_cast<long double>(hi[d] - lo[d] + 1);
  }
  if (static_cast<long double>(n) > size) {
    return Error::InvalidArgument(
        fmt::format("{} distinct cells asked: a box of {:.0f} cells is too small", n,
                    static_cast<double>(size)));
  }
  SparseSampler sampler(s, seed, emit);
  return sampler.Run(lo, hi, n, 0);
}

Result<std::vector<std::string>> WriteSyntheticFragments(
    const std::string& array_dir, const ArraySchema& s, uint64_t timestamp,
    const SyntheticSpec& spec, const std::function<void(const std::string&)>& on_fragment) {
  const size_t D = s.dimensions.size(), A = s.attributes.size();
  if (spec.fragments == 0) return Error::InvalidArgument("at least one fragment");
  if (spec.cells_min > spec.cells_max) return Error::InvalidArgument("cells: min > max");
  if (timestamp > UINT64_MAX - (spec.fragments - 1)) {
    return Error::InvalidArgument("timestamps past the largest");
  }
  bool integer_dims = true;
  for (const Dimension& d : s.dimensions) integer_dims &= IsIntegerDim(d);
  std::vector<std::string> names;
  auto committed = [&](const std::string& name) {
    names.push_back(name);
    if (on_fragment) on_fragment(name);
  };
  auto cells_of = [&](uint64_t k) {
    const uint64_t span = spec.cells_max - spec.cells_min;
    if (span == 0) return spec.cells_min;
    const uint64_t r = Fmix(spec.seed ^ Fmix(k + 0x1234567ull));
    return spec.cells_min + (span == UINT64_MAX ? r : r % (span + 1));
  };
  if (!integer_dims) {
    if (s.dense()) return Error::Unsupported("dense arrays need integer dimensions");
    if (!spec.subarray.empty()) {
      return Error::InvalidArgument("a subarray needs integer dimensions");
    }
    for (uint64_t k = 0; k < spec.fragments; ++k) {
      const uint64_t n = cells_of(k);
      if (n == 0) return Error::InvalidArgument("a write needs at least one cell");
      ASSIGN_OR_RETURN(
          std::string name,
          WriteUnorderedSparse(array_dir, s, timestamp + k,
                               spec.fragments == 1 ? spec.seed : Fmix(spec.seed + k), n));
      committed(name);
    }
    return names;
  }

  // The box: the subarray or the domain.
  std::vector<__int128> lo(D), hi(D);
  for (size_t d = 0; d < D; ++d) {
    const Dimension& dim = s.dimensions[d];
    ASSIGN_OR_RETURN(__int128 dlo, DimensionValue(dim.type, dim.domain.lo));
    ASSIGN_OR_RETURN(__int128 dhi, DimensionValue(dim.type, dim.domain.hi));
    lo[d] = dlo;
    hi[d] = dhi;
    if (!spec.subarray.empty()) {
      if (spec.subarray.size() != D) {
        return Error::InvalidArgument("the subarray needs a range per dimension");
      }
      ASSIGN_OR_RETURN(lo[d], DimensionValue(dim.type, spec.subarray[d].lo));
      ASSIGN_OR_RETURN(hi[d], DimensionValue(dim.type, spec.subarray[d].hi));
      if (lo[d] > hi[d] || lo[d] < dlo || hi[d] > dhi) {
        return Error::InvalidArgument(
            fmt::format("subarray of '{}' is empty or outside the domain", dim.name));
      }
    }
  }
  const u128 rows = static_cast<u128>(hi[0] - lo[0]) + 1;
  if (spec.fragments > rows) {
    return Error::InvalidArgument(
        fmt::format("{} fragments but only {} rows of '{}' to cut into bands", spec.fragments,
                    static_cast<uint64_t>(rows), s.dimensions[0].name));
  }
  const std::vector<WriteField> fields = FragmentFields(s);
  for (uint64_t k = 0; k < spec.fragments; ++k) {
    std::vector<__int128> blo = lo, bhi = hi;
    blo[0] = lo[0] + static_cast<__int128>(rows * k / spec.fragments);
    bhi[0] = lo[0] + static_cast<__int128>(rows * (k + 1) / spec.fragments) - 1;
    const uint64_t t = timestamp + k;
    std::string name;
    if (s.dense()) {
      std::vector<Range> sub(D);
      for (size_t d = 0; d < D; ++d) {
        sub[d] = Range{DimBytes(s.dimensions[d], blo[d]), DimBytes(s.dimensions[d], bhi[d])};
      }
      ASSIGN_OR_RETURN(name, WriteStreamedFragment(
                                 array_dir, s, t, t, sub, [&](FragmentFileWriter& w) -> Status {
                                   SyntheticSource src(w.schema(), w.fields(), spec.seed);
                                   src.set_dims(D);
                                   return WriteDenseTiles(w, sub, src);
                                 }));
    } else {
      const uint64_t n = cells_of(k);
      if (n == 0) return Error::InvalidArgument("a write needs at least one cell");
      ASSIGN_OR_RETURN(
          name, WriteStreamedFragment(array_dir, s, t, t, {}, [&](FragmentFileWriter& w) -> Status {
            SyntheticValues values(w.fields(), A, spec.seed);
            std::vector<TileBuf>& tiles = w.tile();
            std::vector<TileBuf*> attr_bufs;
            for (size_t a = 0; a < A; ++a) attr_bufs.push_back(&tiles[a]);
            std::vector<uint64_t> sizes(D);
            for (size_t d = 0; d < D; ++d) sizes[d] = DatatypeSize(s.dimensions[d].type);
            auto emit = [&](const __int128* c) -> Status {
              uint64_t key = kKeyStart;
              for (size_t d = 0; d < D; ++d) {
                TileBuf& b = tiles[A + d];
                const size_t at = b.data.size();
                b.data.resize(at + sizes[d], 0);
                std::memcpy(b.data.data() + at, &c[d], sizes[d]);
                ++b.cells;
                key = FoldKey(key, d, static_cast<uint64_t>(c[d]));
              }
              values.Append(key, attr_bufs);
              return w.SparseCellAdded();
            };
            // The selection differs per fragment; the values do not.
            return SampleSparseCells(s, blo, bhi, n, Fmix(spec.seed ^ Fmix(k)), emit);
          }));
    }
    committed(name);
  }
  return names;
}

}  // namespace tiledbfs::core
