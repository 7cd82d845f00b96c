// The persistent index through the tree (TreeOptions::index): a second tree
// over the same array and index folder, as a remount, sizes every text
// file of every view with no layout pass, and every file reads byte for
// byte as on a tree without the index; entries that do not check, or that
// check but are not of the view's cells, are rebuilt, never trusted, with
// one log line each.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "core/array/array.h"
#include "core/index/index_store.h"
#include "core/read/tile_source.h"
#include "fusefs/model/array_tree.h"
#include "fusefs/model/diff.h"
#include "fusefs/model/streamed_file.h"
#include "tests/core/write/temp_array.h"
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

// Pieces of `piece` cells, 4 pieces a batch: many of both on small arrays.
Opened OpenArray(const fs::path& dir, std::shared_ptr<core::IndexStore> index,
                 uint64_t cache_bytes = uint64_t{256} << 20, uint64_t piece = 3) {
  TreeOptions options;
  options.piece_cells = piece;
  options.layout_batch_cells = 4 * piece;
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

// Every file of `array` and its bytes on a tree without the index, after
// a first tree whose reads put the index in `dir`.
struct Indexed {
  std::vector<std::string> files;
  std::map<std::string, std::string> want;
};
Indexed IndexIn(const fs::path& array, const std::string& dir, std::vector<std::string>* log) {
  Indexed out;
  Opened off = OpenArray(array, nullptr);
  if (off.array == nullptr) return out;  // OpenArray failed the test
  out.files = FilesOf(*off.tree);
  out.want = ReadAll(*off.tree, out.files);
  Opened first = OpenArray(array, StoreIn(dir, log));
  if (first.array != nullptr) ReadAll(*first.tree, out.files);
  return out;
}

TEST(IndexTest, EntriesThatDoNotCheckAreRebuilt) {
  const fs::path array = kCorpus / "sparse_2d";
  TempDir dir;
  std::vector<std::string> log;
  const Indexed first = IndexIn(array, dir.path(), &log);
  ASSERT_FALSE(first.files.empty());
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
  EXPECT_EQ(ReadAll(*second.tree, first.files), first.want);
  EXPECT_GT(second.array->layout_passes(), 0u) << "rebuilt, not trusted";
  EXPECT_EQ(store->stats().rejected, static_cast<uint64_t>(entries));
  EXPECT_EQ(log.size(), static_cast<size_t>(entries)) << "one line per entry";
  // And rebuilt: a third mount takes them.
  Opened third = OpenArray(array, StoreIn(dir.path(), &log));
  EXPECT_EQ(ReadAll(*third.tree, first.files), first.want);
  EXPECT_EQ(third.array->layout_passes(), 0u);
}

// Entries that check but whose layouts are not of the view's cells (as
// after a fragment is rewritten under its name with other bytes of the same
// sizes): the read fails rather than give bytes of another size, the entry
// is dropped with one log line, and the next mount lays the view out again.
TEST(IndexTest, StaleEntriesFailTheirReadAndAreDropped) {
  const fs::path array = kCorpus / "sparse_2d";
  TempDir dir;
  std::vector<std::string> log;
  const Indexed first = IndexIn(array, dir.path(), &log);
  ASSERT_FALSE(first.files.empty());
  // Each entry of a view with cells, under its own key, given data.csv's
  // layout of one of its .txt files (the key is at byte 16 of the file, its
  // size at 12).
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(dir.path())) {
    if (e.path().extension() == ".tfi") entries.push_back(e.path());
  }
  auto store = StoreIn(dir.path(), &log);
  uint64_t stale = 0;
  for (const fs::path& p : entries) {
    std::ifstream in(p, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), {});
    ASSERT_GE(bytes.size(), 16u);
    uint32_t key_size = 0;
    std::memcpy(&key_size, bytes.data() + 12, 4);
    const std::string key = bytes.substr(16, key_size);
    if (key.starts_with("tiledbfs base")) continue;  // an array's base (ArrayTree::ToBase)
    auto payload = store->Get(key);
    ASSERT_TRUE(payload);
    auto view = LoadIndexedView(*payload);
    ASSERT_TRUE(view.ok());
    ASSERT_FALSE(view->layouts.txt.empty());
    if (view->layouts.csv.cells == 0) continue;  // no piece to find it out
    view->layouts.csv = view->layouts.txt.begin()->second;
    store->Put(key, SaveIndexedView(*view));
    ++stale;
  }
  ASSERT_GT(stale, 1u);
  log.clear();
  Opened second = OpenArray(array, store);
  ASSERT_NE(second.array, nullptr);
  uint64_t failed = 0;
  for (const std::string& f : first.files) {
    if (!f.ends_with("data.csv")) continue;
    SCOPED_TRACE(f);
    auto open = second.tree->Open(f);
    ASSERT_TRUE(open.ok());
    std::string buf(1 << 16, '\0');
    for (int i = 0; i < 2; ++i) {  // dropped once, however often read
      auto n = (*open)->Read(0, {reinterpret_cast<uint8_t*>(buf.data()), buf.size()});
      if (n.ok()) {
        EXPECT_EQ(buf.substr(0, *n), first.want.at(f)) << "a view without cells, left as it was";
        break;
      }
      EXPECT_EQ(n.error().code(), core::ErrorCode::kCorrupt);
      failed += i == 0;
    }
  }
  EXPECT_EQ(failed, stale);
  EXPECT_EQ(store->stats().dropped, stale);
  EXPECT_EQ(log.size(), stale) << "one line per entry";
  for (const std::string& line : log) {
    EXPECT_NE(line.find("does not fit its view"), std::string::npos) << line;
  }
  Opened third = OpenArray(array, StoreIn(dir.path(), &log));
  ASSERT_NE(third.array, nullptr);
  EXPECT_EQ(ReadAll(*third.tree, first.files), first.want);
  EXPECT_GT(third.array->layout_passes(), 0u) << "laid out again, not trusted";
}

