// UsableCores follows the CPU affinity, and what sizes itself by it: a tile
// cache held to one core decodes nothing ahead, ParallelFor runs on the
// caller alone. ParallelFor's helpers: kept between calls, of the caller's
// nice value, never waited on by nested calls, started anew after a fork.
#include "core/read/parallel.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <latch>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

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

int NiceOfThisThread() {
  errno = 0;
  const int n = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  EXPECT_EQ(errno, 0);
  return n;
}

// ParallelFor(n) whose calls each wait for all n to have started, so that n
// threads must run them at once; returns the kernel thread ids that did.
std::set<pid_t> RunOnNThreads(size_t n, std::vector<int>* nice = nullptr) {
  std::latch all_started(static_cast<std::ptrdiff_t>(n));
  std::mutex mu;
  std::set<pid_t> tids;
  ParallelFor(
      n,
      [&](size_t) {
        {
          std::lock_guard<std::mutex> lock(mu);
          tids.insert(gettid());
          if (nice != nullptr) nice->push_back(NiceOfThisThread());
        }
        all_started.arrive_and_wait();
      },
      static_cast<unsigned>(n));
  return tids;
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
  const int mine = NiceOfThisThread();
  int lowered = mine, after_twice = mine;
  std::thread t([&] {
    EXPECT_TRUE(LowerThreadPriority(4));
    lowered = NiceOfThisThread();
    EXPECT_TRUE(LowerThreadPriority(40));  // capped at 19
    after_twice = NiceOfThisThread();
  });
  t.join();
  EXPECT_EQ(lowered, std::min(mine + 4, 19));
  EXPECT_EQ(after_twice, 19);
  EXPECT_EQ(NiceOfThisThread(), mine);
}

TEST(ParallelTest, HelpersAreKeptBetweenCalls) {
  // 100 calls of 4 threads at once: new threads for each would be 300.
  std::set<pid_t> helpers;
  for (int call = 0; call < 100; ++call) {
    const std::set<pid_t> tids = RunOnNThreads(4);
    ASSERT_EQ(tids.size(), 4u);
    for (pid_t t : tids)
      if (t != gettid()) helpers.insert(t);
  }
  EXPECT_GE(helpers.size(), 3u);
  EXPECT_LE(helpers.size(), 64u);  // Helpers::kMaxThreads
}

TEST(ParallelTest, HelpersHaveTheCallersNice) {
  const int mine = NiceOfThisThread();
  std::vector<int> lowered_nice, own_nice;
  std::thread lowered([&] {
    ASSERT_TRUE(LowerThreadPriority(5));
    RunOnNThreads(3, &lowered_nice);
  });
  RunOnNThreads(3, &own_nice);
  lowered.join();
  EXPECT_EQ(own_nice, std::vector<int>(3, mine));
  EXPECT_EQ(lowered_nice, std::vector<int>(3, std::min(mine + 5, 19)));
}

TEST(ParallelTest, NestedCallsFinish) {
  // Three levels of 8 threads each, more than the 64 helpers there can be:
  // a call's caller works on it and waits only for helpers inside it.
  std::vector<std::atomic<int>> ran(16 * 16 * 16);
  ParallelFor(
      16,
      [&](size_t i) {
        ParallelFor(
            16,
            [&](size_t j) {
              ParallelFor(
                  16, [&](size_t k) { ran[(i * 16 + j) * 16 + k]++; }, 8);
            },
            8);
      },
      8);
  for (auto& r : ran) ASSERT_EQ(r.load(), 1);
}

TEST(ParallelTest, AForkedChildStartsItsOwnHelpers) {
#if defined(__SANITIZE_THREAD__)
  GTEST_SKIP() << "ThreadSanitizer ends a child that starts threads after a multithreaded fork";
#endif
  RunOnNThreads(3);  // the parent has helpers
  const pid_t child = fork();
  ASSERT_NE(child, -1);
  if (child == 0) {
    // The parent's helpers are not in the child: waiting for them would hang
    // (SIGALRM ends the child then, as a failure).
    alarm(120);
    _exit(RunOnNThreads(3).size() == 3 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status)) << "the child was killed by signal " << WTERMSIG(status);
  EXPECT_EQ(WEXITSTATUS(status), 0);
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
