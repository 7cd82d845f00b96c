// SortSparseCells (packed radix path and comparator path) against a
// straightforward reference: std::sort with CompareValues on every
// dimension, then newest first, then dedup.
#include "core/read/sparse_order.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <set>

#include "core/read/coords.h"
#include "core/read/sparse_index.h"

namespace tiledbfs::core {
namespace {

// Owns the decoded tiles an OrderInput points into.
struct Fixture {
  std::vector<std::unique_ptr<DecodedTile>> owned;
  OrderInput in;
  std::vector<uint64_t> cells;  // every cell, ascending ordinals

  DecodedTile* Own(DecodedTile t) {
    owned.push_back(std::make_unique<DecodedTile>(std::move(t)));
    return owned.back().get();
  }
};

template <class T>
DecodedTile FixedTile(const std::vector<T>& v) {
  DecodedTile t;
  t.cell_num = v.size();
  t.cell_size = sizeof(T);
  t.fixed.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(t.fixed.data(), v.data(), t.fixed.size());
  return t;
}

DecodedTile VarTile(const std::vector<std::string>& v) {
  DecodedTile t;
  t.cell_num = v.size();
  t.offsets.push_back(0);
  for (const auto& s : v) {
    t.var.insert(t.var.end(), s.begin(), s.end());
    t.offsets.push_back(t.var.size());
  }
  return t;
}

// fragments x tiles of random sizes; coordinates from gen(rng) per
// dimension; every third fragment has per-cell timestamps.
template <class T, class Gen>
Fixture MakeRandom(uint32_t seed, Datatype type, size_t dims, int fragments, Gen gen, bool dedup) {
  std::mt19937_64 rng(seed);
  Fixture f;
  f.in.types.assign(dims, type);
  f.in.dedup = dedup;
  uint64_t max_cells = 0;
  struct Pending {
    OrderTile tile;
    uint64_t cells;
  };
  std::vector<Pending> pending;
  for (int fi = 0; fi < fragments; ++fi) {
    int tiles = 1 + static_cast<int>(rng() % 3);
    bool stamped = fi % 3 == 2;
    for (int t = 0; t < tiles; ++t) {
      uint64_t n = 1 + rng() % 40;
      max_cells = std::max(max_cells, n);
      OrderTile ot;
      ot.fragment = static_cast<uint32_t>(fi);
      ot.tile = static_cast<uint64_t>(t);
      ot.stamp = 10 + static_cast<uint64_t>(fi) / 2;  // pairs of fragments share a stamp
      for (size_t d = 0; d < dims; ++d) {
        std::vector<T> v(n);
        for (auto& x : v) x = gen(rng);
        ot.dims.push_back(f.Own(FixedTile(v)));
      }
      if (stamped) {
        std::vector<uint64_t> s(n);
        for (auto& x : s) x = 5 + rng() % 20;
        ot.stamps = f.Own(FixedTile(s));
      }
      pending.push_back({ot, n});
    }
  }
  f.in.pos_bits = BitsFor(max_cells);
  for (size_t g = 0; g < pending.size(); ++g) {
    f.in.tiles.push_back(pending[g].tile);
    for (uint64_t p = 0; p < pending[g].cells; ++p) {
      f.cells.push_back((uint64_t{g} << f.in.pos_bits) | p);
    }
  }
  return f;
}

// The reference order, written out from the definition.
std::vector<uint64_t> Reference(const OrderInput& in, std::vector<uint64_t> cells) {
  const uint64_t mask = (uint64_t{1} << in.pos_bits) - 1;
  auto tile = [&](uint64_t o) -> const OrderTile& { return in.tiles[o >> in.pos_bits]; };
  auto stamp = [&](uint64_t o) {
    const OrderTile& t = tile(o);
    if (!t.stamps) return t.stamp;
    uint64_t s;
    std::memcpy(&s, t.stamps->fixed.data() + (o & mask) * 8, 8);
    return s;
  };
  auto coords = [&](uint64_t a, uint64_t b) {
    for (size_t d = 0; d < in.types.size(); ++d) {
      int c = CompareValues(in.types[d], tile(a).dims[d]->cell(a & mask),
                            tile(b).dims[d]->cell(b & mask));
      if (c != 0) return c;
    }
    return 0;
  };
  std::sort(cells.begin(), cells.end(), [&](uint64_t a, uint64_t b) {
    int c = coords(a, b);
    if (c != 0) return c < 0;
    if (stamp(a) != stamp(b)) return stamp(a) > stamp(b);
    if (tile(a).fragment != tile(b).fragment) return tile(a).fragment > tile(b).fragment;
    if ((a & mask) != (b & mask)) return (a & mask) > (b & mask);
    return (a >> in.pos_bits) > (b >> in.pos_bits);
  });
  if (in.dedup) {
    std::vector<uint64_t> out;
    for (uint64_t c : cells) {
      if (out.empty() || coords(out.back(), c) != 0) out.push_back(c);
    }
    return out;
  }
  return cells;
}

void ExpectBothPathsMatch(const Fixture& f, bool expect_packed) {
  std::vector<uint64_t> want = Reference(f.in, f.cells);
  std::vector<uint64_t> got = f.cells;
  bool packed = false;
  SortSparseCells(f.in, got, &packed);
  EXPECT_EQ(packed, expect_packed);
  EXPECT_EQ(got, want);
  std::vector<uint64_t> generic = f.cells;
  SortSparseCellsGeneric(f.in, generic);
  EXPECT_EQ(generic, want);
}

TEST(SparseOrderTest, RandomInt64WithNegativesAndDuplicates) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    for (bool dedup : {true, false}) {
      auto gen = [](std::mt19937_64& r) { return static_cast<int64_t>(r() % 21) - 10; };
      Fixture f = MakeRandom<int64_t>(seed, Datatype::kInt64, 2, 1 + seed % 6, gen, dedup);
      SCOPED_TRACE(::testing::Message() << "seed " << seed << " dedup " << dedup);
      ExpectBothPathsMatch(f, true);
    }
  }
}

