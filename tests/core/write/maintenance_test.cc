// Array maintenance (core/write/metadata_writer.h, consolidation.h): the
// files written checked against TileDB's bytes in the corpus, and every
// command run on real arrays (created and written with the writer in a
// temporary folder, or copies of corpus arrays) and read back with our
// reader. TileDB's own read of the results is checked by hand with
// maintenance_oracle_check.sh.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "core/array/array.h"
#include "core/array/array_view.h"
#include "core/fragment/consolidated_fragment_meta.h"
#include "core/metadata/metadata.h"
#include "core/tile/generic_tile.h"
#include "core/write/consolidation.h"
#include "core/write/filter_writer.h"
#include "core/write/fragment_writer.h"
#include "core/write/metadata_writer.h"
#include "core/write/schema_writer.h"
#include "tests/core/write/raw_values.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;
const fs::path kCorpus = fs::path(TILEDBFS_TEST_DATA) / "corpus";

ByteVec ReadAll(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return ByteVec(std::istreambuf_iterator<char>(in), {});
}

void WriteAll(const fs::path& p, const ByteVec& bytes) {
  std::ofstream out(p, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> Names(const fs::path& dir, const std::string& ext = "") {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    std::string n = e.path().filename().string();
    if (ext.empty() || e.path().extension() == ext) out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Every field of a view: what the mount would show.
struct Snapshot {
  uint64_t cells = 0;
  std::map<std::string, Column> fields;
  std::vector<Range> ned;
};

void ExpectSame(const Snapshot& a, const Snapshot& b, const std::string& what) {
  EXPECT_EQ(a.cells, b.cells) << what;
  ASSERT_EQ(a.fields.size(), b.fields.size()) << what;
  for (const auto& [name, c] : a.fields) {
    const Column& d = b.fields.at(name);
    EXPECT_EQ(c.data, d.data) << what << ": field " << name;
    EXPECT_EQ(c.offsets, d.offsets) << what << ": field " << name;
    EXPECT_EQ(c.validity, d.validity) << what << ": field " << name;
  }
  ASSERT_EQ(a.ned.size(), b.ned.size()) << what;
  for (size_t i = 0; i < a.ned.size(); ++i) {
    EXPECT_EQ(a.ned[i].lo, b.ned[i].lo) << what;
    EXPECT_EQ(a.ned[i].hi, b.ned[i].hi) << what;
  }
}

// Rows of a view as sortable strings (for duplicates, whose order among
// equal coordinates is unspecified).
std::multiset<std::string> Rows(const Snapshot& s) {
  std::multiset<std::string> out;
  for (uint64_t i = 0; i < s.cells; ++i) {
    std::string row;
    for (const auto& [name, c] : s.fields) {
      Bytes b = c.cell(i);
      row += name + "=" + std::string(b.begin(), b.end()) + (c.valid(i) ? "|" : "(null)|");
    }
    out.insert(row);
  }
  return out;
}

class MaintenanceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tiledbfs_maint_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Dir() const { return dir_.string(); }

  ArraySchema Create(const std::string& json) {
    auto s = SchemaFromJson(json, DefaultLimits());
    EXPECT_TRUE(s.ok()) << s.error().ToString();
    auto name = CreateArray(Dir(), *s, 1000, DefaultLimits());
    EXPECT_TRUE(name.ok()) << name.error().ToString();
    ArraySchema out = *s;
    out.name = *name;
    return out;
  }
  // A writable copy of a corpus array.
  void CopyCorpus(const std::string& name) {
    fs::copy(kCorpus / "arrays" / name, dir_, fs::copy_options::recursive);
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add);
    for (const auto& e : fs::recursive_directory_iterator(dir_)) {
      fs::permissions(e.path(),
                      fs::perms::owner_read | fs::perms::owner_write |
                          (e.is_directory() ? fs::perms::owner_exec : fs::perms::none),
                      fs::perm_options::add);
    }
  }
  std::shared_ptr<Array> Open() {
    auto storage = LocalStorage::Open(Dir());
    EXPECT_TRUE(storage.ok());
    auto array = Array::Open(*storage, std::nullopt, DefaultLimits());
    EXPECT_TRUE(array.ok()) << array.error().ToString();
    return array.ok() ? *array : nullptr;
  }
  Snapshot Snap(uint64_t t = UINT64_MAX) {
    Snapshot s;
    auto array = Open();
    if (!array) return s;
    auto view = array->ViewAt(t);
    EXPECT_TRUE(view.ok()) << view.error().ToString();
    if (!view.ok()) return s;
    auto n = (*view)->CellCount();
    EXPECT_TRUE(n.ok()) << n.error().ToString();
    s.cells = n.ok() ? *n : 0;
    const ArraySchema& schema = (*view)->schema();
    std::vector<std::string> names;
    for (const Dimension& d : schema.dimensions) names.push_back(d.name);
    for (const Attribute& a : schema.attributes) names.push_back(a.name);
    for (const std::string& name : names) {
      auto c = (*view)->ReadField(name);
      EXPECT_TRUE(c.ok()) << name << ": " << c.error().ToString();
      if (c.ok()) s.fields[name] = *c;
    }
    auto ned = (*view)->NonEmptyDomain();
    EXPECT_TRUE(ned.ok());
    if (ned.ok()) s.ned = *ned;
    return s;
  }
  size_t ViewFragments(uint64_t t = UINT64_MAX) {
    auto array = Open();
    auto view = array->ViewAt(t);
    return view.ok() ? (*view)->fragments().size() : 0;
  }
  Result<std::vector<uint64_t>> Instants() {
    auto array = Open();
    return array->Instants();
  }

  fs::path dir_;
};

// ---------------------------------------------------------------- metadata

// The corpus's metadata files re-serialize to TileDB's exact bytes: the
// entries, the generic tile and its GZIP level 1 compression.
TEST(MetadataWriterTest, CorpusMetadataFilesReserializeToTileDBsBytes) {
  int files = 0;
  for (const char* array : {"metadata", "group"}) {
    const fs::path dir = kCorpus / "arrays" / array / "__meta";
    for (const std::string& name : Names(dir)) {
      const ByteVec bytes = ReadAll(dir / name);
      auto tile = DecodeGenericTile(bytes, name, 0, nullptr, DefaultLimits());
      ASSERT_TRUE(tile.ok()) << tile.error().ToString();
      auto entries = ParseMetadataFile(tile->data, 0);
      ASSERT_TRUE(entries.ok()) << entries.error().ToString();
      auto payload = SerializeMetadataEntries(*entries);
      ASSERT_TRUE(payload.ok()) << payload.error().ToString();
      EXPECT_EQ(*payload, tile->data) << name;
      auto encoded = EncodeGenericTile(*payload, kWriteFormatVersion);
      ASSERT_TRUE(encoded.ok());
      EXPECT_EQ(*encoded, bytes) << name;
      ++files;
    }
  }
  EXPECT_EQ(files, 5);
}

TEST(MetadataWriterTest, ValuesFromText) {
  auto v = MetadataValueFromText("INT32", {"1", "-2", "2147483647"});
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->type, Datatype::kInt32);
  EXPECT_EQ(v->num, 3u);
  EXPECT_EQ(v->value, Raw(std::vector<int32_t>{1, -2, 2147483647}));
  v = MetadataValueFromText("FLOAT64", {"0.5", "-inf", "1e300"});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value, Raw(std::vector<double>{0.5, -HUGE_VAL, 1e300}));
  v = MetadataValueFromText("STRING_UTF8", {"h\xC3\xA9llo, world"});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->num, 13u);
  EXPECT_EQ(ToString(v->value), "h\xC3\xA9llo, world");
  v = MetadataValueFromText("STRING_ASCII", {""});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->num, 0u);
  v = MetadataValueFromText("UINT64", {"18446744073709551615"});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value, One<uint64_t>(UINT64_MAX));
  v = MetadataValueFromText("BOOL", {"true", "0"});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value, (ByteVec{1, 0}));
  v = MetadataValueFromText("DATETIME_MS", {"-5"});
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->value, One<int64_t>(-5));
}

