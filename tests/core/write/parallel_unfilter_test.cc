// A big tile's chunks unfiltered on several threads (TileContext::threads)
// give the bytes and the errors that one thread gives, and only tiles worth
// the threads take that path. Tiles are written by our own writer.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/filters/filter_pipeline.h"
#include "core/write/filter_writer.h"

namespace tiledbfs::core {
namespace {

FilterPipeline Pipeline(std::vector<FilterType> types) {
  FilterPipeline p;
  for (FilterType t : types) {
    Filter f;
    f.type = t;
    if (t == FilterType::kZstd || t == FilterType::kGzip) f.compression_level = 3;
    p.filters.push_back(f);
  }
  return p;
}

// `n` uint64 values that compress little: the writer cuts chunks of 64 KiB.
ByteVec Values(uint64_t n) {
  ByteVec tile(n * 8);
  uint64_t x = 88172645463325252u;
  for (uint64_t i = 0; i < n; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    std::memcpy(tile.data() + i * 8, &x, 8);
  }
  return tile;
}

TileContext Context(uint64_t size, unsigned threads) {
  TileContext ctx(DefaultLimits());
  ctx.type = Datatype::kUInt64;
  ctx.cell_size = 8;
  ctx.file = "a0.tdb";
  ctx.expected_size = size;
  ctx.threads = threads;
  return ctx;
}

TEST(UnfilterOnThreadsTest, GivesTheBytesOneThreadGives) {
  const ByteVec tile = Values(100000);  // 800,000 bytes: 13 chunks, the last short
  for (auto types : {std::vector<FilterType>{FilterType::kByteshuffle, FilterType::kZstd},
                     std::vector<FilterType>{FilterType::kChecksumSha256, FilterType::kLz4},
                     std::vector<FilterType>{FilterType::kBitshuffle, FilterType::kGzip},
                     std::vector<FilterType>{}}) {
    FilterPipeline p = Pipeline(types);
    auto filtered = FilterFixedTile(p, tile, Datatype::kUInt64, 8);
    ASSERT_TRUE(filtered.ok()) << filtered.error().ToString();
    for (unsigned threads : {1u, 2u, 3u, 16u}) {
      const uint64_t before = TilesUnfilteredInParallel();
      auto got = UnfilterTile(p, *filtered, Context(tile.size(), threads));
      ASSERT_TRUE(got.ok()) << got.error().ToString();
      EXPECT_EQ(*got, tile) << "threads " << threads << ", " << types.size() << " filters";
      EXPECT_EQ(TilesUnfilteredInParallel() - before, threads > 1 ? 1u : 0u);
    }
  }
}

// The error is the one of the first damaged chunk in the tile's order, as
// with one thread, whichever thread met which damage first.
TEST(UnfilterOnThreadsTest, FailsWithTheFirstDamagedChunksError) {
  const ByteVec tile = Values(100000);
  FilterPipeline p = Pipeline({FilterType::kChecksumSha256, FilterType::kZstd});
  auto filtered = FilterFixedTile(p, tile, Datatype::kUInt64, 8);
  ASSERT_TRUE(filtered.ok());
  auto spans = MapChunks(*filtered);
  ASSERT_TRUE(spans.ok());
  ASSERT_GE(spans->size(), 12u);
  for (std::vector<size_t> damaged : {std::vector<size_t>{11}, {2, 11}, {0, 1, 12}}) {
    ByteVec bad = *filtered;
    for (size_t c : damaged) {
      const ChunkSpan& s = (*spans)[c];
      bad[s.stored_offset + s.stored_size - 1] ^= 0x5a;  // in the chunk's data
    }
    auto one = UnfilterTile(p, bad, Context(tile.size(), 1));
    ASSERT_FALSE(one.ok());
    EXPECT_EQ(one.error().code(), ErrorCode::kCorrupt);
    for (unsigned threads : {2u, 4u}) {
      auto many = UnfilterTile(p, bad, Context(tile.size(), threads));
      ASSERT_FALSE(many.ok());
      EXPECT_EQ(many.error().ToString(), one.error().ToString()) << "threads " << threads;
    }
  }
}

// Small tiles, ranges of a tile and tiles that decode to more than 64 times
// their stored bytes stay on the caller; they decode as before.
TEST(UnfilterOnThreadsTest, TilesNotWorthTheThreadsStayOnTheCaller) {
  FilterPipeline p = Pipeline({FilterType::kByteshuffle, FilterType::kZstd});
  const ByteVec small = Values(32767);  // 8 bytes short of 256 KiB
  auto small_f = FilterFixedTile(p, small, Datatype::kUInt64, 8);
  ASSERT_TRUE(small_f.ok());
  const ByteVec zeros(1 << 20, 0);  // compresses far beyond 64 to 1
  auto zeros_f = FilterFixedTile(p, zeros, Datatype::kUInt64, 8);
  ASSERT_TRUE(zeros_f.ok());
  ASSERT_LT(zeros_f->size() * 64 + 4096, zeros.size());
  const ByteVec big = Values(65536);  // 512 KiB
  auto big_f = FilterFixedTile(p, big, Datatype::kUInt64, 8);
  ASSERT_TRUE(big_f.ok());

  const uint64_t before = TilesUnfilteredInParallel();
  auto a = UnfilterTile(p, *small_f, Context(small.size(), 2));
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(*a, small);
  auto b = UnfilterTile(p, *zeros_f, Context(zeros.size(), 2));
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, zeros);
  TileContext ranged = Context(big.size(), 2);
  uint64_t start = 1;
  auto c = UnfilterTileRange(p, *big_f, ranged, 70000, 140000, &start);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(start, 65536u);
  EXPECT_TRUE(std::equal(c->begin(), c->end(), big.begin() + 65536));
  EXPECT_EQ(TilesUnfilteredInParallel(), before);
  // The whole of the big tile does go on the threads, and a range that
  // covers the whole tile with it.
  auto d = UnfilterTileRange(p, *big_f, ranged, 0, big.size(), &start);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(start, 0u);
  EXPECT_EQ(*d, big);
  EXPECT_EQ(TilesUnfilteredInParallel(), before + 1);
}

// A tile that claims more bytes than its chunks hold is refused before any
// thread starts, as with one thread.
TEST(UnfilterOnThreadsTest, AWrongExpectedSizeIsRefusedFirst) {
  FilterPipeline p = Pipeline({FilterType::kByteshuffle, FilterType::kZstd});
  const ByteVec tile = Values(65536);
  auto filtered = FilterFixedTile(p, tile, Datatype::kUInt64, 8);
  ASSERT_TRUE(filtered.ok());
  const uint64_t before = TilesUnfilteredInParallel();
  auto got = UnfilterTile(p, *filtered, Context(tile.size() + 8, 2));
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(got.error().message().find("a0.tdb"), std::string::npos);
  EXPECT_EQ(TilesUnfilteredInParallel(), before);
}

}  // namespace
}  // namespace tiledbfs::core
