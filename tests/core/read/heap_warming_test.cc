// Warming the heap ahead of a growing tile cache (core/util/warm_heap.h):
// how much it warms, when it does not, and that a tile allocated after it
// takes no page faults, counted by the kernel (getrusage), in a fresh
// process with glibc set as the programs set it (tools/malloc_tuning.h).
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "core/read/tile_cache.h"
#include "core/util/sanitizers.h"
#include "core/util/warm_heap.h"
#include "tools/malloc_tuning.h"

namespace tiledbfs::core {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// The policy a mount gives its cache where glibc keeps freed memory, or
// null where it cannot warm (AddressSanitizer's allocator).
std::shared_ptr<HeapPolicy> Warming() {
  auto heap = std::make_shared<GlibcHeap>(GlibcHeap::Options{.warm = true});
  return heap->Warms() ? heap : nullptr;
}

std::shared_ptr<const DecodedTile> TileOf(uint64_t bytes) {
  auto t = std::make_shared<DecodedTile>();
  t->cell_size = 1;
  t->cell_num = bytes;
  t->fixed.resize(bytes);
  std::memset(t->fixed.data(), 1, bytes);
  return t;
}

TileKey Key(uint64_t tile) { return TileKey{nullptr, 0, tile, 0}; }

long MinorFaults() {
  rusage u{};
  getrusage(RUSAGE_THREAD, &u);
  return u.ru_minflt;
}

TEST(HeapWarming, WarmsAsMuchAgainAsTheCacheHoldsUpToItsBudget) {
  const auto heap = Warming();
  if (!heap) GTEST_SKIP() << "AddressSanitizer's allocator: no heap warming";
  TileCache cache(6 * kMiB, 1);
  cache.SetHeapPolicy(heap);
  cache.Put(Key(0), TileOf(kMiB), nullptr);
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 0u) << "not for a mount's first tile";
  cache.Put(Key(1), TileOf(kMiB), nullptr);
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 4 * kMiB) << "2 MiB held: warm as much again";
  cache.Put(Key(2), TileOf(2 * kMiB), nullptr);
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 6 * kMiB) << "4 MiB held: 6 MiB, the budget";
  for (uint64_t k = 3; k < 10; ++k) {
    cache.Put(Key(k), TileOf(kMiB), nullptr);
    cache.WaitForAhead();
  }
  EXPECT_EQ(cache.warmed_bytes(), 6 * kMiB) << "never past the budget";
}

TEST(HeapWarming, WarmsAtMostKWarmAheadPastWhatTheCacheHolds) {
  const auto heap = Warming();
  if (!heap) GTEST_SKIP() << "AddressSanitizer's allocator: no heap warming";
  TileCache cache(256 * kMiB, 1);
  cache.SetHeapPolicy(heap);
  cache.Put(Key(0), TileOf(20 * kMiB), nullptr);
  cache.Put(Key(1), TileOf(kMiB), nullptr);
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 21 * kMiB + TileCache::kWarmAhead);
}

TEST(HeapWarming, WarmsKWarmAheadForAMountsFirstReadsThenByTheCachesRule) {
  const auto heap = Warming();
  if (!heap) GTEST_SKIP() << "AddressSanitizer's allocator: no heap warming";
  TileCache cache(256 * kMiB, 1);
  cache.SetHeapPolicy(heap);
  cache.WarmForFirstReads();
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), TileCache::kWarmAhead) << "before any read";
  const uint64_t half = TileCache::kWarmAhead / kMiB / 2;
  for (uint64_t k = 0; k < half; ++k) {
    cache.Put(Key(k), TileOf(kMiB), nullptr);
    cache.WaitForAhead();
  }
  EXPECT_EQ(cache.warmed_bytes(), TileCache::kWarmAhead) << "as much again as it holds is warm";
  cache.Put(Key(half), TileOf(kMiB), nullptr);
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 2 * (half + 1) * kMiB) << "then the cache's own rule";
}

TEST(HeapWarming, AMountThatWasReadWarmsNothingAtItsStart) {
  const auto heap = Warming();
  if (!heap) GTEST_SKIP() << "AddressSanitizer's allocator: no heap warming";
  TileCache cache(256 * kMiB, 1);
  cache.SetHeapPolicy(heap);
  EXPECT_EQ(cache.Get(Key(0)), nullptr);  // a reader asked for a tile
  cache.WarmForFirstReads();
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 0u) << "warming while a read runs slows it";
}

TEST(HeapWarming, TheFirstReadsWarmNoMoreThanTheBudget) {
  const auto heap = Warming();
  if (!heap) GTEST_SKIP() << "AddressSanitizer's allocator: no heap warming";
  TileCache cache(3 * kMiB + 12345, 1);
  cache.SetHeapPolicy(heap);
  cache.WarmForFirstReads();
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 3 * kMiB + 12345);
}

