#include "core/format/datatype.h"

#include <fmt/format.h>

#include <array>

namespace tiledbfs::core {
namespace {

struct TypeInfo {
  std::string_view name;
  uint8_t size;
};

constexpr std::array<TypeInfo, 44> kTypes = {{
    {"INT32", 4},         {"INT64", 8},        {"FLOAT32", 4},       {"FLOAT64", 8},
    {"CHAR", 1},          {"INT8", 1},         {"UINT8", 1},         {"INT16", 2},
    {"UINT16", 2},        {"UINT32", 4},       {"UINT64", 8},        {"STRING_ASCII", 1},
    {"STRING_UTF8", 1},   {"STRING_UTF16", 2}, {"STRING_UTF32", 4},  {"STRING_UCS2", 2},
    {"STRING_UCS4", 4},   {"ANY", 1},          {"DATETIME_YEAR", 8}, {"DATETIME_MONTH", 8},
    {"DATETIME_WEEK", 8}, {"DATETIME_DAY", 8}, {"DATETIME_HR", 8},   {"DATETIME_MIN", 8},
    {"DATETIME_SEC", 8},  {"DATETIME_MS", 8},  {"DATETIME_US", 8},   {"DATETIME_NS", 8},
    {"DATETIME_PS", 8},   {"DATETIME_FS", 8},  {"DATETIME_AS", 8},   {"TIME_HR", 8},
    {"TIME_MIN", 8},      {"TIME_SEC", 8},     {"TIME_MS", 8},       {"TIME_US", 8},
    {"TIME_NS", 8},       {"TIME_PS", 8},      {"TIME_FS", 8},       {"TIME_AS", 8},
    {"BLOB", 1},          {"BOOL", 1},         {"GEOM_WKB", 1},      {"GEOM_WKT", 1},
}};

constexpr std::array<std::string_view, 13> kUnits = {"Y",  "M",  "W",  "D",  "h",  "m", "s",
                                                     "ms", "us", "ns", "ps", "fs", "as"};

}  // namespace

Result<Datatype> ParseDatatype(uint8_t byte) {
  if (byte >= kTypes.size()) return Error::Unsupported(fmt::format("unknown datatype {}", byte));
  return static_cast<Datatype>(byte);
}

uint64_t DatatypeSize(Datatype t) { return kTypes[static_cast<uint8_t>(t)].size; }

std::string_view DatatypeName(Datatype t) { return kTypes[static_cast<uint8_t>(t)].name; }

std::optional<Datatype> DatatypeFromName(std::string_view name) {
  for (size_t i = 0; i < kTypes.size(); ++i) {
    if (kTypes[i].name == name) return static_cast<Datatype>(i);
  }
  return std::nullopt;
}

bool IsInteger(Datatype t) {
  switch (t) {
    case Datatype::kInt8:
    case Datatype::kUInt8:
    case Datatype::kInt16:
    case Datatype::kUInt16:
    case Datatype::kInt32:
    case Datatype::kUInt32:
    case Datatype::kInt64:
    case Datatype::kUInt64:
      return true;
    default:
      return false;
  }
}

bool IsSigned(Datatype t) {
  switch (t) {
    case Datatype::kInt8:
    case Datatype::kInt16:
    case Datatype::kInt32:
    case Datatype::kInt64:
      return true;
    default:
      return IsDatetime(t) || IsTime(t);
  }
}

bool IsFloat(Datatype t) { return t == Datatype::kFloat32 || t == Datatype::kFloat64; }

bool IsString(Datatype t) {
  auto v = static_cast<uint8_t>(t);
  return t == Datatype::kChar || (v >= 11 && v <= 16);
}

bool IsDatetime(Datatype t) {
  auto v = static_cast<uint8_t>(t);
  return v >= 18 && v <= 30;
}

bool IsTime(Datatype t) {
  auto v = static_cast<uint8_t>(t);
  return v >= 31 && v <= 39;
}

bool IsBlobLike(Datatype t) {
  return t == Datatype::kBlob || t == Datatype::kGeomWkb || t == Datatype::kGeomWkt;
}

std::string_view TimeUnit(Datatype t) {
  auto v = static_cast<uint8_t>(t);
  if (v >= 18 && v <= 30) return kUnits[v - 18];
  if (v >= 31 && v <= 39) return kUnits[v - 31 + 4];
  return "";
}

Result<ArrayType> ParseArrayType(uint8_t byte) {
  if (byte > 1) return Error::Corrupt(fmt::format("unknown array type {}", byte));
  return static_cast<ArrayType>(byte);
}

Result<Layout> ParseLayout(uint8_t byte) {
  if (byte > 4) return Error::Corrupt(fmt::format("unknown layout {}", byte));
  return static_cast<Layout>(byte);
}

std::string_view LayoutName(Layout l) {
  switch (l) {
    case Layout::kRowMajor:
      return "row-major";
    case Layout::kColMajor:
      return "col-major";
    case Layout::kGlobalOrder:
      return "global-order";
    case Layout::kUnordered:
      return "unordered";
    case Layout::kHilbert:
      return "hilbert";
  }
  return "unknown";
}

}  // namespace tiledbfs::core
