// Streamed files (data.csv, .txt, var .bin/.offsets, .validity, fixed
// .bin/.npy) against the whole-file rendering of whole columns: on every
// corpus array (root, history and fragment views) with pieces of a few cells
// so that every file spans many pieces and layout batches, and on generated
// arrays large enough for the default pieces and several batches. Reads at
// random offsets and sizes return exactly the bytes of the whole file;
// stat's size is its length. The layout's own mechanics, with renderers made
// by hand, are in streamed_file_test.cc.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <utility>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/util/sanitizers.h"
#include "fusefs/model/array_tree.h"
#include "fusefs/model/instant.h"
#include "fusefs/model/key_file.h"
#include "fusefs/model/names.h"
#include "fusefs/model/streamed_file.h"
#include "fusefs/render/column_files.h"
#include "fusefs/render/csv.h"
#include "fusefs/render/npy.h"
#include "tests/fusefs/model/read_file.h"

namespace tiledbfs::fusefs::streamed_file_corpus_test {
namespace {

namespace fs = std::filesystem;
const fs::path kCorpus = fs::path(TILEDBFS_TEST_DATA) / "corpus" / "arrays";

using Files = std::map<std::string, std::string>;  // path in a view -> bytes

// Every cell file of a view, rendered whole from whole columns (ReadField).
Files WholeFiles(const core::ArrayView& view, const std::vector<core::Enumeration>& enums) {
  const core::ArraySchema& schema = view.schema();
  Files out;
  std::vector<core::Column> cols;
  std::vector<bool> is_dim;
  for (const auto& d : schema.dimensions) {
    auto c = view.ReadField(d.name);
    EXPECT_TRUE(c.ok()) << d.name << ": " << c.error().ToString();
    if (!c.ok()) return out;
    cols.push_back(std::move(*c));
    is_dim.push_back(true);
  }
  for (const auto& a : schema.attributes) {
    auto c = view.ReadField(a.name);
    EXPECT_TRUE(c.ok()) << a.name << ": " << c.error().ToString();
    if (!c.ok()) return out;
    cols.push_back(std::move(*c));
    is_dim.push_back(false);
  }
  auto shape = view.Shape();
  EXPECT_TRUE(shape.ok());
  std::vector<CsvColumn> all;
  for (size_t k = 0; k < cols.size(); ++k) {
    const core::Column& c = cols[k];
    const core::Enumeration* e = is_dim[k] ? nullptr : EnumerationFor(schema, enums, c.name);
    all.push_back({&c, e});
    std::string base = std::string(is_dim[k] ? "dimensions/" : "attributes/") + EscapeName(c.name);
    std::string data(c.data.begin(), c.data.end());
    for (ColumnFile f : ColumnFiles(c)) {
      std::string& file = out[base + std::string(ColumnFileExtension(f))];
      switch (f) {
        case ColumnFile::kBin:
          file = data;
          break;
        case ColumnFile::kOffsets:
          file.assign(reinterpret_cast<const char*>(c.offsets.data()), c.offsets.size() * 8);
          break;
        case ColumnFile::kValidity:
          file.assign(c.validity.begin(), c.validity.end());
          break;
        case ColumnFile::kNpy: {
          auto npy = MakeNpyFile(c.type, c.cell_val_num, *shape);
          EXPECT_TRUE(npy.ok());
          if (npy.ok()) file = npy->header + data;
          break;
        }
        case ColumnFile::kTxt: {
          auto t = CsvTable::Make({{&c, e}}, false);
          EXPECT_TRUE(t.ok());
          if (t.ok()) t->AppendRows(file, 0, t->row_count());
          break;
        }
      }
    }
  }
  auto table = CsvTable::Make(all, true);
  EXPECT_TRUE(table.ok());
  if (table.ok()) {
    std::string& csv = out["data.csv"];
    table->AppendHeader(csv);
    table->AppendRows(csv, 0, table->row_count());
  }
  return out;
}

// stat, a whole read, reads in pieces and at random places of `path`
// (`prefix` + name in `want`) against the whole rendering.
void ExpectFileMatches(Tree& tree, const std::string& path, const std::string& want,
                       std::mt19937_64& rng, int random_reads) {
  auto attr = tree.GetAttr(path);
  ASSERT_TRUE(attr.ok()) << path << ": " << attr.error().ToString();
  EXPECT_EQ(attr->size, want.size()) << path;
  auto f = tree.Open(path);
  ASSERT_TRUE(f.ok()) << path << ": " << f.error().ToString();
  EXPECT_EQ((*f)->size(), want.size()) << path;
  ASSERT_EQ(Read(**f, 0, want.size() + 10), want) << path;
  // Sequential pieces of an odd size.
  std::string seq;
  for (uint64_t at = 0; at < want.size();) {
    std::string part = Read(**f, at, 777);
    ASSERT_FALSE(part.empty()) << path << " at " << at;
    at += part.size();
    seq += part;
  }
  EXPECT_EQ(seq, want) << path;
  // Random ranges, some crossing the end, and the edges.
  uint64_t size = want.size();
  for (int k = 0; k < random_reads; ++k) {
    uint64_t offset = rng() % (size + 16);
    size_t n = static_cast<size_t>(rng() % (k % 4 == 0 ? size + 16 : 600));
    std::string got = Read(**f, offset, n);
    std::string exp = offset < size ? want.substr(offset, n) : "";
    ASSERT_EQ(got, exp) << path << " [" << offset << ", +" << n << ")";
  }
  for (uint64_t offset : {uint64_t{0}, size > 0 ? size - 1 : 0, size, size + 1}) {
    std::string exp = offset < size ? want.substr(offset, 3) : "";
    EXPECT_EQ(Read(**f, offset, 3), exp) << path << " at " << offset;
  }
}

struct Source {
  std::string path;
  std::optional<core::EncryptionKey> key;
};

// Every cell file of the root view, two history views and a few fragments.
void CheckArray(const Source& src, const TreeOptions& base_options, int random_reads,
                size_t max_fragments) {
  SCOPED_TRACE(src.path);
  TreeOptions options = base_options;
  options.key = src.key;
  auto tree = OpenTree(src.path, options);
  ASSERT_TRUE(tree.ok()) << tree.error().ToString();
  auto storage = core::LocalStorage::Open(src.path);
  ASSERT_TRUE(storage.ok());
  auto array = core::Array::Open(*storage, src.key, core::DefaultLimits());
  ASSERT_TRUE(array.ok()) << array.error().ToString();
  std::mt19937_64 rng(7);

  auto check_view = [&](const std::string& prefix, const core::ArrayView& view) {
    SCOPED_TRACE(prefix.empty() ? "root" : prefix);
    auto enums = core::LoadSchemaEnumerations(**storage, view.schema(), (*array)->key(),
                                              core::DefaultLimits());
    Files files = WholeFiles(view, enums.ok() ? *enums : std::vector<core::Enumeration>{});
    ASSERT_FALSE(files.empty());
    for (const auto& [name, bytes] : files) {
      ExpectFileMatches(**tree, prefix + name, bytes, rng, random_reads);
      if (::testing::Test::HasFatalFailure()) return;
    }
  };

  auto root = (*array)->ViewAt(options.timestamp_ms ? *options.timestamp_ms : UINT64_MAX);
  ASSERT_TRUE(root.ok());
  check_view("", **root);

  auto instants = (*array)->Instants();
  ASSERT_TRUE(instants.ok());
  if (!instants->empty()) {
    for (uint64_t t : {instants->front(), (*instants)[instants->size() / 2]}) {
      auto view = (*array)->ViewAt(t);
      ASSERT_TRUE(view.ok());
      check_view("history/" + FormatIso(static_cast<int64_t>(t)) + "/", **view);
    }
  }

  size_t done = 0;
  for (const auto& frag : (*root)->fragments()) {
    if (done++ == max_fragments) break;
    core::ViewInputs in;
    in.fragments = {frag};
    in.filter_timestamps = false;
    in.dedup = false;
    in.encrypted = (*array)->encrypted();
    core::ArrayView view(frag->schema_ptr(), std::move(in), frag->name().t2,
                         (*array)->tile_cache());
    check_view("fragments/" + frag->name().name + "/", view);
  }
}

std::vector<Source> CorpusArrays() {
  std::vector<Source> out;
  for (const auto& e : fs::directory_iterator(kCorpus)) {
    if (!e.is_directory() || e.path().filename() == "group") continue;
    Source s{e.path().string(), std::nullopt};
    if (e.path().filename() == "encrypted") {
      auto key = ReadKeyFile((kCorpus / "encrypted.key").string());
      EXPECT_TRUE(key.ok());
      if (key.ok()) s.key = *key;
    }
    out.push_back(std::move(s));
  }
  return out;
}

TEST(StreamedFileTest, CorpusFilesInManyPiecesEqualWholeRendering) {
  TreeOptions options;
  options.piece_cells = 3;         // many pieces even for a few cells
  options.layout_batch_cells = 7;  // batches of two pieces, the last one short
  for (const Source& s : CorpusArrays()) {
    CheckArray(s, options, 40, 3);
    if (HasFatalFailure()) return;
  }
}

TEST(StreamedFileTest, CorpusFilesWithDefaultPiecesEqualWholeRendering) {
  for (const Source& s : CorpusArrays()) {
    CheckArray(s, TreeOptions{}, 10, 2);
    if (HasFatalFailure()) return;
  }
}

// The text files of the root view, each on a fresh tree (nothing known of
// where its pieces start), read first at random places, then on.
TEST(StreamedFileTest, CorpusTextFilesReadAnywhereFirst) {
  TreeOptions options;
  options.piece_cells = 3;
  options.layout_batch_cells = 7;
  std::mt19937_64 rng(11);
  for (const Source& src : CorpusArrays()) {
    SCOPED_TRACE(src.path);
    options.key = src.key;
    auto storage = core::LocalStorage::Open(src.path);
    ASSERT_TRUE(storage.ok());
    auto array = core::Array::Open(*storage, src.key, core::DefaultLimits());
    ASSERT_TRUE(array.ok()) << array.error().ToString();
    auto root = (*array)->ViewAt(UINT64_MAX);
    ASSERT_TRUE(root.ok());
    auto enums = core::LoadSchemaEnumerations(**storage, (*root)->schema(), (*array)->key(),
                                              core::DefaultLimits());
    Files files = WholeFiles(**root, enums.ok() ? *enums : std::vector<core::Enumeration>{});
    for (const auto& [name, want] : files) {
      if (name != "data.csv" && !name.ends_with(".txt")) continue;
      auto tree = OpenTree(src.path, options);
      ASSERT_TRUE(tree.ok()) << tree.error().ToString();
      auto f = (*tree)->Open(name);
      ASSERT_TRUE(f.ok()) << name << ": " << f.error().ToString();
      ASSERT_EQ((*f)->size(), want.size()) << name;
      for (int k = 0; k < 12; ++k) {
        const uint64_t offset = rng() % (want.size() + 4);
        const size_t n = static_cast<size_t>(rng() % 300);
        ASSERT_EQ(Read(**f, offset, n), offset < want.size() ? want.substr(offset, n) : "")
            << name << " [" << offset << ", +" << n << ")";
      }
      ASSERT_EQ(Read(**f, 0, want.size()), want) << name;
    }
  }
}

TEST(StreamedFileTest, OnePiecePerCellAndTinyCaches) {
  TreeOptions options;
  options.piece_cells = 1;
  options.layout_batch_cells = 1;
  options.cache_bytes = 1;  // nothing fits: every layout and tile is recomputed
  for (const char* name : {"sparse_strdim", "dense_2d_fragments", "types", "enumerations"}) {
    CheckArray({(kCorpus / name).string(), std::nullopt}, options, 20, 1);
    if (HasFatalFailure()) return;
  }
}

// Arrays made by tiledb-mkarray, large enough for several default pieces
// (4096 cells) and layout batches of kBatchCells (a quarter of the default
// 65536, which walks the same code at a quarter of the cost: the threaded
// tests run 200 times under load in scripts/stress.sh). Each test makes
// only the array it reads (ctest runs every test in a process of its own).
class GeneratedArrayTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    mk_ = std::string(TILEDBFS_BIN_DIR) + "/tiledb-mkarray";
    if (!fs::exists(mk_)) return;
    dir_ = fs::temp_directory_path() / ("tiledbfs_streamed_" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  static void TearDownTestSuite() {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  void SetUp() override {
    if (!fs::exists(mk_)) GTEST_SKIP() << mk_ << " not built";
  }

  static bool Run(const std::string& args) {
    // Under ASan, the sparse sampler's deep recursion of small allocations
    // spends most of its time recording 30-frame allocation stacks (the
    // default): 12 frames make the writes about 7 times faster.
    std::string env;
#if TILEDBFS_ASAN
    const char* asan = std::getenv("ASAN_OPTIONS");
    env = std::string("ASAN_OPTIONS='") + (asan ? std::string(asan) + ":" : "") +
          "malloc_context_size=12' ";
#endif
    return std::system((env + mk_ + " " + args + " >/dev/null 2>&1").c_str()) == 0;
  }

  // Root view: both fragments, more than one layout batch (kSparseCells1 +
  // kSparseCells2 > kBatchCells), so are the views of the first fragment
  // and of the first instant; the second fragment spans many pieces.
  static fs::path MakeSparse() {
    fs::path a = dir_ / "sparse";
    std::ofstream((dir_ / "sparse.json").string()) << R"({
      "array_type": "sparse", "capacity": 5000, "allows_dups": false,
      "dims": [{"name": "r", "type": "INT64", "domain": [0, 999999], "tile_extent": 100000},
               {"name": "c", "type": "INT64", "domain": [0, 999999], "tile_extent": 100000}],
      "attrs": [{"name": "x", "type": "FLOAT64"},
                {"name": "s", "type": "STRING_UTF8", "cell_val_num": 4294967295, "var": true},
                {"name": "n", "type": "INT32", "nullable": true},
                {"name": "v", "type": "INT16", "cell_val_num": 4294967295, "var": true,
                 "nullable": true}]})";
    bool ok = Run("create " + a.string() + " --schema " + (dir_ / "sparse.json").string()) &&
              Run("write " + a.string() + " --timestamp 10 --synthetic 1 --cells " +
                  std::to_string(kSparseCells1)) &&
              Run("write " + a.string() + " --timestamp 20 --synthetic 2 --cells " +
                  std::to_string(kSparseCells2));
    return ok ? a : fs::path();
  }