TEST(SparseOrderTest, RandomSmallTypesThreeDims) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto g8 = [](std::mt19937_64& r) { return static_cast<int8_t>(r() % 256); };
    Fixture a = MakeRandom<int8_t>(seed, Datatype::kInt8, 3, 4, g8, true);
    ExpectBothPathsMatch(a, true);
    auto gu16 = [](std::mt19937_64& r) { return static_cast<uint16_t>(r() % 7 * 9000); };
    Fixture b = MakeRandom<uint16_t>(seed, Datatype::kUInt16, 3, 5, gu16, false);
    ExpectBothPathsMatch(b, true);
    auto g32 = [](std::mt19937_64& r) { return static_cast<int32_t>(r() % 5) - 100000; };
    Fixture c = MakeRandom<int32_t>(seed, Datatype::kInt32, 1, 3, g32, true);
    ExpectBothPathsMatch(c, true);
  }
}

TEST(SparseOrderTest, RandomDatetimeAndUint64) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto g = [](std::mt19937_64& r) { return static_cast<int64_t>(r() % 9) * -1000000007LL; };
    Fixture a = MakeRandom<int64_t>(seed, Datatype::kDatetimeMs, 1, 4, g, true);
    ExpectBothPathsMatch(a, true);
    auto gu = [](std::mt19937_64& r) { return UINT64_MAX - r() % 13; };
    Fixture b = MakeRandom<uint64_t>(seed, Datatype::kUInt64, 2, 4, gu, seed % 2 == 0);
    ExpectBothPathsMatch(b, true);
  }
}

TEST(SparseOrderTest, WideRangesFallBackToComparator) {
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    auto g = [](std::mt19937_64& r) {
      return r() % 2 ? INT64_MIN + static_cast<int64_t>(r() % 3)
                     : INT64_MAX - static_cast<int64_t>(r() % 3);
    };
    Fixture f = MakeRandom<int64_t>(seed, Datatype::kInt64, 2, 3, g, true);
    ExpectBothPathsMatch(f, false);
  }
}

TEST(SparseOrderTest, FloatsUseComparator) {
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    auto g = [](std::mt19937_64& r) { return static_cast<double>(r() % 7) - 3.5; };
    Fixture f = MakeRandom<double>(seed, Datatype::kFloat64, 2, 3, g, seed % 2 == 0);
    ExpectBothPathsMatch(f, false);
  }
}

