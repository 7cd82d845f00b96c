// Tiles a one-pass reader is done with leave the cache when the view's
// tiles do not fit it: TileCache::Drop and its byte accounting, TileEnds
// (where a tile's cells end in a sparse view, from its MBR) against a look
// at every cell, ArrayView::ReleaseTiles behind a reader going forward,
// and the storage-order pass (ReadStoredChunk) dropping the tiles of the
// chunks it has finished. Views whose tiles fit keep them all. The arrays
// are written by our own writer: 4 fragments of column bands, whose tiles
// interleave in the view's row-major order.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "core/array/array_view.h"
#include "core/read/cell_index.h"
#include "core/read/gather.h"
#include "core/read/packed_index.h"
#include "core/read/sparse_index.h"
#include "core/read/tile_cache.h"
#include "core/read/tile_source.h"
#include "tests/core/write/temp_array.h"

namespace tiledbfs::core::release_tiles_test {
namespace {

constexpr uint64_t kCapacity = 500;
constexpr uint64_t kCellsPerFragment = 3000;  // 6 tiles each
constexpr int kFragments = 4;

class ReleaseTilesTest : public ::testing::Test {
 protected:
  ReleaseTilesTest() : array_("release") {}

  void SetUp() override {
    ArraySchema s = array_.Create(R"({
      "array_type": "sparse", "capacity": 500, "allows_dups": false,
      "dims": [{"name": "r", "type": "INT64", "domain": [0, 999], "tile_extent": 100},
               {"name": "c", "type": "INT64", "domain": [0, 999], "tile_extent": 100}],
      "attrs": [{"name": "v", "type": "FLOAT64"},
                {"name": "s", "type": "STRING_UTF8", "cell_val_num": 4294967295, "var": true}]})");
    for (int k = 0; k < kFragments; ++k) {
      SyntheticSpec spec;
      spec.seed = 7 + k;
      spec.cells_min = spec.cells_max = kCellsPerFragment;
      spec.subarray = {Int64Range(0, 999), Int64Range(250 * k, 250 * k + 249)};
      auto w = WriteSyntheticFragments(array_.root().string(), s, 10 + k, spec);
      ASSERT_TRUE(w.ok()) << w.error().ToString();
    }
  }

  static Range Int64Range(int64_t lo, int64_t hi) {
    Range r;
    r.lo = CopyBytes({reinterpret_cast<const uint8_t*>(&lo), 8});
    r.hi = CopyBytes({reinterpret_cast<const uint8_t*>(&hi), 8});
    return r;
  }

  // The view through a cache of `budget` bytes (and `ahead` threads).
  std::shared_ptr<const ArrayView> View(uint64_t budget, std::shared_ptr<TileCache>* cache,
                                        unsigned ahead = 0) {
    *cache = std::make_shared<TileCache>(budget, ahead);
    return array_.View(UINT64_MAX, *cache);
  }

  // The view's inputs and index, built as the view builds them.
  static ViewInputs Inputs(const ArrayView& view) {
    ViewInputs in;
    in.schema = &view.schema();
    in.fragments = view.fragments();
    return in;
  }

  // The cache key of tile t (of the index's sparse_tiles) of attribute `name`.
  static TileKey KeyOf(const ViewInputs& in, const CellIndex& index, size_t t,
                       const std::string& name) {
    const CellIndex::SparseTile& st = index.sparse_tiles[t];
    const FragmentMetadata& frag = *in.fragments[st.fragment];
    const int a = frag.schema().AttributeIndex(name);
    return TileKey{&frag, frag.FieldIndex(FieldRef::Attribute(a)), st.tile};
  }

