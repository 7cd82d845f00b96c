// Tree::Refresh and snapshot ids on a copy of a corpus array changed under
// the tree: a commit after the newest instant leaves past views (and their
// snapshot ids) alone; removing a commit or adding a vacuum file rewrites
// the past, so the count grows and the ids of immutable files change.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "fusefs/model/tree.h"

namespace tiledbfs::fusefs {
namespace {

namespace fs = std::filesystem;

const fs::path kArray = fs::path(TILEDBFS_TEST_DATA) / "corpus" / "arrays" / "dense_2d_fragments";
// Its three commits, at 1700000001000, ...2000 and ...3000.
const char* kCommit3 = "__1700000003000_1700000003000_6cbf6fd57ffe990cdcee085e4f3c5dec_22.wrt";
const char* kCommit1 = "__1700000001000_1700000001000_177ded6435bb456551c05c49ecb31421_22.wrt";

class RefreshTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tiledbfs_refresh_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::copy(kArray, dir_, fs::copy_options::recursive);
    // Hold the newest commit back: the array as of 1700000002000.
    fs::rename(dir_ / "__commits" / kCommit3, dir_ / kCommit3);
    auto tree = OpenTree(dir_.string(), TreeOptions{});
    ASSERT_TRUE(tree.ok()) << tree.error().ToString();
    tree_ = std::move(tree).value();
  }
  void TearDown() override { fs::remove_all(dir_); }

  uint64_t SnapshotOf(const std::string& path) {
    auto f = tree_->Open(path);
    EXPECT_TRUE(f.ok()) << path << ": " << (f.ok() ? "" : f.error().ToString());
    return f.ok() ? (*f)->snapshot_id : 0;
  }
  bool Immutable(const std::string& path) {
    auto a = tree_->GetAttr(path);
    EXPECT_TRUE(a.ok()) << path;
    return a.ok() && a->immutable;
  }
  uint64_t Epoch() {
    auto e = tree_->Refresh();
    EXPECT_TRUE(e.ok()) << e.error().ToString();
    return e.ok() ? *e : UINT64_MAX;
  }

  fs::path dir_;
  std::unique_ptr<Tree> tree_;
};

constexpr const char* kPast = "history/1700000001000/data.csv";
constexpr const char* kNewest = "history/1700000002000/data.csv";
constexpr const char* kFuture = "history/1700000003000/data.csv";

TEST_F(RefreshTest, AnAppendLeavesThePastAlone) {
  const uint64_t epoch = Epoch();
  EXPECT_TRUE(Immutable(kPast));
  EXPECT_TRUE(Immutable(kNewest));
  EXPECT_FALSE(Immutable(kFuture));  // the next commit may land before it
  EXPECT_FALSE(Immutable("data.csv"));
  const uint64_t past = SnapshotOf(kPast), newest = SnapshotOf(kNewest);
  const uint64_t root = SnapshotOf("data.csv"), future = SnapshotOf(kFuture);
  EXPECT_NE(past, 0u);
  EXPECT_EQ(SnapshotOf("data.csv"), root);  // nothing changed: same bytes

  fs::rename(dir_ / kCommit3, dir_ / "__commits" / kCommit3);
  EXPECT_EQ(Epoch(), epoch);
  EXPECT_EQ(SnapshotOf(kPast), past);
  EXPECT_EQ(SnapshotOf(kNewest), newest);
  EXPECT_NE(SnapshotOf("data.csv"), root);
  EXPECT_NE(SnapshotOf(kFuture), future);
  EXPECT_TRUE(Immutable(kFuture));
}

TEST_F(RefreshTest, ARemovedCommitRewritesThePast) {
  const uint64_t epoch = Epoch();
  const uint64_t past = SnapshotOf(kPast);
  const uint64_t fragment_files = SnapshotOf("history/1700000002000/schema.json");
  fs::remove(dir_ / "__commits" / kCommit1);
  EXPECT_GT(Epoch(), epoch);
  EXPECT_NE(SnapshotOf(kPast), past);
  EXPECT_NE(SnapshotOf("history/1700000002000/schema.json"), fragment_files);
}

