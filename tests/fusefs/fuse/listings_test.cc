#include "fusefs/fuse/listings.h"

#include <gtest/gtest.h>

namespace tiledbfs::fusefs {
namespace {

Listings::Entries Names(std::initializer_list<const char*> names) {
  auto v = std::make_shared<std::vector<DirEntryAttr>>();
  for (const char* n : names) v->push_back({n, NodeAttr{}});
  return v;
}

TEST(Listings, OffsetsCarryTheListingAndThePosition) {
  const off_t o = Listings::Offset(5, 7);
  EXPECT_EQ(Listings::IdOf(o), 5u);
  EXPECT_EQ(Listings::PositionOf(o), 7u);
  // A handle's listing (id 0): the plain position, as before.
  EXPECT_EQ(Listings::Offset(0, 7), 7);
  // The largest id and position still make a positive offset.
  EXPECT_GT(Listings::Offset(0x7fffffff, Listings::kMaxPosition), 0);
}

TEST(Listings, EachListerKeepsItsOwnSnapshotUntilTheEnd) {
  Listings l;
  const uint64_t a = l.Add(/*ino=*/9, Names({"x", "y"}));
  const uint64_t b = l.Add(9, Names({"x", "y", "z"}));  // the folder grew
  EXPECT_NE(a, 0u);
  EXPECT_NE(a, b);
  ASSERT_NE(l.Find(9, a), nullptr);
  EXPECT_EQ(l.Find(9, a)->size(), 2u);
  EXPECT_EQ(l.Find(9, b)->size(), 3u);
  // An id of folder 9 offered for folder 10 (seekdir across folders).
  EXPECT_EQ(l.Find(10, a), nullptr);
  l.Done(a);
  EXPECT_EQ(l.Find(9, a), nullptr);
  EXPECT_NE(l.Find(9, b), nullptr);
  EXPECT_EQ(l.size(), 1u);
  l.Done(a);  // twice: nothing
  EXPECT_EQ(l.size(), 1u);
}

TEST(Listings, AbandonedListingsAreDroppedOldestFirst) {
  Listings l(/*max_listings=*/3, /*max_entries=*/100);
  std::vector<uint64_t> ids;
  for (int i = 0; i < 5; ++i) ids.push_back(l.Add(1, Names({"a"})));
  EXPECT_EQ(l.size(), 3u);
  EXPECT_EQ(l.Find(1, ids[0]), nullptr);
  EXPECT_EQ(l.Find(1, ids[1]), nullptr);
  for (int i = 2; i < 5; ++i) EXPECT_NE(l.Find(1, ids[i]), nullptr);
}

TEST(Listings, EntriesAreBoundedButTheNewestListingStays) {
  Listings l(/*max_listings=*/10, /*max_entries=*/4);
  const uint64_t a = l.Add(1, Names({"a", "b", "c"}));
  const uint64_t b = l.Add(2, Names({"a", "b"}));  // 5 entries: a goes
  EXPECT_EQ(l.Find(1, a), nullptr);
  EXPECT_NE(l.Find(2, b), nullptr);
  // Alone over the bound: kept, its lister is about to read it.
  const uint64_t c = l.Add(3, Names({"a", "b", "c", "d", "e", "f"}));
  EXPECT_EQ(l.Find(2, b), nullptr);
  ASSERT_NE(l.Find(3, c), nullptr);
  EXPECT_EQ(l.size(), 1u);
}

}  // namespace
}  // namespace tiledbfs::fusefs