// A remount sizes every file of a sparse view from the index alone, its
// cell count included where the footers do not give it (overlapping
// fragments, duplicates, deletes, schemas evolved): stat decodes no tile.
TEST(IndexTest, ARemountSizesSparseViewsWithNoTileDecoded) {
  for (const char* name : {"sparse_2d", "sparse_dups", "deletes", "with_timestamps",
                           "schema_evolution", "consolidated", "sparse_strdim"}) {
    SCOPED_TRACE(name);
    TempDir dir;
    std::vector<std::string> log;
    std::vector<std::string> files;
    {
      Opened first = OpenArray(kCorpus / name, StoreIn(dir.path(), &log));
      ASSERT_NE(first.array, nullptr);
      files = FilesOf(*first.tree);
      for (const std::string& f : files) ASSERT_TRUE(first.tree->GetAttr(f).ok()) << f;
    }
    Opened second = OpenArray(kCorpus / name, StoreIn(dir.path(), &log));
    ASSERT_NE(second.array, nullptr);
    const uint64_t before = core::TileDecodeStats().tiles;
    EXPECT_EQ(FilesOf(*second.tree), files);
    for (const std::string& f : files) ASSERT_TRUE(second.tree->GetAttr(f).ok()) << f;
    EXPECT_EQ(core::TileDecodeStats().tiles, before) << "tiles decoded to size the files";
    EXPECT_EQ(second.array->layout_passes(), 0u);
    Opened off = OpenArray(kCorpus / name, nullptr);
    ASSERT_NE(off.array, nullptr);
    EXPECT_EQ(ReadAll(*second.tree, files), ReadAll(*off.tree, files));
    EXPECT_TRUE(log.empty()) << log.front();
  }
}

