// An array or group under an S3 prefix, behind the Storage interface:
// s3://bucket/prefix is the root, and "a/b" is the object prefix/a/b.
//
// Requests: ListObjectsV2 (prefix, delimiter '/', continuation tokens) for a
// folder, ranged GET for bytes; never HEAD. Folders are what the listing's
// CommonPrefixes say (S3 has no empty folders: an empty listing is kNotFound).
//
// Caching, so that opening an array lists each folder once and a `stat` or
// `ls -l` costs no request per entry:
//   - a folder's listing answers List, Size, Exists and IsDir for its
//     entries. Folders the format says are immutable once written (Open's
//     `immutable_folder`: fragments') are kept for the storage's life.
//     Other folders are listed again when their listing is older than
//     S3Config::recheck_seconds; a listing of more than Limits::max_files
//     entries is kOutOfMemory;
//   - sizes learned from a GET's Content-Range are kept (TileDB never
//     rewrites a file in place: names carry a UUID);
//   - a listing that failed is answered again, failed, until it is due.
//     Immutable folders' listings are kept only when they succeeded; one cut
//     short by a stop of the process (kCancelled) is not kept;
//   - a file of at most kSmallFileBytes (schemas, fragment metadata, commit
//     lists) is fetched whole by its first read and kept (up to
//     kSmallCacheBytes in all), so a footer, then its sections, cost one GET;
//   - ReadIfSmall of a file whose size is not known is one GET of its first
//     max(max_bytes, kSmallFileBytes), which also tells its size;
//   - with a FileStash (issue 51), a file Open's `kept_file` names, of at
//     most kMaxStashedBytes, is read whole from the stash under its
//     location, size and ETag, else fetched whole by one GET and stashed
//     (when the GET's ETag is the listing's). Its size and ETag come from
//     the listings: a file in an immutable folder whose entry is not known
//     yet has the tree of its nearest mutable ancestor listed (ListTree:
//     a LIST per 1000 files, not one per folder), which later ListTree
//     calls share while it is fresh.
//
// Parallelism: at most S3Config::parallel GETs are under way at once over
// all callers (ReadMany's, footer loads', readers'), so that the buffers in
// flight stay within parallel x the largest GET.
//
// Faults: 5xx, 429, connection failures and bodies shorter than the range
// asked are retried with exponential backoff and jitter, up to
// S3Config::max_attempts; then kIo naming the object, the HTTP status and
// the attempts. A body is served only when its length and Content-Range say
// it is exactly the bytes asked for. 404 is kNotFound; 403 kAccessDenied
// ("access denied" with bucket and key). Secrets never appear in errors.
// Once the process is stopping (core/util/stop.h), every request ends
// within HttpClient::kStopPoll with kCancelled, and neither retries nor
// waits out a backoff.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "core/storage/s3/http_client.h"
#include "core/storage/s3/list_xml.h"
#include "core/storage/s3/s3_config.h"
#include "core/storage/storage.h"
#include "core/storage/storage_options.h"
#include "core/util/limits.h"

namespace tiledbfs::core::s3 {

// "s3://bucket/a/b/" -> {"bucket", "a/b"}. Errors: kInvalidArgument (not
// s3://, no bucket, a "." or ".." part, an empty part).
struct S3Location {
  std::string bucket;
  std::string prefix;  // no leading or trailing '/'; may be empty
};
Result<S3Location> ParseS3Uri(std::string_view uri);
bool IsS3Uri(std::string_view path);

// Requests made, by kind (for tests and benchmarks).
struct S3Counters {
  std::atomic<uint64_t> lists{0};
  std::atomic<uint64_t> gets{0};
  std::atomic<uint64_t> stashed{0};  // whole files the FileStash answered
  std::atomic<uint64_t> retries{0};
  std::atomic<uint64_t> bytes{0};
};

class S3Storage final : public Storage {
 public:
  // Opens s3://bucket/prefix and lists its root once (so a missing bucket,
  // an unreachable endpoint or refused credentials fail here). Errors:
  // kInvalidArgument (bad URI), kNotFound (no such bucket, nothing under the
  // prefix), kAccessDenied (403), kIo (endpoint unreachable after the
  // retries), kOutOfMemory (the root lists more than limits.max_files).
  // `kept_file` and `stash`: both or neither (StorageOptions).
  static Result<std::shared_ptr<S3Storage>> Open(std::string_view uri, const S3Config& config,
                                                 const Limits& limits,
                                                 ImmutableFolder immutable_folder,
                                                 KeptFile kept_file = nullptr,
                                                 std::shared_ptr<FileStash> stash = nullptr);

