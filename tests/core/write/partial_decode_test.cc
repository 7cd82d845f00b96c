// Decoding part of a tile: UnfilterTileRange unfilters only the chunks that
// hold a byte range, ReadTilePart the cells a seek needs, and a reader with
// ReadState::parts reads the same bytes as a whole-tile read while keeping
// nothing in the cache. Tiles are written by our own writer with small
// chunks (many per tile).
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/read/tile_cache.h"
#include "core/read/tile_source.h"
#include "core/write/filter_writer.h"
#include "core/write/fragment_writer.h"
#include "core/write/schema_writer.h"
#include "core/write/synthetic.h"
#include "tests/core/read/wrapped_storage.h"
#include "tests/core/write/temp_array.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

FilterPipeline Pipeline(uint32_t chunk, std::vector<FilterType> types) {
  FilterPipeline p;
  p.max_chunk_size = chunk;
  for (FilterType t : types) {
    Filter f;
    f.type = t;
    if (t == FilterType::kZstd) f.compression_level = 3;
    p.filters.push_back(f);
  }
  return p;
}

// 100,000 uint64 values: chunks of 64 KiB (8192 values; TileDB's writer
// and ours cut fixed tiles at 64 KiB, whatever the pipeline's max chunk size).
ByteVec Values() {
  ByteVec tile(100000 * 8, 0);
  for (uint64_t i = 0; i < 100000; ++i) {
    uint64_t v = i * 2654435761u;
    std::memcpy(tile.data() + i * 8, &v, 8);
  }
  return tile;
}

TileContext Context(uint64_t size) {
  TileContext ctx(DefaultLimits());
  ctx.type = Datatype::kUInt64;
  ctx.cell_size = 8;
  ctx.file = "a0.tdb";
  ctx.expected_size = size;
  return ctx;
}

// A tile compressed far more than its plausible reservation (64 times)
// grows as it decodes, then gives back the slack: the tile cache counts a
// tile's capacity, so slack would be memory past its budget.
TEST(UnfilterTileTest, TilesCompressedFarHoldNoSlack) {
  const ByteVec zeros(100000 * 8, 0);
  for (uint32_t chunk : {65536u, 1u << 20}) {
    FilterPipeline p = Pipeline(chunk, {FilterType::kZstd});
    auto filtered = FilterFixedTile(p, zeros, Datatype::kUInt64, 8);
    ASSERT_TRUE(filtered.ok()) << filtered.error().ToString();
    ASSERT_LT(filtered->size() * 64, zeros.size());
    TileContext ctx = Context(zeros.size());
    auto whole = UnfilterTile(p, *filtered, ctx);
    ASSERT_TRUE(whole.ok()) << whole.error().ToString();
    EXPECT_EQ(*whole, zeros);
    EXPECT_LE(whole->capacity(), whole->size() + whole->size() / 16 + 4096) << chunk;
    uint64_t start = 0;
    auto part = UnfilterTileRange(p, *filtered, ctx, 100, 200000, &start);
    ASSERT_TRUE(part.ok()) << part.error().ToString();
    EXPECT_LE(part->capacity(), part->size() + part->size() / 16 + 4096) << chunk;
  }
}

