// What the kernel holds of each file: its size and its page cache, and which
// snapshot (OpenFile::snapshot_id) they belong to. The kernel keeps one size
// and one page cache per inode, while two opens of a live path can read
// different snapshots (a commit landed in between). This table decides, per
// open, how the kernel may cache, so that no reader ever gets a size or a
// page of another snapshot:
//
// - The first open of an inode (no other cached open) makes its snapshot the
//   inode's: cached reads (page cache, mmap), the pages kept only if they
//   are of the same snapshot (keep_cache), and the kernel always told to
//   drop its size (the open would otherwise read up to an old size for as
//   long as the attribute timeout). Always, because which size the kernel
//   holds cannot be known here: it drops an attribute reply that raced
//   another one for the same inode (its attr_version check), and keeps the
//   size of whichever reply won.
// - Later opens of the same snapshot share the page cache.
// - An open of another snapshot while the inode's is open reads with
//   direct_io: straight from its own snapshot, never through the pages.
// - While cached opens are held, attribute replies give the inode's
//   snapshot's size (ReportSize), so that its readers are never cut short.
//   A later snapshot shows up in stat once they are closed.
//
// Thread-safe.
#pragma once

#include <cstdint>
#include <mutex>
#include <unordered_map>

namespace tiledbfs::fusefs {

class KernelCache {
 public:
  struct OpenMode {
    bool cached = true;            // false: direct_io
    bool keep_cache = false;       // the kernel's pages are of this snapshot
    bool invalidate_size = false;  // the kernel must ask for the size again
  };

  // An open of `ino` on snapshot `snapshot` (0: unknown, never shared) of
  // `size` bytes. A cached open must be matched by Release(ino, true).
  OpenMode Open(uint64_t ino, uint64_t snapshot, uint64_t size);
  void Release(uint64_t ino, bool cached);

  // The size to give the kernel for `ino`, whose current size is `current`.
  uint64_t ReportSize(uint64_t ino, uint64_t current);

  // Forgets `ino` (the kernel dropped it) unless opens are held.
  void Drop(uint64_t ino);

  size_t size() const;

 private:
  struct State {
    uint64_t snapshot = 0;  // of the pages; 0: unknown
    uint64_t size = 0;      // of `snapshot`
    uint64_t cached_opens = 0;
  };

  mutable std::mutex mu_;
  std::unordered_map<uint64_t, State> states_;
};

}  // namespace tiledbfs::fusefs