  Result<ByteVec> Read(const std::string& path, uint64_t offset, uint64_t n) const override;
  Result<uint64_t> Size(const std::string& path) const override;
  Result<SmallFile> ReadIfSmall(const std::string& path, uint64_t max_bytes) const override;
  // Ranges of one file closer than kCoalesceGap are fetched by one GET (the
  // gap read through), a batch being cut into about S3Config::parallel GETs
  // of at least kMinSplitBytes and at most kMaxCoalescedBytes each
  // (PlanGets); the GETs run on up to S3Config::parallel threads. With
  // `spread` 1, the batch is not cut: adjacent ranges make GETs of up to
  // kMaxCoalescedBytes.
  std::vector<Result<ByteVec>> ReadMany(std::span<const ReadRequest> requests,
                                        size_t spread = 0) const override;
  static constexpr uint64_t kCoalesceGap = uint64_t{64} << 10;
  static constexpr uint64_t kMaxCoalescedBytes = uint64_t{16} << 20;
  static constexpr uint64_t kMinSplitBytes = uint64_t{256} << 10;
  static constexpr uint64_t kSmallFileBytes = uint64_t{64} << 10;
  static constexpr uint64_t kSmallCacheBytes = uint64_t{32} << 20;
  static constexpr uint64_t kMaxStashedBytes = uint64_t{8} << 20;
  Result<std::vector<DirEntry>> List(const std::string& dir) const override;
  // One LIST without a delimiter, paginated; it also tells each file's size
  // (Size then asks nothing of them). Kept, and answered again, while
  // fresh as a folder's listing is (S3Config::recheck_seconds).
  Result<std::vector<DirEntry>> ListTree(const std::string& dir, size_t max_files) const override;
  bool Exists(const std::string& path) const override;
  bool IsDir(const std::string& path) const override;
  std::string root() const override { return root_; }
  size_t PreferredParallelism() const override { return config_.parallel; }

  const S3Counters& counters() const { return counters_; }

 private:
  S3Storage(S3Location location, S3Config config);

  struct Listing {
    Result<std::vector<DirEntry>> entries = std::vector<DirEntry>{};
    std::chrono::steady_clock::time_point at;
  };
  struct Slot {
    std::mutex mu;  // held while listing: one LIST per folder at a time
    std::shared_ptr<const Listing> listing;
  };
  // The slot of `dir` in `slots` (slots_ or trees_), made if missing.
  std::shared_ptr<Slot> SlotOf(std::unordered_map<std::string, std::shared_ptr<Slot>>& slots,
                               const std::string& dir) const;
  // The folder's listing, from the cache when fresh, else listed now.
  std::shared_ptr<const Listing> GetListing(const std::string& dir) const;
  // The cached listing of `dir` if fresh, without a request.
  std::shared_ptr<const Listing> CachedListing(const std::string& dir) const;
  bool Fresh(const std::string& dir, const Listing& l) const;
  Result<std::vector<DirEntry>> ListNow(const std::string& dir) const;
  // The pages of a LIST of `dir`'s prefix, with '/' as delimiter or not,
  // each given to `on_page` once its keys are checked to be under it.
  Status ListPages(const std::string& dir, bool delimited,
                   const std::function<Status(const ListPage&)>& on_page) const;
  // The entry `path` in its parent's listing: nullopt if the listing says
  // it is not there; an error if the listing failed. With `fetch` false,
  // only a cached listing answers (kIo "not cached" otherwise).
  Result<std::optional<DirEntry>> Lookup(const std::string& path, bool fetch) const;