TEST(SparseOrderTest, NegativeZeroIsAnotherCellAsInTileDB) {
  // Three fragments write (x, 1) with x = -0.0, 0.0 and 0.0 (newest last).
  // -0.0 and 0.0 sort as equal; TileDB drops a cell only when its bytes are
  // those of the cell kept before it (its read of a -0.0 and a newer 0.0
  // keeps both, the 0.0 first). Newest first, the newest 0.0 stays, the
  // older 0.0 goes and the -0.0 after it stays. (TileDB's own order among
  // equal coordinates is its unstable sort's: with three such cells it may
  // keep both 0.0.)
  Fixture f;
  f.in.types = {Datatype::kFloat64, Datatype::kInt32};
  f.in.pos_bits = BitsFor(2);
  const std::vector<std::vector<double>> x = {{-0.0, 2.0}, {0.0, -1.0}, {0.0, 3.0}};
  for (uint32_t k = 0; k < 3; ++k) {
    OrderTile t;
    t.fragment = k;
    t.stamp = 1 + k;
    t.dims = {f.Own(FixedTile(x[k])), f.Own(FixedTile(std::vector<int32_t>{1, 1}))};
    f.in.tiles.push_back(t);
    for (uint64_t p = 0; p < 2; ++p) f.cells.push_back((uint64_t{k} << f.in.pos_bits) | p);
  }
  auto ordinal = [&](uint64_t fragment, uint64_t pos) { return fragment << f.in.pos_bits | pos; };
  std::vector<uint64_t> got = f.cells;
  SortSparseCells(f.in, got);
  EXPECT_EQ(got, (std::vector<uint64_t>{ordinal(1, 1), ordinal(2, 0), ordinal(0, 0), ordinal(0, 1),
                                        ordinal(2, 1)}));
  f.in.dedup = false;  // duplicates allowed: every cell, newest first among equals
  got = f.cells;
  SortSparseCells(f.in, got);
  EXPECT_EQ(got, (std::vector<uint64_t>{ordinal(1, 1), ordinal(2, 0), ordinal(1, 0), ordinal(0, 0),
                                        ordinal(0, 1), ordinal(2, 1)}));
}

TEST(SparseOrderTest, StringDimensionUsesComparator) {
  Fixture f;
  f.in.types = {Datatype::kStringAscii, Datatype::kInt32};
  f.in.pos_bits = BitsFor(4);
  std::vector<std::vector<std::string>> s = {{"b", "a", "", "ab"}, {"a", "b", "ab", "abc"}};
  std::vector<std::vector<int32_t>> i = {{1, 2, 3, 4}, {2, 1, 3, 0}};
  for (uint32_t k = 0; k < 2; ++k) {
    OrderTile t;
    t.fragment = k;
    t.stamp = 1 + k;
    t.dims = {f.Own(VarTile(s[k])), f.Own(FixedTile(i[k]))};
    f.in.tiles.push_back(t);
    for (uint64_t p = 0; p < 4; ++p) f.cells.push_back((uint64_t{k} << f.in.pos_bits) | p);
  }
  ExpectBothPathsMatch(f, false);
}

