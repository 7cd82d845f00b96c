// Decoded tiles shared by every read of an array, within a byte budget
// (least recently used out first). A tile handed out stays valid for its
// holder after eviction.
#pragma once

#include <array>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "core/read/tile_source.h"
#include "core/read/window_pool.h"
#include "core/util/heap_policy.h"

namespace tiledbfs::core {

// A fragment is named by its address: the cache keeps every fragment it
// holds tiles of alive (Put's `fragment`), so no other fragment can come to
// live at that address while its tiles are cached.
struct TileKey {
  const FragmentMetadata* fragment = nullptr;
  int field = 0;  // footer field index
  uint64_t tile = 0;
  uint32_t chunk = 0;  // 0: the whole tile; k: its chunk k - 1 alone (a part)
  bool operator==(const TileKey&) const = default;
};

struct TileKeyHash {
  size_t operator()(const TileKey& k) const {
    size_t h = std::hash<const void*>()(k.fragment);
    h ^= std::hash<uint64_t>()(k.tile) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= std::hash<int>()(k.field) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    h ^= std::hash<uint32_t>()(k.chunk) + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h;
  }
};

// Tiles a reader used, with their keys.
using HeldTiles = std::vector<std::pair<TileKey, std::shared_ptr<const DecodedTile>>>;

// The bytes of whole tiles that sequential readers' reads cross, summed over
// the readers of a cache (GatherAttribute): a read of a row-major file
// crosses a whole row of tiles (32 tiles of 1 MiB per 1 MiB read of the
// benchmark's dense arrays), all of them held while it runs. Past the
// limit, a reader streams the chunks it needs (ReadTilePart) instead, so
// that many readers at once do not hold a row of whole tiles each.
class StreamBudget {
 public:
  explicit StreamBudget(uint64_t limit) : limit_(limit) {}
  // Replaces a share of `had` bytes by one of `want`: false (the share is
  // then given back, 0) when that would go past the limit.
  bool Take(uint64_t had, uint64_t want);
  void Give(uint64_t bytes);
  uint64_t used() const;

 private:
  mutable std::mutex mu_;
  uint64_t limit_;
  uint64_t used_ = 0;
};

// One reader's share of a StreamBudget, given back when it ends.
class StreamShare {
 public:
  StreamShare() = default;
  ~StreamShare() { Drop(); }
  StreamShare(StreamShare&& o) noexcept
      : budget_(std::move(o.budget_)), bytes_(std::exchange(o.bytes_, 0)) {}
  StreamShare& operator=(StreamShare&& o) noexcept;
  StreamShare(const StreamShare&) = delete;
  StreamShare& operator=(const StreamShare&) = delete;
  // Asks `budget` for a share of `bytes` in place of what it holds; false
  // when refused (it then holds nothing).
  bool Ask(const std::shared_ptr<StreamBudget>& budget, uint64_t bytes);
  void Drop();
  uint64_t bytes() const { return bytes_; }

