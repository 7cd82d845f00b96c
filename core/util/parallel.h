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
//
// The helpers come from one pool per process (DecodePoolThreads), started
// as calls first ask for them: the caller runs calls itself and is helped
// by whichever pool threads come free before it runs out, never waiting for
// one, so a call from within fn (a nested ParallelFor) or from many readers
// at once cannot deadlock, it only gets fewer helpers. A thread that lowered
// its priority (LowerThreadPriority: work ahead) runs its calls alone. Safe
// across fork (a daemon detaching at mount time): the child's pool starts
// anew on its first use, whatever the parent's was doing.
void ParallelFor(size_t n, const std::function<void(size_t)>& fn, unsigned threads = 0);

// As ParallelFor, on `threads` threads started for this call (the caller's
// included): for calls that mostly wait on round trips (S3 footer reads),
// which want more at once than there are cores.
void ParallelForOnNewThreads(size_t n, const std::function<void(size_t)>& fn, unsigned threads);

// The threads the pool has started in this process (tests): no more than
// the most helpers a call asked for (threads - 1), nor than the machine's
// cores less one; 0 before its first use.
unsigned DecodePoolThreads();

}  // namespace tiledbfs::core
