// Views sized from their fragments' metadata alone (KeepsEveryStoredCell):
// on every sparse view of both fixture corpora, a view said to keep every
// stored cell has exactly as many cells as its fragments store, its cell
// count and dimension counts before the index is built equal those after,
// and views that drop cells (duplicates, deletes, timestamps) are never
// said to keep them all.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/read/cell_index.h"
#include "core/read/packed_index.h"
#include "core/read/sparse_order.h"
#include "core/read/stored_order.h"
#include "tests/core/read/corpus_key.h"

namespace tiledbfs::core::stored_cells_test {
namespace {

namespace fs = std::filesystem;

// A view of a freshly opened array (no view cached, no index built).
std::shared_ptr<const ArrayView> FreshView(const fs::path& dir, uint64_t t) {
  auto storage = LocalStorage::Open(dir.string());
  EXPECT_TRUE(storage.ok());
  if (!storage.ok()) return nullptr;
  auto array = Array::Open(*storage, CorpusKeyFor(dir), DefaultLimits());
  EXPECT_TRUE(array.ok()) << array.error().ToString();
  if (!array.ok()) return nullptr;
  auto view = (*array)->ViewAt(t);
  EXPECT_TRUE(view.ok()) << view.error().ToString();
  return view.ok() ? *view : nullptr;
}

uint64_t StoredCells(const ArrayView& view) {
  uint64_t n = 0;
  for (const auto& f : view.fragments()) n += f->cell_num();
  return n;
}

struct Tally {
  int keep = 0;      // views that keep every stored cell
  int dropping = 0;  // views that hold fewer cells than stored
  int counted = 0;   // dimensions counted without an index
};

void CheckArray(const fs::path& dir, Tally& tally) {
  std::shared_ptr<const ArrayView> latest = FreshView(dir, UINT64_MAX);
  ASSERT_NE(latest, nullptr);
  if (latest->dense()) return;
  auto storage = LocalStorage::Open(dir.string());
  ASSERT_TRUE(storage.ok());
  auto array = Array::Open(*storage, CorpusKeyFor(dir), DefaultLimits());
  ASSERT_TRUE(array.ok());
  auto instants = (*array)->Instants();
  ASSERT_TRUE(instants.ok());
  std::vector<uint64_t> times = *instants;
  times.push_back(UINT64_MAX);
  std::mt19937_64 rng(7);
  for (uint64_t t : times) {
    SCOPED_TRACE(::testing::Message() << dir.filename().string() << " at " << t);
    // The reference: a view whose index is built first.
    std::shared_ptr<const ArrayView> indexed = FreshView(dir, t);
    ASSERT_NE(indexed, nullptr);
    if (indexed->dense()) continue;
    auto ned = indexed->NonEmptyDomain();
    ASSERT_TRUE(ned.ok()) << ned.error().ToString();
    auto cells = indexed->CellCount();
    ASSERT_TRUE(cells.ok());
    const uint64_t stored = StoredCells(*indexed);
    if (*cells < stored) ++tally.dropping;
    // The view under test: asked before any index exists.
    std::shared_ptr<const ArrayView> view = FreshView(dir, t);
    ASSERT_NE(view, nullptr);
    if (!view->KeepsEveryStoredCell()) continue;
    ++tally.keep;
    EXPECT_EQ(*cells, stored) << "a view said to keep every stored cell drops some";
    auto count = view->CellCount();
    ASSERT_TRUE(count.ok()) << count.error().ToString();
    EXPECT_EQ(*count, *cells);
    // Dimension counts over bounds inside and around the view's values.
    const ArraySchema& schema = view->schema();
    for (size_t d = 0; d < schema.dimensions.size() && !ned->empty(); ++d) {
      const Dimension& dim = schema.dimensions[d];
      if (dim.var() || !Packable(dim.type)) continue;
      const uint64_t lo = OrderedValue(dim.type, (*ned)[d].lo.data());
      const uint64_t hi = OrderedValue(dim.type, (*ned)[d].hi.data());
      std::vector<uint64_t> bounds = {lo, hi, hi + 1};
      if (lo > 0) bounds.push_back(lo - 1);
      for (int k = 0; k < 5 && hi > lo; ++k) bounds.push_back(lo + rng() % (hi - lo));
      std::sort(bounds.begin(), bounds.end());
      bounds.erase(std::unique(bounds.begin(), bounds.end()), bounds.end());
      auto want = indexed->CountDimensionValues(dim.name, bounds);
      ASSERT_TRUE(want.ok()) << want.error().ToString();
      if (!want->has_value()) continue;  // the index does not pack: nothing to compare with
      auto got = view->CountDimensionValues(dim.name, bounds);
      ASSERT_TRUE(got.ok()) << got.error().ToString();
      ASSERT_TRUE(got->has_value());
      EXPECT_EQ(**got, **want) << "dimension " << dim.name;
      ++tally.counted;
    }
    // The index built now holds as many cells (else Index() is kCorrupt).
    auto first = view->ReadField(schema.dimensions[0].name);
    ASSERT_TRUE(first.ok()) << first.error().ToString();
    EXPECT_EQ(first->cell_count, *cells);
  }
}

TEST(StoredCellsTest, CorpusViewsKeepingEveryStoredCellHoldThemAll) {
  Tally tally;
  for (const char* corpus : {"corpus", "oracle_corpus"}) {
    const fs::path arrays = fs::path(TILEDBFS_TEST_DATA) / corpus / "arrays";
    for (const auto& e : fs::directory_iterator(arrays)) {
      if (!e.is_directory() || e.path().filename() == "group") continue;
      CheckArray(e.path(), tally);
    }
  }
  // Both kinds are there: the check could fail either way.
  EXPECT_GE(tally.keep, 20);
  EXPECT_GE(tally.dropping, 10);
  EXPECT_GE(tally.counted, 20);
  std::cout << tally.keep << " views keep every stored cell, " << tally.dropping << " drop some; "
            << tally.counted << " dimensions counted without an index\n";
}

}  // namespace
}  // namespace tiledbfs::core::stored_cells_test
