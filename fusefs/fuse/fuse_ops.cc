#include "fusefs/fuse/fuse_ops.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fuse_lowlevel.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/uio.h>
#include <syslog.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cassert>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <mutex>
#include <new>
#include <span>
#include <string_view>
#include <thread>
#include <type_traits>

#include "core/util/stop.h"
#include "fusefs/fuse/readahead.h"

namespace tiledbfs::fusefs {

namespace {

using core::Error;
using core::ErrorCode;

// Whether `path` names something under slice/<name> or diff/<name>.
bool IsQueryPath(const std::string& path) {
  for (const char* dir : {"slice/", "diff/"}) {
    const size_t at = path.find(dir);
    if (at != std::string::npos && (at == 0 || path[at - 1] == '/')) return true;
  }
  return false;
}

std::string Display(const std::string& path) { return "/" + path; }

// The one place the sign convention lives: libfuse wants a positive errno.
void ReplyErr(fuse_req_t req, int err) {
  assert(err > 0);
  fuse_reply_err(req, err > 0 ? err : EIO);
}

mode_t ModeOf(NodeType type) {
  return type == NodeType::kDirectory ? (S_IFDIR | 0555) : (S_IFREG | 0444);
}

}  // namespace

// The request handlers. Each is noexcept; Guard is the one catch-all barrier.
struct FuseOps {
  static FuseAdapter& Self(fuse_req_t req) {
    return *static_cast<FuseAdapter*>(fuse_req_userdata(req));
  }

  static void LogNoThrow(const FuseAdapter& self, const std::string& line) noexcept {
    try {
      self.Log(line);
    } catch (...) {
    }
  }

  // Runs `body`, which replies itself as its last step; if it throws, it has
  // not replied yet, so the barrier replies. `reply_none` for forget.
  template <class Body>
  static void Guard(fuse_req_t req, const char* op, Body&& body, bool reply_none = false) noexcept {
    int err = 0;
    try {
      body();
      return;
    } catch (const std::bad_alloc&) {
      err = ENOMEM;
      LogNoThrow(Self(req), std::string("cannot ") + op + ": out of memory");
    } catch (const std::exception& e) {
      err = EIO;
      LogNoThrow(Self(req), std::string("cannot ") + op + ": unexpected exception: " + e.what());
    } catch (...) {
      err = EIO;
      LogNoThrow(Self(req), std::string("cannot ") + op + ": unexpected exception");
    }
    if (reply_none) {
      fuse_reply_none(req);
    } else {
      ReplyErr(req, err);
    }
  }

  // Maps a Tree error through the one table and logs it once, here. "Not
  // found" and "invalid argument" are the caller's business (ls of a missing
  // name), not worth a log line.
  // A name under slice/ or diff/ is a query the user wrote: why it resolves
  // to nothing is worth a line. Requests cut short because the daemon is
  // stopping (kCancelled: EINTR) are not: they say nothing about the array.
  static void ReplyError(fuse_req_t req, const char* op, const std::string& path, const Error& e) {
    int err = ErrnoFor(e);
    if (err <= 0) err = EIO;
    if (e.code() == ErrorCode::kCancelled) return ReplyErr(req, err);
    if ((e.code() != ErrorCode::kNotFound && e.code() != ErrorCode::kInvalidArgument) ||
        IsQueryPath(path)) {
      Self(req).Log(std::string("cannot ") + op + " " + Display(path) + ": " + e.ToString());
    }
    ReplyErr(req, err);
  }

  // A read of an open file that finds something it needs gone (a vacuum
  // under the view) fails with EIO: ENOENT is no answer to a read.
  static Error ReadFailure(const Error& e) {
    return e.code() == ErrorCode::kNotFound ? Error::Io(e.message()) : e;
  }

  static double Timeout(const FuseAdapter& self, bool immutable) {
    return immutable ? self.options_.immutable_timeout_s : self.options_.live_timeout_s;
  }

