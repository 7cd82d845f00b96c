// LocalStorage's fast paths (issue 5, many small fragments): reads without
// an fstat first, ReadIfSmall (size and bytes from one open), ListKinds
// (no stat per file), ReadMany (one io_uring for many files), each against
// the plain answers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "core/storage/storage.h"
#include "core/storage/uring_reader.h"

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

// ListTree: every file below a folder at any depth, links followed, with
// a version that a rewrite of the same size changes and a copy of the
// modification time keeps; a cap on entries; kNotFound for no folder.
TEST_F(LocalStorageTest, ListTreeGivesEveryFileBelowWithItsVersion) {
  Write("sub/inner/deep.bin", "12345");
  auto tree = storage_->ListTree("sub", 100);
  ASSERT_TRUE(tree.ok()) << tree.error().ToString();
  std::vector<std::string> names;
  for (const DirEntry& e : *tree) {
    names.push_back(e.name);
    EXPECT_FALSE(e.is_dir);
    EXPECT_FALSE(e.version.empty()) << e.name;
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a.txt", "big.bin", "inner/deep.bin", "link"}));
  EXPECT_EQ((*tree)[2].size, 5u);

  // Rewritten in place with other bytes of the same size, a second later.
  const auto before = fs::last_write_time(dir_ / "sub" / "inner" / "deep.bin");
  Write("sub/inner/deep.bin", "54321");
  fs::last_write_time(dir_ / "sub" / "inner" / "deep.bin", before + std::chrono::seconds(1));
  auto again = storage_->ListTree("sub", 100);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ((*again)[2].size, 5u);
  EXPECT_NE((*again)[2].version, (*tree)[2].version);
  EXPECT_EQ((*again)[0].version, (*tree)[0].version) << "a file left alone keeps it";
  fs::last_write_time(dir_ / "sub" / "inner" / "deep.bin", before);
  auto restamped = storage_->ListTree("sub", 100);
  ASSERT_TRUE(restamped.ok());
  EXPECT_EQ((*restamped)[2].version, (*tree)[2].version) << "the time is the version";

  auto capped = storage_->ListTree("sub", 3);
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.error().code(), ErrorCode::kOutOfMemory);
  auto missing = storage_->ListTree("nothing", 100);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

// Every request of ReadMany gives what Read gives: the same bytes, or the
// same error in the same words.
void ExpectSameAsRead(const Storage& s, const std::vector<ReadRequest>& requests) {
  std::vector<Result<ByteVec>> many = s.ReadMany(requests);
  ASSERT_EQ(many.size(), requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const ReadRequest& r = requests[i];
    Result<ByteVec> one = s.Read(r.path, r.offset, r.n);
    SCOPED_TRACE(r.path + " @" + std::to_string(r.offset) + "+" + std::to_string(r.n));
    ASSERT_EQ(many[i].ok(), one.ok()) << (one.ok() ? many[i].error() : one.error()).ToString();
    if (one.ok()) {
      EXPECT_EQ(*many[i], *one);
    } else {
      EXPECT_EQ(many[i].error().code(), one.error().code());
      EXPECT_EQ(many[i].error().message(), one.error().message());
    }
  }
}

TEST_F(LocalStorageTest, ReadManyGivesWhatReadGives) {
  // More files than the ring has slots, each with its own bytes.
  fs::create_directories(dir_ / "many");
  std::vector<ReadRequest> requests;
  for (int i = 0; i < 150; ++i) {
    const std::string name = "many/f" + std::to_string(i);
    Write(name, std::string(10 + i, static_cast<char>('a' + i % 26)) + std::to_string(i));
    requests.push_back({name, static_cast<uint64_t>(i % 7), static_cast<uint64_t>(3 + i % 5)});
  }
  fs::create_symlink("/etc/hostname", dir_ / "outside");
  fs::create_symlink("../eight.bin", dir_ / "many" / "inside");
  // Then every way a read fails or takes the plain path, among them.
  const std::vector<ReadRequest> odd = {
      {"nope.bin", 0, 1},                     // missing
      {"eight.bin", 5, 10},                   // short: truncated
      {"eight.bin", 9, 1},                    // past the end
      {"eight.bin", 3, 0},                    // nothing to read
      {"sub/big.bin", 0, uint64_t{1} << 40},  // too big to batch, then truncated
      {"sub/../eight.bin", 0, 1},             // ".."
      {"/etc/hostname", 0, 1},                // absolute
      {"outside", 0, 1},                      // a link out of the root
      {"many/inside", 1, 4},                  // a link that stays in
      {"sub", 0, 1},                          // a folder
      {"sub/link", 0, 3},                     // a link beside its target
  };
  for (size_t i = 0; i < odd.size(); ++i) {
    requests.insert(requests.begin() + static_cast<ptrdiff_t>(i * 13), odd[i]);
  }
  ExpectSameAsRead(*storage_, requests);
  ExpectSameAsRead(*storage_, {});
  ExpectSameAsRead(*storage_, {{"eight.bin", 1, 2}});

  // The default (one Read after another) agrees too.
  MemoryStorage mem;
  mem.Put("f", ByteVec{1, 2, 3});
  ExpectSameAsRead(mem, {{"f", 1, 2}, {"g", 0, 1}, {"f", 2, 5}});
}

TEST_F(LocalStorageTest, ReadManyReadsSmallFilesThroughTheRing) {
  if (UringReader::Create() == nullptr) {
    GTEST_SKIP() << "io_uring is not available here (kernel, seccomp or "
                    "kernel.io_uring_disabled): ReadMany reads one file at a time";
  }
  fs::create_directories(dir_ / "ring");
  std::vector<ReadRequest> requests;
  for (int i = 0; i < 100; ++i) {
    const std::string name = "ring/t" + std::to_string(i) + ".tdb";
    Write(name, std::string(100, static_cast<char>(i)));
    requests.push_back({name, 0, 100});
  }
  requests.push_back({"nope.bin", 0, 1});
  const uint64_t before = storage_->batched_reads();
  std::vector<Result<ByteVec>> got = storage_->ReadMany(requests);
  EXPECT_EQ(storage_->batched_reads() - before, 100u);  // all but the missing one
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(got[i].ok()) << got[i].error().ToString();
    EXPECT_EQ(*got[i], ByteVec(100, static_cast<uint8_t>(i)));
  }
  ASSERT_FALSE(got[100].ok());
  EXPECT_EQ(got[100].error().code(), ErrorCode::kNotFound);
  // No descriptor left behind: the kernel closed every file in the ring.
  size_t fds = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++fds;
  storage_->ReadMany(requests);
  size_t fds_after = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++fds_after;
  EXPECT_EQ(fds_after, fds);
}

