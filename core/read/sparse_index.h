// The index of a sparse view: packed coordinates where they fit
// (packed_index.h), else every coordinate tile decoded and kept; delete
// conditions, duplicates, timestamps and slices applied here.
#pragma once

#include <cstdint>

#include "core/read/cell_index.h"

namespace tiledbfs::core {

// Errors: those of the tile reads (tile_source.h); kCancelled once the
// process is stopping (core/util/stop.h), looked for between tiles and
// passes.
Result<CellIndex> BuildSparseIndex(const ViewInputs& in);

// Cells [first, first + count) of dimension d of a sparse index (the
// caller checks the range).
Column SparseDimensionColumn(const ArraySchema& schema, const CellIndex& index, size_t d,
                             uint64_t first, uint64_t count);

}  // namespace tiledbfs::core
