#include <gtest/gtest.h>

#include "core/schema/array_schema.h"
#include "tests/core/schema/schema_builder.h"
#include "tests/core/schema/schema_payloads.h"

namespace tiledbfs::core {
namespace {

using testing::BuildEnumeration;
using testing::EnumSpec;
using testing::Le;

void ExpectError(const Result<Enumeration>& r, ErrorCode code, std::string_view substring) {
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), code) << r.error().ToString();
  EXPECT_NE(r.error().message().find(substring), std::string::npos) << r.error().message();
}

std::vector<std::string> Values(const Enumeration& e) {
  std::vector<std::string> out;
  for (uint64_t i = 0; i < e.size(); ++i) out.push_back(ToString(e.value(i)));
  return out;
}

TEST(EnumerationParse, RealExtendedColors) {
  Bytes p(testdata::kColorsT2Enumeration, sizeof(testdata::kColorsT2Enumeration));
  auto r = ParseEnumeration(p);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->name, "colors");
  EXPECT_EQ(r->path_name, "__10e3083c9083c0f27d0f20a203b2e71d_0");
  EXPECT_EQ(r->type, Datatype::kStringAscii);
  EXPECT_EQ(r->cell_val_num, kVarNum);
  EXPECT_FALSE(r->ordered);
  EXPECT_EQ(Values(*r), (std::vector<std::string>{"red", "green", "blue", "yellow", "purple",
                                                  "\xc3\xbc"
                                                  "n"
                                                  "\xc3\xaf"
                                                  "code"}));
  EXPECT_TRUE(r->value(6).empty());
}

TEST(EnumerationParse, FixedSizeValues) {
  EnumSpec spec;
  spec.type = 0;  // INT32
  spec.cell_val_num = 1;
  spec.ordered = true;
  spec.data = Le<int32_t>({10, 20, 30});
  auto r = ParseEnumeration(BuildEnumeration(spec));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->size(), 3u);
  EXPECT_TRUE(r->ordered);
  EXPECT_EQ(ByteVec(r->value(2).begin(), r->value(2).end()), Le<int32_t>({30}));

  spec.data.push_back(0);  // 13 bytes of INT32 values
  ExpectError(ParseEnumeration(BuildEnumeration(spec)), ErrorCode::kCorrupt, "multiple");
}

TEST(EnumerationParse, EmptyVarEnumeration) {
  auto r = ParseEnumeration(BuildEnumeration(EnumSpec{}));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_EQ(r->size(), 0u);
}

TEST(EnumerationParse, EveryTruncationIsCorrupt) {
  Bytes p(testdata::kColorsT2Enumeration, sizeof(testdata::kColorsT2Enumeration));
  for (size_t n = 0; n < p.size(); ++n) {
    auto r = ParseEnumeration(p.first(n));
    ASSERT_FALSE(r.ok()) << n;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt) << r.error().ToString();
  }
  ByteVec longer(p.begin(), p.end());
  longer.push_back(1);
  ExpectError(ParseEnumeration(longer), ErrorCode::kCorrupt, "trailing");
}

TEST(EnumerationParse, Rejections) {
  EnumSpec spec;
  spec.data = {'a', 'b', 'c'};
  spec.offsets = Le<uint64_t>({0, 2, 1});
  ExpectError(ParseEnumeration(BuildEnumeration(spec)), ErrorCode::kCorrupt, "offset 2 is 1");
  spec.offsets = Le<uint64_t>({0, 4});
  ExpectError(ParseEnumeration(BuildEnumeration(spec)), ErrorCode::kCorrupt, "offset 1 is 4");
  spec.offsets = ByteVec{0, 0, 0};
  ExpectError(ParseEnumeration(BuildEnumeration(spec)), ErrorCode::kCorrupt, "size 3");

  spec = EnumSpec{};
  spec.version = 1;
  ExpectError(ParseEnumeration(BuildEnumeration(spec)), ErrorCode::kUnsupported, "version");
  spec = EnumSpec{};
  spec.type = 77;
  ExpectError(ParseEnumeration(BuildEnumeration(spec)), ErrorCode::kUnsupported, "datatype");
  spec = EnumSpec{};
  spec.name = "";
  ExpectError(ParseEnumeration(BuildEnumeration(spec)), ErrorCode::kCorrupt, "bad name");
  spec = EnumSpec{};
  spec.path = "a/b";
  ExpectError(ParseEnumeration(BuildEnumeration(spec)), ErrorCode::kCorrupt, "bad name");
  spec = EnumSpec{};
  spec.cell_val_num = 0;
  ExpectError(ParseEnumeration(BuildEnumeration(spec)), ErrorCode::kCorrupt, "cell_val_num");

  // A bool byte of 2 for "ordered".
  ByteVec b = BuildEnumeration(EnumSpec{});
  b[4 + 4 + 1 + 4 + 7 + 1 + 4] = 2;
  ExpectError(ParseEnumeration(b), ErrorCode::kCorrupt, "enumeration.ordered");
}

TEST(EnumerationParse, OversizedDataSize) {
  ByteVec b = BuildEnumeration(EnumSpec{});
  size_t data_size_at = 4 + 4 + 1 + 4 + 7 + 1 + 4 + 1;
  for (size_t i = 0; i < 8; ++i) b[data_size_at + i] = 0xff;
  ExpectError(ParseEnumeration(b, 50), ErrorCode::kCorrupt,
              "enumeration.data: need 18446744073709551615 bytes");
}

}  // namespace
}  // namespace tiledbfs::core
