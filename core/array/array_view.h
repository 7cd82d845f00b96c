// The array as of one instant (or one fragment on its own): the schema in
// force, the fragments and delete conditions that apply, and the cells they
// make, read field by field. Immutable once built; thread-safe.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/read/cell_index.h"
#include "core/read/gather.h"
#include "core/read/sparse_windows.h"
#include "core/read/stored_order.h"

namespace tiledbfs::core {

class Array;

class ArrayView {
 public:
  // `cache` holds decoded tiles, shared with the other views of the array.
  ArrayView(std::shared_ptr<const ArraySchema> schema, ViewInputs inputs, uint64_t instant,
            std::shared_ptr<TileCache> cache)
      : schema_(std::move(schema)),
        in_(std::move(inputs)),
        instant_(instant),
        cache_(std::move(cache)) {
    in_.schema = schema_.get();
  }
  // Same, but the fragment list is gathered by `fragments` on first use
  // (Array::ViewAt: building a view costs nothing per fragment, which
  // stating history/<T> of every instant relies on). `fragments` must not
  // fail: what it returns must be loaded already.
  using FragmentSource = std::function<std::vector<std::shared_ptr<FragmentMetadata>>()>;
  ArrayView(std::shared_ptr<const ArraySchema> schema, ViewInputs inputs, uint64_t instant,
            std::shared_ptr<TileCache> cache, FragmentSource fragments)
      : ArrayView(std::move(schema), std::move(inputs), instant, std::move(cache)) {
    source_ = std::move(fragments);
  }

  // The instant this view shows (the newest change it includes, or the
  // requested time for history lookups).
  uint64_t instant() const { return instant_; }
  // The timestamp the view was taken at (UINT64_MAX for the latest).
  uint64_t timestamp() const { return in_.timestamp; }
  const ArraySchema& schema() const { return *schema_; }
  std::shared_ptr<const ArraySchema> schema_ptr() const { return schema_; }
  const std::vector<std::shared_ptr<FragmentMetadata>>& fragments() const {
    return Inputs().fragments;
  }
  bool dense() const { return schema_->dense(); }

  // The same view, fresh (no index built), its sparse index cut into
  // windows of about `cells` cells (sparse_windows.h; ViewInputs). Given an
  // `owner`, one of several views read together as one stream: its windows
  // are kept in the pool under it and built by the reader only
  // (ViewInputs::window_owner).
  std::shared_ptr<const ArrayView> WithIndexWindow(uint64_t cells,
                                                   const void* owner = nullptr) const;
  uint64_t index_window_cells() const { return in_.index_window_cells; }
  // The same view restricted to a subarray (docs/namespace.md "Slices"; ViewInputs):
  // fresh, its index built over the cells in it alone.
  std::shared_ptr<const ArrayView> WithSubarray(Subarray subarray) const;
  const Subarray& subarray() const { return in_.subarray; }
  // The delete and update conditions in force (their commits' file names).
  std::vector<std::string> DeleteMarkers() const {
    std::vector<std::string> out;
    for (const DeleteRule& r : in_.deletes) out.push_back(r.marker);
    return out;
  }
  // What the view's cells are made of, as text: the schema, the instant,
  // the slice, the delete conditions and each fragment by name and by the
  // sizes its footer records. With Array::FileVersions (which tells apart
  // files rewritten with other bytes of the same sizes), the key of what
  // the persistent index keeps of a view: two views with the same of both
  // hold the same cells in the same order.
  std::string Identity() const;
  // The sparse windows' counts (SparseWindows::SaveCounts) once a window
  // is counted; for a sparse view indexed whole, its cell count once the
  // index is built; empty for other views.
  std::string SaveCounts() const;
  // Gives them back to a fresh view of the same Identity: no window need
  // be built to count the cells or to find a cell, and a view indexed whole
  // gives its cell count with no index built (the index, once built, must
  // hold as many: kCorrupt otherwise). kCorrupt where they do not fit
  // (SparseWindows::RestoreCounts); Ok, taking nothing, for a dense view
  // or saved counts of another kind.
  Status RestoreCounts(std::string_view saved) const;
  // Takes the counts of the windows that SaveCounts of `base` (a view
  // whose cells are all this one's, and whose fragments are this one's
  // first, in the same order) holds wholly below `row` (a value of the
  // first dimension, which must be integer-like): the other cells all lie
  // from `row` on (SparseWindows::TakeCountsBefore). Returns the windows
  // taken: 0 for a view not indexed in windows.
  Result<size_t> TakeCountsBefore(std::string_view base, Bytes row) const;
  // Whether SaveCounts holds every window's count: false for a sparse view
  // indexed in windows until a read or RestoreCounts counted them all.
  bool Counted() const;
  // How many windows the sparse index is cut into; 0 where it is built
  // whole (or the view is dense).
  Result<size_t> IndexWindows() const;