TEST(UnfilterTileRangeTest, DecodesTheChunksHoldingTheRange) {
  const ByteVec tile = Values();
  for (auto types : {std::vector<FilterType>{FilterType::kByteshuffle, FilterType::kZstd},
                     std::vector<FilterType>{FilterType::kChecksumSha256, FilterType::kLz4},
                     std::vector<FilterType>{}}) {
    FilterPipeline p = Pipeline(65536, types);
    auto filtered = FilterFixedTile(p, tile, Datatype::kUInt64, 8);
    ASSERT_TRUE(filtered.ok()) << filtered.error().ToString();
    std::mt19937_64 rng(5);
    for (int k = 0; k < 200; ++k) {
      uint64_t from = rng() % tile.size(), to = from + 1 + rng() % 140000;
      to = std::min<uint64_t>(to, tile.size());
      uint64_t start = 99;
      auto part = UnfilterTileRange(p, *filtered, Context(tile.size()), from, to, &start);
      ASSERT_TRUE(part.ok()) << part.error().ToString();
      // Whole chunks: from the chunk holding `from` to the one holding to - 1.
      EXPECT_EQ(start, from / 65536 * 65536);
      const uint64_t end = std::min<uint64_t>((to + 65535) / 65536 * 65536, tile.size());
      ASSERT_EQ(part->size(), end - start) << from << " " << to;
      EXPECT_TRUE(std::equal(part->begin(), part->end(), tile.begin() + start));
    }
    uint64_t start = 99;
    auto all = UnfilterTileRange(p, *filtered, Context(tile.size()), 0, tile.size(), &start);
    ASSERT_TRUE(all.ok());
    EXPECT_EQ(start, 0u);
    EXPECT_EQ(*all, tile);
    auto none = UnfilterTileRange(p, *filtered, Context(tile.size()), 50, 50, &start);
    ASSERT_TRUE(none.ok());
    EXPECT_TRUE(none->empty());
    // The chunks' lengths are checked against the tile's size even for a range.
    auto wrong = UnfilterTileRange(p, *filtered, Context(tile.size() + 8), 0, 8, &start);
    ASSERT_FALSE(wrong.ok());
    EXPECT_EQ(wrong.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(wrong.error().message().find("a0.tdb"), std::string::npos);
  }
}

// A damaged chunk fails the ranges that need it, and only those.
TEST(UnfilterTileRangeTest, ADamagedChunkFailsOnlyTheRangesThatNeedIt) {
  const ByteVec tile = Values();
  FilterPipeline p = Pipeline(65536, {FilterType::kChecksumSha256, FilterType::kZstd});
  auto filtered = FilterFixedTile(p, tile, Datatype::kUInt64, 8);
  ASSERT_TRUE(filtered.ok());
  ByteVec bad = *filtered;
  bad[bad.size() - 3] ^= 0x5a;  // in the last chunk's data
  uint64_t start = 0;
  auto early = UnfilterTileRange(p, bad, Context(tile.size()), 0, 100, &start);
  ASSERT_TRUE(early.ok()) << early.error().ToString();
  EXPECT_TRUE(std::equal(early->begin(), early->end(), tile.begin()));
  auto late = UnfilterTileRange(p, bad, Context(tile.size()), tile.size() - 8, tile.size(), &start);
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(late.error().message().find("a0.tdb"), std::string::npos) << late.error().ToString();
  // Framing cut short is refused whatever the range.
  ByteVec cut(filtered->begin(), filtered->begin() + filtered->size() / 2);
  auto c = UnfilterTileRange(p, cut, Context(tile.size()), 0, 8, &start);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().code(), ErrorCode::kCorrupt);
}

