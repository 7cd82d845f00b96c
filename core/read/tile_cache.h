// Decoded tiles shared by every read of an array, within a byte budget
// (least recently used out first). A tile handed out stays valid for its
// holder after eviction.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "core/read/tile_source.h"

namespace tiledbfs::core {

// A fragment is named by its address: the cache keeps every fragment it
// holds tiles of alive (Put's `fragment`), so no other fragment can come to
// live at that address while its tiles are cached.
struct TileKey {
  const FragmentMetadata* fragment = nullptr;
  int field = 0;  // footer field index
  uint64_t tile = 0;
  bool operator==(const TileKey&) const = default;
};

struct TileKeyHash {
  size_t operator()(const TileKey& k) const {
    size_t h = std::hash<const void*>()(k.fragment);
    h ^= std::hash<uint64_t>()(k.tile) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= std::hash<int>()(k.field) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
  }
};

class TileCache {
 public:
  explicit TileCache(uint64_t budget_bytes) : budget_(budget_bytes) {}

  std::shared_ptr<const DecodedTile> Get(const TileKey& key);
  bool Contains(const TileKey& key) const;
  // `fragment` is key.fragment's owner, kept while the tile is cached.
  void Put(const TileKey& key, std::shared_ptr<const DecodedTile> tile,
           std::shared_ptr<const FragmentMetadata> fragment);
  uint64_t used_bytes() const;
  uint64_t budget_bytes() const { return budget_; }

 private:
  static uint64_t SizeOf(const DecodedTile& t) {
    return t.fixed.size() + t.var.size() + t.offsets.size() * 8 + t.validity.size();
  }
  struct Entry {
    TileKey key;
    std::shared_ptr<const DecodedTile> tile;
    std::shared_ptr<const FragmentMetadata> fragment;
  };
  mutable std::mutex mu_;
  uint64_t budget_;
  uint64_t used_ = 0;
  std::list<Entry> lru_;
  std::unordered_map<TileKey, std::list<Entry>::iterator, TileKeyHash> map_;
};

}  // namespace tiledbfs::core
