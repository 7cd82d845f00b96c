// UsableCores follows the CPU affinity, and what sizes itself by it: a tile
// cache held to one core decodes nothing ahead, ParallelFor runs on the
// caller alone. ParallelFor's one pool: reused, nested calls, fork.
#include "core/util/parallel.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "core/read/tile_cache.h"
#include "core/util/sanitizers.h"

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

TEST(ParallelTest, ALoweredThreadRunsEverythingItself) {
  std::set<pid_t> ran;
  std::thread t([&] {
    ASSERT_TRUE(LowerThreadPriority(1));
    std::mutex mu;
    ParallelFor(32, [&](size_t) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::lock_guard<std::mutex> lock(mu);
      ran.insert(gettid());
    });
  });
  t.join();
  EXPECT_EQ(ran.size(), 1u) << "work ahead takes no pool thread from the readers";
}

// Calls 0 and 1 each wait for the other to have started: the call returns
// only if a second thread took part (a pool that has threads).
void BothAtOnce() {
  std::mutex mu;
  std::condition_variable cv;
  int started = 0;
  ParallelFor(
      2,
      [&](size_t) {
        std::unique_lock<std::mutex> lock(mu);
        ++started;
        cv.notify_all();
        cv.wait(lock, [&] { return started == 2; });
      },
      2);
}

TEST(ParallelTest, ThePoolsThreadsServeEveryCall) {
  if (UsableCores() < 2) GTEST_SKIP() << "one core: no pool";
  std::mutex mu;
  std::set<pid_t> ran;
  for (int call = 0; call < 50; ++call) {
    BothAtOnce();
    ParallelFor(16, [&](size_t) {
      std::lock_guard<std::mutex> lock(mu);
      ran.insert(gettid());
    });
  }
  // Threads started per call would have new ids each time.
  EXPECT_LE(ran.size(), DecodePoolThreads() + 1);
  EXPECT_LE(DecodePoolThreads() + 1, std::max(1u, std::thread::hardware_concurrency()));
}

TEST(ParallelTest, NestedCallsFinish) {
  std::atomic<size_t> calls{0};
  // Every pool thread busy in an outer call that makes calls of its own.
  ParallelFor(16, [&](size_t) {
    ParallelFor(8, [&](size_t) {
      ParallelFor(4, [&](size_t) { calls.fetch_add(1, std::memory_order_relaxed); });
    });
  });
  EXPECT_EQ(calls.load(), 16u * 8 * 4);
}

TEST(ParallelTest, ManyCallersAtOnceFinish) {
  std::atomic<size_t> calls{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 8; ++c) {
    callers.emplace_back([&] {
      for (int k = 0; k < 20; ++k) {
        ParallelFor(10, [&](size_t) { calls.fetch_add(1, std::memory_order_relaxed); });
      }
    });
  }
  for (auto& t : callers) t.join();
  EXPECT_EQ(calls.load(), 8u * 20 * 10);
}

// Forks with a pool thread idle, or inside a call of another thread, and
// has the child use the pool (BothAtOnce: it needs a thread of the
// child's): exit 0 if the child's call returned, a signal if it hung past
// its alarm.
int ForkAndUseThePool() {
  const pid_t child = fork();
  if (child < 0) return -1;
  if (child == 0) {
    alarm(20);  // a pool that lost its threads at the fork: the child hangs
    BothAtOnce();
    std::atomic<size_t> calls{0};
    ParallelFor(64, [&](size_t) { calls.fetch_add(1, std::memory_order_relaxed); });
    _exit(calls.load() == 64 ? 0 : 1);
  }
  int status = 0;
  if (waitpid(child, &status, 0) != child) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(ParallelTest, ThePoolWorksInAForkedChild) {
#if TILEDBFS_TSAN
  GTEST_SKIP() << "ThreadSanitizer stops a child of a threaded fork that starts threads";
#endif
  if (UsableCores() < 2) GTEST_SKIP() << "one core: no pool";
  BothAtOnce();  // the parent's pool has a thread
  ASSERT_GE(DecodePoolThreads(), 1u);
  EXPECT_EQ(ForkAndUseThePool(), 0) << "forked while the pool was idle";

  // Forked while a pool thread is inside another thread's call.
  std::mutex mu;
  std::condition_variable cv;
  int inside = 0;
  bool release = false;
  std::thread busy([&] {
    ParallelFor(
        2,
        [&](size_t) {
          std::unique_lock<std::mutex> lock(mu);
          ++inside;
          cv.notify_all();
          cv.wait(lock, [&] { return release; });
        },
        2);
  });
  {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return inside == 2; });
  }
  EXPECT_EQ(ForkAndUseThePool(), 0) << "forked while the pool was busy";
  {
    std::lock_guard<std::mutex> lock(mu);
    release = true;
  }
  cv.notify_all();
  busy.join();
  BothAtOnce();  // and the parent's pool goes on
}

}  // namespace
}  // namespace tiledbfs::core
