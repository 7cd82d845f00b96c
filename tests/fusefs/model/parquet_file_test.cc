// data.parquet through the model: what its stat and its reads cost in
// tiles (docs/namespace.md "Parquet": st_size exact, reading one column
// decodes only that field's tiles). Its bytes are read by DuckDB and
// hyparquet in tests/mount/parquet_clients_test.py.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "core/read/tile_source.h"
#include "fusefs/model/tree.h"
#include "tests/fusefs/model/read_file.h"

namespace tiledbfs::fusefs::parquet_file_test {
namespace {

namespace fs = std::filesystem;
const fs::path kCorpus = fs::path(TILEDBFS_TEST_DATA) / "corpus";

uint64_t Tiles() { return core::TileDecodeStats().tiles; }

// dense_1d: x INT64 [1,100], a INT32, fixed-size and not nullable.
TEST(ParquetFileTest, ADenseViewOfFixedSizeFieldsIsSizedFromItsShape) {
  auto tree = OpenTree((kCorpus / "arrays" / "dense_1d").string(), TreeOptions{});
  ASSERT_TRUE(tree.ok()) << tree.error().ToString();
  const uint64_t before = Tiles();
  auto attr = (*tree)->GetAttr("data.parquet");
  ASSERT_TRUE(attr.ok()) << attr.error().ToString();
  EXPECT_EQ(Tiles(), before) << "stat decoded tiles";
  auto file = (*tree)->Open("data.parquet");
  ASSERT_TRUE(file.ok()) << file.error().ToString();
  const std::string bytes = Read(**file, 0, attr->size + 10);
  ASSERT_EQ(bytes.size(), attr->size);
  EXPECT_EQ(bytes.substr(0, 4), "PAR1");
  EXPECT_EQ(bytes.substr(bytes.size() - 4), "PAR1");
  // a's values follow its page header as a.bin holds them (INT32 PLAIN).
  auto bin = (*tree)->Open("attributes/a.bin");
  ASSERT_TRUE(bin.ok());
  const std::string a = Read(**bin, 0, 400);
  ASSERT_EQ(a.size(), 400u);
  EXPECT_NE(bytes.find(a), std::string::npos);
}

TEST(ParquetFileTest, ReadingOneColumnDecodesOnlyItsTiles) {
  const std::string array = (kCorpus / "arrays" / "dense_1d").string();
  // a's tiles, as a fresh tree's read of a.bin decodes them.
  auto first = OpenTree(array, TreeOptions{});
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  auto bin = (*first)->Open("attributes/a.bin");
  ASSERT_TRUE(bin.ok());
  uint64_t before = Tiles();
  const std::string a = Read(**bin, 0, 1 << 20);
  const uint64_t a_tiles = Tiles() - before;
  ASSERT_GT(a_tiles, 0u);
  // Where a's values are in data.parquet (its whole bytes, from that tree).
  auto whole = (*first)->Open("data.parquet");
  ASSERT_TRUE(whole.ok());
  const std::string bytes = Read(**whole, 0, (*whole)->size());
  const size_t at = bytes.find(a);
  ASSERT_NE(at, std::string::npos) << "a's values are not in data.parquet as a.bin holds them";
  // On a fresh tree: the footer and x's values (coordinates of a dense
  // view) decode nothing; a's values decode a's tiles, once.
  auto tree = OpenTree(array, TreeOptions{});
  ASSERT_TRUE(tree.ok());
  auto file = (*tree)->Open("data.parquet");
  ASSERT_TRUE(file.ok());
  before = Tiles();
  EXPECT_EQ(Read(**file, bytes.size() - 200, 200), bytes.substr(bytes.size() - 200));
  EXPECT_EQ(Read(**file, 0, 200), bytes.substr(0, 200));  // x's chunk
  EXPECT_EQ(Tiles(), before) << "the footer or x decoded tiles";
  EXPECT_EQ(Read(**file, at, a.size()), a);
  EXPECT_EQ(Tiles() - before, a_tiles);
}

}  // namespace
}  // namespace tiledbfs::fusefs::parquet_file_test
