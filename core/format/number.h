// Values of the numeric datatypes as C++ numbers: the one switch from a
// Datatype to the C++ type of its values, for code that reads, compares or
// prints them (core/read/coords.cc, fusefs/model/documents.cc).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/format/datatype.h"
#include "core/util/bytes.h"

namespace tiledbfs::core {

// Whether one value of `t` is a number: INT*, UINT*, FLOAT32/64, BOOL,
// DATETIME_* and TIME_*.
inline bool IsNumber(Datatype t) {
  return IsInteger(t) || IsFloat(t) || IsDatetime(t) || IsTime(t) || t == Datatype::kBool;
}

// The value at the start of `b` as a T (little-endian, as stored), its
// missing high bytes zero when `b` is shorter than a T.
template <class T>
T LoadNumber(Bytes b) {
  T v{};
  std::memcpy(&v, b.data(), std::min(sizeof(T), b.size()));
  return v;
}

// Returns f(T{}) for T the C++ type of one value of the number type `t`:
// int8_t ... uint64_t, float, double; uint8_t for BOOL; int64_t for
// DATETIME_* and TIME_*. A type that is not a number (see IsNumber) is
// passed as int64_t too: callers check IsNumber first.
template <class F>
decltype(auto) VisitNumber(Datatype t, F&& f) {
  switch (t) {
    case Datatype::kInt8:
      return f(int8_t{});
    case Datatype::kUInt8:
    case Datatype::kBool:
      return f(uint8_t{});
    case Datatype::kInt16:
      return f(int16_t{});
    case Datatype::kUInt16:
      return f(uint16_t{});
    case Datatype::kInt32:
      return f(int32_t{});
    case Datatype::kUInt32:
      return f(uint32_t{});
    case Datatype::kUInt64:
      return f(uint64_t{});
    case Datatype::kFloat32:
      return f(float{});
    case Datatype::kFloat64:
      return f(double{});
    default:
      return f(int64_t{});  // INT64, DATETIME_*, TIME_*
  }
}

}  // namespace tiledbfs::core
