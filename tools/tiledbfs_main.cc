// tiledbfs: mounts a TileDB array or group, read-only, with FUSE.
//
//   tiledbfs [options] ARRAY_OR_GROUP MOUNTPOINT
//
// ARRAY_OR_GROUP is a local folder or s3://bucket/prefix (credentials from
// the environment or ~/.aws only: core/storage/s3/s3_config.h).
//
// Options (fusefs/fuse/options.h has the exact forms):
//   -o timestamp=T      pin the view: ms since the epoch, or ISO 8601 UTC
//                       (2023-11-14T22:13:22, ...22.500, ...22.500Z)
//   -o key_file=PATH    key of an encrypted array: 32 raw bytes or 64 hex
//                       digits (trailing newline ok); never printed
//   -o cache_size=SIZE  decoded-tile cache, e.g. 256M (default), 1G
//   -o index=on|off|auto, index_dir=DIR, index_size=SIZE: the persistent
//                       index (fusefs/fuse/options.h)
//   -o stats            at unmount, log the tiles decoded, by field
//   -o page_cache       every open reads through the kernel's page cache
//   -o s3_endpoint=URL,s3_region=R,s3_profile=P,s3_addressing=path|virtual,
//      s3_anonymous,s3_parallel=N,s3_recheck=SECONDS   sources on S3
//   -f                  foreground;  -d  debug (foreground, libfuse traces)
//   -s                  single-threaded
//   -o OPT              other FUSE mount options pass through (allow_other,
//                       default_permissions is always on; never 'rw')
//   -h, --help; -V, --version
//
// The command returns only once the array was opened and checked (OpenTree)
// and the mount is live: it detaches (fuse_daemonize) after mounting.
//
// Exit codes:
//   0  mounted (the daemon serves in the background), or -h / -V; in the
//      foreground, 0 once unmounted
//   1  usage: bad command line, bad option value (timestamp, cache_size),
//      or a mount option libfuse rejects
//   2  cannot open the array or group: not found, not an array or group,
//      corrupt, unsupported, I/O error
//   3  key problem: the key file cannot be read or is malformed, or the
//      array needs a key that was not given, or the key is wrong
//   4  mount point problem or mount failure: missing or not a directory,
//      no permission, no /dev/fuse, mount(2)/fusermount3 failed, or the
//      FUSE session failed
//   5  S3 credentials: none found, or the store refused them (HTTP 403)
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "core/index/index_store.h"
#include "core/read/tile_source.h"
#include "core/storage/open/open_storage.h"
#include "core/util/warm_heap.h"
#include "fusefs/fuse/fuse_adapter.h"
#include "fusefs/fuse/options.h"
#include "fusefs/model/key_file.h"
#include "fusefs/model/tree.h"
#include "tools/malloc_tuning.h"

#ifndef TILEDBFS_VERSION
#define TILEDBFS_VERSION "unknown"
#endif