  // Number of cells (builds the cell index on first use; a view that
  // KeepsEveryStoredCell counts its stored cells instead, and its index,
  // once built, holds as many or is kCorrupt).
  Result<uint64_t> CellCount() const;
  // KeepsEveryStoredCell (stored_order.h) of this view, found once.
  bool KeepsEveryStoredCell() const;
  // Dense: the bounding box's extents; sparse: {cell count}.
  Result<std::vector<uint64_t>> Shape() const;
  // Non-empty domain: per dimension [lo, hi] over the view's cells (empty
  // when there are none).
  Result<std::vector<Range>> NonEmptyDomain() const;

  // A dimension or attribute of the view's schema, materialised in the
  // view's order. kNotFound for an unknown name.
  Result<Column> ReadField(const std::string& name) const;
  // Cells [first, first + count) of a field: decodes only the tiles that
  // hold them (dense views keep no per-cell state, so memory stays bounded
  // by the tile cache). `state`, if any, is the reader's (tile_cache.h:
  // the tiles it keeps between reads). kInvalidArgument past the end.
  // With `into` (count * cell size bytes), a fixed-size attribute's values
  // are written there and the column's data is left empty; other fields
  // ignore it. With `pieces` instead, they are appended to it, mostly as
  // spans of the decoded tiles (GatherAttribute); other fields ignore it.
  Result<Column> ReadFieldRange(const std::string& name, uint64_t first, uint64_t count,
                                ReadState* state = nullptr, uint8_t* into = nullptr,
                                Pieces* pieces = nullptr) const;

  // Sparse views whose integer coordinates pack: CountDimensionValues
  // (packed_index.h) of dimension `name` over the view's cells; nullopt for
  // other views. Before the index is built, a view that KeepsEveryStoredCell
  // counts with no index (CountStoredDimensionValues), so that sizing a
  // file needs no look at the other dimensions nor a sort. kNotFound for a
  // name that is not a dimension.
  Result<std::optional<std::vector<uint64_t>>> CountDimensionValues(
      const std::string& name, std::span<const uint64_t> bounds) const;

  // Sparse views: the view's cells in storage order, `chunk_cells` at a
  // time (StoredOrder; it points into the view, which must outlive it);
  // nullopt for a dense view. Before the index is built, a view that
  // KeepsEveryStoredCell takes its tiles from the metadata alone
  // (BuildStoredIndex): no coordinate is read.
  Result<std::optional<StoredOrder>> StoredChunks(uint64_t chunk_cells) const;
  // The attributes `names` of chunk k of `order` (from this view's
  // StoredChunks), their cells in storage order. kNotFound for a dimension
  // or an unknown name. (No reader state: the tiles come from the shared
  // cache.) When the view's tiles of `names` take more than the tile cache's
  // budget, the tiles of chunk k whose chunks have now all been read
  // (StoredOrder::Finish) leave the cache: a pass in storage order never
  // comes back to them, and they would only push out tiles still to read.
  Result<std::vector<Column>> ReadStoredChunk(const StoredOrder& order, size_t k,
                                              const std::vector<std::string>& names) const;

