// Every view of every array of the fixture corpora, read through the core
// (Array -> ArrayView -> ReadField), compared byte for byte with TileDB's own
// read of it (tests/data/<corpus>/expected/<name>/views/<T>/): the public
// corpus and the oracle corpus (tests/data/oracle_corpus/README.md).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <tuple>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "tests/core/read/corpus_key.h"
#include "tests/core/read/wrapped_storage.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;
const fs::path kCorpus = fs::path(TILEDBFS_TEST_DATA) / "corpus";
const fs::path kOracleCorpus = fs::path(TILEDBFS_TEST_DATA) / "oracle_corpus";

std::string ReadText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The key of an encrypted array: <array>.key beside it (64 hex digits).
std::string OffsetsBytes(const std::vector<uint64_t>& o) {
  return std::string(reinterpret_cast<const char*>(o.data()), o.size() * 8);
}

std::string Joined(const Pieces& p) {
  std::string out;
  for (Bytes b : p.spans) out += AsStringView(b);
  return out;
}

// Checks every view of one array folder against its expected folder.
void CheckArray(const fs::path& array_dir, const fs::path& exp, const std::string& name) {
  auto storage = LocalStorage::Open(array_dir.string());
  ASSERT_TRUE(storage.ok()) << storage.error().message();
  auto array = Array::Open(*storage, CorpusKeyFor(array_dir), DefaultLimits());
  ASSERT_TRUE(array.ok()) << name << ": " << array.error().ToString();
  for (const auto& vdir : fs::directory_iterator(exp / "views")) {
    std::string vname = vdir.path().filename();
    uint64_t t = vname == "latest" ? UINT64_MAX : std::stoull(vname);
    auto view = (*array)->ViewAt(t);
    ASSERT_TRUE(view.ok()) << name << " " << vname << ": " << view.error().ToString();
    auto doc = nlohmann::json::parse(ReadText(vdir.path() / "view.json"));
    auto count = (*view)->CellCount();
    ASSERT_TRUE(count.ok()) << name << " " << vname << ": " << count.error().ToString();
    EXPECT_EQ(*count, doc["cell_count"].get<uint64_t>()) << name << " " << vname;
    bool dups = doc["schema"].value("allows_dups", false) && !(*view)->dense();
    for (const auto& f : doc["fields"]) {
      std::string field = f["name"];
      auto col = (*view)->ReadField(field);
      ASSERT_TRUE(col.ok()) << name << " " << vname << " " << field << ": "
                            << col.error().ToString();
      if (dups && f["kind"] != "dim")
        continue;  // ties in any order: conformance compares multisets
      std::string esc = field;
      EXPECT_EQ(std::string(col->data.begin(), col->data.end()),
                ReadText(vdir.path() / (esc + ".data")))
          << name << " " << vname << " " << field;
      if (f["kind"] != "dim" && !f["var"].get<bool>()) {
        // The same values handed as pieces of the tiles (the mount's writev).
        Pieces pieces;
        auto again = (*view)->ReadFieldRange(field, 0, *count, nullptr, nullptr, &pieces);
        ASSERT_TRUE(again.ok()) << name << " " << vname << " " << field;
        EXPECT_TRUE(again->data.empty());
        EXPECT_EQ(pieces.bytes, col->data.size());
        EXPECT_EQ(Joined(pieces), ReadText(vdir.path() / (esc + ".data")))
            << name << " " << vname << " " << field << " pieces";
      }
      if (f["var"].get<bool>()) {
        EXPECT_EQ(OffsetsBytes(col->offsets), ReadText(vdir.path() / (esc + ".offsets")))
            << name << " " << vname << " " << field << " offsets";
      }
      if (f["nullable"].get<bool>()) {
        EXPECT_EQ(std::string(col->validity.begin(), col->validity.end()),
                  ReadText(vdir.path() / (esc + ".validity")))
            << name << " " << vname << " " << field << " validity";
      }
    }
  }
}

