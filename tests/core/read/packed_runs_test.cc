// CellIndex::RunAt on packed indexes (MakePackedIndex): against the runs
// the ordinals themselves give, for runs of many lengths (1 to 150 cells),
// and for every limit a read may put on a run.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "core/read/cell_index.h"
#include "core/read/packed_index.h"
#include "core/read/sparse_order.h"

namespace tiledbfs::core {
namespace {

constexpr uint64_t kTiles = 12, kTileCells = 200;

// kTiles tiles of kTileCells cells over two INT64 dimensions of values
// 0 ... 9999, and how their cells pack.
struct Plan {
  OrderInput order;
  KeyPacking packing;
  uint64_t total_cells = 0;
};

Plan MakePlan() {
  Plan plan;
  plan.order.types = {Datatype::kInt64, Datatype::kInt64};
  for (uint64_t t = 0; t < kTiles; ++t) {
    OrderTile ot;
    ot.fragment = static_cast<uint32_t>(t % 5);
    ot.tile = t / 5;
    plan.order.tiles.push_back(ot);
  }
  plan.order.pos_bits = BitsFor(kTileCells);
  const int ord_bits = BitsFor(((kTiles - 1) << plan.order.pos_bits) | kTileCells);
  const uint64_t zero = uint64_t{1} << 63;  // OrderedValue of INT64 0
  // value(): a plan that does not pack throws, failing the test.
  plan.packing = KeyPacking::Plan({zero, zero}, {zero + 9999, zero + 9999}, ord_bits).value();
  plan.total_cells = kTiles * kTileCells;
  return plan;
}

// Cells in view order (ascending keys) whose ordinals come in runs of
// random lengths (1 to max_run) from random tiles; a run never goes on
// into the cell after it by chance (the next run starts elsewhere).
std::vector<uint64_t> Cells(const Plan& plan, uint64_t max_run, std::mt19937_64& rng) {
  const KeyPacking& k = plan.packing;
  std::vector<uint64_t> ordinals;
  std::vector<uint64_t> next_pos(kTiles, 0);
  uint64_t last = UINT64_MAX;
  while (ordinals.size() < 2000) {  // of the 2400 cells the tiles hold
    const uint64_t t = rng() % kTiles;
    if (next_pos[t] == kTileCells) continue;
    const uint64_t len = std::min<uint64_t>(1 + rng() % max_run, kTileCells - next_pos[t]);
    const uint64_t first = (t << plan.order.pos_bits) | next_pos[t];
    if (first == last + 1) continue;  // would join the run before
    for (uint64_t j = 0; j < len; ++j) ordinals.push_back(first + j);
    next_pos[t] += len;
    last = ordinals.back();
  }
  std::vector<uint64_t> cells;
  for (size_t i = 0; i < ordinals.size(); ++i) {
    const uint64_t key = ((i / 100) << k.shift[0]) | ((i % 100) << k.shift[1]);
    cells.push_back((key << k.ord_bits) | ordinals[i]);
  }
  return cells;
}

TEST(PackedRunsTest, RunAtEndsWhereTheOrdinalsStopGoingOnByOne) {
  const Plan plan = MakePlan();
  std::mt19937_64 rng(7);
  for (uint64_t max_run : {1, 3, 63, 64, 65, 150}) {
    const std::vector<uint64_t> cells = Cells(plan, max_run, rng);
    const CellIndex index = MakePackedIndex(plan.order, plan.packing, cells);
    for (uint64_t i = 0; i < cells.size(); ++i) {
      const uint64_t o = plan.packing.OrdinalOf(cells[i]);
      uint64_t run = 1;
      while (i + run < cells.size() && plan.packing.OrdinalOf(cells[i + run]) == o + run) ++run;
      const OrderTile& ot = plan.order.tiles[o >> plan.order.pos_bits];
      const uint64_t left = cells.size() - i;
      for (uint64_t max : {uint64_t{1}, uint64_t{2}, uint64_t{64}, uint64_t{100}, left}) {
        const CellRun r = index.RunAt(i, std::min(max, left));
        ASSERT_EQ(r.count, std::min({run, max, left}))
            << "cell " << i << " limit " << max << " runs up to " << max_run;
        ASSERT_EQ(r.ref.fragment, ot.fragment);
        ASSERT_EQ(r.ref.tile, ot.tile);
        ASSERT_EQ(r.ref.pos, o & ((uint64_t{1} << plan.order.pos_bits) - 1));
      }
    }
  }
}

}  // namespace
}  // namespace tiledbfs::core