  // 200 x 200 cells (40000: three batches), overwritten in part.
  static fs::path MakeDense() {
    fs::path a = dir_ / "dense";
    std::ofstream((dir_ / "dense.json").string()) << R"({
      "array_type": "dense",
      "dims": [{"name": "y", "type": "INT32", "domain": [0, 199], "tile_extent": 32},
               {"name": "x", "type": "INT32", "domain": [0, 199], "tile_extent": 50}],
      "attrs": [{"name": "f", "type": "FLOAT32"},
                {"name": "b", "type": "BLOB", "cell_val_num": 4294967295, "var": true}]})";
    bool ok = Run("create " + a.string() + " --schema " + (dir_ / "dense.json").string()) &&
              Run("write " + a.string() + " --timestamp 10 --synthetic 3") &&
              Run("write " + a.string() + " --timestamp 20 --synthetic 4 --subarray 25:125,15:165");
    return ok ? a : fs::path();
  }

  static constexpr uint64_t kBatchCells = 16384;
#if TILEDBFS_ASAN
  // Smaller under the sanitizers (the suite must fit CI's time), still over
  // one batch in the root view and in the first fragment's.
  static constexpr uint64_t kSparseCells1 = 17500, kSparseCells2 = 3000;
#else
  static constexpr uint64_t kSparseCells1 = 22500, kSparseCells2 = 15000;
#endif
  static_assert(kSparseCells1 > kBatchCells);
  static TreeOptions Options() {
    TreeOptions options;
    options.layout_batch_cells = kBatchCells;
    return options;
  }

  static inline std::string mk_;
  static inline fs::path dir_;
};

TEST_F(GeneratedArrayTest, SparseMultiBatchFilesEqualWholeRendering) {
  fs::path a = MakeSparse();
  ASSERT_FALSE(a.empty()) << "tiledb-mkarray failed";
  CheckArray({a.string(), std::nullopt}, Options(), 60, 2);
}

TEST_F(GeneratedArrayTest, DenseMultiBatchFilesEqualWholeRendering) {
  fs::path a = MakeDense();
  ASSERT_FALSE(a.empty()) << "tiledb-mkarray failed";
  CheckArray({a.string(), std::nullopt}, Options(), 60, 2);
}

}  // namespace
}  // namespace tiledbfs::fusefs::streamed_file_corpus_test