  struct Range {
    ByteVec bytes;
    uint64_t total = 0;  // the object's size
    std::string etag;    // as the server sent it; empty if none
  };
  // GET of [offset, offset + n). With `allow_short`, a file that ends sooner
  // gives its bytes up to its end; without, that is kCorrupt ("truncated").
  Result<Range> GetRange(const std::string& path, uint64_t offset, uint64_t n,
                         bool allow_short) const;
  std::string Url(const std::string& key, const std::string& query) const;
  std::vector<std::string> Headers(const std::string& key,
                                   const std::vector<std::pair<std::string, std::string>>& query,
                                   const std::string& range) const;
  std::string Key(const std::string& path) const;
  std::string Where(const std::string& path) const;  // "s3://bucket/prefix/path"
  // "a/b/c" -> {"a/b", "c"}; "c" -> {"", "c"}.
  static std::pair<std::string, std::string> SplitParent(const std::string& path);
  // What the listings (or a GET's Content-Range: no version) said of a file.
  struct Known {
    uint64_t size = 0;
    std::string version;
  };
  void LearnSize(const std::string& path, uint64_t size, const std::string& version = {}) const;
  std::optional<Known> KnownEntry(const std::string& path) const;
  std::optional<uint64_t> KnownSize(const std::string& path) const;
  // The tree listing of `dir` (ListTree), from the cache when fresh.
  std::shared_ptr<const Listing> GetTree(const std::string& dir) const;
  Result<std::vector<DirEntry>> ListTreeNow(const std::string& dir) const;
  // A kept file whole, from the memory cache, the stash or one GET (then
  // stashed); nullptr when the stash does not apply to it (not kept, too
  // big, no version known) or the GET failed (the caller reads it as any
  // other file and meets the error).
  Result<std::shared_ptr<const ByteVec>> Stashed(const std::string& path) const;
  void Backoff(int attempt) const;
  std::shared_ptr<const ByteVec> SmallCached(const std::string& path) const;
  void KeepSmall(const std::string& path, std::shared_ptr<const ByteVec> bytes) const;

  // Holds one of the S3Config::parallel GET slots for its life.
  class GetSlot {
   public:
    explicit GetSlot(const S3Storage& s);
    ~GetSlot();
    GetSlot(const GetSlot&) = delete;
    GetSlot& operator=(const GetSlot&) = delete;

   private:
    const S3Storage& s_;
  };

  S3Location location_;
  S3Config config_;
  Limits limits_;
  ImmutableFolder immutable_folder_;
  std::string root_;
  std::string host_;      // the Host header: what curl sends for the URL
  std::string url_base_;  // scheme://host[:port][/bucket]
  std::unique_ptr<HttpClient> http_;
  mutable std::mutex slots_mu_;
  mutable std::unordered_map<std::string, std::shared_ptr<Slot>> slots_;
  mutable std::unordered_map<std::string, std::shared_ptr<Slot>> trees_;  // ListTree's
  KeptFile kept_file_;
  std::shared_ptr<FileStash> stash_;
  mutable std::mutex sizes_mu_;
  mutable std::unordered_map<std::string, Known> sizes_;
  mutable S3Counters counters_;
  mutable std::mutex gets_mu_;
  mutable std::condition_variable gets_cv_;
  mutable unsigned gets_running_ = 0;
  // Whole small files, oldest first out.
  mutable std::mutex small_mu_;
  mutable std::unordered_map<std::string, std::shared_ptr<const ByteVec>> small_;
  mutable std::deque<std::string> small_order_;
  mutable uint64_t small_bytes_ = 0;
};

}  // namespace tiledbfs::core::s3