  // Fills `st`; false if the size does not fit off_t (EOVERFLOW).
  static bool FillStat(const FuseAdapter& self, uint64_t ino, const NodeAttr& attr,
                       struct stat* st) {
    if (attr.size > static_cast<uint64_t>(std::numeric_limits<off_t>::max())) return false;
    *st = {};
    st->st_ino = ino;
    st->st_mode = ModeOf(attr.type);
    st->st_nlink = 1;
    st->st_uid = self.options_.uid;
    st->st_gid = self.options_.gid;
    st->st_size = static_cast<off_t>(attr.size);
    // Files: the largest read the kernel sends (cat, cp and dd read this
    // much per call).
    st->st_blksize = attr.type == NodeType::kFile ? FuseAdapter::kMaxRead : 64 * 1024;
    st->st_blocks = static_cast<blkcnt_t>(attr.size / 512 + (attr.size % 512 != 0));
    // Floor division, so that times before the epoch stay correct.
    int64_t sec = attr.mtime_ms / 1000, ms = attr.mtime_ms % 1000;
    if (ms < 0) {
      ms += 1000;
      sec -= 1;
    }
    st->st_mtim.tv_sec = static_cast<time_t>(sec);
    st->st_mtim.tv_nsec = static_cast<long>(ms * 1000000);
    st->st_atim = st->st_mtim;
    st->st_ctim = st->st_mtim;
    return true;
  }

  // The path of a node the kernel holds; replies ESTALE and returns nullopt
  // for a number we do not know (the kernel only uses numbers it looked up).
  static std::optional<InodeTable::Node> NodeOrReply(fuse_req_t req, fuse_ino_t ino) {
    auto node = Self(req).inodes_.Get(ino);
    if (!node) ReplyErr(req, ESTALE);
    return node;
  }

  // The attributes to give the kernel for `ino`: a file's size is the one
  // its cached opens read (kernel_cache.h).
  static NodeAttr ForKernel(FuseAdapter& self, uint64_t ino, NodeAttr attr) {
    if (attr.type == NodeType::kFile) attr.size = self.kernel_cache_.ReportSize(ino, attr.size);
    return attr;
  }

  static void Forget(FuseAdapter& self, uint64_t ino, uint64_t nlookup) {
    if (self.inodes_.Forget(ino, nlookup)) self.kernel_cache_.Drop(ino);
  }

  static bool ValidName(const char* name) {
    const std::string_view n(name);
    return !n.empty() && n != "." && n != ".." && n.find('/') == std::string_view::npos;
  }

  // ---- lifecycle

  static void Init(void* userdata, fuse_conn_info* conn) noexcept {
    conn->max_read = FuseAdapter::kMaxRead;
    conn->max_readahead = FuseAdapter::kMaxRead;
    // Several requests in flight at once: reads are independent.
    if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
    // Re-read a live file when its size or mtime changed since it was cached.
    if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA) conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
    conn->want &= ~static_cast<unsigned>(FUSE_CAP_WRITEBACK_CACHE);
    // Every listing chunk with attributes, not only the first: otherwise a
    // folder past the first chunk costs the kernel a LOOKUP when entered
    // (find over fragments/ and history/: one per folder).
    conn->want &= ~static_cast<unsigned>(FUSE_CAP_READDIRPLUS_AUTO);
    // Folders listed without OPENDIR and RELEASEDIR (listings.h): the first
    // OPENDIR answers ENOSYS and the kernel sends no other.
    auto* self = static_cast<FuseAdapter*>(userdata);
    if ((conn->capable & FUSE_CAP_NO_OPENDIR_SUPPORT) && !self->options_.list_with_opendir) {
      conn->want |= FUSE_CAP_NO_OPENDIR_SUPPORT;
      self->no_opendir_ = true;
    }
  }

  // ---- the device's I/O (fuse_session_custom_io): the same read and
  // writev, with the INIT flags libfuse cannot ask for added (kernel_init.h).
  // Not noexcept: libfuse ends its loop's threads with pthread_cancel while
  // they wait in read(), and the unwind that cancellation makes must pass
  // through (a noexcept frame would end the process).

