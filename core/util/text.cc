#include "core/util/text.h"

#include <cstring>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

namespace tiledbfs::core {

void AppendHex(std::string& out, Bytes b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  size_t at = out.size();
  out.resize(at + 2 * b.size());
  for (uint8_t byte : b) {
    out[at++] = kDigits[byte >> 4];
    out[at++] = kDigits[byte & 15];
  }
}

void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

namespace {

// The length of the ASCII run at p (at most n), 8 bytes at a time.
size_t AsciiRun(const uint8_t* p, size_t n) {
  size_t i = 0;
  for (; n - i >= 8; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    if ((w & 0x8080808080808080ull) != 0) break;
  }
  while (i < n && p[i] < 0x80) ++i;
  return i;
}

// The length (2 to 4) of the valid sequence that starts with the non-ASCII
// byte p[0], or 0 if none does. The second byte's range is what rules out
// overlongs (E0 80..9F, F0 80..8F), surrogates (ED A0..BF) and values past
// U+10FFFF (F4 90..BF): the Unicode standard's table 3-7.
size_t SequenceAt(const uint8_t* p, size_t n) {
  const uint8_t c = p[0];
  size_t len;
  uint8_t lo = 0x80, hi = 0xBF;  // the second byte's range
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (n < len || p[1] < lo || p[1] > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if ((p[k] & 0xC0) != 0x80) return 0;
  }
  return len;
}

// The length of the valid prefix of [p, p + n) that ends before the first
// byte not part of valid UTF-8 (n if there is none).
size_t ValidRun(const uint8_t* p, size_t n) {
  size_t i = 0;
  for (;;) {
    i += AsciiRun(p + i, n - i);
    if (i == n) return n;
    const size_t len = SequenceAt(p + i, n - i);
    if (len == 0) return i;
    i += len;
  }
}

}  // namespace

#if defined(__x86_64__) && defined(__GNUC__)
// 16 bytes at a time with SSSE3 (every x86-64 CPU since 2006; the build's
// baseline is SSE2, hence the target attribute and the check at run time):
// "Validating UTF-8 in less than one instruction per byte" (J. Keiser,
// D. Lemire, 2021), the lookup algorithm as simdutf has it. Each byte and
// the one before it are classified by three 16-entry tables of error bits
// (high and low nibble of the byte before, high nibble of this one), whose
// AND is the error set of the pair; the bytes that must be the 2nd or 3rd
// continuation of a 3- or 4-byte lead are checked apart. Byte by byte, the
// check held up rendering text with frequent non-ASCII characters.
#define TILEDBFS_UTF8_SSSE3 1
namespace {

struct Ssse3State {
  __m128i byte1_high, byte1_low, byte2_high, max_complete;
  __m128i prev, error, prev_incomplete;
};

__attribute__((target("ssse3"))) inline void CheckBlock(Ssse3State& s, __m128i in) {
  const __m128i nibble = _mm_set1_epi8(0x0F);
  const __m128i prev1 = _mm_alignr_epi8(in, s.prev, 15);
  const __m128i special = _mm_and_si128(
      _mm_and_si128(_mm_shuffle_epi8(s.byte1_high, _mm_and_si128(_mm_srli_epi16(prev1, 4), nibble)),
                    _mm_shuffle_epi8(s.byte1_low, _mm_and_si128(prev1, nibble))),
      _mm_shuffle_epi8(s.byte2_high, _mm_and_si128(_mm_srli_epi16(in, 4), nibble)));
  const __m128i prev2 = _mm_alignr_epi8(in, s.prev, 14);
  const __m128i prev3 = _mm_alignr_epi8(in, s.prev, 13);
  // High bit set where the byte 2 back is >= E0 or the byte 3 back >= F0.
  const __m128i must23 = _mm_or_si128(_mm_subs_epu8(prev2, _mm_set1_epi8(0xE0 - 0x80)),
                                      _mm_subs_epu8(prev3, _mm_set1_epi8(0xF0 - 0x80)));
  const __m128i must23_80 = _mm_and_si128(must23, _mm_set1_epi8(static_cast<char>(0x80)));
  s.error = _mm_or_si128(s.error, _mm_xor_si128(must23_80, special));
  s.prev_incomplete = _mm_subs_epu8(in, s.max_complete);
  s.prev = in;
}

__attribute__((target("ssse3"))) bool ValidUtf8Ssse3(const uint8_t* p, size_t n) {
  constexpr char kTooShort = 1 << 0, kTooLong = 1 << 1, kOverlong3 = 1 << 2, kTooLarge = 1 << 3,
                 kSurrogate = 1 << 4, kOverlong2 = 1 << 5, kTwoConts = static_cast<char>(1 << 7),
                 kTooLarge1000 = 1 << 6, kOverlong4 = 1 << 6;
  constexpr char kCarry = kTooShort | kTooLong | kTwoConts;
  constexpr char kLarge = kCarry | kTooLarge | kTooLarge1000;
  constexpr char kCont = kTooLong | kOverlong2 | kTwoConts;
  Ssse3State s;
  s.byte1_high = _mm_setr_epi8(
      kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTooLong, kTwoConts,
      kTwoConts, kTwoConts, kTwoConts, kTooShort | kOverlong2, kTooShort,
      kTooShort | kOverlong3 | kSurrogate, kTooShort | kTooLarge | kTooLarge1000 | kOverlong4);
  s.byte1_low = _mm_setr_epi8(kCarry | kOverlong3 | kOverlong2 | kOverlong4, kCarry | kOverlong2,
                              kCarry, kCarry, kCarry | kTooLarge, kLarge, kLarge, kLarge, kLarge,
                              kLarge, kLarge, kLarge, kLarge, kLarge | kSurrogate, kLarge, kLarge);
  s.byte2_high =
      _mm_setr_epi8(kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort, kTooShort,
                    kTooShort, kCont | kOverlong3 | kTooLarge1000 | kOverlong4,
                    kCont | kOverlong3 | kTooLarge, kCont | kSurrogate | kTooLarge,
                    kCont | kSurrogate | kTooLarge, kTooShort, kTooShort, kTooShort, kTooShort);
  // A 4-byte lead in the last 3 bytes, a 3-byte one in the last 2, a
  // 2-byte one in the last: a sequence the next block must finish.
  s.max_complete =
      _mm_setr_epi8(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, static_cast<char>(0xEF),
                    static_cast<char>(0xDF), static_cast<char>(0xBF));
  s.prev = s.error = s.prev_incomplete = _mm_setzero_si128();
  size_t i = 0;
  for (; n - i >= 16; i += 16) {
    const __m128i in = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i));
    if (_mm_movemask_epi8(in) == 0) {
      s.error = _mm_or_si128(s.error, s.prev_incomplete);
      s.prev = in;
      s.prev_incomplete = _mm_setzero_si128();
    } else {
      CheckBlock(s, in);
    }
  }
  // The rest, padded with NULs: a sequence cut short by the end is then cut
  // by a NUL, an error the tables see.
  alignas(16) uint8_t last[16] = {};
  std::memcpy(last, p + i, n - i);
  CheckBlock(s, _mm_load_si128(reinterpret_cast<const __m128i*>(last)));
  return _mm_movemask_epi8(_mm_cmpeq_epi8(s.error, _mm_setzero_si128())) == 0xFFFF;
}

}  // namespace
#endif

