// What the kernel holds of each file: its size and its page cache, and which
// snapshot (OpenFile::snapshot_id) they belong to. The kernel keeps one size
// and one page cache per inode, while two opens of a live path can read
// different snapshots (a commit landed in between). This table decides, per
// open, how the kernel may cache, so that no reader ever gets a size or a
// page of another snapshot:
//
// - The first open of an inode (no other open holding its pages) makes its
//   snapshot the inode's: reads through the page cache (and mappings) see
//   it, the pages kept only if they are of the same snapshot (keep_cache),
//   and the kernel always told to drop its size (the open would otherwise
//   read up to an old size for as long as the attribute timeout). Always,
//   because which size the kernel holds cannot be known here: it drops an
//   attribute reply that raced another one for the same inode (its
//   attr_version check), and keeps the size of whichever reply won.
// - Later opens of the same snapshot share the page cache.
// - An open of another snapshot while the inode's is open reads with
//   direct_io: straight from its own snapshot, never through the pages.
//   Its page fills are refused (OpenMode::pages false): a mapping of it or
//   a sendfile from it, which read through the page cache even then, would
//   otherwise fill the inode's pages, which the other opens read, with its
//   own snapshot.
// - While opens holding the pages are open, attribute replies give the
//   inode's snapshot's size (ReportSize), so that its readers are never
//   cut short. A later snapshot shows up in stat once they are closed.
// - Streaming (set_stream_first, when the kernel lets direct_io files be
//   mapped: FUSE_DIRECT_IO_ALLOW_MMAP, kernel_init.h): the first open of a
//   snapshot reads with direct_io too, still holding the pages. A read then
//   goes from the daemon straight into the reader's buffer: one copy by the
//   kernel instead of two (into the page cache, then out of it) and no
//   page cache for a file read once. A mapping
//   of it fills the page cache as usual, and the next open of the same
//   snapshot reads through the page cache, which then keeps the file for
//   the opens after it.
// - Files read at random (OpenFile::ReadsAtRandom: data.parquet, whose
//   readers jump from column to column) stream on every open: the kernel's
//   readahead past a read would render the next column chunk, decoding
//   tiles of a field the reader never asked for.
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
    bool pages = true;             // of the inode's snapshot: may fill its page cache
    bool direct_io = false;        // reads go past the page cache
    bool keep_cache = false;       // the kernel's pages are of this snapshot
    bool invalidate_size = false;  // the kernel must ask for the size again
  };

  // Whether the first open of a snapshot streams (direct_io). Off until the
  // kernel is known to allow mapping direct_io files.
  void set_stream_first(bool on) {
    std::lock_guard lock(mu_);
    stream_first_ = on;
  }

  // An open of `ino` on snapshot `snapshot` (0: unknown, never shared) of
  // `size` bytes, read at random or not (see above). An open holding the
  // pages (OpenMode::pages) must be matched by Release(ino, true).
  OpenMode Open(uint64_t ino, uint64_t snapshot, uint64_t size, bool random = false);
  void Release(uint64_t ino, bool pages);

  // The size to give the kernel for `ino`, whose current size is `current`.
  uint64_t ReportSize(uint64_t ino, uint64_t current);

  // Forgets `ino` (the kernel dropped it) unless opens are held.
  void Drop(uint64_t ino);

  size_t size() const;

 private:
  struct State {
    uint64_t snapshot = 0;  // of the pages; 0: unknown
    uint64_t size = 0;      // of `snapshot`
    uint64_t holders = 0;   // opens holding the pages
    bool opened = false;    // `snapshot` was opened before (streaming: the next open caches)
  };

  mutable std::mutex mu_;
  bool stream_first_ = false;
  std::unordered_map<uint64_t, State> states_;
};

}  // namespace tiledbfs::fusefs