TEST(MetadataWriterTest, BadValuesAreRefusedClearly) {
  struct Case {
    std::string type;
    std::vector<std::string> values;
    ErrorCode code;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"INT33", {"1"}, ErrorCode::kInvalidArgument, "unknown type 'INT33'"},
      {"ANY", {"1"}, ErrorCode::kInvalidArgument, "ANY"},
      {"INT32", {}, ErrorCode::kInvalidArgument, "needs at least one number"},
      {"STRING_UTF8", {"a", "b"}, ErrorCode::kInvalidArgument, "one string, 2 values given"},
      {"UINT8", {"256"}, ErrorCode::kInvalidArgument, "value 1: '256' is not a UINT8 value"},
      {"INT8", {"1", "-129"}, ErrorCode::kInvalidArgument, "value 2: '-129' is not a INT8"},
      {"UINT32", {"-1"}, ErrorCode::kInvalidArgument, "'-1' is not a UINT32"},
      {"INT32", {"12abc"}, ErrorCode::kInvalidArgument, "'12abc'"},
      {"INT64", {""}, ErrorCode::kInvalidArgument, "'' is not"},
      {"FLOAT32", {"1e300"}, ErrorCode::kInvalidArgument, "'1e300' is not a FLOAT32"},
      {"BOOL", {"2"}, ErrorCode::kInvalidArgument, "'2' is not a BOOL"},
      {"STRING_UTF16", {"x"}, ErrorCode::kUnsupported, "STRING_UTF16"},
  };
  for (const Case& c : cases) {
    auto v = MetadataValueFromText(c.type, c.values);
    ASSERT_FALSE(v.ok()) << c.type;
    EXPECT_EQ(v.error().code(), c.code) << c.type << ": " << v.error().ToString();
    EXPECT_NE(v.error().message().find(c.message), std::string::npos)
        << c.type << ": " << v.error().message();
  }
  MetadataEntry bad;
  bad.key = "k";
  bad.value.type = Datatype::kInt32;
  bad.value.num = 2;
  bad.value.value = ByteVec(4, 0);
  auto p = SerializeMetadataEntries({bad});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message().find("4 bytes for 2 values"), std::string::npos);
}

