#include "core/util/bytes.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tiledbfs::core {
namespace {

bool All(const ByteVec& v, size_t from, uint8_t b) {
  return std::all_of(v.begin() + static_cast<ptrdiff_t>(from), v.end(),
                     [b](uint8_t x) { return x == b; });
}

TEST(ByteVecTest, AValueGivenIsWritten) {
  ByteVec v(1000, 0);
  EXPECT_TRUE(All(v, 0, 0));
  v.resize(5000, 7);
  EXPECT_TRUE(All(v, 1000, 7));
  v.assign(300, 9);
  EXPECT_EQ(v.size(), 300u);
  EXPECT_TRUE(All(v, 0, 9));
}

TEST(ByteVecTest, KeptBytesStayWhenGrown) {
  ByteVec v{1, 2, 3};
  v.resize(100000);
  EXPECT_EQ(v[0], 1);
  EXPECT_EQ(v[1], 2);
  EXPECT_EQ(v[2], 3);
}

#ifndef NDEBUG
// A build with assertions (the sanitizer build) marks the bytes no one
// wrote, so that a decoder that misses some fails its tests the same way
// every run (not only when the memory happens to hold something other than
// the expected zeros).
TEST(ByteVecTest, UnwrittenBytesAreMarkedInTheTestBuild) {
  ByteVec v(4096);
  EXPECT_TRUE(All(v, 0, kUnsetByte));
  v.assign(10, 0);
  v.resize(2 * 4096);
  EXPECT_TRUE(All(v, 10, kUnsetByte));
}
#endif

}  // namespace
}  // namespace tiledbfs::core
