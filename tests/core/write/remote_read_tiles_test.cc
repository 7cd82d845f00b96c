// ReadTiles on a storage that prefers parallel reads (its remote path,
// tile_source.h): a dense array of 16 tiles of 128 KiB stored, written by
// our writer, read in units of 4 tiles through RemoteStorage. Each tile is
// what ReadTile gives, handed to ReadTilesEach's sink once; every stored
// byte is read once; a unit is read while another is under way (the
// storage holds the first until then); the bytes under way stay within
// the 16 MiB a call may hold; and the decode-ahead workers cache each
// remote tile as it comes.
#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <stdexcept>
#include <vector>

#include "core/read/tile_cache.h"
#include "core/read/tile_source.h"
#include "tests/core/read/wrapped_storage.h"
#include "tests/core/write/temp_array.h"

namespace tiledbfs::core {
namespace {

constexpr uint64_t kTiles = 16;

class RemoteReadTilesTest : public ::testing::Test {
 protected:
  RemoteReadTilesTest() : array_("remote_tiles") {}

  void SetUp() override {
    // Tiles of 64 x 256 FLOAT64 cells, unfiltered: 128 KiB stored each.
    SyntheticSpec spec;
    spec.seed = 5;
    array_.CreateSynthetic(R"({"array_type":"dense","tile_order":"row-major",
      "cell_order":"row-major","dims":[
      {"name":"r","type":"INT64","domain":[0,1023],"tile_extent":64},
      {"name":"c","type":"INT64","domain":[0,255],"tile_extent":256}],
      "attrs":[{"name":"f","type":"FLOAT64"}]})",
                           spec);
  }

  // The array through a RemoteStorage of parallelism 4, and its tiles.
  void Open(bool hold_first) {
    auto local = LocalStorage::Open(array_.root().string());
    ASSERT_TRUE(local.ok());
    storage_ = std::make_shared<RemoteStorage>(*local, 4, hold_first);
    auto array = Array::Open(storage_, std::nullopt, DefaultLimits());
    ASSERT_TRUE(array.ok()) << array.error().ToString();
    array_open_ = *array;
    auto view = array_open_->ViewAt(UINT64_MAX);
    ASSERT_TRUE(view.ok()) << view.error().ToString();
    view_ = *view;
    ASSERT_EQ(view_->fragments().size(), 1u);
    const FragmentMetadata& frag = *view_->fragments()[0];
    ASSERT_EQ(frag.tile_num(), kTiles);
    tiles_.clear();
    stored_ = 0;
    for (uint64_t t = 0; t < kTiles; ++t) {
      tiles_.push_back({&frag, FieldRef::Attribute(0), t});
      auto loc = frag.FixedTile(FieldRef::Attribute(0), t);
      ASSERT_TRUE(loc.ok());
      stored_ += loc->size;
    }
  }

  TempArray array_;
  std::shared_ptr<RemoteStorage> storage_;
  std::shared_ptr<Array> array_open_;
  std::shared_ptr<const ArrayView> view_;
  std::vector<TileRequest> tiles_;
  uint64_t stored_ = 0;
};

TEST_F(RemoteReadTilesTest, EachTileOnceAsReadTileGivesIt) {
  ASSERT_NO_FATAL_FAILURE(Open(false));
  const size_t before = storage_->calls();
  const uint64_t read_before = storage_->read_bytes();
  std::vector<std::atomic<int>> handed(kTiles);
  std::vector<std::optional<Result<DecodedTile>>> got(kTiles);
  ReadTilesEach(tiles_, false, 0, [&](size_t i, Result<DecodedTile> tile) {
    ASSERT_LT(i, kTiles);
    if (handed[i].fetch_add(1) == 0) got[i] = std::move(tile);
  });
  for (uint64_t t = 0; t < kTiles; ++t) {
    SCOPED_TRACE("tile " + std::to_string(t));
    EXPECT_EQ(handed[t].load(), 1);
    ASSERT_TRUE(got[t] && got[t]->ok());
    auto one = ReadTile(*tiles_[t].fragment, tiles_[t].field, t, false);
    ASSERT_TRUE(one.ok());
    EXPECT_EQ((*got[t])->fixed, one->fixed);
    EXPECT_EQ((*got[t])->cell_num, one->cell_num);
  }
  // Units of 4 tiles (512 KiB), one ReadMany each, which may cut it
  // (spread 0); every byte read once.
  EXPECT_EQ(storage_->calls() - before, kTiles / 4);
  for (size_t spread : storage_->spreads()) EXPECT_EQ(spread, 0u);
  EXPECT_EQ(storage_->read_bytes() - read_before, stored_);
  EXPECT_LE(storage_->peak_bytes(), uint64_t{16} << 20);
}

