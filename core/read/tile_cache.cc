#include "core/read/tile_cache.h"

#include <algorithm>

#include "core/util/parallel.h"

namespace tiledbfs::core {

namespace {
constexpr int kAheadNice = 10;
}  // namespace

TileCache::~TileCache() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    ahead_queue_.clear();
  }
  ahead_ready_.notify_all();
  for (auto& t : ahead_workers_) t.join();
}

std::shared_ptr<const DecodedTile> TileCache::Get(const TileKey& key) {
  std::unique_lock<std::mutex> lock(mu_);
  read_seen_ = true;
  decoded_.wait(lock, [&] { return decoding_.count(key) == 0; });
  auto it = map_.find(key);
  if (it == map_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it->second);
  Entry& e = *it->second;
  if (e.ahead) {
    e.ahead = false;
    ahead_bytes_ -= std::min(ahead_bytes_, SizeOf(*e.tile));
  }
  return e.tile;
}

bool TileCache::Contains(const TileKey& key) const {
  std::lock_guard<std::mutex> lock(mu_);
  return map_.count(key) != 0 || decoding_.count(key) != 0;
}

bool TileCache::BeginDecode(const TileKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  read_seen_ = true;
  if (map_.count(key) != 0) return false;
  return decoding_.insert(key).second;
}

std::shared_ptr<const DecodedTile> TileCache::EndDecode(
    const TileKey& key, std::shared_ptr<const DecodedTile> tile,
    std::shared_ptr<const FragmentMetadata> fragment) {
  std::shared_ptr<const DecodedTile> result;
  {
    std::lock_guard<std::mutex> lock(mu_);
    decoding_.erase(key);
    if (tile) result = PutLocked(key, std::move(tile), std::move(fragment), false);
  }
  decoded_.notify_all();
  return result;
}

Result<std::shared_ptr<const DecodedTile>> TileCache::GetOrDecode(
    const TileKey& key, const std::function<Result<DecodedTile>()>& decode,
    std::shared_ptr<const FragmentMetadata> fragment) {
  // Not claimed: cached (Get gives it), or being decoded (Get waits). Again
  // if it was dropped from the cache in between.
  while (!BeginDecode(key)) {
    if (auto tile = Get(key)) return tile;
  }
  std::shared_ptr<const DecodedTile> tile;
  try {
    Result<DecodedTile> got = decode();
    if (!got.ok()) {
      EndDecode(key, nullptr, nullptr);
      return got.error();
    }
    tile = std::make_shared<const DecodedTile>(std::move(got).value());
  } catch (...) {
    EndDecode(key, nullptr, nullptr);  // the claim ends, or its waiters wait forever
    throw;
  }
  return EndDecode(key, std::move(tile), std::move(fragment));
}

std::shared_ptr<const DecodedTile> TileCache::Put(
    const TileKey& key, std::shared_ptr<const DecodedTile> tile,
    std::shared_ptr<const FragmentMetadata> fragment) {
  std::lock_guard<std::mutex> lock(mu_);
  return PutLocked(key, std::move(tile), std::move(fragment), false);
}

std::shared_ptr<const DecodedTile> TileCache::PutLocked(
    const TileKey& key, std::shared_ptr<const DecodedTile> tile,
    std::shared_ptr<const FragmentMetadata> fragment, bool ahead) {
  if (auto it = map_.find(key); it != map_.end()) return it->second->tile;
  const uint64_t size = SizeOf(*tile);
  if (size > budget_) return tile;
  std::shared_ptr<const DecodedTile> result = tile;
  used_ += size;
  if (ahead) ahead_bytes_ += size;
  lru_.push_front(Entry{key, std::move(tile), std::move(fragment), ahead});
  map_[key] = lru_.begin();
  uint64_t evicted = 0;
  while (used_ > budget_ && !lru_.empty()) {
    const Entry& out = lru_.back();
    const uint64_t out_size = SizeOf(*out.tile);
    used_ -= out_size;
    evicted += out_size;
    if (out.ahead) ahead_bytes_ -= std::min(ahead_bytes_, out_size);
    map_.erase(out.key);
    lru_.pop_back();
  }
  // Where the process holds too much, the policy gives the freed memory
  // back (rare, so under the lock).
  if (evicted > 0 && heap_) heap_->Freed(evicted);
  peak_ = std::max(peak_, used_);
  WantWarmthLocked();
  return result;
}