TEST_F(MaintenanceTest, MetadataPutsAndDeletesReadBackAtEachInstant) {
  Create(R"({"array_type":"dense","dims":[
      {"name":"x","type":"INT32","domain":[1,4],"tile_extent":4}],
      "attrs":[{"name":"a","type":"INT32"}]})");
  auto put = [&](uint64_t t, const std::string& key, const std::string& type,
                 std::vector<std::string> values) {
    MetadataEntry e;
    e.key = key;
    auto v = MetadataValueFromText(type, values);
    ASSERT_TRUE(v.ok()) << v.error().ToString();
    e.value = *v;
    auto name = WriteArrayMetadata(Dir(), t, {e}, DefaultLimits());
    ASSERT_TRUE(name.ok()) << name.error().ToString();
    EXPECT_TRUE(fs::is_regular_file(dir_ / "__meta" / *name));
    EXPECT_EQ(name->rfind(fmt::format("__{}_{}_", t, t), 0), 0u) << *name;
    EXPECT_EQ(name->size(), fmt::format("__{}_{}_", t, t).size() + 32) << "no version suffix";
  };
  put(2000, "owner", "STRING_UTF8", {"tiledbfs"});
  put(3000, "scale", "FLOAT64", {"0.5", "2"});
  put(3000, "a/b%c", "INT16", {"-7"});
  put(4000, "owner", "STRING_ASCII", {"someone else"});
  MetadataEntry del;
  del.key = "scale";
  del.deleted = true;
  ASSERT_TRUE(WriteArrayMetadata(Dir(), 5000, {del}, DefaultLimits()).ok());
  // No temporary file is left behind.
  for (const std::string& n : Names(dir_)) EXPECT_EQ(n.find(".tmp"), std::string::npos) << n;

  auto storage = LocalStorage::Open(Dir());
  ASSERT_TRUE(storage.ok());
  auto at = [&](uint64_t t) {
    auto m = LoadMetadata(**storage, "__meta", t, nullptr, DefaultLimits());
    EXPECT_TRUE(m.ok()) << m.error().ToString();
    return m.ok() ? *m : std::map<std::string, MetadataValue>{};
  };
  EXPECT_TRUE(at(1999).empty());
  auto m2 = at(2000);
  ASSERT_EQ(m2.size(), 1u);
  EXPECT_EQ(m2["owner"].type, Datatype::kStringUtf8);
  EXPECT_EQ(ToString(m2["owner"].value), "tiledbfs");
  auto m3 = at(3000);
  ASSERT_EQ(m3.size(), 3u);
  EXPECT_EQ(m3["scale"].value, Raw(std::vector<double>{0.5, 2}));
  EXPECT_EQ(m3["a/b%c"].value, One<int16_t>(-7));
  auto m4 = at(4000);
  EXPECT_EQ(m4["owner"].type, Datatype::kStringAscii);
  EXPECT_EQ(ToString(m4["owner"].value), "someone else");
  auto m5 = at(UINT64_MAX);
  EXPECT_EQ(m5.size(), 2u);
  EXPECT_FALSE(m5.count("scale"));
  // The array's instants include the metadata writes.
  auto instants = Instants();
  ASSERT_TRUE(instants.ok());
  for (uint64_t t : {2000, 3000, 4000, 5000}) {
    EXPECT_NE(std::find(instants->begin(), instants->end(), t), instants->end()) << t;
  }
}

TEST_F(MaintenanceTest, MetadataOfAMissingArrayIsNotFound) {
  MetadataEntry e;
  e.key = "k";
  e.deleted = true;
  auto r = WriteArrayMetadata(Dir(), 1, {e}, DefaultLimits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("is not an array"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_));
  r = WriteArrayMetadata(Dir(), 1, {}, DefaultLimits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument);
}

// ---------------------------------------------------------------- fragment metadata

