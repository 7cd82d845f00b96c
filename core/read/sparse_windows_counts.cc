// What the persistent index keeps of a view's sparse windows (the windows
// counted, where the tiles end, the box, the sub-windows), and how a fresh
// view takes it back: whole (RestoreCounts), or the windows before the
// rows an append changed (TakeCountsBefore).
#include <fmt/format.h>

#include <algorithm>

#include "core/read/sparse_windows.h"
#include "core/util/byte_reader.h"
#include "core/util/byte_writer.h"

namespace tiledbfs::core {

// SaveCounts's bytes, read back and checked to hold together.
struct SavedWindowCounts {
  std::vector<uint64_t> starts;  // every window's first row
  std::vector<uint64_t> ends;    // per window counted (the first ones): the cell past its last
  std::vector<std::pair<uint64_t, size_t>> ended;  // (end, tile), ascending
  bool box_set = false;
  std::vector<Range> box;
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> subs;  // per window counted
};

namespace {

constexpr uint32_t kCountsFormat = 2;

Error Bad(std::string_view what) {
  return Error::Corrupt(fmt::format("saved sparse window counts: {}", what));
}

Result<SavedWindowCounts> ParseCounts(std::string_view saved) {
  ByteReader r(AsBytes(saved));
  SavedWindowCounts out;
  ASSIGN_OR_RETURN(uint32_t format, r.Read<uint32_t>("format"));
  if (format != kCountsFormat) return Bad("another format");
  ASSIGN_OR_RETURN(uint64_t n, r.Read<uint64_t>("windows"));
  if (n == 0 || n > r.remaining() / 8) return Bad("more windows than bytes");
  out.starts.resize(n);
  for (uint64_t& s : out.starts) {
    ASSIGN_OR_RETURN(s, r.Read<uint64_t>("window start"));
    if (&s != out.starts.data() && s <= (&s)[-1]) return Bad("window starts do not ascend");
  }
  ASSIGN_OR_RETURN(uint64_t m, r.Read<uint64_t>("windows counted"));
  if (m == 0 || m > n || m > r.remaining() / 8) return Bad("windows counted past the windows");
  out.ends.resize(m);
  for (uint64_t& e : out.ends) {
    ASSIGN_OR_RETURN(e, r.Read<uint64_t>("window end"));
    if (&e != out.ends.data() && e < (&e)[-1]) return Bad("window ends descend");
  }
  ASSIGN_OR_RETURN(uint64_t t, r.Read<uint64_t>("tile ends"));
  if (t > r.remaining() / 16) return Bad("more tile ends than bytes");
  out.ended.resize(t);
  for (auto& [end, tile] : out.ended) {
    ASSIGN_OR_RETURN(end, r.Read<uint64_t>("tile end"));
    ASSIGN_OR_RETURN(uint64_t at, r.Read<uint64_t>("tile"));
    if (end > out.ends.back() || at > SIZE_MAX) return Bad("a tile end past the cells");
    tile = static_cast<size_t>(at);
  }
  if (!std::is_sorted(out.ended.begin(), out.ended.end())) return Bad("tile ends out of order");
  ASSIGN_OR_RETURN(uint8_t box_set, r.Read<uint8_t>("box set"));
  out.box_set = box_set != 0;
  ASSIGN_OR_RETURN(uint32_t dims, r.Read<uint32_t>("box dimensions"));
  if (dims > r.remaining() / 8) return Bad("more box dimensions than bytes");
  out.box.resize(dims);
  for (Range& range : out.box) {
    for (ByteVec* side : {&range.lo, &range.hi}) {
      ASSIGN_OR_RETURN(uint32_t len, r.Read<uint32_t>("box value size"));
      ASSIGN_OR_RETURN(Bytes b, r.ReadBytes(len, "box value"));
      side->assign(b.begin(), b.end());
    }
  }
  // Each window's sub-windows: rows ascending within the window, cells
  // ascending within its cells (a build checks it holds them).
  out.subs.resize(m);
  for (size_t w = 0; w < m; ++w) {
    ASSIGN_OR_RETURN(uint32_t k, r.Read<uint32_t>("sub-windows"));
    if (k >= SparseWindows::kSubs) return Bad("more sub-windows than a window cuts");
    uint64_t row = out.starts[w], cell = w == 0 ? 0 : out.ends[w - 1];
    const uint64_t last_row = w + 1 < n ? out.starts[w + 1] - 1 : UINT64_MAX;
    for (uint32_t i = 0; i < k; ++i) {
      ASSIGN_OR_RETURN(uint64_t at_row, r.Read<uint64_t>("sub-window row"));
      ASSIGN_OR_RETURN(uint64_t at_cell, r.Read<uint64_t>("sub-window cell"));
      if (at_row <= row || at_row > last_row || at_cell < cell || at_cell > out.ends[w]) {
        return Bad("a sub-window outside its window");
      }
      row = at_row;
      cell = at_cell;
      out.subs[w].emplace_back(at_row, at_cell);
    }
  }
  if (!r.empty()) return Bad("bytes past the end");
  return out;
}

}  // namespace

std::string SparseWindows::SaveCounts() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (ends_.empty()) return "";
  ByteWriter w;
  w.Put<uint32_t>(kCountsFormat).Put<uint64_t>(starts_.size());
  for (uint64_t s : starts_) w.Put<uint64_t>(s);
  w.Put<uint64_t>(ends_.size());
  for (uint64_t e : ends_) w.Put<uint64_t>(e);
  w.Put<uint64_t>(ended_.size());
  for (const auto& [end, tile] : ended_) w.Put<uint64_t>(end).Put<uint64_t>(tile);
  w.Put<uint8_t>(box_set_ ? 1 : 0).Put<uint32_t>(static_cast<uint32_t>(box_.size()));
  for (const Range& r : box_) {
    w.Put<uint32_t>(static_cast<uint32_t>(r.lo.size())).PutBytes(r.lo);
    w.Put<uint32_t>(static_cast<uint32_t>(r.hi.size())).PutBytes(r.hi);
  }
  for (const std::vector<SubCut>& cuts : subs_) {
    w.Put<uint32_t>(static_cast<uint32_t>(cuts.size()));
    for (const SubCut& c : cuts) w.Put<uint64_t>(c.row).Put<uint64_t>(c.first);
  }
  return std::string(reinterpret_cast<const char*>(w.bytes().data()), w.size());
}

