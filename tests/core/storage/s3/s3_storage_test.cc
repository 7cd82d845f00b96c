// S3Storage against a real server is tested by tests/s3/ (s3rver); here the
// parts that need none.
#include "core/storage/s3/s3_storage.h"

#include <gtest/gtest.h>

namespace tiledbfs::core::s3 {
namespace {

TEST(S3UriTest, Parses) {
  auto a = ParseS3Uri("s3://bucket/a/b/");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->bucket, "bucket");
  EXPECT_EQ(a->prefix, "a/b");
  auto b = ParseS3Uri("s3://bucket");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->prefix, "");
  for (const char* bad : {"s3://", "s3:///x", "s3://b/a/../c", "s3://b/a//c", "s3://b/./c",
                          "/local/path", "S3://b/x"}) {
    auto r = ParseS3Uri(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code(), ErrorCode::kInvalidArgument) << bad;
  }
  EXPECT_TRUE(IsS3Uri("s3://b"));
  EXPECT_FALSE(IsS3Uri("/s3://b"));
}

TEST(S3StorageTest, UnreachableEndpointFailsWithTheAttempts) {
  // Port 1 on loopback: refused at once, so the retries take only the backoff.
  S3Config c;
  c.endpoint = "http://127.0.0.1:1";
  c.custom_endpoint = true;
  c.path_style = true;
  c.anonymous = true;
  c.max_attempts = 3;
  c.backoff_ms = 1;
  auto s = S3Storage::Open("s3://bucket/array", c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kIo);
  EXPECT_NE(s.error().message().find("s3://bucket/array"), std::string::npos)
      << s.error().message();
  EXPECT_NE(s.error().message().find("after 3 attempts"), std::string::npos) << s.error().message();
}

}  // namespace
}  // namespace tiledbfs::core::s3
