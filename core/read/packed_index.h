// Sparse indexes over integer coordinates that pack with the cell's
// ordinal into one uint64 per cell, and what such an index answers without
// reading cells.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/read/cell_index.h"
#include "core/read/sparse_order.h"

namespace tiledbfs::core {

// A sparse view whose coordinates are integer-like, indexed whole
// (BuildSparseIndex) or a window of its rows at a time (sparse_windows.h):
// its tiles and the bounds of its cells. An index packs each cell's
// coordinates, less the bounds, with its ordinal among the index's own
// tiles (KeyPacking): a window holds few tiles and a narrow band of the
// first dimension, so it packs where the whole view would not.
struct PackedPlan {
  OrderInput order;  // the tiles meeting the view's subarray, oldest first (no stamps)
  // Per dimension, the bounds (OrderedValue) of the view's cells: the
  // fragments' non-empty domains within the subarray.
  std::vector<uint64_t> lo, hi;
  // Per dimension, the subarray's range (OrderedValue; 0 to UINT64_MAX
  // where it names none): a stored cell outside it is not in the view.
  std::vector<uint64_t> sub_lo, sub_hi;
  uint64_t max_tile_cells = 0;
  uint64_t total_cells = 0;  // the cells the tiles store

  // How the cells of `tiles` of the plan's tiles whose first coordinate
  // lies in [lo0, hi0] pack with their ordinals among those tiles; nullopt
  // where that takes more than 64 bits.
  std::optional<KeyPacking> Packing(size_t tiles, uint64_t lo0, uint64_t hi0) const;
};
// Adds to plan.order the tiles of fragment `fi` (an index into in.fragments,
// which has a non-empty domain) that meet the view's subarray, every tile
// where it names none (an unknown rectangle meets it), and counts their
// cells in plan.total_cells and plan.max_tile_cells.
void AddPlanTiles(const ViewInputs& in, size_t fi, PackedPlan& plan);

// nullopt where the view takes the generic path: coordinates that are not
// integer-like, a fragment without a non-empty domain.
// kCorrupt for a fragment whose schema has another number of dimensions;
// kOutOfMemory for more cells than in.limits.max_view_cells.
Result<std::optional<PackedPlan>> PlanPackedIndex(const ViewInputs& in);

// A tile of a PackedPlan (an index into plan.order.tiles) and the bounds of
// its first coordinate (OrderedValue) that its bounding rectangle gives.
struct PackedTile {
  size_t tile = 0;
  uint64_t lo = 0, hi = UINT64_MAX;
};
// Decoded coordinate tiles that one build hands to the next, by tile of
// the plan.
using CoordCarry = std::unordered_map<size_t, std::vector<DecodedTile>>;

// The view's cells among `tiles` (ascending) whose first coordinate lies in
// [lo, hi] (OrderedValue), in view order (timestamps, dedup, delete
// timestamps and the subarray applied: every version of a cell lies in the
// same range; then the delete conditions, whose attribute tiles are read
// for this build alone), as a packed index over those tiles alone: its sparse_tiles
// are `tiles`' in that order, its packing plan.Packing(tiles, lo, hi).
// nullopt where they do not pack, or the coordinates are not what the plan
// says (another size, var-sized, outside the non-empty domains): the
// generic path. kCorrupt for a cell outside its tile's bounds [lo, hi] (a
// build of a range would miss it). With `carry`: its tiles are used
// instead of reading them again, and it is left holding the coordinates of
// the tiles reaching past `hi` (on an error, some of them: a caller drops
// it). kCancelled once the process is stopping (core/util/stop.h), looked
// for between tiles. `reuse`: memory for the cells (its values are
// dropped), from an index no longer needed, so that a build does not touch
// fresh pages.
Result<std::optional<CellIndex>> BuildPackedCells(const ViewInputs& in, const PackedPlan& plan,
                                                  std::span<const PackedTile> tiles, uint64_t lo,
                                                  uint64_t hi, CoordCarry* carry,
                                                  std::vector<uint64_t> reuse = {});
// The index of packed `cells` (key << k.ord_bits | ordinal, in view order)
// of the tiles of `order`: the packing, the box of the cells.
CellIndex MakePackedIndex(const OrderInput& order, const KeyPacking& k,
                          std::vector<uint64_t> cells);
// Every tile of the plan, and no cell (SparseWindows::tiles).
CellIndex PlanTiles(const PackedPlan& plan);

// The whole view as a packed index (every tile of the plan, every row);
// nullopt where the view takes the generic path (PlanPackedIndex or
// BuildPackedCells says so).
Result<std::optional<CellIndex>> BuildPackedIndex(const ViewInputs& in);

// A sparse index whose coordinates pack (CellIndex::packing): how many of
// its cells hold in dimension d a value (OrderedValue) in each interval
// that the ascending `bounds` cut: counts[0] below bounds[0], counts[i]
// from bounds[i - 1] up to bounds[i], and counts[bounds.size()] from the
// last bound on. The cells are in coordinate order, so dimension d ascends
// within each run of cells equal in the dimensions before it: a few binary
// searches per run, not a look at every cell. nullopt without packing.
std::optional<std::vector<uint64_t>> CountDimensionValues(const CellIndex& index, size_t d,
                                                          std::span<const uint64_t> bounds);

// A sparse index whose coordinates pack (CellIndex::packing): per tile of
// index.sparse_tiles, the view cell past the last one it can supply (from
// the tile's MBR: cells lie within it, and the view is in coordinate
// order), or UINT64_MAX where that is not known (no readable MBR, or one
// below the packing's bounds). A runs index (run_index.h): RunTileEnds.
// Otherwise empty.
std::vector<uint64_t> TileEnds(const ViewInputs& in, const CellIndex& index);

}  // namespace tiledbfs::core
