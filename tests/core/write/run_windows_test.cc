// Windows of a sparse view built from runs (run_index.h) instead of a key
// per cell, on arrays our writer makes: fragments in column bands with
// many cells per row (the runs path), sliced along the rows (runs checked
// along the columns too), and fragments over the same cells (no runs: the
// keys' path drops the overwritten cells). Each window's cells are the
// stored cells the whole index gives, in its order, and tiles end after
// their last cell.
#include <gtest/gtest.h>

#include <algorithm>
#include <optional>

#include "core/read/sparse_index.h"
#include "core/read/sparse_windows.h"
#include "tests/core/write/temp_array.h"

namespace tiledbfs::core {
namespace run_windows_test {

constexpr const char* kSchema = R"({
  "array_type": "sparse", "capacity": 100, "allows_dups": false,
  "dims": [{"name": "r", "type": "INT64", "domain": [-500, 499], "tile_extent": 20},
           {"name": "c", "type": "INT32", "domain": [0, 999], "tile_extent": 100}],
  "attrs": [{"name": "v", "type": "FLOAT64"}]})";

Range Band(int64_t lo, int64_t hi, size_t size) {
  Range r;
  r.lo = CopyBytes({reinterpret_cast<const uint8_t*>(&lo), size});
  r.hi = CopyBytes({reinterpret_cast<const uint8_t*>(&hi), size});
  return r;
}

// 4 fragments of 6,000 cells in column bands 250 wide over rows `r0..r1`
// (`overlap`: each band reaches 10 columns into the next).
std::shared_ptr<const ArrayView> Bands(TempArray& array, int64_t r0, int64_t r1, int overlap = 0) {
  ArraySchema s = array.Create(kSchema);
  for (int k = 0; k < 4; ++k) {
    SyntheticSpec spec;
    spec.seed = 70 + k;
    spec.cells_min = spec.cells_max = 6000;
    spec.subarray = {Band(r0, r1, 8), Band(250 * k, std::min(999, 250 * k + 249 + overlap), 4)};
    auto w = WriteSyntheticFragments(array.root().string(), s, 10 + k, spec);
    EXPECT_TRUE(w.ok()) << w.error().ToString();
  }
  return array.View();
}

ViewInputs InputsOf(const ArrayView& view) {
  ViewInputs in;
  in.schema = &view.schema();
  in.fragments = view.fragments();
  return in;
}

// What the windows of `in` (of about `window` cells) found: whether each
// was built from runs, and every view cell's stored cell, in order.
struct Walked {
  std::vector<bool> runs;
  std::vector<CellRef> cells;
};
Walked Walk(const SparseWindows& windows) {
  Walked out;
  uint64_t cell = 0;
  for (size_t w = 0; w < windows.windows(); ++w) {
    auto part = windows.Locate(cell);
    EXPECT_TRUE(part.ok()) << part.error().ToString();
    if (!part.ok()) return out;
    const CellIndex& index = *part->index;
    out.runs.push_back(!index.packing);
    for (uint64_t i = 0; i < index.cell_count; ++i) out.cells.push_back(index.At(i));
    cell = part->first + index.cell_count;
  }
  return out;
}

void ExpectSameCells(const std::vector<CellRef>& got, const CellIndex& whole) {
  ASSERT_EQ(got.size(), whole.cell_count);
  for (uint64_t i = 0; i < whole.cell_count; ++i) {
    const CellRef want = whole.At(i);
    ASSERT_TRUE(got[i].fragment == want.fragment && got[i].tile == want.tile &&
                got[i].pos == want.pos)
        << "view cell " << i;
  }
}

