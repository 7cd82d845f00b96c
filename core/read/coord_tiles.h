// A sparse view's coordinate tiles, cell timestamps, delete timestamps and
// delete conditions, read and applied for an index build (sparse_index.h,
// packed_index.h, stored_order.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/read/cell_index.h"
#include "core/read/sparse_order.h"
#include "core/util/stop.h"

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

// A stored cell as a delete condition judges it: its fragment (an index
// into in.fragments), tile, position in the tile and timestamp.
struct JudgedCell {
  uint32_t fragment = 0;
  uint64_t tile = 0;
  uint64_t pos = 0;
  uint64_t timestamp = 0;
};

// The view's delete conditions (in.deletes), applied to its cells after
// the dedup, one cell at a time. The attribute tiles the conditions read
// are kept for the cells after: one build's (a window's, for a view
// indexed a window at a time).
class DeleteConditions {
 public:
  explicit DeleteConditions(const ViewInputs& in);
  // Whether a condition in force deletes `cell`: one committed after the
  // cell's fragment began, not yet processed into it (consolidation), and
  // later than the cell's own timestamp. `dimension(d)` gives the cell's
  // coordinate d.
  Result<bool> Deletes(const JudgedCell& cell, const std::function<Bytes(size_t)>& dimension);

 private:
  class Values;
  const ViewInputs& in_;
  // Per fragment: the conditions consolidation processed into it.
  std::vector<const std::vector<std::string>*> processed_;
  std::map<std::tuple<uint32_t, uint64_t, std::string>, DecodedTile> tiles_;
};

// Takes out of `cells` (sorted, deduplicated, delete timestamps applied;
// the ordinal in `order` of each in `ordinal(cell)`) those that the view's
// delete conditions delete. `dimension(cell, judged, d)` gives the cell's
// coordinate d. kCancelled once the process is stopping.
template <typename Ordinal, typename Dimension>
Status DropConditionDeletedCells(const ViewInputs& in, const OrderInput& order, Ordinal ordinal,
                                 Dimension dimension, std::vector<uint64_t>& cells) {
  DeleteConditions conditions(in);
  const uint64_t pos_mask = (uint64_t{1} << order.pos_bits) - 1;
  JudgedCell judged;
  uint64_t current = 0;
  const std::function<Bytes(size_t)> dimension_of = [&](size_t d) {
    return dimension(current, judged, d);
  };
  size_t w = 0;
  for (size_t r = 0; r < cells.size(); ++r) {
    if (r % 65536 == 0) TRY(CheckStop("delete conditions"));
    current = cells[r];
    const uint64_t ord = ordinal(current);
    const OrderTile& t = order.tiles[ord >> order.pos_bits];
    judged.fragment = t.fragment;
    judged.tile = t.tile;
    judged.pos = ord & pos_mask;
    judged.timestamp = t.stamp;
    if (t.stamps != nullptr)
      std::memcpy(&judged.timestamp, t.stamps->fixed.data() + judged.pos * 8, 8);
    ASSIGN_OR_RETURN(bool deleted, conditions.Deletes(judged, dimension_of));
    if (!deleted) cells[w++] = cells[r];
  }
  cells.resize(w);
  return Ok();
}

}  // namespace tiledbfs::core
