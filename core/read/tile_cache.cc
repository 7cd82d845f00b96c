#include "core/read/tile_cache.h"

namespace tiledbfs::core {

std::shared_ptr<const DecodedTile> TileCache::Get(const TileKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->tile;
}

bool TileCache::Contains(const TileKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.count(key) != 0;
}

std::shared_ptr<const DecodedTile> TileCache::Put(
    const TileKey& key, std::shared_ptr<const DecodedTile> tile,
    std::shared_ptr<const FragmentMetadata> fragment) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = map_.find(key); it != map_.end()) return it->second->tile;
  const uint64_t size = SizeOf(*tile);
  if (size > budget_) return tile;
  std::shared_ptr<const DecodedTile> result = tile;
  used_ += size;
  lru_.push_front(Entry{key, std::move(tile), std::move(fragment)});
  map_[key] = lru_.begin();
  while (used_ > budget_ && !lru_.empty()) {
    used_ -= SizeOf(*lru_.back().tile);
    map_.erase(lru_.back().key);
    lru_.pop_back();
  }
  return result;
}

uint64_t TileCache::used_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

}  // namespace tiledbfs::core
