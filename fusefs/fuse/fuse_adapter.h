// The thin libfuse (low-level API) adapter: serves a Tree through a FUSE
// session. No global state: everything lives in a FuseAdapter object, which
// a test can construct twice in one process (over two trees, two mounts).
//
// Every request handler is a noexcept adapter: it checks its arguments, makes
// one call into the Tree, maps an error through ErrnoFor (tree.h, one table),
// and replies. One barrier catches anything thrown so that nothing unwinds
// into libfuse (std::bad_alloc -> ENOMEM, anything else -> EIO). Failures
// other than "not found" and "invalid argument" are logged once, here, as
// "cannot <op> /<path>: <reason>" (stderr, or syslog once daemonized).
//
// The contracts we give the kernel:
// - Read-only: every mutating request (create, mkdir, mknod, unlink, rmdir,
//   rename, write, setattr (truncate, chmod, chown, utimens), symlink, link,
//   setxattr, removexattr, fallocate, copy_file_range) and every open for
//   writing or with O_TRUNC answers EROFS. The kernel mount is also 'ro', so
//   most of these never reach us.
// - stat tells the truth: st_size = NodeAttr.size (exactly what a full read
//   returns), st_blocks = ceil(size / 512) (for du), st_mtime = st_ctime =
//   st_atime = mtime_ms; modes 0444 (files) and 0555 (directories); owner
//   = the mounting user; st_nlink 1 (directories: "unknown", so that find
//   does not guess subdirectory counts).
// - Inode numbers are stable for the mount's life (see inode_table.h).
// - Caching: nodes whose attributes say immutable (history views up to the
//   newest instant, a pinned timestamp, a fragment's own cells) get entry
//   and attribute timeouts of a year and cached directory listings. Live
//   nodes (the latest view) get 1 second timeouts: a new commit shows up in
//   attributes and listings at most 1 s later, and at once in the next open.
//   Names not found are cached for 1 s. Pages and sizes are shared between
//   opens only when they read the same snapshot (kernel_cache.h): an open of
//   another snapshot while one is open reads with direct_io, and a page fill
//   through it (a mapping) fails with EIO.
// - Where the kernel lets files opened with direct_io be mapped (Linux 6.6:
//   FUSE_DIRECT_IO_ALLOW_MMAP, which the adapter adds to libfuse's INIT
//   reply: kernel_init.h), the first open of each snapshot of a file reads
//   with direct_io: replies go straight into the reader's buffer, and a
//   file read once takes no page cache. The next open reads through the
//   page cache (kernel_cache.h).
// - A watcher thread rechecks the tree once a second (Tree::Refresh); when a
//   consolidation, vacuum or write at an old timestamp rewrote past views,
//   it tells the kernel to drop everything it keeps of immutable nodes
//   (attributes, pages, listings, names), so history views follow within
//   about a second.
// - Read fills the whole request except at end of file; an error after some
//   bytes were read fails the whole request (a short read would look like
//   end of file). An open file reads the snapshot it was opened on.
// - Folders are listed without OPENDIR and RELEASEDIR where the kernel
//   allows it (listings.h): two round trips per folder instead of four. Each
//   listing reads the snapshot taken at its first request to the end, so it
//   can only fail before the first entry; offsets carry the listing and the
//   entry index, so a listing continues correctly across requests. The
//   kernel keeps finished listings; those of live folders are dropped as
//   soon as they are read (the watcher does it), so that each listing of a
//   live folder is new. Kernels without that support get OPENDIR, which
//   takes the snapshot. readdirplus gives attributes too.
// - Reads and readahead of up to 1 MiB per request (max_read, max_readahead,
//   and the mount's read_ahead_kb raised to match: readahead.h). Files
//   report that as st_blksize, so cat, cp and dd ask for 1 MiB per call.
// - A file that hands out pieces of its decoded tiles (OpenFile::ReadsPieces:
//   the values of fixed-size attributes) is answered with one writev of
//   those pieces, not copied into a buffer first; pieces of under a page on
//   average, or past IOV_MAX of them, are copied after all.
//
// - Stopping (issue 50; an adapter that handles signals, i.e. the daemon's):
//   SIGTERM, SIGINT and SIGHUP (our handler, then libfuse's), the mount
//   detached from outside (fusermount3 -u -z, umount -l: a thread sees
//   /proc/self/mountinfo no longer list it) and the connection ending
//   (unmounted, aborted: ENODEV where the adapter reads the device itself,
//   stream_first_reads; else once the loop is over) each set the process's
//   stop (core/util/stop.h). A request in the middle of long work (a diff,
//   an index build, a GET to a silent store) then ends within a fraction of
//   a second, answering EINTR, instead of holding up the loop's end
//   (libfuse joins its workers) until it is done. Then the loop ends, the
//   mount is taken away (unless it was detached already: the path may hold
//   another mount by then) and Serve returns. Nothing is written anywhere:
//   a stop leaves no state behind but the caches, which keep no
//   cancelled result.
//
// Threads: the Tree's methods are called from several threads at once (the
// multithreaded loop), so the Tree must be thread-safe; reads of one
// OpenFile are serialized by the adapter.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fusefs/fuse/inode_table.h"
#include "fusefs/fuse/kernel_cache.h"
#include "fusefs/fuse/kernel_init.h"
#include "fusefs/fuse/listings.h"
#include "fusefs/model/tree.h"

struct fuse_session;

