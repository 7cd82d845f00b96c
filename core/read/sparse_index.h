// The index of a sparse view: packed coordinates where they fit
// (packed_index.h), else every coordinate tile decoded and kept; delete
// conditions, duplicates, timestamps and slices applied here.
#pragma once

#include <cstdint>
#include <span>

#include "core/read/cell_index.h"
#include "core/read/packed_index.h"

namespace tiledbfs::core {

// Errors: those of the tile reads (tile_source.h); kCancelled once the
// process is stopping (core/util/stop.h), looked for between tiles and
// passes.
Result<CellIndex> BuildSparseIndex(const ViewInputs& in);

// A window of a sparse view whose coordinates do not pack
// (sparse_windows.h): the cells of `tiles` (of plan.tiles, ascending, each
// with the bounds of its first coordinate's keys) whose first coordinate's
// key lies in [lo, hi], in view order, as an index over those tiles alone
// (plan.pos_bits). kCorrupt for a cell outside its tile's bounds (another
// window would miss it) or outside [all_lo, all_hi] (no window holds it).
Result<CellIndex> BuildKeyWindow(const ViewInputs& in, const OrderInput& plan,
                                 std::span<const PackedTile> tiles, const WindowKey& key,
                                 uint64_t lo, uint64_t hi, uint64_t all_lo, uint64_t all_hi);

// Cells [first, first + count) of dimension d of a sparse index (the
// caller checks the range).
Column SparseDimensionColumn(const ArraySchema& schema, const CellIndex& index, size_t d,
                             uint64_t first, uint64_t count);

}  // namespace tiledbfs::core
