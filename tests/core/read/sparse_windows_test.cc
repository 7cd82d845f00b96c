// A sparse view indexed a window of rows at a time (sparse_windows.h)
// shows exactly the cells of the same view indexed whole: on every view of
// every sparse array of both fixture corpora, with windows of 1, 3 and 17
// cells, the cell count, non-empty domain, every field (whole and in
// random ranges that cross windows), dimension counts and the cells in
// storage order are those of the whole index.
#include "core/read/sparse_windows.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/read/cell_index.h"
#include "core/read/sparse_order.h"
#include "core/read/tile_source.h"
#include "tests/core/read/corpus_key.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

void ExpectSameColumn(const Column& got, const Column& want, const std::string& what) {
  EXPECT_EQ(got.cell_count, want.cell_count) << what;
  EXPECT_TRUE(std::equal(got.data.begin(), got.data.end(), want.data.begin(), want.data.end()))
      << what << ": values differ";
  EXPECT_EQ(got.offsets, want.offsets) << what;
  EXPECT_TRUE(std::equal(got.validity.begin(), got.validity.end(), want.validity.begin(),
                         want.validity.end()))
      << what << ": validity differs";
}

// Cells [first, first + count) of a whole column.
Column Slice(const Column& c, uint64_t first, uint64_t count) {
  Column s = c;
  s.cell_count = count;
  if (c.var()) {
    const uint64_t a = c.offsets[first], b = c.offsets[first + count];
    s.data.assign(c.data.begin() + a, c.data.begin() + b);
    s.offsets.clear();
    for (uint64_t i = first; i <= first + count; ++i) s.offsets.push_back(c.offsets[i] - a);
  } else {
    const uint64_t size = c.cell_size();
    s.data.assign(c.data.begin() + first * size, c.data.begin() + (first + count) * size);
  }
  if (c.nullable) s.validity.assign(c.validity.begin() + first, c.validity.begin() + first + count);
  return s;
}

struct Tally {
  int views = 0;        // windowed views compared
  int windows = 0;      // windows over all of them
  int dropping = 0;     // windowed views that hold fewer cells than stored (dedup, time)
  int most = 0;         // windows of the view cut into the most
  int conditioned = 0;  // windowed views under delete conditions
  int keyed = 0;        // windowed views whose coordinates do not pack (string, float)
};

void CheckView(const ArrayView& whole, const ArrayView& windowed, std::mt19937_64& rng) {
  auto cells = whole.CellCount();
  ASSERT_TRUE(cells.ok()) << cells.error().ToString();
  auto got_cells = windowed.CellCount();
  ASSERT_TRUE(got_cells.ok()) << got_cells.error().ToString();
  EXPECT_EQ(*got_cells, *cells);
  auto ned = whole.NonEmptyDomain();
  ASSERT_TRUE(ned.ok());
  auto got_ned = windowed.NonEmptyDomain();
  ASSERT_TRUE(got_ned.ok()) << got_ned.error().ToString();
  ASSERT_EQ(got_ned->size(), ned->size());
  for (size_t d = 0; d < ned->size(); ++d) {
    EXPECT_EQ((*got_ned)[d].lo, (*ned)[d].lo) << "dimension " << d;
    EXPECT_EQ((*got_ned)[d].hi, (*ned)[d].hi) << "dimension " << d;
  }
  const ArraySchema& schema = whole.schema();
  std::vector<std::string> fields, attributes;
  for (const Dimension& d : schema.dimensions) fields.push_back(d.name);
  for (const Attribute& a : schema.attributes) {
    fields.push_back(a.name);
    attributes.push_back(a.name);
  }
  for (const std::string& f : fields) {
    auto want = whole.ReadField(f);
    ASSERT_TRUE(want.ok()) << f << ": " << want.error().ToString();
    auto got = windowed.ReadField(f);
    ASSERT_TRUE(got.ok()) << f << ": " << got.error().ToString();
    ExpectSameColumn(*got, *want, f);
    for (int k = 0; k < 6; ++k) {
      const uint64_t first = rng() % (*cells + 1);
      const uint64_t count = rng() % (*cells - first + 1);
      auto part = windowed.ReadFieldRange(f, first, count);
      ASSERT_TRUE(part.ok()) << f << ": " << part.error().ToString();
      ExpectSameColumn(*part, Slice(*want, first, count),
                       f + " [" + std::to_string(first) + ", +" + std::to_string(count) + ")");
    }
    EXPECT_FALSE(windowed.ReadFieldRange(f, *cells, 1).ok()) << f << ": a cell past the end";
  }
  for (size_t d = 0; d < schema.dimensions.size() && !ned->empty(); ++d) {
    const Dimension& dim = schema.dimensions[d];
    if (dim.var() || !Packable(dim.type)) continue;
    const uint64_t lo = OrderedValue(dim.type, (*ned)[d].lo.data());
    const uint64_t hi = OrderedValue(dim.type, (*ned)[d].hi.data());
    std::vector<uint64_t> bounds = {lo, hi};
    for (int k = 0; k < 4 && hi > lo; ++k) bounds.push_back(lo + rng() % (hi - lo));
    std::sort(bounds.begin(), bounds.end());
    bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
    auto want = whole.CountDimensionValues(dim.name, bounds);
    auto got = windowed.CountDimensionValues(dim.name, bounds);
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ(*got, *want) << "counts of dimension " << dim.name;
  }
  // The cells in storage order, chunk by chunk: the same cells.
  auto want_order = whole.StoredChunks(5);
  auto got_order = windowed.StoredChunks(5);
  ASSERT_TRUE(want_order.ok() && got_order.ok());
  ASSERT_TRUE(want_order->has_value() && got_order->has_value());
  ASSERT_EQ((*got_order)->chunks(), (*want_order)->chunks());
  for (size_t k = 0; k < (*want_order)->chunks(); ++k) {
    auto want = whole.ReadStoredChunk(**want_order, k, attributes);
    auto got = windowed.ReadStoredChunk(**got_order, k, attributes);
    ASSERT_TRUE(want.ok() && got.ok());
    for (size_t a = 0; a < attributes.size(); ++a) {
      ExpectSameColumn((*got)[a], (*want)[a], "stored chunk of " + attributes[a]);
    }
  }
}