Status SparseWindows::RestoreCounts(std::string_view saved) const {
  ASSIGN_OR_RETURN(SavedWindowCounts s, ParseCounts(saved));
  if (s.starts != starts_) return Bad("windows cut elsewhere");
  // No more cells than the view's tiles hold: a count past them would
  // size files and reads from nothing.
  if (s.ends.back() > plan_.total_cells) return Bad("more cells than the tiles hold");
  if (s.ended.size() > rows_.size()) return Bad("more tile ends than tiles");
  for (const auto& [end, tile] : s.ended) {
    if (tile >= rows_.size()) return Bad("a tile end of no tile");
  }
  if (s.box.size() != box_.size()) return Bad("another number of dimensions");
  for (size_t w = 0; w < s.subs.size(); ++w) {
    if (!s.subs[w].empty() && s.subs[w].back().first > Rows(w).second) {
      return Bad("a sub-window past its window");
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  const size_t common = std::min(ends_.size(), s.ends.size());
  if (!std::equal(ends_.begin(), ends_.begin() + static_cast<ptrdiff_t>(common), s.ends.begin())) {
    return Bad("window counts other than those counted here");
  }
  const size_t windows = s.ends.size();
  if (windows <= ends_.size()) return Ok();  // counted here as far
  TakeLocked(std::move(s), windows);
  return Ok();
}

Result<size_t> SparseWindows::TakeCountsBefore(std::string_view saved, uint64_t row) const {
  ASSIGN_OR_RETURN(SavedWindowCounts s, ParseCounts(saved));
  if (generic_ || s.box.size() != box_.size()) return 0;
  // Windows cut alike, wholly below `row`: the same cells.
  size_t k = 0;
  while (k < s.ends.size() && k + 1 < s.starts.size() && k + 1 < starts_.size() &&
         s.starts[k] == starts_[k] && s.starts[k + 1] == starts_[k + 1] && starts_[k + 1] <= row) {
    ++k;
  }
  if (k == 0 || s.ends[k - 1] > plan_.total_cells) return 0;
  // Where the tiles ending in those windows end (tiles numbered alike).
  std::vector<size_t> last(rows_.size(), SIZE_MAX);
  for (const auto& [w, t] : last_window_) last[t] = w;
  std::vector<std::pair<uint64_t, size_t>> ended;
  for (const auto& [end, tile] : s.ended) {
    if (tile < last.size() && last[tile] < k) ended.emplace_back(end, tile);
  }
  s.ended = std::move(ended);
  std::lock_guard<std::mutex> lock(mu_);
  if (!ends_.empty()) return 0;  // counted here already
  TakeLocked(std::move(s), k);
  return k;
}

void SparseWindows::TakeLocked(SavedWindowCounts s, size_t windows) const {
  s.ends.resize(windows);
  s.subs.resize(windows);
  ends_ = std::move(s.ends);
  subs_.clear();
  for (const auto& cuts : s.subs) {
    subs_.emplace_back();
    for (const auto& [row, first] : cuts) subs_.back().push_back({row, first});
  }
  ended_ = std::move(s.ended);
  box_ = std::move(s.box);
  box_set_ = s.box_set;
}

}  // namespace tiledbfs::core
