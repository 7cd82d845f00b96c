#include "core/read/sparse_windows.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/read/coord_tiles.h"
#include "core/read/coords.h"
#include "core/read/sparse_index.h"
#include "core/read/tile_cache.h"
#include "core/util/parallel.h"

namespace tiledbfs::core {
namespace {

// Where the density of cells along the first dimension changes: at row
// `at`, by `delta` cells per row.
struct DensityStep {
  uint64_t at = 0;
  double delta = 0;
  bool operator<(const DensityStep& o) const { return at < o.at; }
};

// The first rows of windows of about `cells` cells each over [lo, hi], the
// tiles' cells spread evenly over their rows.
std::vector<uint64_t> CutRows(const std::vector<PackedTile>& rows, const OrderInput& order,
                              const ViewInputs& in, uint64_t lo, uint64_t hi, uint64_t cells) {
  std::vector<DensityStep> steps;
  steps.reserve(rows.size() * 2);
  for (size_t t = 0; t < rows.size(); ++t) {
    const OrderTile& ot = order.tiles[t];
    const double n = static_cast<double>(in.fragments[ot.fragment]->TileCellNum(ot.tile));
    const double per_row = n / (static_cast<double>(rows[t].hi - rows[t].lo) + 1.0);
    steps.push_back({rows[t].lo, per_row});
    if (rows[t].hi < hi) steps.push_back({rows[t].hi + 1, -per_row});
  }
  std::sort(steps.begin(), steps.end());
  std::vector<uint64_t> starts{lo};
  const double want = static_cast<double>(cells);
  double acc = 0, density = 0;
  uint64_t row = lo;
  // Rows [row, end] hold `density` cells each: a window starts wherever
  // `cells` have gathered since the last one started.
  auto segment = [&](uint64_t end) {
    while (density > 0) {
      const double need = std::max(0.0, (want - acc) / density);
      const uint64_t left = end - row;  // rows after `row` in the segment
      const double span = static_cast<double>(left) + 1.0;
      if (need > span) {
        acc += density * span;
        return;
      }
      // Full after `step` rows: the next window starts there.
      const uint64_t step = std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(need)));
      acc = 0;
      if (step > left) {
        if (end < hi) starts.push_back(end + 1);
        return;
      }
      row += step;
      starts.push_back(row);
    }
  };
  for (size_t i = 0; i < steps.size();) {
    const uint64_t at = steps[i].at;
    if (at > row) segment(at - 1);
    row = at;
    for (; i < steps.size() && steps[i].at == at; ++i) density += steps[i].delta;
    density = std::max(density, 0.0);
  }
  segment(hi);
  return starts;
}

// The plan of a view whose coordinates do not pack (a string or floating-
// point dimension), for windows of its first dimension's keys: its tiles
// (those meeting its subarray) and, in plan.lo[0] and plan.hi[0], the keys
// of its fragments' non-empty domains. nullopt where a fragment has none.
Result<std::optional<PackedPlan>> PlanKeyWindows(const ViewInputs& in, WindowKey* key) {
  const ArraySchema& schema = *in.schema;
  const size_t dims = schema.dimensions.size();
  std::optional<PackedPlan> none;
  if (dims == 0) return none;
  PackedPlan plan;
  OrderInput& order = plan.order;
  for (const Dimension& d : schema.dimensions) order.types.push_back(d.type);
  order.dedup = in.dedup && !schema.allows_dups;
  const Datatype type = order.types[0];
  ByteVec lo, hi;  // dimension 0's lowest and highest values
  bool any = false;
  for (size_t fi = 0; fi < in.fragments.size(); ++fi) {
    const FragmentMetadata& frag = *in.fragments[fi];
    TRY(CheckDimensionCount(in, frag));
    if (frag.tile_num() == 0) continue;
    const FragmentFooter& ft = frag.footer();
    if (ft.null_non_empty_domain || ft.non_empty_domain.size() != dims) return none;
    const Range& r = ft.non_empty_domain[0];
    if (!any || CompareValues(type, r.lo, lo) < 0) lo = r.lo;
    if (!any || CompareValues(type, r.hi, hi) > 0) hi = r.hi;
    any = true;
    AddPlanTiles(in, fi, plan);
  }
  if (order.tiles.empty()) return none;
  order.pos_bits = BitsFor(plan.max_tile_cells);
  if (order.pos_bits > 32 || BitsFor(order.tiles.size()) + order.pos_bits > 63) return none;
  if (plan.total_cells > in.limits.max_view_cells) {
    return Error::OutOfMemory(
        fmt::format("sparse view of more than {} cells", in.limits.max_view_cells));
  }
  // Every value lies between lo and hi, so begins with the bytes they share.
  key->type = type;
  key->skip = 0;
  if (!Packable(type) && type != Datatype::kFloat32 && type != Datatype::kFloat64) {
    while (key->skip < lo.size() && key->skip < hi.size() && lo[key->skip] == hi[key->skip]) {
      ++key->skip;
    }
  }
  plan.lo = {(*key)(lo)};
  plan.hi = {(*key)(hi)};
  return std::optional<PackedPlan>(std::move(plan));
}

