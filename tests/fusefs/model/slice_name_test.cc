#include "fusefs/model/slice_name.h"

#include <gtest/gtest.h>

#include <cstring>

#include "fusefs/model/instant.h"

namespace tiledbfs::fusefs {
namespace {

using core::Datatype;

template <typename T>
core::ByteVec Raw(T v) {
  core::ByteVec out(sizeof(T));
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}

core::Dimension Dim(std::string name, Datatype t, core::ByteVec lo, core::ByteVec hi) {
  core::Dimension d;
  d.name = std::move(name);
  d.type = t;
  d.domain = {std::move(lo), std::move(hi)};
  return d;
}

core::ArraySchema Schema() {
  core::ArraySchema s;
  s.dimensions.push_back(Dim("x", Datatype::kInt32, Raw<int32_t>(-100), Raw<int32_t>(100)));
  s.dimensions.push_back(Dim("f", Datatype::kFloat64, Raw<double>(-1e3), Raw<double>(1e3)));
  core::Dimension k;
  k.name = "a,b=c";
  k.type = Datatype::kStringAscii;
  k.cell_val_num = core::kVarNum;
  s.dimensions.push_back(k);
  s.dimensions.push_back(
      Dim("t", Datatype::kDatetimeMs, Raw<int64_t>(INT64_MIN + 1), Raw<int64_t>(INT64_MAX)));
  return s;
}

std::string Text(const core::ByteVec& v) { return std::string(v.begin(), v.end()); }

TEST(SliceNameTest, ParsesRangesValuesAndLeavesOthersOpen) {
  auto sub = ParseSliceName("x=-5..20,f=0.1..2.5", Schema());
  ASSERT_TRUE(sub.ok()) << sub.error().ToString();
  ASSERT_EQ(sub->size(), 4u);
  EXPECT_EQ((*sub)[0]->lo, Raw<int32_t>(-5));
  EXPECT_EQ((*sub)[0]->hi, Raw<int32_t>(20));
  EXPECT_EQ((*sub)[1]->lo, Raw<double>(0.1));
  EXPECT_EQ((*sub)[1]->hi, Raw<double>(2.5));
  EXPECT_FALSE((*sub)[2]);
  EXPECT_FALSE((*sub)[3]);
  auto one = ParseSliceName("x=7", Schema());
  ASSERT_TRUE(one.ok());
  EXPECT_EQ((*one)[0]->lo, Raw<int32_t>(7));
  EXPECT_EQ((*one)[0]->hi, Raw<int32_t>(7));
}

TEST(SliceNameTest, EscapesInNamesAndValues) {
  // The dimension "a,b=c", from "w.y" to "x..z/%": '.' next to '.' as %2E.
  auto sub = ParseSliceName("a%2Cb%3Dc=w.y..x%2E%2Ez%2F%25", Schema());
  ASSERT_TRUE(sub.ok()) << sub.error().ToString();
  EXPECT_EQ(Text((*sub)[2]->lo), "w.y");
  EXPECT_EQ(Text((*sub)[2]->hi), "x..z/%");
}

TEST(SliceNameTest, DatetimesAsIsoOrRawCounts) {
  auto sub = ParseSliceName("t=2024-01-01T00:00:00..2024-01-31", Schema());
  ASSERT_TRUE(sub.ok()) << sub.error().ToString();
  EXPECT_EQ((*sub)[3]->lo, Raw<int64_t>(1704067200000));
  EXPECT_EQ((*sub)[3]->hi, Raw<int64_t>(1706659200000));
  auto raw = ParseSliceName("t=-5..1704067200000", Schema());
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ((*raw)[3]->lo, Raw<int64_t>(-5));
}

TEST(SliceNameTest, RefusesWhatDoesNotNameABox) {
  for (const char* bad :
       {"", "x", "y=1", "x=1,x=2", "x=5..4", "x=-101..0", "x=0..101", "x=1..", "x=abc", "x=1.5",
        "f=nan", "x=%zz", "x=1,", "t=2024-13-01", "x=99999999999"}) {
    auto sub = ParseSliceName(bad, Schema());
    ASSERT_FALSE(sub.ok()) << bad;
    EXPECT_EQ(sub.error().code(), core::ErrorCode::kNotFound) << bad;
    EXPECT_NE(sub.error().message().find("slice/"), std::string::npos) << bad;
  }
}

TEST(ParseDatetimeTest, EveryUnitAsNumpyCountsIt) {
  // numpy.datetime64('2024-03-14T12:30:05.123456789', unit).astype(int64)
  const char* t = "2024-03-14T12:30:05.123456789";
  EXPECT_EQ(ParseDatetime(t, Datatype::kDatetimeYear), 54);
  EXPECT_EQ(ParseDatetime(t, Datatype::kDatetimeMonth), 650);
  EXPECT_EQ(ParseDatetime(t, Datatype::kDatetimeWeek), 2828);
  EXPECT_EQ(ParseDatetime(t, Datatype::kDatetimeDay), 19796);
  EXPECT_EQ(ParseDatetime(t, Datatype::kDatetimeHr), 475116);
  EXPECT_EQ(ParseDatetime(t, Datatype::kDatetimeMin), 28506990);
  EXPECT_EQ(ParseDatetime(t, Datatype::kDatetimeSec), 1710419405);
  EXPECT_EQ(ParseDatetime(t, Datatype::kDatetimeMs), 1710419405123);
  EXPECT_EQ(ParseDatetime(t, Datatype::kDatetimeUs), 1710419405123456);
  EXPECT_EQ(ParseDatetime(t, Datatype::kDatetimeNs), 1710419405123456789);
  EXPECT_EQ(ParseDatetime("1970-01-01T00:00:01.5", Datatype::kDatetimeAs), 1500000000000000000);
  EXPECT_EQ(ParseDatetime("2024", Datatype::kDatetimeYear), 54);
  EXPECT_EQ(ParseDatetime("2024-03", Datatype::kDatetimeMonth), 650);
  // Before the epoch: the unit holding the instant (rounded down).
  EXPECT_EQ(ParseDatetime("1969-12-31T23:59:59.999Z", Datatype::kDatetimeSec), -1);
  EXPECT_EQ(ParseDatetime("1969-12-31", Datatype::kDatetimeWeek), -1);
  EXPECT_FALSE(ParseDatetime("2024-02-30", Datatype::kDatetimeDay));
  EXPECT_FALSE(ParseDatetime("3000-01-01", Datatype::kDatetimeNs));  // past int64
  EXPECT_FALSE(ParseDatetime("2024-01-01", Datatype::kInt32));
}

}  // namespace
}  // namespace tiledbfs::fusefs
