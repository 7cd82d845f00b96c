// The text rule of NAMESPACE.md "Values": bytes not part of valid UTF-8 as
// \xHH, as Python's decode("utf-8", "backslashreplace") writes them.
#include "core/util/text.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

namespace tiledbfs::core {
namespace {

Bytes B(const std::string& s) {
  return Bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}

std::string Escaped(const std::string& s) {
  std::string out;
  AppendUtf8Escaped(out, B(s));
  return out;
}

// Adversarial inputs and what Python 3.11 writes for them
// (b.decode("utf-8", "backslashreplace").encode()).
const std::vector<std::pair<std::string, std::string>>& Cases() {
  static const std::vector<std::pair<std::string, std::string>> cases = {
      {std::string("", 0), std::string("", 0)},
      {std::string("plain ascii", 11), std::string("plain ascii", 11)},
      {std::string("caf\xe9"
                   "",
                   4),
       std::string("caf\\xe9", 7)},
      {std::string("\x80"
                   "",
                   1),
       std::string("\\x80", 4)},
      {std::string("\xbf"
                   "\x80"
                   "",
                   2),
       std::string("\\xbf\\x80", 8)},
      {std::string("\xc0"
                   "\xaf"
                   "",
                   2),
       std::string("\\xc0\\xaf", 8)},
      {std::string("\xc1"
                   "\xbf"
                   "",
                   2),
       std::string("\\xc1\\xbf", 8)},
      {std::string("\xe0"
                   "\x80"
                   "\xaf"
                   "",
                   3),
       std::string("\\xe0\\x80\\xaf", 12)},
      {std::string("\xe0"
                   "\x9f"
                   "\xbf"
                   "",
                   3),
       std::string("\\xe0\\x9f\\xbf", 12)},
      {std::string("\xf0"
                   "\x80"
                   "\x80"
                   "\xaf"
                   "",
                   4),
       std::string("\\xf0\\x80\\x80\\xaf", 16)},
      {std::string("\xf0"
                   "\x8f"
                   "\xbf"
                   "\xbf"
                   "",
                   4),
       std::string("\\xf0\\x8f\\xbf\\xbf", 16)},
      {std::string("\xed"
                   "\xa0"
                   "\x80"
                   "",
                   3),
       std::string("\\xed\\xa0\\x80", 12)},
      {std::string("\xed"
                   "\xbf"
                   "\xbf"
                   "",
                   3),
       std::string("\\xed\\xbf\\xbf", 12)},
      {std::string("\xed"
                   "\x9f"
                   "\xbf"
                   "",
                   3),
       std::string("\xed"
                   "\x9f"
                   "\xbf"
                   "",
                   3)},
      {std::string("\xf4"
                   "\x90"
                   "\x80"
                   "\x80"
                   "",
                   4),
       std::string("\\xf4\\x90\\x80\\x80", 16)},
      {std::string("\xf4"
                   "\x8f"
                   "\xbf"
                   "\xbf"
                   "",
                   4),
       std::string("\xf4"
                   "\x8f"
                   "\xbf"
                   "\xbf"
                   "",
                   4)},
      {std::string("\xf5"
                   "\x80"
                   "\x80"
                   "\x80"
                   "",
                   4),
       std::string("\\xf5\\x80\\x80\\x80", 16)},
      {std::string("\xff"
                   "\xfe"
                   "",
                   2),
       std::string("\\xff\\xfe", 8)},
      {std::string("\xf0"
                   "\x9f"
                   "\x98"
                   "",
                   3),
       std::string("\\xf0\\x9f\\x98", 12)},
      {std::string("\xf0"
                   "\x9f"
                   "\x98"
                   "\x80"
                   "",
                   4),
       std::string("\xf0"
                   "\x9f"
                   "\x98"
                   "\x80"
                   "",
                   4)},
      {std::string("a\xf0"
                   "\x9f"
                   "\x98"
                   "b",
                   5),
       std::string("a\\xf0\\x9f\\x98b", 14)},
      {std::string("\xe2"
                   "\x82"
                   "",
                   2),
       std::string("\\xe2\\x82", 8)},
      {std::string("\xe2"
                   "\x82"
                   "\xac"
                   "",
                   3),
       std::string("\xe2"
                   "\x82"
                   "\xac"
                   "",
                   3)},
      {std::string("\xc3"
                   "",
                   1),
       std::string("\\xc3", 4)},
      {std::string("\xc3"
                   "\xa9"
                   "",
                   2),
       std::string("\xc3"
                   "\xa9"
                   "",
                   2)},
      {std::string("\x00"
                   "a\x00"
                   "",
                   3),
       std::string("\x00"
                   "a\x00"
                   "",
                   3)},
      {std::string("\xc3"
                   "\xa9"
                   "\x80"
                   "\xc3"
                   "",
                   4),
       std::string("\xc3"
                   "\xa9"
                   "\\x80\\xc3",
                   10)},
      {std::string("\xe2"
                   "(\xa1"
                   "",
                   3),
       std::string("\\xe2(\\xa1", 9)},
      {std::string("\xf8"
                   "\x88"
                   "\x80"
                   "\x80"
                   "\x80"
                   "",
                   5),
       std::string("\\xf8\\x88\\x80\\x80\\x80", 20)},
      {std::string("\xc2"
                   "\x80"
                   "\xdf"
                   "\xbf"
                   "\xe0"
                   "\xa0"
                   "\x80"
                   "\xef"
                   "\xbf"
                   "\xbf"
                   "\xf0"
                   "\x90"
                   "\x80"
                   "\x80"
                   "",
                   14),
       std::string("\xc2"
                   "\x80"
                   "\xdf"
                   "\xbf"
                   "\xe0"
                   "\xa0"
                   "\x80"
                   "\xef"
                   "\xbf"
                   "\xbf"
                   "\xf0"
                   "\x90"
                   "\x80"
                   "\x80"
                   "",
                   14)},
      {std::string("0123456789abcdef\xe9"
                   "0123456789abcdef",
                   33),
       std::string("0123456789abcdef\\xe90123456789abcdef", 36)},
      {std::string("\\x80 stays", 10), std::string("\\x80 stays", 10)},
  };
  return cases;
}

TEST(Utf8EscapeTest, WritesWhatPythonsBackslashreplaceWrites) {
  for (const auto& [in, want] : Cases()) {
    EXPECT_EQ(Escaped(in), want) << testing::PrintToString(in);
    EXPECT_EQ(Utf8EscapedSize(B(in)), want.size()) << testing::PrintToString(in);
    EXPECT_EQ(ValidUtf8(B(in)), in == want) << testing::PrintToString(in);
    EXPECT_EQ(Utf8Escaped(in), want);
    EXPECT_TRUE(ValidUtf8(B(want)));
  }
}

TEST(Utf8EscapeTest, AppendsAfterWhatIsThere) {
  std::string out = "x";
  AppendUtf8Escaped(out, std::string_view("\xff"
                                          "y"));
  EXPECT_EQ(out, "x\\xffy");
}

// A decoder written from the definition, one code point at a time (no
// table of second-byte ranges), as the reference for random inputs.
std::string Reference(const std::string& s) {
  std::string out;
  size_t i = 0;
  auto u = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  while (i < s.size()) {
    const uint8_t c = u(i);
    size_t len = c < 0x80             ? 1
                 : (c & 0xE0) == 0xC0 ? 2
                 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4
                                      : 0;
    bool ok = len != 0 && i + len <= s.size();
    uint32_t cp = len == 1 ? c : len == 2 ? c & 0x1F : len == 3 ? c & 0x0F : c & 0x07;
    for (size_t k = 1; ok && k < len; ++k) {
      ok = (u(i + k) & 0xC0) == 0x80;
      cp = (cp << 6) | (u(i + k) & 0x3F);
    }
    const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : len == 4 ? 0x10000 : 0;
    ok = ok && cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    if (ok) {
      out.append(s, i, len);
      i += len;
    } else {
      static constexpr char kDigits[] = "0123456789abcdef";
      out += "\\x";
      out += kDigits[c >> 4];
      out += kDigits[c & 15];
      ++i;
    }
  }
  return out;
}

TEST(Utf8EscapeTest, ReferenceAgreesWithPythonOnTheCases) {
  for (const auto& [in, want] : Cases()) EXPECT_EQ(Reference(in), want);
}

// Random strings biased towards the bytes that start, continue and break
// sequences, and long ASCII runs around them (the 8-byte fast path).
TEST(Utf8EscapeTest, RandomBytesAsTheReferenceWritesThem) {
  std::mt19937_64 rng(41);
  const uint8_t kInteresting[] = {0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF,
                                  0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE,
                                  0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF8, 0xFE, 0xFF};
  for (int n = 0; n < 200000; ++n) {
    std::string s;
    const size_t len = rng() % 24;
    for (size_t k = 0; k < len; ++k) {
      const uint64_t r = rng();
      if (r % 8 == 0) {
        s.append(r / 8 % 20, 'a');
      } else if (r % 8 < 5) {
        s += static_cast<char>(kInteresting[r / 8 % sizeof(kInteresting)]);
      } else {
        s += static_cast<char>(r / 8);
      }
    }
    const std::string want = Reference(s);
    ASSERT_EQ(Escaped(s), want) << testing::PrintToString(s);
    ASSERT_EQ(Utf8EscapedSize(B(s)), want.size()) << testing::PrintToString(s);
    ASSERT_EQ(ValidUtf8(B(s)), s == want) << testing::PrintToString(s);
  }
}

// Long text of valid characters of every length (ValidUtf8 checks 32 bytes
// and more 16 at a time), then with one byte changed, dropped or added at
// every kind of place: valid exactly when the reference says so.
TEST(Utf8EscapeTest, LongTextValidExactlyWhenTheReferenceSaysSo) {
  std::mt19937_64 rng(4141);
  const uint32_t kStarts[] = {0, 0x80, 0x800, 0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF};
  int invalid = 0;
  for (int n = 0; n < 100000; ++n) {
    std::string s;
    const size_t chars = rng() % 80;
    for (size_t k = 0; k < chars; ++k) {
      const uint64_t r = rng();
      uint32_t cp = r % 3 == 0 ? static_cast<uint32_t>(r >> 8) % 0x80
                               : kStarts[(r >> 8) % 8] + static_cast<uint32_t>(r >> 16) % 64;
      if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 'x';
      AppendUtf8(s, cp);
    }
    const uint64_t r = rng();
    if (!s.empty() && r % 4 != 0) {
      const size_t at = (r >> 8) % s.size();
      const uint8_t byte = static_cast<uint8_t>(r >> 32);
      if (r % 4 == 1) s[at] = static_cast<char>(byte);
      if (r % 4 == 2) s.erase(at, 1);
      if (r % 4 == 3) s.insert(at, 1, static_cast<char>(byte | 0x80));
    }
    const bool valid = Reference(s) == s;
    invalid += !valid;
    ASSERT_EQ(ValidUtf8(B(s)), valid) << testing::PrintToString(s);
    ASSERT_EQ(Escaped(s), Reference(s)) << testing::PrintToString(s);
  }
  EXPECT_GT(invalid, 10000);  // both answers well tried
  EXPECT_LT(invalid, 90000);
}

// JSON: keys and strings at any depth escaped before the dump, so the text
// parses (nlohmann would otherwise replace the bytes with U+FFFD) and reads
// back as the escaped text; valid documents are dumped as they are.
TEST(Utf8EscapeTest, JsonStringsAndKeysAreEscapedBeforeTheDump) {
  nlohmann::ordered_json j;
  j["k\x80"] = {{"v", "caf\xe9"}, {"list", {1, "\xF0\x9F\x98\x80", "\xED\xA0\x80"}}};
  j["n"] = 2.5;
  const std::string text = DumpJsonText(j, -1);
  EXPECT_TRUE(ValidUtf8(text));
  EXPECT_EQ(text,
            "{\"k\\\\x80\":{\"v\":\"caf\\\\xe9\",\"list\":[1,\"\xF0\x9F\x98\x80\","
            "\"\\\\xed\\\\xa0\\\\x80\"]},\"n\":2.5}");
  const auto back = nlohmann::ordered_json::parse(text);
  EXPECT_EQ(back["k\\x80"]["v"], "caf\\xe9");
  nlohmann::ordered_json valid = {{"a", "\xC3\xA9"}};
  EXPECT_EQ(DumpJsonText(valid, 2), valid.dump(2));
}

}  // namespace
}  // namespace tiledbfs::core