namespace {

using tiledbfs::core::ErrorCode;
namespace fs = tiledbfs::fusefs;

constexpr int kExitUsage = 1;
constexpr int kExitArray = 2;
constexpr int kExitKey = 3;
constexpr int kExitMount = 4;
constexpr int kExitCredentials = 5;

void PrintUsage(FILE* out) {
  std::fprintf(out,
               "usage: tiledbfs [options] ARRAY_OR_GROUP MOUNTPOINT\n"
               "\n"
               "Mounts a TileDB array or group as a read-only file system.\n"
               "\n"
               "options:\n"
               "  -o timestamp=T      view the array as of T: milliseconds since the epoch\n"
               "                      or ISO 8601 UTC (2023-11-14T22:13:20[.000][Z])\n"
               "  -o key_file=PATH    AES-256-GCM key: 32 raw bytes or 64 hex digits\n"
               "  -o cache_size=SIZE  decoded tile cache (default 256M; K, M, G, T)\n"
               "  -o index=on|off|auto  the persistent index of what a first look\n"
               "                      computes (auto, the default: not for an\n"
               "                      encrypted array)\n"
               "  -o index_dir=DIR    where (default $XDG_CACHE_HOME/tiledbfs,\n"
               "                      else ~/.cache/tiledbfs)\n"
               "  -o index_size=SIZE  its bound (default 1G; least recently used\n"
               "                      entries go first)\n"
               "  -o page_cache       every open reads through the kernel's page cache\n"
               "                      (default: the first open of a file streams past it)\n"
               "  -o stats            at unmount, log the tiles decoded, by field\n"
               "  -o s3_endpoint=URL  S3-compatible store (default: AWS, or AWS_ENDPOINT_URL)\n"
               "  -o s3_region=R      region (default: AWS_REGION, the profile's, us-east-1)\n"
               "  -o s3_profile=P     profile in ~/.aws/credentials and ~/.aws/config\n"
               "  -o s3_addressing=path|virtual  bucket in the path or in the host name\n"
               "  -o s3_anonymous     unsigned requests (public buckets)\n"
               "  -o s3_parallel=N    GETs under way at once (default 16)\n"
               "  -o s3_recheck=SEC   look for new commits at most this often (default 1)\n"
               "  -f                  stay in the foreground\n"
               "  -d                  debug: foreground, print every FUSE request\n"
               "  -s                  single-threaded\n"
               "  -o OPT[,OPT...]     FUSE mount options (see below), e.g. allow_other\n"
               "  -h, --help          this help\n"
               "  -V, --version       versions\n"
               "\n"
               "exit codes: 0 mounted, 1 usage, 2 cannot open the array or group,\n"
               "            3 key problem, 4 mount point problem or mount failed,\n"
               "            5 S3 credentials missing or refused\n"
               "\n"
               "unmount with: fusermount3 -u MOUNTPOINT\n");
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "tiledbfs: %s\nTry 'tiledbfs --help' for more information.\n",
               message.c_str());
  return kExitUsage;
}

std::string RealPath(const std::string& path, int* err) {
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr) {
    *err = errno;
    return {};
  }
  *err = 0;
  return buf;
}

// Set once the daemon is detached: its lines then go to syslog.
std::atomic<bool> daemonized{false};

// A line for the user: on stderr, or in syslog once detached.
void Log(const std::string& line) {
  if (daemonized.load()) {
    syslog(LOG_WARNING, "tiledbfs: %s", line.c_str());
  } else {
    std::fprintf(stderr, "tiledbfs: %s\n", line.c_str());
  }
}

// The persistent index the options ask for, or null: -o index=off, or
// auto (the default) for an encrypted array (the widths of its text
// would be kept in the clear), or no folder to keep it in.
std::shared_ptr<tiledbfs::core::IndexStore> OpenIndex(const fs::CommandLine& cl, bool encrypted) {
  if (cl.index == "off" || (cl.index == "auto" && encrypted)) return nullptr;
  const std::string dir = cl.index_dir ? *cl.index_dir : tiledbfs::core::DefaultIndexDir();
  if (dir.empty()) {
    std::fprintf(stderr, "tiledbfs: no index: neither XDG_CACHE_HOME nor HOME is set\n");
    return nullptr;
  }
  tiledbfs::core::IndexOptions options;
  options.dir = dir;
  if (cl.index_bytes) options.max_bytes = *cl.index_bytes;
  options.log = Log;
  return tiledbfs::core::IndexStore::Open(std::move(options));
}

