#include "fusefs/fuse/kernel_cache.h"

namespace tiledbfs::fusefs {

KernelCache::OpenMode KernelCache::Open(uint64_t ino, uint64_t snapshot, uint64_t size,
                                        bool random) {
  std::lock_guard lock(mu_);
  State& s = states_[ino];
  const bool same = snapshot != 0 && s.snapshot == snapshot;
  OpenMode mode;
  if (s.holders > 0 && !same) {
    mode.pages = false;
    mode.direct_io = true;
    return mode;
  }
  mode.keep_cache = same;
  if (s.holders == 0) {
    if (!same) s.opened = false;
    s.snapshot = snapshot;
    s.size = size;
  }
  mode.direct_io = stream_first_ && (random || !(same && s.opened));
  s.opened = true;
  // Once told to drop it, the kernel asks again and gets s.size (ReportSize)
  // for as long as opens hold the pages.
  mode.invalidate_size = s.holders == 0;
  ++s.holders;
  return mode;
}

void KernelCache::Release(uint64_t ino, bool pages) {
  if (!pages) return;
  std::lock_guard lock(mu_);
  auto it = states_.find(ino);
  if (it != states_.end() && it->second.holders > 0) --it->second.holders;
}

uint64_t KernelCache::ReportSize(uint64_t ino, uint64_t current) {
  std::lock_guard lock(mu_);
  auto it = states_.find(ino);
  return it != states_.end() && it->second.holders > 0 ? it->second.size : current;
}

void KernelCache::Drop(uint64_t ino) {
  std::lock_guard lock(mu_);
  auto it = states_.find(ino);
  if (it != states_.end() && it->second.holders == 0) states_.erase(it);
}

size_t KernelCache::size() const {
  std::lock_guard lock(mu_);
  return states_.size();
}

}  // namespace tiledbfs::fusefs
