#include "core/util/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
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

namespace {

// Set on a thread that lowered its priority (work ahead of readers): its
// ParallelFor calls take no pool threads, which run at the readers'
// priority, and start none (a thread inherits its creator's nice value).
thread_local bool t_lowered = false;

// One ParallelFor call, on its caller's stack. The pool's threads reach it
// through the queue only while it has tickets (helpers wanted), and the
// caller returns only once none is inside.
struct Batch {
  const std::function<void(size_t)>* fn = nullptr;
  size_t n = 0;
  std::atomic<size_t> next{0};
  size_t tickets = 0;  // Pool::mu_
  size_t inside = 0;   // Pool::mu_
  std::condition_variable left;

  void Work() {
    for (size_t i = next++; i < n; i = next++) (*fn)(i);
  }
};

// Threads that help ParallelFor calls. Never destroyed (its threads are
// detached and may still wait on it at exit).
class Pool {
 public:
  static Pool& Get() {
    static Pool* pool = [] {
      auto* p = new Pool;
      // The fork's child has none of the parent's threads: it starts anew.
      pthread_atfork([] { Get().mu_.lock(); }, [] { Get().mu_.unlock(); },
                     [] { Get().AfterForkInChild(); });
      return p;
    }();
    return *pool;
  }

  // Queues `b` for up to `helpers` threads, starting threads up to that
  // many (never more than the machine's cores less the caller).
  void Offer(Batch* b, size_t helpers) {
    std::lock_guard<std::mutex> lock(mu_);
    const size_t limit = std::max(1u, std::thread::hardware_concurrency()) - 1;
    while (threads_ < std::min(helpers, limit)) {
      try {
        std::thread([this] { Loop(); }).detach();
        ++threads_;
      } catch (...) {
        break;  // no thread to be had: the caller does the rest
      }
    }
    b->tickets = std::min<size_t>(helpers, threads_);
    if (b->tickets == 0) return;
    queue_.push_back(b);
    for (size_t k = 0; k < b->tickets; ++k) work_.notify_one();
  }

  // Once the caller ran out of calls: the tickets not taken are withdrawn,
  // and the helpers inside finish theirs.
  void Finish(Batch* b) {
    std::unique_lock<std::mutex> lock(mu_);
    if (b->tickets > 0) {
      queue_.erase(std::find(queue_.begin(), queue_.end(), b));
      b->tickets = 0;
    }
    b->left.wait(lock, [&] { return b->inside == 0; });
  }

  unsigned threads() {
    std::lock_guard<std::mutex> lock(mu_);
    return threads_;
  }

 private:
  void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      work_.wait(lock, [&] { return !queue_.empty(); });
      Batch* b = queue_.front();
      if (--b->tickets == 0) queue_.pop_front();
      ++b->inside;
      lock.unlock();
      b->Work();
      lock.lock();
      // Under mu_: the caller cannot return (and end b) before it sees 0.
      if (--b->inside == 0) b->left.notify_all();
    }
  }

  // mu_ is held (the prepare handler took it): no thread was inside a
  // change. The batches queued are of threads the child does not have; the
  // condition variable may count waiters it does not have either, which a
  // notify would wait for: it is made anew, not destroyed.
  void AfterForkInChild() {
    queue_.clear();
    threads_ = 0;
    new (&work_) std::condition_variable;
    mu_.unlock();
  }

  std::mutex mu_;
  std::condition_variable work_;  // a batch was queued
  std::deque<Batch*> queue_;      // batches with tickets, oldest first
  unsigned threads_ = 0;
};

}  // namespace

bool LowerThreadPriority(int nice) {
  // On Linux, PRIO_PROCESS with a thread id sets that thread's nice value.
  const id_t self = static_cast<id_t>(gettid());
  errno = 0;
  const int now = getpriority(PRIO_PROCESS, self);
  if (now == -1 && errno != 0) return false;
  if (setpriority(PRIO_PROCESS, self, std::min(now + nice, 19)) != 0) return false;
  t_lowered = true;
  return true;
}

void ParallelFor(size_t n, const std::function<void(size_t)>& fn, unsigned threads) {
  if (threads == 0) threads = UsableCores();
  Batch batch;
  batch.fn = &fn;
  batch.n = n;
  const size_t helpers = t_lowered || n == 0 ? 0 : std::min<size_t>(threads, n) - 1;
  if (helpers == 0) {
    batch.Work();
    return;
  }
  Pool& pool = Pool::Get();
  pool.Offer(&batch, helpers);
  batch.Work();
  pool.Finish(&batch);
}

void ParallelForOnNewThreads(size_t n, const std::function<void(size_t)>& fn, unsigned threads) {
  size_t helpers = std::min<size_t>(std::max(threads, 1u), n) - (n > 0 ? 1 : 0);
  std::atomic<size_t> next{0};
  auto work = [&]() {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> started;
  started.reserve(helpers);
  for (size_t t = 0; t < helpers; ++t) {
    try {
      started.emplace_back(work);
    } catch (...) {
      break;  // no thread to be had: the caller does the rest
    }
  }
  work();
  for (auto& t : started) t.join();
}

unsigned DecodePoolThreads() { return Pool::Get().threads(); }

}  // namespace tiledbfs::core