int Run(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  auto parsed = fs::ParseCommandLine(args);
  if (!parsed.ok()) return UsageError(parsed.error().message());
  const fs::CommandLine& cl = *parsed;
  if (cl.help) {
    PrintUsage(stdout);
    std::printf("\nFUSE mount options:\n");
    std::fflush(stdout);
    fuse_lowlevel_help();
    return 0;
  }
  if (cl.version) {
    std::printf("tiledbfs version %s\n", TILEDBFS_VERSION);
    std::fflush(stdout);
    fuse_lowlevel_version();
    return 0;
  }

  fs::TreeOptions tree_options;
  tree_options.timestamp_ms = cl.timestamp_ms;
  tree_options.storage = cl.storage;
  if (cl.cache_bytes) tree_options.cache_bytes = *cl.cache_bytes;
  if (cl.key_file) {
    auto key = fs::ReadKeyFile(*cl.key_file);
    if (!key.ok()) {
      std::fprintf(stderr, "tiledbfs: %s\n", key.error().message().c_str());
      return kExitKey;
    }
    tree_options.key = *key;
  }

  tree_options.index = OpenIndex(cl, tree_options.key.has_value());

  // Absolute paths: a daemon runs in "/".
  int err = 0;
  const std::string mountpoint = RealPath(cl.mountpoint, &err);
  if (err != 0) {
    std::fprintf(stderr, "tiledbfs: bad mount point %s: %s\n", cl.mountpoint.c_str(),
                 std::strerror(err));
    return kExitMount;
  }
  struct stat st;
  if (::stat(mountpoint.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::fprintf(stderr, "tiledbfs: bad mount point %s: not a directory\n", cl.mountpoint.c_str());
    return kExitMount;
  }
  // An s3:// URI is no path: as given.
  const bool local = tiledbfs::core::IsLocalUri(cl.source);
  const std::string source = local ? RealPath(cl.source, &err) : cl.source;
  if (err != 0) {
    std::fprintf(stderr, "tiledbfs: cannot open %s: %s\n", cl.source.c_str(), std::strerror(err));
    return kExitArray;
  }

  // The tile cache's heap, taken as the mount serves (after the fork, so
  // the threads that warm it live on): warmed ahead where glibc keeps freed
  // memory (MallocTuned); past half the 64 MiB the README allows over
  // cache_size, freed heap goes back before the bound is reached.
  tree_options.heap =
      std::make_shared<tiledbfs::core::GlibcHeap>(tiledbfs::core::GlibcHeap::Options{
          .warm = tiledbfs::tools::MallocTuned(),
          .resident_ceiling = tree_options.cache_bytes + (uint64_t{32} << 20)});
  auto tree = fs::OpenTree(source, tree_options);
  if (!tree.ok()) {
    const auto& e = tree.error();
    std::fprintf(stderr, "tiledbfs: cannot open %s: %s\n", cl.source.c_str(), e.ToString().c_str());
    if (e.code() == ErrorCode::kAccessDenied) return kExitCredentials;
    return e.code() == ErrorCode::kKey ? kExitKey : kExitArray;
  }

  fs::AdapterOptions adapter_options;
  adapter_options.uid = ::getuid();
  adapter_options.gid = ::getgid();
  adapter_options.stream_first_reads = !cl.page_cache;
  fs::FuseAdapter adapter(std::move(tree).value(), adapter_options);

  fs::MountConfig config;
  config.mountpoint = mountpoint;
  config.fsname = source;
  config.fuse_options = cl.fuse_options;
  config.debug = cl.debug;
  config.single_thread = cl.single_thread;
  if (auto s = adapter.Mount(config); !s.ok()) {
    if (s.error().code() == ErrorCode::kInvalidArgument) return UsageError(s.error().message());
    std::fprintf(stderr, "tiledbfs: %s\n", s.error().message().c_str());
    return kExitMount;
  }
  if (auto s = adapter.Daemonize(cl.foreground); !s.ok()) {
    std::fprintf(stderr, "tiledbfs: %s\n", s.error().message().c_str());
    return kExitMount;
  }
  if (!cl.foreground) daemonized.store(true);
  const auto served = adapter.Serve();
  if (cl.stats) {
    Log("decoded " + tiledbfs::core::DescribeDecodes(tiledbfs::core::TileDecodeStats()));
  }
  if (!served.ok()) {
    std::fprintf(stderr, "tiledbfs: %s\n", served.error().message().c_str());
    return kExitMount;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  tiledbfs::tools::ReexecWithMallocTuning(argv);
  return Run(argc, argv);
}
