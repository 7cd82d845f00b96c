// A sparse view's index a window of rows at a time, so that the index's
// memory does not grow with the array: a few windows of at most about
// `window_cells` cells each, instead of 8 bytes for every cell of the view.
//
// The view's cells are in row-major order (docs/namespace.md), so the cells
// whose first coordinate lies in a range of values are consecutive. The
// windows cut the first dimension's values into ranges of about
// `window_cells` cells, estimated from the tiles' bounding rectangles (a
// tile's cells taken as spread evenly over its rows). A window's index is
// built (BuildPackedCells) from the tiles whose rectangles cross its range
// when a read needs it; the last kKept built are kept, in the views'
// WindowPool (window_pool.h): once the view is no longer read, they and
// the carry below go as other views need the pool's room. On more than one
// core, a reader going on from window w - 1 to w has window w + 1 built in
// the background meanwhile (one more window kept), so that the reader's
// cores do not wait for the builds. The coordinate tiles
// that reach into the next window are handed to its build, so a pass in
// order decodes each coordinate tile once. Windows are counted in order as
// they are first built: a read at cell i first builds, once, the windows
// before it whose counts are not known yet. A window counted also cuts
// itself into kSubs sub-windows of about equal cells (their first rows
// and cells, kept with the counts): a read that jumps into a window not
// kept (a `tail`, a seek) builds only the sub-window holding its cell, a
// sixteenth of the sort and of the coordinate tiles; a reader going on
// from the window before builds it whole.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/read/cell_index.h"
#include "core/read/packed_index.h"
#include "core/read/run_index.h"
#include "core/read/stored_order.h"
#include "core/read/window_pool.h"

namespace tiledbfs::core {

// The window for a view whose tiles share a cache of `tile_budget` bytes:
// a view being read keeps about five windows' cells (those kept, the one
// built ahead, the spare, a build's sort), 40 bytes per window cell, a
// fraction of the memory the user gave, so the window is the budget's
// 64th: 2 Mi cells for the default cache (256M, half of it for tiles),
// never more than the build's default (ViewInputs::index_window_cells),
// never fewer than 64 Ki cells (a tile's cells, about).
uint64_t IndexWindowCells(uint64_t tile_budget);

struct SavedWindowCounts;  // SaveCounts read back (sparse_windows_counts.cc)

class SparseWindows {
 public:
  static constexpr size_t kKept = 2;
  static constexpr size_t kSubs = 16;
  // Waits for a window being built in the background.
  ~SparseWindows();
  SparseWindows(const SparseWindows&) = delete;
  SparseWindows& operator=(const SparseWindows&) = delete;

  // nullopt (a null pointer) where the view is better indexed whole
  // (BuildSparseIndex): a window whose cells would not pack with their
  // ordinals among its tiles, fewer cells than two windows, a first
  // dimension of one key, a fragment without a non-empty domain, or a tile
  // without a bounding rectangle or one outside the non-empty domains.
  // Coordinates that are not integer-like (a string or floating-point
  // dimension) are cut by their first dimension's keys (WindowKey), each
  // window indexed as the whole view would be (BuildKeyWindow). A
  // slice's windows cover its box alone. Windows that would look at more
  // than twice the view's cells (tiles crossing many of them) are made
  // twice as wide, until one would do. `in` must outlive the windows.
  // `ahead`: whether windows are built ahead of a reader going on (see
  // above); Make's default is when more than one core is usable
  // (UsableCores).
  static Result<std::unique_ptr<SparseWindows>> Make(const ViewInputs& in, uint64_t window_cells,
                                                     bool ahead);
  static Result<std::unique_ptr<SparseWindows>> Make(const ViewInputs& in, uint64_t window_cells);

  size_t windows() const { return starts_.size(); }
  // Every tile of the view, and no cell: what StoredOrder and
  // AttributeTileBytes need.
  const CellIndex& tiles() const { return tiles_; }

  // A window's index and the view cell its first cell is.
  struct Part {
    std::shared_ptr<const CellIndex> index;
    uint64_t first = 0;
  };
  // The window holding view cell `cell`. kInvalidArgument past the view's last
  // cell; kCorrupt for tiles that are not what their metadata says.
  Result<Part> Locate(uint64_t cell) const;
  // Whether every window has been counted.
  bool Counted() const;
  // The view's cells (counts every window not counted yet).
  Result<uint64_t> CellCount() const;
  // Per dimension, the lowest and highest coordinates of the view's cells
  // (empty when there are none); counts every window.
  Result<std::vector<Range>> Box() const;
  // Calls `each` with every window's index, in order.
  Status ForEach(const std::function<Status(const CellIndex&)>& each) const;
  // The tiles whose cells all lie before view cell `to` and not all before
  // `from`, as the windows counted so far tell: a tile ends, in the window
  // its rectangle ends in, after the cells up to its rectangle's upper
  // corner (TileEnds).
  std::vector<size_t> TilesEndingIn(uint64_t from, uint64_t to) const;
  // What counting the windows found so far (the first ones: each one's
  // end, where the tiles end, the box, the sub-windows), to be kept across
  // mounts (the persistent index): the windows of a fresh view of the same
  // inputs, cut as these are, take it back (RestoreCounts) instead of
  // building every window to count it. Empty before a window is counted.
  // The box holds the cells of the windows counted, and none outside the
  // view's own box.
  std::string SaveCounts() const;
  // kCorrupt, taking nothing, where `saved` is not SaveCounts of windows
  // cut as these are, or disagrees with the windows counted already. A
  // window built later that does not hold the cells `saved` says is
  // kCorrupt, as is any window counted twice with two counts.
  Status RestoreCounts(std::string_view saved) const;
  // Takes from SaveCounts of another view the windows counted there that
  // are cut as these are and lie wholly below row `row` (OrderedValue);
  // returns how many (none where this view counted a window already). The
  // other view's cells must all be this view's, those in rows below `row`
  // exactly this view's, from the same tiles numbered alike (its
  // fragments first, in the same order): a view appended to past `row`.
  // kCorrupt for bytes that are not SaveCounts.
  Result<size_t> TakeCountsBefore(std::string_view saved, uint64_t row) const;
  // Lets the pool go of the windows kept and the carry (a reader done with
  // the view: a diff's box read to its end); they are built again if read.
  void LetGo() const;
  // The window builds so far, and those of them that filled the memory of
  // a window dropped (tests).
  uint64_t builds() const;
  uint64_t reuses() const;
  // The sub-window builds so far (tests).
  uint64_t sub_builds() const;
  // Returns once no window waits to be built in the background or is being
  // built (tests: what a reader's Locate sent ahead is then done).
  void WaitForAhead() const;