// A fragment's data file rewritten under its name with other bytes of the
// same size (another fragment's, so that the array stays valid): its new
// modification time gives the views that read it other keys, so they are
// laid out again, never given the old layouts. A copy of the array whose
// files keep their times (cp -a) holds the same bytes, and hits.
TEST(IndexTest, AFragmentRewrittenUnderItsNameMissesACopyHits) {
  TempDir work;
  const fs::path array = fs::path(work.path()) / "array";
  fs::copy(kCorpus / "dense_2d_fragments", array, fs::copy_options::recursive);
  TempDir dir;
  std::vector<std::string> log;
  const Indexed first = IndexIn(array, dir.path(), &log);
  ASSERT_FALSE(first.files.empty());

  const fs::path copy = fs::path(work.path()) / "copy";
  fs::copy(array, copy, fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(array)) {
    if (e.is_regular_file()) {
      fs::last_write_time(copy / fs::relative(e.path(), array), e.last_write_time());
    }
  }
  Opened copied = OpenArray(copy, StoreIn(dir.path(), &log));
  ASSERT_NE(copied.array, nullptr);
  EXPECT_EQ(ReadAll(*copied.tree, first.files), first.want);
  EXPECT_EQ(copied.array->layout_passes(), 0u) << "the same names, sizes and times";

  std::vector<fs::path> fragments;
  for (const auto& e : fs::directory_iterator(array / "__fragments")) fragments.push_back(e.path());
  std::sort(fragments.begin(), fragments.end());
  ASSERT_GE(fragments.size(), 2u);
  const fs::path from = fragments[1] / "a0.tdb", to = fragments[0] / "a0.tdb";
  ASSERT_EQ(fs::file_size(from), fs::file_size(to));
  fs::copy_file(from, to, fs::copy_options::overwrite_existing);
  Opened off = OpenArray(array, nullptr);
  ASSERT_NE(off.array, nullptr);
  const auto want = ReadAll(*off.tree, first.files);
  ASSERT_NE(want, first.want) << "the rewrite changes what the array shows";

  auto store = StoreIn(dir.path(), &log);
  Opened second = OpenArray(array, store);
  ASSERT_NE(second.array, nullptr);
  EXPECT_EQ(ReadAll(*second.tree, first.files), want);
  EXPECT_GT(second.array->layout_passes(), 0u) << "laid out again, not taken from the index";
  EXPECT_EQ(store->stats().dropped, 0u) << "missed, never found stale";
}

// Appends (ArrayTree::ExtendIndexed): a view whose fragments are an indexed
// view's plus ones lying past its last row is laid out from that view's
// layouts and its new cells alone, with the same bytes as a tree without
// the index; one whose new fragment does not lie past them, or whose base
// lost a fragment, is laid out by the pass.
// Two integer dimensions; a nullable number and a var-sized string, so that
// data.parquet counts valid cells and bytes per piece.
constexpr const char* kSchema = R"({
  "array_type": "sparse", "capacity": 40, "allows_dups": false,
  "dims": [{"name": "r", "type": "INT64", "domain": [0, 999], "tile_extent": 50},
           {"name": "c", "type": "INT32", "domain": [0, 99], "tile_extent": 100}],
  "attrs": [{"name": "v", "type": "FLOAT64"},
            {"name": "n", "type": "INT32", "nullable": true},
            {"name": "s", "type": "STRING_UTF8", "var": true}]})";

core::Range Rows(int64_t lo, int64_t hi) {
  core::Range r;
  r.lo = core::CopyBytes({reinterpret_cast<const uint8_t*>(&lo), 8});
  r.hi = core::CopyBytes({reinterpret_cast<const uint8_t*>(&hi), 8});
  return r;
}

// `fragments` fragments of `cells` cells each in row bands of [lo, hi].
void Write(core::TempArray& array, const core::ArraySchema& s, int64_t lo, int64_t hi,
           uint64_t fragments, uint64_t cells, uint64_t t, uint64_t seed) {
  core::SyntheticSpec spec;
  spec.seed = seed;
  spec.cells_min = spec.cells_max = cells;
  spec.fragments = fragments;
  int32_t c0 = 0, c1 = 99;
  core::Range cols;
  cols.lo = core::CopyBytes({reinterpret_cast<const uint8_t*>(&c0), 4});
  cols.hi = core::CopyBytes({reinterpret_cast<const uint8_t*>(&c1), 4});
  spec.subarray = {Rows(lo, hi), cols};
  auto w = core::WriteSyntheticFragments(array.root().string(), s, t, spec);
  ASSERT_TRUE(w.ok()) << w.error().ToString();
}

// The root's files an `ls -l` of /, attributes/ and dimensions/ sizes.
std::vector<std::string> RootFiles(Tree& tree) {
  std::vector<std::string> files = {"data.csv", "data.parquet"};
  for (const char* section : {"attributes", "dimensions"}) {
    auto list = tree.List(section);
    EXPECT_TRUE(list.ok());
    if (!list.ok()) continue;
    for (const auto& e : *list) files.push_back(std::string(section) + "/" + e.name);
  }
  return files;
}

