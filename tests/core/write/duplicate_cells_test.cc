// A view sized from its fragments' metadata (KeepsEveryStoredCell) takes a
// fragment to hold distinct coordinates. A fragment that does not (written
// with duplicates, read as an array that drops them) is found out when the
// index is built: once the view has given its stored cell count, the index
// is kCorrupt instead of holding fewer cells than a stat said; a view that
// built its index first just drops the duplicates.
#include <gtest/gtest.h>

#include <cstring>

#include "core/array/array_view.h"
#include "core/read/tile_cache.h"
#include "tests/core/write/raw_values.h"
#include "tests/core/write/temp_array.h"

namespace tiledbfs::core {
namespace {

TEST(DuplicateCellsTest, ACountGivenFromTheFragmentsMustHoldWhenTheIndexIsBuilt) {
  TempArray array("dupcells");
  ArraySchema s = array.Create(R"({
    "array_type": "sparse", "capacity": 4, "allows_dups": true,
    "dims": [{"name": "r", "type": "INT64", "domain": [0, 99], "tile_extent": 10}],
    "attrs": [{"name": "v", "type": "INT32"}]})");
  WriteBatch b;
  b.fields["r"].data = Raw(std::vector<int64_t>{1, 1, 2});
  b.fields["v"].data = Raw(std::vector<int32_t>{10, 11, 12});
  ASSERT_TRUE(WriteFragment(array.root().string(), s, 2000, b).ok());
  std::shared_ptr<const ArrayView> dups = array.View();
  ASSERT_NE(dups, nullptr);
  auto all = dups->CellCount();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(*all, 3u);

  // The same fragment read as an array without duplicates.
  auto strict = std::make_shared<ArraySchema>(dups->schema());
  strict->allows_dups = false;
  auto view_of = [&] {
    ViewInputs in;
    in.fragments = dups->fragments();
    return std::make_shared<ArrayView>(strict, in, dups->instant(),
                                       std::make_shared<TileCache>(uint64_t{1} << 20));
  };
  std::shared_ptr<ArrayView> sized = view_of();
  EXPECT_TRUE(sized->KeepsEveryStoredCell());
  auto claimed = sized->CellCount();
  ASSERT_TRUE(claimed.ok()) << claimed.error().ToString();
  EXPECT_EQ(*claimed, 3u);
  auto read = sized->ReadField("v");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(read.error().message().find("3 cells but the view 2"), std::string::npos)
      << read.error().message();

  std::shared_ptr<ArrayView> indexed = view_of();
  auto v = indexed->ReadField("v");
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->cell_count, 2u);
  auto count = indexed->CellCount();
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 2u);

  // Indexed a window at a time (sparse_windows.h): the same. Sized from
  // the fragments, a read up to the end is kCorrupt; the view's own cells
  // read fine, and once every window is counted they are the count.
  auto windowed_of = [&] {
    ViewInputs in;
    in.fragments = dups->fragments();
    in.index_window_cells = 1;
    return std::make_shared<ArrayView>(strict, in, dups->instant(),
                                       std::make_shared<TileCache>(uint64_t{1} << 20));
  };
  std::shared_ptr<ArrayView> windowed = windowed_of();
  auto windows = windowed->IndexWindows();
  ASSERT_TRUE(windows.ok());
  EXPECT_EQ(*windows, 2u);
  claimed = windowed->CellCount();
  ASSERT_TRUE(claimed.ok());
  EXPECT_EQ(*claimed, 3u);
  read = windowed->ReadFieldRange("v", 0, 3);
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(read.error().message().find("3 cells but the view 2"), std::string::npos)
      << read.error().message();
  v = windowed_of()->ReadField("v");
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->cell_count, 2u);
  count = windowed->CellCount();
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 2u);
}

// A sparse view indexed whole keeps its cell count for the persistent index
// (SaveCounts): a fresh view given it counts with no index built, and must
// then hold as many cells; a count of other cells (a stale entry) fails the
// read that builds the index, never giving other cells.
TEST(DuplicateCellsTest, ACountGivenFromTheIndexMustHoldWhenTheIndexIsBuilt) {
  TempArray array("savedcount");
  ArraySchema s = array.Create(R"({
    "array_type": "sparse", "capacity": 4, "allows_dups": false,
    "dims": [{"name": "r", "type": "INT64", "domain": [0, 99], "tile_extent": 10}],
    "attrs": [{"name": "v", "type": "INT32"}]})");
  // Two fragments over the same cells: the count is not their sum.
  for (uint64_t t : {2000, 2001}) {
    WriteBatch b;
    b.fields["r"].data = Raw(std::vector<int64_t>{1, 2, 3});
    b.fields["v"].data = Raw(std::vector<int32_t>{10, 11, static_cast<int32_t>(t)});
    ASSERT_TRUE(WriteFragment(array.root().string(), s, t, b).ok());
  }
  std::shared_ptr<const ArrayView> first = array.View();
  ASSERT_NE(first, nullptr);
  EXPECT_FALSE(first->KeepsEveryStoredCell());
  EXPECT_EQ(first->SaveCounts(), "") << "nothing counted yet";
  ASSERT_TRUE(first->ReadField("v").ok());
  const std::string saved = first->SaveCounts();
  ASSERT_FALSE(saved.empty());

  std::shared_ptr<const ArrayView> again = array.View();
  ASSERT_TRUE(again->RestoreCounts(saved).ok());
  auto count = again->CellCount();
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 3u);
  EXPECT_EQ(again->SaveCounts(), "") << "given, not built: no index yet";
  auto v = again->ReadField("v");
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->cell_count, 3u);

  std::string stale = saved;
  stale[4] = static_cast<char>(stale[4] + 1);  // the count's low byte
  std::shared_ptr<const ArrayView> wrong = array.View();
  ASSERT_TRUE(wrong->RestoreCounts(stale).ok());
  count = wrong->CellCount();
  ASSERT_TRUE(count.ok());
  EXPECT_EQ(*count, 4u);
  auto read = wrong->ReadField("v");
  ASSERT_FALSE(read.ok());
  EXPECT_EQ(read.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(read.error().message().find("a stale entry"), std::string::npos)
      << read.error().message();
  // Bytes after the count, or a count given to a view that built its index
  // with other cells, are refused.
  EXPECT_FALSE(array.View()->RestoreCounts(saved + "x").ok());
  std::shared_ptr<const ArrayView> built = array.View();
  ASSERT_TRUE(built->ReadField("v").ok());
  const Status refused = built->RestoreCounts(stale);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code(), ErrorCode::kCorrupt);
}

}  // namespace
}  // namespace tiledbfs::core
