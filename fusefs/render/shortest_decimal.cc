#include "fusefs/render/shortest_decimal.h"

// fmt's Dragonbox compiled into this file from fmt's headers, with its full
// table of the powers of ten. Debian's libfmt.so is built with the
// compressed table, which rebuilds each power with two more 128-bit
// multiplications, and is reached through a call into the shared library:
// 25 ns a double there against 15 ns here (20M random doubles in
// [-1000, 1000], one core). Every float of a CSV or text file goes through
// here twice (the layout pass measures it, the read writes it).
//
// Header-only mode for this file alone (fmt::fmt defines FMT_SHARED for
// every file that links it). fusefs/CMakeLists.txt compiles this file with
// hidden visibility: the copies of fmt's functions made here are not
// exported to take the place of the shared library's. Both compute the same
// digits; only how the power of ten is found differs.
#undef FMT_SHARED
#define FMT_HEADER_ONLY 1
#define FMT_USE_FULL_CACHE_DRAGONBOX 1
#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace tiledbfs::fusefs {

namespace {

template <class F>
DecimalForm Shortest(F v) {
  const auto dec = fmt::detail::dragonbox::to_decimal(v);
  return {static_cast<uint64_t>(dec.significand), dec.exponent};
}

}  // namespace

DecimalForm ShortestDecimal(double v) { return Shortest(v); }
DecimalForm ShortestDecimal(float v) { return Shortest(v); }

template <class F>
void ShortestDecimals(const uint8_t* values, size_t n, DecimalForm* out) {
  for (size_t i = 0; i < n; ++i) {
    F v;
    std::memcpy(&v, values + i * sizeof(F), sizeof(F));
    // Dragonbox reads its table of powers out of range for an infinity or
    // a NaN, whose exponent bits are all ones.
    out[i] = std::isfinite(v) && v != 0 ? Shortest(v) : DecimalForm{0, 0};
  }
}

template void ShortestDecimals<float>(const uint8_t*, size_t, DecimalForm*);
template void ShortestDecimals<double>(const uint8_t*, size_t, DecimalForm*);

}  // namespace tiledbfs::fusefs
