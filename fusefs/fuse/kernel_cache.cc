#include "fusefs/fuse/kernel_cache.h"

namespace tiledbfs::fusefs {

KernelCache::OpenMode KernelCache::Open(uint64_t ino, uint64_t snapshot, uint64_t size) {
  std::lock_guard lock(mu_);
  State& s = states_[ino];
  const bool same = snapshot != 0 && s.snapshot == snapshot;
  OpenMode mode;
  if (s.cached_opens > 0 && !same) {
    mode.cached = false;
    return mode;
  }
  mode.keep_cache = same;
  if (s.cached_opens == 0) {
    s.snapshot = snapshot;
    s.size = size;
  }
  // Once told to drop it, the kernel asks again and gets s.size (ReportSize)
  // for as long as cached opens are held.
  mode.invalidate_size = s.cached_opens == 0;
  ++s.cached_opens;
  return mode;
}

void KernelCache::Release(uint64_t ino, bool cached) {
  if (!cached) return;
  std::lock_guard lock(mu_);
  auto it = states_.find(ino);
  if (it != states_.end() && it->second.cached_opens > 0) --it->second.cached_opens;
}

uint64_t KernelCache::ReportSize(uint64_t ino, uint64_t current) {
  std::lock_guard lock(mu_);
  auto it = states_.find(ino);
  return it != states_.end() && it->second.cached_opens > 0 ? it->second.size : current;
}

void KernelCache::Drop(uint64_t ino) {
  std::lock_guard lock(mu_);
  auto it = states_.find(ino);
  if (it != states_.end() && it->second.cached_opens == 0) states_.erase(it);
}

size_t KernelCache::size() const {
  std::lock_guard lock(mu_);
  return states_.size();
}

}  // namespace tiledbfs::fusefs