// The corpus's consolidated fragment metadata file re-serializes to
// TileDB's exact bytes from the footers it holds.
TEST(ConsolidatedFragmentMetaTest, CorpusFileReserializesToTileDBsBytes) {
  const fs::path dir = kCorpus / "arrays" / "commits_consolidated";
  auto storage = LocalStorage::Open(dir.string());
  ASSERT_TRUE(storage.ok());
  const std::vector<std::string> files = Names(dir / "__fragment_meta");
  ASSERT_EQ(files.size(), 1u);
  auto footers = LoadConsolidatedFragmentMeta(**storage, "__fragment_meta/" + files[0], nullptr,
                                              DefaultLimits());
  ASSERT_TRUE(footers.ok()) << footers.error().ToString();
  ASSERT_EQ(footers->size(), 5u);
  std::vector<FooterEntry> entries;
  for (const ConsolidatedFooter& f : *footers) {
    entries.push_back({std::string(f.fragment_name), ByteVec(f.footer.begin(), f.footer.end())});
  }
  auto payload = SerializeConsolidatedFragmentMeta(entries);
  ASSERT_TRUE(payload.ok());
  auto tile = EncodeGenericTile(*payload, kWriteFormatVersion);
  ASSERT_TRUE(tile.ok());
  EXPECT_EQ(*tile, ReadAll(dir / "__fragment_meta" / files[0]));
  // Each footer is the one in the fragment's own file, without its length.
  for (const ConsolidatedFooter& f : *footers) {
    const fs::path meta = dir / "__fragments" / f.fragment_name / "__fragment_metadata.tdb";
    if (!fs::exists(meta)) continue;  // the t1 fragment was deleted
    ByteVec file = ReadAll(meta);
    ByteVec tail(file.end() - 8 - static_cast<ptrdiff_t>(f.footer.size()), file.end() - 8);
    EXPECT_EQ(tail, ByteVec(f.footer.begin(), f.footer.end())) << f.fragment_name;
  }
}

TEST_F(MaintenanceTest, ConsolidateMetadataKeepsEveryView) {
  ArraySchema s = Create(R"({"array_type":"sparse","capacity":3,"dims":[
      {"name":"k","type":"STRING_ASCII"},
      {"name":"x","type":"INT64","domain":[0,99],"tile_extent":10}],
      "attrs":[{"name":"a","type":"INT32","filters":["ZSTD"]},
               {"name":"s","type":"STRING_UTF8","var":true,"nullable":true}]})");
  for (int f = 0; f < 4; ++f) {
    WriteBatch b;
    for (int i = 0; i < 5; ++i) {
      std::string k = std::string(1, static_cast<char>('a' + (i + f) % 6)) + "key";
      b.fields["k"].offsets.push_back(b.fields["k"].data.size());
      b.fields["k"].data.insert(b.fields["k"].data.end(), k.begin(), k.end());
      int64_t x = i * 7 + f;
      ByteVec xb = One<int64_t>(x);
      b.fields["x"].data.insert(b.fields["x"].data.end(), xb.begin(), xb.end());
      ByteVec ab = One<int32_t>(100 * f + i);
      b.fields["a"].data.insert(b.fields["a"].data.end(), ab.begin(), ab.end());
      std::string sv(static_cast<size_t>(i), 'z');
      b.fields["s"].offsets.push_back(b.fields["s"].data.size());
      b.fields["s"].data.insert(b.fields["s"].data.end(), sv.begin(), sv.end());
      b.fields["s"].validity.push_back(i % 2);
    }
    ASSERT_TRUE(WriteFragment(Dir(), s, 2000 + 1000 * f, b).ok());
  }
  auto instants = Instants();
  ASSERT_TRUE(instants.ok());
  std::map<uint64_t, Snapshot> before;
  for (uint64_t t : *instants) before[t] = Snap(t);
  before[UINT64_MAX] = Snap();

  auto r = ConsolidateFragmentMetadata(Dir(), DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->fragments.size(), 4u);
  EXPECT_EQ(r->file.rfind("__fragment_meta/__2000_5000_", 0), 0u) << r->file;
  EXPECT_EQ(r->file.substr(r->file.size() - 8), "_22.meta");
  EXPECT_TRUE(fs::is_regular_file(dir_ / r->file));

  // The reader now takes the footers from the consolidated file.
  auto array = Open();
  auto view = array->ViewAt(UINT64_MAX);
  ASSERT_TRUE(view.ok());
  ASSERT_EQ((*view)->fragments().size(), 4u);
  for (const auto& m : (*view)->fragments()) EXPECT_TRUE(m->has_consolidated_footer());
  for (const auto& [t, snap] : before) ExpectSame(snap, Snap(t), "instant " + std::to_string(t));
  // The footers are those of the fragments' own files.
  auto storage = LocalStorage::Open(Dir());
  auto footers = LoadConsolidatedFragmentMeta(**storage, r->file, nullptr, DefaultLimits());
  ASSERT_TRUE(footers.ok()) << footers.error().ToString();
  ASSERT_EQ(footers->size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ((*footers)[i].fragment_name, r->fragments[i]);
    ByteVec file = ReadAll(dir_ / "__fragments" / r->fragments[i] / "__fragment_metadata.tdb");
    ByteVec tail(file.end() - 8 - static_cast<ptrdiff_t>((*footers)[i].footer.size()),
                 file.end() - 8);
    EXPECT_EQ(tail, ByteVec((*footers)[i].footer.begin(), (*footers)[i].footer.end()));
  }
}

