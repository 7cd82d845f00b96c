// The shortest decimal digits of a float or double that read back to the
// same value (fmt's Dragonbox), for number_text.h.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tiledbfs::fusefs {

// value = significand * 10^exponent, the significand without trailing zeros.
struct DecimalForm {
  uint64_t significand;
  int exponent;
};

// v finite and not zero.
DecimalForm ShortestDecimal(double v);
DecimalForm ShortestDecimal(float v);

// The forms of n values of type F (float or double) stored one after the
// other at `values` (any alignment), into out[0, n): ShortestDecimal of
// each finite value, {0, 0} for an infinity, a NaN or a zero. CSV float
// columns go through here a block at a time.
template <class F>
void ShortestDecimals(const uint8_t* values, size_t n, DecimalForm* out);
extern template void ShortestDecimals<float>(const uint8_t*, size_t, DecimalForm*);
extern template void ShortestDecimals<double>(const uint8_t*, size_t, DecimalForm*);

}  // namespace tiledbfs::fusefs