// Fragments whose cells come in order (each its own run, as a fragment of
// a string dimension alone does): merged, not sorted, with the same result,
// duplicates across fragments included; and the same cells shuffled (too
// many runs) take the sort.
TEST(SparseOrderTest, RunsInOrderAreMergedToTheSameOrder) {
  for (bool shuffled : {false, true}) {
    std::mt19937_64 rng(7);
    Fixture f;
    f.in.types = {Datatype::kStringAscii, Datatype::kInt32};
    f.in.pos_bits = BitsFor(300);
    f.in.dedup = true;
    for (uint32_t k = 0; k < 5; ++k) {
      // Distinct within the fragment, as a fragment's cells are.
      std::set<std::pair<std::string, int32_t>> distinct;
      while (distinct.size() < 600) {
        std::string str(1 + rng() % 3, 'a');
        for (char& ch : str) ch = static_cast<char>('a' + rng() % 4);
        distinct.emplace(std::move(str), static_cast<int32_t>(rng() % 20));
      }
      std::vector<std::pair<std::string, int32_t>> cells(distinct.begin(), distinct.end());
      if (shuffled) std::shuffle(cells.begin(), cells.end(), rng);
      for (uint64_t t = 0; t < 2; ++t) {
        std::vector<std::string> strs;
        std::vector<int32_t> nums;
        for (size_t c = t * 300; c < (t + 1) * 300; ++c) {
          strs.push_back(cells[c].first);
          nums.push_back(cells[c].second);
        }
        OrderTile ot;
        ot.fragment = k;
        ot.tile = t;
        ot.stamp = 1 + k;
        ot.dims = {f.Own(VarTile(strs)), f.Own(FixedTile(nums))};
        const uint64_t g = f.in.tiles.size();
        f.in.tiles.push_back(ot);
        for (uint64_t p = 0; p < 300; ++p) f.cells.push_back((g << f.in.pos_bits) | p);
      }
    }
    SCOPED_TRACE(shuffled ? "shuffled" : "in runs");
    ExpectBothPathsMatch(f, false);
  }
}

TEST(SparseOrderTest, EmptyAndSingleCoordinate) {
  Fixture f;
  f.in.types = {Datatype::kInt64};
  f.in.pos_bits = BitsFor(3);
  OrderTile t;
  t.dims = {f.Own(FixedTile(std::vector<int64_t>{7, 7, 7}))};
  f.in.tiles.push_back(t);
  std::vector<uint64_t> none;
  SortSparseCells(f.in, none);
  EXPECT_TRUE(none.empty());
  f.cells = {0, 1, 2};
  ExpectBothPathsMatch(f, true);  // dedup: the last position wins
  std::vector<uint64_t> got = f.cells;
  SortSparseCells(f.in, got);
  EXPECT_EQ(got, std::vector<uint64_t>{2});
}

TEST(SparseOrderTest, LargeInputTakesTheInPlacePath) {
  // Over 2^16 cells with keys wider than one digit: RadixSortKeys sorts in
  // place by the top digit, then bucket by bucket.
  std::mt19937_64 rng(11);
  Fixture f;
  f.in.types = {Datatype::kInt64, Datatype::kInt32};
  f.in.dedup = true;
  const uint64_t n = 30000;
  f.in.pos_bits = BitsFor(n);
  for (uint32_t fi = 0; fi < 3; ++fi) {
    for (uint64_t t = 0; t < 2; ++t) {
      std::vector<int64_t> r(n);
      std::vector<int32_t> c(n);
      for (auto& x : r) x = static_cast<int64_t>(rng() % 1001) - 500;
      for (auto& x : c) x = static_cast<int32_t>(rng() % 2001) - 1000;
      OrderTile ot;
      ot.fragment = fi;
      ot.tile = t;
      ot.stamp = 100 + fi;
      ot.dims = {f.Own(FixedTile(r)), f.Own(FixedTile(c))};
      const uint64_t g = f.in.tiles.size();
      f.in.tiles.push_back(ot);
      for (uint64_t p = 0; p < n; ++p) f.cells.push_back((g << f.in.pos_bits) | p);
    }
  }
  ExpectBothPathsMatch(f, true);
  f.in.dedup = false;
  ExpectBothPathsMatch(f, true);
}

TEST(SparseOrderTest, RadixSortKeysSortsByTheKeyBits) {
  std::mt19937_64 rng(5);
  for (int width : {5, 12, 29, 40}) {
    std::vector<uint64_t> v(200000);
    for (auto& x : v) x = rng() & ((uint64_t{1} << (width + 7)) - 1);
    std::vector<uint64_t> got = v;
    RadixSortKeys(got, 7, 7 + width);
    auto key = [&](uint64_t x) { return x >> 7; };
    EXPECT_TRUE(std::is_sorted(got.begin(), got.end(), [&](uint64_t a, uint64_t b) {
      return key(a) < key(b);
    })) << width;
    std::sort(v.begin(), v.end());
    std::sort(got.begin(), got.end());
    EXPECT_EQ(got, v) << width;  // the same values
  }
}

