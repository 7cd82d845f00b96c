#include "core/util/parallel.h"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <thread>
#include <vector>

namespace tiledbfs::core {

unsigned UsableCores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return static_cast<unsigned>(n);
  }
  return std::max(1u, std::thread::hardware_concurrency());
}

bool LowerThreadPriority(int nice) {
  // On Linux, PRIO_PROCESS with a thread id sets that thread's nice value.
  const id_t self = static_cast<id_t>(gettid());
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, self);
  if (now == -1 && errno != 0) return false;
  return setpriority(PRIO_PROCESS, self, std::min(now + nice, 19)) == 0;
}

void ParallelFor(size_t n, const std::function<void(size_t)>& fn, unsigned threads) {
  if (threads == 0) threads = UsableCores();
  size_t helpers = std::min<size_t>(threads, n) - (n > 0 ? 1 : 0);
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  pool.reserve(helpers);
  for (size_t t = 0; t < helpers; ++t) {
    try {
      pool.emplace_back(work);
    } catch (...) {
      break;  // no thread to be had: the caller does the rest
    }
  }
  work();
  for (auto& t : pool) t.join();
}

}  // namespace tiledbfs::core
