#include "core/read/parallel.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

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

namespace {

// One ParallelFor call: its calls handed out by `next`; `queued` and
// `running` (under Helpers::mu) count its tickets still queued and the helpers
// inside Work.
struct Batch {
  Batch(size_t n, const std::function<void(size_t)>& fn) : n(n), fn(&fn) {}

  const size_t n;
  const std::function<void(size_t)>* const fn;
  std::atomic<size_t> next{0};
  size_t queued = 0;
  size_t running = 0;
  std::condition_variable done;

  void Work() {
    for (size_t i = next++; i < n; i = next++) (*fn)(i);
  }
};

// Threads kept between ParallelFor calls: starting and joining one cost 47-59
// us here, more than a small batch's work (StreamedFile renders 3-cell pieces
// in batches). A helper takes a queued ticket of a batch and works on it; the
// caller always works on its own batch too and, once its calls are handed
// out, takes back its tickets still queued and waits only for the helpers
// already inside it, so nested calls never wait on a queue.
class Helpers {
 public:
  // Queues `tickets` tickets of `batch`, starting threads for those no idle
  // helper can take (up to kMaxThreads; the caller does the rest).
  void Post(Batch& batch, size_t tickets) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t t = 0; t < tickets; ++t) queue_.push_back(&batch);
    batch.queued = tickets;
    while (threads_ - busy_ < queue_.size() && threads_ < kMaxThreads) {
      try {
        std::thread(&Helpers::Loop, this).detach();
      } catch (...) {
        break;  // no thread to be had: the tickets wait for a helper or are taken back
      }
      ++threads_;
    }
    wake_.notify_all();
  }

  // Takes back the batch's tickets still queued, then waits for the helpers
  // inside it to leave.
  void Finish(Batch& batch) {
    std::unique_lock<std::mutex> lock(mu_);
    if (batch.queued > 0) {
      std::erase(queue_, &batch);
      batch.queued = 0;
    }
    batch.done.wait(lock, [&] { return batch.running == 0; });
  }

 private:
  // Helpers never exceed this, whatever the nesting: tickets beyond it are
  // taken back by their callers, who do that work themselves.
  static constexpr size_t kMaxThreads = 64;

  [[noreturn]] void Loop() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      wake_.wait(lock, [&] { return !queue_.empty(); });
      Batch* batch = queue_.front();
      queue_.pop_front();
      --batch->queued;
      ++batch->running;
      ++busy_;
      lock.unlock();
      batch->Work();
      lock.lock();
      --busy_;
      if (--batch->running == 0) batch->done.notify_all();
    }
  }

  std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Batch*> queue_;
  size_t threads_ = 0;
  size_t busy_ = 0;
};

// The calling thread's nice value (Linux: per thread); 0 where unreadable.
int NiceOfThisThread() {
  errno = 0;
  const int nice = getpriority(PRIO_PROCESS, static_cast<id_t>(gettid()));
  return nice == -1 && errno != 0 ? 0 : nice;
}

// One set of helpers per nice value of the callers: a thread starts with its
// creator's nice and cannot lower it again, so work ahead (nice 10, see
// LowerThreadPriority) and a reader's own work never share helpers. Never
// destroyed: detached helpers wait in them until the process ends.
std::mutex pools_mu;
std::map<int, Helpers*>* pools = nullptr;

Helpers& HelpersFor(int nice) {
  std::lock_guard<std::mutex> lock(pools_mu);
  if (pools == nullptr) {
    pools = new std::map<int, Helpers*>;
    // A forked child has none of the parent's threads: it starts its own
    // (pools_mu held across the fork, so that the child finds it free).
    pthread_atfork([] { pools_mu.lock(); }, [] { pools_mu.unlock(); },
                   [] {
                     pools = new std::map<int, Helpers*>;
                     pools_mu.unlock();
                   });
  }
  Helpers*& h = (*pools)[nice];
  if (h == nullptr) h = new Helpers;
  return *h;
}

}  // namespace

void ParallelFor(size_t n, const std::function<void(size_t)>& fn, unsigned threads) {
  if (threads == 0) threads = UsableCores();
  const size_t helpers = std::min<size_t>(threads, n) - (n > 0 ? 1 : 0);
  Batch batch(n, fn);
  if (helpers == 0) {
    batch.Work();
    return;
  }
  Helpers& pool = HelpersFor(NiceOfThisThread());
  pool.Post(batch, helpers);
  batch.Work();
  pool.Finish(batch);
}

}  // namespace tiledbfs::core