TEST_F(RefreshTest, AWriteAtAnOldTimestampRewritesThePast) {
  const uint64_t epoch = Epoch();
  // The held-back commit, renamed to an instant before the newest one.
  const std::string old_name = "__1700000001500_1700000001500_6cbf6fd57ffe990cdcee085e4f3c5dec_22";
  const std::string name3 = std::string(kCommit3).substr(0, std::string(kCommit3).size() - 4);
  fs::rename(dir_ / "__fragments" / name3, dir_ / "__fragments" / old_name);
  fs::rename(dir_ / kCommit3, dir_ / "__commits" / (old_name + ".wrt"));
  EXPECT_GT(Epoch(), epoch);
}

TEST_F(RefreshTest, AVacuumFileRewritesThePast) {
  const uint64_t epoch = Epoch();
  {
    std::ofstream vac(dir_ / "__commits" /
                      "__1700000001000_1700000002000_00000000000000000000000000000000_22.vac");
    vac << "__fragments/__1700000001000_1700000001000_177ded6435bb456551c05c49ecb31421_22\n";
  }
  EXPECT_GT(Epoch(), epoch);
}

TEST_F(RefreshTest, APinnedTreeNeverRechecks) {
  TreeOptions pinned;
  pinned.timestamp_ms = 1700000001000;
  auto tree = OpenTree(dir_.string(), pinned);
  ASSERT_TRUE(tree.ok());
  auto e0 = (*tree)->Refresh();
  fs::remove(dir_ / "__commits" / kCommit1);
  auto e1 = (*tree)->Refresh();
  ASSERT_TRUE(e0.ok() && e1.ok());
  EXPECT_EQ(*e0, *e1);
  auto a = (*tree)->GetAttr("data.csv");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->immutable);
}

// A consolidation and its vacuum between two looks at the array: the array
// as last opened names fragments that are gone. A lookup of a root file not
// sized yet must find it (through the consolidated fragment), not answer
// "no such file", which the kernel would cache as a negative entry.
TEST(RefreshVacuumTest, ALookupAfterAConsolidationAndVacuumFindsRootFiles) {
  const fs::path src = fs::path(TILEDBFS_TEST_DATA) / "corpus" / "arrays" / "consolidated";
  const fs::path dir =
      fs::temp_directory_path() / ("tiledbfs_refresh_vacuum_" + std::to_string(::getpid()));
  const fs::path held = dir.string() + ".held";
  fs::remove_all(dir);
  fs::remove_all(held);
  fs::copy(src, dir, fs::copy_options::recursive);
  fs::create_directories(held);
  // The array before its consolidation: the four fragments alone.
  const std::string merged = "__1700000001000_1700000004000_0948f41347d413d468b3fcd654df05d8_22";
  for (const char* ext : {".wrt", ".vac"}) {
    fs::rename(dir / "__commits" / (merged + ext), held / (merged + ext));
  }
  fs::rename(dir / "__fragments" / merged, held / merged);
  auto tree = OpenTree(dir.string(), TreeOptions{});
  ASSERT_TRUE(tree.ok()) << tree.error().ToString();
  // The root view is open (its footers read), no tile yet.
  auto before = (*tree)->GetAttr("schema.json");
  ASSERT_TRUE(before.ok()) << before.error().ToString();

  // Consolidated, then vacuumed: only the merged fragment is left.
  fs::rename(held / merged, dir / "__fragments" / merged);
  fs::rename(held / (merged + ".wrt"), dir / "__commits" / (merged + ".wrt"));
  for (const auto& e : fs::directory_iterator(dir / "__fragments")) {
    if (e.path().filename() != merged) fs::remove_all(e.path());
  }
  for (const auto& e : fs::directory_iterator(dir / "__commits")) {
    if (e.path().filename() != merged + ".wrt") fs::remove(e.path());
  }
  for (const char* path : {"attributes/a.txt", "attributes/s.txt", "data.csv"}) {
    auto a = (*tree)->GetAttr(path);
    EXPECT_TRUE(a.ok()) << path << ": " << (a.ok() ? "" : a.error().ToString());
  }
  fs::remove_all(dir);
  fs::remove_all(held);
}

}  // namespace
}  // namespace tiledbfs::fusefs