// Where a window's index (its cells in view order, packed) cuts into
// `subs` sub-windows of about equal cells, cut only between rows: per cut
// after the first sub-window, its first row (above `lo`, the window's
// first) and the window's cells before it. None without packed cells.
std::vector<std::pair<uint64_t, uint64_t>> CutSubWindows(const CellIndex& index, uint64_t lo,
                                                         size_t subs) {
  std::vector<std::pair<uint64_t, uint64_t>> cuts;
  if (!index.packing || index.packed.size() != index.cell_count || index.cell_count < subs) {
    return cuts;
  }
  std::vector<uint64_t> rows;
  for (size_t s = 1; s < subs; ++s) {
    const uint64_t row = index.packing->Coordinate(index.packed[index.cell_count / subs * s], 0);
    if (row > (rows.empty() ? lo : rows.back())) rows.push_back(row);
  }
  const std::optional<std::vector<uint64_t>> counts = CountDimensionValues(index, 0, rows);
  if (!counts) return cuts;
  uint64_t before = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    before += (*counts)[i];
    cuts.emplace_back(rows[i], before);
  }
  return cuts;
}

}  // namespace

uint64_t IndexWindowCells(uint64_t tile_budget) {
  const uint64_t build = ViewInputs().index_window_cells;
  return std::min(build, std::max<uint64_t>(uint64_t{64} << 10, tile_budget / 64));
}

Result<std::unique_ptr<SparseWindows>> SparseWindows::Make(const ViewInputs& in,
                                                           uint64_t window_cells) {
  return Make(in, window_cells, UsableCores() > 1);
}