void TileCache::WantWarmthLocked() {
  if (warm_wanted_ || warming_ || stopping_ || ahead_off_ || !heap_ || !heap_->Warms()) return;
  if (!StartWarmingLocked()) {
    // Not for the first tile: a mount's first read would wait for the
    // threads to start (and share the cores with the warming).
    if (lru_.size() < 2) return;
    if (warmed_ >= WarmTargetLocked()) return;
  }
  if (ahead_workers_.empty()) {
    // Local arrays' rule for decoding ahead: a thread per usable core, none on one.
    unsigned n = ahead_threads_;
    if (n == 0) {
      const unsigned cores = UsableCores();
      n = cores > 1 ? cores : 0;
    }
    if (!StartAheadLocked(n)) return;
  }
  warm_wanted_ = true;
  ahead_ready_.notify_one();
}

void TileCache::SetHeapPolicy(std::shared_ptr<HeapPolicy> heap) {
  std::lock_guard<std::mutex> lock(mu_);
  heap_ = std::move(heap);
}

void TileCache::WarmForFirstReads() {
  std::lock_guard<std::mutex> lock(mu_);
  if (start_warm_ > 0 || !heap_ || !heap_->Warms()) return;
  start_warm_ = std::min(kWarmAhead, budget_);
  WantWarmthLocked();
}

bool TileCache::StartWarmingLocked() const { return !read_seen_ && warmed_ < start_warm_; }

uint64_t TileCache::WarmTargetLocked() const {
  // As far ahead as the cache holds already, up to kWarmAhead: a cache of a
  // few small tiles warms little.
  const uint64_t ahead = std::min(kWarmAhead, std::max(peak_, kWarmMin));
  return std::min(budget_, peak_ + ahead);
}

bool TileCache::StartAheadLocked(unsigned n) {
  if (!ahead_workers_.empty()) return true;
  for (unsigned i = 0; i < n; ++i) {
    try {
      ahead_workers_.emplace_back([this] { AheadWorker(); });
    } catch (...) {
      break;  // no thread to be had
    }
  }
  return !ahead_workers_.empty();
}

bool TileCache::Drop(const TileKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = map_.find(key);
  if (it == map_.end()) return false;
  const Entry& e = *it->second;
  const uint64_t size = SizeOf(*e.tile);
  used_ -= std::min(used_, size);
  if (e.ahead) ahead_bytes_ -= std::min(ahead_bytes_, size);
  lru_.erase(it->second);
  map_.erase(it);
  return true;
}

uint64_t TileCache::ahead_room() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ahead_budget() - std::min(ahead_bytes_, ahead_budget());
}

bool TileCache::DecodeAhead(AheadTile tile) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || ahead_off_) return false;
    if (ahead_bytes_ + tile.bytes > ahead_budget()) return false;
    if (ahead_workers_.empty()) {
      unsigned n = ahead_threads_;
      if (n == 0) {
        const unsigned cores = UsableCores();
        n = cores > 1 ? cores : 0;
        // A remote store's round trips overlap the reader even on one core.
        if (n == 0 && tile.fragment && tile.fragment->storage().PreferredParallelism() > 1) n = 1;
      }
      if (!StartAheadLocked(n)) {
        ahead_off_ = true;
        return false;
      }
    }
    ahead_bytes_ += tile.bytes;
    ahead_queue_.push_back(std::move(tile));
  }
  ahead_ready_.notify_one();
  return true;
}