// MapChunks finds every chunk's record; UnfilterChunkRecords of a record
// alone gives that chunk's bytes, and refuses a record of another size.
TEST(UnfilterChunkRecordsTest, EachChunkAloneGivesItsBytes) {
  const ByteVec tile = Values();
  FilterPipeline p = Pipeline(65536, {FilterType::kByteshuffle, FilterType::kZstd});
  auto filtered = FilterFixedTile(p, tile, Datatype::kUInt64, 8);
  ASSERT_TRUE(filtered.ok()) << filtered.error().ToString();
  auto spans = MapChunks(*filtered, 1000);
  ASSERT_TRUE(spans.ok()) << spans.error().ToString();
  ASSERT_EQ(spans->size(), (tile.size() + 65535) / 65536);
  EXPECT_EQ(spans->front().stored_offset, 8u);
  EXPECT_EQ(spans->back().stored_offset + spans->back().stored_size, filtered->size());
  for (size_t c = 0; c < spans->size(); ++c) {
    const ChunkSpan& s = (*spans)[c];
    EXPECT_EQ(s.unfiltered_offset, c * 65536);
    TileContext ctx = Context(tile.size());
    ctx.file_offset = 1000 + s.stored_offset;
    Bytes record(filtered->data() + s.stored_offset, s.stored_size);
    auto got = UnfilterChunkRecords(p, record, std::span(&s, 1), ctx);
    ASSERT_TRUE(got.ok()) << got.error().ToString();
    ASSERT_EQ(got->size(), s.unfiltered_size);
    EXPECT_TRUE(std::equal(got->begin(), got->end(), tile.begin() + s.unfiltered_offset)) << c;
  }
  // Two chunks together.
  Bytes two(filtered->data() + (*spans)[1].stored_offset,
            (*spans)[1].stored_size + (*spans)[2].stored_size);
  auto both = UnfilterChunkRecords(p, two, std::span(*spans).subspan(1, 2), Context(0));
  ASSERT_TRUE(both.ok()) << both.error().ToString();
  EXPECT_TRUE(std::equal(both->begin(), both->end(), tile.begin() + 65536));
  // The last chunk (shorter) taken for the first: its length differs.
  const ChunkSpan& last = spans->back();
  ASSERT_NE(last.unfiltered_size, 65536u);
  Bytes record(filtered->data() + last.stored_offset, last.stored_size);
  auto wrong = UnfilterChunkRecords(p, record, std::span(*spans).subspan(0, 1), Context(0));
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(wrong.error().message().find("a0.tdb"), std::string::npos);
  // A record cut short, and framing cut short for MapChunks.
  auto cut = UnfilterChunkRecords(p, Bytes(record.data(), record.size() - 1), std::span(&last, 1),
                                  Context(0));
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.error().code(), ErrorCode::kCorrupt);
  auto cut_map = MapChunks(Bytes(filtered->data(), filtered->size() - 1));
  ASSERT_FALSE(cut_map.ok());
  EXPECT_EQ(cut_map.error().code(), ErrorCode::kCorrupt);
}

// The nice value of every thread of this process (/proc/self/task/*/stat:
// the 17th field after the command's closing parenthesis).
std::vector<int> ThreadNiceValues() {
  std::vector<int> out;
  for (const auto& task : fs::directory_iterator("/proc/self/task")) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream fields(stat.substr(close + 1));
    std::string field;
    for (int i = 0; i < 17 && fields >> field; ++i) {
    }
    if (fields) out.push_back(std::stoi(field));
  }
  return out;
}

class PartialReadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Tiles of 128 x 256 cells: 256 KiB of f, in 4 chunks of 64 KiB (32 rows).
    SyntheticSpec spec;
    spec.seed = 11;
    spec.fragments = 3;  // bands of 128 rows: one row of tiles each
    array_.CreateSynthetic(R"({"array_type":"dense","tile_order":"row-major",
      "cell_order":"row-major","dims":[
      {"name":"r","type":"INT64","domain":[0,383],"tile_extent":128},
      {"name":"c","type":"INT64","domain":[0,511],"tile_extent":256}],
      "attrs":[{"name":"f","type":"FLOAT64","filter_pipeline":{"max_chunk_size":4096,
                 "filters":[{"name":"BYTESHUFFLE"},{"name":"ZSTD","level":3}]}},
               {"name":"n","type":"INT32","nullable":true,"filter_pipeline":{"max_chunk_size":4096,
                 "filters":[{"name":"LZ4"}]}},
               {"name":"s","type":"STRING_ASCII","var":true,"filters":["ZSTD"]}]})",
                           spec);
  }

  // The latest view, its array's tile cache of `budget` bytes in *cache.
  std::shared_ptr<const ArrayView> View(uint64_t budget, std::shared_ptr<TileCache>* cache) {
    // Two threads decode ahead whatever cores the tests run on.
    *cache = std::make_shared<TileCache>(budget, 2);
    return array_.View(UINT64_MAX, *cache);
  }

  // How many whole tiles of attribute `name` the cache holds (chunk
  // parts, kept under their own keys, not counted).
  static int WholeTilesCached(const TileCache& cache, const ArrayView& view,
                              const std::string& name) {
    int n = 0;
    for (const auto& frag : view.fragments()) {
      const int footer = frag->FieldIndex(FieldRef::Attribute(frag->schema().AttributeIndex(name)));
      for (uint64_t t = 0; t < frag->tile_num(); ++t) {
        n += cache.Contains(TileKey{frag.get(), footer, t}) ? 1 : 0;
      }
    }
    return n;
  }

  TempArray array_{"partial"};
  const fs::path& root_ = array_.root();
};

