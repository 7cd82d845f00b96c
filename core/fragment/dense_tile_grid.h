// The space tiles a dense fragment stores: its non-empty domain expanded to
// the schema's tile grid (tile extents counted from each dimension's domain
// low). Every such tile is stored whole, in tile order, so the fragment holds
// tile_num * cells_per_tile cells. Spec: format_spec/array_schema.md (domain,
// tile extents); TileDB's Domain::tile_num and cell_num_per_tile.
#pragma once

#include <cstdint>
#include <vector>

#include "core/schema/array_schema.h"

namespace tiledbfs::core {

struct DenseTileGrid {
  uint64_t tile_num = 0;        // product of tiles_per_dim
  uint64_t cells_per_tile = 0;  // product of the tile extents
  // Per dimension: grid index (from the domain low) of the first tile
  // covering the non-empty domain, the number of tiles, and the extent.
  std::vector<uint64_t> first_tile;
  std::vector<uint64_t> tiles_per_dim;
  std::vector<uint64_t> extents;
};

// Integer value of a dimension coordinate (integer, datetime and time
// types). kCorrupt for other types or the wrong number of bytes.
Result<__int128> DimensionValue(Datatype type, Bytes bytes);

// Computes the grid of a dense fragment. A null tile extent means one tile
// spanning the domain. Errors: kCorrupt (a dimension type dense arrays
// cannot have, non-positive extent, a non-empty domain below the domain low
// or inverted, counts that overflow uint64).
Result<DenseTileGrid> ComputeDenseTileGrid(const ArraySchema& schema,
                                           const std::vector<Range>& non_empty_domain);

}  // namespace tiledbfs::core
