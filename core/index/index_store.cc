#include "core/index/index_store.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "core/util/byte_reader.h"
#include "core/util/text.h"

namespace tiledbfs::core {

namespace {

constexpr char kMagic[8] = {'T', 'F', 'S', 'I', 'D', 'X', '\0', '\1'};
constexpr uint64_t kDigestBytes = 32;
constexpr std::string_view kSuffix = ".tfi";
constexpr std::string_view kTempInfix = ".tfi.tmp.";
// A temp file this old was left by a writer that died before its rename.
constexpr time_t kStaleTempSeconds = 60;

Result<std::array<uint8_t, kDigestBytes>> Sha256(Bytes b) {
  std::array<uint8_t, kDigestBytes> out;
  unsigned len = 0;
  if (EVP_Digest(b.data(), b.size(), out.data(), &len, EVP_sha256(), nullptr) != 1 ||
      len != kDigestBytes) {
    return Error::Io("SHA-256 failed in OpenSSL");
  }
  return out;
}

template <class T>
void Append(std::string& out, T v) {
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}

std::string Errno(int e) { return std::strerror(e); }

// "<64 lowercase hex digits>.tfi": the only files counted as entries.
bool IsEntryName(std::string_view name) {
  if (name.size() != 2 * kDigestBytes + kSuffix.size() || !name.ends_with(kSuffix)) return false;
  return std::all_of(name.begin(), name.begin() + 2 * kDigestBytes,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// ".<entry name>.tmp.XXXXXX", as WriteEntry makes them.
bool IsTempName(std::string_view name) {
  return name.starts_with('.') && name.find(kTempInfix) != std::string_view::npos;
}

bool Older(const timespec& a, const timespec& b) {
  return a.tv_sec != b.tv_sec ? a.tv_sec < b.tv_sec : a.tv_nsec < b.tv_nsec;
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }
  // Closes now, for the error close reports (NFS, quotas report there).
  int Close() {
    int r = ::close(fd_);
    fd_ = -1;
    return r;
  }

 private:
  int fd_;
};

}  // namespace

Result<std::string> EncodeIndexEntry(std::string_view key, std::string_view payload) {
  if (key.size() > UINT32_MAX) {
    return Error::InvalidArgument(fmt::format("index key of {} bytes", key.size()));
  }
  std::string out;
  out.reserve(kIndexEntryOverhead + key.size() + payload.size());
  out.append(kMagic, sizeof(kMagic));
  Append<uint32_t>(out, kIndexFormat);
  Append<uint32_t>(out, static_cast<uint32_t>(key.size()));
  out.append(key);
  Append<uint64_t>(out, payload.size());
  out.append(payload);
  ASSIGN_OR_RETURN(auto digest, Sha256(AsBytes(out)));
  out.append(reinterpret_cast<const char*>(digest.data()), digest.size());
  return out;
}

Result<Bytes> ParseIndexEntry(Bytes file, std::string_view key) {
  ByteReader r(file);
  ASSIGN_OR_RETURN(Bytes magic, r.ReadBytes(sizeof(kMagic), "magic"));
  if (std::memcmp(magic.data(), kMagic, sizeof(kMagic)) != 0) {
    return Error::Corrupt("offset 0: magic: not an index entry");
  }
  // The version first: another version may lay out the rest otherwise.
  ASSIGN_OR_RETURN(uint32_t version, r.Read<uint32_t>("format version"));
  if (version != kIndexFormat) {
    return Error::Unsupported(
        fmt::format("offset 8: format version {}, this build reads {}", version, kIndexFormat));
  }
  ASSIGN_OR_RETURN(uint32_t key_size, r.Read<uint32_t>("key length"));
  ASSIGN_OR_RETURN(Bytes stored_key, r.ReadBytes(key_size, "key"));
  ASSIGN_OR_RETURN(uint64_t payload_size, r.Read<uint64_t>("payload length"));
  ASSIGN_OR_RETURN(Bytes payload, r.ReadBytes(payload_size, "payload"));
  const uint64_t covered = r.position();
  ASSIGN_OR_RETURN(Bytes stored_sum, r.ReadBytes(kDigestBytes, "checksum"));
  if (!r.empty()) {
    return r.Corrupt("end", fmt::format("{} bytes after the checksum", r.remaining()));
  }
  ASSIGN_OR_RETURN(auto sum, Sha256(file.first(covered)));
  if (!std::equal(sum.begin(), sum.end(), stored_sum.begin())) {
    std::string what = "checksum mismatch: stored ";
    AppendHex(what, stored_sum);
    what += ", computed ";
    AppendHex(what, sum);
    return Error::Corrupt(fmt::format("offset {}: checksum: {}", covered, what));
  }
  // Checked after the checksum, so that a damaged key reads as damage: a
  // key that differs in a whole entry is a file copied or renamed over
  // another entry's name.
  if (AsStringView(stored_key) != key) {
    return Error::Corrupt(
        fmt::format("offset 16: key: the entry of another key ({} bytes)", stored_key.size()));
  }
  return payload;
}

IndexStore::IndexStore(IndexOptions options) : options_(std::move(options)) {
  while (options_.dir.size() > 1 && options_.dir.back() == '/') options_.dir.pop_back();
}

std::shared_ptr<IndexStore> IndexStore::Open(IndexOptions options) {
  std::shared_ptr<IndexStore> store(new IndexStore(std::move(options)));
  Status s = store->MakeFolder();
  if (s.ok()) {
    store->usable_ = true;
  } else {
    store->Log(fmt::format("index folder {}: {}; running without the index", store->options_.dir,
                           s.error().ToString()));
  }
  return store;
}

Status IndexStore::MakeFolder() {
  const std::string& dir = options_.dir;
  if (dir.empty()) return Error::InvalidArgument("no folder given");
  // mkdir -p, each folder made here 0700 whatever the umask; folders that
  // exist keep their modes (the user's choice).
  for (size_t pos = dir.find('/', 1);; pos = dir.find('/', pos + 1)) {
    const std::string part = dir.substr(0, pos);
    if (::mkdir(part.c_str(), 0700) == 0) {
      if (::chmod(part.c_str(), 0700) != 0) {
        return Error::Io(fmt::format("cannot make {} 0700: {}", part, Errno(errno)));
      }
    } else if (errno != EEXIST) {
      return Error::Io(fmt::format("cannot create {}: {}", part, Errno(errno)));
    }
    if (pos == std::string::npos) break;
  }
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    return Error::Io(fmt::format("cannot stat {}: {}", dir, Errno(errno)));
  }
  if (!S_ISDIR(st.st_mode)) return Error::Io("not a folder");
  if (::access(dir.c_str(), R_OK | X_OK) != 0) {
    return Error::Io(fmt::format("cannot read: {}", Errno(errno)));
  }
  return Ok();
}

std::string DefaultIndexDir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg == '/') {
    return std::string(xdg) + "/tiledbfs";
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home == '/') {
    return std::string(home) + "/.cache/tiledbfs";
  }
  return "";
}

