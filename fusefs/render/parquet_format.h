// Parquet's own vocabulary, as data.parquet writes it (parquet.thrift's
// enums) and the PLAIN encoding of numbers: shared by the pages
// (parquet.cc) and the footer (parquet_footer.cc).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "core/format/datatype.h"
#include "core/format/number.h"

namespace tiledbfs::fusefs::parquet_format {

using core::Datatype;

// parquet.thrift's enums, as written.
enum Physical : int32_t {
  kBoolean = 0,
  kInt32 = 1,
  kInt64 = 2,
  kFloat = 4,
  kDouble = 5,
  kBytes = 6
};
enum Converted : int32_t {
  kUtf8 = 0,
  kList = 3,
  kTimeMicros = 8,
  kTimestampMillis = 9,
  kTimestampMicros = 10,
  kUint8 = 11,
  kInt8 = 15,
  kNoConverted = -1,
};
constexpr int32_t kPlain = 0, kRle = 3, kRleDictionary = 8;
constexpr int32_t kDataPage = 0, kDictionaryPage = 2;
constexpr int32_t kRequired = 0, kOptional = 1, kRepeated = 2;

// Strings whose values may carry the STRING annotation (others are bytes).
inline bool IsText(Datatype t) {
  return t == Datatype::kChar || t == Datatype::kStringAscii || t == Datatype::kStringUtf8;
}
// Types whose whole cell is one BYTE_ARRAY value.
inline bool IsBytes(Datatype t) {
  return core::IsString(t) || core::IsBlobLike(t) || t == Datatype::kAny;
}

// DATETIME and TIME units with a Parquet type of their own.
inline bool IsTimestamp(Datatype t) {
  return t == Datatype::kDatetimeMs || t == Datatype::kDatetimeUs || t == Datatype::kDatetimeNs;
}
inline bool IsTimeOfDay(Datatype t) { return t == Datatype::kTimeUs || t == Datatype::kTimeNs; }

inline Physical PhysicalOf(Datatype t) {
  if (t == Datatype::kBool) return kBoolean;
  if (t == Datatype::kFloat32) return kFloat;
  if (t == Datatype::kFloat64) return kDouble;
  if (IsBytes(t)) return kBytes;
  return core::DatatypeSize(t) <= 4 ? kInt32 : kInt64;
}

inline uint32_t WidthOf(Physical p) {
  switch (p) {
    case kInt32:
    case kFloat:
      return 4;
    case kInt64:
    case kDouble:
      return 8;
    default:
      return 0;
  }
}

// n values of type t at p as PLAIN values of `width` bytes: integers of 1
// and 2 bytes widened to 4 (sign- or zero-extended), others as they are.
inline void AppendNumbers(std::string& out, Datatype t, uint32_t width, const uint8_t* p,
                          uint64_t n) {
  const uint64_t size = core::DatatypeSize(t);
  if (size == width) {
    out.append(reinterpret_cast<const char*>(p), n * size);
    return;
  }
  const size_t at = out.size();
  out.resize(at + n * 4);
  char* o = out.data() + at;
  for (uint64_t i = 0; i < n; ++i, o += 4) {
    int32_t v = 0;
    switch (t) {
      case Datatype::kInt8:
        v = static_cast<int8_t>(p[i]);
        break;
      case Datatype::kUInt8:
        v = p[i];
        break;
      case Datatype::kInt16:
        v = core::LoadNumber<int16_t>({p + 2 * i, 2});
        break;
      default:  // kUInt16
        v = core::LoadNumber<uint16_t>({p + 2 * i, 2});
        break;
    }
    std::memcpy(o, &v, 4);
  }
}

}  // namespace tiledbfs::fusefs::parquet_format