constexpr uint64_t kBig = uint64_t{256} << 20;

// Indexes the array's root view (its files sized, as ls -l does), then
// calls `change`, then sizes and reads the root's files through a new tree
// over the same index: returns that tree's layout passes and extensions,
// and checks its bytes against a tree without the index.
struct Counts {
  uint64_t passes = 0, extensions = 0;
};
Counts AfterChange(core::TempArray& array, uint64_t piece, const std::function<void()>& change) {
  const fs::path index = array.root().string() + ".index";
  fs::remove_all(index);
  std::vector<std::string> log;
  {
    Opened first = OpenArray(array.root(), StoreIn(index.string(), &log), kBig, piece);
    if (first.array == nullptr) return {};
    ReadAll(*first.tree, RootFiles(*first.tree));
  }
  change();
  Opened off = OpenArray(array.root(), nullptr, kBig, piece);
  Opened on = OpenArray(array.root(), StoreIn(index.string(), &log), kBig, piece);
  if (off.array == nullptr || on.array == nullptr) return {};
  const std::vector<std::string> files = RootFiles(*off.tree);
  const auto got = ReadAll(*on.tree, files);
  Counts counts{on.array->layout_passes(), on.array->layout_extensions()};
  EXPECT_EQ(got, ReadAll(*off.tree, files));
  EXPECT_TRUE(log.empty()) << log.front();
  fs::remove_all(index);
  return counts;
}

TEST(IndexTest, AnAppendPastTheLastRowMeasuresOnlyItsCells) {
  // Pieces of 5 (the base's 450 cells fill its last piece), 7 (they end
  // inside one) and 1000 (one piece, which the new cells complete).
  for (uint64_t piece : {5, 7, 1000}) {
    SCOPED_TRACE(piece);
    core::TempArray array("index_append");
    const core::ArraySchema s = array.Create(kSchema);
    Write(array, s, 0, 299, 3, 150, 10, 1);
    const Counts c = AfterChange(array, piece, [&] { Write(array, s, 400, 449, 1, 120, 20, 2); });
    EXPECT_EQ(c.passes, 0u);
    EXPECT_EQ(c.extensions, 1u);
    // A second append extends the first extension.
    const Counts c2 = AfterChange(array, piece, [&] { Write(array, s, 450, 999, 2, 100, 30, 3); });
    EXPECT_EQ(c2.passes, 0u);
    EXPECT_EQ(c2.extensions, 1u);
  }
}

TEST(IndexTest, WhatDoesNotFollowTheBaseIsLaidOutWhole) {
  core::TempArray array("index_append");
  const core::ArraySchema s = array.Create(kSchema);
  Write(array, s, 0, 299, 3, 150, 10, 1);
  // Rows that meet the base's: the new cells fall among the old ones.
  Counts c = AfterChange(array, 7, [&] { Write(array, s, 299, 340, 1, 50, 20, 2); });
  EXPECT_EQ(c.passes, 1u);
  EXPECT_EQ(c.extensions, 0u);
  // A fragment of the base gone (the array rewritten with others).
  c = AfterChange(array, 7, [&] {
    for (const auto& e : fs::directory_iterator(array.root() / "__fragments")) {
      fs::remove_all(e.path());
      break;
    }
    fs::remove_all(array.root() / "__commits");
    fs::create_directory(array.root() / "__commits");
    Write(array, s, 500, 599, 1, 60, 40, 4);
  });
  EXPECT_EQ(c.passes, 1u);
  EXPECT_EQ(c.extensions, 0u);
}