std::string IndexDigest(std::string_view text) {
  std::string out;
  if (auto sum = Sha256(AsBytes(text)); sum.ok()) AppendHex(out, *sum);
  return out;
}

std::string IndexStore::PathOf(const std::string& key) const {
  std::string path = options_.dir + "/";
  auto sum = Sha256(AsBytes(key));
  // OpenSSL fails only out of memory; the folder's own path is then no
  // entry's, and opening or renaming over it fails.
  if (sum.ok()) {
    AppendHex(path, *sum);
    path += kSuffix;
  }
  return path;
}

std::optional<std::string> IndexStore::Get(const std::string& key) {
  if (!usable_) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  const std::string path = PathOf(key);
  if (!path.ends_with(kSuffix)) {  // no SHA-256 (PathOf)
    misses_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  // O_NONBLOCK: a FIFO planted under an entry's name must not hang us.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (fd.get() < 0) {
    const int e = errno;
    if (e == ELOOP) {
      struct stat st;
      std::optional<FileId> id;
      if (::lstat(path.c_str(), &st) == 0) id = FileId{st.st_dev, st.st_ino};
      Reject(path, id, Error::Corrupt("a symbolic link"));
      return std::nullopt;
    }
    if (e != ENOENT) {
      LogOnce(logged_read_failure_,
              fmt::format("cannot read index entry {}: {}; treated as missing (later read "
                          "failures are not logged)",
                          path, Errno(e)));
    }
    misses_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) {
    misses_.fetch_add(1, std::memory_order_relaxed);
    return std::nullopt;
  }
  const FileId id{st.st_dev, st.st_ino};
  if (!S_ISREG(st.st_mode)) {
    Reject(path, id, Error::Corrupt("not a regular file"));
    return std::nullopt;
  }
  // The file's size is checked before anything is allocated for it.
  uint64_t limit = 0;
  if (AddOverflow(kIndexEntryOverhead + key.size(), options_.max_entry_bytes, &limit)) {
    limit = UINT64_MAX;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > limit) {
    Reject(path, id,
           Error::Corrupt(fmt::format("{} bytes, more than an entry of this key with a payload "
                                      "of max_entry_bytes ({}) can have",
                                      size, options_.max_entry_bytes)));
    return std::nullopt;
  }
  std::string buf(size, '\0');
  uint64_t got = 0;
  while (got < size) {
    ssize_t n = ::pread(fd.get(), buf.data() + got, size - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      LogOnce(logged_read_failure_,
              fmt::format("cannot read index entry {}: {}; treated as missing (later read "
                          "failures are not logged)",
                          path, Errno(errno)));
      misses_.fetch_add(1, std::memory_order_relaxed);
      return std::nullopt;
    }
    if (n == 0) break;  // shrunk since fstat: the parse reports the truncation
    got += static_cast<uint64_t>(n);
  }
  buf.resize(got);
  auto payload = ParseIndexEntry(AsBytes(buf), key);
  if (!payload.ok()) {
    Reject(path, id, payload.error());
    return std::nullopt;
  }
  // Used now, for the least-recently-used order; in a read-only folder the
  // order stays that of the writes.
  ::futimens(fd.get(), nullptr);
  const size_t offset = static_cast<size_t>(payload->data() - AsBytes(buf).data());
  const size_t n = payload->size();
  buf.erase(0, offset);
  buf.resize(n);
  hits_.fetch_add(1, std::memory_order_relaxed);
  return buf;
}