TEST(SparseOrderTest, KeyPackingRoundTripsCoordinates) {
  for (Datatype t : {Datatype::kInt8, Datatype::kUInt16, Datatype::kInt32, Datatype::kInt64,
                     Datatype::kUInt64, Datatype::kDatetimeMs}) {
    ASSERT_TRUE(Packable(t));
    for (int64_t x : {int64_t{-128}, int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{127}}) {
      uint8_t in[8] = {}, out[8] = {};
      std::memcpy(in, &x, DatatypeSize(t));
      if ((t == Datatype::kUInt16 || t == Datatype::kUInt64) && x < 0) continue;
      FromOrdered(t, OrderedValue(t, in), out);
      EXPECT_EQ(std::memcmp(in, out, DatatypeSize(t)), 0);
    }
  }
  EXPECT_FALSE(Packable(Datatype::kFloat64));
  EXPECT_FALSE(Packable(Datatype::kStringAscii));
  EXPECT_LT(OrderedValue(Datatype::kInt32, reinterpret_cast<const uint8_t*>("\xff\xff\xff\xff")),
            OrderedValue(Datatype::kInt32, reinterpret_cast<const uint8_t*>("\0\0\0\0")));
  auto k = KeyPacking::Plan({10, 0}, {20, 7}, 5);  // 4 + 3 key bits
  ASSERT_TRUE(k.has_value());
  EXPECT_EQ(k->key_bits, 7);
  uint64_t packed = (((uint64_t{13} - 10) << 3 | 6) << 5) | 17;
  EXPECT_EQ(k->Coordinate(packed, 0), 13u);
  EXPECT_EQ(k->Coordinate(packed, 1), 6u);
  EXPECT_EQ(k->OrdinalOf(packed), 17u);
  EXPECT_FALSE(KeyPacking::Plan({0, 0}, {UINT64_MAX, 1}, 0).has_value());
  EXPECT_FALSE(KeyPacking::Plan({0}, {uint64_t{1} << 40}, 30).has_value());
}

TEST(SparseOrderTest, RadixSortBitsIsStable) {
  std::mt19937_64 rng(7);
  for (int lo : {0, 3, 20}) {
    for (int width : {1, 11, 12, 23, 40}) {
      if (lo + width > 64) continue;
      std::vector<uint64_t> v(5000);
      for (auto& x : v)
        x = rng() & (width + lo >= 64 ? ~uint64_t{0} : (uint64_t{1} << (lo + width + 2)) - 1);
      std::vector<uint64_t> want = v;
      auto key = [&](uint64_t x) {
        return (x >> lo) & (width >= 64 ? ~uint64_t{0} : (uint64_t{1} << width) - 1);
      };
      std::stable_sort(want.begin(), want.end(),
                       [&](uint64_t a, uint64_t b) { return key(a) < key(b); });
      std::vector<uint64_t> scratch;
      RadixSortBits(v, lo, lo + width, scratch);
      EXPECT_EQ(v, want) << "lo " << lo << " width " << width;
    }
  }
}

// Distinct ascending values cut into segments of `seg(rng)` values, each
// segment appended to a random run of `runs` other than the last one's, the
// runs then concatenated in a random order: storage order as a merge sees
// it. Neighbouring values differ by 1 to 5.
template <class Seg>
std::vector<uint64_t> Interleaved(uint32_t seed, size_t n, size_t runs, Seg seg) {
  std::mt19937_64 rng(seed);
  std::vector<std::vector<uint64_t>> r(runs);
  uint64_t v = rng() % 1000;
  size_t made = 0;
  for (size_t k = 0; made < n; k = runs < 2 ? 0 : (k + 1 + rng() % (runs - 1)) % runs) {
    const size_t len = std::min(n - made, static_cast<size_t>(seg(rng)));
    for (size_t i = 0; i < len; ++i, ++made) {
      v += 1 + rng() % 5;
      r[k].push_back(v);
    }
  }
  std::shuffle(r.begin(), r.end(), rng);
  std::vector<uint64_t> out;
  for (const auto& x : r) out.insert(out.end(), x.begin(), x.end());
  return out;
}