  static ssize_t DeviceRead(int fd, void* buf, size_t len, void* userdata) {
    const ssize_t n = ::read(fd, buf, len);
    auto& self = *static_cast<FuseAdapter*>(userdata);
    if (n > 0) {
      // Makes no call: errno stays read()'s for libfuse.
      self.kernel_init_.OnRead(std::span(static_cast<const uint8_t*>(buf), static_cast<size_t>(n)));
    } else if (n < 0 && errno == ENODEV && self.config_.handle_signals) {
      // The connection is gone (unmounted, or aborted through
      // /sys/fs/fuse/connections): libfuse ends its loop and then waits for
      // the workers still in a request. The stop (core/util/stop.h) ends
      // those now, and the process ends with the loop. A store to an atomic:
      // errno stays read()'s.
      core::RequestStop();
    }
    return n;
  }

  static ssize_t DeviceWritev(int fd, struct iovec* iov, int count, void* userdata) {
    auto& self = *static_cast<FuseAdapter*>(userdata);
    std::vector<uint8_t> patched;
    bool is_init = false;
    if (count > 0) {
      try {  // no cancellation point in here
        is_init = self.kernel_init_.Patch(std::span(iov, static_cast<size_t>(count)), &patched);
      } catch (const std::bad_alloc&) {
        // Out of memory copying the INIT reply: sent as libfuse made it.
      }
    }
    if (!is_init) return ::writev(fd, iov, count);
    // Before the reply: the kernel sends no other request until it has it.
    if (self.kernel_init_.granted() & kInitDirectIoAllowMmap)
      self.kernel_cache_.set_stream_first(true);
    iovec one{patched.data(), patched.size()};
    return ::writev(fd, &one, 1);
  }

  // ---- names and attributes

  static void Lookup(fuse_req_t req, fuse_ino_t parent, const char* name) noexcept {
    Guard(req, "lookup", [&] {
      FuseAdapter& self = Self(req);
      auto dir = NodeOrReply(req, parent);
      if (!dir) return;
      if (std::strlen(name) > 255) return ReplyErr(req, ENAMETOOLONG);
      if (!ValidName(name)) return ReplyErr(req, ENOENT);
      const std::string path = ChildPath(dir->path, name);
      auto attr = self.tree_->GetAttr(path);
      if (!attr.ok()) {
        if (attr.error().code() == ErrorCode::kNotFound) {
          if (IsQueryPath(path))
            self.Log("cannot look up " + Display(path) + ": " + attr.error().message());
          // A negative entry, cached briefly: even in an immutable folder a
          // name can appear when a consolidation rewrites the view.
          fuse_entry_param e{};
          e.ino = 0;
          e.entry_timeout = Timeout(self, false);
          fuse_reply_entry(req, &e);
          return;
        }
        return ReplyError(req, "look up", path, attr.error());
      }
      fuse_entry_param e{};
      if (!FillStat(self, 0, *attr, &e.attr)) return ReplyErr(req, EOVERFLOW);
      e.ino = self.inodes_.Lookup(path, attr->immutable);
      FillStat(self, e.ino, ForKernel(self, e.ino, *attr), &e.attr);
      e.attr_timeout = e.entry_timeout = Timeout(self, attr->immutable);
      // If the reply fails (interrupted), the kernel never saw this lookup.
      if (fuse_reply_entry(req, &e) != 0) Forget(self, e.ino, 1);
    });
  }