void IndexStore::Reject(const std::string& path, std::optional<FileId> id, const Error& e) {
  rejected_.fetch_add(1, std::memory_order_relaxed);
  misses_.fetch_add(1, std::memory_order_relaxed);
  // Between our read and now another process may have renamed a good entry
  // over the bad one: only the file that was read is removed.
  std::string done = "left in place";
  struct stat st;
  if (id && ::lstat(path.c_str(), &st) == 0 && st.st_dev == id->dev && st.st_ino == id->ino) {
    if (::unlink(path.c_str()) == 0 || errno == ENOENT) {
      done = "removed";
    } else {
      done = fmt::format("cannot remove it: {}", Errno(errno));
    }
  }
  Log(fmt::format("index entry {}: {}; ignored, {}", path, e.ToString(), done));
}

void IndexStore::Drop(const std::string& key, const std::string& why) {
  if (!usable_) return;
  const std::string path = PathOf(key);
  if (!path.ends_with(kSuffix)) return;  // no SHA-256 (PathOf)
  std::string done = "removed";
  if (::unlink(path.c_str()) == 0) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
  } else if (errno == ENOENT) {
    done = "already gone";
  } else {
    done = fmt::format("cannot remove it: {}", Errno(errno));
  }
  Log(fmt::format("index entry {} does not fit its view: {}; {}", path, why, done));
}