TEST_F(PartialReadTest, ReadTilePartDecodesTheChunksOfTheCells) {
  std::shared_ptr<TileCache> cache;
  auto view = View(64 << 20, &cache);
  ASSERT_EQ(view->fragments().size(), 3u);
  const FragmentMetadata& frag = *view->fragments()[1];
  const FieldRef f = FieldRef::Attribute(frag.schema().AttributeIndex("f"));
  auto whole = ReadTile(frag, f, 1, false);
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  ASSERT_EQ(whole->cell_num, 128u * 256u);
  for (auto [from, to] : {std::pair<uint64_t, uint64_t>{0, 1},
                          {9000, 9700},
                          {8191, 8193},
                          {32767, 32768},
                          {0, 32768}}) {
    auto part = ReadTilePart(frag, f, 1, false, from, to);
    ASSERT_TRUE(part.ok()) << part.error().ToString();
    // Chunks of 8192 cells.
    EXPECT_EQ(part->first, from / 8192 * 8192) << from;
    EXPECT_EQ(part->first + part->tile.cell_num, (to + 8191) / 8192 * 8192) << to;
    EXPECT_TRUE(std::equal(part->tile.fixed.begin(), part->tile.fixed.end(),
                           whole->fixed.begin() + part->first * 8));
  }
  // Nullable and var-sized fields get their whole tile.
  for (const char* name : {"n", "s"}) {
    const FieldRef g = FieldRef::Attribute(frag.schema().AttributeIndex(name));
    auto part = ReadTilePart(frag, g, 1, false, 9000, 9700);
    ASSERT_TRUE(part.ok()) << part.error().ToString();
    EXPECT_EQ(part->first, 0u);
    EXPECT_EQ(part->tile.cell_num, 128u * 256u) << name;
  }
  // Cells outside the tile are refused.
  auto out = ReadTilePart(frag, f, 1, false, 32000, 32769);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().code(), ErrorCode::kInvalidArgument);
}

