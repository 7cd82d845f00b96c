#include "core/storage/open/open_storage.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

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