void IndexStore::Put(const std::string& key, std::string_view payload) {
  if (!usable_) return;
  const std::string path = PathOf(key);
  const uint64_t entry_size = kIndexEntryOverhead + key.size() + payload.size();
  Status s = Ok();
  if (!path.ends_with(kSuffix)) {  // no SHA-256 (PathOf)
    write_failures_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (payload.size() > options_.max_entry_bytes || entry_size > options_.max_bytes) {
    write_failures_.fetch_add(1, std::memory_order_relaxed);
    LogOnce(logged_too_big_,
            fmt::format("index entry {}: {} bytes with a payload of {}, more than index_size "
                        "({}) or max_entry_bytes ({}); not stored (later ones are not logged)",
                        path, entry_size, payload.size(), options_.max_bytes,
                        options_.max_entry_bytes));
  } else {
    auto bytes = EncodeIndexEntry(key, payload);
    s = bytes.ok() ? WriteEntry(path, *bytes) : Status(bytes.error());
    if (s.ok()) {
      writes_.fetch_add(1, std::memory_order_relaxed);
      Evict(path.substr(options_.dir.size() + 1), entry_size);
      return;
    }
    write_failures_.fetch_add(1, std::memory_order_relaxed);
    LogOnce(logged_write_failure_,
            fmt::format("cannot write the index: {}; going on without it (later write "
                        "failures are counted, not logged)",
                        s.error().ToString()));
  }
  ::unlink(path.c_str());
}

Status IndexStore::WriteEntry(const std::string& path, std::string_view bytes) {
  const size_t slash = path.rfind('/');
  std::string temp = path.substr(0, slash + 1) + "." + path.substr(slash + 1) + ".tmp.XXXXXX";
  Fd fd(::mkostemp(temp.data(), O_CLOEXEC));
  if (fd.get() < 0) {
    return Error::Io(fmt::format("cannot create a file in {}: {}", options_.dir, Errno(errno)));
  }
  auto fail = [&](std::string_view what) {
    const int e = errno;
    ::unlink(temp.c_str());
    return Error::Io(fmt::format("{} {}: {}", what, temp, Errno(e)));
  };
  if (::fchmod(fd.get(), 0600) != 0) return fail("cannot make 0600");
  for (size_t done = 0; done < bytes.size();) {
    ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return fail("cannot write");
    done += static_cast<size_t>(n);
  }
  // No fsync: an entry a crash leaves damaged fails its checksum, which
  // costs one miss, not a wrong answer.
  if (fd.Close() != 0) return fail("cannot close");
  if (::rename(temp.c_str(), path.c_str()) != 0) return fail("cannot rename");
  return Ok();
}

void IndexStore::Evict(const std::string& keep_name, uint64_t entry_size) {
  std::lock_guard lock(evict_mu_);
  // A scan stats every entry: made only when the folder may be past the
  // bound, or to see other processes' writes now and then, so that a mount
  // storing thousands of small entries (S3 footers) does not scan once each.
  written_since_scan_ += entry_size;
  ++puts_since_scan_;
  if (scanned_ && scanned_total_ + written_since_scan_ <= options_.max_bytes &&
      written_since_scan_ < options_.max_bytes / kScanEvery && puts_since_scan_ < kScanEvery) {
    return;
  }
  scanned_ = true;
  written_since_scan_ = 0;
  puts_since_scan_ = 0;
  DIR* d = ::opendir(options_.dir.c_str());
  if (d == nullptr) return;
  struct Entry {
    std::string name;
    uint64_t size;
    timespec mtime;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  const time_t now = ::time(nullptr);
  while (dirent* e = ::readdir(d)) {
    const std::string_view name = e->d_name;
    const bool entry = IsEntryName(name);
    if (!entry && !IsTempName(name)) continue;
    struct stat st;
    if (::fstatat(::dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) {
      continue;
    }
    if (entry) {
      entries.push_back({std::string(name), static_cast<uint64_t>(st.st_size), st.st_mtim});
      total += static_cast<uint64_t>(st.st_size);
    } else if (st.st_mtim.tv_sec < now - kStaleTempSeconds) {
      ::unlinkat(::dirfd(d), e->d_name, 0);
    }
  }
  if (total > options_.max_bytes) {
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return Older(a.mtime, b.mtime) || (!Older(b.mtime, a.mtime) && a.name < b.name);
    });
    for (const Entry& e : entries) {
      if (total <= options_.max_bytes) break;
      if (e.name == keep_name) continue;
      // ENOENT: another process evicted it first; it is gone all the same.
      if (::unlinkat(::dirfd(d), e.name.c_str(), 0) == 0) {
        evicted_.fetch_add(1, std::memory_order_relaxed);
        total -= e.size;
      } else if (errno == ENOENT) {
        total -= e.size;
      }
    }
  }
  scanned_total_ = total;
  ::closedir(d);
}

IndexStats IndexStore::stats() const {
  IndexStats s;
  s.hits = hits_.load(std::memory_order_relaxed);
  s.misses = misses_.load(std::memory_order_relaxed);
  s.rejected = rejected_.load(std::memory_order_relaxed);
  s.writes = writes_.load(std::memory_order_relaxed);
  s.write_failures = write_failures_.load(std::memory_order_relaxed);
  s.evicted = evicted_.load(std::memory_order_relaxed);
  s.dropped = dropped_.load(std::memory_order_relaxed);
  return s;
}

void IndexStore::Log(const std::string& line) {
  std::lock_guard lock(log_mu_);
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
}

void IndexStore::LogOnce(std::atomic<bool>& logged, const std::string& line) {
  if (!logged.exchange(true, std::memory_order_relaxed)) Log(line);
}

}  // namespace tiledbfs::core