// Read ahead of a sequential reader (the decode-ahead workers), the 16
// tiles (2 MiB stored, under the 8 MiB of a unit) are one unit: one
// ReadMany, asked not to be cut (spread 1), so that on S3 its adjacent
// ranges are one GET; each tile is still what ReadTile gives.
TEST_F(RemoteReadTilesTest, ReadAheadIsOneUnitUpTo8MiB) {
  ASSERT_NO_FATAL_FAILURE(Open(false));
  const size_t before = storage_->calls();
  const uint64_t read_before = storage_->read_bytes();
  std::vector<std::atomic<int>> handed(kTiles);
  ReadTilesEach(
      tiles_, false, 0,
      [&](size_t i, Result<DecodedTile> tile) {
        ASSERT_LT(i, kTiles);
        ++handed[i];
        ASSERT_TRUE(tile.ok()) << tile.error().ToString();
        auto one = ReadTile(*tiles_[i].fragment, tiles_[i].field, i, false);
        ASSERT_TRUE(one.ok());
        EXPECT_EQ(tile->fixed, one->fixed);
      },
      /*ahead=*/true);
  for (uint64_t t = 0; t < kTiles; ++t) EXPECT_EQ(handed[t].load(), 1) << "tile " << t;
  ASSERT_EQ(storage_->calls() - before, 1u);
  EXPECT_EQ(storage_->spreads().back(), 1u);
  EXPECT_EQ(storage_->read_bytes() - read_before, stored_);
}

// A sink that throws stops every reading thread; the exception comes out of
// the call once they are joined (no hang, no std::terminate).
TEST_F(RemoteReadTilesTest, ASinkThatThrowsStopsTheCall) {
  ASSERT_NO_FATAL_FAILURE(Open(false));
  std::atomic<int> handed{0};
  EXPECT_THROW(ReadTilesEach(tiles_, false, 0,
                             [&](size_t i, Result<DecodedTile>) {
                               ++handed;
                               if (i == 5) throw std::runtime_error("sink full");
                             }),
               std::runtime_error);
  EXPECT_GE(handed.load(), 1);
  EXPECT_LE(handed.load(), static_cast<int>(kTiles));
}

TEST_F(RemoteReadTilesTest, AUnitIsReadWhileAnotherIsUnderWay) {
  ASSERT_NO_FATAL_FAILURE(Open(true));
  std::vector<Result<DecodedTile>> got = ReadTiles(tiles_, false);
  EXPECT_TRUE(storage_->met()) << "no second ReadMany began while the first was under way";
  ASSERT_EQ(got.size(), kTiles);
  for (const auto& t : got) EXPECT_TRUE(t.ok());
}

TEST_F(RemoteReadTilesTest, DecodedAheadRemoteTilesAreCached) {
  ASSERT_NO_FATAL_FAILURE(Open(false));
  TileCache cache(uint64_t{64} << 20, 2);
  const FragmentMetadata& frag = *view_->fragments()[0];
  const int field = frag.FieldIndex(FieldRef::Attribute(0));
  for (uint64_t t = 0; t < kTiles; ++t) {
    AheadTile a{TileKey{&frag, field, t}, view_->fragments()[0], FieldRef::Attribute(0), false,
                uint64_t{128} << 10};
    ASSERT_TRUE(cache.DecodeAhead(std::move(a)));
  }
  cache.WaitForAhead();
  for (uint64_t t = 0; t < kTiles; ++t) {
    auto tile = cache.Get(TileKey{&frag, field, t});
    ASSERT_TRUE(tile) << "tile " << t;
    auto one = ReadTile(frag, FieldRef::Attribute(0), t, false);
    ASSERT_TRUE(one.ok());
    EXPECT_EQ(tile->fixed, one->fixed);
  }
}

}  // namespace
}  // namespace tiledbfs::core