Result<std::unique_ptr<SparseWindows>> SparseWindows::Make(const ViewInputs& in,
                                                           uint64_t window_cells, bool ahead) {
  std::unique_ptr<SparseWindows> none;
  window_cells = std::max<uint64_t>(window_cells, 1);
  ASSIGN_OR_RETURN(std::optional<PackedPlan> plan, PlanPackedIndex(in));
  // Coordinates that do not pack: windows of the first dimension's keys,
  // each indexed as the whole view would be (BuildKeyWindow).
  WindowKey key;
  const bool generic = !plan;
  if (generic) {
    ASSIGN_OR_RETURN(plan, PlanKeyWindows(in, &key));
  }
  if (!plan || plan->order.tiles.empty() || plan->total_cells / 2 < window_cells) return none;
  const std::vector<uint64_t>& lo = plan->lo;
  const std::vector<uint64_t>& hi = plan->hi;
  if (lo[0] >= hi[0]) return none;
  const size_t dims = plan->order.types.size();
  const Datatype type = plan->order.types[0];
  key.type = type;
  auto w = std::unique_ptr<SparseWindows>(new SparseWindows());
  w->rows_.resize(plan->order.tiles.size());
  for (size_t t = 0; t < plan->order.tiles.size(); ++t) {
    const OrderTile& ot = plan->order.tiles[t];
    const Range* r = TileMbr(*in.fragments[ot.fragment], ot.tile, 0, dims);
    if (r == nullptr) return none;
    if (!generic && (r->lo.size() != DatatypeSize(type) || r->hi.size() != DatatypeSize(type))) {
      return none;
    }
    const uint64_t a = std::max(key(r->lo), lo[0]);
    const uint64_t b = std::min(key(r->hi), hi[0]);
    if (a > b) return none;
    w->rows_[t] = PackedTile{t, a, b};
  }
  // What the windows would look at: each tile once per window it crosses.
  // Where that is more than twice the cells, the windows are too thin for
  // the tiles: twice as wide, until one would do.
  auto window_of = [&w](uint64_t row) {
    return static_cast<size_t>(std::upper_bound(w->starts_.begin(), w->starts_.end(), row) -
                               w->starts_.begin()) -
           1;
  };
  std::vector<int64_t> crossing;  // per window, then one more: +1 where a tile starts, -1 past it
  for (;; window_cells *= 2) {
    w->starts_ = CutRows(w->rows_, plan->order, in, lo[0], hi[0], window_cells);
    if (w->starts_.size() < 2) return none;
    uint64_t looked = 0;
    w->last_window_.clear();
    crossing.assign(w->starts_.size() + 1, 0);
    for (size_t t = 0; t < w->rows_.size(); ++t) {
      const OrderTile& ot = plan->order.tiles[t];
      const size_t first = window_of(w->rows_[t].lo), last = window_of(w->rows_[t].hi);
      looked += in.fragments[ot.fragment]->TileCellNum(ot.tile) * (last - first + 1);
      w->last_window_.emplace_back(last, t);
      ++crossing[first];
      --crossing[last + 1];
    }
    if (looked / 2 <= plan->total_cells) break;
  }
  // Each window packs its cells with their ordinals among its own tiles.
  int64_t tiles_in = 0;
  for (size_t i = 0; !generic && i < w->starts_.size(); ++i) {
    tiles_in += crossing[i];
    const uint64_t a = w->starts_[i];
    const uint64_t b = i + 1 < w->starts_.size() ? w->starts_[i + 1] - 1 : hi[0];
    if (!plan->Packing(static_cast<size_t>(tiles_in), a, b)) return none;
  }
  std::sort(w->last_window_.begin(), w->last_window_.end());
  w->in_ = &in;
  w->tiles_ = PlanTiles(*plan);
  w->plan_ = std::move(*plan);
  w->generic_ = generic;
  if (!generic && in.window_runs) w->runs_ = PlanRuns(in, w->plan_);
  w->key_ = key;
  w->box_.assign(dims, Range{});
  w->ahead_ = ahead;
  w->pool_ = in.window_pool ? in.window_pool : std::make_shared<WindowPool>(0);
  w->owner_ = in.window_owner != nullptr ? in.window_owner : w.get();
  return w;
}

SparseWindows::~SparseWindows() {
  {
    std::lock_guard<std::mutex> lock(ahead_mu_);
    ahead_stop_ = true;
  }
  ahead_cv_.notify_all();
  if (ahead_thread_.joinable()) ahead_thread_.join();
  if (!pool_) return;
  // Only this view's entries: others of its owner may live on.
  for (const auto& [kw, index] : kept_) {
    if (auto alive = index.lock()) pool_->Release(alive.get());
  }
  for (const auto& [ks, index] : sub_kept_) {
    if (auto alive = index.lock()) pool_->Release(alive.get());
  }
  if (auto carry = carry_.lock()) pool_->Release(carry.get());
}

