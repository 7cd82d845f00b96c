#include "fusefs/fuse/inode_table.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

namespace tiledbfs::fusefs {
namespace {

TEST(InodeTable, RootIsOneAndPermanent) {
  InodeTable t;
  ASSERT_TRUE(t.Get(InodeTable::kRootIno));
  EXPECT_EQ(t.Get(1)->path, "");
  t.Forget(1, 100);
  EXPECT_TRUE(t.Get(1));
  EXPECT_EQ(t.Lookup("", false), 1u);
  EXPECT_FALSE(t.Get(0));
}

TEST(InodeTable, LookupCountsAndForget) {
  InodeTable t;
  const uint64_t a = t.Lookup("attributes/a.bin", false);
  EXPECT_GT(a, 1u);
  EXPECT_EQ(t.Lookup("attributes/a.bin", true), a);
  EXPECT_TRUE(t.Get(a)->immutable);
  EXPECT_EQ(t.size(), 2u);
  t.Forget(a, 1);
  ASSERT_TRUE(t.Get(a));
  EXPECT_EQ(t.Get(a)->path, "attributes/a.bin");
  t.Forget(a, 1);
  EXPECT_FALSE(t.Get(a));
  EXPECT_EQ(t.size(), 1u);
  // Forgetting more than held, or an unknown number, is harmless.
  t.Forget(a, 5);
  t.Forget(12345, 1);
  EXPECT_EQ(t.size(), 1u);
}

TEST(InodeTable, NumbersAreStableAcrossForgetAndTables) {
  InodeTable t1, t2;
  const uint64_t a = t1.Lookup("history/2023-11-14T22:13:20.000Z/data.csv", false);
  t1.Forget(a, 1);
  EXPECT_EQ(t1.Peek("history/2023-11-14T22:13:20.000Z/data.csv"), a);
  EXPECT_EQ(t1.Lookup("history/2023-11-14T22:13:20.000Z/data.csv", false), a);
  EXPECT_EQ(t2.Lookup("history/2023-11-14T22:13:20.000Z/data.csv", false), a);
}

TEST(InodeTable, PeekMatchesLookupAndDoesNotCount) {
  InodeTable t;
  const uint64_t p = t.Peek("x");
  EXPECT_EQ(t.size(), 1u);
  EXPECT_EQ(t.Lookup("x", false), p);
}

TEST(InodeTable, DistinctPathsDistinctNumbers) {
  InodeTable t;
  std::set<uint64_t> seen;
  for (int i = 0; i < 10000; ++i) {
    const uint64_t ino = t.Lookup("many/f" + std::to_string(i), false);
    EXPECT_GT(ino, 1u);
    EXPECT_TRUE(seen.insert(ino).second);
  }
}

uint64_t Collide(std::string_view) { return 7; }
uint64_t CollideWithReserved(std::string_view path) { return path == "a" ? 0 : 1; }

TEST(InodeTable, CollisionsProbeToAFreeNumber) {
  InodeTable t(&Collide);
  const uint64_t a = t.Lookup("a", false);
  const uint64_t b = t.Lookup("b", false);
  const uint64_t c = t.Lookup("c", false);
  EXPECT_EQ(a, 7u);
  EXPECT_EQ(b, 8u);
  EXPECT_EQ(c, 9u);
  EXPECT_EQ(t.Get(b)->path, "b");
  EXPECT_EQ(t.Peek("d"), 10u);
  // While b is held it keeps its number, even when a goes and comes back.
  t.Forget(a, 1);
  EXPECT_EQ(t.Lookup("b", false), b);
  EXPECT_EQ(t.Lookup("a", false), 7u);
}

TEST(InodeTable, NeverHandsOutZeroOrRoot) {
  InodeTable t(&CollideWithReserved);
  EXPECT_EQ(t.Lookup("a", false), 2u);
  EXPECT_EQ(t.Lookup("b", false), 3u);
}

TEST(InodeTable, ConcurrentLookupsAndForgets) {
  InodeTable t;
  std::vector<std::thread> threads;
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&t] {
      for (int i = 0; i < 2000; ++i) {
        const std::string p = "d/" + std::to_string(i % 97);
        const uint64_t ino = t.Lookup(p, false);
        EXPECT_EQ(t.Get(ino)->path, p);
        t.Forget(ino, 1);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(t.size(), 1u);
}

TEST(InodeTable, ChildFormsMatchWholePaths) {
  InodeTable t;
  EXPECT_EQ(t.PeekChild("", "fragments"), t.Peek("fragments"));
  EXPECT_EQ(t.PeekChild("history/2023-11-14T22:13:20.000Z", "data.csv"),
            t.Peek("history/2023-11-14T22:13:20.000Z/data.csv"));
  EXPECT_EQ(InodeTable::HashPath("a/b"), t.PeekChild("a", "b"));
  const uint64_t a = t.LookupChild("fragments", "f1", true);
  EXPECT_EQ(t.Get(a)->path, "fragments/f1");
  EXPECT_TRUE(t.Get(a)->immutable);
  EXPECT_EQ(t.Lookup("fragments/f1", false), a);  // the same node, counted twice
  t.Forget(a, 1);
  ASSERT_TRUE(t.Get(a));
  t.Forget(a, 1);
  EXPECT_FALSE(t.Get(a));
  // A path equal in length and hash bucket but not in bytes is another node.
  EXPECT_NE(t.LookupChild("fragments", "f2", false), t.LookupChild("fragmentx", "f2", false));
}

TEST(InodeTable, ChildFormsWithCollisions) {
  InodeTable t(&Collide);
  EXPECT_EQ(t.LookupChild("d", "a", false), 7u);
  EXPECT_EQ(t.LookupChild("d", "b", false), 8u);  // displaced
  EXPECT_EQ(t.PeekChild("d", "b"), 8u);
  EXPECT_EQ(t.Peek("d/b"), 8u);
  EXPECT_EQ(t.PeekChild("d", "c"), 9u);
  EXPECT_EQ(t.Get(8)->path, "d/b");
  // d/b keeps 8 after d/a goes; d/a comes back home; then d/b goes and its
  // number is free again.
  t.Forget(7, 1);
  EXPECT_EQ(t.PeekChild("d", "b"), 8u);
  EXPECT_EQ(t.LookupChild("d", "a", false), 7u);
  t.Forget(8, 1);
  EXPECT_FALSE(t.Get(8));
  EXPECT_EQ(t.PeekChild("d", "c"), 8u);
  EXPECT_EQ(t.Lookup("d/c", false), 8u);
  EXPECT_EQ(t.size(), 3u);
}

TEST(InodeTable, RootByChildParts) {
  InodeTable t;
  EXPECT_EQ(t.Peek(""), InodeTable::kRootIno);
  EXPECT_EQ(t.Lookup("", true), InodeTable::kRootIno);
  EXPECT_EQ(t.size(), 1u);
}

TEST(Paths, ChildAndParent) {
  EXPECT_EQ(ChildPath("", "a"), "a");
  EXPECT_EQ(ChildPath("a/b", "c"), "a/b/c");
  EXPECT_EQ(ParentPath("a/b/c"), "a/b");
  EXPECT_EQ(ParentPath("a"), "");
  EXPECT_EQ(ParentPath(""), "");
}

}  // namespace
}  // namespace tiledbfs::fusefs
