// The small text/binary files of __commits and __meta: .con, .vac, .ign.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/directory/array_directory.h"

namespace tiledbfs::core::commit_files_test {
namespace {

const std::string kCorpus = std::string(TILEDBFS_TEST_DATA) + "/corpus/arrays/";
const std::string kUuid = "0a727644d38fba35fc13099ca5ac7d1d";

ByteVec ReadCorpusFile(const std::string& array, const std::string& path) {
  auto s = LocalStorage::Open(kCorpus + array);
  EXPECT_TRUE(s.ok());
  auto b = (*s)->ReadAll(path);
  EXPECT_TRUE(b.ok()) << path;
  return b.ok() ? *b : ByteVec{};
}

ByteVec Bytes8(uint64_t v) {
  ByteVec b(8);
  std::memcpy(b.data(), &v, 8);
  return b;
}

void Append(ByteVec* out, const std::string& s) { out->insert(out->end(), s.begin(), s.end()); }
void Append(ByteVec* out, const ByteVec& b) { out->insert(out->end(), b.begin(), b.end()); }

TEST(ReduceToStoragePath, Forms) {
  EXPECT_EQ(*ReduceToStoragePath("__fragments/__1_1_" + kUuid + "_22"),
            "__fragments/__1_1_" + kUuid + "_22");
  // Relative with a leading '/', as written from format 19.
  EXPECT_EQ(*ReduceToStoragePath("/__fragments/x"), "__fragments/x");
  // Absolute URIs, as written before format 19.
  EXPECT_EQ(*ReduceToStoragePath("file:///data/arr/__fragments/x"), "__fragments/x");
  EXPECT_EQ(*ReduceToStoragePath("s3://bucket/a/b/arr/__meta/m"), "__meta/m");
  EXPECT_EQ(*ReduceToStoragePath("file:///data/arr/__group/g"), "__group/g");
  EXPECT_EQ(*ReduceToStoragePath("file:///data/arr/__fragments/x/"), "__fragments/x");
  EXPECT_EQ(*ReduceToStoragePath("__commits/c.wrt"), "__commits/c.wrt");
  EXPECT_EQ(*ReduceToStoragePath("__fragment_meta/f.meta"), "__fragment_meta/f.meta");
  // Legacy fragments live in the array root.
  EXPECT_EQ(*ReduceToStoragePath("file:///data/arr/__u_1"), "__u_1");
  EXPECT_EQ(*ReduceToStoragePath("/__u_1"), "__u_1");
  EXPECT_EQ(*ReduceToStoragePath("__u_1.ok"), "__u_1.ok");
  EXPECT_EQ(*ReduceToStoragePath("__u_1/"), "__u_1");
  // Never anything outside: only the last component and a known parent stay.
  EXPECT_EQ(*ReduceToStoragePath("../../etc/passwd"), "passwd");
  EXPECT_EQ(*ReduceToStoragePath("/x/../__fragments/y"), "__fragments/y");
  for (std::string bad : {"", "/", "//", "a/.", "a/..", "..", ".", "a//"}) {
    auto r = ReduceToStoragePath(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(r.error().message().find("names no file"), std::string::npos);
  }
}

TEST(ParseUriList, CorpusVacuumFile) {
  ByteVec vac = ReadCorpusFile(
      "consolidated",
      "__commits/__1700000001000_1700000004000_0948f41347d413d468b3fcd654df05d8_22.vac");
  auto r = ParseUriList(vac);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0],
            "__fragments/__1700000001000_1700000001000_45274bedb02417e951e20c3acdff909f_22");
  EXPECT_EQ((*r)[3],
            "__fragments/__1700000004000_1700000004000_4a10c2bcf021feded5bcb3295071b72c_22");
}

TEST(ParseUriList, CorpusIgnoreFile) {
  ByteVec ign = ReadCorpusFile(
      "commits_consolidated",
      "__commits/__1700000001000_1700000001000_29baccbe83960bb876ccf04f64ed1484_22.ign");
  auto r = ParseUriList(ign);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0],
            "__commits/__1700000001000_1700000001000_5c540e9e93a6813e582c3d4b74770a0b_22.wrt");
}

