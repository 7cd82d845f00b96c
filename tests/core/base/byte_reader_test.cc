#include "core/util/byte_reader.h"

#include <gtest/gtest.h>

namespace tiledbfs::core {
namespace {

TEST(ByteReaderTest, ReadsLittleEndianValues) {
  const uint8_t data[] = {0x01, 0x02, 0x03, 0x04, 0xff, 0x01};
  ByteReader r(Bytes(data, sizeof(data)), 100);
  auto v = r.Read<uint32_t>("v");
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 0x04030201u);
  auto b = r.Read<int8_t>("b");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, -1);
  auto flag = r.ReadBool("flag");
  ASSERT_TRUE(flag.ok());
  EXPECT_TRUE(*flag);
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(r.offset(), 106u);
}

TEST(ByteReaderTest, ShortReadLeavesPositionAndNamesOffsetAndField) {
  const uint8_t data[] = {1, 2, 3};
  ByteReader r(Bytes(data, sizeof(data)), 40);
  ASSERT_TRUE(r.Read<uint8_t>("first").ok());
  auto v = r.Read<uint64_t>("dimension.name");
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code(), ErrorCode::kCorrupt);
  EXPECT_EQ(v.error().message(), "offset 41: dimension.name: need 8 bytes, 2 left (truncated)");
  EXPECT_EQ(r.position(), 1u);
}

TEST(ByteReaderTest, HugeLengthAllocatesNothing) {
  const uint8_t data[] = {1, 2, 3};
  ByteReader r(Bytes(data, sizeof(data)));
  auto s = r.ReadString(UINT64_MAX, "name");
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(r.position(), 0u);
  EXPECT_FALSE(r.Skip(UINT64_MAX, "skip").ok());
}

TEST(ByteReaderTest, BoolOtherThanZeroOrOneIsCorrupt) {
  const uint8_t data[] = {2};
  ByteReader r(Bytes(data, sizeof(data)));
  auto b = r.ReadBool("allows_dups");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("allows_dups"), std::string::npos);
}

}  // namespace
}  // namespace tiledbfs::core