// MergeSortedRuns on v: whether it merged, and if it did, that the result
// is v sorted; if it declined, that v is untouched.
bool Merged(const std::vector<uint64_t>& v) {
  std::vector<uint64_t> got = v;
  const bool merged = MergeSortedRuns(got);
  std::vector<uint64_t> want = v;
  if (merged) std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
  return merged;
}

TEST(SparseOrderTest, MergeSortedRunsMergesLongSegments) {
  for (uint32_t seed = 1; seed <= 10; ++seed) {
    SCOPED_TRACE(seed);
    // A few hundred runs of segments of 40 to 120 values, as the benchmark's
    // fragments x space tiles.
    auto seg = [](std::mt19937_64& r) { return 40 + r() % 81; };
    EXPECT_TRUE(Merged(Interleaved(seed, 200000 + seed, 300, seg)));
    EXPECT_TRUE(Merged(Interleaved(seed, 5000, 2, seg)));
    // Very uneven segments: galloping far in one run.
    auto uneven = [](std::mt19937_64& r) { return r() % 4 == 0 ? 5000 : 1 + r() % 8; };
    EXPECT_TRUE(Merged(Interleaved(seed, 100000, 7, uneven)));
  }
}

TEST(SparseOrderTest, MergeSortedRunsDeclinesShortSegments) {
  auto one = [](std::mt19937_64&) { return 1; };
  auto few = [](std::mt19937_64& r) { return 1 + r() % 8; };
  for (uint32_t seed = 1; seed <= 5; ++seed) {
    SCOPED_TRACE(seed);
    EXPECT_FALSE(Merged(Interleaved(seed, 100000, 2, one)));
    EXPECT_FALSE(Merged(Interleaved(seed, 100000, 300, few)));
  }
}

TEST(SparseOrderTest, MergeSortedRunsSortedReverseRandom) {
  std::vector<uint64_t> v(100000);
  for (size_t i = 0; i < v.size(); ++i) v[i] = 3 * i + 1;
  EXPECT_TRUE(Merged(v));  // one run: nothing to do
  std::vector<uint64_t> none, single = {5};
  EXPECT_TRUE(Merged(none));
  EXPECT_TRUE(Merged(single));
  std::reverse(v.begin(), v.end());
  EXPECT_FALSE(Merged(v));  // a run per value
  std::mt19937_64 rng(3);
  std::shuffle(v.begin(), v.end(), rng);
  EXPECT_FALSE(Merged(v));
  // A sorted vector with one value out of place: three runs.
  std::sort(v.begin(), v.end());
  std::swap(v[500], v[70000]);
  EXPECT_TRUE(Merged(v));
}

TEST(SparseOrderTest, MergeSortedRunsThresholds) {
  // n = 3200 allows 100 segments (one per 32 values) and so 100 runs.
  const size_t n = 3200;
  auto len = [](size_t l) { return [l](std::mt19937_64&) { return l; }; };
  // Two runs alternating in segments of 32: 100 segments; of 31: 104.
  EXPECT_TRUE(Merged(Interleaved(1, n, 2, len(32))));
  EXPECT_FALSE(Merged(Interleaved(1, n, 2, len(31))));
  // Runs that do not interleave, each one segment, in descending order.
  auto blocks = [&](size_t runs) {
    std::vector<uint64_t> v;
    for (size_t r = runs; r-- > 0;) {
      const size_t from = r * n / runs, to = (r + 1) * n / runs;
      for (size_t i = from; i < to; ++i) v.push_back(i);
    }
    return v;
  };
  EXPECT_TRUE(Merged(blocks(100)));
  EXPECT_FALSE(Merged(blocks(101)));
  // The merge writes blocks of 1024 values in place: sizes below, at and
  // around multiples of a block, with runs that are reversed blocks (output
  // blocks displace each other in cycles) and interleaved.
  for (size_t m : {size_t{64}, size_t{1000}, size_t{1024}, size_t{2048}, size_t{7 * 1024 - 1},
                   size_t{7 * 1024 + 1}, size_t{65536}}) {
    SCOPED_TRACE(m);
    std::vector<uint64_t> v;
    for (size_t r = 2; r-- > 0;) {
      for (size_t i = r * m / 2; i < (r + 1) * m / 2; ++i) v.push_back(i);
    }
    EXPECT_TRUE(Merged(v));
    auto seg = [](std::mt19937_64& r) { return 32 + r() % 200; };
    const bool merged = Merged(Interleaved(static_cast<uint32_t>(m), m, 2 + m % 5, seg));
    if (m >= 1000) {
      EXPECT_TRUE(merged);
    }
  }
  // Fewer than 32 values allow no segment: only sorted input passes.
  EXPECT_FALSE(Merged({1, 3, 2}));
  EXPECT_TRUE(Merged({1, 2, 3}));
}

