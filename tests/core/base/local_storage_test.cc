// LocalStorage's fast paths (issue 5, many small fragments): reads without
// an fstat first, ReadIfSmall (size and bytes from one open), ListKinds
// (no stat per file), each against the plain answers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/storage/storage.h"

namespace tiledbfs::core {
namespace {

namespace fs = std::filesystem;

class LocalStorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("tiledbfs_storage_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "sub" / "inner");
    Write("eight.bin", "01234567");
    Write("sub/big.bin", std::string(5000, 'x'));
    Write("sub/a.txt", "abc");
    fs::create_symlink("a.txt", dir_ / "sub" / "link");
    auto s = LocalStorage::Open(dir_.string());
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    storage_ = *s;
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& rel, const std::string& text) {
    std::ofstream(dir_ / rel, std::ios::binary) << text;
  }

  fs::path dir_;
  std::shared_ptr<LocalStorage> storage_;
};

TEST_F(LocalStorageTest, SmallReadsGiveTheBytes) {
  auto r = storage_->Read("eight.bin", 2, 3);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(std::string(r->begin(), r->end()), "234");
  auto whole = storage_->Read("eight.bin", 0, 8);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->size(), 8u);
  auto none = storage_->Read("eight.bin", 8, 0);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

TEST_F(LocalStorageTest, ReadsPastTheEndAreTruncatedWithTheFileSize) {
  // Short read (checked after reading), offset past the end, empty read
  // past the end, and a read too big to be made before checking.
  for (auto [offset, n] :
       {std::pair<uint64_t, uint64_t>{5, 10}, {9, 1}, {9, 0}, {0, uint64_t{1} << 40}}) {
    auto r = storage_->Read("eight.bin", offset, n);
    ASSERT_FALSE(r.ok()) << offset << "+" << n;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(
        r.error().message().find("eight.bin: truncated: wanted " + std::to_string(n) +
                                 " bytes at offset " + std::to_string(offset) + ", file has 8"),
        std::string::npos)
        << r.error().message();
  }
  auto missing = storage_->Read("nope.bin", 0, 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

TEST_F(LocalStorageTest, ReadIfSmallGivesBytesOnlyUpToTheLimit) {
  auto small = storage_->ReadIfSmall("eight.bin", 8);
  ASSERT_TRUE(small.ok()) << small.error().ToString();
  EXPECT_EQ(small->size, 8u);
  ASSERT_TRUE(small->bytes.has_value());
  EXPECT_EQ(std::string(small->bytes->begin(), small->bytes->end()), "01234567");

  auto big = storage_->ReadIfSmall("sub/big.bin", 4096);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(big->size, 5000u);
  EXPECT_FALSE(big->bytes.has_value());

  auto missing = storage_->ReadIfSmall("nope.bin", 4096);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
  auto folder = storage_->ReadIfSmall("sub", 4096);
  ASSERT_FALSE(folder.ok());
  EXPECT_EQ(folder.error().code(), ErrorCode::kInvalidArgument);

  // The generic version (Size then Read) agrees.
  MemoryStorage mem;
  mem.Put("f", ByteVec{1, 2, 3});
  auto m = mem.ReadIfSmall("f", 3);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->size, 3u);
  ASSERT_TRUE(m->bytes.has_value());
  EXPECT_EQ(*m->bytes, (ByteVec{1, 2, 3}));
  auto m2 = mem.ReadIfSmall("f", 2);
  ASSERT_TRUE(m2.ok());
  EXPECT_FALSE(m2->bytes.has_value());
}

TEST_F(LocalStorageTest, ListKindsGivesTheNamesAndKindsOfList) {
  auto full = storage_->List("sub");
  auto kinds = storage_->ListKinds("sub");
  ASSERT_TRUE(full.ok()) << full.error().ToString();
  ASSERT_TRUE(kinds.ok()) << kinds.error().ToString();
  ASSERT_EQ(full->size(), 4u);  // a.txt big.bin inner link
  ASSERT_EQ(kinds->size(), full->size());
  for (size_t i = 0; i < full->size(); ++i) {
    EXPECT_EQ((*kinds)[i].name, (*full)[i].name);
    EXPECT_EQ((*kinds)[i].is_dir, (*full)[i].is_dir) << (*full)[i].name;
  }
  EXPECT_EQ((*full)[0].name, "a.txt");
  EXPECT_EQ((*full)[0].size, 3u);
  EXPECT_EQ((*full)[1].size, 5000u);
  EXPECT_TRUE((*full)[2].is_dir);
  EXPECT_EQ((*full)[3].name, "link");
  EXPECT_EQ((*full)[3].size, 3u);   // followed
  EXPECT_EQ((*kinds)[3].size, 3u);  // a link is stat'ed either way
}

}  // namespace
}  // namespace tiledbfs::core
