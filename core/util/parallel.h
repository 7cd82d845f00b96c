// Running independent pieces of work (tile decodes) on every core.
#pragma once

#include <cstddef>
#include <functional>

namespace tiledbfs::core {

// The cores this process may run on: its CPU affinity (taskset, a cgroup's
// cpuset), not the machine's count, so that a daemon held to one core does
// not run threads that only take turns on it. At least 1; the machine's
// count where the affinity cannot be read.
unsigned UsableCores();

// Gives the calling thread a lower priority (nice `nice`, on top of the
// process's): for work done ahead of a reader (TileCache's decode-ahead),
// so that the reader's own thread, woken by its next request, takes a core
// at once instead of waiting for the work ahead's turn to end. False if the
// kernel refused (the thread then keeps its priority).
bool LowerThreadPriority(int nice);

// Calls fn(0) ... fn(n - 1), spread over up to `threads` threads (the
// caller's included; 0: one per usable core). Returns when all calls have
// returned. fn must not throw.
void ParallelFor(size_t n, const std::function<void(size_t)>& fn, unsigned threads = 0);

}  // namespace tiledbfs::core
