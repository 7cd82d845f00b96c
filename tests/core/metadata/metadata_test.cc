#include "core/metadata/metadata.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/tile/generic_tile.h"
#include "tests/core/metadata/test_util.h"

namespace tiledbfs::core::metadata_test {
namespace {

using testing::ByteWriter;
using testing::CorpusArray;
using testing::CorpusExpected;
using testing::MakeGenericTile;
using testing::ReadJson;
using testing::ToHex;

constexpr uint64_t kLatest = UINT64_MAX;

// key "k" INT32 x2 = {1, 2}; key "gone" deleted; key "z" with no value.
ByteVec ThreeEntries(std::vector<uint64_t>* boundaries = nullptr) {
  ByteWriter w;
  w.Put<uint32_t>(1).PutString("k").Put<uint8_t>(0).Put<uint8_t>(0).Put<uint32_t>(2);
  w.Put<int32_t>(1).Put<int32_t>(2);
  if (boundaries) boundaries->push_back(w.bytes().size());
  w.Put<uint32_t>(4).PutString("gone").Put<uint8_t>(1);
  if (boundaries) boundaries->push_back(w.bytes().size());
  w.Put<uint32_t>(1).PutString("z").Put<uint8_t>(0).Put<uint8_t>(11).Put<uint32_t>(0);
  if (boundaries) boundaries->push_back(w.bytes().size());
  return w.Take();
}

void ExpectMatchesJson(const std::map<std::string, MetadataValue>& got,
                       const nlohmann::json& expected, const std::string& what) {
  ASSERT_EQ(got.size(), expected.size()) << what;
  for (const auto& [key, e] : expected.items()) {
    auto it = got.find(key);
    ASSERT_NE(it, got.end()) << what << ": missing key " << key;
    EXPECT_EQ(DatatypeName(it->second.type), e["type"].get<std::string>()) << what << " " << key;
    EXPECT_EQ(it->second.num, e["num"].get<uint32_t>()) << what << " " << key;
    EXPECT_EQ(ToHex(it->second.value), e["hex"].get<std::string>()) << what << " " << key;
  }
}

TEST(MetadataParseTest, ParsesPutsDeletionsAndEmptyValues) {
  ByteVec payload = ThreeEntries();
  auto entries = ParseMetadataFile(payload, 0);
  ASSERT_TRUE(entries.ok()) << entries.error().ToString();
  ASSERT_EQ(entries->size(), 3u);
  const MetadataEntry& k = (*entries)[0];
  EXPECT_EQ(k.key, "k");
  EXPECT_FALSE(k.deleted);
  EXPECT_EQ(k.value.type, Datatype::kInt32);
  EXPECT_EQ(k.value.num, 2u);
  EXPECT_EQ(ToHex(k.value.value), "0100000002000000");
  EXPECT_EQ((*entries)[1].key, "gone");
  EXPECT_TRUE((*entries)[1].deleted);
  EXPECT_EQ((*entries)[2].value.type, Datatype::kStringAscii);
  EXPECT_EQ((*entries)[2].value.num, 0u);
  EXPECT_TRUE((*entries)[2].value.value.empty());
}

TEST(MetadataParseTest, EveryTruncationIsRejectedOrEndsAtAnEntry) {
  std::vector<uint64_t> boundaries;
  ByteVec payload = ThreeEntries(&boundaries);
  for (size_t n = 0; n < payload.size(); ++n) {
    auto entries = ParseMetadataFile(Bytes(payload).first(n), 100);
    auto at = std::find(boundaries.begin(), boundaries.end(), n);
    if (n == 0) {
      ASSERT_TRUE(entries.ok());
      EXPECT_TRUE(entries->empty());
    } else if (at != boundaries.end()) {
      // A prefix that ends between entries is a shorter, valid list.
      ASSERT_TRUE(entries.ok()) << n;
      EXPECT_EQ(entries->size(), static_cast<size_t>(at - boundaries.begin() + 1));
    } else {
      ASSERT_FALSE(entries.ok()) << "prefix " << n;
      EXPECT_EQ(entries.error().code(), ErrorCode::kCorrupt) << n;
      EXPECT_NE(entries.error().message().find("truncated"), std::string::npos)
          << entries.error().message();
      EXPECT_NE(entries.error().message().find("metadata entry."), std::string::npos);
    }
  }
}

TEST(MetadataParseTest, UnknownValueTypeIsUnsupported) {
  ByteWriter w;
  w.Put<uint32_t>(1).PutString("k").Put<uint8_t>(0).Put<uint8_t>(200).Put<uint32_t>(1).Put<uint8_t>(
      0);
  auto entries = ParseMetadataFile(w.bytes(), 10);
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(entries.error().message().find("offset 16: metadata entry.value type of key 'k'"),
            std::string::npos)
      << entries.error().message();
}

TEST(MetadataParseTest, BadDeletionByteIsCorrupt) {
  ByteWriter w;
  w.Put<uint32_t>(1).PutString("k").Put<uint8_t>(7);
  auto entries = ParseMetadataFile(w.bytes(), 0);
  ASSERT_FALSE(entries.ok());
  EXPECT_EQ(entries.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(entries.error().message().find("metadata entry.deletion"), std::string::npos);
}

TEST(MetadataParseTest, HostileLengthsAllocateNothing) {
  {
    ByteWriter w;
    w.Put<uint32_t>(0xFFFFFFFFu).PutString("abc");
    auto entries = ParseMetadataFile(w.bytes(), 0);
    ASSERT_FALSE(entries.ok());
    EXPECT_EQ(entries.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(entries.error().message().find("metadata entry.key: need 4294967295 bytes"),
              std::string::npos)
        << entries.error().message();
  }
  {
    // 2^32-1 UINT64 values: 32 GiB claimed, 8 bytes present.
    ByteWriter w;
    w.Put<uint32_t>(1).PutString("k").Put<uint8_t>(0).Put<uint8_t>(10).Put<uint32_t>(0xFFFFFFFFu);
    w.Put<uint64_t>(0);
    auto entries = ParseMetadataFile(w.bytes(), 0);
    ASSERT_FALSE(entries.ok());
    EXPECT_EQ(entries.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(entries.error().message().find("metadata entry.value: need 34359738360 bytes"),
              std::string::npos)
        << entries.error().message();
  }
}

TEST(MetadataParseTest, LaterFilesReplaceAndDelete) {
  std::map<std::string, MetadataValue> map;
  ApplyMetadataEntries(*ParseMetadataFile(ThreeEntries(), 0), &map);
  EXPECT_EQ(map.size(), 2u);  // k, z
  ByteWriter w;
  w.Put<uint32_t>(1).PutString("k").Put<uint8_t>(1);
  w.Put<uint32_t>(1).PutString("z").Put<uint8_t>(0).Put<uint8_t>(6).Put<uint32_t>(1).Put<uint8_t>(
      9);
  ApplyMetadataEntries(*ParseMetadataFile(w.bytes(), 0), &map);
  ASSERT_EQ(map.size(), 1u);
  EXPECT_EQ(map["z"].type, Datatype::kUInt8);
  EXPECT_EQ(ToHex(map["z"].value), "09");
}

// ---- corpus ----

TEST(MetadataCorpusTest, RealFileParses) {
  auto storage = LocalStorage::Open(CorpusArray("metadata"));
  ASSERT_TRUE(storage.ok());
  auto files = SelectMetadataFiles(**storage, "__meta", kLatest, DefaultLimits());
  ASSERT_TRUE(files.ok()) << files.error().ToString();
  ASSERT_EQ(files->size(), 3u);
  auto tile = ReadGenericTile(**storage, (*files)[0].path, 0, nullptr, DefaultLimits());
  ASSERT_TRUE(tile.ok()) << tile.error().ToString();
  auto entries = ParseMetadataFile(tile->data, 0);
  ASSERT_TRUE(entries.ok()) << entries.error().ToString();
  EXPECT_EQ(entries->size(), 14u);  // the t2 write
  // Every prefix of a real payload is a shorter list or a clean error.
  for (size_t n = 0; n < tile->data.size(); ++n) {
    auto prefix = ParseMetadataFile(Bytes(tile->data).first(n), 0);
    if (!prefix.ok()) {
      EXPECT_EQ(prefix.error().code(), ErrorCode::kCorrupt);
    }
  }
}

TEST(MetadataCorpusTest, LatestMatchesTileDB) {
  auto storage = LocalStorage::Open(CorpusArray("metadata"));
  ASSERT_TRUE(storage.ok());
  auto md = LoadMetadata(**storage, "__meta", kLatest, nullptr, DefaultLimits());
  ASSERT_TRUE(md.ok()) << md.error().ToString();
  ExpectMatchesJson(*md, ReadJson(CorpusExpected("metadata") + "/metadata.json"), "latest");
  EXPECT_EQ(md->count("i8"), 0u);  // deleted at t4
}

TEST(MetadataCorpusTest, EveryViewMatchesTileDB) {
  auto storage = LocalStorage::Open(CorpusArray("metadata"));
  ASSERT_TRUE(storage.ok());
  int checked = 0;
  for (const auto& dir :
       std::filesystem::directory_iterator(CorpusExpected("metadata") + "/views")) {
    const std::string name = dir.path().filename().string();
    const uint64_t t = name == "latest" ? kLatest : std::stoull(name);
    auto md = LoadMetadata(**storage, "__meta", t, nullptr, DefaultLimits());
    ASSERT_TRUE(md.ok()) << name << ": " << md.error().ToString();
    ExpectMatchesJson(*md, ReadJson(dir.path().string() + "/view.json")["metadata"], name);
    ++checked;
  }
  EXPECT_EQ(checked, 6);
  // Spot checks of the history: i8 exists until t4; str is overwritten at t3.
  auto t3 = LoadMetadata(**storage, "__meta", 1700000003000, nullptr, DefaultLimits());
  ASSERT_TRUE(t3.ok());
  ASSERT_EQ(t3->count("i8"), 1u);
  EXPECT_EQ(t3->at("i8").num, 3u);
  EXPECT_EQ(t3->count("later"), 1u);
  auto t2 = LoadMetadata(**storage, "__meta", 1700000002000, nullptr, DefaultLimits());
  ASSERT_TRUE(t2.ok());
  EXPECT_EQ(t2->count("later"), 0u);
  EXPECT_NE(t2->at("str").value, t3->at("str").value);
  auto t4 = LoadMetadata(**storage, "__meta", 1700000004000, nullptr, DefaultLimits());
  ASSERT_TRUE(t4.ok());
  EXPECT_EQ(t4->count("i8"), 0u);
}

TEST(MetadataCorpusTest, TimestampsAreTheWrites) {
  auto storage = LocalStorage::Open(CorpusArray("metadata"));
  ASSERT_TRUE(storage.ok());
  auto ts = MetadataTimestamps(**storage, "__meta", DefaultLimits());
  ASSERT_TRUE(ts.ok());
  EXPECT_EQ(*ts, (std::vector<uint64_t>{1700000002000, 1700000003000, 1700000004000}));
  auto none = MetadataTimestamps(**storage, "__no_such_dir", DefaultLimits());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST(MetadataCorpusTest, EncryptedNeedsTheKey) {
  auto storage = LocalStorage::Open(CorpusArray("encrypted"));
  ASSERT_TRUE(storage.ok());
  EncryptionKey key = testing::KeyFromHexFile(CorpusArray("encrypted.key"));
  auto md = LoadMetadata(**storage, "__meta", 1700000003000, &key, DefaultLimits());
  ASSERT_TRUE(md.ok()) << md.error().ToString();
  ExpectMatchesJson(*md, ReadJson(CorpusExpected("encrypted") + "/metadata.json"), "encrypted");
  ASSERT_EQ(md->count("owner"), 1u);
  EXPECT_EQ(ToString(md->at("owner").value), "tiledbfs");
  EXPECT_EQ(md->at("level").type, Datatype::kInt32);
  EXPECT_EQ(md->at("scale").num, 2u);
  // Before t3 there is none.
  auto before = LoadMetadata(**storage, "__meta", 1700000002000, &key, DefaultLimits());
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->empty());

  auto no_key = LoadMetadata(**storage, "__meta", kLatest, nullptr, DefaultLimits());
  ASSERT_FALSE(no_key.ok());
  EXPECT_EQ(no_key.error().code(), ErrorCode::kKey);
  EXPECT_NE(no_key.error().message().find("__meta/__1700000003000"), std::string::npos)
      << no_key.error().message();
  EncryptionKey wrong = key;
  wrong.bytes[0] ^= 1;
  auto wrong_key = LoadMetadata(**storage, "__meta", kLatest, &wrong, DefaultLimits());
  ASSERT_FALSE(wrong_key.ok());
  EXPECT_EQ(wrong_key.error().code(), ErrorCode::kKey);
}

TEST(MetadataCorpusTest, MissingFolderIsNoMetadata) {
  auto storage = LocalStorage::Open(CorpusArray("dense_1d"));
  ASSERT_TRUE(storage.ok());
  auto md = LoadMetadata(**storage, "__meta", kLatest, nullptr, DefaultLimits());
  ASSERT_TRUE(md.ok()) << md.error().ToString();
  EXPECT_TRUE(md->empty());
}

// ---- selection: vacuum files, .tmp files, ordering ----

ByteVec PutInt(const std::string& key, int32_t v) {
  ByteWriter w;
  w.Put<uint32_t>(static_cast<uint32_t>(key.size())).PutString(key).Put<uint8_t>(0).Put<uint8_t>(0);
  w.Put<uint32_t>(1).Put<int32_t>(v);
  return MakeGenericTile(w.bytes());
}

ByteVec Delete(const std::string& key) {
  ByteWriter w;
  w.Put<uint32_t>(static_cast<uint32_t>(key.size())).PutString(key).Put<uint8_t>(1);
  return MakeGenericTile(w.bytes());
}

int32_t IntOf(const MetadataValue& v) {
  int32_t x;
  std::memcpy(&x, v.value.data(), 4);
  return x;
}

const char kU1[] = "11111111111111111111111111111111";
const char kU2[] = "22222222222222222222222222222222";
const char kU3[] = "33333333333333333333333333333333";
const char kU4[] = "44444444444444444444444444444444";

std::string Meta(uint64_t t1, uint64_t t2, const char* uuid) {
  return "__meta/__" + std::to_string(t1) + "_" + std::to_string(t2) + "_" + uuid;
}

TEST(MetadataSelectTest, VacuumRetiresConsolidatedFilesOnlyOnceVisible) {
  MemoryStorage s;
  s.Put(Meta(10, 10, kU1), PutInt("a", 1));
  s.Put(Meta(20, 20, kU2), PutInt("a", 2));
  s.Put(Meta(30, 30, kU3), Delete("a"));
  // Consolidated [10, 30]: TileDB writes the merged map (a deleted: nothing
  // left) plus a new key, and a .vac naming the three files it replaces.
  s.Put(Meta(10, 30, kU4), PutInt("b", 7));
  std::string vac = "file:///x/arr/" + Meta(10, 10, kU1) + "\nfile:///x/arr/" + Meta(20, 20, kU2) +
                    "\nfile:///x/arr/" + Meta(30, 30, kU3) + "\n";
  s.Put(Meta(10, 30, kU4) + ".vac", ByteVec(vac.begin(), vac.end()));
  s.Put(Meta(40, 40, kU1) + ".tmp", ByteVec{1, 2, 3});  // a partial write: never read

  auto at20 = LoadMetadata(s, "__meta", 20, nullptr, DefaultLimits());
  ASSERT_TRUE(at20.ok()) << at20.error().ToString();
  ASSERT_EQ(at20->size(), 1u);
  EXPECT_EQ(IntOf(at20->at("a")), 2);

  auto files = SelectMetadataFiles(s, "__meta", 30, DefaultLimits());
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].path, Meta(10, 30, kU4));
  auto at30 = LoadMetadata(s, "__meta", 30, nullptr, DefaultLimits());
  ASSERT_TRUE(at30.ok());
  ASSERT_EQ(at30->size(), 1u);
  EXPECT_EQ(IntOf(at30->at("b")), 7);

  auto ts = MetadataTimestamps(s, "__meta", DefaultLimits());
  ASSERT_TRUE(ts.ok());
  EXPECT_EQ(*ts, (std::vector<uint64_t>{10, 20, 30}));
}

// A vacuum deletes the consolidated files one by one, then the .vac. Read
// meanwhile, an instant inside the range (before the consolidated file
// shows) gets what it has after the vacuum, not the survivors alone.
TEST(MetadataSelectTest, ViewsDuringAVacuumAreThoseAfterIt) {
  // Three writes, consolidated into [10, 30]; the vacuum has deleted the
  // first one (when `first_gone`) and not yet the others nor the .vac.
  auto make = [](MemoryStorage& s, bool first_gone) {
    if (!first_gone) s.Put(Meta(10, 10, kU1), PutInt("a", 1));
    s.Put(Meta(20, 20, kU2), PutInt("b", 2));
    s.Put(Meta(30, 30, kU3), PutInt("c", 3));
    s.Put(Meta(10, 30, kU4), PutInt("a", 1));
    std::string vac = "file:///x/arr/" + Meta(10, 10, kU1) + "\nfile:///x/arr/" +
                      Meta(20, 20, kU2) + "\nfile:///x/arr/" + Meta(30, 30, kU3) + "\n";
    s.Put(Meta(10, 30, kU4) + ".vac", ByteVec(vac.begin(), vac.end()));
  };
  MemoryStorage before;
  make(before, false);
  auto at25 = LoadMetadata(before, "__meta", 25, nullptr, DefaultLimits());
  ASSERT_TRUE(at25.ok()) << at25.error().ToString();
  EXPECT_EQ(at25->size(), 2u);  // a and b, as TileDB reads them

  MemoryStorage during;
  make(during, true);
  // At 25 the consolidated file does not show yet: after the vacuum there
  // is nothing, and the survivor (b) must not show on its own.
  auto files = SelectMetadataFiles(during, "__meta", 25, DefaultLimits());
  ASSERT_TRUE(files.ok()) << files.error().ToString();
  EXPECT_TRUE(files->empty()) << files->front().path;
  auto md = LoadMetadata(during, "__meta", 25, nullptr, DefaultLimits());
  ASSERT_TRUE(md.ok());
  EXPECT_TRUE(md->empty());
  // From 30 on, the consolidated file alone, as before.
  files = SelectMetadataFiles(during, "__meta", 30, DefaultLimits());
  ASSERT_TRUE(files.ok());
  ASSERT_EQ(files->size(), 1u);
  EXPECT_EQ((*files)[0].path, Meta(10, 30, kU4));
}

TEST(MetadataSelectTest, AppliesInTimestampOrderNotNameOrder) {
  MemoryStorage s;
  // Name order puts "__100_..." before "__99_..."; timestamps say otherwise.
  s.Put(Meta(100, 100, kU1), PutInt("a", 100));
  s.Put(Meta(99, 99, kU2), PutInt("a", 99));
  auto md = LoadMetadata(s, "__meta", kLatest, nullptr, DefaultLimits());
  ASSERT_TRUE(md.ok());
  EXPECT_EQ(IntOf(md->at("a")), 100);
}

TEST(MetadataSelectTest, BadNameIsCorruptAndNamesTheFile) {
  MemoryStorage s;
  s.Put("__meta/not_a_timestamped_name", PutInt("a", 1));
  auto md = LoadMetadata(s, "__meta", kLatest, nullptr, DefaultLimits());
  ASSERT_FALSE(md.ok());
  EXPECT_EQ(md.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(md.error().message().find("__meta/not_a_timestamped_name"), std::string::npos)
      << md.error().message();
}

TEST(MetadataSelectTest, CorruptPayloadNamesTheFile) {
  MemoryStorage s;
  ByteWriter w;
  w.Put<uint32_t>(50).PutString("short");
  s.Put(Meta(5, 5, kU1), MakeGenericTile(w.bytes()));
  auto md = LoadMetadata(s, "__meta", kLatest, nullptr, DefaultLimits());
  ASSERT_FALSE(md.ok());
  EXPECT_EQ(md.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(
      md.error().message().find(Meta(5, 5, kU1) + " (tile data): offset 4: metadata entry.key"),
      std::string::npos)
      << md.error().message();
}

}  // namespace
}  // namespace tiledbfs::core::metadata_test
