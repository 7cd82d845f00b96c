#define FUSE_USE_VERSION 312
#include "fusefs/fuse/fuse_adapter.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <fuse_lowlevel.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
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
#include <iterator>
#include <limits>
#include <mutex>
#include <new>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>
#include <type_traits>
#include <vector>

#include "core/util/sanitizers.h"
#include "core/util/stop.h"
#include "fusefs/fuse/fuse_ops.h"
#include "fusefs/fuse/readahead.h"

#if TILEDBFS_ASAN
#include <sanitizer/lsan_interface.h>
#endif

namespace tiledbfs::fusefs {

using core::Error;

namespace {

// libfuse splits -o values at commas; a backslash keeps one in a value.
std::string EscapeOptionValue(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == ',' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// The signals that stop the daemon, and the handlers libfuse installed for
// them (fuse_set_signal_handlers), which ours chain to. Process-wide, as
// signal handlers are (libfuse's own keep the one session in a static).
constexpr int kStopSignals[] = {SIGHUP, SIGINT, SIGTERM};
constexpr size_t kStopSignalCount = std::size(kStopSignals);
struct sigaction g_fuse_actions[kStopSignalCount];
bool g_chained[kStopSignalCount];

// Sets the process's stop before libfuse's handler ends the loop, so that
// the workers libfuse then waits for end their requests now. Only
// async-signal-safe calls: an atomic store, libfuse's handler (which sets
// two fields of the session).
void OnStopSignal(int sig, siginfo_t* info, void* context) {
  const int saved = errno;
  core::RequestStop();
  for (size_t i = 0; i < kStopSignalCount; ++i) {
    if (kStopSignals[i] != sig || !g_chained[i]) continue;
    const struct sigaction& fuse = g_fuse_actions[i];
    if ((fuse.sa_flags & SA_SIGINFO) != 0) {
      fuse.sa_sigaction(sig, info, context);
    } else {
      fuse.sa_handler(sig);
    }
  }
  errno = saved;
}

// Puts OnStopSignal in front of each handler libfuse installed (a signal it
// left alone, such as a SIGHUP ignored under nohup, stays as it is).
void ChainStopSignals() {
  for (size_t i = 0; i < kStopSignalCount; ++i) {
    g_chained[i] = false;
    struct sigaction now {};
    if (sigaction(kStopSignals[i], nullptr, &now) != 0) continue;
    if ((now.sa_flags & SA_SIGINFO) == 0 &&
        (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN)) {
      continue;
    }
    g_fuse_actions[i] = now;
    struct sigaction ours {};
    ours.sa_sigaction = OnStopSignal;
    sigemptyset(&ours.sa_mask);
    // No SA_RESTART, as libfuse's: the loop's waits end.
    ours.sa_flags = SA_SIGINFO;
    g_chained[i] = sigaction(kStopSignals[i], &ours, nullptr) == 0;
  }
}

bool Chained(int sig) {
  for (size_t i = 0; i < kStopSignalCount; ++i) {
    if (kStopSignals[i] == sig) return g_chained[i];
  }
  return false;
}

// Puts libfuse's handlers back (fuse_remove_signal_handlers removes only
// its own).
void UnchainStopSignals() {
  for (size_t i = 0; i < kStopSignalCount; ++i) {
    if (g_chained[i]) sigaction(kStopSignals[i], &g_fuse_actions[i], nullptr);
  }
}

// Blocks the stop signals in this thread while it lives, so that threads
// started meanwhile never take them: they go to the thread that runs the
// loop, whose waits they end (libfuse's workers block them too).
class StopSignalsBlocked {
 public:
  StopSignalsBlocked() {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : kStopSignals) sigaddset(&set, sig);
    pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~StopSignalsBlocked() { pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  StopSignalsBlocked(const StopSignalsBlocked&) = delete;
  StopSignalsBlocked& operator=(const StopSignalsBlocked&) = delete;

 private:
  sigset_t old_;
};

// All of a /proc file, read from its start.
std::optional<std::string> ReadProcFile(int fd) {
  if (lseek(fd, 0, SEEK_SET) != 0) return std::nullopt;
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::nullopt;
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

// A mountinfo path with its escapes (\040 for a space, \011, \012, \134)
// undone.
std::string UnescapeMountPath(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out += static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

// The devices ("MAJOR:MINOR", the third field) of /proc/self/mountinfo's
// FUSE mounts at `path`, in the table's order (the last is on top); and
// whether any mount of device `dev` is listed (at any path: a mount moved,
// or bound elsewhere, still serves).
struct MountTable {
  std::vector<std::string> fuse_at_path;
  bool listed = false;
};
MountTable ParseMountinfo(std::string_view text, const std::string& path, std::string_view dev) {
  MountTable t;
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    // "ID PARENT MAJ:MIN ROOT MOUNT_POINT OPTIONS [OPTIONAL...] - FSTYPE ..."
    std::vector<std::string_view> f;
    for (size_t at = 0; at < line.size();) {
      const size_t sp = line.find(' ', at);
      const size_t end = sp == std::string_view::npos ? line.size() : sp;
      if (end > at) f.push_back(line.substr(at, end - at));
      at = end + 1;
    }
    if (f.size() < 5) continue;
    if (!dev.empty() && f[2] == dev) t.listed = true;
    size_t dash = 6;
    while (dash < f.size() && f[dash] != "-") ++dash;
    if (dash + 1 >= f.size()) continue;
    if (f[dash + 1].rfind("fuse", 0) == 0 && UnescapeMountPath(f[4]) == path) {
      t.fuse_at_path.emplace_back(f[2]);
    }
  }
  return t;
}

}  // namespace

FuseAdapter::FuseAdapter(std::unique_ptr<Tree> tree, AdapterOptions options)
    : tree_(std::move(tree)), options_(options) {}

FuseAdapter::~FuseAdapter() {
  Unmount();
  if (session_ != nullptr) fuse_session_destroy(session_);
}

void FuseAdapter::SetLogSink(std::function<void(const std::string&)> sink) {
  log_ = std::move(sink);
}

void FuseAdapter::Log(const std::string& line) const {
  if (log_) {
    log_(line);
  } else {
    std::fprintf(stderr, "tiledbfs: %s\n", line.c_str());
  }
}

core::Status FuseAdapter::Mount(const MountConfig& config) {
  if (session_ != nullptr) return Error::InvalidArgument("already mounted");
  config_ = config;
  std::vector<std::string> args = {"tiledbfs"};
  std::string opts = "default_permissions,subtype=tiledbfs,max_read=" + std::to_string(kMaxRead);
  if (config.kernel_read_only) opts += ",ro";
  if (!config.fsname.empty()) opts += ",fsname=" + EscapeOptionValue(config.fsname);
  args.push_back("-o");
  args.push_back(opts);
  for (const std::string& o : config.fuse_options) {
    args.push_back("-o");
    args.push_back(o);
  }
  if (config.debug) args.push_back("-d");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  fuse_args fargs = FUSE_ARGS_INIT(static_cast<int>(args.size()), argv.data());
  const fuse_lowlevel_ops ops = RequestHandlers();
  session_ = fuse_session_new(&fargs, &ops, sizeof(ops), this);
  fuse_opt_free_args(&fargs);
  if (session_ == nullptr) {
    return Error::InvalidArgument("libfuse rejected the mount options");
  }
  // Resolved before the mount: after it, the path leads to this daemon.
  char* real = ::realpath(config.mountpoint.c_str(), nullptr);
  const std::string resolved = real != nullptr ? real : config.mountpoint;
  std::free(real);
#if TILEDBFS_ASAN
  // libfuse (3.14) frees its copy of the mount point only in
  // fuse_session_unmount, which Serve skips for a mount detached from
  // outside: not a leak to report at the daemon's exit.
  __lsan_disable();
#endif
  const int mounted = fuse_session_mount(session_, config.mountpoint.c_str());
#if TILEDBFS_ASAN
  __lsan_enable();
#endif
  if (mounted != 0) {
    fuse_session_destroy(session_);
    session_ = nullptr;
    return Error::Io("cannot mount on " + config.mountpoint);
  }
  mounted_ = true;
  mount_path_ = resolved;
  if (options_.stream_first_reads) {
    // The same descriptor, read and written through the hooks. Should
    // libfuse refuse, the INIT reply goes out as it makes it: no streaming.
    const fuse_custom_io io = DeviceIo();
    if (fuse_session_custom_io(session_, &io, fuse_session_fd(session_)) != 0 && config.debug) {
      Log("first reads go through the page cache: libfuse refused the device hooks");
    }
  }
  // Sequential reads in requests of kMaxRead, not 128 KiB (readahead.h).
  // Not being allowed to (not root) only costs speed: said once, at -d.
  if (auto ra = SetMountReadahead(resolved, kMaxRead / 1024); !ra.ok() && config.debug) {
    Log("readahead left at the kernel's default: " + ra.error().ToString());
  }
  return core::Ok();
}

core::Status FuseAdapter::Daemonize(bool foreground) {
  if (fuse_daemonize(foreground ? 1 : 0) != 0) return Error::Io("cannot detach from the terminal");
  if (!foreground) {
    openlog("tiledbfs", LOG_PID, LOG_DAEMON);
    SetLogSink([](const std::string& line) { syslog(LOG_ERR, "%s", line.c_str()); });
  }
  return core::Ok();
}

core::Status FuseAdapter::Serve() {
  if (session_ == nullptr || !mounted_) return Error::InvalidArgument("not mounted");
  const bool signals = config_.handle_signals;
  if (signals) {
    if (fuse_set_signal_handlers(session_) != 0) return Error::Io("cannot set signal handlers");
    ChainStopSignals();
  }
  {
    std::lock_guard lock(watch_mu_);
    stop_watch_ = false;
  }
  loop_thread_ = pthread_self();
  std::thread watcher;
  {
    // The threads started here (and those they start) leave the stop
    // signals to this one.
    StopSignalsBlocked blocked;
    tree_->Serving();
    watcher = std::thread([this] { Watch(); });
    if (signals) StartMountWatch();
  }
  int rc;
  if (config_.single_thread) {
    rc = fuse_session_loop(session_);
  } else {
    fuse_loop_config* loop = fuse_loop_cfg_create();
    if (loop == nullptr) {
      {
        std::lock_guard lock(watch_mu_);
        stop_watch_ = true;
      }
      watch_cv_.notify_all();
      if (watcher.joinable()) watcher.join();
      StopMountWatch();
      if (signals) {
        UnchainStopSignals();
        fuse_remove_signal_handlers(session_);
      }
      return Error::OutOfMemory("cannot create the loop configuration");
    }
    fuse_loop_cfg_set_clone_fd(loop, 0);
    fuse_loop_cfg_set_max_threads(loop, config_.max_threads);
    rc = fuse_session_loop_mt(session_, loop);
    fuse_loop_cfg_destroy(loop);
  }
  // The process ends with the loop: work still under way (the watcher's
  // recheck, tiles decoded ahead) stops now.
  if (signals) core::RequestStop();
  // Before the handlers go: the watch may signal this thread.
  StopMountWatch();
  if (watcher.joinable()) {
    {
      std::lock_guard lock(watch_mu_);
      stop_watch_ = true;
    }
    watch_cv_.notify_all();
    watcher.join();
  }
  if (signals) {
    UnchainStopSignals();
    fuse_remove_signal_handlers(session_);
  }
  // Detached from outside: nothing is mounted here any more (the path may
  // hold another mount by now); the device closes with the session.
  if (mount_gone_.load()) mounted_ = false;
  Unmount();
  // A positive value is the signal that ended the loop: a normal stop.
  if (rc < 0) return Error::Io(std::string("the FUSE session failed: ") + std::strerror(-rc));
  return core::Ok();
}

void FuseAdapter::DropListingSoon(uint64_t ino) {
  {
    std::lock_guard lock(watch_mu_);
    listed_live_.push_back(ino);
  }
  watch_cv_.notify_all();
}

void FuseAdapter::Watch() {
  const bool recheck = options_.refresh_interval_s > 0;
  const auto period = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(recheck ? options_.refresh_interval_s : 1.0));
  auto next = std::chrono::steady_clock::now() + period;
  std::optional<uint64_t> seen;
  std::string last_error;
  std::unique_lock lock(watch_mu_);
  const auto woken = [this] { return stop_watch_ || !listed_live_.empty(); };
  while (true) {
    if (recheck) {
      watch_cv_.wait_until(lock, next, woken);
    } else {
      watch_cv_.wait(lock, woken);
    }
    if (stop_watch_) break;
    std::vector<uint64_t> listed;
    listed.swap(listed_live_);
    lock.unlock();
    // Offset 0, length 0: the folder's cached pages (its listing) and its
    // attributes. Errors (ENOENT: the kernel dropped the node) change nothing.
    for (uint64_t ino : listed) {
      if (session_ != nullptr) fuse_lowlevel_notify_inval_inode(session_, ino, 0, 0);
    }
    if (!recheck || std::chrono::steady_clock::now() < next) {
      lock.lock();
      continue;
    }
    next = std::chrono::steady_clock::now() + period;
    try {
      auto epoch = tree_->Refresh();
      if (!epoch.ok() && epoch.error().code() == core::ErrorCode::kCancelled) {
        // The daemon is stopping: nothing to say about the array.
      } else if (!epoch.ok()) {
        // Once per distinct failure: the array may be mid-vacuum, or gone.
        std::string message = epoch.error().ToString();
        if (message != last_error) Log("cannot recheck the array: " + message);
        last_error = std::move(message);
      } else {
        last_error.clear();
        if (seen && *seen != *epoch) InvalidateImmutable();
        seen = *epoch;
      }
    } catch (const std::exception& e) {
      Log(std::string("cannot recheck the array: ") + e.what());
    }
    lock.lock();
  }
}

void FuseAdapter::InvalidateImmutable() {
  if (session_ == nullptr) return;
  // Errors (ENOENT: the kernel already dropped a node) change nothing.
  for (const auto& [ino, path] : inodes_.ImmutableNodes()) {
    fuse_lowlevel_notify_inval_inode(session_, ino, 0, 0);
    if (path.empty()) continue;
    const std::string parent = ParentPath(path);
    const std::string name = path.substr(parent.empty() ? 0 : parent.size() + 1);
    fuse_lowlevel_notify_inval_entry(session_, inodes_.Peek(parent), name.c_str(), name.size());
  }
}

bool FuseAdapter::StartMountWatch() {
  mount_gone_ = false;
  // Opened before the mount is looked for: a change in between is reported
  // at the first poll.
  mountinfo_fd_ = ::open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
  if (mountinfo_fd_ < 0) return false;
  auto give_up = [this] {
    if (mountinfo_fd_ >= 0) ::close(mountinfo_fd_);
    if (mount_wake_fd_ >= 0) ::close(mount_wake_fd_);
    mountinfo_fd_ = mount_wake_fd_ = -1;
    return false;
  };
  const std::optional<std::string> text = ReadProcFile(mountinfo_fd_);
  if (!text) return give_up();
  const MountTable table = ParseMountinfo(*text, mount_path_, "");
  if (table.fuse_at_path.empty()) return give_up();
  mount_dev_ = table.fuse_at_path.back();
  mount_wake_fd_ = eventfd(0, EFD_CLOEXEC);
  if (mount_wake_fd_ < 0) return give_up();
  try {
    mount_watch_ = std::thread([this] { WatchMount(); });
  } catch (const std::system_error&) {
    return give_up();
  }
  return true;
}

void FuseAdapter::StopMountWatch() {
  if (mount_watch_.joinable()) {
    const uint64_t one = 1;
    while (::write(mount_wake_fd_, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
    mount_watch_.join();
  }
  if (mountinfo_fd_ >= 0) ::close(mountinfo_fd_);
  if (mount_wake_fd_ >= 0) ::close(mount_wake_fd_);
  mountinfo_fd_ = mount_wake_fd_ = -1;
}

void FuseAdapter::WatchMount() {
  pollfd fds[2] = {{mountinfo_fd_, POLLPRI, 0}, {mount_wake_fd_, POLLIN, 0}};
  for (;;) {
    const int n = ::poll(fds, 2, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || fds[1].revents != 0) return;
    if ((fds[0].revents & (POLLPRI | POLLERR)) == 0) continue;
    const std::optional<std::string> text = ReadProcFile(mountinfo_fd_);
    if (!text) return;
    if (ParseMountinfo(*text, mount_path_, mount_dev_).listed) continue;
    // Detached (fusermount3 -u -z, umount -l) while something still holds
    // it (an open file, a request under way): the kernel keeps the
    // connection, and the daemon would serve on until that lets go.
    mount_gone_ = true;
    core::RequestStop();
    fuse_session_exit(session_);
    // Ends the loop's wait, as a SIGTERM to the daemon would (the handlers
    // are ours until this thread is joined: StopMountWatch comes first).
    // Else the loop ends once a worker is done with its request.
    if (Chained(SIGTERM)) pthread_kill(loop_thread_, SIGTERM);
    return;
  }
}

void FuseAdapter::Unmount() {
  if (session_ != nullptr && mounted_) {
    fuse_session_unmount(session_);
    mounted_ = false;
  }
}

}  // namespace tiledbfs::fusefs
