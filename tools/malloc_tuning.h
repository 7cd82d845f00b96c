// Memory settings for the programs that decode tiles (tiledbfs, tiledbfs-view).
//
// Decoding allocates tile buffers of about a megabyte continuously. With
// glibc's defaults each one is a fresh mmap, returned at free, so every page
// of every tile costs a page fault; on virtual machines the fault path is
// slower than the decoding itself. glibc reads
// its tunables only at start-up, so the program re-executes itself once with
// them set: big buffers stay on the heap, freed memory is kept for the next
// tiles (up to 64 MiB), and every thread allocates from the one main heap.
// No transparent huge pages: on this VM a huge page fault costs far more
// than the 512 small ones it replaces, at times (the host takes back free
// guest memory in 2 MiB blocks), and the heap faulted about twice its size
// in huge pages. A GLIBC_TUNABLES the user set is left alone, and so is
// TILEDBFS_MALLOC_TUNING=0.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <string>

namespace tiledbfs::tools {

// glibc's settings for this program, as ReexecWithMallocTuning sets them.
inline constexpr const char* kMallocTunables =
    "glibc.malloc.mmap_threshold=33554432:glibc.malloc.top_pad=16777216:"
    "glibc.malloc.trim_threshold=67108864:glibc.malloc.arena_max=1";

// Whether this process runs with them (re-executed by the call below):
// freed heap memory is then kept for the next allocations, which
// core::GlibcHeap's warming relies on. Not by GLIBC_TUNABLES's value: glibc cuts it
// short once read.
inline bool MallocTuned() {
  const char* tuning = std::getenv("TILEDBFS_MALLOC_TUNING");
  return tuning != nullptr && std::string(tuning) == "1" &&
         std::getenv("GLIBC_TUNABLES") != nullptr;
}

inline void ReexecWithMallocTuning(char** argv) {
  // Set: by the user ("0": keep glibc's defaults) or by the first start ("1").
  if (std::getenv("TILEDBFS_MALLOC_TUNING") != nullptr) return;
  if (std::getenv("GLIBC_TUNABLES") != nullptr) return;
  if (setenv("TILEDBFS_MALLOC_TUNING", "1", 1) != 0) return;
  // One arena. Tiles are decoded on the FUSE worker threads; with an arena
  // per core they came from mmap'd side heaps that glibc unmaps as they
  // empty, so every tile faulted its pages in again. Small allocations go through each thread's
  // tcache without the arena lock.
  if (setenv("GLIBC_TUNABLES", kMallocTunables, 1) == 0) {
    execv("/proc/self/exe", argv);
  }
  // Not re-executed (no /proc?): run on with the defaults.
  unsetenv("GLIBC_TUNABLES");
}

}  // namespace tiledbfs::tools
