#include "fusefs/fuse/kernel_cache.h"

#include <gtest/gtest.h>

namespace tiledbfs::fusefs {
namespace {

TEST(KernelCache, FirstOpenOwnsThePagesAndFixesAStaleSize) {
  KernelCache c;
  EXPECT_EQ(c.ReportSize(7, 100), 100u);  // a lookup gave the kernel 100
  auto m = c.Open(7, /*snapshot=*/1, /*size=*/100);
  EXPECT_TRUE(m.pages);
  EXPECT_FALSE(m.direct_io);
  EXPECT_FALSE(m.keep_cache);  // nothing known of the pages yet
  EXPECT_TRUE(m.invalidate_size);
  c.Release(7, m.pages);
  // A commit: the kernel still holds 100, the new snapshot has 120 bytes.
  m = c.Open(7, 2, 120);
  EXPECT_TRUE(m.pages);
  EXPECT_FALSE(m.direct_io);
  EXPECT_FALSE(m.keep_cache);
  EXPECT_TRUE(m.invalidate_size);
  EXPECT_EQ(c.ReportSize(7, 100), 120u);  // a lookup that saw the old state
  c.Release(7, m.pages);
  // The same snapshot again: its pages are kept.
  m = c.Open(7, 2, 120);
  EXPECT_TRUE(m.keep_cache);
  c.Release(7, m.pages);
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
  c.Release(9, a.pages);
  c.Release(9, b.pages);
}

TEST(KernelCache, AnotherSnapshotWhileOneIsOpenReadsDirect) {
  KernelCache c;
  auto a = c.Open(3, 1, 100);
  auto b = c.Open(3, 1, 100);
  EXPECT_TRUE(b.pages);
  EXPECT_TRUE(b.keep_cache);  // shares a's pages
  auto d = c.Open(3, 2, 50);
  EXPECT_FALSE(d.pages);
  EXPECT_TRUE(d.direct_io);
  // While snapshot 1 is open the kernel keeps its size, whatever is current.
  EXPECT_EQ(c.ReportSize(3, 50), 100u);
  c.Release(3, a.pages);
  EXPECT_EQ(c.ReportSize(3, 50), 100u);
  c.Release(3, b.pages);
  c.Release(3, d.pages);
  EXPECT_EQ(c.ReportSize(3, 50), 50u);
  // Now snapshot 2 can own the pages; snapshot 1's pages must go.
  auto e = c.Open(3, 2, 50);
  EXPECT_TRUE(e.pages);
  EXPECT_FALSE(e.keep_cache);
  EXPECT_TRUE(e.invalidate_size);
  c.Release(3, e.pages);
}

TEST(KernelCache, UnknownSnapshotsAreNeverShared) {
  KernelCache c;
  auto a = c.Open(5, 0, 10);
  EXPECT_TRUE(a.pages);
  EXPECT_FALSE(a.keep_cache);
  EXPECT_FALSE(c.Open(5, 0, 10).pages);
  c.Release(5, a.pages);
  auto b = c.Open(5, 0, 10);
  EXPECT_TRUE(b.pages);
  EXPECT_FALSE(b.keep_cache);
  c.Release(5, b.pages);
}

TEST(KernelCache, StreamingFirstOpenOfEachSnapshotReadsDirectAndHoldsThePages) {
  KernelCache c;
  c.set_stream_first(true);
  auto a = c.Open(4, 1, 100);
  EXPECT_TRUE(a.direct_io);  // read once: no page cache
  EXPECT_TRUE(a.pages);      // a mapping of it fills the pages, with its snapshot
  EXPECT_FALSE(a.keep_cache);
  EXPECT_TRUE(a.invalidate_size);
  // The next open of the same snapshot, while a is open or after it closed,
  // reads through the page cache and keeps it.
  auto b = c.Open(4, 1, 100);
  EXPECT_FALSE(b.direct_io);
  EXPECT_TRUE(b.keep_cache);
  EXPECT_FALSE(b.invalidate_size);
  c.Release(4, a.pages);
  c.Release(4, b.pages);
  auto d = c.Open(4, 1, 100);
  EXPECT_FALSE(d.direct_io);
  EXPECT_TRUE(d.keep_cache);
  EXPECT_TRUE(d.invalidate_size);
  // Another snapshot while d is open: direct, holding nothing, as without
  // streaming.
  auto e = c.Open(4, 2, 120);
  EXPECT_TRUE(e.direct_io);
  EXPECT_FALSE(e.pages);
  EXPECT_EQ(c.ReportSize(4, 120), 100u);
  c.Release(4, e.pages);
  c.Release(4, d.pages);
  // Snapshot 2 once nothing holds snapshot 1: its first open streams again.
  auto f = c.Open(4, 2, 120);
  EXPECT_TRUE(f.direct_io);
  EXPECT_TRUE(f.pages);
  EXPECT_FALSE(f.keep_cache);
  c.Release(4, f.pages);
  EXPECT_FALSE(c.Open(4, 2, 120).direct_io);
}

TEST(KernelCache, StreamingUnknownSnapshotsAlwaysReadDirect) {
  KernelCache c;
  c.set_stream_first(true);
  for (int i = 0; i < 3; ++i) {
    auto a = c.Open(6, 0, 10);
    EXPECT_TRUE(a.direct_io);
    EXPECT_TRUE(a.pages);
    EXPECT_FALSE(a.keep_cache);
    c.Release(6, a.pages);
  }
}

// data.parquet: DuckDB opens it once per thread; through the page cache
// the kernel's readahead past a column chunk rendered the next column.
TEST(KernelCache, StreamingFilesReadAtRandomReadDirectOnEveryOpen) {
  KernelCache c;
  c.set_stream_first(true);
  auto a = c.Open(7, 1, 100, /*random=*/true);
  auto b = c.Open(7, 1, 100, /*random=*/true);
  EXPECT_TRUE(a.direct_io);
  EXPECT_TRUE(b.direct_io);
  EXPECT_TRUE(b.pages);       // a mapping still fills the pages,
  EXPECT_TRUE(b.keep_cache);  // which the opens of this snapshot share
  c.Release(7, a.pages);
  c.Release(7, b.pages);
  EXPECT_TRUE(c.Open(7, 1, 100, /*random=*/true).direct_io);
}

TEST(KernelCache, WithoutStreamingFilesReadAtRandomUseThePages) {
  KernelCache c;  // the kernel cannot map direct_io files
  auto a = c.Open(8, 1, 100, /*random=*/true);
  EXPECT_FALSE(a.direct_io);
  EXPECT_TRUE(a.pages);
}

TEST(KernelCache, DropKeepsInodesWithOpenFiles) {
  KernelCache c;
  auto a = c.Open(1, 1, 10);
  auto b = c.Open(2, 1, 5);
  c.Release(2, b.pages);
  EXPECT_EQ(c.ReportSize(3, 7), 7u);  // sizes reported keep no state
  EXPECT_EQ(c.size(), 2u);
  c.Drop(1);
  c.Drop(2);
  EXPECT_EQ(c.size(), 1u);
  c.Release(1, a.pages);
  c.Drop(1);
  EXPECT_EQ(c.size(), 0u);
  c.Release(1, true);  // unknown now: ignored
}

}  // namespace
}  // namespace tiledbfs::fusefs
