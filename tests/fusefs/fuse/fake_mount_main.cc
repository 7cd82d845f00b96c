// tiledbfs_fake_mount: mounts the FakeTree (fake_tree.h) through the real
// FuseAdapter, for tests/mount/adapter_mount_test.py.
//   tiledbfs_fake_mount [-f] [-s] [--writable-kernel-mount] [--opendir] [--page-cache]
//                       [--big-bytes N] [--big-piece N] MOUNTPOINT
// --writable-kernel-mount leaves the kernel mount read-write, so that
// mutating requests reach the adapter and its own EROFS answers are tested.
// --opendir lists folders through OPENDIR (AdapterOptions::list_with_opendir).
// --page-cache reads every open through the page cache
// (AdapterOptions::stream_first_reads off).
// --big-bytes and --big-piece set the size of big.bin and the most bytes per
// piece of it (FakeTreeOptions): scripts/bench.sh measures the adapter
// serving a file from memory, without decoding anything.
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
  bool foreground = false, single = false, writable = false, opendir = false, page_cache = false;
  std::string mountpoint;
  fs::testing::FakeTreeOptions tree_options;
  bool usage = false;
  for (int i = 1; i < argc && !usage; ++i) {
    const std::string a = argv[i];
    if ((a == "--big-bytes" || a == "--big-piece") && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++i], &end, 10);
      if (end == argv[i] || *end != '\0' || argv[i][0] == '-') usage = true;
      (a == "--big-bytes" ? tree_options.big_bytes : tree_options.big_piece) = v;
    } else if (a == "-f") {
      foreground = true;
    } else if (a == "-s") {
      single = true;
    } else if (a == "--writable-kernel-mount") {
      writable = true;
    } else if (a == "--opendir") {
      opendir = true;
    } else if (a == "--page-cache") {
      page_cache = true;
    } else if (mountpoint.empty() && a[0] != '-') {
      mountpoint = a;
    } else {
      usage = true;
    }
  }
  if (usage || mountpoint.empty()) {
    std::fprintf(
        stderr,
        "usage: %s [-f] [-s] [--writable-kernel-mount] [--opendir] [--page-cache] [--big-bytes N] "
        "[--big-piece N] MOUNTPOINT\n",
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
  options.stream_first_reads = !page_cache;
  fs::FuseAdapter adapter(std::make_unique<fs::testing::FakeTree>(tree_options), options);
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
