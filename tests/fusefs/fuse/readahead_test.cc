#include "fusefs/fuse/readahead.h"

#include <gtest/gtest.h>

namespace tiledbfs::fusefs {
namespace {

// Lines as the kernel writes /proc/self/mountinfo.
constexpr const char* kMountinfo =
    "22 1 254:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n"
    "80 22 0:52 / /mnt/x rw,nosuid,nodev,relatime shared:40 - fuse.tiledbfs a rw,user_id=0\n"
    "81 22 0:53 / /mnt/with\\040space rw shared:41 - fuse.tiledbfs b rw\n"
    "82 80 0:54 / /mnt/x rw shared:42 - fuse.tiledbfs c rw\n"
    "83 22 0:55 / /mnt/back\\134slash rw - tmpfs t rw";

TEST(MountDevice, TheNewestMountAtThePath) {
  // Two mounts at /mnt/x: the later line is the one on top.
  EXPECT_EQ(MountDevice(kMountinfo, "/mnt/x"), "0:54");
  EXPECT_EQ(MountDevice(kMountinfo, "/"), "254:1");
}

TEST(MountDevice, EscapedPaths) {
  EXPECT_EQ(MountDevice(kMountinfo, "/mnt/with space"), "0:53");
  EXPECT_EQ(MountDevice(kMountinfo, "/mnt/back\\slash"), "0:55");
  EXPECT_EQ(MountDevice(kMountinfo, "/mnt/with\\040space"), std::nullopt);
}

TEST(MountDevice, NotMountedOrMalformed) {
  EXPECT_EQ(MountDevice(kMountinfo, "/mnt"), std::nullopt);
  EXPECT_EQ(MountDevice(kMountinfo, "/mnt/x/"), std::nullopt);
  EXPECT_EQ(MountDevice("", "/"), std::nullopt);
  EXPECT_EQ(MountDevice("1 2 3:4\n\n9 9", "/"), std::nullopt);
  // A line cut short (no newline at the end) is still read.
  EXPECT_EQ(MountDevice("1 2 3:4 / /a", "/a"), "3:4");
}

TEST(SetMountReadahead, AnUnmountedPathIsNotFound) {
  auto r = SetMountReadahead("/no/such/mount/point", 1024);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), core::ErrorCode::kNotFound);
  EXPECT_NE(r.error().message().find("/no/such/mount/point"), std::string::npos);
}

}  // namespace
}  // namespace tiledbfs::fusefs