// With a chunk map, ReadTilePart reads only the records of the chunks it
// decodes: a damaged header of chunk 0 fails a read of the whole tile but
// not a part of chunk 3 read through the map.
TEST_F(PartialReadTest, ReadTilePartWithAMapReadsOnlyItsChunks) {
  std::shared_ptr<TileCache> cache;
  auto view = View(64 << 20, &cache);
  const FragmentMetadata& frag = *view->fragments()[1];
  const FieldRef f = FieldRef::Attribute(frag.schema().AttributeIndex("f"));
  auto whole = ReadTile(frag, f, 1, false);
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  std::shared_ptr<const ChunkMap> map;
  auto first = ReadTilePart(frag, f, 1, false, 100, 200, &map);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  ASSERT_TRUE(map);
  ASSERT_EQ(map->size(), 4u);  // 4 chunks of 8192 cells
  for (uint64_t from : {uint64_t{0}, uint64_t{8191}, uint64_t{20000}, uint64_t{30000}}) {
    auto part = ReadTilePart(frag, f, 1, false, from, from + 2, &map);
    ASSERT_TRUE(part.ok()) << part.error().ToString();
    EXPECT_EQ(part->first, from / 8192 * 8192);
    EXPECT_TRUE(std::equal(part->tile.fixed.begin(), part->tile.fixed.end(),
                           whole->fixed.begin() + part->first * 8))
        << from;
  }
  // Chunk 0's original length, in the file, made wrong.
  auto loc = frag.FixedTile(f, 1);
  ASSERT_TRUE(loc.ok());
  {
    std::fstream file(root_ / frag.DataFile(f), std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.good());
    file.seekp(static_cast<std::streamoff>(loc->offset + (*map)[0].stored_offset));
    const uint32_t bad = 12345;
    file.write(reinterpret_cast<const char*>(&bad), 4);
  }
  auto unmapped = ReadTilePart(frag, f, 1, false, 30000, 30002);
  ASSERT_FALSE(unmapped.ok());
  EXPECT_EQ(unmapped.error().code(), ErrorCode::kCorrupt);
  auto mapped = ReadTilePart(frag, f, 1, false, 30000, 30002, &map);
  ASSERT_TRUE(mapped.ok()) << mapped.error().ToString();
  EXPECT_TRUE(std::equal(mapped->tile.fixed.begin(), mapped->tile.fixed.end(),
                         whole->fixed.begin() + 24576 * 8));
  auto damaged = ReadTilePart(frag, f, 1, false, 0, 2, &map);
  ASSERT_FALSE(damaged.ok());
  EXPECT_EQ(damaged.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(damaged.error().message().find(frag.DataFile(f)), std::string::npos)
      << damaged.error().ToString();
}

// A sequential reader that the cache's StreamBudget refuses (others hold
// it) reads chunk parts: the same bytes, no whole tile in the cache, the
// parts of the tiles a read crosses kept for the next read and shared with
// other readers through the cache; once the budget is free again it reads
// whole tiles.
TEST_F(PartialReadTest, SequentialReadersPastTheStreamBudgetReadParts) {
  std::shared_ptr<TileCache> cache;
  auto view = View(64 << 20, &cache);
  std::shared_ptr<TileCache> other;
  auto whole = View(64 << 20, &other)->ReadField("f");
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  StreamShare others;
  ASSERT_TRUE(others.Ask(cache->stream_budget(), 32 << 20));  // all of it
  EXPECT_FALSE(StreamShare().Ask(cache->stream_budget(), 1));
  ReadState state;
  state.parts = true;
  constexpr uint64_t kCells = 384 * 512, kRows = 16;  // 16 rows of 512 cells per read
  ByteVec out(kCells * 8, 0);
  for (uint64_t i = 0; i < 256 * 512; i += kRows * 512) {
    auto part = view->ReadFieldRange("f", i, kRows * 512, &state, out.data() + i * 8);
    ASSERT_TRUE(part.ok()) << part.error().ToString();
    EXPECT_EQ(WholeTilesCached(*cache, *view, "f"), 0) << "a whole tile decoded at cell " << i;
    // Both tiles of the rows: one chunk (32 rows) of each, kept.
    const auto& parts = state.held_parts["f"];
    ASSERT_EQ(parts.size(), 2u) << i;
    for (const HeldPart& p : parts) {
      EXPECT_EQ(p.tile->cell_num, 8192u);
    }
  }
  EXPECT_EQ(state.streams["f"].bytes(), 0u);
  // The chunk maps are cached: tile (1, 1) of the middle fragment.
  const FragmentMetadata* mid = view->fragments()[1].get();
  const int footer = mid->FieldIndex(FieldRef::Attribute(mid->schema().AttributeIndex("f")));
  auto map = cache->GetChunkMap(TileKey{mid, footer, 1});
  ASSERT_TRUE(map);
  EXPECT_EQ(map->size(), 4u);
  // The chunks read are in the cache, each alone: 2 tiles x 4 chunks per
  // band of 128 rows, 2 bands. A second reader of those rows takes them
  // from there: with every tile file gone, it still reads them.
  EXPECT_EQ(cache->used_bytes(), 256u * 512u * 8u);
  EXPECT_TRUE(cache->Contains(TileKey{mid, footer, 1, 4}));
  const fs::path moved = root_.string() + ".moved";
  fs::rename(root_ / "__fragments", moved);
  ReadState second;
  second.parts = true;
  for (uint64_t i = 0; i < 256 * 512; i += kRows * 512) {
    std::vector<uint8_t> again(kRows * 512 * 8);
    auto part = view->ReadFieldRange("f", i, kRows * 512, &second, again.data());
    ASSERT_TRUE(part.ok()) << part.error().ToString();
    ASSERT_TRUE(std::equal(again.begin(), again.end(), out.begin() + i * 8)) << i;
  }
  fs::rename(moved, root_ / "__fragments");
  // The budget given back: the next reads take whole tiles (cached).
  others.Drop();
  for (uint64_t i = 256 * 512; i < kCells; i += kRows * 512) {
    auto part = view->ReadFieldRange("f", i, kRows * 512, &state, out.data() + i * 8);
    ASSERT_TRUE(part.ok()) << part.error().ToString();
  }
  EXPECT_EQ(WholeTilesCached(*cache, *view, "f"), 2);
  EXPECT_EQ(out, whole->data);
  // At the end of the field the reader's share is given back.
  EXPECT_EQ(state.streams["f"].bytes(), 0u);
  EXPECT_EQ(cache->stream_budget()->used(), 0u);
}

// Seeks with a parts state read the same bytes as a whole read and put no
// whole tile in the cache (only chunks); a read that goes on from the last
// one decodes (and caches) whole tiles.
TEST_F(PartialReadTest, SeeksReadTheSameBytesWithoutDecodingWholeTiles) {
  std::shared_ptr<TileCache> cache;
  auto view = View(64 << 20, &cache);
  auto n = view->CellCount();
  ASSERT_TRUE(n.ok());
  ASSERT_EQ(*n, 384u * 512u);
  std::shared_ptr<TileCache> other;
  auto reference = View(64 << 20, &other);
  for (const char* name : {"f", "n", "s"}) {
    auto whole = reference->ReadField(name);
    ASSERT_TRUE(whole.ok()) << whole.error().ToString();
    ReadState state;
    state.parts = true;
    cache->WaitForAhead();
    const uint64_t cached_before = cache->used_bytes();  // f's last reads cached its tiles
    std::mt19937_64 rng(7);
    for (int k = 0; k < 60; ++k) {
      uint64_t first = rng() % *n, count = 1 + rng() % 700;
      count = std::min(count, *n - first);
      auto part = view->ReadFieldRange(name, first, count, &state);
      ASSERT_TRUE(part.ok()) << part.error().ToString();
      for (uint64_t i = 0; i < count; ++i) {
        Bytes x = whole->cell(first + i), y = part->cell(i);
        ASSERT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end()))
            << name << " cell " << first + i;
        if (whole->nullable) {
          ASSERT_EQ(whole->validity[first + i], part->validity[i]);
        }
      }
    }
    if (std::string(name) == "f") {
      EXPECT_EQ(WholeTilesCached(*cache, *view, "f"), 0) << "seeks of f decoded whole tiles";
      // Going on from the last read: the part the seek decoded (kept; the
      // tiles after it are sent to be decoded ahead, in the background),
      // then past its chunk (32 rows) whole tiles, cached.
      auto seek = view->ReadFieldRange(name, 1000, 10, &state);
      ASSERT_TRUE(seek.ok());
      auto near = view->ReadFieldRange(name, 1010, 10, &state);
      ASSERT_TRUE(near.ok());
      ASSERT_EQ(state.held_parts[name].size(), 1u);
      EXPECT_EQ(state.held_parts[name][0].first, 0u);  // chunk 0 of tile (0, 1), kept
      auto next = view->ReadFieldRange(name, 1020, 40 * 512, &state);
      ASSERT_TRUE(next.ok());
      EXPECT_GE(WholeTilesCached(*cache, *view, "f"), 1);
      // ... and the tiles after it are decoded ahead: all 6 of f.
      cache->WaitForAhead();
      EXPECT_EQ(WholeTilesCached(*cache, *view, "f"), 6);
    } else {
      EXPECT_GT(cache->used_bytes(), cached_before) << name;  // whole tiles
    }
  }
}