 private:
  SparseWindows() = default;
  // The first coordinate's values of window w: [lo, hi] (OrderedValue).
  std::pair<uint64_t, uint64_t> Rows(size_t w) const;
  // Window w, from the kept ones or built (w at most the windows counted).
  Result<Part> Get(size_t w) const;
  // Window w, kept or built. `ahead` (the background thread): built only
  // while the reader is still at window w - 1, else a null index.
  Result<Part> Build(size_t w, bool ahead = false) const;
  // The first `windows` windows of `saved` as counted here (mu_ held).
  void TakeLocked(SavedWindowCounts saved, size_t windows) const;
  // Sub-window s of window w (counted, with its cuts), kept or built.
  Result<Part> BuildSub(size_t w, size_t s) const;
  // Whether a read of window w goes on from the window before (or starts
  // at the first): mu_ held.
  bool OnwardLocked(size_t w) const { return w == 0 ? last_got_ == SIZE_MAX : last_got_ == w - 1; }
  // Has window w built by the background thread (started on first use).
  void BuildAhead(size_t w) const;
  void AheadLoop() const;

  const ViewInputs* in_ = nullptr;
  PackedPlan plan_;
  CellIndex tiles_;
  std::vector<uint64_t> starts_;                        // per window, its first row (OrderedValue)
  std::vector<PackedTile> rows_;                        // per tile of the plan, the rows it holds
  std::vector<std::pair<size_t, size_t>> last_window_;  // (window, tile), ascending

  mutable std::mutex mu_;               // guards what follows, but the carry
  mutable std::vector<uint64_t> ends_;  // per window counted: the view cell past its last
  mutable std::vector<std::pair<uint64_t, size_t>> ended_;  // (end, tile) of windows counted
  mutable std::vector<Range> box_;  // per dimension, over the windows counted (box_set_)
  mutable bool box_set_ = false;
  // A sub-window's first row (OrderedValue) and first view cell.
  struct SubCut {
    uint64_t row = 0;
    uint64_t first = 0;
  };
  // Per window counted, where its sub-windows after the first start
  // (ascending rows; none for a window that does not pack its keys).
  mutable std::vector<std::vector<SubCut>> subs_;
  bool generic_ = false;  // coordinates that do not pack: windows of key_ (BuildKeyWindow)
  // Windows built from runs (run_index.h) where they give the order; after
  // kRunsMisses windows where they did not, from keys alone.
  static constexpr int kRunsMisses = 2;
  std::optional<RunPlan> runs_;
  mutable int runs_misses_ = 0;  // build_mu_ held
  WindowKey key_;
  // Newest last; each held in pool_ (and by readers), so it may be gone.
  mutable std::vector<std::pair<size_t, std::weak_ptr<CellIndex>>> kept_;
  mutable size_t last_got_ = SIZE_MAX;  // the window Get or BuildSub was last asked for
  mutable size_t sub_of_ = SIZE_MAX;    // the window of the last BuildSub
  mutable uint64_t builds_ = 0;
  mutable uint64_t reuses_ = 0;
  mutable uint64_t sub_builds_ = 0;
  // The sub-windows kept ((window, sub), newest last; at most kKept), held
  // in pool_ as windows are.
  mutable std::vector<std::pair<std::pair<size_t, size_t>, std::weak_ptr<CellIndex>>> sub_kept_;
  mutable std::mutex build_mu_;  // one build at a time; guards the carry
  // The coordinate tiles reaching into window carry_for_, held in pool_.
  mutable std::weak_ptr<CoordCarry> carry_;
  mutable size_t carry_for_ = SIZE_MAX;
  // Where the kept windows and the carry are held: the views' pool
  // (ViewInputs::window_pool), else one of this view's own.
  std::shared_ptr<WindowPool> pool_;
  const void* owner_ = nullptr;  // in pool_: ViewInputs::window_owner, else this
  // A kept window's index, giving its cells to the pool's spare when let
  // go (its deleter: that orders the reader's last look before the next
  // builder's writes; a use count read could not).
  std::shared_ptr<CellIndex> Keep(CellIndex index) const;
  // The window kept as w, if it still lives (mu_ held).
  std::shared_ptr<CellIndex> KeptLocked(size_t w) const;

  // The windows kept: kKept, one more when building ahead.
  size_t KeptMost() const { return ahead_ ? kKept + 1 : kKept; }

  bool ahead_ = false;
  mutable std::mutex ahead_mu_;  // guards what follows
  mutable std::condition_variable ahead_cv_;
  mutable std::thread ahead_thread_;
  mutable size_t ahead_want_ = SIZE_MAX;  // the window to build next, if any
  mutable bool ahead_building_ = false;   // the thread is in Build
  mutable bool ahead_stop_ = false;
};

}  // namespace tiledbfs::core
