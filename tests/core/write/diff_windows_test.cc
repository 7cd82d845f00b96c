// A diff of many boxes read to its end (DiffStream, core/array/diff.h): each
// box's slices let their index windows go once the box is done, so that the
// views' window pool holds no finished box's windows (issue 50: a diff of
// the 1,000M-cell SOMA-shaped array kept all seven boxes' windows).
#include <gtest/gtest.h>

#include <algorithm>

#include "core/array/diff.h"
#include "tests/core/write/temp_array.h"

namespace tiledbfs::core {
namespace diff_windows_test {

constexpr const char* kSchema = R"({
  "array_type": "sparse", "capacity": 1000, "allows_dups": false,
  "dims": [{"name": "r", "type": "INT64", "domain": [0, 9999], "tile_extent": 100},
           {"name": "c", "type": "INT64", "domain": [0, 999], "tile_extent": 1000}],
  "attrs": [{"name": "v", "type": "FLOAT64"}]})";

Range Rows(int64_t lo, int64_t hi) {
  Range r;
  r.lo = CopyBytes({reinterpret_cast<const uint8_t*>(&lo), 8});
  r.hi = CopyBytes({reinterpret_cast<const uint8_t*>(&hi), 8});
  return r;
}

TEST(DiffWindowsTest, FinishedBoxesLetTheirWindowsGo) {
  TempArray array("diff_windows");
  const ArraySchema s = array.Create(kSchema);
  // A first band, then four more: the diff's four boxes, each of more
  // cells than two of its windows (at least 64 Ki cells each).
  constexpr uint64_t kCells = 150000;
  for (int k = 0; k < 5; ++k) {
    SyntheticSpec spec;
    spec.seed = 5 + k;
    spec.cells_min = spec.cells_max = kCells;
    spec.subarray = {Rows(1000 * k, 1000 * k + 999), Rows(0, 999)};
    auto w = WriteSyntheticFragments(array.root().string(), s, 10 + k, spec);
    ASSERT_TRUE(w.ok()) << w.error().ToString();
  }
  auto cache = std::make_shared<TileCache>(uint64_t{64} << 20);
  auto from = array.View(10, cache);
  auto to = array.View(UINT64_MAX, cache);
  ASSERT_TRUE(from && to);
  // Windows of 64 Ki cells for each box's slices (the view's over twice the boxes).
  to = to->WithIndexWindow(uint64_t{1} << 19);
  auto plan = DiffPlan::Make(from, to, 10, 14);
  ASSERT_TRUE(plan.ok()) << plan.error().ToString();
  ASSERT_EQ((*plan)->boxes(), 4u);
  DiffStream stream(*plan, false, 8192);
  ASSERT_TRUE(stream.Seek().ok());
  const WindowPool& pool = *cache->window_pool();
  uint64_t added = 0, most = 0;
  const std::array<uint64_t, kDiffKinds> max = {1 << 20, 1 << 20, 1 << 20};
  while (true) {
    auto rows = stream.Next(max);
    ASSERT_TRUE(rows.ok()) << rows.error().ToString();
    if (*rows == 0) break;
    EXPECT_EQ(stream.kind(), DiffKind::kAdded);
    added += *rows;
    most = std::max(most, pool.held_bytes());
  }
  EXPECT_EQ(added, 4 * kCells);
  EXPECT_GT(most, 0u) << "the boxes were read in windows";
  EXPECT_EQ(pool.held_bytes(), 0u) << "every box done, none keeps its windows";
  EXPECT_EQ(pool.held(), 0u);
}

}  // namespace diff_windows_test
}  // namespace tiledbfs::core
