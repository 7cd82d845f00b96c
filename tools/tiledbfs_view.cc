// tiledbfs-view [--key-file F] [--timestamp T] [--stats] [-o s3_OPT=V,...] ARRAY [PATH]
//
// ARRAY is a local folder or s3://bucket/prefix; -o takes tiledbfs's s3_*
// mount options (fusefs/fuse/options.h), credentials come from the
// environment or ~/.aws only.
//
// Renders the tiledbfs namespace of an array or group without FUSE: lists a
// directory (one name per line, directories with a trailing '/') or writes a
// file's bytes to stdout. Errors go to stderr with exit status 1 (usage 2).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/read/tile_source.h"
#include "fusefs/fuse/options.h"
#include "fusefs/model/instant.h"
#include "fusefs/model/key_file.h"
#include "fusefs/model/tree.h"
#include "tools/malloc_tuning.h"

namespace {

// "a,b=c" -> {"a", "b=c"}.
std::vector<std::string> SplitList(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t end = list.find(',', start);
    if (end == std::string::npos) end = list.size();
    if (end > start) out.push_back(list.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

int Usage() {
  std::fprintf(
      stderr,
      "usage: tiledbfs-view [--key-file FILE] [--timestamp T] [--stats] [-o s3_OPT=V,...]\n"
      "                     ARRAY_OR_GROUP [PATH]\n"
      "  lists the directory PATH of the tiledbfs namespace, one name per line,\n"
      "  or writes the file PATH to stdout. T: milliseconds or ISO 8601 (UTC).\n"
      "  ARRAY_OR_GROUP: a folder or s3://bucket/prefix; -o: tiledbfs's s3_* options.\n"
      "  --stats: at exit, the tiles decoded and stored bytes they came from, on stderr.\n");
  return 2;
}

// Prints TileDecodeStats on stderr when it goes out of scope, if asked.
struct StatsAtExit {
  bool on = false;
  ~StatsAtExit() {
    if (!on) return;
    std::fprintf(stderr, "tiledbfs-view: decoded %s\n",
                 tiledbfs::core::DescribeDecodes(tiledbfs::core::TileDecodeStats()).c_str());
  }
};

}  // namespace

int main(int argc, char** argv) {
  using namespace tiledbfs;
  tools::ReexecWithMallocTuning(argv);
  fusefs::TreeOptions options;
  std::vector<std::string> args;
  StatsAtExit stats;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--stats") {
      stats.on = true;
    } else if (a == "-o" && i + 1 < argc) {
      for (const std::string& item : SplitList(argv[++i])) {
        auto s3 = fusefs::ApplyStorageOption(item, options.storage);
        if (!s3.ok() || !*s3) {
          std::fprintf(stderr, "tiledbfs-view: %s\n",
                       s3.ok() ? ("unknown option " + item).c_str() : s3.error().message().c_str());
          return 2;
        }
      }
    } else if ((a == "--key-file" || a == "--timestamp") && i + 1 < argc) {
      std::string v = argv[++i];
      if (a == "--key-file") {
        auto key = fusefs::ReadKeyFile(v);
        if (!key.ok()) {
          std::fprintf(stderr, "tiledbfs-view: %s\n", key.error().message().c_str());
          return 1;
        }
        options.key = *key;
      } else {
        auto t = fusefs::ParseInstant(v);
        if (!t) {
          std::fprintf(stderr, "tiledbfs-view: --timestamp %s: not milliseconds or ISO 8601\n",
                       v.c_str());
          return 2;
        }
        options.timestamp_ms = *t;
      }
    } else if (a == "-h" || a == "--help") {
      Usage();
      return 0;
    } else if (!a.empty() && a[0] == '-' && a.size() > 1) {
      return Usage();
    } else {
      args.push_back(a);
    }
  }
  if (args.empty() || args.size() > 2) return Usage();
  std::string path = args.size() == 2 ? args[1] : "";
  while (!path.empty() && path.back() == '/') path.pop_back();
  while (!path.empty() && path.front() == '/') path.erase(path.begin());

  auto tree = fusefs::OpenTree(args[0], options);
  if (!tree.ok()) {
    std::fprintf(stderr, "tiledbfs-view: cannot open %s: %s\n", args[0].c_str(),
                 tree.error().ToString().c_str());
    return 1;
  }
  auto attr = (*tree)->GetAttr(path);
  if (!attr.ok()) {
    std::fprintf(stderr, "tiledbfs-view: %s: %s\n", path.c_str(), attr.error().ToString().c_str());
    return 1;
  }
  if (attr->type == fusefs::NodeType::kDirectory) {
    auto entries = (*tree)->List(path);
    if (!entries.ok()) {
      std::fprintf(stderr, "tiledbfs-view: %s: %s\n", path.c_str(),
                   entries.error().ToString().c_str());
      return 1;
    }
    for (const auto& e : *entries) {
      std::printf("%s%s\n", e.name.c_str(), e.attr.type == fusefs::NodeType::kDirectory ? "/" : "");
    }
    return 0;
  }
  auto file = (*tree)->Open(path);
  if (!file.ok()) {
    std::fprintf(stderr, "tiledbfs-view: %s: %s\n", path.c_str(), file.error().ToString().c_str());
    return 1;
  }
  std::vector<uint8_t> buf(1 << 20);
  uint64_t offset = 0;
  while (true) {
    auto n = (*file)->Read(offset, buf);
    if (!n.ok()) {
      std::fprintf(stderr, "tiledbfs-view: %s: %s\n", path.c_str(), n.error().ToString().c_str());
      return 1;
    }
    if (*n == 0) break;
    if (std::fwrite(buf.data(), 1, *n, stdout) != *n) {
      std::fprintf(stderr, "tiledbfs-view: write to stdout failed\n");
      return 1;
    }
    offset += *n;
  }
  return std::fflush(stdout) == 0 ? 0 : 1;
}
