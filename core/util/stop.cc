#include "core/util/stop.h"

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

namespace tiledbfs::core {
namespace {

// Set from a signal handler: only a lock-free atomic is safe there.
std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free);

}  // namespace

void RequestStop() noexcept { g_stop.store(true, std::memory_order_release); }

bool StopRequested() noexcept { return g_stop.load(std::memory_order_acquire); }

Status CheckStop(std::string_view what) {
  if (!StopRequested()) return Ok();
  return Error::Cancelled(std::string(what) + ": cancelled: the process is stopping");
}

bool SleepUnlessStopped(std::chrono::milliseconds d) {
  const auto end = std::chrono::steady_clock::now() + d;
  for (;;) {
    if (StopRequested()) return false;
    const auto now = std::chrono::steady_clock::now();
    if (now >= end) return true;
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(end - now, kStopSlice));
  }
}

}  // namespace tiledbfs::core