// Window counts after an append (ArrayView::TakeCountsBefore): the grown
// view takes the counts of the base's windows below its new rows, so that
// a `tail` of data.csv right after the append counts only the windows from
// the base's last on; the tree writes what that tail counted back to the
// entry when it goes, and the next tree's tail counts no window. Why
// 300,000 cells: a window is at least 64 Ki cells (IndexWindowCells), and
// only a view of several windows takes counts.
TEST(IndexTest, AnAppendTakesTheCountsOfTheBasesWindows) {
  // Space tiles 10 columns wide: each row takes cells from 10 tiles, so
  // windows are built from keys (runs would be a cell long) and cut into
  // sub-windows.
  constexpr const char* kRows = R"({
    "array_type": "sparse", "capacity": 1000, "allows_dups": false,
    "dims": [{"name": "r", "type": "INT64", "domain": [0, 99999], "tile_extent": 1000},
             {"name": "c", "type": "INT32", "domain": [0, 99], "tile_extent": 10}],
    "attrs": [{"name": "v", "type": "FLOAT64"}]})";
  constexpr uint64_t kSmall = uint64_t{8} << 20;  // windows of 64 Ki cells
  constexpr uint64_t kPiece = 4096;
  core::TempArray array("index_append_windows");
  const core::ArraySchema s = array.Create(kRows);
  Write(array, s, 0, 59999, 3, 100000, 10, 1);
  const fs::path index = array.root().string() + ".index";
  std::vector<std::string> log;
  {
    Opened first = OpenArray(array.root(), StoreIn(index.string(), &log), kSmall, kPiece);
    ASSERT_NE(first.array, nullptr);
    for (const std::string& f : RootFiles(*first.tree)) ASSERT_TRUE(first.tree->GetAttr(f).ok());
  }
  Write(array, s, 60000, 60999, 1, 3000, 20, 2);
  // The last 100 bytes of data.csv, and the tiles of r decoded to size and
  // read them.
  auto tail = [](Tree& tree, uint64_t* decoded) {
    const core::DecodeStats before = core::TileDecodeStats();
    auto attr = tree.GetAttr("data.csv");
    auto open = tree.Open("data.csv");
    EXPECT_TRUE(attr.ok() && open.ok());
    if (!attr.ok() || !open.ok()) return std::string();
    std::string bytes = Read(**open, attr->size - 100, 100);
    const core::DecodeStats after = core::TileDecodeStats();
    auto r = [](const core::DecodeStats& d) {
      auto it = d.by_field.find("r");
      return it == d.by_field.end() ? uint64_t{0} : it->second;
    };
    *decoded = r(after) - r(before);
    return bytes;
  };
  uint64_t pass = 0, after_append = 0, remounted = 0;
  Opened off = OpenArray(array.root(), nullptr, kSmall, kPiece);
  ASSERT_NE(off.array, nullptr);
  const std::string want = tail(*off.tree, &pass);
  const std::vector<std::string> files = RootFiles(*off.tree);
  {
    Opened on = OpenArray(array.root(), StoreIn(index.string(), &log), kSmall, kPiece);
    ASSERT_NE(on.array, nullptr);
    for (const std::string& f : files) ASSERT_TRUE(on.tree->GetAttr(f).ok());
    EXPECT_EQ(on.array->layout_passes(), 0u);
    EXPECT_EQ(on.array->layout_extensions(), 1u);
    EXPECT_GE(on.array->windows_taken(), 2u);
    EXPECT_EQ(tail(*on.tree, &after_append), want);
  }
  Opened again = OpenArray(array.root(), StoreIn(index.string(), &log), kSmall, kPiece);
  ASSERT_NE(again.array, nullptr);
  for (const std::string& f : files) ASSERT_TRUE(again.tree->GetAttr(f).ok());
  EXPECT_EQ(again.array->layout_passes() + again.array->layout_extensions(), 0u);
  EXPECT_EQ(tail(*again.tree, &remounted), want);
  // The pass decodes every tile of r once.
  EXPECT_LT(after_append, pass / 2) << "only the windows from the base's last on";
  EXPECT_GT(after_append, 0u);
  EXPECT_LT(remounted, after_append) << "no window counted: a sub-window built";
  EXPECT_TRUE(log.empty()) << log.front();
  std::cerr << "r tiles decoded: pass " << pass << ", after the append " << after_append
            << ", remounted " << remounted << "\n";
  fs::remove_all(index);
}

