#include "fusefs/model/key_file.h"

#include <gtest/gtest.h>

namespace tiledbfs::fusefs {
namespace {

TEST(KeyFileTest, AcceptsHexWithNewlineAndRawBytes) {
  auto k = ParseKey("393e2175242c5e53266c792a735b276f22773f6b50617075706874284a4f4b2e\n");
  ASSERT_TRUE(k.ok()) << k.error().message();
  EXPECT_EQ(k->bytes[0], 0x39);
  EXPECT_EQ(k->bytes[31], 0x2e);
  std::string raw(32, '\x07');
  auto r = ParseKey(raw);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->bytes[5], 7);
}

TEST(KeyFileTest, RejectsWrongLengthAndNonHexWithoutEchoingTheKey) {
  auto k = ParseKey("abcd");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().code(), core::ErrorCode::kKey);
  EXPECT_EQ(k.error().message().find("abcd"), std::string::npos);
  std::string bad(64, 'z');
  auto b = ParseKey(bad);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message().find("zzzz"), std::string::npos);
}

TEST(KeyFileTest, MissingFileIsAKeyError) {
  auto k = ReadKeyFile("/nonexistent/tiledbfs.key");
  ASSERT_FALSE(k.ok());
  EXPECT_EQ(k.error().code(), core::ErrorCode::kKey);
}

}  // namespace
}  // namespace tiledbfs::fusefs