// Of two .meta files holding a fragment's footer, the first by name is the
// one read, as in TileDB: a damaged copy in a later file goes unread, the
// same copy in an earlier file is what the open reports.
TEST_F(MaintenanceTest, FirstMetaFileHoldingAFooterWins) {
  ArraySchema s = Create(R"({"array_type":"sparse","capacity":4,"dims":[
      {"name":"x","type":"INT64","domain":[0,99],"tile_extent":10}],
      "attrs":[{"name":"a","type":"INT32"}]})");
  for (int f = 0; f < 2; ++f) {
    WriteBatch b;
    b.fields["x"].data = Raw(std::vector<int64_t>{10 * f, 10 * f + 1});
    b.fields["a"].data = Raw(std::vector<int32_t>{f, f + 1});
    ASSERT_TRUE(WriteFragment(Dir(), s, 2000 + 1000 * f, b).ok());
  }
  const Snapshot before = Snap();
  ASSERT_EQ(before.cells, 4u);
  auto r = ConsolidateFragmentMetadata(Dir(), DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->file.rfind("__fragment_meta/__2000_3000_", 0), 0u) << r->file;
  // A footer cut to its first 12 bytes: version and part of the schema name.
  auto storage = LocalStorage::Open(Dir());
  auto footers = LoadConsolidatedFragmentMeta(**storage, r->file, nullptr, DefaultLimits());
  ASSERT_TRUE(footers.ok()) << footers.error().ToString();
  const ConsolidatedFooter& first = (*footers)[0];
  auto payload = SerializeConsolidatedFragmentMeta(
      {{std::string(first.fragment_name),
        ByteVec(first.footer.begin(), first.footer.begin() + 12)}});
  ASSERT_TRUE(payload.ok());
  auto tile = EncodeGenericTile(*payload, kWriteFormatVersion);
  ASSERT_TRUE(tile.ok());
  const std::string uuid(32, 'b');
  const fs::path later = dir_ / "__fragment_meta" / ("__9000_9000_" + uuid + "_22.meta");
  const fs::path earlier = dir_ / "__fragment_meta" / ("__1000_1000_" + uuid + "_22.meta");
  WriteAll(later, *tile);
  ExpectSame(before, Snap(), "damaged copy in a later file");
  fs::rename(later, earlier);
  auto array = Open();
  ASSERT_NE(array, nullptr);
  auto view = array->ViewAt(UINT64_MAX);
  ASSERT_FALSE(view.ok());
  EXPECT_EQ(view.error().code(), ErrorCode::kCorrupt) << view.error().ToString();
  EXPECT_NE(view.error().message().find(std::string(first.fragment_name)), std::string::npos)
      << view.error().ToString();
}

TEST_F(MaintenanceTest, ConsolidateMetadataNeedsTwoFragmentsAndAnArray) {
  ArraySchema s = Create(R"({"array_type":"dense","dims":[
      {"name":"x","type":"INT32","domain":[1,4],"tile_extent":4}],
      "attrs":[{"name":"a","type":"INT32"}]})");
  WriteBatch b;
  b.fields["a"].data = Raw(std::vector<int32_t>{1, 2});
  b.subarray = {Range{One<int32_t>(1), One<int32_t>(2)}};
  ASSERT_TRUE(WriteFragment(Dir(), s, 2000, b).ok());
  auto r = ConsolidateFragmentMetadata(Dir(), DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->file.empty());
  EXPECT_FALSE(fs::exists(dir_ / "__fragment_meta"));
  r = ConsolidateFragmentMetadata(Dir() + "/nope", DefaultLimits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
}

// ---------------------------------------------------------------- consolidation