void SparseWindows::LetGo() const {
  // No build under way (its carry and kept window would come back).
  std::lock_guard<std::mutex> build(build_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [kw, index] : kept_) {
      if (auto alive = index.lock()) pool_->Release(alive.get());
    }
    kept_.clear();
    for (const auto& [ks, index] : sub_kept_) {
      if (auto alive = index.lock()) pool_->Release(alive.get());
    }
    sub_kept_.clear();
    last_got_ = SIZE_MAX;
    sub_of_ = SIZE_MAX;
  }
  if (auto carry = carry_.lock()) pool_->Release(carry.get());
  carry_.reset();
  carry_for_ = SIZE_MAX;
}

void SparseWindows::BuildAhead(size_t w) const {
  std::lock_guard<std::mutex> lock(ahead_mu_);
  if (ahead_stop_) return;
  if (!ahead_thread_.joinable()) {
    try {
      ahead_thread_ = std::thread([this] { AheadLoop(); });
    } catch (...) {
      return;  // no thread to be had: the reader builds it
    }
  }
  ahead_want_ = w;
  ahead_cv_.notify_all();
}

void SparseWindows::AheadLoop() const {
  std::unique_lock<std::mutex> lock(ahead_mu_);
  for (;;) {
    ahead_cv_.wait(lock, [this] { return ahead_stop_ || ahead_want_ != SIZE_MAX; });
    if (ahead_stop_) return;
    const size_t w = ahead_want_;
    ahead_want_ = SIZE_MAX;
    ahead_building_ = true;
    lock.unlock();
    // A failed build is the reader's to report, when it builds the window
    // itself.
    try {
      (void)Build(w, true);
    } catch (...) {
    }
    lock.lock();
    ahead_building_ = false;
    ahead_cv_.notify_all();  // WaitForAhead
  }
}

void SparseWindows::WaitForAhead() const {
  std::unique_lock<std::mutex> lock(ahead_mu_);
  ahead_cv_.wait(lock,
                 [this] { return ahead_stop_ || (ahead_want_ == SIZE_MAX && !ahead_building_); });
}

std::pair<uint64_t, uint64_t> SparseWindows::Rows(size_t w) const {
  return {starts_[w], w + 1 < starts_.size() ? starts_[w + 1] - 1 : plan_.hi[0]};
}