  static void Forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) noexcept {
    Guard(
        req, "forget",
        [&] {
          Forget(Self(req), ino, nlookup);
          fuse_reply_none(req);
        },
        /*reply_none=*/true);
  }

  static void ForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) noexcept {
    Guard(
        req, "forget",
        [&] {
          for (size_t i = 0; i < count; ++i) {
            Forget(Self(req), forgets[i].ino, forgets[i].nlookup);
          }
          fuse_reply_none(req);
        },
        /*reply_none=*/true);
  }

  static void GetAttr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
    Guard(req, "stat", [&] {
      FuseAdapter& self = Self(req);
      auto node = NodeOrReply(req, ino);
      if (!node) return;
      if (fi != nullptr && fi->fh != 0 && !node->path.empty()) {
        // Through an open file (fstat, or the kernel checking the size
        // before a read): that file's snapshot, even if the path is gone
        // since (vacuumed) or shows other bytes now.
        const auto* h = reinterpret_cast<const FileHandle*>(fi->fh);
        NodeAttr attr;
        attr.type = NodeType::kFile;
        attr.size = h->file->size();
        attr.mtime_ms = h->file->mtime_ms;
        attr.immutable = node->immutable;
        struct stat st;
        if (!FillStat(self, ino, ForKernel(self, ino, attr), &st)) return ReplyErr(req, EOVERFLOW);
        fuse_reply_attr(req, &st, Timeout(self, attr.immutable));
        return;
      }
      auto attr = self.tree_->GetAttr(node->path);
      if (!attr.ok()) return ReplyError(req, "stat", node->path, attr.error());
      struct stat st;
      if (!FillStat(self, ino, *attr, &st)) return ReplyErr(req, EOVERFLOW);
      FillStat(self, ino, ForKernel(self, ino, *attr), &st);
      self.inodes_.SetImmutable(ino, attr->immutable);
      fuse_reply_attr(req, &st, Timeout(self, attr->immutable));
    });
  }

  static void StatFs(fuse_req_t req, fuse_ino_t) noexcept {
    Guard(req, "statfs", [&] {
      struct statvfs sv {};
      sv.f_bsize = 4096;
      sv.f_frsize = 4096;
      sv.f_namemax = 255;
      sv.f_flag = ST_RDONLY;
      fuse_reply_statfs(req, &sv);
    });
  }

  // ---- files

  static void Open(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
    Guard(req, "open", [&] {
      FuseAdapter& self = Self(req);
      if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC) != 0) {
        return ReplyErr(req, EROFS);
      }
      auto node = NodeOrReply(req, ino);
      if (!node) return;
      auto file = self.tree_->Open(node->path);
      if (!file.ok()) return ReplyError(req, "open", node->path, file.error());
      auto handle = std::make_unique<FileHandle>();
      handle->file = std::move(file).value();
      handle->path = node->path;
      handle->ino = ino;
      const KernelCache::OpenMode mode = self.kernel_cache_.Open(
          ino, handle->file->snapshot_id, handle->file->size(), handle->file->ReadsAtRandom());
      handle->pages = mode.pages;
      // Before the reply, so that the first read already asks for the size
      // (offset -1: the attributes only, no page locks taken).
      if (mode.invalidate_size && self.session_ != nullptr) {
        fuse_lowlevel_notify_inval_inode(self.session_, ino, -1, 0);
      }
      FileHandle* h = self.Adopt(std::move(handle));
      fi->fh = reinterpret_cast<uint64_t>(h);
      fi->keep_cache = mode.keep_cache ? 1 : 0;
      fi->direct_io = mode.direct_io ? 1 : 0;
      fi->noflush = 1;
      // If the reply fails (interrupted), release never comes.
      if (fuse_reply_open(req, fi) != 0) self.Free(h);
    });
  }

  static void Read(fuse_req_t req, fuse_ino_t, size_t size, off_t off,
                   fuse_file_info* fi) noexcept {
    Guard(req, "read", [&] {
      auto* h = reinterpret_cast<FileHandle*>(fi->fh);
      if (off < 0) return ReplyErr(req, EINVAL);
      // A read with no lock owner fills the page cache (the kernel sends
      // one with every direct_io read, none with a page fill: readahead,
      // a mapping). Through an open of another snapshot than the pages',
      // it would put that snapshot in the pages the other opens read.
      if (!h->pages && fi->lock_owner == 0) {
        if (!h->refused_fill.exchange(true)) {
          Self(req).Log("cannot read " + Display(h->path) +
                        " into the page cache (a mapping): it was opened on a newer snapshot "
                        "while an older one is open; map it once the older one is closed");
        }
        return ReplyErr(req, EIO);
      }
      size = std::min(size, FuseAdapter::kMaxRead);
      if (h->file->ReadsPieces()) return ReadPieces(req, h, size, off);
      uint8_t* buf = ReadBuffer();
      size_t got = 0;
      std::optional<Error> failed;
      {
        std::lock_guard lock(h->mu);
        // OpenFile::Read may return less than asked only at end of file; loop
        // anyway, so that a short count here always means end of file.
        while (got < size) {
          auto n = h->file->Read(static_cast<uint64_t>(off) + got,
                                 std::span<uint8_t>(buf + got, size - got));
          if (!n.ok()) {
            failed = n.error();
            break;
          }
          if (*n == 0) break;
          got += std::min(*n, size - got);
        }
      }
      // Never reply with the lock held: once the reply is out the kernel may
      // release the file, and the handle (with its lock) is freed.
      if (failed) return ReplyError(req, "read", h->path, ReadFailure(*failed));
      fuse_reply_buf(req, reinterpret_cast<const char*>(buf), got);
    });
  }

  // One buffer of kMaxRead bytes per FUSE worker thread, reused from read to
  // read and never cleared (a reply sends only the bytes written): no
  // allocation or memset of a megabyte per request.
  static uint8_t* ReadBuffer() {
    thread_local std::unique_ptr<uint8_t[]> buf;
    if (!buf) buf.reset(new uint8_t[FuseAdapter::kMaxRead]);
    return buf.get();
  }

  // A read of a file that hands out pieces of its decoded tiles: they go
  // to the kernel as they are (one writev), not copied into a buffer first.
  static void ReadPieces(fuse_req_t req, FileHandle* h, size_t size, off_t off) {
    // Per FUSE worker thread, reused; emptied after every reply so that no
    // tile stays held by a thread between reads.
    thread_local core::Pieces pieces;
    thread_local std::vector<iovec> iov;
    struct Empty {
      ~Empty() { pieces.Clear(); }
    } empty;
    pieces.Clear();
    Result<size_t> got = size_t{0};
    {
      std::lock_guard lock(h->mu);
      got = h->file->ReadPieces(static_cast<uint64_t>(off), size, &pieces);
    }
    // Never reply with the lock held (Read says why).
    if (!got.ok()) return ReplyError(req, "read", h->path, ReadFailure(got.error()));
    if (pieces.bytes != *got || *got > size) {
      return ReplyError(
          req, "read", h->path,
          Error::Corrupt(fmt::format("{} bytes in pieces for a read of {}", pieces.bytes, *got)));
    }
    // Pieces of under a page on average are copied into one buffer: the
    // kernel pins a page and copies per piece, which costs more than our
    // copy. writev also takes at most IOV_MAX pieces, the reply's header
    // among them.
    constexpr size_t kCopyBelowAverage = 4096;
    const size_t n = pieces.spans.size();
    if (n >= IOV_MAX || (n > 1 && *got < n * kCopyBelowAverage)) {
      uint8_t* buf = ReadBuffer();
      size_t at = 0;
      for (core::Bytes b : pieces.spans) {
        std::memcpy(buf + at, b.data(), b.size());
        at += b.size();
      }
      fuse_reply_buf(req, reinterpret_cast<const char*>(buf), at);
      return;
    }
    iov.clear();
    for (core::Bytes b : pieces.spans) {
      iov.push_back(iovec{const_cast<uint8_t*>(b.data()), b.size()});
    }
    fuse_reply_iov(req, iov.data(), static_cast<int>(iov.size()));
  }

  static void Release(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) noexcept {
    Guard(req, "release", [&] {
      Self(req).Free(reinterpret_cast<FileHandle*>(fi->fh));
      fuse_reply_err(req, 0);
    });
  }

  // ---- directories

  static void OpenDir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) noexcept {
    Guard(req, "list", [&] {
      FuseAdapter& self = Self(req);
      if (self.no_opendir_) return ReplyErr(req, ENOSYS);
      auto node = NodeOrReply(req, ino);
      if (!node) return;
      auto entries = self.tree_->List(node->path);
      if (!entries.ok()) return ReplyError(req, "list", node->path, entries.error());
      auto handle = std::make_unique<DirHandle>();
      handle->path = node->path;
      handle->entries = std::move(entries).value();
      DirHandle* h = self.Adopt(std::move(handle));
      fi->fh = reinterpret_cast<uint64_t>(h);
      fi->cache_readdir = node->immutable ? 1 : 0;
      fi->keep_cache = node->immutable ? 1 : 0;
      if (fuse_reply_open(req, fi) != 0) self.Free(h);
    });
  }

  // Offsets: 0 = start, k = after the k-th entry ("." and ".." come first),
  // in the low 32 bits; the high bits name the listing (listings.h), 0 for
  // the one an open handle holds.
  static void ReadDir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi,
                      bool plus) {
    FuseAdapter& self = Self(req);
    if (off < 0) return ReplyErr(req, EINVAL);
    std::optional<InodeTable::Node> node;  // without a handle
    const std::string* path = nullptr;
    const std::vector<DirEntryAttr>* entries = nullptr;
    Listings::Entries listing;  // held for this call
    uint64_t id = 0;
    if (fi->fh != 0) {
      const auto* h = reinterpret_cast<const DirHandle*>(fi->fh);
      path = &h->path;
      entries = &h->entries;
    } else {
      node = NodeOrReply(req, ino);
      if (!node) return;
      path = &node->path;
      id = Listings::IdOf(off);
      if (id != 0) listing = self.listings_.Find(ino, id);
      if (!listing) {
        auto listed = self.tree_->List(*path);
        if (!listed.ok()) return ReplyError(req, "list", *path, listed.error());
        listing = std::make_shared<const std::vector<DirEntryAttr>>(std::move(listed).value());
        id = self.listings_.Add(ino, listing);
      }
      entries = listing.get();
    }
    // Positions must fit the offsets' low 32 bits, with or without a handle.
    if (entries->size() + 2 > Listings::kMaxPosition) {
      if (id != 0) self.listings_.Done(id);
      self.Log("cannot list " + Display(*path) + ": too many entries");
      return ReplyErr(req, EOVERFLOW);
    }
    const bool live = node && !node->immutable;  // kernel-cached without a handle
    const size_t start = Listings::PositionOf(off);
    const size_t total = entries->size() + 2;
    if (start >= total) {
      if (id != 0) self.listings_.Done(id);
      fuse_reply_buf(req, nullptr, 0);
      // Without OPENDIR the kernel keeps every listing it read to the end
      // (FOPEN_CACHE_DIR is its default then) and serves the next ones from
      // it while the folder's mtime stays the same. A live folder's entries
      // change without that (a consolidation, a vacuum), so its listing is
      // dropped once read: each listing of it comes from here.
      if (live) self.DropListingSoon(ino);
      return;
    }
    size = std::min(size, FuseAdapter::kMaxRead);
    // The thread's read buffer; only the `used` bytes the entries fill are
    // sent.
    char* buf = reinterpret_cast<char*>(ReadBuffer());
    size_t used = 0;
    for (size_t i = start; i < total; ++i) {
      const bool dot = i < 2;
      const char* name = i == 0 ? "." : i == 1 ? ".." : (*entries)[i - 2].name.c_str();
      const off_t next = Listings::Offset(id, i + 1);
      char* at = buf + used;
      const size_t room = size - used;
      size_t need;
      if (dot) {
        struct stat st {};
        st.st_ino = i == 0 ? ino : self.inodes_.Peek(ParentPath(*path));
        st.st_mode = S_IFDIR;
        if (plus) {
          // "." and ".." are not looked up by readdirplus (no count).
          fuse_entry_param e{};
          e.attr = st;
          need = fuse_add_direntry_plus(req, at, room, name, &e, next);
        } else {
          need = fuse_add_direntry(req, at, room, name, &st, next);
        }
      } else {
        const DirEntryAttr& entry = (*entries)[i - 2];
        if (plus) {
          if (fuse_add_direntry_plus(req, nullptr, 0, name, nullptr, 0) > room) break;
          fuse_entry_param e{};
          if (!entry.attr.sized) {
            // No attributes to give without working the size out: the name
            // alone (inode 0), the kernel looks the entry up when it needs
            // more. `ls` and `find` never make the daemon render a file.
            e.attr.st_mode = ModeOf(entry.attr.type);
            e.attr.st_ino = self.inodes_.PeekChild(*path, entry.name);
          } else if (!FillStat(self, 0, entry.attr, &e.attr)) {
            // Cannot be described: list it without attributes (the lookup
            // that follows reports EOVERFLOW).
            e.attr.st_mode = ModeOf(entry.attr.type);
            e.attr.st_ino = self.inodes_.PeekChild(*path, entry.name);
          } else {
            e.ino = self.inodes_.LookupChild(*path, entry.name, entry.attr.immutable);
            FillStat(self, e.ino, ForKernel(self, e.ino, entry.attr), &e.attr);
            e.attr_timeout = e.entry_timeout = Timeout(self, entry.attr.immutable);
          }
          need = fuse_add_direntry_plus(req, at, room, name, &e, next);
        } else {
          struct stat st {};
          st.st_ino = self.inodes_.PeekChild(*path, entry.name);
          st.st_mode = ModeOf(entry.attr.type);
          need = fuse_add_direntry(req, at, room, name, &st, next);
        }
      }
      if (need > room) break;  // full; the kernel asks again from `next`
      used += need;
    }
    fuse_reply_buf(req, buf, used);
  }

  static void ReadDirPlain(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                           fuse_file_info* fi) noexcept {
    Guard(req, "list", [&] { ReadDir(req, ino, size, off, fi, /*plus=*/false); });
  }

  static void ReadDirPlus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
                          fuse_file_info* fi) noexcept {
    Guard(req, "list", [&] { ReadDir(req, ino, size, off, fi, /*plus=*/true); });
  }

  static void ReleaseDir(fuse_req_t req, fuse_ino_t, fuse_file_info* fi) noexcept {
    Guard(req, "release", [&] {
      Self(req).Free(reinterpret_cast<DirHandle*>(fi->fh));
      fuse_reply_err(req, 0);
    });
  }

  // ---- extended attributes: none. getxattr answers ENOSYS once, so the
  // kernel stops asking (EOPNOTSUPP from then on, without a round trip):
  // `ls -l` asks for two attributes per entry. listxattr gives the empty list.

  static void GetXattr(fuse_req_t req, fuse_ino_t, const char*, size_t) noexcept {
    Guard(req, "getxattr", [&] { ReplyErr(req, ENOSYS); });
  }

  static void ListXattr(fuse_req_t req, fuse_ino_t, size_t size) noexcept {
    Guard(req, "listxattr", [&] {
      if (size == 0) {
        fuse_reply_xattr(req, 0);
      } else {
        fuse_reply_buf(req, nullptr, 0);
      }
    });
  }

  // ---- everything that would change something: EROFS

  static void Rofs(fuse_req_t req) noexcept { ReplyErr(req, EROFS); }
  static void SetAttr(fuse_req_t req, fuse_ino_t, struct stat*, int, fuse_file_info*) noexcept {
    Rofs(req);
  }
  static void MkNod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) noexcept { Rofs(req); }
  static void MkDir(fuse_req_t req, fuse_ino_t, const char*, mode_t) noexcept { Rofs(req); }
  static void Unlink(fuse_req_t req, fuse_ino_t, const char*) noexcept { Rofs(req); }
  static void RmDir(fuse_req_t req, fuse_ino_t, const char*) noexcept { Rofs(req); }
  static void Symlink(fuse_req_t req, const char*, fuse_ino_t, const char*) noexcept { Rofs(req); }
  static void Rename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*,
                     unsigned) noexcept {
    Rofs(req);
  }
  static void Link(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) noexcept { Rofs(req); }
  static void Write(fuse_req_t req, fuse_ino_t, const char*, size_t, off_t,
                    fuse_file_info*) noexcept {
    Rofs(req);
  }
  static void Create(fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) noexcept {
    Rofs(req);
  }
  static void SetXattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) noexcept {
    Rofs(req);
  }
  static void RemoveXattr(fuse_req_t req, fuse_ino_t, const char*) noexcept { Rofs(req); }
  static void Fallocate(fuse_req_t req, fuse_ino_t, int, off_t, off_t, fuse_file_info*) noexcept {
    Rofs(req);
  }
  static void CopyFileRange(fuse_req_t req, fuse_ino_t, off_t, fuse_file_info*, fuse_ino_t, off_t,
                            fuse_file_info*, size_t, int) noexcept {
    Rofs(req);
  }

  static fuse_lowlevel_ops Table() {
    fuse_lowlevel_ops ops{};
    ops.init = Init;
    ops.lookup = Lookup;
    ops.forget = Forget;
    ops.forget_multi = ForgetMulti;
    ops.getattr = GetAttr;
    ops.statfs = StatFs;
    ops.open = Open;
    ops.read = Read;
    ops.release = Release;
    ops.opendir = OpenDir;
    ops.readdir = ReadDirPlain;
    ops.readdirplus = ReadDirPlus;
    ops.releasedir = ReleaseDir;
    ops.getxattr = GetXattr;
    ops.listxattr = ListXattr;
    ops.setattr = SetAttr;
    ops.mknod = MkNod;
    ops.mkdir = MkDir;
    ops.unlink = Unlink;
    ops.rmdir = RmDir;
    ops.symlink = Symlink;
    ops.rename = Rename;
    ops.link = Link;
    ops.write = Write;
    ops.create = Create;
    ops.setxattr = SetXattr;
    ops.removexattr = RemoveXattr;
    ops.fallocate = Fallocate;
    ops.copy_file_range = CopyFileRange;
    return ops;
  }
};

