// The text rule of docs/namespace.md "Values": bytes not part of valid UTF-8 as
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

std::string FromHex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

// Adversarial inputs (hex) and what Python 3.11 writes for them,
// b.decode("utf-8", "backslashreplace").encode(); nullptr: the input, valid.
const std::vector<std::pair<std::string, std::string>>& Cases() {
  static const std::vector<std::pair<std::string, std::string>> cases = [] {
    struct Case {
      const char* hex;
      const char* want;
    };
    const Case table[] = {
        {"", nullptr},
        {"706c61696e206173636969", nullptr},
        {"636166e9", R"(caf\xe9)"},
        {"80", R"(\x80)"},
        {"bf80", R"(\xbf\x80)"},
        {"c0af", R"(\xc0\xaf)"},
        {"c1bf", R"(\xc1\xbf)"},
        {"e080af", R"(\xe0\x80\xaf)"},
        {"e09fbf", R"(\xe0\x9f\xbf)"},
        {"f08080af", R"(\xf0\x80\x80\xaf)"},
        {"f08fbfbf", R"(\xf0\x8f\xbf\xbf)"},
        {"eda080", R"(\xed\xa0\x80)"},
        {"edbfbf", R"(\xed\xbf\xbf)"},
        {"ed9fbf", nullptr},
        {"f4908080", R"(\xf4\x90\x80\x80)"},
        {"f48fbfbf", nullptr},
        {"f5808080", R"(\xf5\x80\x80\x80)"},
        {"fffe", R"(\xff\xfe)"},
        {"f09f98", R"(\xf0\x9f\x98)"},
        {"f09f9880", nullptr},
        {"61f09f9862", R"(a\xf0\x9f\x98b)"},
        {"e282", R"(\xe2\x82)"},
        {"e282ac", nullptr},
        {"c3", R"(\xc3)"},
        {"c3a9", nullptr},
        {"006100", nullptr},
        {"c3a980c3", R"(é\x80\xc3)"},
        {"e228a1", R"(\xe2(\xa1)"},
        {"f888808080", R"(\xf8\x88\x80\x80\x80)"},
        {"c280dfbfe0a080efbfbff0908080", nullptr},
        {"30313233343536373839616263646566e930313233343536373839616263646566",
         R"(0123456789abcdef\xe90123456789abcdef)"},
        {"5c783830207374617973", nullptr},
    };
    std::vector<std::pair<std::string, std::string>> out;
    for (const Case& c : table) {
      const std::string in = FromHex(c.hex);
      out.emplace_back(in, c.want != nullptr ? std::string(c.want) : in);
    }
    return out;
  }();
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
