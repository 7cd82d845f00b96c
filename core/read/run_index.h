// A window of a sparse view's rows indexed as runs of cells instead of one
// key per cell (sparse_windows.h), where its order needs no sort.
//
// A fragment stores its cells in the array's global order: tile by tile,
// row-major within each tile. Split at every change of row, a tile's cells
// become segments of one row each whose second coordinate ascends. Where,
// within every row, the segments of different tiles do not overlap along
// that coordinate, the view's row-major order is those segments sorted by
// row and then by their first value: no per-cell key, no sort or merge of
// cells, and no dedup (no two cells share coordinates). Sparse8's 8 column
// bands of fragments give about 16 segments per row of 1,000 cells.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/read/cell_index.h"
#include "core/read/packed_index.h"

namespace tiledbfs::core {

// How a view's windows are built from runs, where they may be.
struct RunPlan {
  // The fragments never share a row without lying apart along the second
  // dimension (their non-empty domains), and the view is no slice: within
  // a row, the fragments' cells follow one another in the order of `rank`,
  // each fragment's in its stored order (a row lies in one row of space
  // tiles, whose tiles and cells are in column order whichever the tile
  // and cell orders, row- or column-major). The second coordinate is then
  // never decoded: the box takes it from the tiles' bounding rectangles.
  bool rows_only = false;
  std::vector<uint32_t> rank;  // per view fragment, its place along the second dimension
};

// How a view's windows may be built from runs (BuildRunCells); nullopt where
// they may not: other than two fixed-size integer-like dimensions, a cell
// order other than row- or column-major, fragments without a tile of each
// dimension alone, cell or delete timestamps, delete conditions, or a slice
// along the second dimension.
std::optional<RunPlan> PlanRuns(const ViewInputs& in, const PackedPlan& plan);

// The view's cells among `tiles` (of the plan, ascending) whose first
// coordinate lies in [lo, hi] (OrderedValue), in view order, as runs
// (CellIndex::runs; sparse_tiles are `tiles`' in that order, no packing and
// no coordinate columns: a dimension is gathered from its tiles). nullopt
// where runs do not give the order: segments of one row that overlap, a
// second coordinate that does not ascend within a row of a tile, a value
// outside the non-empty domains, or more than a segment per four cells
// (then keys cost less). The caller then builds the window from keys
// (BuildPackedCells), which decides what to make of such cells. kCorrupt
// for a cell outside its tile's bounds [lo, hi] of the first dimension.
// `carry` as BuildPackedCells's: its tiles are used, and it is left holding
// those reaching past `hi` (with runs.rows_only, the first dimension's
// alone); emptied on nullopt. With `cuts`: where the cells cut into `subs`
// parts of about equal cells, between rows (SparseWindows' sub-windows):
// per cut after the first part, its first row and the cells before it.
Result<std::optional<CellIndex>> BuildRunCells(
    const ViewInputs& in, const PackedPlan& plan, const RunPlan& runs,
    std::span<const PackedTile> tiles, uint64_t lo, uint64_t hi, CoordCarry* carry,
    std::vector<std::pair<uint64_t, uint64_t>>* cuts = nullptr, size_t subs = 0);

// A runs index's tiles (CellIndex::runs over sparse_tiles): per tile, the
// view cell past its last one in the index (0 where it has none).
std::vector<uint64_t> RunTileEnds(const CellIndex& index);

}  // namespace tiledbfs::core
