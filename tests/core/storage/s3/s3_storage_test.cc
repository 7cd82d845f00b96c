// S3Storage against a real server is tested by tests/s3/ (s3rver); here the
// parts that need none.
#include "core/storage/s3/s3_storage.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/util/stop.h"

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

// Port 1 on loopback: refused at once, so the retries take only the backoff.
S3Config Unreachable(int attempts, int64_t backoff_ms) {
  S3Config c;
  c.endpoint = "http://127.0.0.1:1";
  c.custom_endpoint = true;
  c.path_style = true;
  c.anonymous = true;
  c.max_attempts = attempts;
  c.backoff_ms = backoff_ms;
  return c;
}

TEST(S3StorageTest, UnreachableEndpointFailsWithTheAttempts) {
  S3Config c = Unreachable(3, 1);
  auto s = S3Storage::Open("s3://bucket/array", c, DefaultLimits(), nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), ErrorCode::kIo);
  EXPECT_NE(s.error().message().find("s3://bucket/array"), std::string::npos)
      << s.error().message();
  EXPECT_NE(s.error().message().find("after 3 attempts"), std::string::npos) << s.error().message();
}

TEST(S3StorageTest, AStopEndsTheRetriesAndTheirBackoff) {
  // The stop is never cleared: in a child process, which must exit 0.
  EXPECT_EXIT(
      {
        // Refused at once, retried after backoffs of a minute, 10 times.
        S3Config c = Unreachable(10, 60000);
        c.max_backoff_ms = 60000;
        c.retry_deadline_ms = 600000;
        std::thread stopper([] {
          std::this_thread::sleep_for(std::chrono::milliseconds(200));
          RequestStop();
        });
        const auto start = std::chrono::steady_clock::now();
        auto s = S3Storage::Open("s3://bucket/array", c, DefaultLimits(), nullptr);
        const auto took = std::chrono::steady_clock::now() - start;
        stopper.join();
        const char* failure = nullptr;
        if (s.ok()) {
          failure = "opened";
        } else if (s.error().code() != ErrorCode::kCancelled) {
          failure = "not cancelled";
        } else if (took > std::chrono::seconds(5)) {
          failure = "the backoff went on after the stop";
        }
        if (failure != nullptr) {
          std::fprintf(stderr, "%s: %s\n", failure, s.ok() ? "" : s.error().ToString().c_str());
        }
        std::_Exit(failure == nullptr ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace tiledbfs::core::s3
