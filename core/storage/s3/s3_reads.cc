// S3Storage's reads (s3_storage.h): whole small files kept in memory or
// in the FileStash, ranged GETs, and batches coalesced into fewer GETs.
#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "core/storage/s3/coalesce.h"
#include "core/storage/s3/s3_storage.h"

namespace tiledbfs::core::s3 {
namespace {
// ETags as a listing's XML and a GET's header give them: quoted or not.
bool SameETag(std::string_view a, std::string_view b) {
  auto bare = [](std::string_view e) {
    if (e.rfind("W/", 0) == 0) e.remove_prefix(2);
    if (e.size() >= 2 && e.front() == '"' && e.back() == '"') e = e.substr(1, e.size() - 2);
    return e;
  };
  return !a.empty() && bare(a) == bare(b);
}

}  // namespace

std::shared_ptr<const ByteVec> S3Storage::SmallCached(const std::string& path) const {
  std::lock_guard<std::mutex> lock(small_mu_);
  auto it = small_.find(path);
  return it == small_.end() ? nullptr : it->second;
}

void S3Storage::KeepSmall(const std::string& path, std::shared_ptr<const ByteVec> bytes) const {
  std::lock_guard<std::mutex> lock(small_mu_);
  if (small_.count(path) != 0) return;
  small_bytes_ += bytes->size();
  small_.emplace(path, std::move(bytes));
  small_order_.push_back(path);
  while (small_bytes_ > kSmallCacheBytes && !small_order_.empty()) {
    auto it = small_.find(small_order_.front());
    small_bytes_ -= it->second->size();
    small_.erase(it);
    small_order_.pop_front();
  }
}

Result<std::shared_ptr<const ByteVec>> S3Storage::Stashed(const std::string& path) const {
  if (!stash_ || !kept_file_(path)) return std::shared_ptr<const ByteVec>();
  std::optional<Known> k = KnownEntry(path);
  if (!k || k->version.empty()) {
    // Its size and version from a listing: its folder's when that may
    // change (listed anyway), else the tree of its nearest folder that may.
    std::string top = SplitParent(path).first;
    const bool immutable = immutable_folder_ && immutable_folder_(top);
    while (!top.empty() && immutable_folder_ && immutable_folder_(top)) {
      top = SplitParent(top).first;
    }
    if (immutable) {
      (void)GetTree(top);
    } else {
      (void)GetListing(top);
    }
    k = KnownEntry(path);
  }
  if (!k || k->version.empty() || k->size == 0 || k->size > kMaxStashedBytes) {
    return std::shared_ptr<const ByteVec>();
  }
  const std::string where = Where(path);
  if (std::optional<ByteVec> got = stash_->Get(where, k->size, k->version)) {
    counters_.stashed.fetch_add(1, std::memory_order_relaxed);
    auto whole = std::make_shared<const ByteVec>(std::move(*got));
    KeepSmall(path, whole);
    return whole;
  }
  ASSIGN_OR_RETURN(Range r, GetRange(path, 0, k->size, false));
  auto whole = std::make_shared<const ByteVec>(std::move(r.bytes));
  // Stashed only as the version listed: not bytes of a file rewritten
  // since the listing (its GET tells another ETag or size).
  if (r.total == k->size && SameETag(r.etag, k->version)) {
    stash_->Put(where, k->size, k->version, *whole);
  }
  KeepSmall(path, whole);
  return whole;
}

Result<ByteVec> S3Storage::Read(const std::string& path, uint64_t offset, uint64_t n) const {
  std::shared_ptr<const ByteVec> whole = SmallCached(path);
  if (!whole) {
    ASSIGN_OR_RETURN(whole, Stashed(path));
  }
  if (!whole) {
    const std::optional<uint64_t> size = KnownSize(path);
    if (!size || *size > kSmallFileBytes || *size == 0) {
      ASSIGN_OR_RETURN(Range r, GetRange(path, offset, n, false));
      return std::move(r.bytes);
    }
    ASSIGN_OR_RETURN(Range r, GetRange(path, 0, *size, false));
    whole = std::make_shared<const ByteVec>(std::move(r.bytes));
    KeepSmall(path, whole);
  }
  if (offset > whole->size() || n > whole->size() - offset) {
    return Error::Corrupt(
        fmt::format("{}: the file is {} bytes, {} wanted at offset {} (truncated)", Where(path),
                    whole->size(), n, offset));
  }
  const auto from = whole->begin() + static_cast<ptrdiff_t>(offset);
  return ByteVec(from, from + static_cast<ptrdiff_t>(n));
}

Result<SmallFile> S3Storage::ReadIfSmall(const std::string& path, uint64_t max_bytes) const {
  SmallFile f;
  std::shared_ptr<const ByteVec> whole = SmallCached(path);
  if (!whole) {
    ASSIGN_OR_RETURN(whole, Stashed(path));
  }
  std::optional<uint64_t> size = whole ? std::optional<uint64_t>(whole->size()) : KnownSize(path);
  if (!size) {
    // One GET of the file's start: its Content-Range tells the size, and a
    // small file comes whole.
    const uint64_t ask = std::max(max_bytes, kSmallFileBytes);
    ASSIGN_OR_RETURN(Range r, GetRange(path, 0, ask, true));
    size = r.total;
    if (r.total <= ask) {
      if (r.bytes.size() != r.total) {
        return Error::Io(fmt::format("{}: {} bytes came of a {}-byte file", Where(path),
                                     r.bytes.size(), r.total));
      }
      whole = std::make_shared<const ByteVec>(std::move(r.bytes));
      if (whole->size() <= kSmallFileBytes) KeepSmall(path, whole);
    }
  }
  f.size = *size;
  if (f.size <= max_bytes) {
    if (whole) {
      f.bytes = *whole;
    } else {
      ASSIGN_OR_RETURN(ByteVec bytes, Read(path, 0, f.size));
      f.bytes = std::move(bytes);
    }
  }
  return f;
}

std::vector<Result<ByteVec>> S3Storage::ReadMany(std::span<const ReadRequest> requests,
                                                 size_t spread) const {
  std::vector<Result<ByteVec>> out(requests.size(), Error::Io("not read"));
  CoalesceOptions o;
  o.gap = kCoalesceGap;
  o.max_bytes = kMaxCoalescedBytes;
  o.parallel = static_cast<unsigned>(spread > 0 ? std::min<size_t>(spread, config_.parallel)
                                                : config_.parallel);
  o.min_bytes = kMinSplitBytes;
  std::vector<size_t> overflowed;
  const std::vector<PlannedGet> gets = PlanGets(requests, o, &overflowed);
  for (size_t i : overflowed) {
    const ReadRequest& r = requests[i];
    out[i] = Error::InvalidArgument(
        fmt::format("{}: read of {} at {} overflows", Where(r.path), r.n, r.offset));
  }
  auto run = [&](const PlannedGet& g) {
    Result<ByteVec> got = Read(g.path, g.begin, g.end - g.begin);
    for (size_t i : g.members) {
      if (!got.ok()) {
        out[i] = got.error();
        continue;
      }
      const ReadRequest& r = requests[i];
      if (g.members.size() == 1 && r.offset == g.begin && r.n == got->size()) {
        out[i] = std::move(got);  // the GET is this read: its bytes, not a copy
        break;
      }
      const auto from = got->begin() + static_cast<ptrdiff_t>(r.offset - g.begin);
      out[i] = ByteVec(from, from + static_cast<ptrdiff_t>(r.n));
    }
  };
  const size_t workers = std::min<size_t>(config_.parallel, gets.size());
  if (workers <= 1) {
    for (const PlannedGet& g : gets) run(g);
    return out;
  }
  // Each worker takes the next GET; HttpClient gives each its own handle.
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < gets.size();) run(gets[k]);
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  try {
    for (size_t w = 1; w < workers; ++w) threads.emplace_back(work);
  } catch (const std::system_error&) {
    // No more threads to be had: the ones started (and this one) do it all.
  }
  work();
  for (std::thread& t : threads) t.join();
  return out;
}

}  // namespace tiledbfs::core::s3
