// Array::Changed: a new commit, a vacuum or a metadata file is seen on the
// next check, whether the folders' modification times let it skip the full
// listing (settled stamps) or not (recent stamps).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/array/array.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

class ArrayChangedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tiledbfs_changed_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::copy(fs::path(TILEDBFS_TEST_DATA) / "corpus/arrays/dense_2d_fragments", dir_,
             fs::copy_options::recursive);
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Sets the modification time of the array folder and of its "__" folders
  // an hour back, so that their stamps count as settled.
  void AgeFolders() {
    std::vector<fs::path> dirs = {dir_};
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.is_directory()) dirs.push_back(e.path());
    }
    for (const auto& d : dirs) {
      fs::last_write_time(d, fs::file_time_type::clock::now() - std::chrono::hours(1));
    }
  }

  std::shared_ptr<Array> Open() {
    auto storage = LocalStorage::Open(dir_.string());
    EXPECT_TRUE(storage.ok());
    auto a = Array::Open(*storage, std::nullopt, DefaultLimits());
    EXPECT_TRUE(a.ok()) << a.error().message();
    return *a;
  }

  // Drops the newest commit file (the fragment stops being committed).
  void RemoveOneCommit() {
    std::vector<fs::path> commits;
    for (const auto& e : fs::directory_iterator(dir_ / "__commits")) commits.push_back(e.path());
    ASSERT_FALSE(commits.empty());
    std::sort(commits.begin(), commits.end());
    fs::remove(commits.back());
  }

  fs::path dir_;
};

TEST_F(ArrayChangedTest, UnchangedArrayIsNotChangedWithSettledOrRecentStamps) {
  auto recent = Open();
  EXPECT_FALSE(recent->Changed());
  EXPECT_FALSE(recent->Changed());
  AgeFolders();
  auto settled = Open();
  EXPECT_FALSE(settled->Changed());
  EXPECT_FALSE(settled->Changed());
}

TEST_F(ArrayChangedTest, RemovedCommitIsSeenAfterSettledStamps) {
  AgeFolders();
  auto a = Open();
  EXPECT_FALSE(a->Changed());
  RemoveOneCommit();
  EXPECT_TRUE(a->Changed());
}

TEST_F(ArrayChangedTest, NewMetadataFileIsSeenAfterSettledStamps) {
  AgeFolders();
  auto a = Open();
  ASSERT_FALSE(a->Changed());
  // A metadata file in a folder that did not exist: the array folder's
  // own time changes.
  fs::create_directories(dir_ / "__meta");
  std::ofstream(dir_ / "__meta" / "__1_1_0123456789abcdef0123456789abcdef") << "x";
  EXPECT_TRUE(a->Changed());
}

TEST_F(ArrayChangedTest, RecentStampsAlwaysList) {
  // Stamps taken within the settle window: a change keeping the same
  // modification time (same clock tick) must still be seen, so the
  // listing is compared every time.
  auto a = Open();
  struct stat before;
  ASSERT_EQ(::stat((dir_ / "__commits").c_str(), &before), 0);
  RemoveOneCommit();
  // Put the folder's time back as it was: only the listing can tell.
  struct timespec times[2] = {before.st_atim, before.st_mtim};
  ASSERT_EQ(::utimensat(AT_FDCWD, (dir_ / "__commits").c_str(), times, 0), 0);
  EXPECT_TRUE(a->Changed());
}

}  // namespace
}  // namespace tiledbfs::core
