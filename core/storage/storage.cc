#include "core/storage/storage.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string_view>

#include "core/storage/uring_reader.h"

namespace tiledbfs::core {

Result<ByteVec> Storage::ReadAll(const std::string& path) const {
  ASSIGN_OR_RETURN(uint64_t size, Size(path));
  return Read(path, 0, size);
}

Result<SmallFile> Storage::ReadIfSmall(const std::string& path, uint64_t max_bytes) const {
  SmallFile f;
  ASSIGN_OR_RETURN(f.size, Size(path));
  if (f.size <= max_bytes) {
    ASSIGN_OR_RETURN(ByteVec bytes, Read(path, 0, f.size));
    f.bytes = std::move(bytes);
  }
  return f;
}

std::vector<Result<ByteVec>> Storage::ReadMany(std::span<const ReadRequest> requests,
                                               size_t /*spread*/) const {
  std::vector<Result<ByteVec>> out;
  out.reserve(requests.size());
  for (const ReadRequest& r : requests) out.push_back(Read(r.path, r.offset, r.n));
  return out;
}

Result<std::vector<DirEntry>> Storage::ListTree(const std::string& dir, size_t max_files) const {
  std::vector<DirEntry> out;
  std::vector<std::string> folders{""};  // below `dir`, still to list
  while (!folders.empty()) {
    const std::string below = std::move(folders.back());
    folders.pop_back();
    ASSIGN_OR_RETURN(std::vector<DirEntry> entries, List(JoinPath(dir, below)));
    for (DirEntry& e : entries) {
      e.name = JoinPath(below, e.name);
      if (e.is_dir) {
        folders.push_back(std::move(e.name));
      } else {
        out.push_back(std::move(e));
      }
      // Folders count too: a link back to an ancestor ends here.
      if (out.size() + folders.size() > max_files) {
        return Error::OutOfMemory(
            fmt::format("{}/{}: more than {} files and folders", root(), dir, max_files));
      }
    }
  }
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

std::string JoinPath(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a.back() == '/' ? a + b : a + "/" + b;
}

namespace {

bool ValidRelative(const std::string& path) {
  if (!path.empty() && path[0] == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    std::string_view part(path.data() + start, end - start);
    if (part == "..") return false;
    start = end + 1;
  }
  return true;
}

Error ErrnoError(const std::string& path, const char* op, int err) {
  if (err == ENOENT || err == ENOTDIR)
    return Error::NotFound(fmt::format("{}: no such file", path));
  return Error::Io(fmt::format("{}: {}: {}", path, op, std::strerror(err)));
}

}  // namespace

Result<std::shared_ptr<LocalStorage>> LocalStorage::Open(const std::string& root) {
  char buf[PATH_MAX];
  if (realpath(root.c_str(), buf) == nullptr) return ErrnoError(root, "realpath", errno);
  struct stat st;
  if (stat(buf, &st) != 0) return ErrnoError(root, "stat", errno);
  if (!S_ISDIR(st.st_mode)) return Error::NotFound(fmt::format("{}: not a directory", root));
  const int fd = ::open(buf, O_PATH | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(root, "open", errno);
  return std::shared_ptr<LocalStorage>(new LocalStorage(root, buf, fd));
}

Result<int> LocalStorage::OpenBeneath(const std::string& path, int flags) const {
  if (!ValidRelative(path))
    return Error::InvalidArgument(fmt::format("{}: path outside the array", path));
  static std::atomic<bool> have_openat2{true};
  if (have_openat2.load(std::memory_order_relaxed)) {
    open_how how{};
    how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
    // Symlinks are followed only while they stay inside the root (an
    // absolute one never does); no /proc magic links.
    how.resolve = RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS;
    const char* p = path.empty() ? "." : path.c_str();
    long fd;
    int tries = 0;  // EAGAIN: a rename raced the lookup; bounded retries
    do {
      fd = ::syscall(SYS_openat2, root_fd_, p, &how, sizeof(how));
    } while (fd < 0 && (errno == EINTR || errno == EAGAIN) && ++tries < 64);
    if (fd >= 0) return static_cast<int>(fd);
    if (errno == EXDEV || errno == ELOOP) {
      return Error::Io(fmt::format("{}: a link outside the array, not followed", path));
    }
    if (errno != ENOSYS && errno != EPERM && errno != E2BIG) return ErrnoError(path, "open", errno);
    // No openat2 here (old kernel, seccomp): realpath from now on.
    have_openat2.store(false, std::memory_order_relaxed);
  }
  ASSIGN_OR_RETURN(std::string full, Resolve(path));
  const int fd = ::open(full.c_str(), flags | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, "open", errno);
  return fd;
}

Result<std::string> LocalStorage::Resolve(const std::string& path) const {
  if (!ValidRelative(path))
    return Error::InvalidArgument(fmt::format("{}: path outside the array", path));
  std::string full = path.empty() ? real_root_ : real_root_ + "/" + path;
  // Refuse symlinks that lead outside the root.
  char buf[PATH_MAX];
  if (realpath(full.c_str(), buf) == nullptr) return ErrnoError(path, "realpath", errno);
  std::string_view real(buf);
  if (real != real_root_ &&
      !(real.size() > real_root_.size() && real.substr(0, real_root_.size()) == real_root_ &&
        real[real_root_.size()] == '/')) {
    return Error::Io(fmt::format("{}: a link outside the array, not followed", path));
  }
  return full;
}

namespace {

// Reads at most kUncheckedReadBytes without an fstat first: the buffer is
// small whatever the file holds, and a short read (end of file) is checked
// against the file's size afterwards, with the same message. Larger reads
// check the size before allocating.
constexpr uint64_t kUncheckedReadBytes = uint64_t{1} << 20;

Error Truncated(const std::string& path, uint64_t offset, uint64_t n, uint64_t size) {
  return Error::Corrupt(fmt::format("{}: truncated: wanted {} bytes at offset {}, file has {}",
                                    path, n, offset, size));
}

// Fills out[0, n) from `fd` at `offset`; the number of bytes read (less
// than n only at end of file), or an errno.
Result<uint64_t> PreadFully(int fd, uint8_t* out, uint64_t n, uint64_t offset,
                            const std::string& path) {
  uint64_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, out + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      return ErrnoError(path, "read", errno);
    }
    if (r == 0) break;
    done += static_cast<uint64_t>(r);
  }
  return done;
}

// Reads exactly n bytes of the open `fd` at `offset` (which the caller
// closes); `size` is the file's size when known.
Result<ByteVec> ReadOpen(int fd, const std::string& path, uint64_t offset, uint64_t n,
                         std::optional<uint64_t> size) {
  if (!size && (n == 0 || n > kUncheckedReadBytes)) {
    struct stat st;
    if (fstat(fd, &st) != 0) return ErrnoError(path, "stat", errno);
    size = static_cast<uint64_t>(st.st_size);
  }
  if (size && (offset > *size || n > *size - offset)) return Truncated(path, offset, n, *size);
  ByteVec out(n);
  ASSIGN_OR_RETURN(uint64_t done, PreadFully(fd, out.data(), n, offset, path));
  if (done < n) {
    if (!size) {
      struct stat st;
      if (fstat(fd, &st) != 0) return ErrnoError(path, "stat", errno);
      const uint64_t now = static_cast<uint64_t>(st.st_size);
      if (offset > now || n > now - offset) return Truncated(path, offset, n, now);
    }
    return Error::Corrupt(fmt::format("{}: truncated while reading", path));
  }
  return out;
}

}  // namespace

Result<ByteVec> LocalStorage::Read(const std::string& path, uint64_t offset, uint64_t n) const {
  ASSIGN_OR_RETURN(int fd, OpenBeneath(path, O_RDONLY));
  Result<ByteVec> out = ReadOpen(fd, path, offset, n, std::nullopt);
  ::close(fd);
  return out;
}

LocalStorage::LocalStorage(std::string root, std::string real_root, int root_fd)
    : root_(std::move(root)), real_root_(std::move(real_root)), root_fd_(root_fd) {}

LocalStorage::~LocalStorage() {
  if (root_fd_ >= 0) ::close(root_fd_);
}

std::unique_ptr<UringReader> LocalStorage::TakeRing() const {
  std::lock_guard lock(rings_mu_);
  if (rings_refused_) return nullptr;
  if (!free_rings_.empty()) {
    std::unique_ptr<UringReader> ring = std::move(free_rings_.back());
    free_rings_.pop_back();
    return ring;
  }
  if (rings_made_ >= kRings) return nullptr;
  std::unique_ptr<UringReader> ring = UringReader::Create();
  if (ring == nullptr) {
    rings_refused_ = true;
  } else {
    ++rings_made_;
  }
  return ring;
}

void LocalStorage::GiveRing(std::unique_ptr<UringReader> ring) const {
  std::lock_guard lock(rings_mu_);
  // Failed in use (UringReader::Read said no): no ring is trusted from now
  // on; the idle ones, and those given back later, are closed.
  if (ring == nullptr) rings_refused_ = true;
  if (rings_refused_) {
    free_rings_.clear();
    return;
  }
  free_rings_.push_back(std::move(ring));
}

std::vector<Result<ByteVec>> LocalStorage::ReadMany(std::span<const ReadRequest> requests,
                                                    size_t /*spread*/) const {
  // The buffers of one submission: at most this many bytes at once, so a
  // batch of lengths read from hostile metadata allocates little before the
  // files' sizes say no.
  constexpr uint64_t kGroupBytes = uint64_t{8} << 20;
  std::vector<std::optional<ByteVec>> got(requests.size());
  std::unique_ptr<UringReader> ring = TakeRing();
  if (ring != nullptr) {
    std::vector<UringReader::Item> items;
    std::vector<size_t> which;
    std::vector<ByteVec> bufs;
    size_t i = 0;
    while (i < requests.size() && ring != nullptr) {
      items.clear();
      which.clear();
      bufs.clear();
      uint64_t bytes = 0;
      for (; i < requests.size() && items.size() < UringReader::kSlots * 4; ++i) {
        const ReadRequest& r = requests[i];
        if (r.n == 0 || r.n > kBatchedReadBytes || !ValidRelative(r.path)) continue;
        if (bytes + r.n > kGroupBytes && !items.empty()) break;
        bytes += r.n;
        bufs.emplace_back(r.n);
        which.push_back(i);
        items.push_back({r.path.c_str(), r.offset, static_cast<uint32_t>(r.n), nullptr});
      }
      for (size_t k = 0; k < items.size(); ++k) items[k].out = bufs[k].data();
      if (items.size() < 2) continue;  // one file: no gain
      if (!ring->Read(root_fd_, items)) ring.reset();
      for (size_t k = 0; k < items.size(); ++k) {
        if (!items[k].done) continue;
        got[which[k]] = std::move(bufs[k]);
        batched_reads_.fetch_add(1, std::memory_order_relaxed);
      }
    }
    GiveRing(std::move(ring));
  }
  std::vector<Result<ByteVec>> out;
  out.reserve(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    if (got[i]) {
      out.push_back(std::move(*got[i]));
    } else {
      const ReadRequest& r = requests[i];
      out.push_back(Read(r.path, r.offset, r.n));
    }
  }
  return out;
}

Result<SmallFile> LocalStorage::ReadIfSmall(const std::string& path, uint64_t max_bytes) const {
  ASSIGN_OR_RETURN(int fd, OpenBeneath(path, O_RDONLY));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    return ErrnoError(path, "stat", e);
  }
  SmallFile f;
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    return Error::InvalidArgument(fmt::format("{}: is a directory", path));
  }
  f.size = static_cast<uint64_t>(st.st_size);
  if (f.size <= max_bytes) {
    Result<ByteVec> bytes = ReadOpen(fd, path, 0, f.size, f.size);
    if (!bytes.ok()) {
      ::close(fd);
      return bytes.error();
    }
    f.bytes = std::move(bytes).value();
  }
  ::close(fd);
  return f;
}

