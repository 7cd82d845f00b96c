// TileDB datatypes, array types and layouts as stored on disk (one byte each).
// Spec: format_spec/array_schema.md; values from TileDB's public C API enums.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/util/result.h"

namespace tiledbfs::core {

enum class Datatype : uint8_t {
  kInt32 = 0,
  kInt64 = 1,
  kFloat32 = 2,
  kFloat64 = 3,
  kChar = 4,
  kInt8 = 5,
  kUInt8 = 6,
  kInt16 = 7,
  kUInt16 = 8,
  kUInt32 = 9,
  kUInt64 = 10,
  kStringAscii = 11,
  kStringUtf8 = 12,
  kStringUtf16 = 13,
  kStringUtf32 = 14,
  kStringUcs2 = 15,
  kStringUcs4 = 16,
  kAny = 17,
  kDatetimeYear = 18,
  kDatetimeMonth = 19,
  kDatetimeWeek = 20,
  kDatetimeDay = 21,
  kDatetimeHr = 22,
  kDatetimeMin = 23,
  kDatetimeSec = 24,
  kDatetimeMs = 25,
  kDatetimeUs = 26,
  kDatetimeNs = 27,
  kDatetimePs = 28,
  kDatetimeFs = 29,
  kDatetimeAs = 30,
  kTimeHr = 31,
  kTimeMin = 32,
  kTimeSec = 33,
  kTimeMs = 34,
  kTimeUs = 35,
  kTimeNs = 36,
  kTimePs = 37,
  kTimeFs = 38,
  kTimeAs = 39,
  kBlob = 40,
  kBool = 41,
  kGeomWkb = 42,
  kGeomWkt = 43,
};

// Checks the byte is a known datatype; kUnsupported otherwise.
Result<Datatype> ParseDatatype(uint8_t byte);
// Size in bytes of one value (1 for CHAR/strings/BLOB, 2 for UTF16/UCS2...).
uint64_t DatatypeSize(Datatype t);
// TileDB's name without prefix: "INT32", "STRING_ASCII", "DATETIME_MS".
std::string_view DatatypeName(Datatype t);
std::optional<Datatype> DatatypeFromName(std::string_view name);

bool IsInteger(Datatype t);   // INT*/UINT* (not BOOL, not datetime)
bool IsSigned(Datatype t);    // signed integer, datetime and time types
bool IsFloat(Datatype t);     // FLOAT32/FLOAT64
bool IsString(Datatype t);    // CHAR and STRING_*
bool IsDatetime(Datatype t);  // DATETIME_*
bool IsTime(Datatype t);      // TIME_*
bool IsBlobLike(Datatype t);  // BLOB, GEOM_WKB, GEOM_WKT
// Datetime/time unit as numpy writes it: "Y","M","W","D","h","m","s","ms",...
std::string_view TimeUnit(Datatype t);

enum class ArrayType : uint8_t { kDense = 0, kSparse = 1 };
Result<ArrayType> ParseArrayType(uint8_t byte);

// Tile/cell order. kUnordered and kGlobalOrder appear in queries, kHilbert as
// a cell order of sparse arrays.
enum class Layout : uint8_t {
  kRowMajor = 0,
  kColMajor = 1,
  kGlobalOrder = 2,
  kUnordered = 3,
  kHilbert = 4,
};
Result<Layout> ParseLayout(uint8_t byte);
std::string_view LayoutName(Layout l);  // "row-major", "col-major", "hilbert", ...

constexpr uint32_t kVarNum = 0xFFFFFFFFu;  // cell_val_num of var-sized fields

}  // namespace tiledbfs::core
