#define FUSE_USE_VERSION 312
#include "fusefs/fuse/fuse_adapter.h"

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

#include "fusefs/fuse/fuse_ops.h"
#include "fusefs/fuse/readahead.h"

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
  if (fuse_session_mount(session_, config.mountpoint.c_str()) != 0) {
    fuse_session_destroy(session_);
    session_ = nullptr;
    return Error::Io("cannot mount on " + config.mountpoint);
  }
  mounted_ = true;
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
  if (signals && fuse_set_signal_handlers(session_) != 0) {
    return Error::Io("cannot set signal handlers");
  }
  {
    std::lock_guard lock(watch_mu_);
    stop_watch_ = false;
  }
  tree_->Serving();
  std::thread watcher([this] { Watch(); });
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
      if (signals) fuse_remove_signal_handlers(session_);
      return Error::OutOfMemory("cannot create the loop configuration");
    }
    fuse_loop_cfg_set_clone_fd(loop, 0);
    fuse_loop_cfg_set_max_threads(loop, config_.max_threads);
    rc = fuse_session_loop_mt(session_, loop);
    fuse_loop_cfg_destroy(loop);
  }
  if (watcher.joinable()) {
    {
      std::lock_guard lock(watch_mu_);
      stop_watch_ = true;
    }
    watch_cv_.notify_all();
    watcher.join();
  }
  if (signals) fuse_remove_signal_handlers(session_);
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
      if (!epoch.ok()) {
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

void FuseAdapter::Unmount() {
  if (session_ != nullptr && mounted_) {
    fuse_session_unmount(session_);
    mounted_ = false;
  }
}

}  // namespace tiledbfs::fusefs
