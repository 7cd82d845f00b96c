// Which stored cell supplies each cell of a view, in the view's order
// (NAMESPACE.md "Which cells, in which order"):
//  - dense: every cell of the bounding box of the fragments' non-empty
//    domains, row-major; per cell the newest fragment that wrote it, else
//    the fill value;
//  - sparse: every stored cell that survives the timestamp filter, dedup
//    (newest timestamp wins unless duplicates are allowed) and delete
//    conditions, sorted row-major by coordinates.
// Built once per view; attribute reads then gather values tile by tile.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/fragment/fragment_metadata.h"
#include "core/read/column.h"
#include "core/read/sparse_order.h"
#include "core/read/subarray.h"
#include "core/read/tile_cache.h"
#include "core/read/tile_source.h"
#include "core/util/pieces.h"

namespace tiledbfs::core {

struct CellRef {
  static constexpr uint32_t kFill = 0xFFFFFFFFu;
  uint32_t fragment = kFill;  // index into the view's fragments, or kFill
  uint32_t pos = 0;           // cell position within the tile
  uint64_t tile = 0;
};

// Consecutive cells of a view that one tile supplies, at positions pos,
// pos + step, pos + 2 * step... of that tile (or that are all fill values).
struct CellRun {
  CellRef ref;
  uint64_t count = 0;
  uint64_t step = 1;
};

// The values of one cell's fields, for evaluating delete conditions.
class CellValues {
 public:
  virtual ~CellValues() = default;
  // The bytes of `field` in this cell; nullopt if the field is null or
  // absent from the cell's fragment.
  virtual Result<std::optional<Bytes>> Value(const std::string& field) const = 0;
  // The schema of the cell's fragment.
  virtual const ArraySchema& schema() const = 0;
};

// A delete condition in force in the view.
struct DeleteRule {
  uint64_t timestamp = 0;  // the commit's timestamp: cells written up to it are judged
  std::string marker;      // the commit's file name (processed-conditions key)
  std::function<Result<bool>(const CellValues&)> matches;  // true: the cell is deleted
};

struct ViewInputs {
  const ArraySchema* schema = nullptr;                       // in force at the view
  std::vector<std::shared_ptr<FragmentMetadata>> fragments;  // oldest first
  uint64_t timestamp = UINT64_MAX;  // view instant: cell timestamps above it are hidden
  bool filter_timestamps = true;    // false for a fragment shown on its own
  bool dedup = true;                // false for a fragment shown on its own
  std::vector<DeleteRule> deletes;
  bool encrypted = false;
  // A sparse view of at least twice this many cells is indexed a window of
  // rows at a time (sparse_windows.h), each of about this many cells. The
  // build sets the default (CMake TILEDBFS_INDEX_WINDOW_CELLS, 2 Mi); a
  // build with a small one sends small arrays down that path.
  uint64_t index_window_cells = TILEDBFS_INDEX_WINDOW_CELLS;
  // A slice (empty: the whole view). Dense: the box, a dimension left
  // unnamed keeping the bounding box's extent; sparse: only the cells in
  // it, from the tiles whose MBRs meet it (the generic index alone).
  Subarray subarray;
};

// The index of the view's attribute `attr` in fragment `frag`'s own schema,
// or -1 where the fragment holds none of its cells: it predates the
// attribute, or it holds an attribute of that name that was var-sized where
// `attr` is fixed-sized or the other way round (dropped and added again by
// schema evolution). The view then shows the fill value there, as TileDB
// does.
int FragmentAttribute(const FragmentMetadata& frag, const Attribute& attr);

// Dense views: which fragment, tile and position supply cell i of the
// bounding box (row-major), computed from the fragments' non-empty domains
// and tile grids, so a dense view holds no per-cell state.
class DenseLocator {
 public:
  static Result<DenseLocator> Make(const ViewInputs& in, const std::vector<__int128>& box_lo,
                                   const std::vector<uint64_t>& shape);
  CellRef Locate(uint64_t i) const;
  // The run of at most `max` (>= 1) cells from cell i that one tile (or the
  // fill value) supplies: it stops at the end of a row of the box, of the
  // tile, of the fragment's non-empty domain, or where a newer fragment
  // starts. Reads copy whole runs instead of locating every cell.
  CellRun LocateRun(uint64_t i, uint64_t max) const;

