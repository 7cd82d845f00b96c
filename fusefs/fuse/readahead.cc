#include "fusefs/fuse/readahead.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

namespace tiledbfs::fusefs {

namespace {

// Undoes mountinfo's \ooo escapes.
std::string Unescape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
        s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7') {
      out.push_back(
          static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

}  // namespace

std::optional<std::string> MountDevice(std::string_view mountinfo, std::string_view mountpoint) {
  // Each line: id parent major:minor root mount-point options ...
  std::optional<std::string> found;
  while (!mountinfo.empty()) {
    size_t eol = mountinfo.find('\n');
    std::string_view line = mountinfo.substr(0, eol);
    mountinfo = eol == std::string_view::npos ? std::string_view() : mountinfo.substr(eol + 1);
    std::vector<std::string_view> fields;
    while (fields.size() < 5 && !line.empty()) {
      size_t sp = line.find(' ');
      fields.push_back(line.substr(0, sp));
      line = sp == std::string_view::npos ? std::string_view() : line.substr(sp + 1);
    }
    if (fields.size() < 5) continue;
    if (Unescape(fields[4]) == mountpoint) found = std::string(fields[2]);  // the newest: last
  }
  return found;
}

core::Status SetMountReadahead(const std::string& mountpoint, uint64_t kib) {
  std::ifstream in("/proc/self/mountinfo");
  std::stringstream text;
  text << in.rdbuf();
  auto dev = MountDevice(text.str(), mountpoint);
  if (!dev) return core::Error::NotFound(mountpoint + ": not in /proc/self/mountinfo");
  const std::string file = "/sys/class/bdi/" + *dev + "/read_ahead_kb";
  FILE* f = std::fopen(file.c_str(), "w");
  if (f == nullptr) return core::Error::Io(file + ": " + std::strerror(errno));
  const bool written = std::fprintf(f, "%llu\n", static_cast<unsigned long long>(kib)) > 0;
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) return core::Error::Io(file + ": " + std::strerror(errno));
  return core::Ok();
}

}  // namespace tiledbfs::fusefs
