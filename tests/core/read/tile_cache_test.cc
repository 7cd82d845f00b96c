// The tile cache's budget (core/read/tile_cache.h): least recently used
// tiles out first, each counted for the memory it holds.
#include "core/read/tile_cache.h"

#include <gtest/gtest.h>

#include <memory>

namespace tiledbfs::core {
namespace {

constexpr uint64_t kTile = 1000;  // bytes of each tile here

TileKey Key(uint64_t tile) { return TileKey{nullptr, 0, tile, 0}; }

std::shared_ptr<const DecodedTile> Tile() {
  auto t = std::make_shared<DecodedTile>();
  t->cell_num = kTile;
  t->cell_size = 1;
  t->fixed.resize(kTile);
  return t;
}

TEST(TileCacheTest, LeastRecentlyUsedTilesGoFirst) {
  TileCache cache(3 * kTile, 1);
  for (uint64_t t = 0; t < 3; ++t) cache.Put(Key(t), Tile(), nullptr);
  ASSERT_TRUE(cache.Get(Key(0)));  // 0 is now the most recent: 1 goes first
  cache.Put(Key(3), Tile(), nullptr);
  EXPECT_TRUE(cache.Contains(Key(0)));
  EXPECT_FALSE(cache.Contains(Key(1)));
  EXPECT_TRUE(cache.Contains(Key(2)));
  EXPECT_TRUE(cache.Contains(Key(3)));
  EXPECT_EQ(cache.used_bytes(), 3 * kTile);
}

// A tile counts for the memory its buffers hold, room beyond their bytes
// included: the budget bounds memory, not bytes.
TEST(TileCacheTest, TilesCountTheMemoryTheyHold) {
  auto t = std::make_shared<DecodedTile>();
  t->fixed.reserve(3 * kTile);
  t->fixed.resize(kTile);
  t->offsets.reserve(10);
  EXPECT_EQ(TileCache::SizeOf(*t), t->fixed.capacity() + 80);
  TileCache cache(4 * kTile, 1);
  cache.Put(Key(0), Tile(), nullptr);
  cache.Put(Key(1), t, nullptr);  // 1 tile's bytes, but 3 tiles' memory and more: 0 goes
  EXPECT_FALSE(cache.Contains(Key(0)));
  EXPECT_EQ(cache.used_bytes(), TileCache::SizeOf(*t));
}

}  // namespace
}  // namespace tiledbfs::core