void TileCache::AheadWorker() {
  // Small tiles (fragments of a few cells) are taken many at a time, so
  // that their files are read together (ReadTiles); a big one alone.
  constexpr size_t kBatchTiles = 64;
  constexpr uint64_t kSmallTileBytes = uint64_t{256} << 10;
  std::vector<AheadTile> batch;
  std::vector<TileRequest> requests;
  // Work ahead yields to readers: a reader waiting for its next read's
  // reply (a direct_io read through a mount) runs as soon as it is woken,
  // not after this thread's turn. Nice 10, not 19: a reader that waits for
  // a tile this thread is decoding still gets it soon when other programs
  // keep the cores busy (a tenth of a core's share, not a seventieth).
  LowerThreadPriority(kAheadNice);
  std::unique_lock<std::mutex> lock(mu_);
  ++ahead_lowered_;
  decoded_.notify_all();  // WaitForAheadWorkers
  for (;;) {
    ahead_ready_.wait(lock, [&] { return stopping_ || !ahead_queue_.empty() || warm_wanted_; });
    if (stopping_) return;
    // Tiles first: a reader may be waiting for them; the heap only later.
    if (ahead_queue_.empty()) {
      warm_wanted_ = false;
      warming_ = true;
      // The free heap warm as far as the target, past what the cache holds;
      // at a mount's start a step at a time, until the first read comes.
      const uint64_t target =
          StartWarmingLocked() ? std::min(start_warm_, warmed_ + kWarmStep) : WarmTargetLocked();
      // Held no more than kWarmAhead at once: below the allocator's mmap threshold.
      const uint64_t lead = std::min(kWarmAhead, target - std::min(target, used_));
      const std::shared_ptr<HeapPolicy> heap = heap_;  // set: WantWarmthLocked checked
      lock.unlock();
      const bool warmed = heap->Warm(lead).has_value();
      lock.lock();
      warming_ = false;
      // Out of memory: warm no more (the budget then counts as warm).
      warmed_ = warmed ? std::max(warmed_, target) : budget_;
      WantWarmthLocked();
      decoded_.notify_all();  // WaitForAhead
      continue;
    }
    batch.clear();
    // Where each read is a round trip (S3), up to kBatchTiles tiles (or
    // PreferredParallelism, if more) of one storage, big or small: read in
    // order, their GETs under way at once (ReadTilesEach).
    size_t remote = 0;
    while (!ahead_queue_.empty() && batch.size() < std::max(kBatchTiles, remote)) {
      const AheadTile& next = ahead_queue_.front();
      if (!batch.empty()) {
        const AheadTile& first = batch.front();
        if (next.encrypted != first.encrypted) break;
        if (remote > 0) {
          if (!next.fragment || &next.fragment->storage() != &first.fragment->storage()) break;
        } else if (next.bytes > kSmallTileBytes || first.bytes > kSmallTileBytes) {
          break;
        }
      }
      AheadTile job = std::move(ahead_queue_.front());
      ahead_queue_.pop_front();
      ahead_bytes_ -= std::min(ahead_bytes_, job.bytes);
      // Read already, or being decoded by a reader: nothing to do.
      if (map_.count(job.key) != 0 || !decoding_.insert(job.key).second) continue;
      if (batch.empty()) {
        const size_t p = job.fragment ? job.fragment->storage().PreferredParallelism() : 1;
        remote = p > 1 ? p : 0;
      }
      batch.push_back(std::move(job));
    }
    if (batch.empty()) {
      decoded_.notify_all();  // WaitForAhead
      continue;
    }
    ahead_running_ += batch.size();
    lock.unlock();
    // Each tile is cached as soon as it is decoded (a reader waiting for it
    // goes on). A failed decode is left for the reader, which decodes the
    // tile again and reports the error.
    std::vector<bool> ended(batch.size(), false);  // mu_
    auto end = [&](size_t k, std::shared_ptr<const DecodedTile> tile) {
      {
        std::lock_guard<std::mutex> hold(mu_);
        if (ended[k]) return;
        ended[k] = true;
        decoding_.erase(batch[k].key);
        if (tile) PutLocked(batch[k].key, std::move(tile), batch[k].fragment, true);
      }
      decoded_.notify_all();
    };
    try {
      requests.clear();
      for (const AheadTile& job : batch)
        requests.push_back({job.fragment.get(), job.field, job.key.tile});
      // One thread to decode local tiles: there is a worker per core already.
      ReadTilesEach(
          requests, batch.front().encrypted, 1,
          [&](size_t k, Result<DecodedTile> got) {
            std::shared_ptr<const DecodedTile> tile;
            try {
              if (got.ok()) tile = std::make_shared<const DecodedTile>(std::move(got).value());
            } catch (...) {
              // Out of memory: the reader will try again and report it.
            }
            end(k, std::move(tile));
          },
          /*ahead=*/true);
    } catch (...) {
      // Out of memory: the reader will try again and report it.
    }
    for (size_t k = 0; k < batch.size(); ++k) end(k, nullptr);
    lock.lock();
    ahead_running_ -= batch.size();
    decoded_.notify_all();
  }
}