  // A reader going forward through the attributes `names` has read every
  // cell before `to` and had read those before `from`: when the view's
  // tiles of `names` take more than the tile cache's budget, their tiles
  // whose cells all lie before `to`, and not all before `from`, leave the
  // cache (TileEnds: sparse views whose coordinates pack; other views keep
  // theirs). A read cut into windows thus keeps in the cache the tiles it
  // has still to finish, not the ones it is done with. Returns how many
  // tiles left the cache.
  size_t ReleaseTiles(const std::vector<std::string>& names, uint64_t from, uint64_t to) const;
  // A reader done with the view: its sparse index windows leave the views'
  // pool (SparseWindows::LetGo). Nothing for a view not read in windows.
  void LetGoOfWindows() const;

 private:
  Result<const CellIndex*> Index() const;
  // A sparse view indexed a window of rows at a time (sparse_windows.h),
  // decided once; null for a view indexed whole (Index()).
  Result<const SparseWindows*> Windows() const;
  // ReadFieldRange through the windows.
  Result<Column> ReadWindowed(const SparseWindows& windows, const std::string& name, uint64_t first,
                              uint64_t count, ReadState* state, uint8_t* into,
                              Pieces* pieces) const;
  // kCorrupt where the view's cells, counted, are not the stored cells a
  // view that KeepsEveryStoredCell was sized from.
  Status CheckStoredCells(uint64_t view_cells) const;
  // The index if built; else, for a view that KeepsEveryStoredCell, the
  // one in storage order alone (BuildStoredIndex, kept); else Index().
  // Either serves StoredOrder and the tile lists of AttributeTileBytes.
  Result<const CellIndex*> StoredTilesIndex() const;
  // Whether the view KeepsEveryStoredCell and its index is not built yet
  // (nor every window counted).
  bool IndexlessStored() const;
  // Whether the view's tiles of the attributes `names` take more than the
  // cache's budget (AttributeTileBytes, kept per name).
  bool OverBudget(const std::vector<std::string>& names) const;
  // Takes tile t (of the index's sparse_tiles) of the attributes `names`
  // out of the cache; returns how many were in it.
  size_t DropTile(const CellIndex& index, size_t t, const std::vector<std::string>& names) const;
  // in_, with the fragment list gathered (once) if it was left to source_.
  const ViewInputs& Inputs() const;

  std::shared_ptr<const ArraySchema> schema_;
  // Mutable only for the fragment list that Inputs() gathers once (views are
  // made const; their observable state never changes).
  mutable ViewInputs in_;
  FragmentSource source_;
  mutable std::once_flag gathered_;
  uint64_t instant_;
  std::shared_ptr<TileCache> cache_;
  mutable std::mutex mu_;
  mutable std::optional<CellIndex> index_;
  mutable std::optional<std::unique_ptr<SparseWindows>> windows_;  // Windows(), decided once (mu_)
  mutable std::optional<bool> keeps_every_;  // KeepsEveryStoredCell, found once (mu_)
  mutable std::optional<CellIndex> stored_;  // BuildStoredIndex, kept once built (mu_)
  // A sparse view indexed whole: its cell count as the persistent index
  // kept it (RestoreCounts; mu_), given until the index is built, which
  // must then hold as many.
  mutable std::optional<uint64_t> saved_cells_;
  // ReleaseTiles and OverBudget (release_mu_): the index's tiles as (end,
  // tile) by end (TileEnds), made on first use; AttributeTileBytes by name.
  mutable std::mutex release_mu_;
  mutable std::optional<std::vector<std::pair<uint64_t, size_t>>> tile_ends_;
  mutable std::unordered_map<std::string, uint64_t> tile_bytes_;
};

// A fragment's line of ArrayView::Identity: its name and the sizes its
// footer records.
std::string FragmentIdentity(const FragmentMetadata& fragment);

}  // namespace tiledbfs::core
