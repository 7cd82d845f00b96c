#include "fusefs/render/value_text.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "tests/fusefs/render/render_test_util.h"

namespace tiledbfs::fusefs {
namespace {

using core::Column;
using core::Datatype;

template <class T>
core::ByteVec Le(std::initializer_list<T> values) {
  core::ByteVec out;
  for (T v : values) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));
    out.insert(out.end(), b, b + sizeof(T));
  }
  return out;
}

template <class T>
std::string One(Datatype t, T v) {
  std::string out;
  auto b = Le<T>({v});
  AppendValueText(out, t, b);
  return out;
}

std::string Cell(Datatype t, bool fixed, const core::ByteVec& b) {
  std::string out;
  AppendCellBytesText(out, t, fixed, b);
  return out;
}

TEST(ValueTextTest, IntegersAreDecimalAtBothEnds) {
  EXPECT_EQ(One<int8_t>(Datatype::kInt8, -128), "-128");
  EXPECT_EQ(One<int8_t>(Datatype::kInt8, 127), "127");
  EXPECT_EQ(One<uint8_t>(Datatype::kUInt8, 255), "255");
  EXPECT_EQ(One<int16_t>(Datatype::kInt16, -32768), "-32768");
  EXPECT_EQ(One<uint16_t>(Datatype::kUInt16, 65535), "65535");
  EXPECT_EQ(One<int32_t>(Datatype::kInt32, INT32_MIN), "-2147483648");
  EXPECT_EQ(One<uint32_t>(Datatype::kUInt32, UINT32_MAX), "4294967295");
  EXPECT_EQ(One<int64_t>(Datatype::kInt64, INT64_MIN), "-9223372036854775808");
  EXPECT_EQ(One<uint64_t>(Datatype::kUInt64, UINT64_MAX), "18446744073709551615");
  EXPECT_EQ(One<int64_t>(Datatype::kTimeNs, -5), "-5");
  EXPECT_EQ(One<int64_t>(Datatype::kTimeHr, INT64_MIN), "-9223372036854775808");
}

