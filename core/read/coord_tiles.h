// A sparse view's coordinate tiles, cell timestamps and delete timestamps,
// read for an index build (sparse_index.h, packed_index.h, stored_order.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "core/read/cell_index.h"

namespace tiledbfs::core {

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

// Tile `t`'s per-cell timestamps (into *stamps, when the fragment has them)
// and delete timestamps (into *deleted, when the view filters by time),
// each checked to hold `cell_num` values.
Status ReadTileStamps(const ViewInputs& in, const FragmentMetadata& frag, uint64_t t,
                      uint64_t cell_num, DecodedTile* stamps, DecodedTile* deleted);

// Appends `base | p` for every cell p of a tile written by the view's
// instant (`stamps`, when filtering; null: every cell). Cells deleted by
// then stay: DropDeletedCells takes them out after the dedup.
void AppendVisibleCells(const ViewInputs& in, const DecodedTile* stamps, uint64_t base,
                        uint64_t cell_num, std::vector<uint64_t>& cells);

// Where tile gt of the order (of a fragment with footer `ft`) keeps its
// delete timestamps: a slot of `deleted`, sized for every tile of the
// order at the first fragment that has them; null when the view does not
// read them (ReadTileStamps then leaves them).
DecodedTile* DeletedSlot(const ViewInputs& in, const FragmentFooter& ft,
                         std::vector<DecodedTile>& deleted, size_t gt, size_t tiles);

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