// A reader of a Parquet page reads its header and first values, then the
// page from where its values start: a read from within the last one goes
// on, taking whole tiles, not the parts of a seek.
TEST_F(PartialReadTest, AReadFromWithinTheLastOneGoesOn) {
  std::shared_ptr<TileCache> cache;
  auto view = View(64 << 20, &cache);
  ReadState state;
  state.parts = true;
  ASSERT_TRUE(view->ReadFieldRange("f", 1000, 30, &state).ok());  // a seek: a part
  EXPECT_EQ(WholeTilesCached(*cache, *view, "f"), 0);
  ASSERT_TRUE(view->ReadFieldRange("f", 1000, 40 * 512, &state).ok());
  EXPECT_GE(WholeTilesCached(*cache, *view, "f"), 1);
}

// A reader going on from its last read has the tiles after it decoded in
// the background, within a quarter of the cache's budget, and reads the
// same bytes.
TEST_F(PartialReadTest, SequentialReadsDecodeTheNextTilesAhead) {
  constexpr uint64_t kTile = 128 * 256 * 8;  // bytes of f in a tile
  std::shared_ptr<TileCache> cache;
  // 8 tiles of budget: 2 ahead.
  auto view = View(8 * kTile, &cache);
  ASSERT_EQ(cache->ahead_budget(), 2 * kTile);
  std::shared_ptr<TileCache> other;
  auto whole = View(64 << 20, &other)->ReadField("f");
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  ReadState state;
  state.parts = true;
  auto first = view->ReadFieldRange("f", 0, 10, &state);
  ASSERT_TRUE(first.ok()) << first.error().ToString();
  cache->WaitForAhead();
  // Tile (0, 0) read; the window of 2 tiles of cells after cell 10 ends in
  // row 128: tiles (0, 1) and (1, 0) decoded ahead.
  EXPECT_EQ(cache->used_bytes(), 3 * kTile);
  // The rest, in pieces: the same bytes, the cache within its budget.
  ByteVec out(whole->data.size(), 0);
  std::memcpy(out.data(), first->data.data(), 80);
  for (uint64_t i = 10; i < 384 * 512; i += 5000) {
    const uint64_t count = std::min<uint64_t>(5000, 384 * 512 - i);
    auto part = view->ReadFieldRange("f", i, count, &state, out.data() + i * 8);
    ASSERT_TRUE(part.ok()) << part.error().ToString();
    EXPECT_LE(cache->used_bytes(), 8 * kTile);
  }
  EXPECT_EQ(out, whole->data);
  cache->WaitForAhead();
  EXPECT_EQ(cache->used_bytes(), 6 * kTile);
  // The threads that decode ahead (one per core: 2 or more, or there would
  // be none) yield to readers (nice 10 more than this thread), once they
  // run (a thread started may not have run yet); this thread keeps its own
  // priority.
  errno = 0;
  const int mine = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  ASSERT_EQ(errno, 0);
  const unsigned workers = cache->WaitForAheadWorkers();
  EXPECT_GE(workers, 2u);
  const std::vector<int> nice = ThreadNiceValues();
  EXPECT_GE(std::count(nice.begin(), nice.end(), std::min(mine + 10, 19)),
            static_cast<long>(workers));
  EXPECT_EQ(getpriority(PRIO_PROCESS, static_cast<id_t>(gettid())), mine);
}

