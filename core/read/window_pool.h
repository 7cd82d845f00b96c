// The sparse index windows (sparse_windows.h) that views keep between reads,
// within one byte budget for all the views of a mount: without it each view
// a mount ever read kept its last windows and the coordinate tiles carried
// into its next one for as long as the view stayed cached (issue 50: a
// history view, a slice and a diff's sixteen slices each kept theirs).
//
// Each entry has an owner (a view's windows). A view being read keeps what
// it needs: an owner's own entries are never dropped for it, it bounds them
// itself (SparseWindows::kKept). Holding an entry drops the least recently
// used entries of the other owners until the pool is within its budget.
// The pool holds references only: a reader still using an entry keeps it
// alive (ReadState::window), and an owner finds it again while it lives.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tiledbfs::core {

class WindowPool {
 public:
  explicit WindowPool(uint64_t budget_bytes) : budget_(budget_bytes) {}
  WindowPool(const WindowPool&) = delete;
  WindowPool& operator=(const WindowPool&) = delete;

  // Holds `entry` (`bytes` of memory) for `owner`, as the most recently
  // used; then drops other owners' least recently used entries past the
  // budget. Holding an entry held already only refreshes it.
  void Hold(const void* owner, std::shared_ptr<const void> entry, uint64_t bytes);
  // Marks `entry` used now (nothing if not held).
  void Touch(const void* entry);
  // Lets `entry` go (nothing if not held).
  void Release(const void* entry);

  // The packed cells of the last window nothing holds any more, for the
  // next build of any view to fill: a window's memory taken fresh from the
  // system each time would be page faults. One, the largest.
  struct Spare {
    std::mutex mu;
    std::vector<uint64_t> cells;
  };
  const std::shared_ptr<Spare>& spare() const { return spare_; }

  uint64_t held_bytes() const;
  size_t held() const;

 private:
  struct Entry {
    const void* owner;
    std::shared_ptr<const void> entry;
    uint64_t bytes;
  };
  const uint64_t budget_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // least recently used first
  std::unordered_map<const void*, std::list<Entry>::iterator> at_;
  uint64_t bytes_ = 0;
  std::shared_ptr<Spare> spare_ = std::make_shared<Spare>();
};

}  // namespace tiledbfs::core
