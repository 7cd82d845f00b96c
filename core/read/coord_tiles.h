// A sparse view's coordinate tiles, cell timestamps and delete timestamps,
// read for an index build (sparse_index.h, packed_index.h, stored_order.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "core/read/cell_index.h"
#include "core/read/sparse_order.h"

namespace tiledbfs::core {

// kCorrupt where fragment `frag`'s schema has another number of dimensions
// than the view's.
Status CheckDimensionCount(const ViewInputs& in, const FragmentMetadata& frag);

// Old sparse fragments keep every dimension's values in one zipped tile.
bool ZippedCoords(const FragmentMetadata& frag);

// The coordinate tiles of tile `t`, one per dimension (split from the
// zipped coordinates of old fragments).
Result<std::vector<DecodedTile>> ReadCoordTiles(const FragmentMetadata& frag, uint64_t t,
                                                size_t dims, bool encrypted);

// ReadCoordTiles of many tiles, the small tile files of all of them read
// together (ReadTiles). Result i is ReadCoordTiles's for tiles[i].
std::vector<Result<std::vector<DecodedTile>>> ReadCoordTileBatch(
    const ViewInputs& in, std::span<const std::pair<uint32_t, uint64_t>> tiles, size_t dims);

// Tile gt of `order`, its coordinates checked: reads its cell timestamps
// into *stamps where its fragment has them (and its delete timestamps into
// a slot of `deleted`, sized for every tile of the order at the first
// fragment that has them, when the view filters by time), points
// order.tiles[gt].stamps at them, and appends `gt << pos_bits | p` for
// every cell p written by the view's instant. Cells deleted by then stay:
// DropDeletedCells takes them out after the dedup. kCorrupt for stamps of
// another cell count.
Status AppendTileCells(const ViewInputs& in, OrderInput& order, size_t gt, DecodedTile* stamps,
                       std::vector<DecodedTile>& deleted, std::vector<uint64_t>& cells);

// Dimension d's bounds in the MBR of tile t of `frag` (a fragment of one
// tile: its non-empty domain, which holds every cell), or null where
// unknown.
const Range* TileMbr(const FragmentMetadata& frag, uint64_t t, size_t d, size_t dims);

// Takes out of `cells` (sorted and deduplicated; the ordinal of each in
// `ordinal(cell)`) those that a fragment's delete timestamps (`deleted`,
// per tile of the order; empty for tiles without) say were deleted by the
// view's instant. After the dedup, as TileDB applies them: the newest
// version of a cell, deleted, still hides the older versions it replaced
// (which a delete condition matching only the newest leaves as they are).
template <typename Ordinal>
void DropDeletedCells(const ViewInputs& in, const std::vector<DecodedTile>& deleted, int pos_bits,
                      Ordinal ordinal, std::vector<uint64_t>& cells) {
  const uint64_t pos_mask = (uint64_t{1} << pos_bits) - 1;
  size_t w = 0;
  for (size_t r = 0; r < cells.size(); ++r) {
    const uint64_t ord = ordinal(cells[r]);
    const DecodedTile& del = deleted[ord >> pos_bits];
    if (!del.fixed.empty()) {
      uint64_t deleted_at;
      std::memcpy(&deleted_at, del.fixed.data() + (ord & pos_mask) * 8, 8);
      const bool shown =
          in.timestamp == UINT64_MAX ? deleted_at == UINT64_MAX : deleted_at > in.timestamp;
      if (!shown) continue;
    }
    cells[w++] = cells[r];
  }
  cells.resize(w);
}

}  // namespace tiledbfs::core
