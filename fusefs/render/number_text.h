// Fast decimal text of numbers, for the CSV hot loop (csv.cc) and
// value_text.cc. The text is exactly std::to_chars' (integers: decimal;
// floats: the shortest form that reads back to the same value, plain or
// exponent notation, whichever is shorter, plain on a tie), written faster:
// integers 8 digits at a time in one register, floats from the shortest
// decimal digits given by fmt's Dragonbox (shortest_decimal.h). Callers
// handle nan and inf.
//
// Write* functions write at p (room for kMaxNumberText bytes, which they may
// use past the text as scratch) and return the end of the text; Measure*
// functions return the length the text would have.
#pragma once

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "fusefs/render/shortest_decimal.h"

namespace tiledbfs::fusefs {

inline constexpr size_t kMaxNumberText = 32;

namespace number_text_internal {

inline constexpr char kDigits2[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

// The 8 digits of v < 1e8 (leading zeros kept) as the bytes of a
// little-endian uint64, first digit lowest, computed in one register: the
// two halves of 4 digits side by side, each split into 2 + 2 digits, then
// each pair into 1 + 1 (the divisions by 100 and 10 as multiplications that
// are exact over the lanes' ranges, lanes kept apart by masks).
inline uint64_t Ascii8(uint32_t v) {
  const uint64_t x = (v / 10000) | (uint64_t{v % 10000} << 32);
  const uint64_t hundreds = ((x * 5243) >> 19) & 0x0000007F0000007Full;  // x / 100, x < 10^4
  const uint64_t pairs = hundreds | ((x - hundreds * 100) << 16);
  const uint64_t tens = ((pairs * 103) >> 10) & 0x000F000F000F000Full;  // y / 10, y < 100
  const uint64_t digits = tens | ((pairs - tens * 10) << 8);
  return digits + 0x3030303030303030ull;
}

inline constexpr bool kLittleEndian = std::endian::native == std::endian::little;

// Exactly 8 digits of v < 1e8 (leading zeros kept).
inline void Write8(char* p, uint32_t v) {
  if constexpr (kLittleEndian) {
    const uint64_t a = Ascii8(v);
    std::memcpy(p, &a, 8);
  } else {
    uint32_t hi = v / 10000, lo = v % 10000;
    std::memcpy(p, kDigits2 + 2 * (hi / 100), 2);
    std::memcpy(p + 2, kDigits2 + 2 * (hi % 100), 2);
    std::memcpy(p + 4, kDigits2 + 2 * (lo / 100), 2);
    std::memcpy(p + 6, kDigits2 + 2 * (lo % 100), 2);
  }
}

inline constexpr uint64_t kPow10[20] = {1ull,
                                        10ull,
                                        100ull,
                                        1000ull,
                                        10000ull,
                                        100000ull,
                                        1000000ull,
                                        10000000ull,
                                        100000000ull,
                                        1000000000ull,
                                        10000000000ull,
                                        100000000000ull,
                                        1000000000000ull,
                                        10000000000000ull,
                                        100000000000000ull,
                                        1000000000000000ull,
                                        10000000000000000ull,
                                        100000000000000000ull,
                                        1000000000000000000ull,
                                        10000000000000000000ull};

// The number of decimal digits of v (1 for 0) without branches: a chain of
// compares mispredicts on values of random widths (coordinates, float
// significands). From the bit width b, floor(b * log10 2)
// (1233 / 4096 is log10 2 to 4 places, exact for b <= 64) is the digit
// count or one less; one compare with a power of ten settles it.
inline int DigitsOf(uint64_t v) {
  v |= 1;  // 0 has the one digit of 1
  const int low = (std::bit_width(v) * 1233) >> 12;
  return low + (v >= kPow10[low]);
}

// v < 1e8, no leading zeros. Writes 8 bytes at p (the caller has room for
// kMaxNumberText), the digits first: the 8 digits of Ascii8 with the leading
// zeros shifted out, in one store. (A loop of two digits a turn had its hot
// spot on its exit branch in perf, on numbers of random widths.)
inline char* WriteSmall(char* p, uint32_t v) {
  const int n = DigitsOf(v);
  if constexpr (kLittleEndian) {
    const uint64_t a = Ascii8(v) >> (8 * (8 - n));
    std::memcpy(p, &a, 8);
    return p + n;
  }
  char* end = p + n;
  char* q = end;
  while (v >= 100) {
    q -= 2;
    std::memcpy(q, kDigits2 + 2 * (v % 100), 2);
    v /= 100;
  }
  if (v >= 10) {
    std::memcpy(q - 2, kDigits2 + 2 * v, 2);
  } else {
    q[-1] = static_cast<char>('0' + v);
  }
  return end;
}

}  // namespace number_text_internal

// The number of decimal digits of v (1 for 0).
inline int DecimalDigits(uint64_t v) { return number_text_internal::DigitsOf(v); }

inline char* WriteDecimal(char* p, uint64_t v) {
  using namespace number_text_internal;
  if (v < 100000000) return WriteSmall(p, static_cast<uint32_t>(v));
  if (v < 10000000000000000ull) {
    p = WriteSmall(p, static_cast<uint32_t>(v / 100000000));
    Write8(p, static_cast<uint32_t>(v % 100000000));
    return p + 8;
  }
  p = WriteSmall(p, static_cast<uint32_t>(v / 10000000000000000ull));
  uint64_t r = v % 10000000000000000ull;
  Write8(p, static_cast<uint32_t>(r / 100000000));
  Write8(p + 8, static_cast<uint32_t>(r % 100000000));
  return p + 16;
}

template <class T>
inline char* WriteInteger(char* p, T v) {
  static_assert(std::is_integral_v<T>);
  if constexpr (std::is_signed_v<T>) {
    if (v < 0) {
      *p++ = '-';
      return WriteDecimal(p, uint64_t{0} - static_cast<uint64_t>(static_cast<int64_t>(v)));
    }
  }
  return WriteDecimal(p, static_cast<uint64_t>(v));
}

template <class T>
inline size_t MeasureInteger(T v) {
  if constexpr (std::is_signed_v<T>) {
    if (v < 0)
      return 1 + DecimalDigits(uint64_t{0} - static_cast<uint64_t>(static_cast<int64_t>(v)));
  }
  return DecimalDigits(static_cast<uint64_t>(v));
}

namespace number_text_internal {

// The shortest decimal digits of a finite, non-zero |v| and how to print
// them: value = digits * 10^exponent.
struct ShortestForm {
  uint64_t digits;
  int count;     // number of digits
  int exponent;  // of the last digit
  bool fixed;    // plain notation is not longer than the exponent one
};

// The form of ShortestDecimal's result.
inline ShortestForm FormOf(DecimalForm dec) {
  ShortestForm s;
  s.digits = dec.significand;  // without trailing zeros (shortest_decimal.h)
  s.exponent = dec.exponent;
  s.count = DecimalDigits(s.digits);
  int sci_exp = s.exponent + s.count - 1;
  int abs_exp = sci_exp < 0 ? -sci_exp : sci_exp;
  int sci_len = s.count + (s.count > 1 ? 1 : 0) + 2 + (abs_exp >= 100 ? 3 : 2);
  int fixed_len = s.exponent >= 0         ? s.count + s.exponent
                  : -s.exponent < s.count ? s.count + 1
                                          : 2 - s.exponent;
  s.fixed = fixed_len <= sci_len;
  return s;
}

// std::to_chars prints plain integers above 2^digits with their exact digits,
// not the shortest digits padded with zeros: those go to std::to_chars.
template <class F>
inline bool NeedsExactDigits(F v, const ShortestForm& s) {
  constexpr F kExact = static_cast<F>(uint64_t{1} << std::numeric_limits<F>::digits);
  return s.fixed && s.exponent > 0 && std::fabs(v) >= kExact;
}

inline int FixedLength(const ShortestForm& s) {
  return s.exponent >= 0         ? s.count + s.exponent
         : -s.exponent < s.count ? s.count + 1
                                 : 2 - s.exponent;
}

inline int ScientificLength(const ShortestForm& s) {
  int sci_exp = s.exponent + s.count - 1;
  int abs_exp = sci_exp < 0 ? -sci_exp : sci_exp;
  return s.count + (s.count > 1 ? 1 : 0) + 2 + (abs_exp >= 100 ? 3 : 2);
}

// Digits d < 10^16 as 16 characters with leading zeros, first character in
// the lowest byte (little-endian only).
inline unsigned __int128 Ascii16(uint64_t d) {
  const uint64_t high = Ascii8(static_cast<uint32_t>(d / 100000000));
  const uint64_t low = Ascii8(static_cast<uint32_t>(d % 100000000));
  return high | (static_cast<unsigned __int128>(low) << 64);
}

// Plain notation with the point inside the digits: the n (<= 17) digits of
// `digits`, `whole` (1 to 7) of them before the point. Without a branch on
// n or `whole`, which vary from value to value in a column of random
// doubles (a byte loop moving the whole part left, and WriteDecimal's tests
// of the width, mispredicted about twice per value): a 17th digit is
// written first on its own, then the other 16 or fewer, leading zeros
// shifted out, are stored one place right, and the 8 bytes at the start
// are stored again with the point merged in. Writes 18 bytes at p.
inline char* WritePointed(char* p, uint64_t digits, int n, int whole) {
  const uint64_t lead = digits / 10000000000000000ull;
  const int has_lead = n > 16 ? 1 : 0;
  *p = static_cast<char>('0' + lead);
  p += has_lead;
  n -= has_lead;
  whole -= has_lead;
  const unsigned __int128 text = Ascii16(digits - lead * 10000000000000000ull) >> (8 * (16 - n));
  std::memcpy(p + 1, &text, 16);
  const uint64_t first = static_cast<uint64_t>(text);
  const uint64_t before = (uint64_t{1} << (8 * whole)) - 1;
  const uint64_t word =
      (first & before) | (uint64_t{'.'} << (8 * whole)) | ((first & ~before) << 8);
  std::memcpy(p, &word, 8);
  return p + n + 1;
}

}  // namespace number_text_internal

// WriteShortest of v, given its ShortestDecimal `dec` (ShortestDecimals'
// form: any for a zero).
template <class F>
inline char* WriteShortestFrom(char* p, F v, DecimalForm dec) {
  using namespace number_text_internal;
  static_assert(std::is_same_v<F, float> || std::is_same_v<F, double>);
  char* start = p;
  *p = '-';  // kept only for a negative value: a random sign is no branch
  p += std::signbit(v) ? 1 : 0;
  if (v == 0) {
    *p++ = '0';
    return p;
  }
  ShortestForm s = FormOf(dec);
  if (NeedsExactDigits(v, s)) return std::to_chars(start, start + kMaxNumberText, v).ptr;
  const int n = s.count, e = s.exponent;
  if (s.fixed) {
    if (e >= 0) {
      p = WriteDecimal(p, s.digits);
      std::memset(p, '0', static_cast<size_t>(e));
      return p + e;
    }
    if (kLittleEndian && -e < n && n + e <= 7) return WritePointed(p, s.digits, n, n + e);
    if (-e < n) {
      // The digits one place right, then the integer part back left of the
      // point (byte by byte: each load within one earlier store).
      int whole = n + e;
      char* end = WriteDecimal(p + 1, s.digits);
      for (int k = 0; k < whole; ++k) p[k] = p[k + 1];
      p[whole] = '.';
      return end;
    }
    *p++ = '0';
    *p++ = '.';
    std::memset(p, '0', static_cast<size_t>(-e - n));
    return WriteDecimal(p + (-e - n), s.digits);
  }
  if (n == 1) {
    *p++ = static_cast<char>('0' + s.digits);
  } else {
    char* end = WriteDecimal(p + 1, s.digits);  // then the first digit, and the point
    p[0] = p[1];
    p[1] = '.';
    p = end;
  }
  int sci_exp = e + n - 1;
  *p++ = 'e';
  *p++ = sci_exp < 0 ? '-' : '+';
  unsigned a = static_cast<unsigned>(sci_exp < 0 ? -sci_exp : sci_exp);
  if (a >= 100) {
    *p++ = static_cast<char>('0' + a / 100);
    a %= 100;
  }
  std::memcpy(p, kDigits2 + 2 * a, 2);
  return p + 2;
}

// Shortest round-trip text of a finite float or double (std::to_chars'
// text, "-0" for negative zero).
template <class F>
inline char* WriteShortest(char* p, F v) {
  return WriteShortestFrom(p, v, v == 0 ? DecimalForm{0, 0} : ShortestDecimal(v));
}

// The length of WriteShortestFrom's text (finite v, `dec` as there).
template <class F>
inline size_t MeasureShortestFrom(F v, DecimalForm dec) {
  using namespace number_text_internal;
  size_t sign = std::signbit(v) ? 1 : 0;
  if (v == 0) return sign + 1;
  ShortestForm s = FormOf(dec);
  // Exact digits of a plain integer are as many as the shortest digits
  // padded with zeros: the same magnitude.
  return sign + static_cast<size_t>(s.fixed ? FixedLength(s) : ScientificLength(s));
}

// The length of WriteShortest's text (finite v).
template <class F>
inline size_t MeasureShortest(F v) {
  return MeasureShortestFrom(v, v == 0 ? DecimalForm{0, 0} : ShortestDecimal(v));
}

}  // namespace tiledbfs::fusefs
