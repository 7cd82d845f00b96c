// Page faults taken ahead of need. On the project's virtual machine the
// first write to a page of memory costs several microseconds: a megabyte
// tile decoded into fresh memory costs about as much in faults as the
// decode itself (benchmarks/results/2026-11-29-session-37-heap-warming.md).
// A cache that grows (TileCache) has a thread at low priority write to the
// heap's next free pages before the decodes need them, on a core that
// would otherwise idle.
//
// Only where glibc's allocator keeps freed memory for the next requests:
// one arena, big blocks from the heap, no trimming of a few megabytes
// (tools/malloc_tuning.h). Elsewhere a warmed block goes back to the system
// at free, and warming would only cost time: it is then off.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>

#include "core/util/heap_policy.h"

namespace tiledbfs::core {

// Makes the next `bytes` of the allocator's free memory warm: allocates
// that much, faults in its pages past the highest address warmed before
// (what lies below was warmed already or holds blocks in use: the heap
// grows upwards), and frees it, so that the next requests of up to that
// much get pages already faulted in. Returns the bytes newly faulted in
// (0 when all of it was warm), or nullopt if the allocation failed. One
// heap per process: the frontier is the process's.
std::optional<uint64_t> WarmHeap(uint64_t bytes);

// glibc's heap as the programs set it (tools/malloc_tuning.h): a mount's
// policy for its tile cache.
class GlibcHeap final : public HeapPolicy {
 public:
  struct Options {
    // Warm ahead of the cache: only where the allocator keeps freed memory
    // for the next requests (MallocTuned). Never under AddressSanitizer,
    // whose allocator keeps freed blocks out of use for a while.
    bool warm = false;
    // Freed memory given back where the process holds too much. With freed
    // blocks kept on the heap, those freed between blocks still in use stay
    // resident until the allocator is asked to trim: a 1,000M-cell diff
    // held 380 MiB resident with 178 MiB in use. Past this many bytes
    // resident (0: no ceiling), with at least 32 MiB of it not in use, the
    // free pages go back to the system (malloc_trim), and warming starts
    // over. Off under a sanitizer (its allocator is not glibc's).
    uint64_t resident_ceiling = 0;
  };
  explicit GlibcHeap(Options options);

  bool Warms() const override { return warm_; }
  std::optional<uint64_t> Warm(uint64_t bytes) override { return WarmHeap(bytes); }
  // Once per 16 MiB so noted, the ceiling is checked.
  void Freed(uint64_t bytes) override;
  // The trims so far (tests).
  uint64_t trims() const { return trims_.load(); }

 private:
  const bool warm_;
  const uint64_t ceiling_;
  std::atomic<uint64_t> freed_{0};
  std::atomic<uint64_t> trims_{0};
  std::mutex trim_mu_;
};

}  // namespace tiledbfs::core