TEST_F(LocalStorageTest, ReadManyCallersAtOnceEachGoThroughARing) {
  if (UringReader::Create() == nullptr) {
    GTEST_SKIP() << "io_uring is not available here (kernel, seccomp or "
                    "kernel.io_uring_disabled): ReadMany reads one file at a time";
  }
  fs::create_directories(dir_ / "many");
  std::vector<ReadRequest> requests;
  for (int i = 0; i < 64; ++i) {
    const std::string name = "many/t" + std::to_string(i) + ".tdb";
    Write(name, std::string(64, static_cast<char>(i)));
    requests.push_back({name, 0, 64});
  }
  // As many callers as the storage keeps rings (4), each calling many
  // times, so that their calls overlap: none falls back to one file at a time.
  constexpr int kCallers = 4, kCalls = 25;
  const uint64_t before = storage_->batched_reads();
  std::vector<std::thread> callers;
  std::vector<int> wrong(kCallers, 0);
  for (int c = 0; c < kCallers; ++c) {
    callers.emplace_back([&, c] {
      for (int k = 0; k < kCalls; ++k) {
        std::vector<Result<ByteVec>> got = storage_->ReadMany(requests);
        for (int i = 0; i < 64; ++i) {
          if (!got[i].ok() || *got[i] != ByteVec(64, static_cast<uint8_t>(i))) ++wrong[c];
        }
      }
    });
  }
  for (std::thread& t : callers) t.join();
  for (int c = 0; c < kCallers; ++c) EXPECT_EQ(wrong[c], 0) << "caller " << c;
  EXPECT_EQ(storage_->batched_reads() - before, uint64_t{kCallers} * kCalls * 64);
}

}  // namespace
}  // namespace tiledbfs::core