void TileCache::WaitForAhead() {
  std::unique_lock<std::mutex> lock(mu_);
  decoded_.wait(lock, [&] {
    return ahead_queue_.empty() && ahead_running_ == 0 && !warm_wanted_ && !warming_;
  });
}

uint64_t TileCache::warmed_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return warmed_;
}

unsigned TileCache::WaitForAheadWorkers() {
  std::unique_lock<std::mutex> lock(mu_);
  decoded_.wait(lock, [&] { return stopping_ || ahead_lowered_ == ahead_workers_.size(); });
  return ahead_lowered_;
}

uint64_t TileCache::used_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

namespace {

uint64_t MapBytes(const ChunkMap& m) { return m.size() * sizeof(ChunkSpan) + 128; }

}  // namespace

std::shared_ptr<const ChunkMap> TileCache::GetChunkMap(const TileKey& key) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = maps_.find(key);
  if (it == maps_.end()) return nullptr;
  map_lru_.splice(map_lru_.begin(), map_lru_, it->second);
  return it->second->map;
}

void TileCache::PutChunkMap(const TileKey& key, std::shared_ptr<const ChunkMap> map,
                            std::shared_ptr<const FragmentMetadata> fragment) {
  if (!map) return;
  const uint64_t budget = std::max(budget_ / 64, uint64_t{1} << 20);
  const uint64_t size = MapBytes(*map);
  std::lock_guard<std::mutex> lock(mu_);
  if (size > budget || maps_.count(key) != 0) return;
  map_lru_.push_front(MapEntry{key, std::move(map), std::move(fragment)});
  maps_[key] = map_lru_.begin();
  maps_bytes_ += size;
  while (maps_bytes_ > budget && !map_lru_.empty()) {
    maps_bytes_ -= MapBytes(*map_lru_.back().map);
    maps_.erase(map_lru_.back().key);
    map_lru_.pop_back();
  }
}

bool StreamBudget::Take(uint64_t had, uint64_t want) {
  std::lock_guard<std::mutex> lock(mu_);
  used_ -= std::min(used_, had);
  if (want > limit_ || used_ > limit_ - want) return false;
  used_ += want;
  return true;
}

void StreamBudget::Give(uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  used_ -= std::min(used_, bytes);
}

uint64_t StreamBudget::used() const {
  std::lock_guard<std::mutex> lock(mu_);
  return used_;
}

StreamShare& StreamShare::operator=(StreamShare&& o) noexcept {
  if (this != &o) {
    Drop();
    budget_ = std::move(o.budget_);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

bool StreamShare::Ask(const std::shared_ptr<StreamBudget>& budget, uint64_t bytes) {
  if (budget != budget_) Drop();
  budget_ = budget;
  const bool ok = budget_->Take(bytes_, bytes);
  bytes_ = ok ? bytes : 0;
  return ok;
}

void StreamShare::Drop() {
  if (budget_ && bytes_ > 0) budget_->Give(bytes_);
  bytes_ = 0;
}

}  // namespace tiledbfs::core
