// StoredOrder: a sparse view's cells in storage order, in chunks. On
// synthetic indexes (every stored cell kept, some dropped, bad input) and
// on every sparse view of the fixture corpus, where the chunks must hold
// exactly the view's cells (as a multiset: the order is the storage's).
#include "core/read/stored_order.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/read/cell_index.h"
#include "core/read/sparse_index.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

// A sparse index naming `ordinals` (view order) over tiles of `tile_cells`.
CellIndex IndexOf(const std::vector<uint64_t>& tile_cells, int pos_bits,
                  std::vector<uint64_t> ordinals) {
  CellIndex index;
  for (size_t t = 0; t < tile_cells.size(); ++t) {
    index.sparse_tiles.push_back({static_cast<uint32_t>(t % 3), t});
  }
  index.pos_bits = pos_bits;
  index.cell_count = ordinals.size();
  index.ordinals = std::move(ordinals);
  return index;
}

// A chunk's ordinals (OrdinalAt), checked against its runs (RunAt): each
// run from each cell names that cell and the consecutive ones after it.
std::vector<uint64_t> OrdinalsOf(const CellIndex& c) {
  std::vector<uint64_t> out;
  for (uint64_t i = 0; i < c.cell_count; ++i) out.push_back(c.OrdinalAt(i));
  for (uint64_t i = 0; i < c.cell_count; ++i) {
    const CellRun run = c.RunAt(i, c.cell_count - i);
    EXPECT_GE(run.count, 1u);
    EXPECT_LE(run.count, c.cell_count - i);
    for (uint64_t j = 0; j < run.count && i + j < out.size(); ++j) {
      EXPECT_EQ(out[i + j] >> c.pos_bits, out[i] >> c.pos_bits) << "cell " << i + j;
      EXPECT_EQ(out[i + j], out[i] + j) << "cell " << i + j << " in the run from " << i;
    }
    EXPECT_EQ(run.ref.tile, c.sparse_tiles[out[i] >> c.pos_bits].tile);
    EXPECT_EQ(run.ref.pos, out[i] & ((uint64_t{1} << c.pos_bits) - 1));
  }
  return out;
}

// The chunks' ordinals, concatenated; checks each chunk's size.
std::vector<uint64_t> Chunked(const StoredOrder& order, uint64_t chunk_cells, uint64_t cells) {
  std::vector<uint64_t> out;
  for (size_t k = 0; k < order.chunks(); ++k) {
    CellIndex c = order.Chunk(k);
    const std::vector<uint64_t> ordinals = OrdinalsOf(c);
    if (k + 1 < order.chunks()) {
      EXPECT_EQ(c.cell_count, chunk_cells) << "chunk " << k;
    } else {
      EXPECT_GE(c.cell_count, 1u);
      EXPECT_LE(c.cell_count, chunk_cells);
    }
    out.insert(out.end(), ordinals.begin(), ordinals.end());
  }
  EXPECT_EQ(out.size(), cells);
  return out;
}

// Every stored cell of tiles of 5, 100, 1, 70 and 64 cells, in a shuffled
// view order, then the same with a third of them dropped: chunks of many
// sizes hold the kept ordinals, ascending.
TEST(StoredOrderTest, ChunksHoldTheKeptCellsInStorageOrder) {
  const std::vector<uint64_t> tile_cells = {5, 100, 1, 70, 64};
  const int pos_bits = 7;
  std::vector<uint64_t> all;
  for (size_t t = 0; t < tile_cells.size(); ++t) {
    for (uint64_t p = 0; p < tile_cells[t]; ++p) all.push_back((uint64_t{t} << pos_bits) | p);
  }
  std::mt19937_64 rng(3);
  std::vector<uint64_t> some;
  for (uint64_t o : all) {
    if (rng() % 3 != 0) some.push_back(o);
  }
  for (const auto* kept : {&all, &some}) {
    std::vector<uint64_t> view = *kept;
    std::shuffle(view.begin(), view.end(), rng);
    CellIndex index = IndexOf(tile_cells, pos_bits, view);
    for (uint64_t chunk : {1, 2, 3, 7, 63, 64, 65, 128, 239, 240, 241, 1000}) {
      SCOPED_TRACE(::testing::Message() << kept->size() << " cells, chunks of " << chunk);
      auto order = StoredOrder::Make(index, tile_cells, chunk);
      ASSERT_TRUE(order.ok()) << order.error().ToString();
      EXPECT_EQ(order->chunks(), (kept->size() + chunk - 1) / chunk);
      EXPECT_EQ(Chunked(*order, chunk, kept->size()), *kept);
      // The chunk's runs: each tile's kept cells, consecutive ones as one run.
      CellIndex c = order->Chunk(0);
      CellRun run = c.RunAt(0, c.cell_count);
      EXPECT_EQ(run.ref.tile, 0u);
      EXPECT_EQ(run.ref.pos, (*kept)[0] & 127);
    }
  }
  // No cell at all.
  CellIndex none = IndexOf(tile_cells, pos_bits, {});
  auto order = StoredOrder::Make(none, tile_cells, 4);
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(order->chunks(), 0u);
}