Result<SparseWindows::Part> SparseWindows::Build(size_t w, bool ahead) const {
  std::lock_guard<std::mutex> build(build_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto index = KeptLocked(w)) return Part{std::move(index), w == 0 ? 0 : ends_[w - 1]};
    // The reader went on (or elsewhere) while this thread waited: window w
    // would be built behind it, then dropped unread, on a busy machine.
    if (ahead && (w == 0 || last_got_ != w - 1)) return Part{nullptr, 0};
    if (w > ends_.size()) {
      return Error::InvalidArgument(
          fmt::format("sparse window {} before window {} is counted", w, ends_.size()));
    }
  }
  {
    // Room for this one: the oldest kept window goes now (a reader still
    // holding it keeps it alive).
    std::lock_guard<std::mutex> lock(mu_);
    if (kept_.size() >= KeptMost()) {
      if (auto oldest = kept_.front().second.lock()) pool_->Release(oldest.get());
      kept_.erase(kept_.begin());
    }
  }
  const auto [lo, hi] = Rows(w);
  std::vector<PackedTile> tiles;
  for (const PackedTile& t : rows_) {
    if (t.lo <= hi && t.hi >= lo) tiles.push_back(t);
  }
  // The carry left for this window, if the pool still holds it; taken out
  // of the pool while the build changes it.
  std::shared_ptr<CoordCarry> carry = carry_for_ == w ? carry_.lock() : nullptr;
  if (auto old = carry_.lock()) pool_->Release(old.get());
  if (!carry) carry = std::make_shared<CoordCarry>();
  carry_.reset();
  carry_for_ = SIZE_MAX;
  std::vector<uint64_t> spare;
  if (!generic_) {  // a generic window's cells are no packed keys
    const auto& pool_spare = pool_->spare();
    std::lock_guard<std::mutex> lock(pool_spare->mu);
    spare.swap(pool_spare->cells);
  }
  const bool reused = spare.capacity() > 0;
  std::optional<CellIndex> built;
  std::vector<std::pair<uint64_t, uint64_t>> run_cuts;  // a window of runs' sub-windows
  if (generic_) {
    ASSIGN_OR_RETURN(
        built, BuildKeyWindow(*in_, plan_.order, tiles, key_, lo, hi, plan_.lo[0], plan_.hi[0]));
  } else {
    if (runs_ && runs_misses_ < kRunsMisses) {
      ASSIGN_OR_RETURN(
          built, BuildRunCells(*in_, plan_, *runs_, tiles, lo, hi, carry.get(), &run_cuts, kSubs));
      if (!built) ++runs_misses_;
    }
    if (built && reused) {  // runs need no key per cell: the memory stays spare
      const auto& pool_spare = pool_->spare();
      std::lock_guard<std::mutex> lock(pool_spare->mu);
      if (spare.capacity() > pool_spare->cells.capacity()) spare.swap(pool_spare->cells);
    }
    if (!built) {
      ASSIGN_OR_RETURN(built,
                       BuildPackedCells(*in_, plan_, tiles, lo, hi, carry.get(), std::move(spare)));
    }
  }
  if (!built) {
    return Error::Corrupt(fmt::format(
        "sparse view, window {} of {}: a coordinate lies outside its fragment's non-empty domain "
        "or is not the size of dimension '{}' and the others",
        w, starts_.size(), in_->schema->dimensions[0].name));
  }
  std::shared_ptr<CellIndex> index = Keep(std::move(*built));
  if (!carry->empty()) {
    uint64_t bytes = 0;
    for (const auto& [t, decoded] : *carry) {
      for (const DecodedTile& d : decoded) bytes += TileCache::SizeOf(d);
    }
    carry_ = carry;
    carry_for_ = w + 1;
    pool_->Hold(owner_, std::move(carry), bytes);
  }
  // Counted for the first time: where the tiles ending in it end, from
  // their rectangles' upper corners (TileEnds; only builds change ends_).
  std::vector<std::pair<uint64_t, size_t>> ended;
  if (w == ends_.size()) {
    const uint64_t first = w == 0 ? 0 : ends_[w - 1];
    const std::vector<uint64_t> in_window = TileEnds(*in_, *index);
    auto it =
        std::lower_bound(last_window_.begin(), last_window_.end(), std::pair<size_t, size_t>(w, 0));
    for (; it != last_window_.end() && it->first == w; ++it) {
      const size_t t = it->second;
      // The window's index numbers its own tiles (ascending in the plan).
      const size_t local = static_cast<size_t>(
          std::lower_bound(tiles.begin(), tiles.end(), t,
                           [](const PackedTile& p, size_t want) { return p.tile < want; }) -
          tiles.begin());
      const bool known =
          local < in_window.size() && tiles[local].tile == t && in_window[local] != UINT64_MAX;
      ended.emplace_back(first + (known ? in_window[local] : index->cell_count), t);
    }
    std::sort(ended.begin(), ended.end());
  }
  std::vector<SubCut> subs;
  if (w == ends_.size()) {
    const uint64_t first = w == 0 ? 0 : ends_[w - 1];
    const bool runs = index->packed.empty() && !index->runs.empty();
    for (const auto& [row, before] : runs ? run_cuts : CutSubWindows(*index, lo, kSubs)) {
      subs.push_back({row, first + before});
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t first = w == 0 ? 0 : ends_[w - 1];
  if (w == ends_.size()) {
    ends_.push_back(first + index->cell_count);
    subs_.push_back(std::move(subs));
    ended_.insert(ended_.end(), ended.begin(), ended.end());
    if (index->cell_count > 0) {
      for (size_t d = 0; d < box_.size(); ++d) {
        const Datatype t = plan_.order.types[d];
        const Range& r = index->box[d];
        if (!box_set_ || CompareValues(t, r.lo, box_[d].lo) < 0) box_[d].lo = r.lo;
        if (!box_set_ || CompareValues(t, r.hi, box_[d].hi) > 0) box_[d].hi = r.hi;
      }
      box_set_ = true;
    }
  } else if (ends_[w] - first != index->cell_count) {
    return Error::Corrupt(fmt::format("sparse window {} held {} cells, now {}", w, ends_[w] - first,
                                      index->cell_count));
  }
  ++builds_;
  reuses_ += reused && !index->packed.empty() ? 1 : 0;
  kept_.emplace_back(w, index);
  pool_->Hold(owner_, index, index->footprint());
  if (kept_.size() > KeptMost()) {
    if (auto oldest = kept_.front().second.lock()) pool_->Release(oldest.get());
    kept_.erase(kept_.begin());
  }
  return Part{std::move(index), first};
}

std::shared_ptr<CellIndex> SparseWindows::KeptLocked(size_t w) const {
  for (auto it = kept_.begin(); it != kept_.end(); ++it) {
    if (it->first != w) continue;
    std::shared_ptr<CellIndex> index = it->second.lock();
    if (!index) {
      kept_.erase(it);  // the pool let it go, and no reader holds it
      return nullptr;
    }
    pool_->Touch(index.get());
    return index;
  }
  return nullptr;
}

std::shared_ptr<CellIndex> SparseWindows::Keep(CellIndex index) const {
  auto give_back = [spare = pool_->spare()](CellIndex* gone) {
    std::unique_ptr<CellIndex> freed(gone);
    std::lock_guard<std::mutex> lock(spare->mu);
    if (gone->packed.capacity() > spare->cells.capacity()) spare->cells.swap(gone->packed);
  };
  // On a failed allocation the shared_ptr calls give_back itself.
  return std::shared_ptr<CellIndex>(new CellIndex(std::move(index)), give_back);
}

Result<SparseWindows::Part> SparseWindows::Get(size_t w) const {
  bool onward = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A reader going on from window w - 1 (or starting at the first one)
    // has the next one built ahead.
    if (w != last_got_) {
      onward = ahead_ && w + 1 < starts_.size() && OnwardLocked(w);
      last_got_ = w;
    }
    if (auto index = KeptLocked(w)) {
      if (onward) BuildAhead(w + 1);
      return Part{std::move(index), w == 0 ? 0 : ends_[w - 1]};
    }
  }
  ASSIGN_OR_RETURN(Part p, Build(w));
  if (onward) BuildAhead(w + 1);
  return p;
}