void CheckArray(const fs::path& dir, Tally& tally) {
  auto storage = LocalStorage::Open(dir.string());
  ASSERT_TRUE(storage.ok());
  auto array = Array::Open(*storage, CorpusKeyFor(dir), DefaultLimits());
  ASSERT_TRUE(array.ok()) << array.error().ToString();
  auto instants = (*array)->Instants();
  ASSERT_TRUE(instants.ok());
  std::vector<uint64_t> times = *instants;
  times.push_back(UINT64_MAX);
  std::mt19937_64 rng(11);
  for (uint64_t t : times) {
    auto view = (*array)->ViewAt(t);
    ASSERT_TRUE(view.ok()) << view.error().ToString();
    if ((*view)->dense()) return;
    for (uint64_t window : {1, 3, 17}) {
      SCOPED_TRACE(::testing::Message()
                   << dir.filename().string() << " at " << t << ", windows of " << window);
      // The reference: indexed whole, whatever the build's default.
      std::shared_ptr<const ArrayView> whole = (*view)->WithIndexWindow(UINT64_MAX);
      auto none = whole->IndexWindows();
      ASSERT_TRUE(none.ok());
      ASSERT_EQ(*none, 0u);
      std::shared_ptr<const ArrayView> windowed = (*view)->WithIndexWindow(window);
      auto windows = windowed->IndexWindows();
      ASSERT_TRUE(windows.ok()) << windows.error().ToString();
      if (*windows == 0) continue;  // not a view that windows (no packing...)
      ++tally.views;
      tally.windows += static_cast<int>(*windows);
      tally.most = std::max(tally.most, static_cast<int>(*windows));
      uint64_t stored = 0;
      for (const auto& f : windowed->fragments()) stored += f->cell_num();
      auto cells = whole->CellCount();
      ASSERT_TRUE(cells.ok());
      if (*cells < stored) ++tally.dropping;
      if (!windowed->DeleteMarkers().empty()) ++tally.conditioned;
      for (const Dimension& d : windowed->schema().dimensions) {
        if (d.var() || !Packable(d.type)) {
          ++tally.keyed;
          break;
        }
      }
      CheckView(*whole, *windowed, rng);
    }
  }
}

TEST(SparseWindowsTest, CorpusViewsShowTheCellsOfTheWholeIndex) {
  Tally tally;
  for (const char* corpus : {"corpus", "oracle_corpus"}) {
    const fs::path arrays = fs::path(TILEDBFS_TEST_DATA) / corpus / "arrays";
    for (const auto& e : fs::directory_iterator(arrays)) {
      if (!e.is_directory() || e.path().filename() == "group") continue;
      CheckArray(e.path(), tally);
    }
  }
  // Views of many windows, views that drop cells (dedup, timestamps) and
  // views under delete conditions were compared: the check could fail
  // any of these ways.
  EXPECT_GE(tally.views, 30);
  EXPECT_GE(tally.windows, 100);
  EXPECT_GE(tally.most, 5);
  EXPECT_GE(tally.dropping, 5);
  // Delete conditions are applied window by window; string and
  // floating-point coordinates are cut by their keys (WindowKey).
  EXPECT_GE(tally.conditioned, 5);
  EXPECT_GE(tally.keyed, 5);
  std::cout << tally.views << " windowed views (" << tally.windows << " windows), "
            << tally.dropping << " of them dropping cells, " << tally.conditioned
            << " under delete conditions, " << tally.keyed
            << " of coordinates that do not pack; at most " << tally.most << " windows\n";
}