// A tile that fails to decode ahead is decoded again by its reader, which
// reports the error; a cache dropped with decodes waiting neither hangs nor
// touches what it dropped.
TEST_F(PartialReadTest, DecodingAheadLeavesErrorsToTheReader) {
  std::shared_ptr<TileCache> cache;
  auto view = View(64 << 20, &cache);
  ASSERT_TRUE(view->CellCount().ok());
  // The newest fragment (rows 256-383) loses its tiles of f.
  const std::string lost = view->fragments()[2]->DataFile(
      FieldRef::Attribute(view->fragments()[2]->schema().AttributeIndex("f")));
  ASSERT_TRUE(fs::remove(root_ / lost)) << lost;
  ReadState state;
  Status error;
  for (uint64_t i = 0; i < 384 * 512 && error.ok(); i += 4096) {
    const uint64_t count = std::min<uint64_t>(4096, 384 * 512 - i);
    auto part = view->ReadFieldRange("f", i, count, &state);
    if (!part.ok()) {
      error = part.error();
      EXPECT_GE(i + count, 256u * 512u) << "failed before the lost fragment's cells";
    }
  }
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.error().code(), ErrorCode::kIo) << error.error().ToString();
  EXPECT_NE(error.error().message().find(fs::path(lost).filename().string()), std::string::npos)
      << error.error().ToString();

  for (int k = 0; k < 20; ++k) {
    std::shared_ptr<TileCache> c;
    auto v = View(64 << 20, &c);
    ReadState s;
    ASSERT_TRUE(v->ReadFieldRange("s", 0, 10, &s).ok());
    // Dropped at once, decodes still waiting.
  }
}