 private:
  struct Frag {
    std::vector<__int128> a, b, dom_lo, ext;  // NED, domain low, tile extent
    std::vector<uint64_t> tile_first, tiles_per_dim, cell_ext;
    Layout tile_order = Layout::kRowMajor, cell_order = Layout::kRowMajor;
    uint64_t last_step = 1;  // distance in the tile between neighbours along the last dimension
    bool empty = true;
  };
  // The coordinates of cell i of the box.
  void Coords(uint64_t i, __int128* c) const;
  // The newest fragment holding coordinates c, or -1.
  int Winner(const __int128* c) const;
  CellRef RefIn(size_t fi, const __int128* c) const;
  std::vector<Frag> frags_;  // one per view fragment, oldest first
  std::vector<__int128> lo_;
  std::vector<uint64_t> shape_, strides_;
};

struct CellIndex {
  uint64_t cell_count = 0;
  // Sparse: the stored cell behind each view cell, as an ordinal
  // (sparse_order.h): (tile << pos_bits) | pos, tile indexing sparse_tiles.
  // Integer coordinates that pack (KeyPacking) are kept with it, one uint64
  // per cell (`packed`: key << ord_bits | ordinal, the key holding the
  // coordinates); otherwise `ordinals` and the coordinate columns `dims`.
  struct SparseTile {
    uint32_t fragment = 0;
    uint64_t tile = 0;
  };
  std::vector<SparseTile> sparse_tiles;
  int pos_bits = 0;
  std::vector<uint64_t> ordinals;
  std::vector<uint64_t> packed;
  // Or, for cells that come in long runs of one tile (StoredOrder::Chunk of
  // a view that keeps every stored cell), the runs instead of a word per
  // cell: run j is the view cells from runs[j].first (ascending, the first
  // 0) to the next run's first or cell_count, the stored cells from ordinal
  // runs[j].second on.
  std::vector<std::pair<uint64_t, uint64_t>> runs;
  std::optional<KeyPacking> packing;
  std::optional<DenseLocator> dense;  // dense: computes refs
  std::vector<Range> box;       // dense: the bounding box; sparse: lowest and highest coordinates
  std::vector<Column> dims;     // sparse without packing: the coordinate columns
  std::vector<uint64_t> shape;  // dense: extents of box per dimension

  CellRef At(uint64_t i) const { return dense ? dense->Locate(i) : RunAt(i, 1).ref; }
  // Sparse: the ordinal of the stored cell behind view cell i.
  uint64_t OrdinalAt(uint64_t i) const {
    if (!runs.empty()) {
      const auto& r = *RunOf(i);
      return r.second + (i - r.first);
    }
    return packing ? packing->OrdinalOf(packed[i]) : ordinals[i];
  }
  // The run of at most `max` (>= 1) cells from cell i supplied by one tile.
  CellRun RunAt(uint64_t i, uint64_t max) const;
  // Bytes the index holds (approximately).
  uint64_t footprint() const;

