#include "fusefs/fuse/kernel_cache.h"

#include <gtest/gtest.h>

namespace tiledbfs::fusefs {
namespace {

TEST(KernelCache, FirstOpenOwnsThePagesAndFixesAStaleSize) {
  KernelCache c;
  EXPECT_EQ(c.ReportSize(7, 100), 100u);  // a lookup gave the kernel 100
  auto m = c.Open(7, /*snapshot=*/1, /*size=*/100);
  EXPECT_TRUE(m.cached);
  EXPECT_FALSE(m.keep_cache);  // nothing known of the pages yet
  EXPECT_TRUE(m.invalidate_size);
  c.Release(7, m.cached);
  // A commit: the kernel still holds 100, the new snapshot has 120 bytes.
  m = c.Open(7, 2, 120);
  EXPECT_TRUE(m.cached);
  EXPECT_FALSE(m.keep_cache);
  EXPECT_TRUE(m.invalidate_size);
  EXPECT_EQ(c.ReportSize(7, 100), 120u);  // a lookup that saw the old state
  c.Release(7, m.cached);
  // The same snapshot again: its pages are kept.
  m = c.Open(7, 2, 120);
  EXPECT_TRUE(m.keep_cache);
  c.Release(7, m.cached);
}

// Two lookups race; the kernel keeps the one it got first (100, the state
// before a commit) and drops the later one (120) by its attr_version. So a
// size once given is no proof of what the kernel holds: the first open of
// the new snapshot must still have the kernel ask again, or it reads 100
// bytes of 120 until the attribute timeout.
TEST(KernelCache, EveryFirstOpenHasTheKernelAskForTheSizeAgain) {
  KernelCache c;
  EXPECT_EQ(c.ReportSize(9, 100), 100u);
  EXPECT_EQ(c.ReportSize(9, 120), 120u);
  auto a = c.Open(9, 2, 120);
  EXPECT_TRUE(a.invalidate_size);
  // Later opens of the same snapshot while it is held: the kernel already
  // asked, and every reply since gave 120.
  auto b = c.Open(9, 2, 120);
  EXPECT_TRUE(b.keep_cache);
  EXPECT_FALSE(b.invalidate_size);
  c.Release(9, a.cached);
  c.Release(9, b.cached);
}

TEST(KernelCache, AnotherSnapshotWhileOneIsOpenReadsDirect) {
  KernelCache c;
  auto a = c.Open(3, 1, 100);
  auto b = c.Open(3, 1, 100);
  EXPECT_TRUE(b.cached);
  EXPECT_TRUE(b.keep_cache);  // shares a's pages
  auto d = c.Open(3, 2, 50);
  EXPECT_FALSE(d.cached);
  // While snapshot 1 is open the kernel keeps its size, whatever is current.
  EXPECT_EQ(c.ReportSize(3, 50), 100u);
  c.Release(3, a.cached);
  EXPECT_EQ(c.ReportSize(3, 50), 100u);
  c.Release(3, b.cached);
  c.Release(3, d.cached);
  EXPECT_EQ(c.ReportSize(3, 50), 50u);
  // Now snapshot 2 can own the pages; snapshot 1's pages must go.
  auto e = c.Open(3, 2, 50);
  EXPECT_TRUE(e.cached);
  EXPECT_FALSE(e.keep_cache);
  EXPECT_TRUE(e.invalidate_size);
  c.Release(3, e.cached);
}

TEST(KernelCache, UnknownSnapshotsAreNeverShared) {
  KernelCache c;
  auto a = c.Open(5, 0, 10);
  EXPECT_TRUE(a.cached);
  EXPECT_FALSE(a.keep_cache);
  EXPECT_FALSE(c.Open(5, 0, 10).cached);
  c.Release(5, a.cached);
  auto b = c.Open(5, 0, 10);
  EXPECT_TRUE(b.cached);
  EXPECT_FALSE(b.keep_cache);
  c.Release(5, b.cached);
}

TEST(KernelCache, DropKeepsInodesWithOpenFiles) {
  KernelCache c;
  auto a = c.Open(1, 1, 10);
  auto b = c.Open(2, 1, 5);
  c.Release(2, b.cached);
  EXPECT_EQ(c.ReportSize(3, 7), 7u);  // sizes reported keep no state
  EXPECT_EQ(c.size(), 2u);
  c.Drop(1);
  c.Drop(2);
  EXPECT_EQ(c.size(), 1u);
  c.Release(1, a.cached);
  c.Drop(1);
  EXPECT_EQ(c.size(), 0u);
  c.Release(1, true);  // unknown now: ignored
}

}  // namespace
}  // namespace tiledbfs::fusefs
