// The persistent index through the tree (TreeOptions::index): a second tree
// over the same array and index folder, as a remount, sizes every text
// file of every view with no layout pass, and every file reads byte for
// byte as on a tree without the index; entries that do not check are
// rebuilt, never trusted, with one log line each.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "core/index/index_store.h"
#include "fusefs/model/array_tree.h"
#include "tests/fusefs/model/read_file.h"

namespace tiledbfs::fusefs::index_test {
namespace {

namespace fs = std::filesystem;
const fs::path kCorpus = fs::path(TILEDBFS_TEST_DATA) / "corpus" / "arrays";

class TempDir {
 public:
  TempDir() {
    std::string t = (fs::temp_directory_path() / "tiledbfs_index_XXXXXX").string();
    path_ = mkdtemp(t.data()) != nullptr ? t : "";
  }
  ~TempDir() {
    std::error_code ec;
    if (!path_.empty()) fs::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct Opened {
  std::unique_ptr<Tree> tree;
  ArrayTree* array = nullptr;
};

Opened OpenArray(const fs::path& dir, std::shared_ptr<core::IndexStore> index,
                 uint64_t cache_bytes = uint64_t{256} << 20) {
  TreeOptions options;
  options.piece_cells = 3;  // many pieces on small arrays
  options.cache_bytes = cache_bytes;
  options.index = std::move(index);
  auto opened = OpenTree(dir.string(), options);
  EXPECT_TRUE(opened.ok()) << opened.error().ToString();
  Opened o;
  if (!opened.ok()) return o;
  o.tree = std::move(opened).value();
  o.array = dynamic_cast<ArrayTree*>(o.tree.get());
  return o;
}

// The text and field files of the root and of every history view: what a
// layout pass sizes, and the fixed-size files a pass over the cells counts.
std::vector<std::string> FilesOf(Tree& tree) {
  std::vector<std::string> views = {""};
  auto history = tree.List("history");
  EXPECT_TRUE(history.ok());
  for (const auto& e : *history) views.push_back("history/" + e.name + "/");
  std::vector<std::string> files;
  for (const std::string& v : views) {
    files.push_back(v + "data.csv");
    for (const char* section : {"attributes", "dimensions"}) {
      auto list = tree.List(v + section);
      EXPECT_TRUE(list.ok());
      for (const auto& e : *list) files.push_back(v + section + "/" + e.name);
    }
  }
  return files;
}

// Every file's size (stat first, as ls -l) then its bytes, whole and its
// last 5 bytes read alone (as tail).
std::map<std::string, std::string> ReadAll(Tree& tree, const std::vector<std::string>& files) {
  std::map<std::string, std::string> out;
  std::map<std::string, uint64_t> sizes;
  for (const std::string& f : files) {
    auto attr = tree.GetAttr(f);
    EXPECT_TRUE(attr.ok()) << f;
    if (attr.ok()) sizes[f] = attr->size;
  }
  for (const std::string& f : files) {
    auto open = tree.Open(f);
    EXPECT_TRUE(open.ok()) << f;
    if (!open.ok()) continue;
    const uint64_t size = sizes[f];
    const uint64_t tail = std::min<uint64_t>(size, 5);
    std::string last = Read(**open, size - tail, tail);
    std::string all = Read(**open, 0, size + 1);
    EXPECT_EQ(all.size(), size) << f;
    EXPECT_EQ(last, all.substr(all.size() - std::min<uint64_t>(all.size(), tail))) << f;
    out[f] = std::move(all);
  }
  return out;
}

std::shared_ptr<core::IndexStore> StoreIn(const std::string& dir, std::vector<std::string>* log) {
  core::IndexOptions o;
  o.dir = dir;
  o.log = [log](const std::string& line) { log->push_back(line); };
  return core::IndexStore::Open(std::move(o));
}

// Dense and sparse; enumerations, nullable and var-sized attributes,
// string dimensions, duplicates, delete conditions, cell timestamps,
// schemas evolved, consolidated fragments, time travel.
const char* const kArrays[] = {"types",        "enumerations",      "sparse_strdim",
                               "dense_1d",     "sparse_2d",         "sparse_dups",
                               "deletes",      "with_timestamps",   "schema_evolution",
                               "consolidated", "dense_2d_fragments"};

TEST(IndexTest, ARemountLaysOutNothingAndReadsTheSameBytes) {
  for (const char* name : kArrays) {
    SCOPED_TRACE(name);
    Opened off = OpenArray(kCorpus / name, nullptr);
    ASSERT_NE(off.array, nullptr);
    const std::vector<std::string> files = FilesOf(*off.tree);
    const auto want = ReadAll(*off.tree, files);

    TempDir dir;
    std::vector<std::string> log;
    auto store = StoreIn(dir.path(), &log);
    Opened first = OpenArray(kCorpus / name, store);
    ASSERT_NE(first.array, nullptr);
    EXPECT_EQ(ReadAll(*first.tree, files), want) << "the first mount, writing the index";
    EXPECT_GT(first.array->layout_passes(), 0u);
    EXPECT_GT(store->stats().writes, 0u);

    // A remount: another store object over the same folder, as another
    // process would open it.
    auto again = StoreIn(dir.path(), &log);
    Opened second = OpenArray(kCorpus / name, again);
    ASSERT_NE(second.array, nullptr);
    EXPECT_EQ(ReadAll(*second.tree, files), want) << "the remount, from the index";
    EXPECT_EQ(second.array->layout_passes(), 0u) << "every layout came from the index";
    EXPECT_GT(again->stats().hits, 0u);
    EXPECT_TRUE(log.empty()) << log.front();
  }
}

// With a cache too small to keep a view's layouts between files, they are
// read from the index again, not laid out again.
TEST(IndexTest, LayoutsThatLeftTheCacheComeBackFromTheIndex) {
  const fs::path array = kCorpus / "types";
  TempDir dir;
  std::vector<std::string> log;
  Opened first = OpenArray(array, StoreIn(dir.path(), &log));
  ASSERT_NE(first.array, nullptr);
  const std::vector<std::string> files = FilesOf(*first.tree);
  const auto want = ReadAll(*first.tree, files);
  auto store = StoreIn(dir.path(), &log);
  Opened small = OpenArray(array, store, 16 << 10);
  ASSERT_NE(small.array, nullptr);
  EXPECT_EQ(ReadAll(*small.tree, files), want);
  EXPECT_EQ(small.array->layout_passes(), 0u);
  EXPECT_GT(store->stats().hits, 4u) << "the entries read again as layouts left the cache";
}

TEST(IndexTest, EntriesThatDoNotCheckAreRebuilt) {
  const fs::path array = kCorpus / "sparse_2d";
  Opened off = OpenArray(array, nullptr);
  ASSERT_NE(off.array, nullptr);
  const std::vector<std::string> files = FilesOf(*off.tree);
  const auto want = ReadAll(*off.tree, files);

  TempDir dir;
  std::vector<std::string> log;
  {
    Opened first = OpenArray(array, StoreIn(dir.path(), &log));
    ReadAll(*first.tree, files);
  }
  // Every entry flipped in its middle byte.
  int entries = 0;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    if (e.path().extension() != ".tfi") continue;
    std::fstream f(e.path(), std::ios::in | std::ios::out | std::ios::binary);
    const auto size = static_cast<std::streamoff>(fs::file_size(e.path()));
    f.seekg(size / 2);
    char c = 0;
    f.get(c);
    f.seekp(size / 2);
    f.put(static_cast<char>(c ^ 0x20));
    ++entries;
  }
  ASSERT_GT(entries, 0);
  auto store = StoreIn(dir.path(), &log);
  Opened second = OpenArray(array, store);
  ASSERT_NE(second.array, nullptr);
  EXPECT_EQ(ReadAll(*second.tree, files), want);
  EXPECT_GT(second.array->layout_passes(), 0u) << "rebuilt, not trusted";
  EXPECT_EQ(store->stats().rejected, static_cast<uint64_t>(entries));
  EXPECT_EQ(log.size(), static_cast<size_t>(entries)) << "one line per entry";
  // And rebuilt: a third mount takes them.
  Opened third = OpenArray(array, StoreIn(dir.path(), &log));
  EXPECT_EQ(ReadAll(*third.tree, files), want);
  EXPECT_EQ(third.array->layout_passes(), 0u);
}

}  // namespace
}  // namespace tiledbfs::fusefs::index_test