TEST(ParseUriList, LinesAndErrors) {
  EXPECT_TRUE(ParseUriList(AsBytes(""))->empty());
  EXPECT_EQ(*ParseUriList(AsBytes("/__fragments/a\n/__fragments/b")),
            (std::vector<std::string>{"__fragments/a", "__fragments/b"}));
  auto empty_line = ParseUriList(AsBytes("/__fragments/a\n\n/__fragments/b\n"), 100);
  ASSERT_FALSE(empty_line.ok());
  EXPECT_EQ(empty_line.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(empty_line.error().message().find("offset 115: URI list: empty line"),
            std::string::npos)
      << empty_line.error().message();
  auto dotdot = ParseUriList(AsBytes("a/..\n"));
  ASSERT_FALSE(dotdot.ok());
  EXPECT_NE(dotdot.error().message().find("offset 0: URI list"), std::string::npos);
}

TEST(ParseUriList, EveryPrefixOfCorpusFile) {
  ByteVec vac = ReadCorpusFile(
      "consolidated",
      "__commits/__1700000001000_1700000004000_0948f41347d413d468b3fcd654df05d8_22.vac");
  for (size_t n = 0; n <= vac.size(); ++n) {
    auto r = ParseUriList(Bytes(vac.data(), n));
    if (!r.ok()) {
      EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
    }
  }
}

TEST(ParseConsolidatedCommits, CorpusFile) {
  ByteVec con = ReadCorpusFile(
      "commits_consolidated",
      "__commits/__1700000001000_1700000005000_01c2da7b2249c52328d405950e632d65_22.con");
  auto r = ParseConsolidatedCommits(con);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ((*r)[0].path,
            "__commits/__1700000001000_1700000001000_5c540e9e93a6813e582c3d4b74770a0b_22.wrt");
  EXPECT_EQ((*r)[0].name.extension, ".wrt");
  EXPECT_EQ((*r)[0].name.t1, 1700000001000u);
  EXPECT_EQ((*r)[4].name.t1, 1700000005000u);
  for (const auto& e : *r) EXPECT_TRUE(e.condition.empty());
}

// A .con holding a .wrt, a .del with its condition bytes, an .upd, a .wrt.
ByteVec SyntheticCon(ByteVec del_bytes, ByteVec upd_bytes) {
  ByteVec con;
  Append(&con, "__commits/__1_1_" + kUuid + "_22.wrt\n");
  Append(&con, "__commits/__2_2_" + kUuid + "_22.del\n");
  Append(&con, Bytes8(del_bytes.size()));
  Append(&con, del_bytes);
  Append(&con, "__commits/__3_3_" + kUuid + "_22.upd\n");
  Append(&con, Bytes8(upd_bytes.size()));
  Append(&con, upd_bytes);
  Append(&con, "__commits/__4_4_" + kUuid + "_22.wrt\n");
  return con;
}

TEST(ParseConsolidatedCommits, ConditionsCarryTheirBytes) {
  // Condition bytes may contain newlines and NULs: they are length-prefixed.
  ByteVec del = {'\n', 0, 1, 2, '\n', 'x'};
  ByteVec upd = {9, 8, '\n'};
  ByteVec con = SyntheticCon(del, upd);
  auto r = ParseConsolidatedCommits(con, 1000);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[1].name.extension, ".del");
  EXPECT_EQ((*r)[1].condition, del);
  uint64_t first_line = ("__commits/__1_1_" + kUuid + "_22.wrt\n").size();
  uint64_t second_line = ("__commits/__2_2_" + kUuid + "_22.del\n").size();
  EXPECT_EQ((*r)[1].condition_offset, 1000 + first_line + second_line + 8);
  EXPECT_EQ((*r)[2].name.extension, ".upd");
  EXPECT_EQ((*r)[2].condition, upd);
  EXPECT_EQ((*r)[3].name.t1, 4u);
  EXPECT_TRUE((*r)[3].condition.empty());

  // An empty condition is representable.
  auto e = ParseConsolidatedCommits(SyntheticCon({}, {}));
  ASSERT_TRUE(e.ok());
  EXPECT_TRUE((*e)[1].condition.empty());
}

