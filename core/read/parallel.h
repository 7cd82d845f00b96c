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

// Calls fn(0) ... fn(n - 1), spread over up to `threads` threads (the
// caller's included; 0: one per usable core). Returns when all calls have
// returned. fn must not throw.
void ParallelFor(size_t n, const std::function<void(size_t)>& fn, unsigned threads = 0);

}  // namespace tiledbfs::core