TEST(HeapWarming, NothingWarmsWithoutAPolicyThatWarms) {
  TileCache cache(64 * kMiB, 1);
  cache.WarmForFirstReads();
  for (uint64_t k = 0; k < 4; ++k) cache.Put(Key(k), TileOf(kMiB), nullptr);
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 0u) << "no policy";
  cache.SetHeapPolicy(std::make_shared<GlibcHeap>(GlibcHeap::Options{.warm = false}));
  cache.WarmForFirstReads();
  for (uint64_t k = 4; k < 8; ++k) cache.Put(Key(k), TileOf(kMiB), nullptr);
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 0u) << "a policy that does not warm";
}

TEST(HeapWarming, NothingWarmsOnOneCore) {
  const auto heap = Warming();
  if (!heap) GTEST_SKIP() << "AddressSanitizer's allocator: no heap warming";
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &all)) ++cpu;
  TileCache cache(64 * kMiB);  // threads by the usable cores
  cache.SetHeapPolicy(heap);
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    cache.WarmForFirstReads();
    for (uint64_t k = 0; k < 4; ++k) cache.Put(Key(k), TileOf(kMiB), nullptr);
  });
  t.join();
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 0u) << "no other core to take the faults on";
}

enum class Warmth { kCold, kWarm, kFirst };

// A tile cache holding two 1 MiB tiles, warming on or off, or an empty one
// warmed for the first reads; then the page faults of the next 1 MiB
// tile's allocation and first writes (a decode's).
long FaultsOfTheNextTile(Warmth warmth) {
  TileCache cache(64 * kMiB, 1);
  if (warmth != Warmth::kCold) cache.SetHeapPolicy(Warming());
  if (warmth == Warmth::kFirst) {
    cache.WarmForFirstReads();
  } else {
    cache.Put(Key(0), TileOf(kMiB), nullptr);
    cache.Put(Key(1), TileOf(kMiB), nullptr);
  }
  cache.WaitForAhead();
  const long before = MinorFaults();
  auto next = TileOf(kMiB);
  return MinorFaults() - before;
}

// This test program run again, as the programs run themselves with glibc's
// settings (tools/malloc_tuning.h): they take effect only at start, one
// heap for every thread among them. `test` in it, with `mode`; what it
// printed after "heap-warming: ", or "" if it failed.
std::string InAFreshProcess(const char* mode, const char* test) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const pid_t child = fork();
  if (child < 0) return "";
  if (child == 0) {
    dup2(fds[1], STDOUT_FILENO);
    setenv("GLIBC_TUNABLES", tools::kMallocTunables, 1);
    setenv("TILEDBFS_WARMING_CHILD", mode, 1);
    const std::string filter = std::string("--gtest_filter=HeapWarming.") + test;
    execl("/proc/self/exe", "core_read_tests", filter.c_str(), nullptr);
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  const std::string tag = "heap-warming: ";
  const size_t at = out.find(tag);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || at == std::string::npos) return "";
  return out.substr(at + tag.size());
}

long FaultsInAFreshProcess(const char* warmth) {
  const std::string out = InAFreshProcess(warmth, "TheNextTileTakesNoPageFaults");
  return out.empty() ? -1 : std::atol(out.c_str());
}

TEST(HeapWarming, TheNextTileTakesNoPageFaults) {
  if (const char* mode = std::getenv("TILEDBFS_WARMING_CHILD")) {
    const std::string m(mode);
    const Warmth warmth = m == "warm"    ? Warmth::kWarm
                          : m == "first" ? Warmth::kFirst
                                         : Warmth::kCold;
    std::printf("heap-warming: %ld\n", FaultsOfTheNextTile(warmth));
    std::fflush(stdout);
    return;
  }
#if TILEDBFS_TSAN
  GTEST_SKIP() << "ThreadSanitizer's allocator: not glibc's";
#endif
  if (!Warming()) GTEST_SKIP() << "AddressSanitizer's allocator: no heap warming";
  const long cold = FaultsInAFreshProcess("cold");
  const long warm = FaultsInAFreshProcess("warm");
  const long first = FaultsInAFreshProcess("first");
  ASSERT_GE(cold, 0);
  ASSERT_GE(warm, 0);
  ASSERT_GE(first, 0);
  // 256 pages of 4 KiB; far fewer where pages fault in bulk (huge pages).
  if (cold < 128) GTEST_SKIP() << "a cold tile took " << cold << " faults: nothing to compare";
  EXPECT_LT(warm, 16) << "cold: " << cold;
  EXPECT_LT(first, 16) << "the first tile after WarmForFirstReads; cold: " << cold;
}