Result<SparseWindows::Part> SparseWindows::Locate(uint64_t cell) const {
  for (;;) {
    size_t w, sub = SIZE_MAX;
    {
      std::lock_guard<std::mutex> lock(mu_);
      w = static_cast<size_t>(std::upper_bound(ends_.begin(), ends_.end(), cell) - ends_.begin());
      if (w == starts_.size()) {
        return Error::InvalidArgument(
            fmt::format("sparse view cell {} of {}", cell, ends_.empty() ? 0 : ends_.back()));
      }
      // A read that jumps into a window not kept needs only the
      // sub-window holding its cell, and so does one going on in it; a
      // reader that built the window whole builds it again if it is gone.
      if (w < subs_.size() && !subs_[w].empty() && !OnwardLocked(w) &&
          (w != last_got_ || sub_of_ == w) && !KeptLocked(w)) {
        const std::vector<SubCut>& cuts = subs_[w];
        sub = static_cast<size_t>(
            std::partition_point(cuts.begin(), cuts.end(),
                                 [cell](const SubCut& c) { return c.first <= cell; }) -
            cuts.begin());
      }
    }
    ASSIGN_OR_RETURN(Part p, sub == SIZE_MAX ? Get(w) : BuildSub(w, sub));
    if (cell >= p.first && cell - p.first < p.index->cell_count) return p;
  }
}