 private:
  std::shared_ptr<StreamBudget> budget_;
  uint64_t bytes_ = 0;
};

// A part of a tile a reader used (ReadTilePart): cells [first, first +
// tile->cell_num) of the tile `key`.
struct HeldPart {
  TileKey key;
  uint64_t first = 0;
  std::shared_ptr<const DecodedTile> tile;
};

// What one reader (an open file, a layout pass) keeps between its reads:
// the tiles its last read of each field used. A file read piece by piece
// thus decodes each tile once even when the shared cache has no room to
// keep it (a small cache_size, many readers at once). It is outside the
// cache's budget, up to a sixteenth of it or 16 MiB per reader and field
// (GatherAttribute keeps the tiles its read used last).
//
// With `parts` set, for fixed-size fields without validity, a read decodes
// of a tile neither held nor cached only the chunks holding the cells it
// needs (ReadTilePart) when it does not start within or at the end of the
// reader's last read of the field (a seek: random access), or when it does
// but the cache's StreamBudget refuses the whole tiles it crosses (many
// readers at once). The parts a read used are kept for the next one (`held_parts`,
// up to 8 MiB per field).
//
// A read that goes on from where the last one ended (or starts the field)
// with whole tiles also has the tiles of the cells after it decoded in the
// background (TileCache::DecodeAhead), up to a quarter of the cache's
// budget ahead.
struct ReadState {
  std::unordered_map<std::string, HeldTiles> held;                    // by field name
  std::unordered_map<std::string, std::vector<HeldPart>> held_parts;  // by field name
  std::unordered_map<std::string, StreamShare> streams;  // by field: whole tiles streamed
  bool parts = false;
  // By field: the cells of the last read, [first, end). A read from
  // within them or from their end goes on (a reader of a Parquet page
  // reads its header, then the page again from there).
  std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> last;
  // By field: the cells up to which tiles were sent to be decoded ahead,
  // and the tiles sent lately (not to send them again).
  struct Ahead {
    uint64_t to = 0;
    std::unordered_set<TileKey, TileKeyHash> sent;
    // The keys met last, by slot (tile and fragment): a row of tiles
    // crossed again and again is found here without hashing.
    std::array<TileKey, 64> recent{};
  };
  std::unordered_map<std::string, Ahead> ahead;
  // The sparse index window the last read went through (a CellIndex):
  // kept alive for the reader's next read whatever the views' WindowPool
  // lets go meanwhile.
  std::shared_ptr<const void> window;
};

// A tile to decode ahead of its reader: what the decode needs, owned.
struct AheadTile {
  TileKey key;
  std::shared_ptr<const FragmentMetadata> fragment;  // key.fragment's owner
  FieldRef field;
  bool encrypted = false;
  uint64_t bytes = 0;  // an estimate of its decoded size
};

class TileCache {
 public:
  // `ahead_threads`: the threads that decode ahead (0: one per usable core,
  // UsableCores, and none on a single core).
  explicit TileCache(uint64_t budget_bytes, unsigned ahead_threads = 0)
      : budget_(budget_bytes), ahead_threads_(ahead_threads) {}
  // Waits for the decodes under way; drops the ones not started.
  ~TileCache();
  TileCache(const TileCache&) = delete;
  TileCache& operator=(const TileCache&) = delete;

  // The cached tile, or null. A tile being decoded (BeginDecode) is waited
  // for.
  std::shared_ptr<const DecodedTile> Get(const TileKey& key);
  // Cached or being decoded.
  bool Contains(const TileKey& key) const;

  // One decode of a tile at a time: true if the caller is to decode `key`
  // (neither cached nor being decoded); it must then call EndDecode, with
  // the tile or null if the decode failed. Get waits in between.
  bool BeginDecode(const TileKey& key);
  // Puts `tile` (unless null) and wakes the waiting readers. Returns Put's.
  std::shared_ptr<const DecodedTile> EndDecode(const TileKey& key,
                                               std::shared_ptr<const DecodedTile> tile,
                                               std::shared_ptr<const FragmentMetadata> fragment);
  // The tile cached under `key`, else `decode`'s, put in the cache. The
  // decode is claimed (BeginDecode) so that no one else decodes the tile
  // meanwhile; a tile being decoded (ahead, or by another reader) is
  // waited for instead. Errors: decode's, never cached (a kCancelled decode,
  // core/util/stop.h, says nothing about the tile).
  Result<std::shared_ptr<const DecodedTile>> GetOrDecode(
      const TileKey& key, const std::function<Result<DecodedTile>()>& decode,
      std::shared_ptr<const FragmentMetadata> fragment);

