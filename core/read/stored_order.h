// Sparse views read in storage order (tile by tile) instead of view order,
// for what does not depend on the order, and views that keep every stored
// cell, whose index and counts need no look at a cell.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "core/read/cell_index.h"

namespace tiledbfs::core {

// The cells of a sparse index in storage order (tile by tile, positions
// ascending) instead of view order, in chunks of at most `chunk_cells`
// cells: for what does not depend on the order (the size of a rendered
// file is the sum of its cells' sizes), reading tile by tile spares the
// gather of every run the view order interleaves. Holds at most one bit
// per stored cell, not the cells.
class StoredOrder {
 public:
  // `tile_cells`: the cells each of index.sparse_tiles holds. A view that
  // keeps every stored cell (no duplicate, timestamp or delete dropped
  // one) needs no bits. Errors: kInvalidArgument for a dense index or a
  // tile count that is not the index's; kCorrupt for a view cell past its
  // tile's cells.
  static Result<StoredOrder> Make(const CellIndex& index, const std::vector<uint64_t>& tile_cells,
                                  uint64_t chunk_cells);
  // The same for a view indexed in parts (sparse_windows.h): `tiles` holds
  // the tiles (and no cells), `visit` calls its argument with each part, a
  // sparse index on those tiles, and the parts hold `cell_count` cells.
  using PartVisitor =
      std::function<Status(const std::function<Status(const CellIndex& part)>& each)>;
  static Result<StoredOrder> Make(const CellIndex& tiles, uint64_t cell_count,
                                  const std::vector<uint64_t>& tile_cells, uint64_t chunk_cells,
                                  const PartVisitor& visit);
  size_t chunks() const { return chunk_bit_.size() - 1; }
  // Chunk k: the view cells it holds, as an index of their ordinals
  // (ascending; the tiles of `index`, which must outlive it), in runs where
  // the view keeps every stored cell.
  CellIndex Chunk(size_t k) const;
  // Chunk k's reader is done with it (thread-safe; a chunk counts once):
  // the tiles (indexes into the index's sparse_tiles) that no chunk left
  // to finish holds cells of, each returned once whatever order the chunks
  // finish in. A tile a chunk shares with the next one is thus returned by
  // whichever of the two finishes last.
  std::vector<size_t> Finish(size_t k) const;

 private:
  // The tiles whose cells chunk k's bits cross: [first, second).
  std::pair<size_t, size_t> ChunkTiles(size_t k) const;
  // Sets unfinished_ and finished_ for the chunks made.
  void CountChunks();
  const CellIndex* index_ = nullptr;
  bool all_ = false;                   // every stored cell is in the view: no bits
  std::vector<uint64_t> bits_;         // bit tile_base_[t] + pos: the view keeps cell pos of tile t
  std::vector<uint64_t> tile_base_;    // per tile, then the total
  std::vector<uint64_t> chunk_bit_;    // the first bit of each chunk, then the total
  std::vector<uint64_t> chunk_cells_;  // cells in each chunk
  // Per tile, the chunks crossing it not finished yet; per chunk, finished.
  std::unique_ptr<std::atomic<uint32_t>[]> unfinished_;
  std::unique_ptr<std::atomic<bool>[]> finished_;
};

// Whether a sparse view holds every stored cell of its fragments, each
// once, as the fragments' metadata shows without a look at any cell: no
// delete condition nor delete timestamps, every fragment's cells written
// by the view's instant (per-cell timestamps up to the fragment's end, no
// later than the view), and no duplicate dropped (duplicates allowed or not
// deduplicated, or fragments without per-cell timestamps whose non-empty
// domains are pairwise disjoint). A fragment is taken to hold distinct
// coordinates, as TileDB's writer checks; a file sized on that ground
// (CSV sizes, ArrayView::StoredChunks) and a fragment that breaks it fail
// at the end of the read as kCorrupt, never with silently wrong bytes. False
// where the check would take long (more than 64 comparisons per fragment).
bool KeepsEveryStoredCell(const ViewInputs& in);

// The index of a view that KeepsEveryStoredCell, in storage order only:
// sparse_tiles holds every tile of every fragment (oldest first, each
// fragment's tiles in order), cell_count their cells; it has no view order
// (no ordinals, packing nor dimensions), so it serves StoredOrder alone.
// kUnsupported where ordinals would not fit in 63 bits.
Result<CellIndex> BuildStoredIndex(const ViewInputs& in);

// CountDimensionValues over every stored cell of the view's fragments
// (for a view that KeepsEveryStoredCell, its cells), with no index: a tile
// whose MBR (a fragment of one tile: its non-empty domain) lies within one
// interval counts all its cells there; the others' coordinates of dimension
// d are read, their small files together (ReadTiles). nullopt for a
// dimension that is not integer-like (Packable). Errors: those of reading
// the tiles; kCorrupt for a tile of another cell count than the metadata's.
Result<std::optional<std::vector<uint64_t>>> CountStoredDimensionValues(
    const ViewInputs& in, size_t d, std::span<const uint64_t> bounds);

}  // namespace tiledbfs::core