namespace {

// fstat of a descriptor, which it closes.
Result<struct stat> StatAndClose(int fd, const std::string& path) {
  struct stat st;
  const int rc = fstat(fd, &st);
  const int e = errno;
  ::close(fd);
  if (rc != 0) return ErrnoError(path, "stat", e);
  return st;
}

}  // namespace

Result<uint64_t> LocalStorage::Size(const std::string& path) const {
  ASSIGN_OR_RETURN(int fd, OpenBeneath(path, O_PATH));
  ASSIGN_OR_RETURN(struct stat st, StatAndClose(fd, path));
  if (S_ISDIR(st.st_mode)) return Error::InvalidArgument(fmt::format("{}: is a directory", path));
  return static_cast<uint64_t>(st.st_size);
}

std::optional<int64_t> LocalStorage::DirModifiedNs(const std::string& dir) const {
  auto fd = OpenBeneath(dir, O_PATH | O_DIRECTORY);
  if (!fd.ok()) return std::nullopt;
  auto st = StatAndClose(*fd, dir);
  if (!st.ok()) return std::nullopt;
  return int64_t{st->st_mtim.tv_sec} * 1000000000 + st->st_mtim.tv_nsec;
}

Result<std::vector<DirEntry>> LocalStorage::List(const std::string& dir) const {
  return ListEntries(dir, /*sizes=*/true);
}

