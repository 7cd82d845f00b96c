#include "core/read/coords.h"

#include <algorithm>

#include "core/format/number.h"

namespace tiledbfs::core {

int CompareValues(Datatype t, Bytes a, Bytes b) {
  if (IsNumber(t)) {
    return VisitNumber(t, [&](auto type) {
      using T = decltype(type);
      const T x = LoadNumber<T>(a), y = LoadNumber<T>(b);
      return x < y ? -1 : (y < x ? 1 : 0);
    });
  }
  size_t n = std::min(a.size(), b.size());
  int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
  if (c != 0) return c < 0 ? -1 : 1;
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

__int128 ToInt128(Datatype t, Bytes v) {
  if (!IsNumber(t) || IsFloat(t)) return 0;
  return VisitNumber(
      t, [&](auto type) { return static_cast<__int128>(LoadNumber<decltype(type)>(v)); });
}

void FromInt128(Datatype t, __int128 v, uint8_t* out) {
  uint64_t size = DatatypeSize(t);
  uint64_t u = static_cast<uint64_t>(v);  // two's complement truncation
  std::memcpy(out, &u, std::min<uint64_t>(size, 8));
}

}  // namespace tiledbfs::core