// Fragments as TileDB writes them: each in global order (space tiles of
// tile_rows x tile_cols, row-major, cells row-major within each), in data
// tiles of `capacity` cells. Fragment f holds each cell of rows [0, rows)
// and columns cols[f] with probability `density`; every third fragment has
// per-cell timestamps, and pairs of fragments share a stamp.
Fixture MakeGlobalOrder(uint32_t seed, int64_t rows, int64_t tile_rows, int64_t tile_cols,
                        const std::vector<std::pair<int64_t, int64_t>>& cols, double density,
                        uint64_t capacity, bool dedup) {
  std::mt19937_64 rng(seed);
  std::bernoulli_distribution keep(density);
  Fixture f;
  f.in.types = {Datatype::kInt64, Datatype::kInt64};
  f.in.dedup = dedup;
  f.in.pos_bits = BitsFor(capacity);
  for (uint32_t fi = 0; fi < cols.size(); ++fi) {
    std::vector<int64_t> r, c;
    for (int64_t tr = 0; tr < rows; tr += tile_rows) {
      for (int64_t tc = cols[fi].first / tile_cols * tile_cols; tc < cols[fi].second;
           tc += tile_cols) {
        for (int64_t i = tr; i < std::min(rows, tr + tile_rows); ++i) {
          for (int64_t j = std::max(tc, cols[fi].first);
               j < std::min(tc + tile_cols, cols[fi].second); ++j) {
            if (keep(rng)) r.push_back(i), c.push_back(j);
          }
        }
      }
    }
    for (size_t at = 0; at < r.size(); at += capacity) {
      const size_t to = std::min(r.size(), at + capacity);
      OrderTile ot;
      ot.fragment = fi;
      ot.tile = at / capacity;
      ot.stamp = 10 + fi / 2;
      ot.dims = {f.Own(FixedTile(std::vector<int64_t>(r.data() + at, r.data() + to))),
                 f.Own(FixedTile(std::vector<int64_t>(c.data() + at, c.data() + to)))};
      if (fi % 3 == 2) {
        std::vector<uint64_t> s(to - at);
        for (auto& x : s) x = 5 + rng() % 20;
        ot.stamps = f.Own(FixedTile(s));
      }
      const uint64_t g = f.in.tiles.size();
      f.in.tiles.push_back(ot);
      for (uint64_t p = 0; p < to - at; ++p) f.cells.push_back((g << f.in.pos_bits) | p);
    }
  }
  return f;
}

// The fixture's cells packed as BuildSparseIndexPacked packs them.
std::vector<uint64_t> PackCells(const Fixture& f, KeyPacking& k) {
  const size_t dims = f.in.types.size();
  const uint64_t mask = (uint64_t{1} << f.in.pos_bits) - 1;
  auto value = [&](uint64_t o, size_t d) {
    return OrderedValue(f.in.types[d],
                        f.in.tiles[o >> f.in.pos_bits].dims[d]->cell(o & mask).data());
  };
  std::vector<uint64_t> lo(dims, UINT64_MAX), hi(dims, 0);
  for (uint64_t o : f.cells) {
    for (size_t d = 0; d < dims; ++d) {
      lo[d] = std::min(lo[d], value(o, d));
      hi[d] = std::max(hi[d], value(o, d));
    }
  }
  auto plan = KeyPacking::Plan(lo, hi, BitsFor(f.cells.back()));
  EXPECT_TRUE(plan.has_value());
  k = *plan;
  std::vector<uint64_t> packed;
  for (uint64_t o : f.cells) {
    uint64_t key = 0;
    for (size_t d = 0; d < dims; ++d) key |= (value(o, d) - k.lo[d]) << k.shift[d];
    packed.push_back(key << k.ord_bits | o);
  }
  return packed;
}

