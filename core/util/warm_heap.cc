#include "core/util/warm_heap.h"

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

}  // namespace

void SetHeapWarming(bool on) { warming.store(on && !kSanitized, std::memory_order_relaxed); }

bool HeapWarming() { return warming.load(std::memory_order_relaxed); }

bool WarmHeap(uint64_t bytes) {
  if (bytes == 0) return true;
  void* block = std::malloc(bytes);
  if (block == nullptr) return false;
  const long page = sysconf(_SC_PAGESIZE);
  const uint64_t step = page > 0 ? static_cast<uint64_t>(page) : 4096;
  // Volatile: the writes are the point, though nothing reads them.
  volatile char* p = static_cast<char*>(block);
  for (uint64_t at = 0; at < bytes; at += step) p[at] = 0;
  p[bytes - 1] = 0;
  std::free(block);
  return true;
}

}  // namespace tiledbfs::core