Result<SparseWindows::Part> SparseWindows::BuildSub(size_t w, size_t s) const {
  uint64_t lo, hi, first, end;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_got_ = w;
    sub_of_ = w;
    const std::vector<SubCut>& cuts = subs_[w];
    lo = s == 0 ? starts_[w] : cuts[s - 1].row;
    hi = s < cuts.size() ? cuts[s].row - 1 : Rows(w).second;
    first = s == 0 ? (w == 0 ? 0 : ends_[w - 1]) : cuts[s - 1].first;
    end = s < cuts.size() ? cuts[s].first : ends_[w];
    for (const auto& [ks, kept] : sub_kept_) {
      if (ks != std::pair<size_t, size_t>(w, s)) continue;
      if (auto index = kept.lock()) {
        pool_->Touch(index.get());
        return Part{std::move(index), first};
      }
    }
  }
  std::vector<PackedTile> tiles;
  for (const PackedTile& t : rows_) {
    if (t.lo <= hi && t.hi >= lo) tiles.push_back(t);
  }
  // Runs where the view's windows are built from them (no sort), else keys.
  std::optional<CellIndex> built;
  if (runs_) {
    ASSIGN_OR_RETURN(built, BuildRunCells(*in_, plan_, *runs_, tiles, lo, hi, nullptr));
  }
  if (!built) {
    ASSIGN_OR_RETURN(built, BuildPackedCells(*in_, plan_, tiles, lo, hi, nullptr));
  }
  if (!built || built->cell_count != end - first) {
    return Error::Corrupt(
        fmt::format("sparse window {} of {}: sub-window {} holds {} cells, the counts kept say {}",
                    w, starts_.size(), s, built ? built->cell_count : 0, end - first));
  }
  std::shared_ptr<CellIndex> index = Keep(std::move(*built));
  std::lock_guard<std::mutex> lock(mu_);
  ++sub_builds_;
  sub_kept_.emplace_back(std::pair<size_t, size_t>(w, s), index);
  pool_->Hold(owner_, index, index->footprint());
  if (sub_kept_.size() > kKept) {
    if (auto oldest = sub_kept_.front().second.lock()) pool_->Release(oldest.get());
    sub_kept_.erase(sub_kept_.begin());
  }
  return Part{std::move(index), first};
}

uint64_t SparseWindows::builds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return builds_;
}

uint64_t SparseWindows::sub_builds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sub_builds_;
}

uint64_t SparseWindows::reuses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reuses_;
}

bool SparseWindows::Counted() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ends_.size() == starts_.size();
}

Result<uint64_t> SparseWindows::CellCount() const {
  for (;;) {
    size_t w;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (ends_.size() == starts_.size()) return ends_.back();
      w = ends_.size();
    }
    TRY(Build(w));
  }
}

Result<std::vector<Range>> SparseWindows::Box() const {
  ASSIGN_OR_RETURN(uint64_t cells, CellCount());
  if (cells == 0) return std::vector<Range>();
  std::lock_guard<std::mutex> lock(mu_);
  return box_;
}

Status SparseWindows::ForEach(const std::function<Status(const CellIndex&)>& each) const {
  for (size_t w = 0; w < starts_.size(); ++w) {
    ASSIGN_OR_RETURN(Part p, Get(w));
    TRY(each(*p.index));
  }
  return Ok();
}

std::vector<size_t> SparseWindows::TilesEndingIn(uint64_t from, uint64_t to) const {
  std::vector<size_t> out;
  std::lock_guard<std::mutex> lock(mu_);
  auto it =
      std::upper_bound(ended_.begin(), ended_.end(), std::pair<uint64_t, size_t>(from, SIZE_MAX));
  for (; it != ended_.end() && it->first <= to; ++it) out.push_back(it->second);
  return out;
}

}  // namespace tiledbfs::core
