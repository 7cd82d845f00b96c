#include "core/util/warm_heap.h"

#include <fcntl.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "core/util/sanitizers.h"

namespace tiledbfs::core {

namespace {

// ASan keeps freed blocks out of use for a while (its quarantine).
#if TILEDBFS_ASAN
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// The end of the heap warmed so far: the heap grows upwards from its
// break, and what lies below was warmed or is in use.
std::mutex frontier_mu;
uintptr_t frontier = 0;

// Populated a megabyte per call: the kernel holds the process's memory map
// for the whole of a call, and a reader's thread start or mmap waits for it.
constexpr uint64_t kPopulateStep = uint64_t{1} << 20;

#ifdef MADV_POPULATE_WRITE
constexpr int kPopulateWrite = MADV_POPULATE_WRITE;
#else
constexpr int kPopulateWrite = 23;  // <linux/mman.h>, for C libraries that predate it
#endif

constexpr uint64_t kCheckEvery = uint64_t{16} << 20;
constexpr uint64_t kTrimSlack = uint64_t{32} << 20;

// The process's resident bytes (/proc/self/statm), or 0 if unknown.
uint64_t ResidentBytes() {
  const int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  char text[128];
  const ssize_t n = read(fd, text, sizeof(text) - 1);
  close(fd);
  if (n <= 0) return 0;
  text[n] = 0;
  unsigned long long size = 0, resident = 0;
  if (std::sscanf(text, "%llu %llu", &size, &resident) != 2) return 0;
  const long page = sysconf(_SC_PAGESIZE);
  return resident * static_cast<uint64_t>(page > 0 ? page : 4096);
}

}  // namespace

GlibcHeap::GlibcHeap(Options options)
    : warm_(options.warm && !kSanitized),
      // A sanitizer's allocator is not glibc's: nothing to trim.
      ceiling_(kSanitized || TILEDBFS_TSAN ? 0 : options.resident_ceiling) {}

void GlibcHeap::Freed(uint64_t bytes) {
  if (ceiling_ == 0) return;
  if (freed_.fetch_add(bytes, std::memory_order_relaxed) + bytes < kCheckEvery) return;
  // One check at a time; the others go on.
  std::unique_lock<std::mutex> lock(trim_mu_, std::try_to_lock);
  if (!lock.owns_lock()) return;
  freed_.store(0, std::memory_order_relaxed);
  const uint64_t resident = ResidentBytes();
  if (resident <= ceiling_) return;
  // Only where enough of it is not in use: else the trim would give back
  // little, and the next allocations would fault it in again.
  const struct mallinfo2 info = mallinfo2();
  if (resident < info.uordblks + info.hblkhd + kTrimSlack) return;
  {
    // Pages below the frontier may no longer be there once trimmed.
    std::lock_guard<std::mutex> warm(frontier_mu);
    malloc_trim(0);
    frontier = 0;
  }
  trims_.fetch_add(1, std::memory_order_relaxed);
}

std::optional<uint64_t> WarmHeap(uint64_t bytes) {
  if (bytes == 0) return 0;
  std::lock_guard<std::mutex> lock(frontier_mu);
  void* block = std::malloc(bytes);
  if (block == nullptr) return std::nullopt;
  const long page = sysconf(_SC_PAGESIZE);
  const uintptr_t step = page > 0 ? static_cast<uintptr_t>(page) : 4096;
  const uintptr_t begin = reinterpret_cast<uintptr_t>(block);
  // Below the break: the heap, which a free does not unmap. Pages below the
  // frontier were warmed before or hold blocks in use; a heap trimmed since
  // (its break lowered) no longer has them.
  const uintptr_t brk_now = reinterpret_cast<uintptr_t>(sbrk(0));
  const bool in_heap = begin + bytes <= brk_now;
  frontier = std::min(frontier, brk_now);
  const uintptr_t first = ((in_heap ? std::max(begin, frontier) : begin) + step - 1) / step * step;
  const uintptr_t last = (begin + bytes) / step * step;
  // By the kernel (Linux 5.14): cheaper than a write fault per page
  // (benchmarks/results/...-session-37-heap-warming.md). In the heap, the
  // first step while the block is held shows the kernel can; the rest
  // after the free, so that a reader's allocation meanwhile takes these
  // pages rather than fresh ones past the block. A populate writes no
  // byte, so it may meet the allocator's or a reader's writes; it stops
  // where the memory is no longer mapped (the heap trimmed), and nothing is
  // written by hand after the free.
  auto populate = [](uintptr_t at, uintptr_t end) {
    return madvise(reinterpret_cast<void*>(at), std::min<uintptr_t>(kPopulateStep, end - at),
                   kPopulateWrite) == 0;
  };
  uintptr_t at = first;
  if (at < last && populate(at, last)) {
    at = std::min<uintptr_t>(at + kPopulateStep, last);
    if (in_heap) std::free(block);
    while (at < last && populate(at, last)) at = std::min<uintptr_t>(at + kPopulateStep, last);
    if (!in_heap) std::free(block);
  } else {
    // An older kernel: a write to each page, while the block is held.
    // Volatile: the writes are the point, though nothing reads them.
    for (; at < last; at += step) *reinterpret_cast<volatile char*>(at) = 0;
    std::free(block);
  }
  if (in_heap) frontier = std::max(frontier, at);
  return at > first ? at - first : 0;
}

}  // namespace tiledbfs::core