// Diffs (DiffIndexed): a remount's diff of the same views is served from
// what the first pass found, with no pass and no tile decoded to size its
// files, byte for byte as on a tree without the index; an entry cut short
// is not taken (the pass runs again).
TEST(IndexTest, ARemountsDiffMakesNoPass) {
  int diffs = 0;
  for (const char* name : {"sparse_2d", "sparse_dups", "deletes", "with_timestamps",
                           "schema_evolution", "consolidated", "dense_2d_fragments", "types"}) {
    SCOPED_TRACE(name);
    TempDir dir;
    std::vector<std::string> log;
    std::vector<std::string> files;
    std::map<std::string, std::string> want;
    {
      Opened first = OpenArray(kCorpus / name, StoreIn(dir.path(), &log));
      ASSERT_NE(first.array, nullptr);
      auto history = first.tree->List("history");
      ASSERT_TRUE(history.ok());
      if (history->size() < 2) continue;
      const std::string diff = "diff/" + history->front().name + ".." + history->back().name + "/";
      for (const char* f : {"summary.json", "added.csv", "removed.csv", "changed.csv"}) {
        files.push_back(diff + f);
      }
      want = ReadAll(*first.tree, files);
      EXPECT_EQ(first.array->diffs_indexed(), 0u);
    }
    Opened second = OpenArray(kCorpus / name, StoreIn(dir.path(), &log));
    ASSERT_NE(second.array, nullptr);
    const uint64_t before = core::TileDecodeStats().tiles;
    for (const std::string& f : files) ASSERT_TRUE(second.tree->GetAttr(f).ok()) << f;
    EXPECT_EQ(core::TileDecodeStats().tiles, before) << "tiles decoded to size the diff's files";
    EXPECT_EQ(second.array->diffs_indexed(), 1u);
    EXPECT_EQ(ReadAll(*second.tree, files), want);
    Opened off = OpenArray(kCorpus / name, nullptr);
    ASSERT_NE(off.array, nullptr);
    EXPECT_EQ(ReadAll(*off.tree, files), want);
    EXPECT_TRUE(log.empty()) << log.front();
    ++diffs;
  }
  EXPECT_GE(diffs, 6);
}

// A diff entry cut anywhere, or of another piece size, is not taken: the
// pass runs and gives the same files.
TEST(IndexTest, DiffEntriesThatDoNotFitAreNotTaken) {
  auto storage = core::LocalStorage::Open((kCorpus / "consolidated").string());
  ASSERT_TRUE(storage.ok());
  auto array = core::Array::Open(*storage, std::nullopt, core::DefaultLimits());
  ASSERT_TRUE(array.ok()) << array.error().ToString();
  auto instants = (*array)->Instants();
  ASSERT_TRUE(instants.ok());
  ASSERT_GE(instants->size(), 2u);
  DiffSide from, to;
  auto a = (*array)->ViewAt(instants->front());
  auto b = (*array)->ViewAt(instants->back());
  ASSERT_TRUE(a.ok() && b.ok());
  from.view = *a;
  to.view = *b;
  from.instant = static_cast<int64_t>(instants->front());
  to.instant = static_cast<int64_t>(instants->back());
  auto bytes = [](const DiffFiles& f) {
    std::string out = *f.summary_json;
    for (const auto& c : f.csv) out += std::to_string(c.layout->size()) + ",";
    return out;
  };
  std::string saved;
  DiffIndexed first;
  first.to_save = &saved;
  auto want = ComputeDiff(from, to, "", 2, &first);
  ASSERT_TRUE(want.ok()) << want.error().ToString();
  ASSERT_FALSE(saved.empty());
  DiffIndexed whole;
  whole.saved = saved;
  auto got = ComputeDiff(from, to, "", 2, &whole);
  ASSERT_TRUE(got.ok());
  EXPECT_TRUE(whole.taken);
  EXPECT_EQ(bytes(*got), bytes(*want));
  DiffIndexed other_pieces;
  other_pieces.saved = saved;
  ASSERT_TRUE(ComputeDiff(from, to, "", 3, &other_pieces).ok());
  EXPECT_FALSE(other_pieces.taken);
  for (size_t cut = 0; cut < saved.size(); cut += std::max<size_t>(1, saved.size() / 64)) {
    DiffIndexed part;
    std::string again;
    part.saved = std::string_view(saved).substr(0, cut);
    part.to_save = &again;
    auto redone = ComputeDiff(from, to, "", 2, &part);
    ASSERT_TRUE(redone.ok()) << "cut at " << cut;
    EXPECT_FALSE(part.taken) << "cut at " << cut;
    EXPECT_EQ(bytes(*redone), bytes(*want)) << "cut at " << cut;
    EXPECT_EQ(again, saved) << "cut at " << cut;
  }
}

}  // namespace
}  // namespace tiledbfs::fusefs::index_test
