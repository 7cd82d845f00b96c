// How a growing cache meets the allocator: the policy its owner (a mount)
// gives it. A cache without one warms nothing and trims nothing.
#pragma once

#include <cstdint>
#include <optional>

namespace tiledbfs::core {

class HeapPolicy {
 public:
  virtual ~HeapPolicy() = default;
  // Whether Warm does anything: a cache starts no thread for it otherwise.
  virtual bool Warms() const = 0;
  // Faults in the next `bytes` of the allocator's free memory, so that the
  // next allocations of up to that much land on pages already faulted in.
  // Returns the bytes newly faulted in, or nullopt if out of memory. Called
  // on a thread of the cache's own, never under its lock.
  virtual std::optional<uint64_t> Warm(uint64_t bytes) = 0;
  // Blocks of `bytes` in all were let go (tiles leaving the cache). Cheap.
  virtual void Freed(uint64_t bytes) = 0;
};

}  // namespace tiledbfs::core