// Counts saved once every window is counted (ArrayView::SaveCounts, kept by
// the persistent index) are taken back by a fresh view of the same cells:
// its cell count and non-empty domain then decode no tile, and its cells
// read through the windows are the whole index's. Counts of windows cut
// otherwise, or cut short, are refused.
TEST(SparseWindowsTest, SavedCountsNeedNoWindowBuilt) {
  int restored = 0;
  std::mt19937_64 rng(5);
  for (const char* corpus : {"corpus", "oracle_corpus"}) {
    const fs::path arrays = fs::path(TILEDBFS_TEST_DATA) / corpus / "arrays";
    for (const auto& e : fs::directory_iterator(arrays)) {
      if (!e.is_directory() || e.path().filename() == "group") continue;
      auto storage = LocalStorage::Open(e.path().string());
      ASSERT_TRUE(storage.ok());
      auto array = Array::Open(*storage, CorpusKeyFor(e.path()), DefaultLimits());
      ASSERT_TRUE(array.ok()) << array.error().ToString();
      auto view = (*array)->ViewAt(UINT64_MAX);
      ASSERT_TRUE(view.ok());
      if ((*view)->dense()) continue;
      SCOPED_TRACE(e.path().filename().string());
      std::shared_ptr<const ArrayView> counted = (*view)->WithIndexWindow(3);
      auto windows = counted->IndexWindows();
      ASSERT_TRUE(windows.ok());
      if (*windows == 0) continue;
      EXPECT_EQ(counted->SaveCounts(), "") << "nothing before every window is counted";
      auto cells = counted->CellCount();
      ASSERT_TRUE(cells.ok()) << cells.error().ToString();
      // A read of every cell counts every window (a view that keeps every
      // stored cell counts them without).
      ASSERT_TRUE(counted->ReadField(counted->schema().dimensions[0].name).ok());
      const std::string saved = counted->SaveCounts();
      ASSERT_FALSE(saved.empty());

      std::shared_ptr<const ArrayView> fresh = (*view)->WithIndexWindow(3);
      ASSERT_TRUE(fresh->RestoreCounts(saved).ok());
      const DecodeStats before = TileDecodeStats();
      auto got = fresh->CellCount();
      ASSERT_TRUE(got.ok());
      EXPECT_EQ(*got, *cells);
      ASSERT_TRUE(fresh->NonEmptyDomain().ok());
      EXPECT_EQ(TileDecodeStats().tiles, before.tiles) << "counted without a window built";
      EXPECT_EQ(fresh->SaveCounts(), saved);
      CheckView(*(*view)->WithIndexWindow(UINT64_MAX), *fresh, rng);
      ++restored;

      std::shared_ptr<const ArrayView> other = (*view)->WithIndexWindow(1);
      auto other_windows = other->IndexWindows();
      ASSERT_TRUE(other_windows.ok());
      if (*other_windows != *windows) {
        EXPECT_FALSE(other->RestoreCounts(saved).ok()) << "windows cut elsewhere";
      }
      for (size_t cut : {size_t{0}, size_t{4}, saved.size() / 2, saved.size() - 1}) {
        EXPECT_FALSE((*view)->WithIndexWindow(3)->RestoreCounts(saved.substr(0, cut)).ok())
            << "cut at " << cut;
      }
      EXPECT_FALSE((*view)->WithIndexWindow(3)->RestoreCounts(saved + "x").ok());
      // The last window's end (after the format, the window count, the
      // starts, the windows counted and the other ends) past the cells the
      // tiles hold.
      std::string more = saved;
      const size_t last_end = 4 + 8 + 16 * static_cast<size_t>(*windows);
      const uint64_t huge = uint64_t{1} << 60;
      std::memcpy(more.data() + last_end, &huge, 8);
      EXPECT_FALSE((*view)->WithIndexWindow(3)->RestoreCounts(more).ok()) << "a count too big";
    }
  }
  EXPECT_GE(restored, 10);
}

}  // namespace
}  // namespace tiledbfs::core