// Three overlapping dense writes leaving unwritten cells in the bounding
// box; fixed, var-sized and nullable attributes; col-major tiles.
TEST_F(MaintenanceTest, ConsolidateDenseOverlappingWritesThenVacuum) {
  ArraySchema s = Create(R"({"array_type":"dense","tile_order":"col-major","cell_order":"row-major",
      "dims":[{"name":"r","type":"INT32","domain":[1,8],"tile_extent":4},
              {"name":"c","type":"INT32","domain":[1,8],"tile_extent":3}],
      "attrs":[{"name":"a","type":"INT32","filters":["ZSTD"]},
               {"name":"b","type":"FLOAT64","fill_value":-1.5},
               {"name":"s","type":"STRING_ASCII","var":true,"filters":["LZ4"]},
               {"name":"n","type":"UINT8","nullable":true}]})");
  auto write = [&](uint64_t t, int32_t r0, int32_t r1, int32_t c0, int32_t c1, int tag) {
    WriteBatch b;
    for (int32_t r = r0; r <= r1; ++r) {
      for (int32_t c = c0; c <= c1; ++c) {
        ByteVec a = One<int32_t>(1000 * tag + 10 * r + c);
        b.fields["a"].data.insert(b.fields["a"].data.end(), a.begin(), a.end());
        ByteVec d = One<double>(tag + r * 0.5);
        b.fields["b"].data.insert(b.fields["b"].data.end(), d.begin(), d.end());
        std::string sv(static_cast<size_t>((r + c) % 4), static_cast<char>('a' + tag));
        b.fields["s"].offsets.push_back(b.fields["s"].data.size());
        b.fields["s"].data.insert(b.fields["s"].data.end(), sv.begin(), sv.end());
        b.fields["n"].data.push_back(static_cast<uint8_t>(r * c));
        b.fields["n"].validity.push_back((r + c + tag) % 3 != 0);
      }
    }
    b.subarray = {Range{One<int32_t>(r0), One<int32_t>(r1)},
                  Range{One<int32_t>(c0), One<int32_t>(c1)}};
    auto name = WriteFragment(Dir(), s, t, b);
    ASSERT_TRUE(name.ok()) << name.error().ToString();
  };
  write(3000, 1, 5, 1, 8, 1);
  write(2000, 3, 6, 3, 6, 2);  // older, under the t=3000 write where they overlap
  write(4000, 6, 7, 5, 8, 3);  // leaves (7, 1..4) unwritten: fill values
  const std::vector<std::string> originals = Names(dir_ / "__fragments");
  ASSERT_EQ(originals.size(), 3u);
  std::map<uint64_t, Snapshot> before;
  for (uint64_t t : {2000, 3000, 4000}) before[t] = Snap(t);
  const Snapshot latest = Snap();
  ASSERT_EQ(latest.cells, 7u * 8u);

  auto r = ConsolidateFragments(Dir(), DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->cell_count, 56u);
  EXPECT_EQ(r->consolidated, originals);
  EXPECT_EQ(r->fragment.rfind("__2000_4000_", 0), 0u) << r->fragment;
  EXPECT_EQ(r->fragment.substr(r->fragment.size() - 3), "_22");
  EXPECT_TRUE(fs::is_regular_file(dir_ / "__commits" / (r->fragment + ".wrt")));
  // The .vac file: one "/__fragments/<name>" line per consolidated fragment.
  ASSERT_EQ(r->vacuum_file, "__commits/" + r->fragment + ".vac");
  std::string expected;
  for (const std::string& n : originals) expected += "/__fragments/" + n + "\n";
  EXPECT_EQ(ToString(ReadAll(dir_ / r->vacuum_file)), expected);

  // Latest view: only the consolidated fragment, the same cells.
  EXPECT_EQ(ViewFragments(), 1u);
  ExpectSame(latest, Snap(), "latest after consolidate");
  // Earlier instants still show the original fragments (dense arrays take a
  // fragment only when its whole range lies within [0, T]).
  for (const auto& [t, snap] : before) ExpectSame(snap, Snap(t), "instant " + std::to_string(t));

  auto v = VacuumFragments(Dir(), DefaultLimits());
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->removed_fragments.size(), 3u);
  EXPECT_EQ(v->removed_vacuum_files, std::vector<std::string>{r->vacuum_file});
  EXPECT_TRUE(v->ignore_file.empty());
  EXPECT_EQ(Names(dir_ / "__fragments"), std::vector<std::string>{r->fragment});
  EXPECT_EQ(Names(dir_ / "__commits"), std::vector<std::string>{r->fragment + ".wrt"});
  ExpectSame(latest, Snap(), "latest after vacuum");
  // Nothing left to vacuum.
  v = VacuumFragments(Dir(), DefaultLimits());
  ASSERT_TRUE(v.ok());
  EXPECT_TRUE(v->removed_fragments.empty());
}

