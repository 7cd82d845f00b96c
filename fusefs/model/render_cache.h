// A byte-budgeted LRU shared by every view of a tree: rendered files and
// materialised columns. Values are immutable and shared: a reader keeps its
// shared_ptr alive after eviction, so an open file never changes under it.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>

namespace tiledbfs::fusefs {

template <class V>
class LruCache {
 public:
  explicit LruCache(uint64_t budget_bytes) : budget_(budget_bytes) {}

  std::shared_ptr<const V> Get(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it == map_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return std::get<1>(*it->second);
  }

  // Inserts (or replaces), then evicts least recently used entries beyond
  // the budget. A value larger than the budget is not kept.
  void Put(const std::string& key, std::shared_ptr<const V> value, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map_.find(key);
    if (it != map_.end()) {
      used_ -= std::get<2>(*it->second);
      lru_.erase(it->second);
      map_.erase(it);
    }
    if (bytes > budget_) return;
    used_ += bytes;
    lru_.emplace_front(key, std::move(value), bytes);
    map_[key] = lru_.begin();
    while (used_ > budget_ && !lru_.empty()) {
      used_ -= std::get<2>(lru_.back());
      map_.erase(std::get<0>(lru_.back()));
      lru_.pop_back();
    }
  }

 private:
  using Entry = std::tuple<std::string, std::shared_ptr<const V>, uint64_t>;
  std::mutex mu_;
  uint64_t budget_;
  uint64_t used_ = 0;
  std::list<Entry> lru_;  // front: most recent
  std::unordered_map<std::string, typename std::list<Entry>::iterator> map_;
};

}  // namespace tiledbfs::fusefs