TEST(ValueTextTest, FloatsAreShortestRoundTrip) {
  EXPECT_EQ(One<double>(Datatype::kFloat64, 0.1), "0.1");
  EXPECT_EQ(One<double>(Datatype::kFloat64, 1e20), "1e+20");
  EXPECT_EQ(One<double>(Datatype::kFloat64, 100.0), "100");
  EXPECT_EQ(One<double>(Datatype::kFloat64, 1e5), "1e+05");
  EXPECT_EQ(One<double>(Datatype::kFloat64, 123456.0), "123456");
  EXPECT_EQ(One<double>(Datatype::kFloat64, 1e-5), "1e-05");
  EXPECT_EQ(One<double>(Datatype::kFloat64, 0.001), "0.001");
  EXPECT_EQ(One<double>(Datatype::kFloat64, -0.0), "-0");
  EXPECT_EQ(One<double>(Datatype::kFloat64, 0.0), "0");
  // Plain when not longer: 18 characters against 22 for 1.2345678901234568e+17.
  EXPECT_EQ(One<double>(Datatype::kFloat64, 123456789012345678.0), "123456789012345680");
  EXPECT_EQ(One<double>(Datatype::kFloat64, 6.02214076e23), "6.02214076e+23");
  EXPECT_EQ(One<double>(Datatype::kFloat64, 5e-324), "5e-324");
  EXPECT_EQ(One<double>(Datatype::kFloat64, std::numeric_limits<double>::max()),
            "1.7976931348623157e+308");
  EXPECT_EQ(One<double>(Datatype::kFloat64, 2.0 / 3.0), "0.6666666666666666");
  EXPECT_EQ(One<double>(Datatype::kFloat64, std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(One<double>(Datatype::kFloat64, -std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(One<double>(Datatype::kFloat64, std::nan("")), "nan");
  EXPECT_EQ(One<double>(Datatype::kFloat64, -std::nan("")), "nan");  // never -nan
  EXPECT_EQ(One<float>(Datatype::kFloat32, 0.1f), "0.1");            // shortest as a float32
  EXPECT_EQ(One<float>(Datatype::kFloat32, 3.4028235e38f), "3.4028235e+38");
  EXPECT_EQ(One<float>(Datatype::kFloat32, 1e-45f), "1e-45");
  EXPECT_EQ(One<float>(Datatype::kFloat32, -std::nanf("")), "nan");
  EXPECT_EQ(One<float>(Datatype::kFloat32, -std::numeric_limits<float>::infinity()), "-inf");
  // Every text reads back to the value it came from.
  std::mt19937_64 rng(7);
  for (int k = 0; k < 20000; ++k) {
    uint64_t bits = rng();
    double d;
    std::memcpy(&d, &bits, 8);
    if (std::isnan(d)) continue;
    std::string s = One<double>(Datatype::kFloat64, d);
    EXPECT_EQ(std::strtod(s.c_str(), nullptr), d) << s;
    uint32_t fbits = static_cast<uint32_t>(bits);
    float f;
    std::memcpy(&f, &fbits, 4);
    if (std::isnan(f)) continue;
    s = One<float>(Datatype::kFloat32, f);
    EXPECT_EQ(std::strtof(s.c_str(), nullptr), f) << s;
  }
}

TEST(ValueTextTest, BoolIsTrueOrFalse) {
  EXPECT_EQ(One<uint8_t>(Datatype::kBool, 0), "false");
  EXPECT_EQ(One<uint8_t>(Datatype::kBool, 1), "true");
  EXPECT_EQ(One<uint8_t>(Datatype::kBool, 7), "true");
  EXPECT_EQ(Cell(Datatype::kBool, true, {1, 0, 1}), "true false true");
}

TEST(ValueTextTest, WrongSizedNumberAppendsNothing) {
  std::string out = "x";
  core::ByteVec three = {1, 2, 3};
  AppendValueText(out, Datatype::kInt32, three);
  EXPECT_EQ(out, "x");
}

TEST(ValueTextTest, StringsDropTrailingNuls) {
  core::ByteVec w = {'w', '0', 0, 0};
  EXPECT_EQ(Cell(Datatype::kChar, true, w), "w0");
  EXPECT_EQ(Cell(Datatype::kChar, false, w), "w0");
  EXPECT_EQ(Cell(Datatype::kStringAscii, false, {0}), "");
  core::ByteVec inner = {'a', 0, 'b', 0};
  EXPECT_EQ(Cell(Datatype::kStringAscii, true, inner), std::string("a\0b", 3));
  EXPECT_EQ(Cell(Datatype::kChar, true, {0, 0}), "");
  // Valid UTF-8 copied as it is, a byte not part of it written \xHH.
  core::ByteVec utf8 = {0xC3, 0xA9, 0x80, 0};
  EXPECT_EQ(Cell(Datatype::kStringUtf8, false, utf8), "\xC3\xA9\\x80");
  EXPECT_EQ(Cell(Datatype::kChar, true, {0x80}), "\\x80");  // CHAR's fill byte
}

TEST(ValueTextTest, WideStringsBecomeUtf8) {
  // "é😀" in UTF-16LE, then a NUL code unit (padding of a fixed cell).
  auto u16 = Le<uint16_t>({0x00E9, 0xD83D, 0xDE00, 0});
  EXPECT_EQ(Cell(Datatype::kStringUtf16, true, u16), "\xC3\xA9\xF0\x9F\x98\x80");
  EXPECT_EQ(Cell(Datatype::kStringUcs2, false, u16), "\xC3\xA9\xF0\x9F\x98\x80");
  // Unpaired surrogates become U+FFFD.
  auto bad16 = Le<uint16_t>({0xDC00, 'a', 0xD800});
  EXPECT_EQ(Cell(Datatype::kStringUtf16, false, bad16),
            "\xEF\xBF\xBD"
            "a"
            "\xEF\xBF\xBD");
  auto u32 = Le<uint32_t>({'A', 0x3A9, 0x1F600, 0x110000, 0, 0});
  EXPECT_EQ(Cell(Datatype::kStringUtf32, true, u32), "A\xCE\xA9\xF0\x9F\x98\x80\xEF\xBF\xBD");
  EXPECT_EQ(Cell(Datatype::kStringUcs4, true, Le<uint32_t>({0xD800})), "\xEF\xBF\xBD");
}

TEST(ValueTextTest, BlobsAreLowercaseHex) {
  EXPECT_EQ(Cell(Datatype::kBlob, false, {0x00, 0xff, 0x0a, 0xAB}), "00ff0aab");
  EXPECT_EQ(Cell(Datatype::kGeomWkb, false, {0x01, 0x02}), "0102");
  EXPECT_EQ(Cell(Datatype::kGeomWkt, false, {'P'}), "50");
  EXPECT_EQ(Cell(Datatype::kBlob, true, {0, 0}), "0000");  // NULs are data in a blob
  EXPECT_EQ(Cell(Datatype::kBlob, false, {}), "");
}

TEST(ValueTextTest, SeveralValuesAreSpaceSeparated) {
  EXPECT_EQ(Cell(Datatype::kInt16, true, Le<int16_t>({0, 1, -98})), "0 1 -98");
  EXPECT_EQ(Cell(Datatype::kInt32, false, Le<int32_t>({})), "");
  EXPECT_EQ(Cell(Datatype::kFloat64, false, Le<double>({0.5, 2.0})), "0.5 2");
  EXPECT_EQ(Cell(Datatype::kDatetimeDay, true, Le<int64_t>({0, INT64_MIN})), "1970-01-01 NaT");
  // A trailing partial value is ignored.
  EXPECT_EQ(Cell(Datatype::kInt16, false, {1, 0, 2}), "1");
}

struct DatetimeCase {
  const char* type;
  int64_t value;
  const char* text;
};

const DatetimeCase kDatetimeCases[] = {
#include "tests/fusefs/render/testdata/datetime_cases.inc"
};

TEST(ValueTextTest, DatetimesMatchNumpyDatetimeAsString) {
  // testdata/datetime_cases.inc: ~900 values over every unit, printed by
  // numpy 1.24.2 (gen_datetime_cases.py).
  int n = 0;
  for (const auto& c : kDatetimeCases) {
    auto t = core::DatatypeFromName(c.type);
    ASSERT_TRUE(t.has_value()) << c.type;
    std::string out;
    AppendDatetimeText(out, *t, c.value);
    EXPECT_EQ(out, c.text) << c.type << " " << c.value;
    EXPECT_EQ(One<int64_t>(*t, c.value), c.text);
    ++n;
  }
  EXPECT_GT(n, 800);
}

TEST(ValueTextTest, DatetimesWhereNumpyOverflowsAreTheTrueDate) {
  std::string out;
  AppendDatetimeText(out, Datatype::kDatetimeYear, INT64_MAX);
  EXPECT_EQ(out, "9223372036854777777");  // numpy wraps to a negative year
  out.clear();
  // INT64_MAX days = 25252734927768524 years and some; numpy gets it right,
  // and min+1 wrong: the true date is symmetric, far before year 0.
  AppendDatetimeText(out, Datatype::kDatetimeDay, INT64_MAX);
  EXPECT_EQ(out, "25252734927768524-07-27");
  out.clear();
  AppendDatetimeText(out, Datatype::kDatetimeDay, INT64_MIN + 1);
  EXPECT_EQ(out, "-25252734927764585-06-08");
  out.clear();
  AppendDatetimeText(out, Datatype::kDatetimeWeek, INT64_MAX);
  EXPECT_EQ(out, "176769144494367851-12-25");
  out.clear();
  AppendDatetimeText(out, Datatype::kDatetimeWeek, INT64_MIN + 1);
  EXPECT_EQ(out, "-176769144494363912-01-08");
  out.clear();
  AppendDatetimeText(out, Datatype::kDatetimeYear, -1971);
  EXPECT_EQ(out, "-001");
  out.clear();
  AppendDatetimeText(out, Datatype::kDatetimeMonth, -1970 * 12 - 1);
  EXPECT_EQ(out, "-001-12");
}

TEST(ValueTextTest, DatetimesMatchNumpyOnRandomValues) {
  SKIP_WITHOUT_NUMPY();
  // A fresh draw each run (seed printed on failure), checked live.
  std::random_device rd;
  uint64_t seed = (uint64_t{rd()} << 32) | rd();
  std::mt19937_64 rng(seed);
  const char* units[] = {"Y", "M", "W", "D", "h", "m", "s", "ms", "us", "ns", "ps", "fs", "as"};
  std::string values;
  std::vector<std::vector<int64_t>> drawn(13);
  for (int u = 0; u < 13; ++u) {
    values += units[u];
    for (int k = 0; k < 300; ++k) {
      int bits = 1 + static_cast<int>(rng() % 62);
      int64_t v = static_cast<int64_t>(rng() >> (64 - bits)) * ((rng() & 1) ? -1 : 1);
      if (u == 2) v /= 8;  // WEEK: stay where numpy's days do not overflow
      drawn[u].push_back(v);
      values += fmt::format(" {}", v);
    }
    values += "\n";
  }
  std::string in = testing::TempPath("dt_values.txt");
  ASSERT_TRUE(testing::WriteWholeFile(in, values));
  std::string script =
      "import sys, numpy as np\n"
      "for line in open(sys.argv[1]):\n"
      "    u, *vs = line.split()\n"
      "    a = np.array([int(v) for v in vs], dtype='M8[%s]' % u)\n"
      "    print('\\n'.join(np.datetime_as_string(a)))\n";
  std::string py = testing::TempPath("dt.py");
  ASSERT_TRUE(testing::WriteWholeFile(py, script));
  std::string out;
  ASSERT_EQ(testing::RunCommand(testing::PythonWithNumpy() + " " + py + " " + in, &out), 0);
  std::istringstream lines(out);
  for (int u = 0; u < 13; ++u) {
    auto t = static_cast<Datatype>(static_cast<int>(Datatype::kDatetimeYear) + u);
    for (int64_t v : drawn[u]) {
      std::string want;
      ASSERT_TRUE(static_cast<bool>(std::getline(lines, want)));
      std::string got;
      AppendDatetimeText(got, t, v);
      EXPECT_EQ(got, want) << units[u] << " " << v << " seed " << seed;
    }
  }
  std::remove(in.c_str());
  std::remove(py.c_str());
}

Column MakeColumn(Datatype t, uint32_t k, core::ByteVec data, uint64_t n) {
  Column c;
  c.name = std::string("c");  // = "c" draws a false -Wrestrict from GCC 12
  c.type = t;
  c.cell_val_num = k;
  c.cell_count = n;
  c.data = std::move(data);
  return c;
}

core::Enumeration Colors() {
  core::Enumeration e;
  e.name = "colors";
  for (std::string s : {"red", "green", "", "a,b"}) {
    e.offsets.push_back(e.data.size());
    e.data.insert(e.data.end(), s.begin(), s.end());
  }
  return e;
}

TEST(ValueTextTest, EnumerationsPrintLabelsAndOutOfRangeIndexes) {
  core::Enumeration e = Colors();
  EXPECT_EQ(EnumerationSize(e), 4u);
  Column c = MakeColumn(Datatype::kInt8, 1, {0, 1, 2, 3, 4, 0xFF}, 6);
  c.nullable = true;
  c.validity = {1, 1, 1, 1, 1, 1};
  std::vector<std::string> got;
  for (uint64_t i = 0; i < 6; ++i) {
    std::string s;
    AppendCellText(s, c, i, &e);
    got.push_back(s);
  }
  EXPECT_EQ(got, (std::vector<std::string>{"red", "green", "", "a,b", "4", "-1"}));
  c.validity[0] = 0;
  std::string s;
  AppendCellText(s, c, 0, &e);
  EXPECT_EQ(s, "");
  // Without the enumeration: the index.
  AppendCellText(s, c, 1, nullptr);
  EXPECT_EQ(s, "1");
}

TEST(ValueTextTest, FixedSizeEnumerationLabels) {
  core::Enumeration e;
  e.type = Datatype::kInt32;
  e.cell_val_num = 1;
  e.data = Le<int32_t>({10, 20, 30});
  EXPECT_EQ(EnumerationSize(e), 3u);
  Column c = MakeColumn(Datatype::kUInt16, 1, Le<uint16_t>({2, 0, 3}), 3);
  std::string s;
  for (uint64_t i = 0; i < 3; ++i) {
    AppendCellText(s, c, i, &e);
    s += '|';
  }
  EXPECT_EQ(s, "30|10|3|");
}

TEST(ValueTextTest, InconsistentEnumerationHasNoLabels) {
  core::Enumeration e = Colors();
  e.offsets[2] = 1000;  // past the data
  EXPECT_EQ(EnumerationSize(e), 0u);
  Column c = MakeColumn(Datatype::kUInt8, 1, {1}, 1);
  std::string s;
  AppendCellText(s, c, 0, &e);
  EXPECT_EQ(s, "1");
}

TEST(ValueTextTest, CheckColumnRejectsInconsistentColumns) {
  Column c = MakeColumn(Datatype::kInt32, 1, Le<int32_t>({1, 2}), 2);
  EXPECT_TRUE(CheckColumn(c).ok());
  c.cell_count = 3;
  auto s = CheckColumn(c);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code(), core::ErrorCode::kInvalidArgument);
  EXPECT_NE(s.error().message().find("column 'c': data has 8 bytes"), std::string::npos);

  Column v = MakeColumn(Datatype::kStringAscii, core::kVarNum, {'a', 'b'}, 2);
  v.offsets = {0, 1};
  EXPECT_NE(CheckColumn(v).error().message().find("offsets has 2 entries"), std::string::npos);
  v.offsets = {0, 2, 1};
  EXPECT_NE(CheckColumn(v).error().message().find("offsets decrease at cell 1"), std::string::npos);
  v.offsets = {0, 1, 3};
  EXPECT_NE(CheckColumn(v).error().message().find("past data"), std::string::npos);
  v.offsets = {0, 1, 2};
  EXPECT_TRUE(CheckColumn(v).ok());
  v.nullable = true;
  EXPECT_NE(CheckColumn(v).error().message().find("validity has 0 bytes"), std::string::npos);
  Column z = MakeColumn(Datatype::kInt32, 0, {}, 0);
  EXPECT_FALSE(CheckColumn(z).ok());
}

TEST(ValueTextTest, CorpusTypesCellsOfEveryKind) {
  auto view = testing::LoadCorpusView(testing::CorpusExpected() + "/types/views/latest");
  ASSERT_EQ(view.columns.size(), 23u);
  std::map<std::string, std::vector<std::string>> text;
  for (const auto& c : view.columns) {
    ASSERT_TRUE(CheckColumn(c).ok()) << c.name;
    for (uint64_t i = 0; i < c.cell_count; ++i) {
      std::string s;
      AppendCellText(s, c, i, nullptr);
      text[c.name].push_back(s);
    }
  }
  EXPECT_EQ(text["ch4"][0], "w0");
  EXPECT_EQ(text["f64"][2], "1e+300");
  EXPECT_EQ(text["f32"][8], "3.14159");
  EXPECT_EQ(text["dt_ms"][0], "2023-11-14T22:13:20.000");
  EXPECT_EQ(text["dt_day"][0], "NaT");
  EXPECT_EQ(text["i16x3"][0], "0 1 -98");
  EXPECT_EQ(text["blob"][2], "00ff00");
  EXPECT_EQ(text["utf8"][5], "\xCE\x95\xCE\xBB\xCE\xBB\xCE\xB7\xCE\xBD\xCE\xB9\xCE\xBA\xCE\xAC");
  EXPECT_EQ(text["nstr"][5], "comma,quote\"");
  EXPECT_EQ(text["ni32"][1], "");  // null
}

}  // namespace
}  // namespace tiledbfs::fusefs