// SortPackedCells on global-order fragments against the reference, with
// dedup on and off; `merges` is whether the merge path takes them.
void ExpectPackedMatches(Fixture& f, bool merges) {
  KeyPacking k;
  const std::vector<uint64_t> packed = PackCells(f, k);
  std::vector<uint64_t> probe = packed;
  EXPECT_EQ(MergeSortedRuns(probe), merges);
  for (bool dedup : {true, false}) {
    SCOPED_TRACE(::testing::Message() << "dedup " << dedup);
    f.in.dedup = dedup;
    std::vector<uint64_t> got = packed;
    SortPackedCells(f.in, k, got);
    for (uint64_t& c : got) c = k.OrdinalOf(c);
    EXPECT_EQ(got, Reference(f.in, f.cells));
    // The radix path alone gives the same cells.
    std::vector<uint64_t> radix = packed;
    RadixSortKeys(radix, k.ord_bits, k.ord_bits + k.key_bits);
    std::vector<uint64_t> merged = packed;
    if (merges) {
      ASSERT_TRUE(MergeSortedRuns(merged));
      EXPECT_TRUE(std::is_sorted(merged.begin(), merged.end()));
    }
    std::sort(radix.begin(), radix.end());
    std::sort(merged.begin(), merged.end());
    EXPECT_EQ(merged, radix);
  }
}

TEST(SparseOrderTest, GlobalOrderFragmentsMerge) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(seed);
    // Eight fragments side by side, each overlapping the next by 3 columns
    // (duplicate coordinates across fragments), space tiles of 50 x 200:
    // about 130k cells in runs of a fragment's space tiles, a row of a
    // fragment mostly one segment of ~180 cells.
    std::vector<std::pair<int64_t, int64_t>> cols;
    for (int64_t fi = 0; fi < 8; ++fi) cols.emplace_back(fi * 200, fi * 200 + 203);
    Fixture f = MakeGlobalOrder(seed, 90, 50, 200, cols, 0.9, 1000, true);
    ASSERT_GT(f.cells.size(), size_t{1} << 16);
    ExpectPackedMatches(f, true);
  }
}

TEST(SparseOrderTest, GlobalOrderFragmentsOverlappingFallBack) {
  for (uint32_t seed = 1; seed <= 3; ++seed) {
    SCOPED_TRACE(seed);
    // Every fragment over the same columns: their cells alternate one by
    // one in the view order, so the merge gives up and radix sorts.
    std::vector<std::pair<int64_t, int64_t>> cols(6, {0, 300});
    Fixture f = MakeGlobalOrder(seed, 300, 100, 100, cols, 0.2, 1000, true);
    ASSERT_GT(f.cells.size(), size_t{1} << 16);
    ExpectPackedMatches(f, false);
  }
  // Small and dense: two fragments overlapping by 5 columns, space tiles
  // 10 columns wide: about 18 segments a row of 85 cells, fewer than the
  // 32 cells per segment the merge needs.
  Fixture f = MakeGlobalOrder(4, 50, 50, 10, {{0, 40}, {35, 80}}, 1.0, 64, true);
  ExpectPackedMatches(f, false);
  // Tiles 50 wide, an overlap of one column: 3 segments a row of 101 cells
  // (150 for 5050 cells, 157 allowed).
  Fixture g = MakeGlobalOrder(4, 50, 50, 50, {{0, 50}, {49, 100}}, 1.0, 64, true);
  ExpectPackedMatches(g, true);
  // Overlap of two columns: 5 segments a row (250), declined.
  Fixture h = MakeGlobalOrder(4, 50, 50, 50, {{0, 50}, {48, 100}}, 1.0, 64, true);
  ExpectPackedMatches(h, false);
}

}  // namespace
}  // namespace tiledbfs::core
