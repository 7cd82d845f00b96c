// A read across many small fragments (each tile its own small files): the
// tiles it misses are read together through Storage::ReadMany, all of them,
// not only a first batch, and the values are those of tile-by-tile reads.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/read/tile_cache.h"
#include "core/read/tile_source.h"
#include "core/storage/uring_reader.h"
#include "core/write/fragment_writer.h"
#include "core/write/schema_writer.h"
#include "core/write/synthetic.h"
#include "tests/core/write/temp_array.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

// More fragments than one batch of ReadTiles takes (256).
constexpr uint64_t kFragments = 300;

class ManyFragmentsReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // One row of 4 cells per tile: fragment k writes row k, one tile.
    SyntheticSpec spec;
    spec.seed = 5;
    spec.fragments = kFragments;
    array_.CreateSynthetic(R"({"array_type":"dense","tile_order":"row-major",
      "cell_order":"row-major","dims":[
      {"name":"r","type":"INT64","domain":[0,299],"tile_extent":1},
      {"name":"c","type":"INT64","domain":[0,3],"tile_extent":4}],
      "attrs":[{"name":"f","type":"FLOAT64","filters":["ZSTD"]}]})",
                           spec);
  }

  TempArray array_{"many"};
  const fs::path& root_ = array_.root();
};

TEST_F(ManyFragmentsReadTest, EveryMissingTileIsReadTogether) {
  if (UringReader::Create() == nullptr) {
    GTEST_SKIP() << "io_uring is not available here (kernel, seccomp or "
                    "kernel.io_uring_disabled): tiles are read one at a time";
  }
  auto storage = LocalStorage::Open(root_.string());
  ASSERT_TRUE(storage.ok()) << storage.error().ToString();
  auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
  ASSERT_TRUE(array.ok()) << array.error().ToString();
  (*array)->set_tile_cache(std::make_shared<TileCache>(uint64_t{64} << 20));
  auto view = (*array)->ViewAt(UINT64_MAX);
  ASSERT_TRUE(view.ok()) << view.error().ToString();
  ASSERT_EQ((*view)->fragments().size(), kFragments);

  const uint64_t before = (*storage)->batched_reads();
  auto column = (*view)->ReadFieldRange("f", 0, kFragments * 4);
  ASSERT_TRUE(column.ok()) << column.error().ToString();
  // One small file per tile, every one through the ring.
  EXPECT_EQ((*storage)->batched_reads() - before, kFragments);

  // The values: row k is fragment k's only tile.
  ASSERT_EQ(column->data.size(), kFragments * 4 * 8);
  for (const auto& frag : (*view)->fragments()) {
    auto tile = ReadTile(*frag, FieldRef::Attribute(0), 0, false);
    ASSERT_TRUE(tile.ok()) << tile.error().ToString();
    ASSERT_EQ(tile->fixed.size(), 32u);
    const std::vector<Range>& ned = frag->footer().non_empty_domain;
    ASSERT_EQ(ned.size(), 2u);
    ASSERT_EQ(ned[0].lo.size(), 8u);
    int64_t row = 0;
    std::memcpy(&row, ned[0].lo.data(), 8);
    ASSERT_LT(static_cast<uint64_t>(row), kFragments);
    EXPECT_EQ(0, std::memcmp(column->data.data() + row * 32, tile->fixed.data(), 32)) << row;
  }
}

}  // namespace
}  // namespace tiledbfs::core
