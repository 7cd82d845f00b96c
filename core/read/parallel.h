// Running independent pieces of work (tile decodes) on every core.
#pragma once

#include <cstddef>
#include <functional>

namespace tiledbfs::core {

// Calls fn(0) ... fn(n - 1), spread over up to `threads` threads (the
// caller's included; 0: one per core). Returns when all calls have
// returned. fn must not throw.
void ParallelFor(size_t n, const std::function<void(size_t)>& fn, unsigned threads = 0);

}  // namespace tiledbfs::core