// A vacuum removes the consolidated fragments one by one. A reader that
// lists the array meanwhile must not see a dense view inside the
// consolidated range made of the survivors (a state the array never had,
// fill values between them): once one fragment of a .vac file is gone, the
// views are those after the vacuum.
TEST_F(MaintenanceTest, DenseViewsDuringAVacuumAreThoseAfterIt) {
  ArraySchema s = Create(R"({"array_type":"dense","dims":[
      {"name":"r","type":"INT32","domain":[0,15],"tile_extent":8},
      {"name":"c","type":"INT32","domain":[0,15],"tile_extent":8}],
      "attrs":[{"name":"a","type":"INT32"}]})");
  auto write = [&](uint64_t t, int32_t r0, int32_t r1, int32_t c0, int32_t c1) {
    WriteBatch b;
    for (int32_t r = r0; r <= r1; ++r) {
      for (int32_t c = c0; c <= c1; ++c) {
        ByteVec a = One<int32_t>(static_cast<int32_t>(t) + 16 * r + c);
        b.fields["a"].data.insert(b.fields["a"].data.end(), a.begin(), a.end());
      }
    }
    b.subarray = {Range{One<int32_t>(r0), One<int32_t>(r1)},
                  Range{One<int32_t>(c0), One<int32_t>(c1)}};
    auto name = WriteFragment(Dir(), s, t, b);
    ASSERT_TRUE(name.ok()) << name.error().ToString();
  };
  write(2000, 0, 15, 0, 15);  // the whole domain
  write(3000, 9, 12, 6, 8);
  write(4000, 11, 14, 4, 5);
  write(5000, 0, 1, 0, 1);
  const std::vector<std::string> originals = Names(dir_ / "__fragments");
  ASSERT_EQ(originals.size(), 4u);
  const Snapshot at4000 = Snap(4000);
  ASSERT_EQ(at4000.cells, 256u);
  auto r = ConsolidateFragments(Dir(), DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  // Before the vacuum the consolidated fragment [2000, 5000] does not show
  // at 4000: the originals do.
  ExpectSame(at4000, Snap(4000), "4000 before the vacuum");

  // The vacuum stopped after the first fragment's commit file, then after
  // its folder: views at 4000 show nothing (as after the vacuum), not the
  // 3000 and 4000 writes on their own.
  fs::remove(dir_ / "__commits" / (originals[0] + ".wrt"));
  const Snapshot commit_gone = Snap(4000);
  EXPECT_EQ(commit_gone.cells, 0u);
  EXPECT_EQ(ViewFragments(4000), 0u);
  fs::remove_all(dir_ / "__fragments" / originals[0]);
  const Snapshot folder_gone = Snap(4000);
  // The latest view and the instants after the range are untouched.
  const Snapshot latest = Snap();
  EXPECT_EQ(latest.cells, 256u);
  EXPECT_EQ(ViewFragments(), 1u);

  auto v = VacuumFragments(Dir(), DefaultLimits());
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->removed_fragments.size(), 3u);
  ExpectSame(Snap(4000), commit_gone, "4000 after the vacuum / its first commit file gone");
  ExpectSame(Snap(4000), folder_gone, "4000 after the vacuum / its first folder gone");
  ExpectSame(Snap(), latest, "latest after the vacuum");
}

TEST_F(MaintenanceTest, ConsolidateSparseOverwritesThenVacuum) {
  ArraySchema s = Create(R"({"array_type":"sparse","capacity":4,"dims":[
      {"name":"r","type":"INT32","domain":[0,63],"tile_extent":8},
      {"name":"c","type":"INT32","domain":[0,63],"tile_extent":8}],
      "attrs":[{"name":"a","type":"INT32"},
               {"name":"s","type":"STRING_UTF8","var":true,"nullable":true,"filters":["ZSTD"]}]})");
  for (int f = 0; f < 3; ++f) {
    WriteBatch b;
    for (int i = 0; i < 12; ++i) {
      // Half of each write lands on coordinates written before.
      int32_t r = i % 6 + f, c = i / 6;
      for (auto [name, v] : {std::pair{"r", r}, std::pair{"c", c}, std::pair{"a", 100 * f + i}}) {
        ByteVec x = One<int32_t>(v);
        b.fields[name].data.insert(b.fields[name].data.end(), x.begin(), x.end());
      }
      std::string sv = std::to_string(f) + std::string(static_cast<size_t>(i % 3), '#');
      b.fields["s"].offsets.push_back(b.fields["s"].data.size());
      b.fields["s"].data.insert(b.fields["s"].data.end(), sv.begin(), sv.end());
      b.fields["s"].validity.push_back(i % 4 != 1);
    }
    ASSERT_TRUE(WriteFragment(Dir(), s, 2000 + 1000 * f, b).ok());
  }
  const Snapshot latest = Snap();
  ASSERT_LT(latest.cells, 36u);  // some cells were overwritten

  // Faithful sparse consolidation needs per-cell timestamps: refused.
  auto r = ConsolidateFragments(Dir(), DefaultLimits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.error().message().find("--without-timestamps"), std::string::npos);
  EXPECT_EQ(Names(dir_ / "__fragments").size(), 3u);

  r = ConsolidateFragments(Dir(), DefaultLimits(), {.without_timestamps = true});
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->cell_count, latest.cells);
  EXPECT_EQ(r->fragment.rfind("__2000_4000_", 0), 0u);
  EXPECT_EQ(ViewFragments(), 1u);
  ExpectSame(latest, Snap(), "latest after consolidate");
  auto v = VacuumFragments(Dir(), DefaultLimits());
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->removed_fragments.size(), 3u);
  EXPECT_EQ(Names(dir_ / "__fragments"), std::vector<std::string>{r->fragment});
  ExpectSame(latest, Snap(), "latest after vacuum");
}

