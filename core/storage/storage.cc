#include "core/storage/storage.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

namespace tiledbfs::core {

Result<ByteVec> Storage::ReadAll(const std::string& path) const {
  ASSIGN_OR_RETURN(uint64_t size, Size(path));
  return Read(path, 0, size);
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
  return std::shared_ptr<LocalStorage>(new LocalStorage(root, buf));
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

Result<ByteVec> LocalStorage::Read(const std::string& path, uint64_t offset, uint64_t n) const {
  ASSIGN_OR_RETURN(std::string full, Resolve(path));
  int fd = ::open(full.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return ErrnoError(path, "open", errno);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    return ErrnoError(path, "stat", e);
  }
  uint64_t size = static_cast<uint64_t>(st.st_size);
  if (offset > size || n > size - offset) {
    ::close(fd);
    return Error::Corrupt(fmt::format("{}: truncated: wanted {} bytes at offset {}, file has {}",
                                      path, n, offset, size));
  }
  ByteVec out(n);
  uint64_t done = 0;
  while (done < n) {
    ssize_t r = ::pread(fd, out.data() + done, n - done, static_cast<off_t>(offset + done));
    if (r < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      return ErrnoError(path, "read", e);
    }
    if (r == 0) {
      ::close(fd);
      return Error::Corrupt(fmt::format("{}: truncated while reading", path));
    }
    done += static_cast<uint64_t>(r);
  }
  ::close(fd);
  return out;
}

Result<uint64_t> LocalStorage::Size(const std::string& path) const {
  ASSIGN_OR_RETURN(std::string full, Resolve(path));
  struct stat st;
  if (stat(full.c_str(), &st) != 0) return ErrnoError(path, "stat", errno);
  if (S_ISDIR(st.st_mode)) return Error::InvalidArgument(fmt::format("{}: is a directory", path));
  return static_cast<uint64_t>(st.st_size);
}

std::optional<int64_t> LocalStorage::DirModifiedNs(const std::string& dir) const {
  auto full = Resolve(dir);
  if (!full.ok()) return std::nullopt;
  struct stat st;
  if (stat(full->c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  return int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
}

Result<std::vector<DirEntry>> LocalStorage::List(const std::string& dir) const {
  ASSIGN_OR_RETURN(std::string full, Resolve(dir));
  DIR* d = opendir(full.c_str());
  if (d == nullptr) return ErrnoError(dir, "opendir", errno);
  std::vector<DirEntry> out;
  while (struct dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (fstatat(dirfd(d), e->d_name, &st, 0) != 0) continue;  // dangling link
    DirEntry de;
    de.name = std::move(name);
    de.is_dir = S_ISDIR(st.st_mode);
    de.size = de.is_dir ? 0 : static_cast<uint64_t>(st.st_size);
    out.push_back(std::move(de));
  }
  closedir(d);
  std::sort(out.begin(), out.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  return out;
}

bool LocalStorage::Exists(const std::string& path) const { return Resolve(path).ok(); }

bool LocalStorage::IsDir(const std::string& path) const {
  auto full = Resolve(path);
  if (!full.ok()) return false;
  struct stat st;
  return stat(full->c_str(), &st) == 0 && S_ISDIR(st.st_mode);
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
    e.size = e.is_dir ? 0 : data.size();
    if (!out.empty() && out.back().name == e.name) continue;
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
