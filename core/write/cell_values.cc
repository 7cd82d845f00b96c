#include "core/write/cell_values.h"

#include <algorithm>
#include <cstring>

namespace tiledbfs::core {

Num LoadNum(Datatype t, const uint8_t* p) {
  Num n;
  auto get = [&](auto x) {
    std::memcpy(&x, p, sizeof(x));
    return x;
  };
  switch (t) {
    case Datatype::kInt8:
      n.kind = Num::kSigned;
      n.i = get(int8_t{});
      break;
    case Datatype::kInt16:
      n.kind = Num::kSigned;
      n.i = get(int16_t{});
      break;
    case Datatype::kInt32:
      n.kind = Num::kSigned;
      n.i = get(int32_t{});
      break;
    case Datatype::kInt64:
      n.kind = Num::kSigned;
      n.i = get(int64_t{});
      break;
    case Datatype::kUInt8:
    case Datatype::kBool:
      n.kind = Num::kUnsigned;
      n.u = get(uint8_t{});
      break;
    case Datatype::kUInt16:
      n.kind = Num::kUnsigned;
      n.u = get(uint16_t{});
      break;
    case Datatype::kUInt32:
      n.kind = Num::kUnsigned;
      n.u = get(uint32_t{});
      break;
    case Datatype::kUInt64:
      n.kind = Num::kUnsigned;
      n.u = get(uint64_t{});
      break;
    case Datatype::kFloat32:
      n.kind = Num::kFloat;
      n.d = get(float{});
      break;
    case Datatype::kFloat64:
      n.kind = Num::kFloat;
      n.d = get(double{});
      break;
    default:
      if (IsDatetime(t) || IsTime(t)) {
        n.kind = Num::kSigned;
        n.i = get(int64_t{});
      }
      break;
  }
  return n;
}

int CompareCells(Datatype t, bool single, Bytes a, Bytes b) {
  if (single && a.size() == DatatypeSize(t) && b.size() == a.size()) {
    Num x = LoadNum(t, a.data()), y = LoadNum(t, b.data());
    switch (x.kind) {
      case Num::kSigned:
        return x.i < y.i ? -1 : x.i > y.i;
      case Num::kUnsigned:
        return x.u < y.u ? -1 : x.u > y.u;
      case Num::kFloat:
        return x.d < y.d ? -1 : x.d > y.d;
      default:
        break;
    }
  }
  size_t n = std::min(a.size(), b.size());
  int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
  if (c != 0) return c;
  return a.size() < b.size() ? -1 : a.size() > b.size();
}

uint64_t AddSum(uint64_t acc, Num v) {
  switch (v.kind) {
    case Num::kSigned: {
      int64_t s;
      std::memcpy(&s, &acc, 8);
      int64_t r;
      if (__builtin_add_overflow(s, v.i, &r)) r = v.i > 0 ? INT64_MAX : INT64_MIN;
      std::memcpy(&acc, &r, 8);
      return acc;
    }
    case Num::kUnsigned: {
      uint64_t r;
      if (__builtin_add_overflow(acc, v.u, &r)) r = UINT64_MAX;
      return r;
    }
    case Num::kFloat: {
      double s;
      std::memcpy(&s, &acc, 8);
      s += v.d;
      std::memcpy(&acc, &s, 8);
      return acc;
    }
    default:
      return acc;
  }
}

}  // namespace tiledbfs::core
