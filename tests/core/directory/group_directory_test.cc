#include "core/directory/group_directory.h"

#include <gtest/gtest.h>

#include <string>

namespace tiledbfs::core::group_directory_test {
namespace {

const std::string kCorpus = std::string(TILEDBFS_TEST_DATA) + "/corpus/arrays/";
const std::string kU1 = "11111111111111111111111111111111";
const std::string kU2 = "22222222222222222222222222222222";
const std::string kU3 = "33333333333333333333333333333333";

std::shared_ptr<LocalStorage> Open(const std::string& rel) {
  auto s = LocalStorage::Open(kCorpus + rel);
  EXPECT_TRUE(s.ok()) << rel;
  return s.ok() ? *s : nullptr;
}

void Put(MemoryStorage* s, const std::string& path, const std::string& data = "") {
  s->Put(path, ByteVec(data.begin(), data.end()));
}

TEST(ListGroup, CorpusGroup) {
  auto g = ListGroup(*Open("group"), DefaultLimits());
  ASSERT_TRUE(g.ok()) << g.error().ToString();
  EXPECT_TRUE(g->has_group_file);
  ASSERT_EQ(g->detail_files.size(), 1u);
  EXPECT_EQ(g->detail_files[0].name,
            "__1700000005000_1700000005000_7b483456d9a820aeb187b36eceb92d2c_2");
  EXPECT_EQ(g->detail_files[0].version, 2u);
  ASSERT_EQ(g->metadata_files.size(), 2u);
  EXPECT_EQ(g->metadata_files[0].t1, 1700000005000u);
  EXPECT_EQ(g->metadata_files[1].t1, 1700000006000u);
  EXPECT_TRUE(g->detail_vacuums.empty());
  EXPECT_TRUE(g->metadata_vacuums.empty());

  auto sub = ListGroup(*Open("group/sub"), DefaultLimits());
  ASSERT_TRUE(sub.ok()) << sub.error().ToString();
  EXPECT_EQ(sub->detail_files.size(), 1u);
  EXPECT_EQ(sub->metadata_files.size(), 1u);
}

TEST(ListGroup, ArrayIsNotAGroup) {
  auto g = ListGroup(*Open("dense_1d"), DefaultLimits());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code(), ErrorCode::kNotFound);
  EXPECT_NE(g.error().message().find("not a group"), std::string::npos);
}

TEST(ListGroup, DetailsWithoutMarkerAndVacuumFiles) {
  MemoryStorage s;
  Put(&s, "__group/__2_2_" + kU1 + "_2", "d2");
  Put(&s, "__group/__1_1_" + kU2 + "_2", "d1");
  Put(&s, "__group/__1_2_" + kU3 + "_2.vac",
      "file:///g/__group/__1_1_" + kU2 + "_2\nfile:///g/__group/__2_2_" + kU1 + "_2\n");
  Put(&s, "__meta/__1_1_" + kU1, "m");
  Put(&s, "__meta/__1_1_" + kU2 + ".vac", "file:///data/g/__meta/__0_0_" + kU3 + "\n");
  Put(&s, "__meta/__5_5_" + kU3 + ".tmp", "partial");
  Put(&s, "member_array/__schema/__1_1_" + kU1, "s");
  auto g = ListGroup(s, DefaultLimits());
  ASSERT_TRUE(g.ok()) << g.error().ToString();
  EXPECT_FALSE(g->has_group_file);
  ASSERT_EQ(g->detail_files.size(), 2u);
  EXPECT_EQ(g->detail_files[0].uuid, kU2);
  ASSERT_EQ(g->detail_vacuums.size(), 1u);
  EXPECT_EQ(g->detail_vacuums[0].path, "__group/__1_2_" + kU3 + "_2.vac");
  EXPECT_EQ(
      g->detail_vacuums[0].entries,
      (std::vector<std::string>{"__group/__1_1_" + kU2 + "_2", "__group/__2_2_" + kU1 + "_2"}));
  ASSERT_EQ(g->metadata_files.size(), 1u);
  ASSERT_EQ(g->metadata_vacuums.size(), 1u);
  EXPECT_EQ(g->metadata_vacuums[0].entries, std::vector<std::string>{"__meta/__0_0_" + kU3});
}

TEST(ListGroup, MalformedNames) {
  MemoryStorage s;
  Put(&s, "__tiledb_group.tdb");
  Put(&s, "__group/details", "d");
  auto g = ListGroup(s, DefaultLimits());
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(g.error().message().find("__group/details: not a timestamped name \"details\""),
            std::string::npos)
      << g.error().message();

  MemoryStorage m;
  Put(&m, "__tiledb_group.tdb");
  Put(&m, "__meta/__1_1_" + kU1 + ".vac", "ok\n\n");
  auto mg = ListGroup(m, DefaultLimits());
  ASSERT_FALSE(mg.ok());
  EXPECT_NE(
      mg.error().message().find("__meta/__1_1_" + kU1 + ".vac: offset 3: URI list: empty line"),
      std::string::npos)
      << mg.error().message();
}

TEST(ListGroup, Limits) {
  MemoryStorage s;
  Put(&s, "__tiledb_group.tdb");
  for (int i = 1; i <= 3; ++i) Put(&s, "__meta/__" + std::to_string(i) + "_9_" + kU1, "m");
  Limits few;
  few.max_files = 2;
  auto g = ListGroup(s, few);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().code(), ErrorCode::kOutOfMemory);
}

}  // namespace
}  // namespace tiledbfs::core::group_directory_test