 private:
  // The run holding view cell i (runs not empty).
  std::vector<std::pair<uint64_t, uint64_t>>::const_iterator RunOf(uint64_t i) const {
    return std::upper_bound(runs.begin(), runs.end(),
                            std::pair<uint64_t, uint64_t>(i, UINT64_MAX)) -
           1;
  }
  CellRef RefOf(uint64_t ordinal) const {
    const SparseTile& t = sparse_tiles[ordinal >> pos_bits];
    return CellRef{t.fragment, static_cast<uint32_t>(ordinal & ((uint64_t{1} << pos_bits) - 1)),
                   t.tile};
  }
};

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

Result<CellIndex> BuildDenseIndex(const ViewInputs& in);
Result<CellIndex> BuildSparseIndex(const ViewInputs& in);

// A sparse index whose coordinates pack (CellIndex::packing), built whole
// (BuildSparseIndex) or a window of its rows at a time (sparse_windows.h):
// the view's tiles and how their cells pack.
struct PackedPlan {
  OrderInput order;  // every tile of the view's fragments, oldest first (no stamps)
  KeyPacking packing;
  uint64_t total_cells = 0;  // the cells the tiles store
};
// nullopt where the view takes the generic path: coordinates that are not
// integer-like or do not pack with the ordinal in 64 bits, a fragment
// without a non-empty domain, delete conditions. kCorrupt for a fragment
// whose schema has another number of dimensions; kOutOfMemory for more
// cells than DefaultLimits().max_view_cells.
Result<std::optional<PackedPlan>> PlanPackedIndex(const ViewInputs& in);

// A tile of a PackedPlan (an index into plan.order.tiles) and the bounds of
// its first coordinate (OrderedValue) that its bounding rectangle gives.
struct PackedTile {
  size_t tile = 0;
  uint64_t lo = 0, hi = UINT64_MAX;
};
// Decoded coordinate tiles that one build hands to the next, by tile of
// the plan.
using CoordCarry = std::unordered_map<size_t, std::vector<DecodedTile>>;

// The view's cells among `tiles` whose first coordinate lies in [lo, hi]
// (OrderedValue), packed and in view order (timestamps, dedup and delete
// timestamps applied: every version of a cell lies in the same range).
// nullopt where the coordinates are not what the plan says (another size,
// var-sized, outside the non-empty domains): the generic path. kCorrupt
// for a cell outside its tile's bounds [lo, hi] (a build of a range would
// miss it). With `carry`: its tiles are used instead of reading them again,
// and it is left holding the coordinates of the tiles reaching past `hi`.
// `reuse`: memory for the cells (its values are dropped), from an index
// no longer needed, so that a build does not touch fresh pages.
Result<std::optional<std::vector<uint64_t>>> BuildPackedCells(
    const ViewInputs& in, const PackedPlan& plan, std::span<const PackedTile> tiles, uint64_t lo,
    uint64_t hi, CoordCarry* carry, std::vector<uint64_t> reuse = {});
// The index of `cells` (from BuildPackedCells): every tile of the plan, the
// packing, the box of the cells.
CellIndex MakePackedIndex(const PackedPlan& plan, std::vector<uint64_t> cells);

// Dimension d's bounds in the MBR of tile t of `frag` (a fragment of one
// tile: its non-empty domain, which holds every cell), or null where
// unknown.
const Range* TileMbr(const FragmentMetadata& frag, uint64_t t, size_t d, size_t dims);

// Cells [first, first + count) of dimension d of a dense index
// (coordinates of the box, row-major).
Column DenseDimensionColumn(const ArraySchema& schema, const CellIndex& index, size_t d,
                            uint64_t first, uint64_t count);
// Cells [first, first + count) of dimension d of a sparse index (the
// caller checks the range).
Column SparseDimensionColumn(const ArraySchema& schema, const CellIndex& index, size_t d,
                             uint64_t first, uint64_t count);

// A sparse index whose coordinates pack (CellIndex::packing): how many of
// its cells hold in dimension d a value (OrderedValue) in each interval
// that the ascending `bounds` cut: counts[0] below bounds[0], counts[i]
// from bounds[i - 1] up to bounds[i], and counts[bounds.size()] from the
// last bound on. The cells are in coordinate order, so dimension d ascends
// within each run of cells equal in the dimensions before it: a few binary
// searches per run, not a look at every cell. nullopt without packing.
std::optional<std::vector<uint64_t>> CountDimensionValues(const CellIndex& index, size_t d,
                                                          std::span<const uint64_t> bounds);

// A sparse index whose coordinates pack (CellIndex::packing): per tile of
// index.sparse_tiles, the view cell past the last one it can supply (from
// the tile's MBR: cells lie within it, and the view is in coordinate
// order), or UINT64_MAX where that is not known (no readable MBR, or one
// below the packing's bounds). Empty without packing.
std::vector<uint64_t> TileEnds(const ViewInputs& in, const CellIndex& index);

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