fuse_lowlevel_ops RequestHandlers() { return FuseOps::Table(); }

fuse_custom_io DeviceIo() { return {FuseOps::DeviceWritev, FuseOps::DeviceRead, nullptr, nullptr}; }

template <class Handle>
Handle* FuseAdapter::Adopt(std::unique_ptr<Handle> handle) {
  Handle* raw = handle.get();
  std::lock_guard lock(handles_mu_);
  if constexpr (std::is_same_v<Handle, FileHandle>) {
    files_.emplace(raw, std::move(handle));
  } else {
    dirs_.emplace(raw, std::move(handle));
  }
  return raw;
}

void FuseAdapter::Free(FileHandle* handle) {
  kernel_cache_.Release(handle->ino, handle->pages);
  std::unique_ptr<FileHandle> owned;  // destroyed after the lock is let go
  std::lock_guard lock(handles_mu_);
  if (auto it = files_.find(handle); it != files_.end()) {
    owned = std::move(it->second);
    files_.erase(it);
  }
}

void FuseAdapter::Free(DirHandle* handle) {
  std::unique_ptr<DirHandle> owned;
  std::lock_guard lock(handles_mu_);
  if (auto it = dirs_.find(handle); it != dirs_.end()) {
    owned = std::move(it->second);
    dirs_.erase(it);
  }
}

}  // namespace tiledbfs::fusefs