// (corpus folder, array name)
class CorpusViewTest : public testing::TestWithParam<std::pair<fs::path, std::string>> {};

TEST_P(CorpusViewTest, EveryViewMatchesTileDB) {
  const auto& [corpus, name] = GetParam();
  CheckArray(corpus / "arrays" / name, corpus / "expected" / name, name);
}

std::vector<std::pair<fs::path, std::string>> CorpusArrays(const fs::path& corpus) {
  std::vector<std::pair<fs::path, std::string>> out;
  for (const auto& e : fs::directory_iterator(corpus / "expected")) {
    if (fs::exists(e.path() / "views")) out.emplace_back(corpus, e.path().filename());
  }
  std::sort(out.begin(), out.end());
  return out;
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusViewTest, testing::ValuesIn(CorpusArrays(kCorpus)),
                         [](const auto& info) { return info.param.second; });
INSTANTIATE_TEST_SUITE_P(OracleCorpus, CorpusViewTest,
                         testing::ValuesIn(CorpusArrays(kOracleCorpus)),
                         [](const auto& info) { return info.param.second; });

TEST(GroupMemberViewTest, MembersReadLikeArrays) {
  for (const char* m : {"dense_a", "sparse_b", "sub/c_arr"}) {
    CheckArray(kCorpus / "arrays" / "group" / m, kCorpus / "expected" / "group" / m, m);
  }
}

// A copy of a corpus array in a temporary folder, for damaging.
fs::path CopyArray(const std::string& name) {
  fs::path dst =
      fs::temp_directory_path() / ("tiledbfs_view_test_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(dst);
  fs::copy(kCorpus / "arrays" / name, dst, fs::copy_options::recursive);
  for (const auto& e : fs::recursive_directory_iterator(dst)) {
    fs::permissions(e.path(), fs::perms::owner_all, fs::perm_options::add);
  }
  return dst;
}

TEST(DamagedArrayTest, TruncatedDataFileIsCorruptAndNamed) {
  fs::path dir = CopyArray("dense_1d");
  fs::path data;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename() == "a0.tdb") data = e.path();
  }
  ASSERT_FALSE(data.empty());
  fs::resize_file(data, fs::file_size(data) / 2);
  auto storage = LocalStorage::Open(dir.string());
  ASSERT_TRUE(storage.ok());
  auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
  ASSERT_TRUE(array.ok()) << array.error().ToString();
  auto view = (*array)->ViewAt(UINT64_MAX);
  ASSERT_TRUE(view.ok());
  auto col = (*view)->ReadField("a");
  ASSERT_FALSE(col.ok());
  EXPECT_EQ(col.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(col.error().message().find("a0.tdb"), std::string::npos) << col.error().message();
  fs::remove_all(dir);
}

TEST(DamagedArrayTest, ChecksumMismatchIsDetected) {
  fs::path dir = CopyArray("filters");
  // Attribute checksum_md5 is the 14th attribute (a13).
  fs::path data;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().filename() == "a13.tdb" &&
        e.path().parent_path().filename().string().find("1700000001000_1700000001000") !=
            std::string::npos) {
      data = e.path();
    }
  }
  ASSERT_FALSE(data.empty());
  {
    std::fstream f(data, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(fs::file_size(data) - 3));
    char c;
    f.read(&c, 1);
    c ^= 0x5a;
    f.seekp(static_cast<std::streamoff>(fs::file_size(data) - 3));
    f.write(&c, 1);
  }
  auto storage = LocalStorage::Open(dir.string());
  auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
  ASSERT_TRUE(array.ok());
  auto view = (*array)->ViewAt(UINT64_MAX);
  ASSERT_TRUE(view.ok());
  auto col = (*view)->ReadField("checksum_md5");
  ASSERT_FALSE(col.ok());
  EXPECT_EQ(col.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(col.error().message().find("a13.tdb"), std::string::npos) << col.error().message();
  // Other attributes stay readable.
  EXPECT_TRUE((*view)->ReadField("gzip").ok());
  fs::remove_all(dir);
}

