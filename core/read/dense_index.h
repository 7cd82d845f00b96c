// The index of a dense view: the bounding box of the fragments' non-empty
// domains (or a slice's box), located cell by cell by DenseLocator.
#pragma once

#include <cstdint>

#include "core/read/cell_index.h"

namespace tiledbfs::core {

Result<CellIndex> BuildDenseIndex(const ViewInputs& in);

// Cells [first, first + count) of dimension d of a dense index
// (coordinates of the box, row-major).
Column DenseDimensionColumn(const ArraySchema& schema, const CellIndex& index, size_t d,
                            uint64_t first, uint64_t count);

}  // namespace tiledbfs::core