// A reader that decodes a tile itself claims it for the time of the decode
// (TileCache::BeginDecode): a decode-ahead worker that has the same tile
// queued skips it, instead of decoding it a second time (which made the
// tiles counted for one slice vary from run to run).
TEST_F(PartialReadTest, AReaderClaimsTheTileItDecodes) {
  auto cache = std::make_shared<TileCache>(64 << 20, 2);
  const std::string file = [&] {
    auto v = array_.View();
    return v->fragments()[0]->DataFile(
        FieldRef::Attribute(v->fragments()[0]->schema().AttributeIndex("f")));
  }();
  auto local = LocalStorage::Open(root_.string());
  ASSERT_TRUE(local.ok());
  auto holding = std::make_shared<HoldingStorage>(*local, file);
  auto view = array_.ViewOver(holding, UINT64_MAX, cache);
  ASSERT_NE(view, nullptr);
  const FragmentMetadata& frag = *view->fragments()[0];
  const TileKey key{&frag, frag.FieldIndex(FieldRef::Attribute(frag.schema().AttributeIndex("f"))),
                    0};
  // Cells 0-9: one tile, the first of the oldest fragment (rows 0-127).
  ReadState state;
  Result<Column> got = Error::Io("not read");
  std::thread reader([&] { got = view->ReadFieldRange("f", 0, 10, &state); });
  holding->WaitEntered();
  const bool claimed = !cache->BeginDecode(key);
  EXPECT_TRUE(claimed) << "a tile under decode by its reader was free to decode again";
  if (!claimed) cache->EndDecode(key, nullptr, nullptr);
  holding->Release();
  reader.join();
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  std::shared_ptr<TileCache> other;
  auto whole = View(64 << 20, &other)->ReadFieldRange("f", 0, 10, nullptr);
  ASSERT_TRUE(whole.ok()) << whole.error().ToString();
  EXPECT_EQ(got->data, whole->data);
  EXPECT_TRUE(cache->Get(key) != nullptr);  // cached when the claim ended
}

// Tile files vacuumed away under an open view: reads fail with kIo naming
// the file (a read of an open file has nothing "not found"), whole or part.
TEST_F(PartialReadTest, TileFilesGoneUnderAViewAreAnIoError) {
  std::shared_ptr<TileCache> cache;
  auto view = View(64 << 20, &cache);
  ASSERT_TRUE(view->CellCount().ok());
  for (const auto& e : fs::recursive_directory_iterator(root_ / "__fragments")) {
    const std::string name = e.path().filename().string();
    if (e.is_regular_file() && name != "__fragment_metadata.tdb") fs::remove(e.path());
  }
  for (bool parts : {false, true}) {
    ReadState state;
    state.parts = parts;
    auto r = view->ReadFieldRange("f", 5000, 100, &state);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kIo) << r.error().ToString();
    EXPECT_NE(r.error().message().find(".tdb"), std::string::npos) << r.error().ToString();
  }
}

// The fragments' metadata files gone too, before the view loaded the
// sections a read needs (tile offsets): an I/O error as well, never "not
// found" (which a mount would answer a read with as ENOENT).
TEST_F(PartialReadTest, FragmentMetadataGoneUnderAViewIsAnIoError) {
  std::shared_ptr<TileCache> cache;
  auto view = View(64 << 20, &cache);
  ASSERT_TRUE(view->CellCount().ok());
  for (const auto& e : fs::recursive_directory_iterator(root_ / "__fragments")) {
    if (e.is_regular_file()) fs::remove(e.path());
  }
  ReadState state;
  auto r = view->ReadFieldRange("f", 5000, 100, &state);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kIo) << r.error().ToString();
  EXPECT_NE(r.error().message().find("__fragment_metadata.tdb"), std::string::npos)
      << r.error().ToString();
}

}  // namespace
}  // namespace tiledbfs::core