namespace tiledbfs::fusefs {

struct FileHandle;  // an open file (fuse_ops.h)
struct DirHandle;   // an open directory

struct AdapterOptions {
  uid_t uid = 0;  // owner of every node: the mounting user
  gid_t gid = 0;
  double live_timeout_s = 1.0;
  double immutable_timeout_s = 365.0 * 24 * 3600;
  double refresh_interval_s = 1.0;  // the watcher's period; 0: no watcher
  // Lists folders through OPENDIR even where the kernel can do without (the
  // path older kernels take; tests/mount/adapter_mount_test.py runs both).
  bool list_with_opendir = false;
  // The first open of each snapshot of a file reads past the page cache
  // where the kernel allows mapping such opens (kernel_cache.h, Streaming;
  // kernel_init.h). false: every open of a file's snapshot reads through
  // the page cache, as with kernels before 6.6.
  bool stream_first_reads = true;
};

struct MountConfig {
  std::string mountpoint;  // an absolute path (the process may chdir("/"))
  std::string fsname;      // the source column of /proc/mounts
  // Extra libfuse options, one per element without "-o": allow_other, ...
  std::vector<std::string> fuse_options;
  bool debug = false;          // libfuse prints every request
  bool single_thread = false;  // fuse_session_loop instead of the mt loop
  unsigned max_threads = 16;
  // Serve() stops on SIGINT/SIGTERM/SIGHUP (libfuse keeps one such session
  // per process: turn off for a second adapter serving in the same process).
  // The adapter then stands for the process: a signal, the mount detached
  // from outside or the connection ending sets the process's stop
  // (core/util/stop.h; see the top), as does the loop's end.
  bool handle_signals = true;
  // Tests only: leave the kernel mount writable so that mutating requests
  // reach the adapter and its own EROFS answers can be checked.
  bool kernel_read_only = true;
};

class FuseAdapter {
 public:
  static constexpr size_t kMaxRead = size_t{1} << 20;

  FuseAdapter(std::unique_ptr<Tree> tree, AdapterOptions options);
  ~FuseAdapter();  // unmounts (if mounted) and destroys the session
  FuseAdapter(const FuseAdapter&) = delete;
  FuseAdapter& operator=(const FuseAdapter&) = delete;

  // Creates the session (read-only, default_permissions, fsname, subtype
  // tiledbfs, max_read 1 MiB, plus config.fuse_options) and mounts it.
  // Errors: kInvalidArgument (libfuse rejected an option; it printed which),
  // kIo (the mount failed: mount point, permissions, /dev/fuse). On failure
  // nothing is mounted. Call once.
  core::Status Mount(const MountConfig& config);

  // Unless `foreground`, detaches from the terminal (fuse_daemonize: the
  // calling process exits 0 once the child runs, so call this only after
  // Mount succeeded) and logs to syslog from then on. Errors: kIo.
  core::Status Daemonize(bool foreground);

  // Serves requests until the file system is unmounted or (handle_signals)
  // the process gets SIGINT, SIGTERM or SIGHUP or the mount is detached;
  // then unmounts. Errors: kIo (the loop failed).
  core::Status Serve();

  // Unmounts now (idempotent).
  void Unmount();

  // Where "cannot <op> ..." lines go (default: stderr).
  void SetLogSink(std::function<void(const std::string&)> sink);

 private:
  friend struct FuseOps;

  void Log(const std::string& line) const;
  // The watcher (see the top): runs until stop_watch_ is set.
  void Watch();
  // Has the watcher drop the kernel's listing of live folder `ino`.
  void DropListingSoon(uint64_t ino);
  // Tells the kernel to drop what it keeps of every immutable node.
  void InvalidateImmutable();
  // Watching for the mount being detached from outside (handle_signals):
  // a thread polls /proc/self/mountinfo (POLLPRI at each change of the
  // mount table) until no mount of our device is listed (moved or bound
  // elsewhere, it still serves), then sets the stop and ends the loop
  // (SIGTERM to the thread that runs it, as if the daemon had got it).
  // False, and nothing watched, if the mount cannot be found there
  // (another mount namespace).
  bool StartMountWatch();
  void StopMountWatch();
  void WatchMount();

  // Open files and directories, owned here: the kernel holds their addresses
  // (fh) until release, and a session that ends with files open frees them.
  template <class Handle>
  Handle* Adopt(std::unique_ptr<Handle> handle);
  void Free(FileHandle* handle);
  void Free(DirHandle* handle);

  std::unique_ptr<Tree> tree_;
  AdapterOptions options_;
  InodeTable inodes_;
  KernelCache kernel_cache_;
  // The INIT flags libfuse cannot ask for, added on the device's I/O.
  KernelInit kernel_init_{kInitDirectIoAllowMmap};
  // Set at init when the kernel lists folders without OPENDIR (listings.h).
  bool no_opendir_ = false;
  Listings listings_;
  std::mutex handles_mu_;
  std::unordered_map<const FileHandle*, std::unique_ptr<FileHandle>> files_;
  std::unordered_map<const DirHandle*, std::unique_ptr<DirHandle>> dirs_;
  std::mutex watch_mu_;
  std::condition_variable watch_cv_;
  bool stop_watch_ = false;
  // Live folders listed to the end, whose listing the kernel now holds: the
  // watcher tells the kernel to drop it (see ReadDir). Under watch_mu_.
  std::vector<uint64_t> listed_live_;
  MountConfig config_;
  ::fuse_session* session_ = nullptr;
  bool mounted_ = false;
  std::string mount_path_;  // the mount point, symbolic links resolved
  // The mount watch: /proc/self/mountinfo, our mount's device there
  // ("MAJOR:MINOR"), an eventfd that ends the watch, the thread running
  // the loop (to wake).
  int mountinfo_fd_ = -1;
  std::string mount_dev_;
  int mount_wake_fd_ = -1;
  std::thread mount_watch_;
  pthread_t loop_thread_{};
  std::atomic<bool> mount_gone_{false};  // detached from outside
  std::function<void(const std::string&)> log_;
};

}  // namespace tiledbfs::fusefs