TEST(ParseConsolidatedCommits, EveryTruncationPrefixRejectedOrShorter) {
  ByteVec con = SyntheticCon({'a', 'b', 'c'}, {'d'});
  auto full = ParseConsolidatedCommits(con);
  ASSERT_TRUE(full.ok());
  for (size_t n = 0; n < con.size(); ++n) {
    auto r = ParseConsolidatedCommits(Bytes(con.data(), n));
    if (r.ok()) {
      // Only cuts at an entry boundary (or inside the last entry's newline-less
      // final line, which names a shorter file) parse.
      ASSERT_LE(r->size(), full->size());
      for (size_t i = 0; i + 1 < r->size(); ++i) EXPECT_EQ((*r)[i].path, (*full)[i].path);
    } else {
      EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt) << n;
      EXPECT_NE(r.error().message().find("offset "), std::string::npos);
    }
  }
  // Cut inside the condition bytes: the declared size exceeds what is left.
  uint64_t cut = con.size() - ("__commits/__4_4_" + kUuid + "_22.wrt\n").size() - 1;
  auto r = ParseConsolidatedCommits(Bytes(con.data(), cut));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message().find("condition: need 1 bytes, 0 left"), std::string::npos)
      << r.error().message();
}

TEST(ParseConsolidatedCommits, OversizedConditionAllocatesNothing) {
  ByteVec con;
  Append(&con, "__commits/__2_2_" + kUuid + "_22.del\n");
  Append(&con, Bytes8(~uint64_t{0} - 3));
  Append(&con, "abc");
  auto r = ParseConsolidatedCommits(con);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(r.error().message().find("consolidated commits: condition: need 18446744073709551612"),
            std::string::npos)
      << r.error().message();
}

TEST(ParseConsolidatedCommits, UnknownCommitKind) {
  auto r = ParseConsolidatedCommits(
      AsBytes("__commits/__1_1_" + kUuid + "_22.wrt\n__commits/__2_2_" + kUuid + "_22.vac\n"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(r.error().message().find("is not a .wrt, .ok, .del or .upd commit"), std::string::npos);
  uint64_t second = ("__commits/__1_1_" + kUuid + "_22.wrt\n").size();
  EXPECT_NE(r.error().message().find("offset " + std::to_string(second)), std::string::npos)
      << r.error().message();
}

TEST(ParseConsolidatedCommits, MalformedEntries) {
  for (std::string bad :
       {std::string("\n"), std::string("__commits/nope.wrt\n"),
        std::string("__commits/__2_2_") + kUuid + "_22.del",  // no newline
        std::string("__commits/__2_2_") + kUuid + "_22.del\n\x01\x02", std::string("a/..\n")}) {
    auto r = ParseConsolidatedCommits(AsBytes(bad));
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt) << bad;
    EXPECT_NE(r.error().message().find("consolidated commits"), std::string::npos)
        << r.error().message();
  }
  auto quoted = ParseConsolidatedCommits(AsBytes("__commits/nope.wrt\n"));
  EXPECT_NE(quoted.error().message().find("\"nope.wrt\""), std::string::npos);
}

TEST(ParseConsolidatedCommits, LegacyOkEntries) {
  auto r = ParseConsolidatedCommits(AsBytes("__1_1_" + kUuid + "_10.ok\n"));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ((*r)[0].path, "__1_1_" + kUuid + "_10.ok");
  EXPECT_EQ((*r)[0].name.extension, ".ok");
}

}  // namespace
}  // namespace tiledbfs::core::commit_files_test