  TempArray array_;
};

// Drop takes a tile out with its bytes; a tile decoded ahead and not read
// yet gives back its share of the ahead budget too.
TEST_F(ReleaseTilesTest, DropTakesATileOutWithItsBytes) {
  constexpr uint64_t kTile = kCapacity * 8;  // bytes of v in a tile
  std::shared_ptr<TileCache> cache;
  // A quarter of the budget: one tile of v ahead at a time.
  auto view = View(4 * kTile, &cache, 1);
  ASSERT_TRUE(view);
  ASSERT_EQ(cache->ahead_budget(), kTile);
  const ViewInputs in = Inputs(*view);
  auto index = BuildSparseIndex(in);
  ASSERT_TRUE(index.ok()) << index.error().ToString();
  auto ahead = [&](size_t t) {
    const CellIndex::SparseTile& st = index->sparse_tiles[t];
    const FragmentMetadata& frag = *in.fragments[st.fragment];
    return AheadTile{KeyOf(in, *index, t, "v"), in.fragments[st.fragment],
                     FieldRef::Attribute(frag.schema().AttributeIndex("v")), false, kTile};
  };
  ASSERT_TRUE(cache->DecodeAhead(ahead(0)));
  cache->WaitForAhead();
  ASSERT_TRUE(cache->Contains(KeyOf(in, *index, 0, "v")));
  EXPECT_EQ(cache->used_bytes(), kTile);
  // Tile 0 is ahead and unread: no room for another.
  EXPECT_FALSE(cache->DecodeAhead(ahead(1)));
  EXPECT_TRUE(cache->Drop(KeyOf(in, *index, 0, "v")));
  EXPECT_EQ(cache->used_bytes(), 0u);
  EXPECT_FALSE(cache->Contains(KeyOf(in, *index, 0, "v")));
  EXPECT_FALSE(cache->Drop(KeyOf(in, *index, 0, "v")));
  // Its ahead bytes were given back.
  EXPECT_TRUE(cache->DecodeAhead(ahead(1)));
  cache->WaitForAhead();
  EXPECT_EQ(cache->used_bytes(), kTile);

  // A tile put by a reader: its holder keeps it after the drop.
  auto tile = cache->Get(KeyOf(in, *index, 1, "v"));
  ASSERT_TRUE(tile);
  EXPECT_TRUE(cache->Drop(KeyOf(in, *index, 1, "v")));
  EXPECT_EQ(cache->used_bytes(), 0u);
  EXPECT_EQ(cache->Get(KeyOf(in, *index, 1, "v")), nullptr);
  EXPECT_EQ(tile->cell_num, kCapacity);
  EXPECT_EQ(tile->fixed.size(), kTile);
  // Read, it counts no more as ahead: the ahead budget is whole.
  EXPECT_TRUE(cache->DecodeAhead(ahead(2)));
}

// Each tile's end is the number of view cells at or before its MBR's upper
// corner in row-major order, and no cell of the tile comes after it.
TEST_F(ReleaseTilesTest, TileEndsComeFromTheMbrs) {
  // And a fragment of one cell: its MBR's corner is a cell of the view.
  SyntheticSpec one;
  one.cells_min = one.cells_max = 1;
  one.subarray = {Int64Range(500, 500), Int64Range(10, 10)};
  auto w = WriteSyntheticFragments(array_.root().string(), array_.View()->schema(), 20, one);
  ASSERT_TRUE(w.ok()) << w.error().ToString();
  std::shared_ptr<TileCache> cache;
  auto view = View(64 << 20, &cache);
  ASSERT_TRUE(view);
  const ViewInputs in = Inputs(*view);
  auto index = BuildSparseIndex(in);
  ASSERT_TRUE(index.ok()) << index.error().ToString();
  ASSERT_TRUE(index->packing);
  ASSERT_EQ(index->sparse_tiles.size(), size_t{kFragments} * 6 + 1);
  const std::vector<uint64_t> ends = TileEnds(in, *index);
  ASSERT_EQ(ends.size(), index->sparse_tiles.size());
  auto r = view->ReadField("r"), c = view->ReadField("c");
  ASSERT_TRUE(r.ok() && c.ok());
  const uint64_t n = index->cell_count;
  ASSERT_GE(n, kCellsPerFragment * kFragments);
  auto at = [](const Column& col, uint64_t i) {
    int64_t v;
    std::memcpy(&v, col.data.data() + i * 8, 8);
    return v;
  };
  // Where each tile's cells last appear.
  std::vector<uint64_t> last(ends.size(), 0);
  for (uint64_t i = 0; i < n; ++i) {
    last[index->OrdinalAt(i) >> index->pos_bits] = i + 1;
  }
  bool some_before_the_end = false;
  for (size_t t = 0; t < ends.size(); ++t) {
    const CellIndex::SparseTile& st = index->sparse_tiles[t];
    auto mbrs = in.fragments[st.fragment]->Mbrs();
    ASSERT_TRUE(mbrs.ok());
    int64_t rh, ch;
    std::memcpy(&rh, (**mbrs)[st.tile][0].hi.data(), 8);
    std::memcpy(&ch, (**mbrs)[st.tile][1].hi.data(), 8);
    uint64_t want = 0;
    for (uint64_t i = 0; i < n; ++i) {
      if (at(*r, i) < rh || (at(*r, i) == rh && at(*c, i) <= ch)) ++want;
    }
    EXPECT_EQ(ends[t], want) << "tile " << t;
    EXPECT_GE(ends[t], last[t]) << "tile " << t;
    some_before_the_end |= ends[t] < n;
  }
  EXPECT_TRUE(some_before_the_end);
  // No packing, no ends.
  EXPECT_TRUE(TileEnds(in, CellIndex{}).empty());
}

// A reader going forward in windows, releasing the cells behind it: no
// tile that ends before its window stays cached, the bytes are those of a
// view that keeps everything, and a view that fits its cache drops nothing.
TEST_F(ReleaseTilesTest, ReleasedTilesLeaveOnlyAViewTooBigForTheCache) {
  std::shared_ptr<TileCache> big_cache;
  auto whole = View(64 << 20, &big_cache);
  ASSERT_TRUE(whole);
  auto v = whole->ReadField("v"), s = whole->ReadField("s");
  ASSERT_TRUE(v.ok() && s.ok());
  const ViewInputs in = Inputs(*whole);
  auto index = BuildSparseIndex(in);
  ASSERT_TRUE(index.ok());
  const std::vector<uint64_t> ends = TileEnds(in, *index);
  const uint64_t n = index->cell_count;
  const std::vector<std::string> names = {"v", "s"};

  for (uint64_t budget : {uint64_t{64} << 10, uint64_t{64} << 20}) {
    SCOPED_TRACE(::testing::Message() << "budget " << budget);
    const bool over =
        budget < AttributeTileBytes(in, *index, "v") + AttributeTileBytes(in, *index, "s");
    EXPECT_EQ(over, budget == (uint64_t{64} << 10));
    std::shared_ptr<TileCache> cache;
    auto view = View(budget, &cache);
    ASSERT_TRUE(view);
    const ViewInputs vin = Inputs(*view);
    ReadState state;
    ByteVec vs(n * 8, 0);
    std::string ss;
    size_t released = 0;
    uint64_t from = 0;
    for (uint64_t first = 0; first < n; first += 1000) {
      const uint64_t count = std::min<uint64_t>(1000, n - first);
      if (first > 0) released += view->ReleaseTiles(names, from, first);
      from = first;
      auto pv = view->ReadFieldRange("v", first, count, &state, vs.data() + first * 8);
      auto ps = view->ReadFieldRange("s", first, count, &state);
      ASSERT_TRUE(pv.ok() && ps.ok());
      ss.append(ps->data.begin(), ps->data.end());
      cache->WaitForAhead();
      if (!over) continue;
      for (size_t t = 0; t < ends.size(); ++t) {
        if (ends[t] > first) continue;
        for (const std::string& name : names) {
          EXPECT_FALSE(cache->Contains(KeyOf(vin, *index, t, name)))
              << name << " tile " << t << " ends at " << ends[t] << ", window at " << first;
        }
      }
    }
    EXPECT_EQ(vs, v->data);
    EXPECT_EQ(ss, std::string(s->data.begin(), s->data.end()));
    if (over) {
      EXPECT_GT(released, 0u);
    } else {
      // Nothing dropped: every tile of both fields is still cached.
      EXPECT_EQ(released, 0u);
      for (size_t t = 0; t < ends.size(); ++t) {
        for (const std::string& name : names) {
          EXPECT_TRUE(cache->Contains(KeyOf(vin, *index, t, name))) << name << " tile " << t;
        }
      }
    }
  }
}

// The storage-order pass: after each chunk, the cache holds at most the
// tile of each field that the next chunk goes on with, and nothing at the
// end; the columns are those of a view that keeps everything; a view
// that fits its cache keeps every tile.
TEST_F(ReleaseTilesTest, StoredChunksDropTheTilesTheyFinish) {
  const std::vector<std::string> names = {"v", "s"};
  std::shared_ptr<TileCache> big_cache;
  auto whole = View(64 << 20, &big_cache);
  ASSERT_TRUE(whole);
  auto whole_order = whole->StoredChunks(700);
  ASSERT_TRUE(whole_order.ok() && *whole_order);
  const ViewInputs in = Inputs(*whole);
  auto index = BuildSparseIndex(in);
  ASSERT_TRUE(index.ok());
  // The largest tile of each field.
  uint64_t widest = 0;
  for (const std::string& name : names) {
    uint64_t most = 0;
    for (size_t t = 0; t < index->sparse_tiles.size(); ++t) {
      const FragmentMetadata& frag = *in.fragments[index->sparse_tiles[t].fragment];
      auto tile = ReadTile(frag, FieldRef::Attribute(frag.schema().AttributeIndex(name)),
                           index->sparse_tiles[t].tile, false);
      ASSERT_TRUE(tile.ok()) << tile.error().ToString();
      most = std::max(most, TileCache::SizeOf(*tile));
    }
    widest += most;
  }

  for (uint64_t budget : {uint64_t{64} << 10, uint64_t{64} << 20}) {
    SCOPED_TRACE(::testing::Message() << "budget " << budget);
    const bool over = budget == (uint64_t{64} << 10);
    std::shared_ptr<TileCache> cache;
    auto view = View(budget, &cache);
    ASSERT_TRUE(view);
    auto order = view->StoredChunks(700);
    ASSERT_TRUE(order.ok() && *order);
    ASSERT_EQ((*order)->chunks(), (*whole_order)->chunks());
    for (size_t k = 0; k < (*order)->chunks(); ++k) {
      auto got = view->ReadStoredChunk(**order, k, names);
      auto want = whole->ReadStoredChunk(**whole_order, k, names);
      ASSERT_TRUE(got.ok() && want.ok());
      for (size_t f = 0; f < names.size(); ++f) {
        EXPECT_EQ((*got)[f].data, (*want)[f].data) << names[f] << " chunk " << k;
        EXPECT_EQ((*got)[f].offsets, (*want)[f].offsets) << names[f] << " chunk " << k;
      }
      if (over) {
        EXPECT_LE(cache->used_bytes(), widest) << "after chunk " << k;
      }
    }
    if (over) {
      EXPECT_EQ(cache->used_bytes(), 0u);
    } else {
      for (size_t t = 0; t < index->sparse_tiles.size(); ++t) {
        for (const std::string& name : names) {
          EXPECT_TRUE(cache->Contains(KeyOf(Inputs(*view), *index, t, name)))
              << name << " tile " << t;
        }
      }
    }
  }
}

}  // namespace
}  // namespace tiledbfs::core::release_tiles_test
