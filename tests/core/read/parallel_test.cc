// UsableCores follows the CPU affinity, and what sizes itself by it: a tile
// cache held to one core decodes nothing ahead, ParallelFor runs on the
// caller alone.
#include "core/util/parallel.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>

#include "core/read/tile_cache.h"

namespace tiledbfs::core {
namespace {

// Runs fn on a thread held to the first CPU of this one's affinity.
template <class Fn>
void OnOneCpu(Fn fn) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &all)) ++cpu;
  std::thread t([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
    fn();
  });
  t.join();
}

TEST(ParallelTest, UsableCoresFollowTheAffinity) {
  cpu_set_t all;
  ASSERT_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
  EXPECT_EQ(UsableCores(), static_cast<unsigned>(CPU_COUNT(&all)));
  OnOneCpu([] { EXPECT_EQ(UsableCores(), 1u); });
}

TEST(ParallelTest, OneCoreRunsEverythingOnTheCaller) {
  OnOneCpu([] {
    const std::thread::id caller = std::this_thread::get_id();
    std::mutex mu;
    std::set<std::thread::id> ran;
    // Calls that take a while, so that a helper thread would get some.
    ParallelFor(32, [&](size_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::lock_guard<std::mutex> lock(mu);
      ran.insert(std::this_thread::get_id());
    });
    EXPECT_EQ(ran, std::set<std::thread::id>{caller});
  });
}

TEST(ParallelTest, LowerThreadPriorityLowersTheCallingThreadAlone) {
  const auto nice_of = [] {
    errno = 0;
    const int n = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
    EXPECT_EQ(errno, 0);
    return n;
  };
  const int mine = nice_of();
  int lowered = mine, after_twice = mine;
  std::thread t([&] {
    EXPECT_TRUE(LowerThreadPriority(4));
    lowered = nice_of();
    EXPECT_TRUE(LowerThreadPriority(40));  // capped at 19
    after_twice = nice_of();
  });
  t.join();
  EXPECT_EQ(lowered, std::min(mine + 4, 19));
  EXPECT_EQ(after_twice, 19);
  EXPECT_EQ(nice_of(), mine);
}

TEST(ParallelTest, OneCoreDecodesNothingAhead) {
  OnOneCpu([] {
    TileCache cache(uint64_t{1} << 20);
    EXPECT_FALSE(cache.DecodeAhead(AheadTile{}));
    EXPECT_FALSE(cache.DecodeAhead(AheadTile{}));
  });
}

}  // namespace
}  // namespace tiledbfs::core
