#include "core/metadata/group.h"

#include <gtest/gtest.h>

#include "core/metadata/metadata.h"
#include "core/tile/generic_tile.h"
#include "tests/core/metadata/test_util.h"

namespace tiledbfs::core {
namespace {

using testing::ByteWriter;
using testing::CorpusArray;
using testing::CorpusExpected;
using testing::MakeGenericTile;
using testing::ReadJson;
using testing::ToHex;

constexpr uint64_t kLatest = UINT64_MAX;

std::string TypeName(GroupMember::Type t) {
  switch (t) {
    case GroupMember::kArray:
      return "array";
    case GroupMember::kGroup:
      return "group";
    default:
      return "unknown";
  }
}

void ExpectGroupMatches(const Storage& storage, const nlohmann::json& expected) {
  auto members = LoadGroupMembers(storage, kLatest, nullptr, DefaultLimits());
  ASSERT_TRUE(members.ok()) << members.error().ToString();
  const auto& em = expected["members"];
  ASSERT_EQ(members->size(), em.size());
  for (size_t i = 0; i < em.size(); ++i) {
    const GroupMember& m = (*members)[i];
    EXPECT_EQ(m.name, em[i]["name"].get<std::string>());
    EXPECT_TRUE(m.name_set);
    EXPECT_EQ(TypeName(m.type), em[i]["type"].get<std::string>());
    EXPECT_EQ(m.relative, em[i]["relative"].get<bool>());
    EXPECT_EQ(m.uri, em[i]["uri_relative_to_group"].get<std::string>());
  }
  auto md = LoadMetadata(storage, kGroupMetadataDir, kLatest, nullptr, DefaultLimits());
  ASSERT_TRUE(md.ok()) << md.error().ToString();
  const auto& emd = expected["metadata"];
  ASSERT_EQ(md->size(), emd.size());
  for (const auto& [key, e] : emd.items()) {
    ASSERT_EQ(md->count(key), 1u) << key;
    EXPECT_EQ(DatatypeName(md->at(key).type), e["type"].get<std::string>());
    EXPECT_EQ(md->at(key).num, e["num"].get<uint32_t>());
    EXPECT_EQ(ToHex(md->at(key).value), e["hex"].get<std::string>());
  }
}

TEST(GroupCorpusTest, MembersAndMetadataMatchTileDB) {
  auto storage = LocalStorage::Open(CorpusArray("group"));
  ASSERT_TRUE(storage.ok());
  EXPECT_TRUE(IsGroup(**storage));
  ExpectGroupMatches(**storage, ReadJson(CorpusExpected("group") + "/group.json"));
}

TEST(GroupCorpusTest, SubgroupHasItsOwnMembersAndMetadata) {
  auto storage = LocalStorage::Open(CorpusArray("group") + "/sub");
  ASSERT_TRUE(storage.ok());
  EXPECT_TRUE(IsGroup(**storage));
  ExpectGroupMatches(**storage, ReadJson(CorpusExpected("group") + "/sub/group.json"));
}

TEST(GroupCorpusTest, HistoryOfTheGroup) {
  auto storage = LocalStorage::Open(CorpusArray("group"));
  ASSERT_TRUE(storage.ok());
  // Members were added at t5; ratio at t6.
  auto before = LoadGroupMembers(**storage, 1700000004000, nullptr, DefaultLimits());
  ASSERT_TRUE(before.ok());
  EXPECT_TRUE(before->empty());
  auto md5 = LoadMetadata(**storage, kGroupMetadataDir, 1700000005000, nullptr, DefaultLimits());
  ASSERT_TRUE(md5.ok());
  EXPECT_EQ(md5->size(), 2u);
  EXPECT_EQ(md5->count("ratio"), 0u);
}

TEST(GroupCorpusTest, ArrayIsNotAGroup) {
  auto storage = LocalStorage::Open(CorpusArray("group") + "/dense_a");
  ASSERT_TRUE(storage.ok());
  EXPECT_FALSE(IsGroup(**storage));
  auto members = LoadGroupMembers(**storage, kLatest, nullptr, DefaultLimits());
  ASSERT_TRUE(members.ok());
  EXPECT_TRUE(members->empty());
}

TEST(GroupCorpusTest, ChildObjects) {
  auto storage = LocalStorage::Open(CorpusArray("group"));
  ASSERT_TRUE(storage.ok());
  auto children = ListChildObjects(**storage);
  ASSERT_TRUE(children.ok()) << children.error().ToString();
  ASSERT_EQ(children->size(), 3u);
  EXPECT_EQ((*children)[0].name, "dense_a");
  EXPECT_EQ((*children)[0].type, GroupMember::kArray);
  EXPECT_EQ((*children)[1].name, "sparse_b");
  EXPECT_EQ((*children)[1].type, GroupMember::kArray);
  EXPECT_EQ((*children)[2].name, "sub");
  EXPECT_EQ((*children)[2].type, GroupMember::kGroup);
}

// The real details payload of the corpus group, for parser tests.
ByteVec CorpusDetailsPayload() {
  auto storage = LocalStorage::Open(CorpusArray("group"));
  EXPECT_TRUE(storage.ok());
  auto listing = (*storage)->List("__group");
  EXPECT_TRUE(listing.ok());
  auto tile =
      ReadGenericTile(**storage, "__group/" + listing->at(0).name, 0, nullptr, DefaultLimits());
  EXPECT_TRUE(tile.ok());
  return tile->data;
}

TEST(GroupParseTest, RealPayload) {
  ByteVec payload = CorpusDetailsPayload();
  auto details = ParseGroupDetails(payload, 0);
  ASSERT_TRUE(details.ok()) << details.error().ToString();
  EXPECT_EQ(details->version, 2u);
  ASSERT_EQ(details->members.size(), 3u);
  for (const auto& rec : details->members) {
    EXPECT_EQ(rec.version, 2u);
    EXPECT_FALSE(rec.deleted);
  }
}

TEST(GroupParseTest, EveryTruncationIsRejected) {
  ByteVec payload = CorpusDetailsPayload();
  for (size_t n = 0; n < payload.size(); ++n) {
    auto details = ParseGroupDetails(Bytes(payload).first(n), 0);
    ASSERT_FALSE(details.ok()) << "prefix " << n;
    EXPECT_EQ(details.error().code(), ErrorCode::kCorrupt) << n;
  }
  ByteVec longer = payload;
  longer.push_back(0);
  auto trailing = ParseGroupDetails(longer, 0);
  ASSERT_FALSE(trailing.ok());
  EXPECT_NE(trailing.error().message().find("1 bytes after the last member"), std::string::npos);
}

ByteWriter& Member(ByteWriter& w, uint32_t version, uint8_t type, const std::string& uri,
                   const std::string* name, bool deleted) {
  w.Put<uint32_t>(version).Put<uint8_t>(type).Put<uint8_t>(1);
  w.Put<uint64_t>(uri.size()).PutString(uri);
  w.Put<uint8_t>(name ? 1 : 0);
  if (name) w.Put<uint64_t>(name->size()).PutString(*name);
  if (version >= 2) w.Put<uint8_t>(deleted ? 1 : 0);
  return w;
}

TEST(GroupParseTest, BadEnumsAndVersions) {
  {
    ByteWriter w;
    w.Put<uint32_t>(3).Put<uint64_t>(0);
    auto d = ParseGroupDetails(w.bytes(), 0);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(d.error().message().find("unsupported group version 3"), std::string::npos);
  }
  {
    ByteWriter w;
    w.Put<uint32_t>(2).Put<uint64_t>(1);
    Member(w, 2, 9, "x", nullptr, false);
    auto d = ParseGroupDetails(w.bytes(), 0);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(
        d.error().message().find("offset 16: group member.object type: unknown object type 9"),
        std::string::npos)
        << d.error().message();
  }
  {
    ByteWriter w;
    w.Put<uint32_t>(2).Put<uint64_t>(1);
    Member(w, 7, 2, "x", nullptr, false);
    auto d = ParseGroupDetails(w.bytes(), 0);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().code(), ErrorCode::kUnsupported);
    EXPECT_NE(d.error().message().find("group member version 7"), std::string::npos);
  }
  {
    ByteWriter w;  // relative byte 5
    w.Put<uint32_t>(2).Put<uint64_t>(1).Put<uint32_t>(2).Put<uint8_t>(2).Put<uint8_t>(5);
    w.Put<uint64_t>(0).Put<uint8_t>(0).Put<uint8_t>(0);
    auto d = ParseGroupDetails(w.bytes(), 0);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(d.error().message().find("group member.relative"), std::string::npos);
  }
}

TEST(GroupParseTest, HostileCountsAndLengthsAllocateNothing) {
  {
    ByteWriter w;
    w.Put<uint32_t>(2).Put<uint64_t>(UINT64_MAX);
    Member(w, 2, 2, "x", nullptr, false);
    auto d = ParseGroupDetails(w.bytes(), 0);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(d.error().message().find("cannot fit"), std::string::npos);
  }
  {
    ByteWriter w;
    w.Put<uint32_t>(2).Put<uint64_t>(1).Put<uint32_t>(2).Put<uint8_t>(2).Put<uint8_t>(1);
    w.Put<uint64_t>(UINT64_MAX - 3).PutString("abcdefghijklmnop");
    auto d = ParseGroupDetails(w.bytes(), 0);
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(d.error().message().find("group member.URI: need"), std::string::npos);
  }
}

TEST(GroupParseTest, UnnamedMemberIsNamedAfterItsUri) {
  ByteWriter w;
  w.Put<uint32_t>(1).Put<uint64_t>(1);
  Member(w, 1, 1, "s3://bucket/groups/g1/", nullptr, false);
  auto d = ParseGroupDetails(w.bytes(), 0);
  ASSERT_TRUE(d.ok()) << d.error().ToString();
  const GroupMember& m = d->members[0].member;
  EXPECT_EQ(m.name, "g1");
  EXPECT_FALSE(m.name_set);
  EXPECT_EQ(m.key(), "s3://bucket/groups/g1/");
  EXPECT_EQ(m.type, GroupMember::kGroup);
}

const char kU1[] = "11111111111111111111111111111111";
const char kU2[] = "22222222222222222222222222222222";
const char kU3[] = "33333333333333333333333333333333";

std::string Details(uint64_t t, const char* uuid, const std::string& version_suffix) {
  return "__group/__" + std::to_string(t) + "_" + std::to_string(t) + "_" + uuid + version_suffix;
}

TEST(GroupLoadTest, VersionTwoFilesAddAndDelete) {
  MemoryStorage s;
  s.Put(kGroupMarkerFile, {});
  const std::string a = "a", b = "b";
  {
    ByteWriter w;
    w.Put<uint32_t>(2).Put<uint64_t>(2);
    Member(w, 2, 2, "arr_a", &a, false);
    Member(w, 2, 1, "grp_b", &b, false);
    s.Put(Details(10, kU1, "_2"), MakeGenericTile(w.bytes()));
  }
  {
    ByteWriter w;
    w.Put<uint32_t>(2).Put<uint64_t>(1);
    Member(w, 2, 2, "arr_a", &a, true);
    s.Put(Details(20, kU2, "_2"), MakeGenericTile(w.bytes()));
  }
  EXPECT_TRUE(IsGroup(s));
  auto at10 = LoadGroupMembers(s, 10, nullptr, DefaultLimits());
  ASSERT_TRUE(at10.ok()) << at10.error().ToString();
  ASSERT_EQ(at10->size(), 2u);
  EXPECT_EQ((*at10)[0].name, "a");
  EXPECT_EQ((*at10)[0].type, GroupMember::kArray);
  EXPECT_EQ((*at10)[1].name, "b");
  EXPECT_EQ((*at10)[1].type, GroupMember::kGroup);
  auto latest = LoadGroupMembers(s, kLatest, nullptr, DefaultLimits());
  ASSERT_TRUE(latest.ok());
  ASSERT_EQ(latest->size(), 1u);
  EXPECT_EQ((*latest)[0].name, "b");
}

TEST(GroupLoadTest, LatestVersionOneFileAloneIsTheGroup) {
  MemoryStorage s;
  const std::string a = "a", c = "c";
  {
    ByteWriter w;
    w.Put<uint32_t>(1).Put<uint64_t>(1);
    Member(w, 1, 2, "arr_a", &a, false);
    s.Put(Details(10, kU1, ""), MakeGenericTile(w.bytes()));
  }
  {
    ByteWriter w;
    w.Put<uint32_t>(1).Put<uint64_t>(1);
    Member(w, 1, 2, "arr_c", &c, false);
    s.Put(Details(20, kU2, "_1"), MakeGenericTile(w.bytes()));
  }
  auto m = LoadGroupMembers(s, kLatest, nullptr, DefaultLimits());
  ASSERT_TRUE(m.ok()) << m.error().ToString();
  ASSERT_EQ(m->size(), 1u);
  EXPECT_EQ((*m)[0].name, "c");
  EXPECT_TRUE(IsGroup(s));
}

TEST(GroupLoadTest, VersionOneFileAmongVersionTwoIsCorrupt) {
  MemoryStorage s;
  const std::string a = "a";
  ByteWriter w1;
  w1.Put<uint32_t>(1).Put<uint64_t>(1);
  Member(w1, 1, 2, "arr_a", &a, false);
  s.Put(Details(10, kU1, "_2"), MakeGenericTile(w1.bytes()));
  ByteWriter w2;
  w2.Put<uint32_t>(2).Put<uint64_t>(0);
  s.Put(Details(20, kU3, "_2"), MakeGenericTile(w2.bytes()));
  auto m = LoadGroupMembers(s, kLatest, nullptr, DefaultLimits());
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(m.error().message().find(Details(10, kU1, "_2")), std::string::npos)
      << m.error().message();
}

TEST(GroupLoadTest, LegacyGroupHasNoMembersButChildObjects) {
  MemoryStorage s;
  s.Put(kGroupMarkerFile, {});
  s.Put("arr/__array_schema.tdb", {1});
  s.Put("sub/__tiledb_group.tdb", {});
  s.Put("other/readme.txt", {1});
  EXPECT_TRUE(IsGroup(s));
  auto m = LoadGroupMembers(s, kLatest, nullptr, DefaultLimits());
  ASSERT_TRUE(m.ok());
  EXPECT_TRUE(m->empty());
  auto children = ListChildObjects(s);
  ASSERT_TRUE(children.ok());
  ASSERT_EQ(children->size(), 2u);
  EXPECT_EQ((*children)[0].name, "arr");
  EXPECT_EQ((*children)[0].type, GroupMember::kArray);
  EXPECT_EQ((*children)[1].name, "sub");
  EXPECT_EQ((*children)[1].type, GroupMember::kGroup);
}

}  // namespace
}  // namespace tiledbfs::core
