// Warming the heap ahead of a growing tile cache (core/util/warm_heap.h):
// how much it warms, when it does not, and that a tile allocated after it
// takes no page faults, counted by the kernel (getrusage), in a fresh
// process with glibc set as the programs set it (tools/malloc_tuning.h).
#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "core/read/tile_cache.h"
#include "core/util/warm_heap.h"
#include "tools/malloc_tuning.h"

namespace tiledbfs::core {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

// Heap warming on for one test, then off again.
class WarmingOn {
 public:
  WarmingOn() { SetHeapWarming(true); }
  ~WarmingOn() { SetHeapWarming(false); }
};

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
  WarmingOn on;
  if (!HeapWarming()) GTEST_SKIP() << "AddressSanitizer's allocator: no heap warming";
  TileCache cache(6 * kMiB, 1);
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
  WarmingOn on;
  if (!HeapWarming()) GTEST_SKIP() << "AddressSanitizer's allocator: no heap warming";
  TileCache cache(256 * kMiB, 1);
  cache.Put(Key(0), TileOf(20 * kMiB), nullptr);
  cache.Put(Key(1), TileOf(kMiB), nullptr);
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 21 * kMiB + TileCache::kWarmAhead);
}

TEST(HeapWarming, NothingWarmsWhileItIsOff) {
  SetHeapWarming(false);
  TileCache cache(64 * kMiB, 1);
  for (uint64_t k = 0; k < 4; ++k) cache.Put(Key(k), TileOf(kMiB), nullptr);
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 0u);
}

TEST(HeapWarming, NothingWarmsOnOneCore) {
  WarmingOn on;
  if (!HeapWarming()) GTEST_SKIP() << "AddressSanitizer's allocator: no heap warming";
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &all)) ++cpu;
  TileCache cache(64 * kMiB);  // threads by the usable cores
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    for (uint64_t k = 0; k < 4; ++k) cache.Put(Key(k), TileOf(kMiB), nullptr);
  });
  t.join();
  cache.WaitForAhead();
  EXPECT_EQ(cache.warmed_bytes(), 0u) << "no other core to take the faults on";
}

// A tile cache holding two 1 MiB tiles, warming on or off, then the page
// faults of the next 1 MiB tile's allocation and first writes (a decode's).
long FaultsOfTheNextTile(bool warm) {
  SetHeapWarming(warm);
  TileCache cache(64 * kMiB, 1);
  cache.Put(Key(0), TileOf(kMiB), nullptr);
  cache.Put(Key(1), TileOf(kMiB), nullptr);
  cache.WaitForAhead();
  const long before = MinorFaults();
  auto next = TileOf(kMiB);
  return MinorFaults() - before;
}

// The same in this test program run again, as the programs run themselves
// with glibc's settings (tools/malloc_tuning.h): they take effect only at
// start, one heap for every thread among them.
long FaultsInAFreshProcess(bool warm) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    dup2(fds[1], STDOUT_FILENO);
    setenv("GLIBC_TUNABLES", tools::kMallocTunables, 1);
    setenv("TILEDBFS_WARMING_CHILD", warm ? "warm" : "cold", 1);
    execl("/proc/self/exe", "core_read_tests",
          "--gtest_filter=HeapWarming.TheNextTileTakesNoPageFaults", nullptr);
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) > 0;) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  const size_t at = out.find("heap-warming-faults: ");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || at == std::string::npos) return -1;
  return std::atol(out.c_str() + at + 21);
}

TEST(HeapWarming, TheNextTileTakesNoPageFaults) {
  if (const char* mode = std::getenv("TILEDBFS_WARMING_CHILD")) {
    std::printf("heap-warming-faults: %ld\n", FaultsOfTheNextTile(std::string(mode) == "warm"));
    std::fflush(stdout);
    SetHeapWarming(false);
    return;
  }
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer's allocator: not glibc's";
#endif
  SetHeapWarming(true);
  const bool can = HeapWarming();
  SetHeapWarming(false);
  if (!can) GTEST_SKIP() << "AddressSanitizer's allocator: no heap warming";
  const long cold = FaultsInAFreshProcess(false);
  const long warm = FaultsInAFreshProcess(true);
  ASSERT_GE(cold, 0);
  ASSERT_GE(warm, 0);
  // 256 pages of 4 KiB; far fewer where pages fault in bulk (huge pages).
  if (cold < 128) GTEST_SKIP() << "a cold tile took " << cold << " faults: nothing to compare";
  EXPECT_LT(warm, 16) << "cold: " << cold;
}

}  // namespace
}  // namespace tiledbfs::core
