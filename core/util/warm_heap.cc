#include "core/util/warm_heap.h"

#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>

namespace tiledbfs::core {

namespace {

// ASan keeps freed blocks out of use for a while (its quarantine).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

std::atomic<bool> warming{false};

#ifdef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kPopulateWrite = 23;  // <linux/mman.h>, for C libraries that predate it
#endif

}  // namespace

void SetHeapWarming(bool on) { warming.store(on && !kSanitized, std::memory_order_relaxed); }

bool HeapWarming() { return warming.load(std::memory_order_relaxed); }

bool WarmHeap(uint64_t bytes) {
  if (bytes == 0) return true;
  void* block = std::malloc(bytes);
  if (block == nullptr) return false;
  const long page = sysconf(_SC_PAGESIZE);
  const uint64_t step = page > 0 ? static_cast<uint64_t>(page) : 4096;
  char* const begin = static_cast<char*>(block);
  // The whole pages inside the block in one call (Linux 5.14): cheaper than
  // a write fault per page (benchmarks/results/...-session-37-heap-warming.md).
  // The pages at the block's edges, or all of them where the kernel says
  // no, are written one by one.
  const uint64_t first = (reinterpret_cast<uintptr_t>(begin) + step - 1) / step * step;
  const uint64_t last = (reinterpret_cast<uintptr_t>(begin) + bytes) / step * step;
  const bool populated =
      last > first && madvise(reinterpret_cast<void*>(first), last - first, kPopulateWrite) == 0;
  // Volatile: the writes are the point, though nothing reads them.
  volatile char* p = begin;
  for (uint64_t at = 0; at < bytes; at += step) {
    const uintptr_t addr = reinterpret_cast<uintptr_t>(begin) + at;
    if (!populated || addr < first || addr >= last) p[at] = 0;
  }
  p[bytes - 1] = 0;
  std::free(block);
  return true;
}

}  // namespace tiledbfs::core
