#include "core/storage/open/open_storage.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <thread>

#include "tests/core/storage/loopback.h"

namespace tiledbfs::core {
namespace {

TEST(OpenStorageTest, APathIsALocalFolder) {
  EXPECT_TRUE(IsLocalUri("/data/array"));
  EXPECT_TRUE(IsLocalUri("relative/array"));
  EXPECT_FALSE(IsLocalUri("s3://bucket/array"));
  const std::string dir =
      std::filesystem::temp_directory_path() / ("open_storage_test." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir + "/__schema");
  auto s = OpenStorage(dir, StorageOptions{}, DefaultLimits());
  ASSERT_TRUE(s.ok()) << s.error().message();
  EXPECT_TRUE((*s)->IsDir("__schema"));
  std::filesystem::remove_all(dir);
  auto missing = OpenStorage(dir, StorageOptions{}, DefaultLimits());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code(), ErrorCode::kNotFound);
}

// An s3:// URI goes to S3Storage: port 1 on loopback refuses at once.
TEST(OpenStorageTest, AnS3UriIsS3) {
  StorageOptions options;
  options.s3.endpoint = "http://127.0.0.1:1";
  options.s3.anonymous = true;
  options.s3.path_style = true;
  auto s = OpenStorage("s3://bucket/array", options, DefaultLimits());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message().find("s3://bucket/array"), std::string::npos)
      << s.error().message();
  options.s3.endpoint = "ftp://x";
  EXPECT_EQ(OpenStorage("s3://bucket/array", options, DefaultLimits()).error().code(),
            ErrorCode::kInvalidArgument);
}

// A bucket on loopback whose every LIST answers the same page: `keys`
// objects under "array/". One connection at a time, each closed after its
// answer.
class ListingServer {
 public:
  explicit ListingServer(int keys) : body_(Page(keys)) {}
  std::string endpoint() const { return acceptor_.endpoint(); }

 private:
  static std::string Page(int keys) {
    std::string body = "<ListBucketResult><IsTruncated>false</IsTruncated>";
    for (int i = 0; i < keys; ++i) {
      body += "<Contents><Key>array/f" + std::to_string(i) +
              "</Key><Size>1</Size><ETag>\"e\"</ETag></Contents>";
    }
    return body + "</ListBucketResult>";
  }
  void Answer(int c) const {
    ReadRequestHead(c);
    const std::string answer =
        "HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\n"
        "Connection: close\r\nContent-Length: " +
        std::to_string(body_.size()) + "\r\n\r\n" + body_;
    for (size_t off = 0; off < answer.size();) {
      const ssize_t n = ::write(c, answer.data() + off, answer.size() - off);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::close(c);
  }

  const std::string body_;
  LoopbackAcceptor acceptor_{8, [this](int c) { Answer(c); }};  // last: uses body_
};

// The Limits given to OpenStorage reach the S3 listing: three objects
// open under max_files 3, not under 2.
TEST(OpenStorageTest, S3ListingsTakeTheLimits) {
  ListingServer server(3);
  StorageOptions options;
  options.s3.endpoint = server.endpoint();
  options.s3.anonymous = true;
  options.s3.path_style = true;
  Limits limits;
  limits.max_files = 3;
  auto s = OpenStorage("s3://bucket/array", options, limits);
  ASSERT_TRUE(s.ok()) << s.error().ToString();
  auto listed = (*s)->List("");
  ASSERT_TRUE(listed.ok()) << listed.error().ToString();
  EXPECT_EQ(listed->size(), 3u);
  limits.max_files = 2;
  auto over = OpenStorage("s3://bucket/array", options, limits);
  ASSERT_FALSE(over.ok());
  EXPECT_EQ(over.error().code(), ErrorCode::kOutOfMemory) << over.error().ToString();
  EXPECT_NE(over.error().message().find("more than 2 entries"), std::string::npos)
      << over.error().message();
}

TEST(OpenStorageTest, ResolvesGroupMembers) {
  EXPECT_EQ(*ResolveMemberUri("/g", "a", true), "/g/a");
  EXPECT_EQ(*ResolveMemberUri("s3://b/g", "a", true), "s3://b/g/a");
  EXPECT_EQ(*ResolveMemberUri("/g", "s3://b/x", false), "s3://b/x");
  EXPECT_EQ(*ResolveMemberUri("/g", "file:///data/x", false), "/data/x");
  EXPECT_EQ(*ResolveMemberUri("/g", "/data/x", false), "/data/x");
  for (const char* bad : {"gcs://b/x", "x", ""}) {
    auto r = ResolveMemberUri("/g", bad, false);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported) << bad;
  }
}

}  // namespace
}  // namespace tiledbfs::core
