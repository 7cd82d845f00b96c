// tiledbfs-index [-o OPT,...] ARRAY_OR_GROUP...
//
// Builds or refreshes the persistent index (core/index/index_store.h) of
// each array, and of each array of a group, ahead of a mount: from cron
// after an ingest, say. For each, the latest view's text files are laid
// out and its cells counted, as the first `ls -l` of a mount would, and
// kept; a view already in the index costs a read of its entry. Options, as
// tiledbfs's: index_dir=DIR, index_size=SIZE, index=on (an encrypted array
// is indexed only then), key_file=PATH, cache_size=SIZE, s3_*. On a
// terminal (stderr), a progress bar while a source is indexed: tiles
// decoded, MB/s and the time left (against the stored bytes of the
// array's tile files). Prints one line per source: the views laid out and
// those found in the index (and on S3 the metadata files kept in it, and
// those found there), the tiles decoded, their stored MB and MB/s. Exit
// codes are tiledbfs's: 1 usage, 2 an array that cannot be opened or read,
// 3 a bad key, 5 credentials refused.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/directory/array_directory.h"
#include "core/index/file_stash.h"
#include "core/index/index_store.h"
#include "core/read/tile_source.h"
#include "core/storage/open/open_storage.h"
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

// Stored bytes of the tile files under `source` (all but metadata): what
// a pass decodes at most, for the time left; 0 if they cannot be listed.
uint64_t TileFileBytes(const std::string& source, const fusefs::TreeOptions& options) {
  core::StorageOptions storage_options;
  storage_options.s3 = options.storage.s3;
  auto storage = core::OpenStorage(source, storage_options, options.limits);
  if (!storage.ok()) return 0;
  auto files = (*storage)->ListTree("", options.limits.max_files);
  if (!files.ok()) return 0;
  uint64_t total = 0;
  for (const core::DirEntry& f : *files) {
    if (!core::IsMetadataFile(f.name)) total += f.size;
  }
  return total;
}

// What the pass has decoded since `from`: tiles and tile parts, stored bytes.
struct Decoded {
  uint64_t tiles = 0, bytes = 0;
};
Decoded DecodedSince(const core::DecodeStats& from) {
  const core::DecodeStats now = core::TileDecodeStats();
  return {now.tiles + now.parts - from.tiles - from.parts, now.stored_bytes - from.stored_bytes};
}

// A progress bar on stderr, redrawn every 200 ms by a thread of its own
// until destroyed (which clears it).
class ProgressBar {
 public:
  ProgressBar(std::string name, uint64_t total_bytes)
      : name_(std::move(name)),
        total_(total_bytes),
        from_(core::TileDecodeStats()),
        t0_(std::chrono::steady_clock::now()),
        thread_([this] { Run(); }) {}
  ~ProgressBar() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    cv_.notify_one();
    thread_.join();
    std::fprintf(stderr, "\r\033[K");
  }
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;

 private:
  void Run() {
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(200), [this] { return stop_; })) Draw();
  }
  void Draw() const {
    constexpr int kWidth = 24;
    const Decoded d = DecodedSince(from_);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    const double rate = secs > 0 ? static_cast<double>(d.bytes) / secs : 0;
    const double done =
        total_ > 0 ? std::min(1.0, static_cast<double>(d.bytes) / static_cast<double>(total_)) : 0;
    std::string bar(kWidth, '.');
    std::fill_n(bar.begin(), static_cast<int>(done * kWidth), '#');
    std::string left = "?";
    if (total_ > 0 && rate > 0) {
      const double rest = static_cast<double>(total_ - std::min<uint64_t>(total_, d.bytes));
      left = std::to_string(static_cast<long long>(rest / rate + 0.5)) + " s";
    }
    std::fprintf(stderr, "\r\033[K%s [%s] %llu tiles, %.1f MB/s, %s left", name_.c_str(),
                 bar.c_str(), static_cast<unsigned long long>(d.tiles), rate / 1e6, left.c_str());
  }

  const std::string name_;
  const uint64_t total_;
  const core::DecodeStats from_;
  const std::chrono::steady_clock::time_point t0_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::thread thread_;  // last: started once the rest is set
};

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
    const core::DecodeStats decoded0 = core::TileDecodeStats();
    auto index_source = [&]() -> core::Status {
      ASSIGN_OR_RETURN(std::unique_ptr<fusefs::Tree> tree, fusefs::OpenTree(source, options));
      std::optional<ProgressBar> bar;
      if (::isatty(STDERR_FILENO) == 1) bar.emplace(source, TileFileBytes(source, options));
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
    const Decoded decoded = DecodedSince(decoded0);
    std::printf(
        "tiledbfs-index: %s: %llu views laid out, %llu found in the index%s, %llu tiles "
        "decoded (%.1f MB stored, %.1f MB/s), %.2f s (%s)\n",
        source.c_str(), static_cast<unsigned long long>(after.writes - before.writes - stored),
        static_cast<unsigned long long>(after.hits - before.hits - found), files.c_str(),
        static_cast<unsigned long long>(decoded.tiles), static_cast<double>(decoded.bytes) / 1e6,
        secs > 0 ? static_cast<double>(decoded.bytes) / 1e6 / secs : 0.0, secs,
        index_options.dir.c_str());
    std::fflush(stdout);
    if (after.write_failures > before.write_failures) rc = rc != 0 ? rc : kExitArray;
  }
  return rc;
}