TEST(DamagedArrayTest, EncryptedArrayNeedsItsKey) {
  auto storage = LocalStorage::Open((kCorpus / "arrays" / "encrypted").string());
  ASSERT_TRUE(storage.ok());
  auto none = Array::Open(*storage, std::nullopt, DefaultLimits());
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().code(), ErrorCode::kKey);
  EncryptionKey wrong;
  wrong.bytes.fill(7);
  auto bad = Array::Open(*storage, wrong, DefaultLimits());
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kKey) << bad.error().ToString();
}

TEST(ArrayTest, NotAnArrayIsNotFound) {
  auto storage = LocalStorage::Open((kCorpus / "expected").string());
  ASSERT_TRUE(storage.ok());
  auto a = Array::Open(*storage, std::nullopt, DefaultLimits());
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace tiledbfs::core

namespace tiledbfs::core {
namespace {

// The latest view of a corpus array (no key), or null with the failure
// recorded.
std::shared_ptr<const ArrayView> LatestView(const std::string& name) {
  auto storage = LocalStorage::Open((kCorpus / "arrays" / name).string());
  if (!storage.ok()) {
    ADD_FAILURE() << name << ": " << storage.error().ToString();
    return nullptr;
  }
  auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
  if (!array.ok()) {
    ADD_FAILURE() << name << ": " << array.error().ToString();
    return nullptr;
  }
  auto view = (*array)->ViewAt(UINT64_MAX);
  if (!view.ok()) {
    ADD_FAILURE() << name << ": " << view.error().ToString();
    return nullptr;
  }
  return *view;
}

// Range reads decode only what they cover and give exactly the slice of a
// whole read, at every offset and length (dense and sparse, fixed and var).
TEST(RangeReadTest, EveryRangeIsTheSliceOfTheWholeRead) {
  for (const char* name : {"dense_2d_fragments", "dense_colmajor", "sparse_2d", "filters"}) {
    auto view = LatestView(name);
    ASSERT_NE(view, nullptr);
    auto n = view->CellCount();
    ASSERT_TRUE(n.ok());
    const ArraySchema& s = view->schema();
    std::vector<std::string> fields;
    for (const auto& d : s.dimensions) fields.push_back(d.name);
    for (const auto& a : s.attributes) fields.push_back(a.name);
    for (const auto& f : fields) {
      auto whole = view->ReadField(f);
      ASSERT_TRUE(whole.ok()) << name << " " << f << ": " << whole.error().ToString();
      uint64_t step = std::max<uint64_t>(1, *n / 7);
      for (uint64_t first = 0; first < *n; first += step) {
        for (uint64_t count : {uint64_t{1}, uint64_t{3}, *n - first}) {
          if (first + count > *n) continue;
          auto part = view->ReadFieldRange(f, first, count);
          ASSERT_TRUE(part.ok()) << part.error().ToString();
          ASSERT_EQ(part->cell_count, count);
          for (uint64_t i = 0; i < count; ++i) {
            Bytes a = whole->cell(first + i), b = part->cell(i);
            ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()))
                << name << " " << f << " cell " << first + i;
            ASSERT_EQ(whole->valid(first + i), part->valid(i));
          }
        }
      }
      EXPECT_FALSE(view->ReadFieldRange(f, *n, 1).ok());
    }
  }
}

// Pieces of a range (GatherAttribute's writev output) are the slice of a
// whole read, point into memory they keep alive after the view, its cache
// and its array are gone, and are mostly spans of the tiles themselves:
// single-fragment dense views, fragments over one another, fragments that
// predate an attribute (fill values), sparse merges.
TEST(RangeReadTest, PiecesAreTheSliceAndOutliveTheirView) {
  for (const char* name : {"dense_1d", "dense_2d_fragments", "schema_evolution", "sparse_2d"}) {
    std::vector<std::pair<std::string, std::string>> wholes;  // field, bytes
    std::vector<std::tuple<std::string, uint64_t, uint64_t, Pieces>> reads;
    size_t spans = 0, cells = 0;
    {
      auto view = LatestView(name);
      ASSERT_NE(view, nullptr);
      auto n = view->CellCount();
      ASSERT_TRUE(n.ok());
      for (const auto& a : view->schema().attributes) {
        if (a.var()) continue;
        auto whole = view->ReadField(a.name);
        ASSERT_TRUE(whole.ok()) << name << " " << a.name;
        wholes.emplace_back(a.name, std::string(whole->data.begin(), whole->data.end()));
        const uint64_t step = std::max<uint64_t>(1, *n / 5);
        for (uint64_t first = 0; first < *n; first += step) {
          for (uint64_t count : {uint64_t{1}, uint64_t{7}, *n - first}) {
            if (first + count > *n) continue;
            Pieces p;
            auto part = view->ReadFieldRange(a.name, first, count, nullptr, nullptr, &p);
            ASSERT_TRUE(part.ok()) << part.error().ToString();
            ASSERT_EQ(p.bytes, count * a.cell_size());
            spans += p.spans.size();
            cells += count;
            reads.emplace_back(a.name, first, count, std::move(p));
          }
        }
      }
    }
    ASSERT_FALSE(reads.empty()) << name;
    EXPECT_LT(spans, cells) << name << ": runs of cells go as one span each";
    for (const auto& [field, first, count, p] : reads) {
      const std::string& whole =
          std::find_if(wholes.begin(), wholes.end(), [&f = field](const auto& w) {
            return w.first == f;
          })->second;
      const uint64_t cell = p.bytes / count;
      ASSERT_EQ(Joined(p), whole.substr(first * cell, count * cell))
          << name << " " << field << " [" << first << ", +" << count << ")";
    }
  }
}

// The tile cache keeps to its budget whatever is read.
TEST(RangeReadTest, TileCacheStaysWithinBudget) {
  auto storage = LocalStorage::Open((kCorpus / "arrays" / "filters").string());
  auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
  ASSERT_TRUE(array.ok());
  auto cache = std::make_shared<TileCache>(4096);
  (*array)->set_tile_cache(cache);
  auto view = (*array)->ViewAt(UINT64_MAX);
  ASSERT_TRUE(view.ok());
  for (const auto& a : (*view)->schema().attributes) {
    ASSERT_TRUE((*view)->ReadField(a.name).ok()) << a.name;
    EXPECT_LE(cache->used_bytes(), 4096u);
  }
}

// Counts reads of attribute tile files (a*.tdb under __fragments).
class CountingStorage final : public ForwardingStorage {
 public:
  explicit CountingStorage(std::shared_ptr<const Storage> s) : ForwardingStorage(std::move(s)) {}
  Result<ByteVec> Read(const std::string& path, uint64_t offset, uint64_t n) const override {
    std::string file = path.substr(path.rfind('/') + 1);
    if (path.find("__fragments/") != std::string::npos && file.size() > 4 && file[0] == 'a' &&
        file.ends_with(".tdb")) {
      ++tile_reads;
    }
    return s_->Read(path, offset, n);
  }
  mutable std::atomic<int> tile_reads{0};
};

// A reader that keeps its tiles between reads (ReadState) decodes each tile
// once while reading a view piece by piece, even with a cache that keeps
// nothing; without, it decodes a tile again for every piece that needs it.
// The bytes are the same either way.
TEST(RangeReadTest, ReaderStateKeepsTilesACacheCannot) {
  for (const char* name : {"sparse_2d", "dense_2d_fragments", "sparse_dups"}) {
    auto local = LocalStorage::Open((kCorpus / "arrays" / name).string());
    ASSERT_TRUE(local.ok());
    auto storage = std::make_shared<CountingStorage>(*local);
    auto array = Array::Open(storage, std::nullopt, DefaultLimits());
    ASSERT_TRUE(array.ok()) << name;
    (*array)->set_tile_cache(std::make_shared<TileCache>(1));  // keeps no tile
    auto view = (*array)->ViewAt(UINT64_MAX);
    ASSERT_TRUE(view.ok());
    auto n = (*view)->CellCount();
    ASSERT_TRUE(n.ok());
    ASSERT_GT(*n, 4u) << name;
    for (const auto& a : (*view)->schema().attributes) {
      storage->tile_reads = 0;
      auto whole = (*view)->ReadField(a.name);
      ASSERT_TRUE(whole.ok()) << name << " " << a.name;
      const int whole_reads = storage->tile_reads;
      ReadState state;
      int reads[2] = {0, 0};
      for (int with_state = 0; with_state < 2; ++with_state) {
        storage->tile_reads = 0;
        for (uint64_t first = 0; first < *n; first += 2) {
          uint64_t count = std::min<uint64_t>(2, *n - first);
          auto part = (*view)->ReadFieldRange(a.name, first, count, with_state ? &state : nullptr);
          ASSERT_TRUE(part.ok()) << part.error().ToString();
          for (uint64_t i = 0; i < count; ++i) {
            Bytes x = whole->cell(first + i), y = part->cell(i);
            ASSERT_TRUE(std::equal(x.begin(), x.end(), y.begin(), y.end()))
                << name << " " << a.name << " cell " << first + i;
          }
        }
        reads[with_state] = storage->tile_reads;
      }
      // Without a state the pieces read tiles again (the cache keeps
      // none); with one, a tile is read again only when the view comes back
      // to it after another tile (sparse views interleave fragments).
      EXPECT_GT(reads[0], whole_reads) << name << " " << a.name;
      EXPECT_LT(reads[1], reads[0]) << name << " " << a.name;
    }
  }
}

// The array's Limits reach its views' indexes: an index of more cells than
// max_view_cells is refused as kOutOfMemory naming the cap, on the dense,
// packed and generic (delete conditions, string dimensions) paths alike. A
// sparse index holds the stored cells it reads before dedup and deletes
// drop some: a cap of the fragments' cells lets it through.
TEST(ArrayLimitsTest, ViewCellCapReachesEveryIndex) {
  for (const std::string name : {"dense_1d", "sparse_2d", "deletes", "sparse_strdim"}) {
    auto storage = LocalStorage::Open((kCorpus / "arrays" / name).string());
    ASSERT_TRUE(storage.ok());
    auto open = Array::Open(*storage, std::nullopt, DefaultLimits());
    ASSERT_TRUE(open.ok()) << name;
    auto whole = (*open)->ViewAt(UINT64_MAX);
    ASSERT_TRUE(whole.ok()) << name;
    auto cells = (*whole)->CellCount();
    ASSERT_TRUE(cells.ok()) << name;
    ASSERT_GT(*cells, 1u) << name;
    uint64_t stored = 0;
    for (const auto& f : (*whole)->fragments()) stored += f->cell_num();
    const uint64_t enough = (*whole)->schema().dense() ? *cells : stored;
    for (const uint64_t cap : {*cells - 1, enough}) {
      Limits limits;
      limits.max_view_cells = cap;
      auto array = Array::Open(*storage, std::nullopt, limits);
      ASSERT_TRUE(array.ok()) << name;
      auto view = (*array)->ViewAt(UINT64_MAX);
      ASSERT_TRUE(view.ok()) << name;
      auto read = (*view)->ReadField((*view)->schema().attributes[0].name);
      if (cap < *cells) {
        ASSERT_FALSE(read.ok()) << name << ": " << *cells << " cells read under a cap of " << cap;
        EXPECT_EQ(read.error().code(), ErrorCode::kOutOfMemory) << read.error().ToString();
        EXPECT_NE(read.error().message().find(fmt::format("more than {} cells", cap)),
                  std::string::npos)
            << read.error().ToString();
      } else {
        EXPECT_TRUE(read.ok()) << name << ": " << read.error().ToString();
      }
    }
  }
}

}  // namespace
}  // namespace tiledbfs::core
