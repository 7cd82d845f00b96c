#include "core/read/coords.h"

#include <algorithm>

namespace tiledbfs::core {
namespace {

template <class T>
T Load(Bytes b) {
  T v{};
  std::memcpy(&v, b.data(), std::min(sizeof(T), b.size()));
  return v;
}

template <class T>
int Cmp(Bytes a, Bytes b) {
  T x = Load<T>(a), y = Load<T>(b);
  return x < y ? -1 : (y < x ? 1 : 0);
}

}  // namespace

int CompareValues(Datatype t, Bytes a, Bytes b) {
  switch (t) {
    case Datatype::kInt8:
      return Cmp<int8_t>(a, b);
    case Datatype::kUInt8:
    case Datatype::kBool:
      return Cmp<uint8_t>(a, b);
    case Datatype::kInt16:
      return Cmp<int16_t>(a, b);
    case Datatype::kUInt16:
      return Cmp<uint16_t>(a, b);
    case Datatype::kInt32:
      return Cmp<int32_t>(a, b);
    case Datatype::kUInt32:
      return Cmp<uint32_t>(a, b);
    case Datatype::kUInt64:
      return Cmp<uint64_t>(a, b);
    case Datatype::kFloat32:
      return Cmp<float>(a, b);
    case Datatype::kFloat64:
      return Cmp<double>(a, b);
    default:
      break;
  }
  if (IsInteger(t) || IsDatetime(t) || IsTime(t)) return Cmp<int64_t>(a, b);
  size_t n = std::min(a.size(), b.size());
  int c = n == 0 ? 0 : std::memcmp(a.data(), b.data(), n);
  if (c != 0) return c < 0 ? -1 : 1;
  return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
}

__int128 ToInt128(Datatype t, Bytes v) {
  switch (t) {
    case Datatype::kInt8:
      return Load<int8_t>(v);
    case Datatype::kUInt8:
    case Datatype::kBool:
      return Load<uint8_t>(v);
    case Datatype::kInt16:
      return Load<int16_t>(v);
    case Datatype::kUInt16:
      return Load<uint16_t>(v);
    case Datatype::kInt32:
      return Load<int32_t>(v);
    case Datatype::kUInt32:
      return Load<uint32_t>(v);
    case Datatype::kUInt64:
      return Load<uint64_t>(v);
    default:
      if (IsInteger(t) || IsDatetime(t) || IsTime(t)) return Load<int64_t>(v);
      return 0;
  }
}

void FromInt128(Datatype t, __int128 v, uint8_t* out) {
  uint64_t size = DatatypeSize(t);
  uint64_t u = static_cast<uint64_t>(v);  // two's complement truncation
  std::memcpy(out, &u, std::min<uint64_t>(size, 8));
}

}  // namespace tiledbfs::core
