#include "core/storage/s3/s3_storage.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <ctime>
#include <functional>
#include <random>
#include <thread>

#include "core/storage/s3/coalesce.h"
#include "core/storage/s3/list_xml.h"
#include "core/storage/s3/sigv4.h"
#include "core/util/limits.h"
#include "core/util/stop.h"

namespace tiledbfs::core::s3 {
namespace {

constexpr char kEmptySha256[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
// A server that ignores Range answers 200 with the whole object: we keep up
// to offset + n bytes of it, but never more than this.
constexpr uint64_t kMaxWholeBody = uint64_t{256} << 20;
// Room for an S3 error's XML whatever the range asked: a 503 to a ranged GET
// of 60 bytes kept only 60 bytes of it, and lost its code (SlowDown).
constexpr uint64_t kMaxErrorBody = uint64_t{64} << 10;

bool ParseU64(std::string_view s, uint64_t* v) {
  if (s.empty()) return false;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && end == s.data() + s.size();
}

// "bytes a-b/T" (T may be '*') or "bytes */T".
struct ContentRange {
  std::optional<uint64_t> first, last, total;
};
std::optional<ContentRange> ParseContentRange(std::string_view v) {
  if (v.rfind("bytes ", 0) != 0) return std::nullopt;
  v.remove_prefix(6);
  const size_t slash = v.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  ContentRange r;
  const std::string_view span = v.substr(0, slash);
  const std::string_view total = v.substr(slash + 1);
  if (total != "*") {
    uint64_t t = 0;
    if (!ParseU64(total, &t)) return std::nullopt;
    r.total = t;
  }
  if (span != "*") {
    const size_t dash = span.find('-');
    uint64_t a = 0, b = 0;
    if (dash == std::string_view::npos || !ParseU64(span.substr(0, dash), &a) ||
        !ParseU64(span.substr(dash + 1), &b) || b < a) {
      return std::nullopt;
    }
    r.first = a;
    r.last = b;
  }
  return r;
}

bool ValidPart(std::string_view p) { return !p.empty() && p != "." && p != ".."; }

const DirEntry* Find(const std::vector<DirEntry>& entries, std::string_view name) {
  auto it = std::lower_bound(entries.begin(), entries.end(), name,
                             [](const DirEntry& e, std::string_view n) { return e.name < n; });
  return it != entries.end() && it->name == name ? &*it : nullptr;
}

}  // namespace

std::pair<std::string, std::string> S3Storage::SplitParent(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return {"", path};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

bool IsS3Uri(std::string_view path) { return path.rfind("s3://", 0) == 0; }

Result<S3Location> ParseS3Uri(std::string_view uri) {
  if (!IsS3Uri(uri)) return Error::InvalidArgument(fmt::format("{}: not an s3:// URI", uri));
  std::string_view rest = uri.substr(5);
  while (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  S3Location loc;
  const size_t slash = rest.find('/');
  loc.bucket = std::string(rest.substr(0, slash));
  if (loc.bucket.empty()) return Error::InvalidArgument(fmt::format("{}: no bucket", uri));
  if (slash != std::string_view::npos) loc.prefix = std::string(rest.substr(slash + 1));
  size_t start = 0;
  while (!loc.prefix.empty() && start <= loc.prefix.size()) {
    size_t end = loc.prefix.find('/', start);
    if (end == std::string::npos) end = loc.prefix.size();
    if (!ValidPart(std::string_view(loc.prefix).substr(start, end - start))) {
      return Error::InvalidArgument(
          fmt::format("{}: an empty, '.' or '..' part in the key prefix", uri));
    }
    start = end + 1;
  }
  return loc;
}

S3Storage::S3Storage(S3Location location, S3Config config)
    : location_(std::move(location)), config_(std::move(config)) {
  root_ = "s3://" + location_.bucket + (location_.prefix.empty() ? "" : "/" + location_.prefix);
  const size_t scheme_end = config_.endpoint.find("://") + 3;
  const std::string scheme = config_.endpoint.substr(0, scheme_end);
  std::string host = config_.endpoint.substr(scheme_end);
  // curl sends no port in Host for the scheme's default: neither do we.
  if (scheme == "http://" && host.size() > 3 && host.ends_with(":80")) host.resize(host.size() - 3);
  if (scheme == "https://" && host.size() > 4 && host.ends_with(":443")) {
    host.resize(host.size() - 4);
  }
  if (config_.path_style) {
    host_ = host;
    url_base_ = scheme + host + "/" + UriEncode(location_.bucket, false);
  } else {
    host_ = location_.bucket + "." + host;
    url_base_ = scheme + host_;
  }
  HttpClient::Options o;
  o.connect_timeout_ms = config_.connect_timeout_ms;
  o.stall_timeout_s = config_.stall_timeout_s;
  http_ = std::make_unique<HttpClient>(o);
}

Result<std::shared_ptr<S3Storage>> S3Storage::Open(std::string_view uri, const S3Config& config,
                                                   const Limits& limits,
                                                   ImmutableFolder immutable_folder,
                                                   KeptFile kept_file,
                                                   std::shared_ptr<FileStash> stash) {
  ASSIGN_OR_RETURN(S3Location loc, ParseS3Uri(uri));
  std::shared_ptr<S3Storage> s(new S3Storage(std::move(loc), config));
  s->limits_ = limits;
  s->immutable_folder_ = std::move(immutable_folder);
  if (kept_file && stash) {
    s->kept_file_ = std::move(kept_file);
    s->stash_ = std::move(stash);
  }
  std::shared_ptr<const Listing> root = s->GetListing("");
  if (!root->entries.ok()) return root->entries.error();
  return s;
}

std::string S3Storage::Key(const std::string& path) const {
  if (location_.prefix.empty()) return path;
  if (path.empty()) return location_.prefix;
  return location_.prefix + "/" + path;
}

std::string S3Storage::Where(const std::string& path) const {
  return path.empty() ? root_ : root_ + "/" + path;
}

std::string S3Storage::Url(const std::string& key, const std::string& query) const {
  std::string url = url_base_;
  if (!key.empty() || !config_.path_style) url += "/" + UriEncode(key, true);
  if (!query.empty()) url += "?" + query;
  return url;
}

std::vector<std::string> S3Storage::Headers(
    const std::string& key, const std::vector<std::pair<std::string, std::string>>& query,
    const std::string& range) const {
  std::vector<std::string> h = {"Host: " + host_};
  if (!range.empty()) h.push_back("Range: " + range);
  if (config_.anonymous) return h;
  const std::string date = AmzDate(static_cast<int64_t>(std::time(nullptr)));
  SigningRequest r;
  r.method = "GET";
  r.canonical_uri = config_.path_style ? "/" + UriEncode(location_.bucket, false) : "";
  if (!key.empty() || !config_.path_style) r.canonical_uri += "/" + UriEncode(key, true);
  r.query = query;
  r.headers = {{"host", host_}, {"x-amz-content-sha256", kEmptySha256}, {"x-amz-date", date}};
  if (!config_.session_token.empty()) {
    r.headers.emplace_back("x-amz-security-token", config_.session_token);
  }
  r.payload_sha256 = kEmptySha256;
  const SigningKey k{config_.access_key_id, config_.secret_access_key, config_.region, "s3"};
  h.push_back("x-amz-content-sha256: " + std::string(kEmptySha256));
  h.push_back("x-amz-date: " + date);
  if (!config_.session_token.empty()) h.push_back("x-amz-security-token: " + config_.session_token);
  h.push_back("Authorization: " + Authorization(r, k, date));
  return h;
}

void S3Storage::Backoff(int attempt) const {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  const int64_t cap =
      std::min<int64_t>(config_.max_backoff_ms, config_.backoff_ms << std::min(attempt - 1, 20));
  // Equal jitter: half fixed, half random, so retries of many readers spread.
  std::uniform_int_distribution<int64_t> d(cap / 2, std::max<int64_t>(cap / 2, cap));
  // Cut short by a stop of the process; Send then retries no more.
  SleepUnlessStopped(std::chrono::milliseconds(d(rng)));
}

namespace {

// What a check of a response decided.
struct Verdict {
  std::optional<Error> error;  // none: accepted
  bool retry = false;          // with `error` as the reason if attempts run out
};

}  // namespace

// One logical request with the retry policy. `check` judges 2xx and 416
// responses; the statuses every request shares are judged here. Once the
// process is stopping (core/util/stop.h): kCancelled, and no more attempts.
static Result<HttpResponse> Send(const HttpClient& http, const HttpRequest& base,
                                 const std::function<std::vector<std::string>()>& headers,
                                 const std::string& what, const S3Config& config,
                                 S3Counters& counters, const std::function<void(int)>& backoff,
                                 const std::function<Verdict(const HttpResponse&)>& check) {
  std::string last;
  const auto start = std::chrono::steady_clock::now();
  for (int attempt = 1;; ++attempt) {
    TRY(CheckStop(what));
    HttpRequest req = base;
    req.headers = headers();  // signed anew: x-amz-date moves on
    HttpResponse resp = http.Perform(req);
    bool retry = false;
    if (resp.cancelled) {
      return Error::Cancelled(fmt::format("{}: {}", what, resp.transport_error));
    } else if (resp.status == 0) {
      last = fmt::format("{} (endpoint {})", resp.transport_error, config.endpoint);
      retry = resp.retryable;
      if (!retry) return Error::Io(fmt::format("{}: {}", what, last));
    } else if (resp.status >= 500 || resp.status == 429) {
      const S3ErrorBody e = ParseS3Error(resp.body);
      last = fmt::format("HTTP {}{}{}", resp.status, e.code.empty() ? "" : " ", e.code);
      retry = true;
    } else if (resp.status == 404) {
      const S3ErrorBody e = ParseS3Error(resp.body);
      if (e.code == "NoSuchBucket") {
        return Error::NotFound(fmt::format("{}: no such bucket", what));
      }
      return Error::NotFound(fmt::format("{}: no such file", what));
    } else if (resp.status == 403) {
      const S3ErrorBody e = ParseS3Error(resp.body);
      return Error::AccessDenied(
          fmt::format("{}: access denied (HTTP 403{}{})", what, e.code.empty() ? "" : " ", e.code));
    } else if ((resp.status >= 200 && resp.status < 300) || resp.status == 416) {
      Verdict v = check(resp);
      if (!v.error) return resp;
      if (!v.retry) return *v.error;
      last = v.error->message();
      retry = true;
    } else {
      const S3ErrorBody e = ParseS3Error(resp.body);
      std::string hint;
      if (resp.status == 301 || e.code == "AuthorizationHeaderMalformed") {
        hint = fmt::format(" (is the region '{}' right? -o s3_region=...)", config.region);
      }
      return Error::Io(fmt::format("{}: HTTP {}{}{}{}{}", what, resp.status,
                                   e.code.empty() ? "" : " ", e.code,
                                   e.message.empty() ? "" : ": " + e.message, hint));
    }
    const bool late = std::chrono::steady_clock::now() - start >
                      std::chrono::milliseconds(config.retry_deadline_ms);
    if (!retry || attempt >= config.max_attempts || late) {
      return Error::Io(
          fmt::format("{}: {} after {} attempt{}", what, last, attempt, attempt == 1 ? "" : "s"));
    }
    counters.retries.fetch_add(1, std::memory_order_relaxed);
    backoff(attempt);
  }
}

Status S3Storage::ListPages(const std::string& dir, bool delimited,
                            const std::function<Status(const ListPage&)>& on_page) const {
  const std::string key = Key(dir);
  const std::string prefix = key.empty() ? "" : key + "/";
  std::string token;
  const std::string what = fmt::format("LIST {}/", Where(dir));
  for (int page = 0;; ++page) {
    std::vector<std::pair<std::string, std::string>> query = {{"list-type", "2"},
                                                              {"prefix", prefix}};
    if (delimited) query.emplace_back("delimiter", "/");
    if (!token.empty()) query.emplace_back("continuation-token", token);
    HttpRequest req;
    req.url = Url("", CanonicalQuery(query));
    req.max_body = uint64_t{64} << 20;
    ListPage parsed;
    auto check = [&](const HttpResponse& r) -> Verdict {
      if (r.status != 200) {
        return {Error::Io(fmt::format("HTTP {} to a listing", r.status)), false};
      }
      if (r.capped) return {Error::Io("a listing page larger than 64 MiB"), false};
      Result<ListPage> p = ParseListObjectsV2(r.body);
      // A page cut short by the network parses as malformed XML: retried.
      if (!p.ok()) return {p.error(), true};
      parsed = std::move(p).value();
      return {};
    };
    counters_.lists.fetch_add(1, std::memory_order_relaxed);
    auto sent = Send(
        *http_, req, [&] { return Headers("", query, ""); }, what, config_, counters_,
        [this](int a) { Backoff(a); }, check);
    if (!sent.ok()) return sent.error();
    for (const ListedObject& o : parsed.objects) {
      if (o.key.rfind(prefix, 0) != 0) {
        return Error::Corrupt(
            fmt::format("{}: the server listed key '{}' outside the prefix", what, o.key));
      }
    }
    TRY(on_page(parsed));
    if (!parsed.truncated) break;
    if (parsed.next_token == token) {
      return Error::Corrupt(fmt::format("{}: the server repeats continuation token", what));
    }
    token = parsed.next_token;
  }
  return Ok();
}

Result<std::vector<DirEntry>> S3Storage::ListNow(const std::string& dir) const {
  const std::string key = Key(dir);
  const std::string prefix = key.empty() ? "" : key + "/";
  std::vector<DirEntry> files, dirs;
  const uint64_t max_files = limits_.max_files;
  TRY(ListPages(dir, /*delimited=*/true, [&](const ListPage& parsed) -> Status {
    for (const ListedObject& o : parsed.objects) {
      std::string name = o.key.substr(prefix.size());
      if (!ValidPart(name) || name.find('/') != std::string::npos) continue;  // folder marker
      files.push_back({std::move(name), false, o.size, o.etag});
    }
    for (const std::string& p : parsed.prefixes) {
      if (p.rfind(prefix, 0) != 0 || p.size() < prefix.size() + 2 || p.back() != '/') continue;
      std::string name = p.substr(prefix.size(), p.size() - prefix.size() - 1);
      if (!ValidPart(name) || name.find('/') != std::string::npos) continue;
      dirs.push_back({std::move(name), true, 0, {}});
    }
    if (files.size() + dirs.size() > max_files) {
      return Error::OutOfMemory(
          fmt::format("LIST {}/: more than {} entries", Where(dir), max_files));
    }
    return Ok();
  }));
  if (files.empty() && dirs.empty()) {
    return Error::NotFound(dir.empty()
                               ? fmt::format("{}: nothing there (no such array or group)", root_)
                               : fmt::format("{}: no such folder", Where(dir)));
  }
  std::vector<DirEntry> out = std::move(dirs);
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  // An object and a folder of the same name: the folder wins.
  for (DirEntry& f : files) {
    if (Find(out, f.name) == nullptr) {
      out.insert(
          std::upper_bound(out.begin(), out.end(), f,
                           [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; }),
          std::move(f));
    }
  }
  return out;
}

Result<std::vector<DirEntry>> S3Storage::ListTree(const std::string& dir, size_t max_files) const {
  std::shared_ptr<const Listing> l = GetTree(dir);
  if (l->entries.ok() && l->entries->size() > max_files) {
    return Error::OutOfMemory(fmt::format("LIST {}/: more than {} files", Where(dir), max_files));
  }
  return l->entries;
}

std::shared_ptr<S3Storage::Slot> S3Storage::SlotOf(
    std::unordered_map<std::string, std::shared_ptr<Slot>>& slots, const std::string& dir) const {
  std::lock_guard<std::mutex> lock(slots_mu_);
  std::shared_ptr<Slot>& s = slots[dir];
  if (!s) s = std::make_shared<Slot>();
  return s;
}

std::shared_ptr<const S3Storage::Listing> S3Storage::GetTree(const std::string& dir) const {
  std::shared_ptr<Slot> slot = SlotOf(trees_, dir);
  std::lock_guard<std::mutex> lock(slot->mu);
  if (slot->listing && slot->listing->entries.ok() && Fresh(dir, *slot->listing)) {
    return slot->listing;
  }
  auto l = std::make_shared<Listing>();
  l->entries = ListTreeNow(dir);
  l->at = std::chrono::steady_clock::now();
  if (l->entries.ok()) slot->listing = l;
  return l;
}

Result<std::vector<DirEntry>> S3Storage::ListTreeNow(const std::string& dir) const {
  const size_t max_files = limits_.max_files;
  const std::string key = Key(dir);
  const std::string prefix = key.empty() ? "" : key + "/";
  std::vector<DirEntry> out;
  TRY(ListPages(dir, /*delimited=*/false, [&](const ListPage& parsed) -> Status {
    for (const ListedObject& o : parsed.objects) {
      std::string name = o.key.substr(prefix.size());
      // Folder markers ("a/") and keys no path could name are left out.
      bool valid = !name.empty() && name.back() != '/';
      for (size_t start = 0; valid && start < name.size();) {
        const size_t end = std::min(name.find('/', start), name.size());
        valid = ValidPart(std::string_view(name).substr(start, end - start));
        start = end + 1;
      }
      if (!valid) continue;
      LearnSize(JoinPath(dir, name), o.size, o.etag);
      out.push_back({std::move(name), false, o.size, o.etag});
    }
    if (out.size() > max_files) {
      return Error::OutOfMemory(fmt::format("LIST {}/: more than {} files", Where(dir), max_files));
    }
    return Ok();
  }));
  if (out.empty()) return Error::NotFound(fmt::format("{}: no such folder", Where(dir)));
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

bool S3Storage::Fresh(const std::string& dir, const Listing& l) const {
  if (immutable_folder_ && immutable_folder_(dir) && l.entries.ok()) return true;
  const auto age = std::chrono::steady_clock::now() - l.at;
  return age < std::chrono::duration<double>(config_.recheck_seconds);
}

std::shared_ptr<const S3Storage::Listing> S3Storage::CachedListing(const std::string& dir) const {
  std::shared_ptr<Slot> slot;
  {
    std::lock_guard<std::mutex> lock(slots_mu_);
    auto it = slots_.find(dir);
    if (it == slots_.end()) return nullptr;
    slot = it->second;
  }
  std::lock_guard<std::mutex> lock(slot->mu);
  if (slot->listing && Fresh(dir, *slot->listing)) return slot->listing;
  return nullptr;
}

std::shared_ptr<const S3Storage::Listing> S3Storage::GetListing(const std::string& dir) const {
  std::shared_ptr<Slot> slot = SlotOf(slots_, dir);
  std::lock_guard<std::mutex> lock(slot->mu);
  if (slot->listing && Fresh(dir, *slot->listing)) return slot->listing;
  auto l = std::make_shared<Listing>();
  // A folder its parent's fresh listing does not show is not there: no LIST
  // (an array without __meta/ opens without asking for it).
  if (!dir.empty()) {
    const auto [parent, name] = SplitParent(dir);
    if (auto p = CachedListing(parent); p && p->entries.ok()) {
      const DirEntry* e = Find(*p->entries, name);
      if (e == nullptr || !e->is_dir) {
        l->entries = Error::NotFound(fmt::format("{}: no such folder", Where(dir)));
        l->at = p->at;
        return l;
      }
    }
  }
  l->entries = ListNow(dir);
  l->at = std::chrono::steady_clock::now();
  // A failure too is kept until the folder is due again (recheck_seconds):
  // while a store is down, each lookup does not wait for its own retries.
  // Not a listing cut short by a stop of the process: it says nothing of
  // the folder.
  if (!l->entries.ok() && l->entries.error().code() == ErrorCode::kCancelled) return l;
  slot->listing = l;
  return l;
}

void S3Storage::LearnSize(const std::string& path, uint64_t size,
                          const std::string& version) const {
  std::lock_guard<std::mutex> lock(sizes_mu_);
  Known& k = sizes_[path];
  // A GET tells no version: the listing's stays while the size agrees.
  if (!version.empty() || k.size != size) k.version = version;
  k.size = size;
}

std::optional<S3Storage::Known> S3Storage::KnownEntry(const std::string& path) const {
  const auto [parent, name] = SplitParent(path);
  if (auto l = CachedListing(parent); l && l->entries.ok()) {
    if (const DirEntry* e = Find(*l->entries, name); e && !e->is_dir) {
      return Known{e->size, e->version};
    }
  }
  std::lock_guard<std::mutex> lock(sizes_mu_);
  auto it = sizes_.find(path);
  if (it == sizes_.end()) return std::nullopt;
  return it->second;
}

std::optional<uint64_t> S3Storage::KnownSize(const std::string& path) const {
  std::optional<Known> k = KnownEntry(path);
  if (!k) return std::nullopt;
  return k->size;
}

Result<std::vector<DirEntry>> S3Storage::List(const std::string& dir) const {
  return GetListing(dir)->entries;
}

Result<uint64_t> S3Storage::Size(const std::string& path) const {
  if (auto s = KnownSize(path)) return *s;
  const auto [parent, name] = SplitParent(path);
  auto l = GetListing(parent);
  if (!l->entries.ok()) {
    if (l->entries.error().code() == ErrorCode::kNotFound) {
      return Error::NotFound(fmt::format("{}: no such file", Where(path)));
    }
    return l->entries.error();
  }
  const DirEntry* e = Find(*l->entries, name);
  if (e == nullptr || e->is_dir) {
    return Error::NotFound(fmt::format("{}: no such file", Where(path)));
  }
  return e->size;
}

bool S3Storage::Exists(const std::string& path) const {
  if (path.empty()) return IsDir(path);
  if (KnownSize(path)) return true;
  const auto [parent, name] = SplitParent(path);
  auto l = GetListing(parent);
  return l->entries.ok() && Find(*l->entries, name) != nullptr;
}

bool S3Storage::IsDir(const std::string& path) const {
  if (path.empty()) return GetListing("")->entries.ok();
  const auto [parent, name] = SplitParent(path);
  auto l = GetListing(parent);
  if (!l->entries.ok()) return false;
  const DirEntry* e = Find(*l->entries, name);
  return e != nullptr && e->is_dir;
}

S3Storage::GetSlot::GetSlot(const S3Storage& s) : s_(s) {
  std::unique_lock<std::mutex> lock(s_.gets_mu_);
  s_.gets_cv_.wait(lock, [&] { return s_.gets_running_ < s_.config_.parallel; });
  ++s_.gets_running_;
}

S3Storage::GetSlot::~GetSlot() {
  {
    std::lock_guard<std::mutex> lock(s_.gets_mu_);
    --s_.gets_running_;
  }
  s_.gets_cv_.notify_one();
}

Result<S3Storage::Range> S3Storage::GetRange(const std::string& path, uint64_t offset, uint64_t n,
                                             bool allow_short) const {
  Range out;
  if (n == 0) {
    out.total = KnownSize(path).value_or(offset);
    return out;
  }
  if (offset > UINT64_MAX - n) {
    return Error::InvalidArgument(
        fmt::format("{}: read of {} at {} overflows", Where(path), n, offset));
  }
  // s3rver answers "bytes=0-0" with the whole object: ask for two bytes.
  const uint64_t ask = offset == 0 && n == 1 ? 2 : n;
  const std::string range = fmt::format("bytes={}-{}", offset, offset + ask - 1);
  const std::string what = fmt::format("GET {} {}", Where(path), range);
  HttpRequest req;
  req.url = Url(Key(path), "");
  req.max_body = std::max(kMaxErrorBody, offset + ask <= kMaxWholeBody ? offset + ask : ask);
  auto truncated = [&](uint64_t total) {
    return Error::Corrupt(
        fmt::format("{}: the file is {} bytes, {} wanted at offset {} (truncated)", Where(path),
                    total, n, offset));
  };
  // The bytes of the accepted body that are the answer, taken out of it
  // once Send returns it.
  std::pair<uint64_t, uint64_t> slice{0, 0};
  auto check = [&](const HttpResponse& r) -> Verdict {
    slice = {0, 0};
    auto header = [&](const char* name) -> std::string {
      auto it = r.headers.find(name);
      return it == r.headers.end() ? std::string() : it->second;
    };
    if (r.status == 416) {
      auto cr = ParseContentRange(header("content-range"));
      if (!cr || !cr->total) return {Error::Io("HTTP 416 without the object's size"), false};
      out.total = *cr->total;
      if (offset < out.total) return {Error::Io("HTTP 416 for a range inside the object"), false};
      if (!allow_short) return {truncated(out.total), false};
      return {};
    }
    if (r.status == 206) {
      auto cr = ParseContentRange(header("content-range"));
      if (!cr || !cr->first) {
        return {Error::Io(fmt::format("HTTP 206 with Content-Range '{}'", header("content-range"))),
                false};
      }
      const uint64_t got = *cr->last - *cr->first + 1;
      if (*cr->first != offset || got > ask) {
        return {Error::Io(fmt::format("asked {}, the server sent bytes {}-{}", range, *cr->first,
                                      *cr->last)),
                false};
      }
      if (r.body.size() != got) {
        return {Error::Io(fmt::format("short body: {} bytes of {}", r.body.size(), got)), true};
      }
      const bool at_end = cr->total && *cr->last + 1 == *cr->total;
      if (got < n && !at_end) {
        return {Error::Io(fmt::format("short range: bytes {}-{} of the {} asked", *cr->first,
                                      *cr->last, n)),
                true};
      }
      out.total = cr->total.value_or(offset + got);
      if (got < n && !allow_short) return {truncated(out.total), false};
      slice = {0, std::min(got, n)};
      out.etag = header("etag");
      return {};
    }
    if (r.status == 200) {
      // The whole object (a server that ignores Range): sliced here.
      uint64_t length = 0;
      const bool has_length = ParseU64(header("content-length"), &length);
      if (r.capped) {
        if (r.body.size() < offset + n) {
          return {Error::Io("the server ignored Range and the object is too large to take whole"),
                  false};
        }
      } else if (has_length && r.body.size() != length) {
        return {Error::Io(fmt::format("short body: {} bytes of {}", r.body.size(), length)), true};
      }
      out.total = r.capped ? (has_length ? length : r.body.size()) : r.body.size();
      if (r.body.size() < offset + n && !allow_short) return {truncated(out.total), false};
      slice.first = std::min<uint64_t>(offset, r.body.size());
      slice.second = std::min<uint64_t>(offset + n, r.body.size());
      out.etag = header("etag");
      return {};
    }
    return {Error::Io(fmt::format("unexpected HTTP {}", r.status)), false};
  };
  counters_.gets.fetch_add(1, std::memory_order_relaxed);
  GetSlot slot(*this);
  auto sent = Send(
      *http_, req, [&] { return Headers(Key(path), {}, range); }, what, config_, counters_,
      [this](int a) { Backoff(a); }, check);
  if (!sent.ok()) return sent.error();
  ByteVec& body = sent->body;
  counters_.bytes.fetch_add(body.size(), std::memory_order_relaxed);
  if (slice.first == 0) {  // a ranged answer: its body, not a copy
    body.resize(slice.second);
    out.bytes = std::move(body);
  } else {
    out.bytes.assign(body.begin() + static_cast<ptrdiff_t>(slice.first),
                     body.begin() + static_cast<ptrdiff_t>(slice.second));
  }
  LearnSize(path, out.total);
  return out;
}

}  // namespace tiledbfs::core::s3
