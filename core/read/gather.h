// Attribute values gathered for a range of a view's cells, tile by tile
// through the tile cache, with the tiles a reader holds between reads,
// decoded ahead of a sequential reader, or decoded in part for a seek.
#pragma once

#include <cstdint>
#include <string>

#include "core/read/cell_index.h"
#include "core/read/column.h"
#include "core/read/tile_cache.h"
#include "core/util/pieces.h"

namespace tiledbfs::core {

// The index of the view's attribute `attr` in fragment `frag`'s own schema,
// or -1 where the fragment holds none of its cells: it predates the
// attribute, or it holds an attribute of that name that was var-sized where
// `attr` is fixed-sized or the other way round (dropped and added again by
// schema evolution). The view then shows the fill value there, as TileDB
// does.
int FragmentAttribute(const FragmentMetadata& frag, const Attribute& attr);

// The bytes the tiles of a sparse index take decoded for attribute `name`
// (of the view schema), summed over index.sparse_tiles (saturating; the
// tiles of fragments without the attribute count nothing).
uint64_t AttributeTileBytes(const ViewInputs& in, const CellIndex& index, const std::string& name);

// Gathers cells [first, first + count) of the attribute `name` (of the view
// schema). Fragments without the attribute (FragmentAttribute) contribute
// fill values. Decoded tiles go through `cache`, so a range read decodes only
// the tiles covering it and consecutive reads reuse them; with a `state`,
// through the reader's held tiles too (tile_cache.h ReadState), which the
// gather replaces with the tiles it used. With `into`, the values of a
// fixed-size attribute go there (count * cell size bytes) instead of the
// column's data, which stays empty (a reader's own buffer: one copy less).
// With `pieces` (and no `into`), they are appended there instead: spans of
// the decoded tiles themselves where a run of cells is contiguous in its
// tile (no copy at all), kept alive by pieces->keep.
Result<Column> GatherAttribute(const ViewInputs& in, const CellIndex& index,
                               const std::string& name, uint64_t first, uint64_t count,
                               TileCache& cache, ReadState* state = nullptr,
                               uint8_t* into = nullptr, Pieces* pieces = nullptr);

}  // namespace tiledbfs::core