// Finishing the chunks in any order returns each tile that has cells in
// them once, and only once every chunk holding its cells has finished; a
// chunk finished again, or past the last, returns nothing.
TEST(StoredOrderTest, FinishReturnsEachTileWhenItsLastChunkFinishes) {
  const std::vector<uint64_t> tile_cells = {5, 100, 1, 70, 64};
  const int pos_bits = 7;
  std::vector<uint64_t> all;
  for (size_t t = 0; t < tile_cells.size(); ++t) {
    for (uint64_t p = 0; p < tile_cells[t]; ++p) all.push_back((uint64_t{t} << pos_bits) | p);
  }
  std::mt19937_64 rng(11);
  std::vector<uint64_t> some;
  for (uint64_t o : all) {
    if (rng() % 3 != 0) some.push_back(o);
  }
  for (const auto* kept : {&all, &some}) {
    CellIndex index = IndexOf(tile_cells, pos_bits, *kept);
    for (uint64_t chunk : {1, 3, 64, 65, 150, 1000}) {
      SCOPED_TRACE(::testing::Message() << kept->size() << " cells, chunks of " << chunk);
      auto order = StoredOrder::Make(index, tile_cells, chunk);
      ASSERT_TRUE(order.ok()) << order.error().ToString();
      // The chunks holding cells of each tile.
      std::vector<std::vector<size_t>> holders(tile_cells.size());
      for (size_t k = 0; k < order->chunks(); ++k) {
        for (uint64_t o : OrdinalsOf(order->Chunk(k))) {
          std::vector<size_t>& h = holders[o >> pos_bits];
          if (h.empty() || h.back() != k) h.push_back(k);
        }
      }
      std::vector<size_t> sequence(order->chunks());
      std::iota(sequence.begin(), sequence.end(), 0);
      std::shuffle(sequence.begin(), sequence.end(), rng);
      std::vector<bool> finished(order->chunks(), false);
      std::vector<int> returned(tile_cells.size(), 0);
      for (size_t k : sequence) {
        finished[k] = true;
        for (size_t t : order->Finish(k)) {
          ASSERT_LT(t, tile_cells.size());
          ++returned[t];
          for (size_t h : holders[t]) {
            EXPECT_TRUE(finished[h]) << "tile " << t << " returned before chunk " << h;
          }
        }
        EXPECT_TRUE(order->Finish(k).empty()) << "chunk " << k << " finished twice";
      }
      EXPECT_TRUE(order->Finish(order->chunks()).empty());
      for (size_t t = 0; t < tile_cells.size(); ++t) {
        EXPECT_LE(returned[t], 1) << "tile " << t;
        if (!holders[t].empty()) {
          EXPECT_EQ(returned[t], 1) << "tile " << t;
        }
      }
    }
  }
}

TEST(StoredOrderTest, BadIndexesAreErrors) {
  const std::vector<uint64_t> tile_cells = {4, 4};
  // A position past its tile's cells.
  auto past = StoredOrder::Make(IndexOf(tile_cells, 3, {0, 1, (1u << 3) | 4}), tile_cells, 2);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(past.error().message().find("cell 4 of tile 1"), std::string::npos)
      << past.error().message();
  // A tile that is not in the table.
  auto tile = StoredOrder::Make(IndexOf(tile_cells, 3, {0, 2u << 3}), tile_cells, 2);
  ASSERT_FALSE(tile.ok());
  EXPECT_EQ(tile.error().code(), ErrorCode::kCorrupt);
  // The same cell twice.
  auto twice = StoredOrder::Make(IndexOf(tile_cells, 3, {1, 1, 2}), tile_cells, 2);
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(twice.error().message().find("3 cells names 2 distinct"), std::string::npos)
      << twice.error().message();
  // Tile sizes that do not match the table.
  auto sizes = StoredOrder::Make(IndexOf(tile_cells, 3, {0}), {4}, 2);
  ASSERT_FALSE(sizes.ok());
  EXPECT_EQ(sizes.error().code(), ErrorCode::kInvalidArgument);
  // A dense index.
  CellIndex dense = IndexOf(tile_cells, 3, {});
  dense.dense.emplace();
  auto d = StoredOrder::Make(dense, tile_cells, 2);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.error().code(), ErrorCode::kInvalidArgument);
}