Result<std::vector<DirEntry>> LocalStorage::ListKinds(const std::string& dir) const {
  return ListEntries(dir, /*sizes=*/false);
}

Result<std::vector<DirEntry>> LocalStorage::ListEntries(const std::string& dir, bool sizes) const {
  ASSIGN_OR_RETURN(int fd, OpenBeneath(dir, O_RDONLY | O_DIRECTORY));
  DIR* d = fdopendir(fd);
  if (d == nullptr) {
    const int e = errno;
    ::close(fd);
    return ErrnoError(dir, "opendir", e);
  }
  std::vector<DirEntry> out;
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    DirEntry de;
    if (e->d_type == DT_DIR) {
      // A folder (never a link): nothing more to learn. A fragment folder
      // per entry of __fragments, so no stat for each.
      de.is_dir = true;
    } else if (e->d_type == DT_REG && !sizes) {
      // A file (not a link), whose size is not wanted: a commit file per
      // entry of __commits.
    } else {
      struct stat st;
      if (fstatat(dirfd(d), e->d_name, &st, 0) != 0) continue;  // dangling link
      de.is_dir = S_ISDIR(st.st_mode);
      if (!de.is_dir) {
        de.size = static_cast<uint64_t>(st.st_size);
        de.version = fmt::format("{}.{:09}", st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
      }
    }
    de.name = std::move(name);
    out.push_back(std::move(de));
  }
  closedir(d);
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

bool LocalStorage::Exists(const std::string& path) const {
  auto fd = OpenBeneath(path, O_PATH);
  if (!fd.ok()) return false;
  ::close(*fd);
  return true;
}

bool LocalStorage::IsDir(const std::string& path) const {
  auto fd = OpenBeneath(path, O_PATH);
  if (!fd.ok()) return false;
  auto st = StatAndClose(*fd, path);
  return st.ok() && S_ISDIR(st->st_mode);
}

void MemoryStorage::Put(const std::string& path, ByteVec data) {
  auto it = std::lower_bound(files_.begin(), files_.end(), path,
                             [](const auto& f, const std::string& p) { return f.first < p; });
  if (it != files_.end() && it->first == path) {
    it->second = std::move(data);
  } else {
    files_.insert(it, {path, std::move(data)});
  }
}

const ByteVec* MemoryStorage::Find(const std::string& path) const {
  auto it = std::lower_bound(files_.begin(), files_.end(), path,
                             [](const auto& f, const std::string& p) { return f.first < p; });
  if (it != files_.end() && it->first == path) return &it->second;
  return nullptr;
}

Result<ByteVec> MemoryStorage::Read(const std::string& path, uint64_t offset, uint64_t n) const {
  const ByteVec* f = Find(path);
  if (f == nullptr) return Error::NotFound(fmt::format("{}: no such file", path));
  if (offset > f->size() || n > f->size() - offset) {
    return Error::Corrupt(fmt::format("{}: truncated: wanted {} bytes at offset {}, file has {}",
                                      path, n, offset, f->size()));
  }
  return ByteVec(f->begin() + static_cast<ptrdiff_t>(offset),
                 f->begin() + static_cast<ptrdiff_t>(offset + n));
}

Result<uint64_t> MemoryStorage::Size(const std::string& path) const {
  const ByteVec* f = Find(path);
  if (f == nullptr) return Error::NotFound(fmt::format("{}: no such file", path));
  return f->size();
}

Result<std::vector<DirEntry>> MemoryStorage::List(const std::string& dir) const {
  std::string prefix = dir.empty() ? "" : dir + "/";
  std::vector<DirEntry> out;
  bool found = dir.empty();
  for (const auto& [path, data] : files_) {
    if (path.compare(0, prefix.size(), prefix) != 0) continue;
    found = true;
    std::string rest = path.substr(prefix.size());
    size_t slash = rest.find('/');
    DirEntry e;
    e.name = rest.substr(0, slash);
    e.is_dir = slash != std::string::npos;
    if (!out.empty() && out.back().name == e.name) continue;
    if (!e.is_dir) {
      e.size = data.size();
      const std::string_view bytes(reinterpret_cast<const char*>(data.data()), data.size());
      e.version = fmt::format("{:016x}", std::hash<std::string_view>{}(bytes));
    }
    out.push_back(std::move(e));
  }
  if (!found) return Error::NotFound(fmt::format("{}: no such directory", dir));
  return out;
}

bool MemoryStorage::Exists(const std::string& path) const {
  return Find(path) != nullptr || IsDir(path);
}

bool MemoryStorage::IsDir(const std::string& path) const {
  std::string prefix = path + "/";
  for (const auto& f : files_) {
    if (f.first.compare(0, prefix.size(), prefix) == 0) return true;
  }
  return false;
}

}  // namespace tiledbfs::core