// WarmHeap faults in only the pages past those it warmed before: twice
// the same is free the second time, and after a block of 1 MiB is taken
// from the warm memory, the same call faults in that megabyte again past it.
TEST(HeapWarming, WarmHeapFaultsInOnlyPastWhatItWarmedBefore) {
  if (std::getenv("TILEDBFS_WARMING_CHILD") != nullptr) {
    const auto a = WarmHeap(4 * kMiB);
    const auto b = WarmHeap(4 * kMiB);
    void* held = std::malloc(kMiB);
    std::memset(held, 1, kMiB);
    const auto c = WarmHeap(4 * kMiB);
    std::printf("heap-warming: %lld %lld %lld\n", a ? static_cast<long long>(*a) : -1LL,
                b ? static_cast<long long>(*b) : -1LL, c ? static_cast<long long>(*c) : -1LL);
    std::fflush(stdout);
    std::free(held);
    return;
  }
#if TILEDBFS_TSAN || TILEDBFS_ASAN
  GTEST_SKIP() << "a sanitizer's allocator: not glibc's heap";
#endif
  const std::string out = InAFreshProcess("frontier", "WarmHeapFaultsInOnlyPastWhatItWarmedBefore");
  ASSERT_FALSE(out.empty());
  long long a = -1, b = -1, c = -1;
  ASSERT_EQ(std::sscanf(out.c_str(), "%lld %lld %lld", &a, &b, &c), 3) << out;
  const long long mib = static_cast<long long>(kMiB), slack = 4 * 4096;
  EXPECT_GE(a, 4 * mib - slack) << "a first call faults in the whole block";
  EXPECT_LE(a, 4 * mib);
  EXPECT_EQ(b, 0) << "the same again is warm already";
  EXPECT_GE(c, mib - slack) << "a megabyte taken: that much more past it";
  EXPECT_LE(c, mib + slack);
}

// The process's resident bytes.
long long ResidentBytes() {
  long long size = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  const int got = std::fscanf(f, "%lld %lld", &size, &resident);
  std::fclose(f);
  return got == 2 ? resident * sysconf(_SC_PAGESIZE) : -1;
}

// 64 blocks of 1 MiB are written, each with a block kept after it,
// then freed: 64 MiB of holes between blocks in use, which stay resident
// unless given back. Then a cache of 1 MiB is put 40 tiles of 512 KiB.
// With a ceiling the process is over, its evictions give the holes back
// (GlibcHeap::Options::resident_ceiling); without one, nothing does.
TEST(HeapWarming, FreedHeapPastTheCeilingGoesBack) {
  if (const char* mode = std::getenv("TILEDBFS_WARMING_CHILD")) {
    const auto heap = std::make_shared<GlibcHeap>(
        GlibcHeap::Options{.resident_ceiling = std::string(mode) == "ceiling" ? 1u : 0u});
    std::vector<void*> holes, keepers;
    for (int i = 0; i < 64; ++i) {
      holes.push_back(std::malloc(kMiB));
      // As big: no free block elsewhere has room for it.
      keepers.push_back(std::malloc(kMiB));
      // Volatile: a write the compiler sees freed unread is no write.
      for (void* block : {holes.back(), keepers.back()}) {
        auto* page = static_cast<volatile char*>(block);
        for (uint64_t at = 0; at < kMiB; at += 4096) page[at] = 1;
      }
    }
    for (void* h : holes) std::free(h);
    {
      TileCache cache(kMiB, 1);
      cache.SetHeapPolicy(heap);
      for (uint64_t i = 0; i < 40; ++i) cache.Put(Key(i), TileOf(kMiB / 2), nullptr);
      std::printf("heap-warming: %lld %llu\n", ResidentBytes(),
                  static_cast<unsigned long long>(heap->trims()));
      std::fflush(stdout);
    }
    for (void* k : keepers) std::free(k);
    return;
  }
#if TILEDBFS_TSAN || TILEDBFS_ASAN
  GTEST_SKIP() << "a sanitizer's allocator: not glibc's heap";
#endif
  long long kept = -1, given = -1;
  unsigned long long kept_trims = 0, given_trims = 0;
  const std::string none = InAFreshProcess("none", "FreedHeapPastTheCeilingGoesBack");
  const std::string ceiling = InAFreshProcess("ceiling", "FreedHeapPastTheCeilingGoesBack");
  ASSERT_EQ(std::sscanf(none.c_str(), "%lld %llu", &kept, &kept_trims), 2) << none;
  ASSERT_EQ(std::sscanf(ceiling.c_str(), "%lld %llu", &given, &given_trims), 2) << ceiling;
  EXPECT_EQ(kept_trims, 0u) << "no ceiling, no trim";
  EXPECT_GE(given_trims, 1u);
  // 64 MiB of holes without the ceiling, none with it.
  EXPECT_LE(given + static_cast<long long>(32 * kMiB), kept)
      << "resident with the ceiling " << given << ", without " << kept;
}

}  // namespace
}  // namespace tiledbfs::core
