#include "core/read/window_pool.h"

namespace tiledbfs::core {

void WindowPool::Hold(const void* owner, std::shared_ptr<const void> entry, uint64_t bytes) {
  // Dropped after the lock: the last reference runs the entry's deleter.
  std::vector<std::shared_ptr<const void>> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  const void* key = entry.get();
  if (auto it = at_.find(key); it != at_.end()) {
    lru_.splice(lru_.end(), lru_, it->second);
    return;
  }
  lru_.push_back(Entry{owner, std::move(entry), bytes});
  at_[key] = std::prev(lru_.end());
  bytes_ += bytes;
  for (auto it = lru_.begin(); bytes_ > budget_ && it != lru_.end();) {
    if (it->owner == owner) {
      ++it;
      continue;
    }
    bytes_ -= it->bytes;
    at_.erase(it->entry.get());
    dropped.push_back(std::move(it->entry));
    it = lru_.erase(it);
  }
}

void WindowPool::Touch(const void* entry) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = at_.find(entry); it != at_.end()) lru_.splice(lru_.end(), lru_, it->second);
}

void WindowPool::Release(const void* entry) {
  std::shared_ptr<const void> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = at_.find(entry);
  if (it == at_.end()) return;
  bytes_ -= it->second->bytes;
  dropped = std::move(it->second->entry);
  lru_.erase(it->second);
  at_.erase(it);
}

uint64_t WindowPool::held_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

size_t WindowPool::held() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lru_.size();
}

}  // namespace tiledbfs::core
