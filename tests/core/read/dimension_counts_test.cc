// CountDimensionValues: how many cells of a packed sparse index hold each
// interval of a dimension's values, against a look at every cell, on
// indexes with long and short runs, duplicates and dimensions of one value.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/read/cell_index.h"
#include "core/read/packed_index.h"
#include "core/read/sparse_index.h"

namespace tiledbfs::core {
namespace {

// A packed index over cells whose coordinates (OrderedValues) are
// coords[i], in coordinate order; each cell's ordinal is its place in
// `coords`.
CellIndex PackedIndexOf(const std::vector<std::vector<uint64_t>>& coords) {
  const size_t dims = coords.front().size();
  std::vector<uint64_t> lo(dims, UINT64_MAX), hi(dims, 0);
  for (const auto& c : coords) {
    for (size_t d = 0; d < dims; ++d) {
      lo[d] = std::min(lo[d], c[d]);
      hi[d] = std::max(hi[d], c[d]);
    }
  }
  const int ord_bits = BitsFor(coords.size() - 1);
  std::optional<KeyPacking> k = KeyPacking::Plan(lo, hi, ord_bits);
  CellIndex index;
  if (!k) {
    ADD_FAILURE() << "the coordinates and ordinals do not pack";
    return index;
  }
  for (size_t i = 0; i < coords.size(); ++i) {
    uint64_t key = 0;
    for (size_t d = 0; d < dims; ++d) key |= (coords[i][d] - k->lo[d]) << k->shift[d];
    index.packed.push_back(k->key_bits > 0 ? key << ord_bits | i : i);
  }
  std::sort(index.packed.begin(), index.packed.end());
  index.cell_count = index.packed.size();
  index.packing = std::move(k);
  return index;
}

// The same counts, cell by cell.
std::vector<uint64_t> CountEveryCell(const std::vector<std::vector<uint64_t>>& coords, size_t d,
                                     const std::vector<uint64_t>& bounds) {
  std::vector<uint64_t> counts(bounds.size() + 1, 0);
  for (const auto& c : coords) {
    ++counts[std::upper_bound(bounds.begin(), bounds.end(), c[d]) - bounds.begin()];
  }
  return counts;
}

void ExpectCounts(const std::vector<std::vector<uint64_t>>& coords,
                  const std::vector<uint64_t>& bounds) {
  const CellIndex index = PackedIndexOf(coords);
  for (size_t d = 0; d < coords.front().size(); ++d) {
    std::optional<std::vector<uint64_t>> got = CountDimensionValues(index, d, bounds);
    ASSERT_TRUE(got.has_value()) << "dimension " << d;
    EXPECT_EQ(*got, CountEveryCell(coords, d, bounds)) << "dimension " << d;
  }
}

// Bounds around the values: below, within, at and above them.
std::vector<uint64_t> BoundsAround(uint64_t lo, uint64_t hi, std::mt19937_64& rng) {
  std::vector<uint64_t> b = {lo, lo + 1, hi, hi + 1, lo > 0 ? lo - 1 : 0};
  for (int k = 0; k < 6; ++k) b.push_back(lo + rng() % (hi - lo + 2));
  std::sort(b.begin(), b.end());
  b.erase(std::unique(b.begin(), b.end()), b.end());
  return b;
}

TEST(DimensionCountsTest, RowsOfManyCellsWithDuplicates) {
  std::mt19937_64 rng(7);
  std::vector<std::vector<uint64_t>> coords;
  for (int i = 0; i < 20000; ++i) coords.push_back({1000 + rng() % 50, 5 + rng() % 1000});
  for (int i = 0; i < 500; ++i) coords.push_back(coords[rng() % coords.size()]);
  for (int round = 0; round < 5; ++round) ExpectCounts(coords, BoundsAround(5, 1050, rng));
  ExpectCounts(coords, {});
  ExpectCounts(coords, {0});
  ExpectCounts(coords, {UINT64_MAX});
}

TEST(DimensionCountsTest, RowsOfOneCellAndOneValueDimensions) {
  std::mt19937_64 rng(11);
  std::vector<std::vector<uint64_t>> coords;
  // Dimension 0 holds one value (no key bits), 1 one per cell, 3 one value.
  for (uint64_t i = 0; i < 3000; ++i) coords.push_back({42, i * 3, rng() % 20, 9});
  for (int round = 0; round < 5; ++round) ExpectCounts(coords, BoundsAround(0, 9000, rng));
  ExpectCounts(coords, {9, 10, 42, 43});
}

TEST(DimensionCountsTest, OneDimensionAndExtremeValues) {
  std::mt19937_64 rng(3);
  std::vector<std::vector<uint64_t>> coords;
  // Values up to the largest, over a range that leaves room for ordinals.
  const uint64_t base = UINT64_MAX - (uint64_t{1} << 50);
  for (int i = 0; i < 5000; ++i) {
    coords.push_back({rng() % 2 ? base + rng() % (uint64_t{1} << 50) : UINT64_MAX - rng() % 9});
  }
  coords.push_back({base});
  coords.push_back({UINT64_MAX});
  ExpectCounts(coords, {1, uint64_t{1} << 63, base, base + 1, UINT64_MAX - 4, UINT64_MAX});
}

TEST(DimensionCountsTest, NoPackingNoCounts) {
  CellIndex index;
  index.ordinals = {0, 1, 2};
  index.cell_count = 3;
  EXPECT_FALSE(CountDimensionValues(index, 0, std::vector<uint64_t>{1}).has_value());
  const CellIndex packed = PackedIndexOf({{1, 2}, {3, 4}});
  EXPECT_FALSE(CountDimensionValues(packed, 2, std::vector<uint64_t>{1}).has_value());
}

}  // namespace
}  // namespace tiledbfs::core