TEST_F(MaintenanceTest, ConsolidateSparseKeepsDuplicates) {
  ArraySchema s = Create(R"({"array_type":"sparse","capacity":5,"allows_dups":true,"dims":[
      {"name":"x","type":"INT64","domain":[0,1000],"tile_extent":100}],
      "attrs":[{"name":"v","type":"STRING_UTF8","var":true}]})");
  for (int f = 0; f < 2; ++f) {
    WriteBatch b;
    for (int64_t x : {5, 10, 5, 7, 10, 999}) {
      ByteVec xb = One<int64_t>(x + f);
      b.fields["x"].data.insert(b.fields["x"].data.end(), xb.begin(), xb.end());
      std::string sv = fmt::format("f{}x{}", f, x);
      b.fields["v"].offsets.push_back(b.fields["v"].data.size());
      b.fields["v"].data.insert(b.fields["v"].data.end(), sv.begin(), sv.end());
    }
    auto name = WriteFragment(Dir(), s, 7000, b);  // both at one instant
    ASSERT_TRUE(name.ok()) << name.error().ToString();
  }
  const Snapshot latest = Snap();
  ASSERT_EQ(latest.cells, 12u);
  // All fragments at one instant: no view in between to lose, so no flag.
  auto r = ConsolidateFragments(Dir(), DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->fragment.rfind("__7000_7000_", 0), 0u);
  const Snapshot after = Snap();
  EXPECT_EQ(after.cells, 12u);
  EXPECT_EQ(Rows(after), Rows(latest));
}

TEST_F(MaintenanceTest, ConsolidateRefusesWhatItCannotWriteFaithfully) {
  // Not an array.
  auto r = ConsolidateFragments(Dir(), DefaultLimits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kNotFound);
  // Delete commits.
  CopyCorpus("deletes");
  const auto fragments = Names(dir_ / "__fragments");
  r = ConsolidateFragments(Dir(), DefaultLimits(), {.without_timestamps = true});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.error().message().find("delete/update commit"), std::string::npos);
  EXPECT_EQ(Names(dir_ / "__fragments"), fragments);
  fs::remove_all(dir_);
  // Sparse fragments of several instants, without the flag.
  CopyCorpus("sparse_2d");
  r = ConsolidateFragments(Dir(), DefaultLimits());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  fs::remove_all(dir_);
  // A single fragment: nothing to do.
  CopyCorpus("dense_1d");
  r = ConsolidateFragments(Dir(), DefaultLimits());
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(r->fragment.empty());
  EXPECT_EQ(Names(dir_ / "__fragments").size(), 1u);
}

// A corpus array written by TileDB: consolidate (the fragments' commits are
// inside a .con file) and vacuum, which must then write an .ign file.
TEST_F(MaintenanceTest, ConsolidateAndVacuumTileDBsArrayWithConsolidatedCommits) {
  CopyCorpus("commits_consolidated");
  const Snapshot latest = Snap();
  auto r = ConsolidateFragments(Dir(), DefaultLimits(), {.without_timestamps = true});
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->consolidated.size(), 5u);  // t2..t6: t1 was deleted
  ExpectSame(latest, Snap(), "latest after consolidate");
  auto v = VacuumFragments(Dir(), DefaultLimits());
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->removed_fragments.size(), 5u);
  ASSERT_FALSE(v->ignore_file.empty());
  // t2..t5 were committed by the .con file: they are ignored, not deleted.
  const std::string ign = ToString(ReadAll(dir_ / v->ignore_file));
  EXPECT_EQ(std::count(ign.begin(), ign.end(), '\n'), 4);
  // As TileDB writes them: relative to the array with no leading '/'.
  EXPECT_EQ(ign.rfind("__commits/__1700000002000_1700000002000_", 0), 0u) << ign;
  EXPECT_EQ(v->ignore_file.rfind("__commits/__1700000002000_1700000005000_", 0), 0u);
  EXPECT_EQ(Names(dir_ / "__fragments"), std::vector<std::string>{r->fragment});
  EXPECT_TRUE(Names(dir_ / "__commits", ".vac").empty());
  EXPECT_TRUE(Names(dir_ / "__commits", ".wrt") == std::vector<std::string>{r->fragment + ".wrt"});
  ExpectSame(latest, Snap(), "latest after vacuum");
}

// TileDB's own consolidated (not vacuumed) corpus array: vacuum leaves what
// TileDB's vacuum left in consolidated_vacuumed.
TEST_F(MaintenanceTest, VacuumOfTileDBsConsolidation) {
  CopyCorpus("consolidated");
  const Snapshot latest = Snap();
  auto v = VacuumFragments(Dir(), DefaultLimits());
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->removed_fragments.size(), 4u);
  EXPECT_EQ(v->removed_vacuum_files.size(), 1u);
  EXPECT_EQ(Names(dir_ / "__fragments").size(), 1u);
  EXPECT_EQ(Names(dir_ / "__commits").size(), 1u);
  const fs::path done = kCorpus / "arrays" / "consolidated_vacuumed";
  EXPECT_EQ(Names(done / "__fragments").size(), 1u);
  EXPECT_EQ(Names(done / "__commits").size(), 1u);
  ExpectSame(latest, Snap(), "latest after vacuum");
  v = VacuumFragments(Dir() + "/nope", DefaultLimits());
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code(), ErrorCode::kNotFound);
}

}  // namespace
}  // namespace tiledbfs::core
