#include "core/util/bytes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

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

// AppendBytes and CopyBytes copy with memcpy (ByteVec's insert goes byte
// by byte): appends of every size from 0 on, into a vector that grows
// (kept bytes moved) or has room, equal the same appends to a std::vector.
TEST(ByteVecTest, AppendBytesEqualsInsert) {
  std::vector<uint8_t> src(5000);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<uint8_t>(i * 7 + 3);
  ByteVec v;
  std::vector<uint8_t> want;
  size_t at = 0;
  for (size_t n = 0; n < 90; ++n) {
    AppendBytes(v, src.data() + at % 1000, n);
    want.insert(want.end(), src.begin() + at % 1000, src.begin() + at % 1000 + n);
    at += 13;
    ASSERT_EQ(v.size(), want.size());
  }
  EXPECT_TRUE(std::equal(v.begin(), v.end(), want.begin()));
  v.reserve(v.size() + 4000);
  const uint8_t* room = v.data();
  AppendBytes(v, Bytes(src).subspan(0, 4000));
  want.insert(want.end(), src.begin(), src.begin() + 4000);
  EXPECT_EQ(v.data(), room);  // within the room reserved: no new buffer
  EXPECT_TRUE(std::equal(v.begin(), v.end(), want.begin(), want.end()));
  AppendBytes(v, nullptr, 0);
  EXPECT_EQ(v.size(), want.size());

  ByteVec copy = CopyBytes(Bytes(src).subspan(10, 300));
  EXPECT_TRUE(std::equal(copy.begin(), copy.end(), src.begin() + 10, src.begin() + 310));
  EXPECT_TRUE(CopyBytes(Bytes()).empty());
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
