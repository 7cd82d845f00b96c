#include "core/directory/timestamped_name.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace tiledbfs::core::timestamped_name_test {
namespace {

const std::string kUuid = "0a727644d38fba35fc13099ca5ac7d1d";

TEST(TimestampedName, Format5WithVersion) {
  auto n = ParseTimestampedName("__1700000002000_1700000003000_" + kUuid + "_22");
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(n->name, "__1700000002000_1700000003000_" + kUuid + "_22");
  EXPECT_EQ(n->extension, "");
  EXPECT_EQ(n->t1, 1700000002000u);
  EXPECT_EQ(n->t2, 1700000003000u);
  EXPECT_EQ(n->uuid, kUuid);
  EXPECT_EQ(n->version, 22u);
  EXPECT_EQ(n->format, NameFormat::kTimestampsUuidVersion);
  EXPECT_EQ(n->ImpliedFormatVersion(), 22u);
}

TEST(TimestampedName, Extensions) {
  for (std::string ext : {".wrt", ".ok", ".vac", ".con", ".ign", ".del", ".upd", ".meta", ".tmp"}) {
    auto n = ParseTimestampedName("__1_2_" + kUuid + "_10" + ext);
    ASSERT_TRUE(n.ok()) << ext;
    EXPECT_EQ(n->extension, ext);
    EXPECT_EQ(n->name, "__1_2_" + kUuid + "_10");
    EXPECT_EQ(n->version, 10u);
  }
}

TEST(TimestampedName, Format3To4) {
  // Schema and metadata names use this form at every version.
  auto n = ParseTimestampedName("__1700000000000_1700000000000_049fa8bf9c6f85830f71e12cd2e97019");
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(n->format, NameFormat::kTimestampsUuid);
  EXPECT_EQ(n->t1, 1700000000000u);
  EXPECT_EQ(n->t2, 1700000000000u);
  EXPECT_EQ(n->uuid, "049fa8bf9c6f85830f71e12cd2e97019");
  EXPECT_EQ(n->version, 0u);
  EXPECT_EQ(n->ImpliedFormatVersion(), 4u);
}

TEST(TimestampedName, Format1To2) {
  // legacy_non_split_coords_v1_4_0's fragment.
  auto n = ParseTimestampedName("__5dc2cc9cce204a189f825fd4919d0c55_1541540586869");
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(n->format, NameFormat::kUuidTimestamp);
  EXPECT_EQ(n->uuid, "5dc2cc9cce204a189f825fd4919d0c55");
  EXPECT_EQ(n->t1, 1541540586869u);
  EXPECT_EQ(n->t2, 1541540586869u);
  EXPECT_EQ(n->version, 0u);
  EXPECT_EQ(n->ImpliedFormatVersion(), 2u);

  // TileDB 1.5 consolidation: __uuid_<now>_<newest fragment>; both
  // timestamps are the last number, as TileDB's FragmentID reads it.
  auto c =
      ParseTimestampedName("__5dc2cc9cce204a189f825fd4919d0c55_1541540999999_1541540586869.ok");
  ASSERT_TRUE(c.ok()) << c.error().ToString();
  EXPECT_EQ(c->format, NameFormat::kUuidTimestamp);
  EXPECT_EQ(c->t1, 1541540586869u);
  EXPECT_EQ(c->t2, 1541540586869u);
  EXPECT_EQ(c->extension, ".ok");
}

TEST(TimestampedName, LimitsOfNumbers) {
  auto n = ParseTimestampedName("__0_18446744073709551615_" + kUuid + "_4294967295");
  ASSERT_TRUE(n.ok()) << n.error().ToString();
  EXPECT_EQ(n->t2, 18446744073709551615u);
  EXPECT_EQ(n->version, 4294967295u);
  // Leading zeros are digits like any other.
  auto z = ParseTimestampedName("__0001_0002_" + kUuid);
  ASSERT_TRUE(z.ok());
  EXPECT_EQ(z->t1, 1u);
}

TEST(TimestampedName, Ordering) {
  std::vector<TimestampedName> v;
  for (std::string s :
       {"__5_9_" + kUuid + "_22", "__5_6_" + kUuid + "_22", "__10_10_" + kUuid + "_22",
        std::string("__5_6_00000000000000000000000000000000_22")}) {
    v.push_back(*ParseTimestampedName(s));
  }
  std::sort(v.begin(), v.end());
  EXPECT_EQ(v[0].name, "__5_6_00000000000000000000000000000000_22");
  EXPECT_EQ(v[1].name, "__5_6_" + kUuid + "_22");
  EXPECT_EQ(v[2].name, "__5_9_" + kUuid + "_22");
  EXPECT_EQ(v[3].name, "__10_10_" + kUuid + "_22");  // numeric, not lexicographic
}

void ExpectRejected(const std::string& name, const std::string& why) {
  auto n = ParseTimestampedName(name);
  ASSERT_FALSE(n.ok()) << "accepted \"" << name << "\"";
  EXPECT_EQ(n.error().code(), ErrorCode::kCorrupt) << name;
  EXPECT_NE(n.error().message().find("\"" + name + "\""), std::string::npos) << n.error().message();
  EXPECT_NE(n.error().message().find(why), std::string::npos)
      << name << ": " << n.error().message();
}

TEST(TimestampedName, MalformedRejectedWithNameQuoted) {
  ExpectRejected("", "does not start with");
  ExpectRejected("_", "does not start with");
  ExpectRejected("__", "1 '_'-separated fields");
  ExpectRejected("abc", "does not start with");
  ExpectRejected("_1_2_" + kUuid + "_3", "does not start with");
  ExpectRejected("x__1_2_" + kUuid, "does not start with");
  ExpectRejected(" __1_2_" + kUuid, "does not start with");
  ExpectRejected("__1_2_" + kUuid + "_3_4", "5 '_'-separated fields");
  ExpectRejected("__1_2_3_4_5_6", "6 '_'-separated fields");
  ExpectRejected("__a_2_" + kUuid + "_3", "t1");
  ExpectRejected("__1_b_" + kUuid + "_3", "t2");
  ExpectRejected("__-1_2_" + kUuid + "_3", "t1");
  ExpectRejected("__+1_2_" + kUuid + "_3", "t1");
  ExpectRejected("___2_" + kUuid + "_3", "t1");
  ExpectRejected("__1__" + kUuid + "_3", "t2");
  ExpectRejected("__1_2_" + kUuid.substr(1) + "_3", "uuid");
  ExpectRejected("__1_2_" + kUuid + "0_3", "uuid");
  ExpectRejected("__1_2_0a727644d38fba35fc13099ca5ac7d1g_3", "uuid");
  ExpectRejected("__1_2_" + kUuid + "_x", "version");
  ExpectRejected("__1_2_" + kUuid + "_", "version");
  ExpectRejected("__1_2_" + kUuid + "_4294967296", "version");
  ExpectRejected("__2_1_" + kUuid + "_3", "t1 2 is after t2 1");
  ExpectRejected("__18446744073709551616_18446744073709551616_" + kUuid, "t1");
  ExpectRejected("__1_99999999999999999999999_" + kUuid, "t2");
  ExpectRejected("__1_2_" + kUuid + ".", "empty extension");
  ExpectRejected("__1_2_" + kUuid + ".a.b", "more than one '.'");
  ExpectRejected("__fragments/__1_2_" + kUuid, "'/'");
  ExpectRejected(std::string("__1_2_") + kUuid + std::string("\0", 1), "NUL");
  // Format 1-2 shapes.
  ExpectRejected("__" + kUuid, "1 '_'-separated fields");
  ExpectRejected("__1_2", "uuid");
  ExpectRejected("__" + kUuid + "_", "timestamp");
  ExpectRejected("__" + kUuid + "_12a", "timestamp");
  ExpectRejected("__" + kUuid + "_1_x", "second timestamp");
  ExpectRejected("__" + kUuid.substr(2) + "_1", "uuid");
  // Known non-timestamped files of an array folder.
  ExpectRejected("__array_schema.tdb", "");
  ExpectRejected("__fragment_metadata.tdb", "");
  ExpectRejected("__labels", "");
  ExpectRejected("__enumerations", "");
}

TEST(TimestampedName, EveryPrefixParsesOrFailsCleanly) {
  for (std::string full : {"__1700000002000_1700000002000_" + kUuid + "_22.wrt",
                           std::string("__5dc2cc9cce204a189f825fd4919d0c55_1541540586869")}) {
    for (size_t n = 0; n <= full.size(); ++n) {
      std::string prefix = full.substr(0, n);
      auto r = ParseTimestampedName(prefix);
      if (!r.ok()) {
        EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
        EXPECT_NE(r.error().message().find("\"" + prefix + "\""), std::string::npos);
      }
    }
  }
}

}  // namespace
}  // namespace tiledbfs::core::timestamped_name_test
