// PlanGets: which ranged reads share a GET, and how a batch is cut for
// parallel GETs.
#include "core/storage/s3/coalesce.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tiledbfs::core::s3 {
namespace {

constexpr uint64_t kKiB = 1024;
constexpr uint64_t kMiB = 1024 * kKiB;

// Every request is served by exactly one GET that holds its range.
void ExpectCovers(std::span<const ReadRequest> requests, const std::vector<PlannedGet>& gets) {
  std::vector<int> seen(requests.size(), 0);
  for (const PlannedGet& g : gets) {
    for (size_t i : g.members) {
      ASSERT_LT(i, requests.size());
      ++seen[i];
      EXPECT_EQ(g.path, requests[i].path);
      EXPECT_LE(g.begin, requests[i].offset);
      EXPECT_LE(requests[i].offset + requests[i].n, g.end);
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i], 1) << "request " << i;
}

TEST(PlanGetsTest, AdjacentRangesShareOneGet) {
  std::vector<ReadRequest> r = {{"a", 100, 50}, {"a", 0, 100}, {"a", 150, 10}};
  CoalesceOptions o;
  auto gets = PlanGets(r, o, nullptr);
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0].begin, 0u);
  EXPECT_EQ(gets[0].end, 160u);
  ExpectCovers(r, gets);
}

TEST(PlanGetsTest, SmallGapsAreReadThroughLargeOnesAreNot) {
  CoalesceOptions o;
  o.gap = 10;
  std::vector<ReadRequest> r = {{"a", 0, 100}, {"a", 110, 10}, {"a", 131, 5}};
  auto gets = PlanGets(r, o, nullptr);
  ASSERT_EQ(gets.size(), 2u);
  EXPECT_EQ(gets[0].end, 120u);    // the gap of 10 read through
  EXPECT_EQ(gets[1].begin, 131u);  // the gap of 11 not
  ExpectCovers(r, gets);
}

TEST(PlanGetsTest, FilesNeverShareAGet) {
  std::vector<ReadRequest> r = {{"b", 0, 10}, {"a", 10, 10}, {"a", 0, 10}, {"b", 10, 10}};
  auto gets = PlanGets(r, CoalesceOptions{}, nullptr);
  ASSERT_EQ(gets.size(), 2u);
  EXPECT_EQ(gets[0].path, "a");
  EXPECT_EQ(gets[1].path, "b");
  ExpectCovers(r, gets);
}

TEST(PlanGetsTest, ABigBatchIsCutForParallelGets) {
  // 32 adjacent tiles of 700 KiB: 16 GETs at once take about 1.4 MiB each.
  std::vector<ReadRequest> r;
  for (uint64_t t = 0; t < 32; ++t) r.push_back({"a0.tdb", t * 700 * kKiB, 700 * kKiB});
  CoalesceOptions o;
  o.parallel = 16;
  auto gets = PlanGets(r, o, nullptr);
  EXPECT_EQ(gets.size(), 16u);
  for (const PlannedGet& g : gets) EXPECT_EQ(g.members.size(), 2u);
  ExpectCovers(r, gets);
  // One at a time: one GET up to max_bytes.
  o.parallel = 1;
  o.max_bytes = 16 * kMiB;
  gets = PlanGets(r, o, nullptr);
  EXPECT_EQ(gets.size(), 2u);  // 22400 KiB in GETs of at most 16 MiB
  for (const PlannedGet& g : gets) EXPECT_LE(g.end - g.begin, 16 * kMiB);
  ExpectCovers(r, gets);
}

TEST(PlanGetsTest, NoGetIsCutBelowMinBytes) {
  // 13 tiles of 80 KB: 1 MB over 16 GETs would be 65 KB each; at least 256 KiB.
  std::vector<ReadRequest> r;
  for (uint64_t t = 0; t < 13; ++t) r.push_back({"a", t * 80000, 80000});
  auto gets = PlanGets(r, CoalesceOptions{}, nullptr);
  EXPECT_EQ(gets.size(), 5u);  // 3 tiles (240000 bytes) per GET, 1 left
  for (const PlannedGet& g : gets) EXPECT_LE(g.end - g.begin, 256 * kKiB);
  ExpectCovers(r, gets);
}

TEST(PlanGetsTest, ARangeLargerThanTheTargetIsOneGetOfItsOwn) {
  std::vector<ReadRequest> r = {{"a", 0, 10}, {"a", 10, 40 * kMiB}, {"a", 40 * kMiB + 10, 10}};
  auto gets = PlanGets(r, CoalesceOptions{}, nullptr);
  ASSERT_EQ(gets.size(), 3u);
  EXPECT_EQ(gets[1].end - gets[1].begin, 40 * kMiB);
  ExpectCovers(r, gets);
}

TEST(PlanGetsTest, OverlappingAndEmptyRequests) {
  std::vector<ReadRequest> r = {{"a", 0, 100}, {"a", 50, 100}, {"a", 50, 0}, {"a", 0, 100}};
  auto gets = PlanGets(r, CoalesceOptions{}, nullptr);
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0].end, 150u);
  ExpectCovers(r, gets);
}

TEST(PlanGetsTest, OverflowingRequestsAreSetAside) {
  std::vector<ReadRequest> r = {{"a", UINT64_MAX - 5, 10}, {"a", 0, 10}, {"a", UINT64_MAX, 1}};
  std::vector<size_t> overflowed;
  auto gets = PlanGets(r, CoalesceOptions{}, &overflowed);
  EXPECT_EQ(overflowed, (std::vector<size_t>{0, 2}));
  ASSERT_EQ(gets.size(), 1u);
  EXPECT_EQ(gets[0].members, (std::vector<size_t>{1}));
}

TEST(PlanGetsTest, HugeSizesDoNotOverflowTheTotal) {
  std::vector<ReadRequest> r = {
      {"a", 0, UINT64_MAX / 2}, {"b", 0, UINT64_MAX / 2 + 1}, {"c", 0, 1}};
  auto gets = PlanGets(r, CoalesceOptions{}, nullptr);
  EXPECT_EQ(gets.size(), 3u);
  ExpectCovers(r, gets);
}

}  // namespace
}  // namespace tiledbfs::core::s3
