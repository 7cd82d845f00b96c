// Directory listings in progress, for a kernel that lists folders without
// opening them (FUSE_CAP_NO_OPENDIR_SUPPORT). Without OPENDIR and RELEASEDIR
// a folder costs two round trips instead of four (find over 10,000 history
// folders: BENCHMARKS.md), but there is no handle to keep a listing in. So
// the listing taken at offset 0 is kept here under an id, and every offset
// handed to the kernel carries that id in its high 32 bits: each lister
// reads its own snapshot to the end, as with a handle, even while another
// lister of the same live folder starts over and sees new entries.
//
// A listing is let go when its lister reaches the end. Listings abandoned
// half way (a reader that stopped early) are dropped oldest first past
// max_listings listings or max_entries entries in all; an offset of a
// dropped listing then reads a fresh listing from the same position.
// Thread-safe.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "fusefs/model/tree.h"

namespace tiledbfs::fusefs {

class Listings {
 public:
  using Entries = std::shared_ptr<const std::vector<DirEntryAttr>>;

  explicit Listings(size_t max_listings = 64, size_t max_entries = size_t{1} << 20)
      : max_listings_(max_listings), max_entries_(max_entries) {}

  // Positions are the low 32 bits of an offset.
  static constexpr uint64_t kMaxPosition = 0xffffffffu;

  // The readdir offset of `position` (k: after the k-th entry, "." and ".."
  // included) in listing `id` (0: a listing held by an open handle).
  static off_t Offset(uint64_t id, uint64_t position) {
    return static_cast<off_t>((id << 32) | position);
  }
  static uint64_t IdOf(off_t offset) { return static_cast<uint64_t>(offset) >> 32; }
  static uint64_t PositionOf(off_t offset) { return static_cast<uint64_t>(offset) & kMaxPosition; }

  // Keeps `entries` of folder `ino`; returns its id (never 0).
  uint64_t Add(uint64_t ino, Entries entries);
  // The listing `id` of folder `ino`; null if dropped, or if `id` is another
  // folder's (an offset carried over from elsewhere by seekdir).
  Entries Find(uint64_t ino, uint64_t id) const;
  // Lets listing `id` go (its lister reached the end).
  void Done(uint64_t id);

  size_t size() const;

 private:
  struct Held {
    uint64_t id;
    uint64_t ino;
    Entries entries;
  };

  const size_t max_listings_;
  const size_t max_entries_;
  mutable std::mutex mu_;
  std::deque<Held> held_;  // oldest first
  size_t entries_ = 0;     // over held_
  uint64_t next_id_ = 1;
};

}  // namespace tiledbfs::fusefs