bool ValidUtf8(Bytes b) {
#ifdef TILEDBFS_UTF8_SSSE3
  static const bool kSsse3 = __builtin_cpu_supports("ssse3");
  if (b.size() >= 32 && kSsse3) return ValidUtf8Ssse3(b.data(), b.size());
#endif
  return ValidRun(b.data(), b.size()) == b.size();
}

// Python's decoder reports a maximal invalid subpart as one error and goes
// on at the byte after it; backslashreplace writes each of its bytes, and
// every byte of such a subpart but the first is a continuation byte that
// starts nothing valid, so going on byte by byte writes the same text.
void AppendUtf8Escaped(std::string& out, Bytes b) {
  static constexpr char kDigits[] = "0123456789abcdef";
  if (ValidUtf8(b)) {
    out.append(reinterpret_cast<const char*>(b.data()), b.size());
    return;
  }
  const uint8_t* p = b.data();
  size_t n = b.size();
  for (;;) {
    const size_t run = ValidRun(p, n);
    out.append(reinterpret_cast<const char*>(p), run);
    if (run == n) return;
    const uint8_t c = p[run];
    const char hex[4] = {'\\', 'x', kDigits[c >> 4], kDigits[c & 15]};
    out.append(hex, 4);
    p += run + 1;
    n -= run + 1;
  }
}

uint64_t Utf8EscapedSize(Bytes b) {
  if (ValidUtf8(b)) return b.size();
  const uint8_t* p = b.data();
  size_t n = b.size();
  uint64_t size = n;
  for (;;) {
    const size_t run = ValidRun(p, n);
    if (run == n) return size;
    size += 3;
    p += run + 1;
    n -= run + 1;
  }
}

std::string Utf8Escaped(std::string s) {
  if (ValidUtf8(s)) return s;
  std::string out;
  out.reserve(s.size() + s.size() / 2);
  AppendUtf8Escaped(out, s);
  return out;
}

}  // namespace tiledbfs::core