  // Decoding ahead of sequential readers, on a thread per usable core
  // started on first use, at a lower priority than the readers (nice 10
  // more: LowerThreadPriority); on a single core, not at all for local
  // arrays (no other core for the decodes to overlap the reader with) and
  // on one thread for remote ones (the round trips overlap it). A worker
  // takes small tiles many at a time, a big one alone, and tiles of a
  // remote storage up to 64 (or its PreferredParallelism) at once, read in
  // order with their GETs in parallel (ReadTilesEach), each cached as soon
  // as it is decoded. The tiles
  // decoded ahead and not yet read, with those waiting to be, are kept to a
  // quarter of the budget over all readers (so that they do not push one
  // another out): DecodeAhead returns false, sending nothing, when `tile`
  // would go past it.
  bool DecodeAhead(AheadTile tile);
  uint64_t ahead_budget() const { return budget_ / 4; }
  // What of ahead_budget() the tiles decoded ahead, or waiting to be, leave.
  uint64_t ahead_room() const;
  // Returns once no tile waits to be decoded ahead or is being, and no
  // warming of the heap is wanted or under way (tests).
  void WaitForAhead();
  // How the cache's memory meets the allocator (core/util/heap_policy.h),
  // given by its owner once it serves (a daemon: after its fork, as the
  // threads that warm must be); none by default: nothing warmed, nothing
  // trimmed. Tiles evicted are told to it (HeapPolicy::Freed).
  void SetHeapPolicy(std::shared_ptr<HeapPolicy> heap);
  // The bytes the cache can reach on warm pages (HeapPolicy::Warm): as the
  // cache grows, a thread that decodes ahead keeps the free heap past what
  // it holds warm (as much again as it held at most, at least kWarmMin and
  // at most kWarmAhead) before the decodes need it, so that their tiles
  // land on pages already faulted in, until the budget is warm (then
  // evicted tiles' memory is reused). From the second tile cached on. Not on
  // a single core (no other core to take the faults on), nor without a
  // policy that warms.
  uint64_t warmed_bytes() const;
  // Warms the heap for a mount's first tiles, which otherwise land on fresh
  // pages (the second tile's warming comes too late for them): up to
  // kWarmAhead (no more than the budget), a kWarmStep at a time on a thread
  // that decodes ahead, started here, until the first read comes (Get,
  // BeginDecode). Warming while a read runs slowed it by more than the
  // faults it spared it (benchmarks/results/2026-11-29-session-39-warm-at-start.md).
  // Costs that much resident memory from the start. Not on a single core,
  // nor without a policy that warms.
  void WarmForFirstReads();
  static constexpr uint64_t kWarmStep = uint64_t{1} << 20;
  static constexpr uint64_t kWarmMin = uint64_t{1} << 20;
  static constexpr uint64_t kWarmAhead = uint64_t{16} << 20;
  // Returns once every thread started to decode ahead runs at its lower
  // priority; their number (tests: a thread started is not yet running).
  unsigned WaitForAheadWorkers();

  // `fragment` is key.fragment's owner, kept while the tile is cached.
  // Returns the tile to use: the one already cached under `key` if another
  // reader put it first (readers then share one copy), else `tile`.
  std::shared_ptr<const DecodedTile> Put(const TileKey& key,
                                         std::shared_ptr<const DecodedTile> tile,
                                         std::shared_ptr<const FragmentMetadata> fragment);
  // Takes `key`'s tile out of the cache (its holders keep it): for a tile
  // its reader is done with, in a view too big for the cache to keep. True
  // if it was cached.
  bool Drop(const TileKey& key);
  uint64_t used_bytes() const;
  uint64_t budget_bytes() const { return budget_; }

  // Sequential readers streaming whole tiles share half the budget.
  const std::shared_ptr<StreamBudget>& stream_budget() const { return stream_budget_; }
  // The sparse index windows views keep between reads, for every view
  // these tiles serve (one pool per mount, as the cache): a quarter of the
  // budget, two windows of IndexWindowCells(budget).
  const std::shared_ptr<WindowPool>& window_pool() const { return window_pool_; }