TEST(RunWindowsTest, ColumnBandsAreRunsInTheWholeIndexsOrder) {
  TempArray array("run_windows_bands");
  // 100 rows: about 60 cells per row of a band, in runs of about 20.
  auto view = Bands(array, -50, 49);
  ASSERT_TRUE(view);
  const ViewInputs in = InputsOf(*view);
  auto whole = BuildSparseIndex(in);
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  auto windows = SparseWindows::Make(in, 1000);
  ASSERT_TRUE(windows.ok() && *windows);
  const Walked walked = Walk(**windows);
  ASSERT_GE(walked.runs.size(), 10u);
  EXPECT_EQ(std::count(walked.runs.begin(), walked.runs.end(), true),
            static_cast<long>(walked.runs.size()));
  ExpectSameCells(walked.cells, *whole);
  // The box: the same as the whole index's.
  auto box = (*windows)->Box();
  ASSERT_TRUE(box.ok());
  ASSERT_EQ(box->size(), 2u);
  for (size_t d = 0; d < 2; ++d) {
    EXPECT_EQ((*box)[d].lo, whole->box[d].lo) << "dimension " << d;
    EXPECT_EQ((*box)[d].hi, whole->box[d].hi) << "dimension " << d;
  }
  // Each tile ends right after its last cell in the view.
  std::vector<uint64_t> last(whole->sparse_tiles.size(), 0);
  for (uint64_t i = 0; i < whole->cell_count; ++i) {
    const CellRef r = whole->At(i);
    for (size_t t = 0; t < whole->sparse_tiles.size(); ++t) {
      if (whole->sparse_tiles[t].fragment == r.fragment && whole->sparse_tiles[t].tile == r.tile) {
        last[t] = i + 1;
      }
    }
  }
  std::vector<uint64_t> ended(last.size(), 0);
  for (uint64_t i = 0; i < whole->cell_count; ++i) {
    for (size_t t : (*windows)->TilesEndingIn(i, i + 1)) {
      ASSERT_LT(t, ended.size());
      ended[t] = i + 1;
    }
  }
  EXPECT_EQ(ended, last);
}

// The windows of `in` hold the whole index's cells in its order; returns
// whether each window was built from runs.
std::vector<bool> ExpectWindowsAsWhole(const ViewInputs& in) {
  auto whole = BuildSparseIndex(in);
  EXPECT_TRUE(whole.ok()) << whole.error().ToString();
  auto windows = SparseWindows::Make(in, 1000);
  EXPECT_TRUE(windows.ok() && *windows);
  if (!whole.ok() || !windows.ok() || !*windows) return {};
  const Walked walked = Walk(**windows);
  ExpectSameCells(walked.cells, *whole);
  return walked.runs;
}

TEST(RunWindowsTest, ASliceOfRowsChecksTheColumnsOfEachRun) {
  TempArray array("run_windows_slice");
  auto view = Bands(array, -50, 49);
  ASSERT_TRUE(view);
  ViewInputs in = InputsOf(*view);
  in.subarray = Subarray(2);
  in.subarray[0] = Band(-31, 40, 8);
  const std::vector<bool> runs = ExpectWindowsAsWhole(in);
  EXPECT_GT(std::count(runs.begin(), runs.end(), true), 0);
}

TEST(RunWindowsTest, BandsThatOverlapFallBackToKeys) {
  TempArray array("run_windows_overlap");
  // Each band reaches into the next: their rows share columns, and runs
  // there would overlap (or hold a cell twice).
  auto view = Bands(array, -50, 49, 10);
  ASSERT_TRUE(view);
  const std::vector<bool> runs = ExpectWindowsAsWhole(InputsOf(*view));
  EXPECT_GT(std::count(runs.begin(), runs.end(), false), 0);
}

TEST(RunWindowsTest, DimensionsAreGatheredFromTheirTiles) {
  TempArray array("run_windows_fields");
  auto view = Bands(array, -50, 49);
  ASSERT_TRUE(view);
  auto whole = view->WithIndexWindow(UINT64_MAX);
  auto windowed = view->WithIndexWindow(1000);
  auto windows = windowed->IndexWindows();
  ASSERT_TRUE(windows.ok());
  EXPECT_GE(*windows, 10u);
  for (const char* f : {"r", "c", "v"}) {
    auto want = whole->ReadField(f);
    auto got = windowed->ReadField(f);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(got->cell_count, want->cell_count) << f;
    EXPECT_TRUE(
        std::equal(got->data.begin(), got->data.end(), want->data.begin(), want->data.end()))
        << f;
  }
}

}  // namespace run_windows_test
}  // namespace tiledbfs::core
