// number_text.h writes exactly std::to_chars' text, faster, and measures it
// without writing; CsvTable::MeasureRows agrees with AppendRows.
#include "fusefs/render/number_text.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <random>

#include "fusefs/render/csv.h"
#include "fusefs/render/shortest_decimal.h"
#include "tests/fusefs/render/render_test_util.h"

namespace tiledbfs::fusefs {
namespace {

template <class T>
std::string StdText(T v) {
  char buf[64];
  return std::string(buf, std::to_chars(buf, buf + sizeof(buf), v).ptr);
}

// Write* may use all of its kMaxNumberText bytes, never one more.
constexpr char kGuard = '\x5a';
void ExpectGuardKept(const char* buf) {
  for (size_t k = kMaxNumberText; k < kMaxNumberText + 8; ++k) ASSERT_EQ(buf[k], kGuard);
}

template <class T>
void ExpectInteger(T v) {
  char buf[kMaxNumberText + 8];
  std::memset(buf, kGuard, sizeof(buf));
  std::string ours(buf, WriteInteger(buf, v));
  ASSERT_EQ(ours, StdText(v)) << +v;
  ASSERT_EQ(MeasureInteger(v), ours.size()) << +v;
  ExpectGuardKept(buf);
}

template <class T>
void IntegersOfType(std::mt19937_64& rng) {
  using L = std::numeric_limits<T>;
  for (T v : {L::min(), L::max(), T(0), T(1), T(9), T(10), T(L::max() - 1), T(L::min() + 1)}) {
    ExpectInteger(v);
  }
  for (int k = 0; k < 200000; ++k) {
    // Every width: shift random bits right by a random amount.
    uint64_t bits = rng() >> (rng() % 64);
    ExpectInteger(static_cast<T>(k % 2 ? bits : ~bits));
  }
}

TEST(NumberTextTest, IntegersAreToCharsText) {
  std::mt19937_64 rng(1);
  IntegersOfType<int8_t>(rng);
  IntegersOfType<uint8_t>(rng);
  IntegersOfType<int16_t>(rng);
  IntegersOfType<uint16_t>(rng);
  IntegersOfType<int32_t>(rng);
  IntegersOfType<uint32_t>(rng);
  IntegersOfType<int64_t>(rng);
  IntegersOfType<uint64_t>(rng);
  uint64_t p = 1;
  for (int k = 0; k < 20; ++k, p *= 10) {
    for (uint64_t v : {p - 1, p, p + 1}) ExpectInteger(v);
  }
  EXPECT_EQ(DecimalDigits(0), 1);
  EXPECT_EQ(DecimalDigits(UINT64_MAX), 20);
}

// Numbers below 10^8 are written 8 digits at a time with the leading zeros
// shifted out: every value below 2^21, and 2^16 values below each power of
// ten from 10^5 to 10^19 and from each up.
TEST(NumberTextTest, IntegersEveryValueBelow2To21AndAroundEachPowerOfTen) {
  for (uint64_t v = 0; v < (uint64_t{1} << 21); ++v) ExpectInteger(v);
  uint64_t p = 100000;
  for (int k = 5; k < 20; ++k, p *= 10) {
    for (uint64_t v = p - 65536; v < p + 65536; ++v) ExpectInteger(v);
  }
}

// DecimalDigits estimates the count from the bit width, then corrects it by
// one compare: right on both sides of every power of two and of ten.
TEST(NumberTextTest, DecimalDigitsAtEveryBitWidthAndPowerOfTen) {
  std::vector<uint64_t> edges = {0, 1, UINT64_MAX, UINT64_MAX - 1};
  for (int b = 1; b < 64; ++b) {
    const uint64_t p = uint64_t{1} << b;
    edges.insert(edges.end(), {p - 1, p, p + 1});
  }
  uint64_t p = 1;
  for (int k = 0; k < 20; ++k, p *= 10) edges.insert(edges.end(), {p - 1, p, p + 1});
  for (uint64_t v : edges) {
    ASSERT_EQ(static_cast<size_t>(DecimalDigits(v)), StdText(v).size()) << v;
    ExpectInteger(v);
  }
}

template <class F>
void ExpectShortest(F v) {
  if (!std::isfinite(v)) return;
  char buf[kMaxNumberText + 8];
  std::memset(buf, kGuard, sizeof(buf));
  std::string ours(buf, WriteShortest(buf, v));
  ASSERT_EQ(ours, StdText(v)) << static_cast<double>(v);
  ExpectGuardKept(buf);
  ASSERT_EQ(MeasureShortest(v), ours.size()) << ours;
}

template <class F, class U>
void FloatsOfType(std::mt19937_64& rng, int random) {
  using L = std::numeric_limits<F>;
  for (F v : {F(0), -F(0), L::min(), L::max(), L::lowest(), L::denorm_min(), L::epsilon(), F(1),
              F(0.1), F(100), F(1e5), F(1e-5), F(123456), F(1e15), F(1e16), F(1e21), F(1e22)}) {
    ExpectShortest(v);
    ExpectShortest(-v);
  }
  for (int k = 0; k < random; ++k) {  // any bit pattern: every exponent
    U bits = static_cast<U>(rng());
    F v;
    std::memcpy(&v, &bits, sizeof v);
    ExpectShortest(v);
  }
  for (int k = 0; k < random; ++k) {  // the benchmark's values
    ExpectShortest(static_cast<F>(static_cast<double>(rng() >> 11) * 0x1.0p-53 * 2000.0 - 1000.0));
  }
  // Around powers of ten (plain/exponent boundaries) and integers near 2^digits.
  for (int e = L::min_exponent10 - 10; e <= L::max_exponent10; ++e) {
    for (double m : {1.0, 1.5, 2.0, 9.999, 1.25, 123.0, 9.5}) {
      F v = static_cast<F>(m * std::pow(10.0, e));
      ExpectShortest(v);
      ExpectShortest(std::nextafter(v, F(0)));
      ExpectShortest(std::nextafter(v, L::max()));
    }
  }
  F exact = static_cast<F>(uint64_t{1} << L::digits);
  F v = exact;
  for (int k = 0; k < 5000; ++k, v = std::nextafter(v, L::max())) ExpectShortest(v);
  v = exact;
  for (int k = 0; k < 5000; ++k, v = std::nextafter(v, F(0))) ExpectShortest(v);
  for (int64_t k = -20000; k < 20000; ++k) ExpectShortest(static_cast<F>(k));
}

TEST(NumberTextTest, FloatsAreToCharsShortestText) {
  std::mt19937_64 rng(2);
  FloatsOfType<double, uint64_t>(rng, 400000);
  FloatsOfType<float, uint32_t>(rng, 400000);
}

// A block of values at an odd address, of every kind (random bits: every
// exponent, infinities and NaNs among them; zeros, subnormals, the
// extremes): ShortestDecimals gives each finite non-zero value its
// ShortestDecimal and the others {0, 0}, and the text written from the
// form is std::to_chars', measured as long.
template <class F, class U>
void ExpectBlockForms(std::mt19937_64& rng) {
  using L = std::numeric_limits<F>;
  constexpr size_t kCount = 5000;
  const F special[] = {F(0),           -F(0),           L::infinity(), -L::infinity(),
                       L::quiet_NaN(), L::denorm_min(), L::min(),      L::max(),
                       L::lowest(),    F(1e16),         F(-0.1),       F(100),
                       F(1e22),        F(0.5),          F(250),        F(-1e5)};
  std::vector<F> values(kCount);
  for (size_t i = 0; i < kCount; ++i) {
    U bits = static_cast<U>(rng());
    std::memcpy(&values[i], &bits, sizeof(F));
    if (i < std::size(special)) values[i] = special[i];
  }
  std::vector<uint8_t> bytes(1 + kCount * sizeof(F));
  std::memcpy(bytes.data() + 1, values.data(), kCount * sizeof(F));
  std::vector<DecimalForm> forms(values.size(), DecimalForm{7, 7});
  ShortestDecimals<F>(bytes.data() + 1, values.size(), forms.data());
  for (size_t i = 0; i < values.size(); ++i) {
    const F v = values[i];
    if (!std::isfinite(v) || v == 0) {
      ASSERT_EQ(forms[i].significand, 0u) << i;
      ASSERT_EQ(forms[i].exponent, 0) << i;
      if (std::isfinite(v)) {
        char buf[kMaxNumberText];
        ASSERT_EQ(std::string(buf, WriteShortestFrom(buf, v, forms[i])), StdText(v));
      }
      continue;
    }
    const DecimalForm one = ShortestDecimal(v);
    ASSERT_EQ(forms[i].significand, one.significand) << static_cast<double>(v);
    ASSERT_EQ(forms[i].exponent, one.exponent) << static_cast<double>(v);
    // number_text.h counts the digits as they come: none is a trailing zero.
    ASSERT_NE(one.significand % 10, 0u) << static_cast<double>(v);
    char buf[kMaxNumberText];
    const std::string text(buf, WriteShortestFrom(buf, v, forms[i]));
    ASSERT_EQ(text, StdText(v)) << static_cast<double>(v);
    ASSERT_EQ(MeasureShortestFrom(v, forms[i]), text.size()) << text;
  }
}

TEST(NumberTextTest, BlockFormsAreEachValuesShortestDigits) {
  std::mt19937_64 rng(4);
  ExpectBlockForms<double, uint64_t>(rng);
  ExpectBlockForms<float, uint32_t>(rng);
}

// Plain text with the point inside the digits: every count of digits (2 to
// 17) with every count of them before the point from 1 to 9 (WritePointed
// takes 1 to 7, the byte loop more), each sign, the digits random or all
// nines (the widest) or a one followed by zeros (the last digits zero).
TEST(NumberTextTest, PointInsideTheDigitsAtEveryPlace) {
  std::mt19937_64 rng(3);
  for (int n = 2; n <= 17; ++n) {
    for (int whole = 1; whole <= std::min(n - 1, 9); ++whole) {
      const double scale = std::pow(10.0, n - whole);
      for (int k = 0; k < 2000; ++k) {
        const uint64_t low = number_text_internal::kPow10[n - 1];
        const uint64_t digits = k == 0 ? 10 * low - 1 : k == 1 ? low : low + rng() % (9 * low);
        const double v = static_cast<double>(digits) / scale;
        ExpectShortest(v);
        ExpectShortest(-v);
        ExpectShortest(static_cast<float>(v));
      }
    }
  }
}

// MeasureRows counts what AppendRows writes, for every corpus view and every
// field's .txt, over every range of a few rows.
TEST(NumberTextTest, MeasureRowsIsWhatAppendRowsWrites) {
  namespace fs = std::filesystem;
  int views = 0;
  for (const auto& entry : testing::ExpectedViews()) {
    testing::CorpusView v = testing::LoadCorpusView(entry.parent_path().string());
    if (v.columns.empty()) continue;
    std::vector<CsvColumn> cols;
    for (size_t k = 0; k < v.columns.size(); ++k) {
      cols.push_back({&v.columns[k], v.enumerations[k] ? &*v.enumerations[k] : nullptr});
    }
    std::vector<std::vector<CsvColumn>> tables = {cols};
    for (const auto& c : cols) tables.push_back({c});
    for (const auto& t : tables) {
      auto table = CsvTable::Make(t, false);
      ASSERT_TRUE(table.ok());
      uint64_t n = table->row_count();
      for (uint64_t a = 0; a <= n; ++a) {
        for (uint64_t b = a; b <= std::min(n, a + 4); ++b) {
          std::string out = "prefix";
          table->AppendRows(out, a, b);
          ASSERT_EQ(table->MeasureRows(a, b), out.size() - 6) << entry << " " << a << "-" << b;
        }
      }
    }
    ++views;
  }
  EXPECT_GT(views, 20);
}

}  // namespace
}  // namespace tiledbfs::fusefs
