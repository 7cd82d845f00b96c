// mount.tiledbfs: the mount(8) helper, so that `mount -t tiledbfs SRC DIR`
// and /etc/fstab lines work:
//
//   /data/my_array  /mnt/my_array  tiledbfs  ro,noauto,timestamp=1700000002000  0 0
//   s3://bucket/my_array  /mnt/s3_array  tiledbfs  ro,noauto,_netdev,s3_region=eu-west-1  0 0
//
// mount(8) calls  mount.tiledbfs SOURCE DIR [-sfnv] [-N NS] [-o OPTS] [-t TYPE].
// We translate that into `tiledbfs [-o OPTS'] SOURCE DIR` and exec it: the
// tiledbfs next to this binary, or in ../bin (installed layout: sbin/ and
// bin/), or else the first in PATH. OPTS' is OPTS less what only mount(8)
// or fstab means (rw, ro, defaults, auto, noauto, user, users, nouser,
// owner, group, user=..., _netdev, nofail, x-*, comment=..., helper=...);
// tiledbfs mounts read-only in any case.
//   -v  prints the command before running it;  -f  prints it and stops
//   -n, -s  accepted and ignored (no mtab; sloppy is the default)
//   -N NS   not supported (exit 1)
// Exit: tiledbfs's own code (see tools/tiledbfs_main.cc), or 1 for a usage
// error here, or 4 if tiledbfs cannot be run.
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr int kExitUsage = 1;
constexpr int kExitMount = 4;

bool IsMountOnlyOption(std::string_view o) {
  static constexpr std::string_view kDrop[] = {
      "rw",    "ro",    "defaults", "auto",   "noauto", "user", "users", "nouser",
      "owner", "group", "_netdev",  "nofail", "sw",     "xx",   "loud",  "quiet"};
  for (std::string_view d : kDrop) {
    if (o == d) return true;
  }
  for (std::string_view prefix : {"x-", "comment=", "user=", "helper=", "uhelper="}) {
    if (o.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

// Splits at commas, keeping backslash-escaped commas inside an item.
std::vector<std::string> SplitOptions(std::string_view list) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < list.size(); ++i) {
    if (list[i] == '\\' && i + 1 < list.size()) {
      cur += list[i];
      cur += list[++i];
    } else if (list[i] == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur += list[i];
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string SelfDir() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<size_t>(n));
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

std::string FindTiledbfs() {
  const std::string dir = SelfDir();
  if (!dir.empty()) {
    for (const std::string& c : {dir + "/tiledbfs", dir + "/../bin/tiledbfs"}) {
      if (::access(c.c_str(), X_OK) == 0) return c;
    }
  }
  return "tiledbfs";  // execvp searches PATH
}

int Usage(const std::string& message) {
  std::fprintf(stderr,
               "mount.tiledbfs: %s\n"
               "usage: mount.tiledbfs SOURCE MOUNTPOINT [-fnsv] [-o OPTIONS]\n",
               message.c_str());
  return kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> positional;
  std::vector<std::string> options;
  bool verbose = false, fake = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-o" || a == "-t" || a == "-N") {
      if (i + 1 >= argc) return Usage("option " + a + " needs a value");
      const std::string value = argv[++i];
      if (a == "-N") return Usage("mount namespaces (-N) are not supported");
      if (a == "-o") {
        for (std::string& o : SplitOptions(value)) {
          if (!IsMountOnlyOption(o)) options.push_back(std::move(o));
        }
      }
      // -t: the type (tiledbfs or fuse.tiledbfs); nothing to pass on.
    } else if (a.rfind("-o", 0) == 0 && a.size() > 2) {
      for (std::string& o : SplitOptions(std::string_view(a).substr(2))) {
        if (!IsMountOnlyOption(o)) options.push_back(std::move(o));
      }
    } else if (a.size() > 1 && a[0] == '-' &&
               a.find_first_not_of("sfnvrw", 1) == std::string::npos) {
      for (char c : a.substr(1)) {
        if (c == 'v') verbose = true;
        if (c == 'f') fake = true;
        // -s sloppy, -n no mtab, -r/-w: read-only anyway, ignored.
      }
    } else if (!a.empty() && a[0] == '-') {
      return Usage("unknown option " + a);
    } else {
      positional.push_back(a);
    }
  }
  if (positional.size() != 2) return Usage("expected SOURCE and MOUNTPOINT");

  const std::string exe = FindTiledbfs();
  std::vector<std::string> cmd = {exe};
  if (!options.empty()) {
    std::string joined;
    for (const std::string& o : options) joined += (joined.empty() ? "" : ",") + o;
    cmd.push_back("-o");
    cmd.push_back(joined);
  }
  cmd.push_back(positional[0]);
  cmd.push_back(positional[1]);
  if (verbose || fake) {
    std::string line;
    for (const std::string& c : cmd) line += (line.empty() ? "" : " ") + c;
    std::fprintf(stderr, "mount.tiledbfs: %s\n", line.c_str());
  }
  if (fake) return 0;
  std::vector<char*> cargv;
  for (std::string& c : cmd) cargv.push_back(c.data());
  cargv.push_back(nullptr);
  ::execvp(cargv[0], cargv.data());
  std::fprintf(stderr, "mount.tiledbfs: cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
  return kExitMount;
}
