// tiledbfs_fake_mount: mounts the FakeTree (fake_tree.h) through the real
// FuseAdapter, for tests/mount/adapter_mount_test.py.
//   tiledbfs_fake_mount [-f] [-s] [--writable-kernel-mount] [--opendir] MOUNTPOINT
// --writable-kernel-mount leaves the kernel mount read-write, so that
// mutating requests reach the adapter and its own EROFS answers are tested.
// --opendir lists folders through OPENDIR (AdapterOptions::list_with_opendir).
// Exit codes as tiledbfs: 1 usage, 4 mount problem.
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "fusefs/fuse/fuse_adapter.h"
#include "tests/fusefs/fuse/fake_tree.h"

int main(int argc, char** argv) {
  namespace fs = tiledbfs::fusefs;
  bool foreground = false, single = false, writable = false, opendir = false;
  std::string mountpoint;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-f") {
      foreground = true;
    } else if (a == "-s") {
      single = true;
    } else if (a == "--writable-kernel-mount") {
      writable = true;
    } else if (a == "--opendir") {
      opendir = true;
    } else if (mountpoint.empty() && a[0] != '-') {
      mountpoint = a;
    } else {
      std::fprintf(stderr, "usage: %s [-f] [-s] [--writable-kernel-mount] [--opendir] MOUNTPOINT\n",
                   argv[0]);
      return 1;
    }
  }
  if (mountpoint.empty()) {
    std::fprintf(stderr, "usage: %s [-f] [-s] [--writable-kernel-mount] [--opendir] MOUNTPOINT\n",
                 argv[0]);
    return 1;
  }
  char real[PATH_MAX];
  if (::realpath(mountpoint.c_str(), real) == nullptr) {
    std::perror(mountpoint.c_str());
    return 4;
  }
  fs::AdapterOptions options;
  options.uid = ::getuid();
  options.gid = ::getgid();
  options.list_with_opendir = opendir;
  fs::FuseAdapter adapter(std::make_unique<fs::testing::FakeTree>(), options);
  fs::MountConfig config;
  config.mountpoint = real;
  config.fsname = "fake-tree";
  config.single_thread = single;
  config.kernel_read_only = !writable;
  if (auto s = adapter.Mount(config); !s.ok()) {
    std::fprintf(stderr, "tiledbfs_fake_mount: %s\n", s.error().message().c_str());
    return s.error().code() == tiledbfs::core::ErrorCode::kInvalidArgument ? 1 : 4;
  }
  if (auto s = adapter.Daemonize(foreground); !s.ok()) return 4;
  if (auto s = adapter.Serve(); !s.ok()) return 4;
  return 0;
}
