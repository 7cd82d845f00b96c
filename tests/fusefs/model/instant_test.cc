#include "fusefs/model/instant.h"

#include <gtest/gtest.h>

namespace tiledbfs::fusefs {
namespace {

TEST(InstantTest, FormatsUtcWithMilliseconds) {
  EXPECT_EQ(FormatIso(1700000000000), "2023-11-14T22:13:20.000Z");
  EXPECT_EQ(FormatIso(1700000002345), "2023-11-14T22:13:22.345Z");
  EXPECT_EQ(FormatIso(0), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(FormatIso(-1), "1969-12-31T23:59:59.999Z");
  EXPECT_EQ(FormatIso(951782400000), "2000-02-29T00:00:00.000Z");
}

TEST(InstantTest, ParsesEveryAcceptedForm) {
  EXPECT_EQ(ParseInstant("1700000002000"), 1700000002000);
  EXPECT_EQ(ParseInstant("2023-11-14T22:13:22.000Z"), 1700000002000);
  EXPECT_EQ(ParseInstant("2023-11-14T22:13:22.000"), 1700000002000);
  EXPECT_EQ(ParseInstant("2023-11-14T22:13:22Z"), 1700000002000);
  EXPECT_EQ(ParseInstant("2023-11-14T22:13:22"), 1700000002000);
  EXPECT_EQ(ParseInstant("2023-11-14T22:13:22.5Z"), 1700000002500);
  EXPECT_EQ(ParseInstant("2023-11-14T22:13"), 1699999980000);
  EXPECT_EQ(ParseInstant("2023-11-14"), 1699920000000);
  EXPECT_EQ(ParseInstant("2024-02-29"), 1709164800000);
}

TEST(InstantTest, ParsesFewDigitsAsMilliseconds) {
  // Arrays written at explicit small timestamps (1, 10, 2024 ms) have views
  // there: history/1/, history/2024/ must resolve, not read as a year.
  EXPECT_EQ(ParseInstant("0"), 0);
  EXPECT_EQ(ParseInstant("1"), 1);
  EXPECT_EQ(ParseInstant("17"), 17);
  EXPECT_EQ(ParseInstant("2024"), 2024);
  EXPECT_EQ(ParseInstant("0010"), 10);
  EXPECT_FALSE(ParseInstant("99999999999999999999").has_value());  // past int64
}

TEST(InstantTest, RoundTripsFormattedNames) {
  for (int64_t t : {0LL, 1700000000000LL, 1700000004321LL, 4102444800000LL}) {
    EXPECT_EQ(ParseInstant(FormatIso(t)), t) << t;
  }
}

TEST(InstantTest, RejectsWhatIsNotAnInstant) {
  for (const char* bad : {"", "latest", "2023-13-01", "2023-11-14T25:00", "2023-11-14T22:13:22.",
                          "2023-11-14X22", "12a4", "2023-11-14T22:13:22.1234567890", "2023-02-29",
                          "2023-02-31", "2023-11-14T22:13:60", "2023-04-31"}) {
    EXPECT_FALSE(ParseInstant(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace tiledbfs::fusefs