  // Where the chunks of tiles read in parts lie (ReadTilePart's map), least
  // recently used out first, within a small budget of their own (the
  // larger of a 64th of the budget and 1 MiB). `fragment` is key.fragment's
  // owner, kept while the map is.
  std::shared_ptr<const ChunkMap> GetChunkMap(const TileKey& key);
  void PutChunkMap(const TileKey& key, std::shared_ptr<const ChunkMap> map,
                   std::shared_ptr<const FragmentMetadata> fragment);
  // The bytes a tile counts for: its buffers' capacities, the memory they
  // hold.
  static uint64_t SizeOf(const DecodedTile& t) {
    return t.fixed.capacity() + t.var.capacity() + t.offsets.capacity() * 8 + t.validity.capacity();
  }

 private:
  struct Entry {
    TileKey key;
    std::shared_ptr<const DecodedTile> tile;
    std::shared_ptr<const FragmentMetadata> fragment;
    bool ahead = false;  // decoded ahead, not read yet (counted in ahead_bytes_)
  };
  // Put's body, with mu_ held.
  std::shared_ptr<const DecodedTile> PutLocked(const TileKey& key,
                                               std::shared_ptr<const DecodedTile> tile,
                                               std::shared_ptr<const FragmentMetadata> fragment,
                                               bool ahead);
  void AheadWorker();
  // Starts the threads that decode ahead, if none were: `n` of them (none
  // if 0). False if none runs.
  bool StartAheadLocked(unsigned n);
  // Asks a thread to warm the heap if the cache grew near what is warm.
  void WantWarmthLocked();
  // The bytes of heap to have warm for what the cache held at most.
  uint64_t WarmTargetLocked() const;
  // Warming for the first reads, and none has come yet.
  bool StartWarmingLocked() const;

  mutable std::mutex mu_;
  uint64_t budget_;
  uint64_t used_ = 0;
  std::list<Entry> lru_;
  std::unordered_map<TileKey, std::list<Entry>::iterator, TileKeyHash> map_;
  // Tiles being decoded (BeginDecode .. EndDecode), and their waiters.
  std::unordered_set<TileKey, TileKeyHash> decoding_;
  std::condition_variable decoded_;
  // Decoding ahead: tiles waiting, bytes ahead (cached unread + waiting).
  std::deque<AheadTile> ahead_queue_;
  uint64_t ahead_bytes_ = 0;
  int ahead_running_ = 0;       // workers decoding
  unsigned ahead_lowered_ = 0;  // workers that lowered their priority
  std::condition_variable ahead_ready_;
  bool stopping_ = false;
  std::vector<std::thread> ahead_workers_;
  unsigned ahead_threads_;  // as constructed (0: one per usable core, none on one)
  bool ahead_off_ = false;  // no thread started: a single core, or none to be had
  // Warming the heap (mu_): the most the cache held, the bytes it can reach
  // on warm pages (warmed_bytes), and a warming wanted or under way.
  uint64_t peak_ = 0;
  uint64_t warmed_ = 0;
  uint64_t start_warm_ = 0;  // WarmForFirstReads' target
  bool read_seen_ = false;   // a reader asked for a tile
  bool warm_wanted_ = false;
  bool warming_ = false;
  std::shared_ptr<HeapPolicy> heap_;  // SetHeapPolicy
  std::shared_ptr<StreamBudget> stream_budget_ = std::make_shared<StreamBudget>(budget_ / 2);
  std::shared_ptr<WindowPool> window_pool_ = std::make_shared<WindowPool>(budget_ / 4);
  // Chunk maps (mu_).
  struct MapEntry {
    TileKey key;
    std::shared_ptr<const ChunkMap> map;
    std::shared_ptr<const FragmentMetadata> fragment;
  };
  std::list<MapEntry> map_lru_;
  std::unordered_map<TileKey, std::list<MapEntry>::iterator, TileKeyHash> maps_;
  uint64_t maps_bytes_ = 0;
};

}  // namespace tiledbfs::core
