// Which stored cell supplies each cell of a view, in the view's order
// (docs/namespace.md "Which cells, in which order"):
//  - dense: every cell of the bounding box of the fragments' non-empty
//    domains, row-major; per cell the newest fragment that wrote it, else
//    the fill value;
//  - sparse: every stored cell that survives the timestamp filter, dedup
//    (newest timestamp wins unless duplicates are allowed) and delete
//    conditions, sorted row-major by coordinates.
// Built once per view (dense_index.h, sparse_index.h, packed_index.h);
// attribute reads then gather values tile by tile (gather.h).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/fragment/fragment_metadata.h"
#include "core/read/column.h"
#include "core/read/sparse_order.h"
#include "core/read/subarray.h"
#include "core/read/window_pool.h"
#include "core/util/limits.h"

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
  // Whether windows may be built from runs (run_index.h) where those give
  // the order; off, from keys alone (tests of the keys' path).
  bool window_runs = true;
  // Where the windows are kept between reads, with other views' (null: a
  // pool of the view's own, holding only its last windows).
  std::shared_ptr<WindowPool> window_pool;
  // Views read together (a diff's slices, merged as one stream) name one
  // owner in the pool, so that they never drop one another's windows, and
  // build no window ahead of their reader (SparseWindows): one stream reads
  // them in turn, and a thread and a window more for each of up to 32
  // slices cost 30 MiB on sparse8's 20M diff (null: the view's own).
  const void* window_owner = nullptr;
  // A slice (empty: the whole view). Dense: the box, a dimension left
  // unnamed keeping the bounding box's extent; sparse: only the cells in
  // it, from the tiles whose MBRs meet it.
  Subarray subarray;
  // The array's caps (Array::limits): an index of more cells than
  // max_view_cells is kOutOfMemory.
  Limits limits;
};

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

}  // namespace tiledbfs::core
