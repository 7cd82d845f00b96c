// Decoded tiles shared by every read of an array, within a byte budget
// (least recently used out first). A tile handed out stays valid for its
// holder after eviction.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

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

// Tiles a reader used, with their keys.
using HeldTiles = std::vector<std::pair<TileKey, std::shared_ptr<const DecodedTile>>>;

// What one reader (an open file, a layout pass) keeps between its reads:
// the tiles its last read of each field used. A file read piece by piece
// thus decodes each tile once even when the shared cache has no room to
// keep it (a small cache_size, many readers at once). It is outside the
// cache's budget, up to a sixteenth of it or 16 MiB per reader and field
// (GatherAttribute keeps the tiles its read used last).
//
// With `parts` set, a read that does not start where the reader's last read
// of the field ended (a seek: random access) decodes, of a tile neither held
// nor cached, only the chunks holding the cells it needs (ReadTilePart), for
// fixed-size fields without validity. Such parts are not kept.
struct ReadState {
  std::unordered_map<std::string, HeldTiles> held;  // by field name
  bool parts = false;
  std::unordered_map<std::string, uint64_t> next;  // by field: the cell after the last read
};

class TileCache {
 public:
  explicit TileCache(uint64_t budget_bytes) : budget_(budget_bytes) {}

  std::shared_ptr<const DecodedTile> Get(const TileKey& key);
  bool Contains(const TileKey& key) const;
  // `fragment` is key.fragment's owner, kept while the tile is cached.
  // Returns the tile to use: the one already cached under `key` if another
  // reader put it first (readers then share one copy), else `tile`.
  std::shared_ptr<const DecodedTile> Put(const TileKey& key,
                                         std::shared_ptr<const DecodedTile> tile,
                                         std::shared_ptr<const FragmentMetadata> fragment);
  uint64_t used_bytes() const;
  uint64_t budget_bytes() const { return budget_; }
  // The bytes a tile counts for.
  static uint64_t SizeOf(const DecodedTile& t) {
    return t.fixed.size() + t.var.size() + t.offsets.size() * 8 + t.validity.size();
  }

 private:
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