// A field's cells as byte strings (a null as a marker), sorted.
std::vector<std::string> SortedCells(const Column& c) {
  std::vector<std::string> out;
  for (uint64_t i = 0; i < c.cell_count; ++i) {
    Bytes b = c.cell(i);
    out.push_back(c.valid(i) ? fmt::format("v{}", AsStringView(b)) : "null");
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every sparse view of the corpus (the latest, every instant, with dropped
// duplicates, deletes and timestamps among them): each attribute read
// chunk by chunk in storage order holds the view's cells.
TEST(StoredOrderTest, CorpusChunksHoldEveryViewCell) {
  const fs::path arrays = fs::path(TILEDBFS_TEST_DATA) / "corpus" / "arrays";
  int views = 0;
  for (const auto& e : fs::directory_iterator(arrays)) {
    const std::string name = e.path().filename();
    if (!e.is_directory() || name == "group" || name == "encrypted") continue;
    SCOPED_TRACE(name);
    auto storage = LocalStorage::Open(e.path().string());
    ASSERT_TRUE(storage.ok());
    auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
    ASSERT_TRUE(array.ok()) << array.error().ToString();
    auto instants = (*array)->Instants();
    ASSERT_TRUE(instants.ok());
    std::vector<uint64_t> times = *instants;
    times.push_back(UINT64_MAX);
    for (uint64_t t : times) {
      auto view = (*array)->ViewAt(t);
      ASSERT_TRUE(view.ok());
      auto order = (*view)->StoredChunks(5);
      ASSERT_TRUE(order.ok()) << order.error().ToString();
      if ((*view)->dense()) {
        EXPECT_FALSE(order->has_value());
        continue;
      }
      ASSERT_TRUE(order->has_value());
      ++views;
      for (const Attribute& a : (*view)->schema().attributes) {
        SCOPED_TRACE(a.name + " at " + std::to_string(t));
        auto whole = (*view)->ReadField(a.name);
        ASSERT_TRUE(whole.ok()) << whole.error().ToString();
        std::vector<std::string> got;
        for (size_t k = 0; k < (*order)->chunks(); ++k) {
          auto c = (*view)->ReadStoredChunk(**order, k, {a.name});
          ASSERT_TRUE(c.ok()) << c.error().ToString();
          ASSERT_EQ(c->size(), 1u);
          std::vector<std::string> part = SortedCells(c->front());
          got.insert(got.end(), part.begin(), part.end());
        }
        std::sort(got.begin(), got.end());
        EXPECT_EQ(got, SortedCells(*whole));
      }
      auto past = (*view)->ReadStoredChunk(**order, (*order)->chunks(), {});
      EXPECT_FALSE(past.ok());
      // A dimension is gathered from its own tiles, where a fragment has
      // them (old fragments zip every dimension into one tile).
      if ((*order)->chunks() > 0) {
        const std::string d0 = (*view)->schema().dimensions[0].name;
        auto dim = (*view)->ReadStoredChunk(**order, 0, {d0});
        if (dim.ok()) {
          auto all = (*view)->ReadField(d0);
          ASSERT_TRUE(all.ok()) << all.error().ToString();
          std::vector<std::string> in_all = SortedCells(*all);
          for (const std::string& cell : SortedCells(dim->front())) {
            EXPECT_TRUE(std::binary_search(in_all.begin(), in_all.end(), cell));
          }
        } else {
          EXPECT_EQ(dim.error().code(), ErrorCode::kUnsupported) << dim.error().ToString();
        }
      }
    }
  }
  EXPECT_GE(views, 10);
}

}  // namespace
}  // namespace tiledbfs::core
