// tiledbfs-index [-o OPT,...] ARRAY_OR_GROUP...
//
// Builds or refreshes the persistent index (core/index/index_store.h) of
// each array, and of each array of a group, ahead of a mount: from cron
// after an ingest, say. For each, the latest view's text files are laid
// out and its cells counted, as the first `ls -l` of a mount would, and
// kept; a view already in the index costs a read of its entry. Options, as
// tiledbfs's: index_dir=DIR, index_size=SIZE, index=on (an encrypted array
// is indexed only then), key_file=PATH, cache_size=SIZE, s3_*. Prints one
// line per source: the views laid out and those found in the index (and on
// S3 the metadata files kept in it, and those found there). Exit
// codes are tiledbfs's: 1 usage, 2 an array that cannot be opened or read,
// 3 a bad key, 5 credentials refused.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "core/index/file_stash.h"
#include "core/index/index_store.h"
#include "fusefs/fuse/options.h"
#include "fusefs/model/key_file.h"
#include "fusefs/model/tree.h"
#include "tools/malloc_tuning.h"

namespace {

using namespace tiledbfs;

constexpr int kExitUsage = 1;
constexpr int kExitArray = 2;
constexpr int kExitKey = 3;
constexpr int kExitCredentials = 5;

int Usage() {
  std::fprintf(stderr,
               "usage: tiledbfs-index [-o OPT,...] ARRAY_OR_GROUP...\n"
               "  builds the persistent index of each array (and each array of a group)\n"
               "  ahead of a mount. -o: index_dir=DIR, index_size=SIZE, index=on (needed\n"
               "  for an encrypted array), key_file=PATH, cache_size=SIZE, s3_*.\n");
  return kExitUsage;
}

int ExitFor(const core::Error& e) {
  if (e.code() == core::ErrorCode::kAccessDenied) return kExitCredentials;
  return e.code() == core::ErrorCode::kKey ? kExitKey : kExitArray;
}

// Lays out the latest view of every array under `dir` of `tree`: an array
// shows data.csv at its top; a group shows its members as folders.
core::Status IndexUnder(fusefs::Tree& tree, const std::string& dir, int depth) {
  const std::string prefix = dir.empty() ? "" : dir + "/";
  ASSIGN_OR_RETURN(std::vector<fusefs::DirEntryAttr> entries, tree.List(dir));
  for (const auto& e : entries) {
    if (e.name == "data.csv") {
      // data.csv's size needs the pass that lays out every text file of
      // the view; a fixed-size file's, the view's cells counted.
      TRY(tree.GetAttr(prefix + "data.csv"));
      auto attributes = tree.List(prefix + "attributes");
      if (attributes.ok()) {
        for (const auto& a : *attributes) TRY(tree.GetAttr(prefix + "attributes/" + a.name));
      }
      return core::Ok();
    }
  }
  // A group: its members (a group nests at most a few deep in practice).
  if (depth >= 8) return core::Ok();
  for (const auto& e : entries) {
    if (e.attr.type != fusefs::NodeType::kDirectory) continue;
    if (e.name == "metadata" || e.name == "history" || e.name == "fragments") continue;
    TRY(IndexUnder(tree, prefix + e.name, depth + 1));
  }
  return core::Ok();
}

}  // namespace

int main(int argc, char** argv) {
  tools::ReexecWithMallocTuning(argv);
  fusefs::TreeOptions options;
  std::string index = "on-unless-encrypted";
  core::IndexOptions index_options;
  index_options.dir = core::DefaultIndexDir();
  std::vector<std::string> sources;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      Usage();
      return 0;
    }
    if (a == "-o" && i + 1 < argc) {
      for (const std::string& item : fusefs::SplitOptionList(argv[++i])) {
        const size_t eq = item.find('=');
        const std::string name = item.substr(0, eq);
        const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
        if (name == "index_dir" && !value.empty()) {
          index_options.dir = value;
        } else if (name == "index_size" || name == "cache_size") {
          auto size = fusefs::ParseSize(value);
          if (!size.ok()) {
            std::fprintf(stderr, "tiledbfs-index: %s\n", size.error().message().c_str());
            return kExitUsage;
          }
          (name == "index_size" ? index_options.max_bytes : options.cache_bytes) = *size;
        } else if (name == "index" && value == "on") {
          index = "on";
        } else if (name == "key_file" && !value.empty()) {
          auto key = fusefs::ReadKeyFile(value);
          if (!key.ok()) {
            std::fprintf(stderr, "tiledbfs-index: %s\n", key.error().message().c_str());
            return kExitKey;
          }
          options.key = *key;
        } else {
          auto s3 = fusefs::ApplyStorageOption(item, options.storage);
          if (!s3.ok() || !*s3) {
            std::fprintf(
                stderr, "tiledbfs-index: %s\n",
                s3.ok() ? ("unknown option " + item).c_str() : s3.error().message().c_str());
            return kExitUsage;
          }
        }
      }
    } else if (!a.empty() && a[0] == '-') {
      return Usage();
    } else {
      sources.push_back(a);
    }
  }
  if (sources.empty()) return Usage();
  if (options.key && index != "on") {
    std::fprintf(stderr,
                 "tiledbfs-index: an encrypted array is indexed only with -o index=on: the "
                 "sizes of its text files tell how wide its values are\n");
    return kExitUsage;
  }
  if (index_options.dir.empty()) {
    std::fprintf(stderr,
                 "tiledbfs-index: no index folder: neither XDG_CACHE_HOME nor HOME is "
                 "set, and no -o index_dir\n");
    return kExitUsage;
  }
  index_options.log = [](const std::string& line) {
    std::fprintf(stderr, "tiledbfs-index: %s\n", line.c_str());
  };
  auto store = core::IndexStore::Open(index_options);
  if (!store->usable()) return kExitArray;
  options.index = store;
  // Its own stash, so that the files it keeps (on S3) are not counted as views.
  auto stash = std::make_shared<core::IndexFileStash>(store);
  options.storage.stash = stash;
  int rc = 0;
  for (const std::string& source : sources) {
    const auto t0 = std::chrono::steady_clock::now();
    const core::IndexStats before = store->stats();
    const uint64_t found0 = stash->found(), stored0 = stash->stored();
    auto index_source = [&]() -> core::Status {
      ASSIGN_OR_RETURN(std::unique_ptr<fusefs::Tree> tree, fusefs::OpenTree(source, options));
      return IndexUnder(*tree, "", 0);
    };
    const core::Status done = index_source();
    if (!done.ok()) {
      std::fprintf(stderr, "tiledbfs-index: %s: %s\n", source.c_str(),
                   done.error().ToString().c_str());
      rc = rc != 0 ? rc : ExitFor(done.error());
      continue;
    }
    const core::IndexStats after = store->stats();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const uint64_t stored = stash->stored() - stored0, found = stash->found() - found0;
    std::string files;
    if (stored + found > 0) {
      files = ", " + std::to_string(stored) + " metadata files kept, " + std::to_string(found) +
              " found";
    }
    std::printf("tiledbfs-index: %s: %llu views laid out, %llu found in the index%s, %.2f s (%s)\n",
                source.c_str(),
                static_cast<unsigned long long>(after.writes - before.writes - stored),
                static_cast<unsigned long long>(after.hits - before.hits - found), files.c_str(),
                secs, index_options.dir.c_str());
    std::fflush(stdout);
    if (after.write_failures > before.write_failures) rc = rc != 0 ? rc : kExitArray;
  }
  return rc;
}
