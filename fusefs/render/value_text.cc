#include "fusefs/render/value_text.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "core/format/number.h"
#include "core/util/text.h"
#include "fusefs/render/number_text.h"

namespace tiledbfs::fusefs {
namespace {

using core::AppendHex;
using core::AppendUtf8;
using core::Datatype;

using core::LoadNumber;

template <class T>
void AppendInt(std::string& out, T v) {
  char buf[kMaxNumberText];
  out.append(buf, WriteInteger(buf, v));
}

template <class F>
void AppendShortest(std::string& out, F v) {
  if (std::isnan(v)) {
    out += "nan";  // the sign of a NaN means nothing to a reader
    return;
  }
  if (std::isinf(v)) {
    out += v < 0 ? "-inf" : "inf";
    return;
  }
  char buf[kMaxNumberText];
  out.append(buf, WriteShortest(buf, v));
}

constexpr uint32_t kReplacement = 0xFFFD;

void AppendUtf16(std::string& out, Bytes b) {
  size_t n = b.size() / 2;
  for (size_t k = 0; k < n; ++k) {
    uint32_t u = LoadNumber<uint16_t>(b.subspan(2 * k));
    if (u >= 0xD800 && u < 0xDC00 && k + 1 < n) {
      uint32_t lo = LoadNumber<uint16_t>(b.subspan(2 * (k + 1)));
      if (lo >= 0xDC00 && lo < 0xE000) {
        AppendUtf8(out, 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00));
        ++k;
        continue;
      }
    }
    AppendUtf8(out, (u >= 0xD800 && u < 0xE000) ? kReplacement : u);
  }
}

void AppendUtf32(std::string& out, Bytes b) {
  size_t n = b.size() / 4;
  for (size_t k = 0; k < n; ++k) {
    uint32_t u = LoadNumber<uint32_t>(b.subspan(4 * k));
    bool bad = u > 0x10FFFF || (u >= 0xD800 && u < 0xE000);
    AppendUtf8(out, bad ? kReplacement : u);
  }
}

void AppendStringText(std::string& out, Datatype t, Bytes b) {
  switch (t) {
    case Datatype::kStringUtf16:
    case Datatype::kStringUcs2:
      AppendUtf16(out, b);
      break;
    case Datatype::kStringUtf32:
    case Datatype::kStringUcs4:
      AppendUtf32(out, b);
      break;
    default:
      core::AppendUtf8Escaped(out, b);
  }
}

// --- Datetimes. numpy (datetime.c) splits a value into days and a time of
// day with floor division, converts days to a proleptic Gregorian date and
// prints the year with "%04" PRId64. We do the same in 128-bit arithmetic so
// that no value overflows.

using i128 = __int128;

i128 FloorDiv(i128 a, i128 b) {
  i128 q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

void AppendI128(std::string& out, i128 v) {
  bool neg = v < 0;
  unsigned __int128 u = neg ? -static_cast<unsigned __int128>(v) : v;
  char buf[48];
  char* p = buf + sizeof(buf);
  do {
    *--p = static_cast<char>('0' + static_cast<int>(u % 10));
    u /= 10;
  } while (u != 0);
  if (neg) out += '-';
  out.append(p, buf + sizeof(buf));
}

// numpy prints years with "%04" PRId64: at least four characters including
// the sign, zero-padded ("0001", "-001", "-1000").
void AppendYear(std::string& out, i128 year) {
  std::string digits;
  AppendI128(digits, year < 0 ? -year : year);
  size_t width = year < 0 ? 3 : 4;
  if (year < 0) out += '-';
  if (digits.size() < width) out.append(width - digits.size(), '0');
  out += digits;
}

void Append2(std::string& out, int v) {
  out += static_cast<char>('0' + v / 10);
  out += static_cast<char>('0' + v % 10);
}

// Days since 1970-01-01 to (year, month, day): H. Hinnant's civil_from_days.
void AppendDate(std::string& out, i128 days) {
  i128 z = days + 719468;
  i128 era = FloorDiv(z, 146097);
  int64_t doe = static_cast<int64_t>(z - era * 146097);  // [0, 146096]
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  int64_t mp = (5 * doy + 2) / 153;
  int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  i128 y = era * 400 + yoe + (m <= 2 ? 1 : 0);
  AppendYear(out, y);
  out += '-';
  Append2(out, m);
  out += '-';
  Append2(out, d);
}

// Appends date, 'T' and the first `fields` of hh:mm:ss for a time given in
// seconds since the epoch.
void AppendDateTime(std::string& out, i128 seconds, int fields) {
  i128 days = FloorDiv(seconds, 86400);
  int64_t sod = static_cast<int64_t>(seconds - days * 86400);
  AppendDate(out, days);
  out += 'T';
  Append2(out, static_cast<int>(sod / 3600));
  if (fields >= 2) {
    out += ':';
    Append2(out, static_cast<int>(sod / 60 % 60));
  }
  if (fields >= 3) {
    out += ':';
    Append2(out, static_cast<int>(sod % 60));
  }
}

void AppendSubsecond(std::string& out, int64_t v, int digits) {
  i128 scale = 1;
  for (int k = 0; k < digits; ++k) scale *= 10;
  i128 seconds = FloorDiv(v, scale);
  int64_t frac = static_cast<int64_t>(v - seconds * scale);
  AppendDateTime(out, seconds, 3);
  out += '.';
  std::string f;
  AppendInt(f, frac);
  out.append(digits - f.size(), '0');
  out += f;
}

void AppendNumber(std::string& out, Datatype t, Bytes b) {
  if (b.size() != core::DatatypeSize(t) || !core::IsNumber(t)) return;
  if (t == Datatype::kBool) {
    out += b[0] != 0 ? "true" : "false";
    return;
  }
  if (core::IsDatetime(t)) return AppendDatetimeText(out, t, LoadNumber<int64_t>(b));
  core::VisitNumber(t, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_floating_point_v<T>) {
      AppendShortest(out, LoadNumber<T>(b));
    } else {
      AppendInt(out, LoadNumber<T>(b));  // TIME_* as int64_t
    }
  });
}

bool IsText(Datatype t) { return core::IsString(t); }
bool IsHex(Datatype t) { return core::IsBlobLike(t) || t == Datatype::kAny; }

}  // namespace

Bytes StripTrailingNuls(Bytes b, size_t unit) {
  size_t n = b.size() - b.size() % unit;
  while (n >= unit) {
    bool zero = true;
    for (size_t k = n - unit; k < n; ++k) zero = zero && b[k] == 0;
    if (!zero) break;
    n -= unit;
  }
  return b.first(n);
}

__int128 EnumerationIndex(Datatype t, Bytes b) {
  if (b.size() != core::DatatypeSize(t) || !core::IsInteger(t)) return -1;
  return core::VisitNumber(t, [&](auto zero) -> __int128 {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T>) {
      return LoadNumber<T>(b);
    } else {
      return -1;
    }
  });
}

void AppendFloatText(std::string& out, float v) { AppendShortest(out, v); }
void AppendDoubleText(std::string& out, double v) { AppendShortest(out, v); }

void AppendDatetimeText(std::string& out, Datatype t, int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) {
    out += "NaT";
    return;
  }
  i128 x = v;
  switch (t) {
    case Datatype::kDatetimeYear:
      return AppendYear(out, 1970 + x);
    case Datatype::kDatetimeMonth: {
      i128 years = FloorDiv(x, 12);
      AppendYear(out, 1970 + years);
      out += '-';
      Append2(out, static_cast<int>(x - years * 12) + 1);
      return;
    }
    case Datatype::kDatetimeWeek:
      return AppendDate(out, x * 7);
    case Datatype::kDatetimeDay:
      return AppendDate(out, x);
    case Datatype::kDatetimeHr:
      return AppendDateTime(out, x * 3600, 1);
    case Datatype::kDatetimeMin:
      return AppendDateTime(out, x * 60, 2);
    case Datatype::kDatetimeSec:
      return AppendDateTime(out, x, 3);
    case Datatype::kDatetimeMs:
      return AppendSubsecond(out, v, 3);
    case Datatype::kDatetimeUs:
      return AppendSubsecond(out, v, 6);
    case Datatype::kDatetimeNs:
      return AppendSubsecond(out, v, 9);
    case Datatype::kDatetimePs:
      return AppendSubsecond(out, v, 12);
    case Datatype::kDatetimeFs:
      return AppendSubsecond(out, v, 15);
    case Datatype::kDatetimeAs:
      return AppendSubsecond(out, v, 18);
    default:
      return;
  }
}

void AppendValueText(std::string& out, Datatype t, Bytes one_value) {
  if (IsText(t)) return AppendStringText(out, t, one_value);
  if (IsHex(t)) return AppendHex(out, one_value);
  AppendNumber(out, t, one_value);
}

void AppendCellBytesText(std::string& out, Datatype t, bool fixed, Bytes cell) {
  if (IsText(t)) {
    // Trailing NULs are dropped from var cells too: TileDB's default fill of a
    // var string is one NUL, which would make data.csv binary to diff/grep.
    return AppendStringText(out, t, StripTrailingNuls(cell, core::DatatypeSize(t)));
  }
  if (IsHex(t)) return AppendHex(out, cell);
  size_t size = core::DatatypeSize(t);
  size_t n = cell.size() / size;
  for (size_t k = 0; k < n; ++k) {
    if (k > 0) out += ' ';
    AppendNumber(out, t, cell.subspan(k * size, size));
  }
}

uint64_t EnumerationSize(const core::Enumeration& e) {
  if (e.cell_val_num == core::kVarNum) {
    if (e.offsets.empty()) return 0;
    uint64_t prev = 0;
    for (uint64_t o : e.offsets) {
      if (o < prev || o > e.data.size()) return 0;
      prev = o;
    }
    return e.offsets.size();
  }
  uint64_t size = core::DatatypeSize(e.type) * e.cell_val_num;
  return size == 0 ? 0 : e.data.size() / size;
}

Bytes EnumerationValue(const core::Enumeration& e, uint64_t i) {
  Bytes data(e.data);
  if (e.cell_val_num == core::kVarNum) {
    uint64_t end = i + 1 < e.offsets.size() ? e.offsets[i + 1] : e.data.size();
    return data.subspan(e.offsets[i], end - e.offsets[i]);
  }
  uint64_t size = core::DatatypeSize(e.type) * e.cell_val_num;
  return data.subspan(i * size, size);
}

void AppendCellText(std::string& out, const core::Column& c, uint64_t i,
                    const core::Enumeration* enumeration) {
  if (!c.valid(i)) return;
  Bytes cell = c.cell(i);
  if (enumeration == nullptr || !core::IsInteger(c.type)) {
    return AppendCellBytesText(out, c.type, !c.var(), cell);
  }
  uint64_t labels = EnumerationSize(*enumeration);
  size_t size = core::DatatypeSize(c.type);
  size_t n = cell.size() / size;
  for (size_t k = 0; k < n; ++k) {
    if (k > 0) out += ' ';
    Bytes index = cell.subspan(k * size, size);
    i128 idx = EnumerationIndex(c.type, index);
    if (idx < 0 || idx >= static_cast<i128>(labels)) {
      AppendNumber(out, c.type, index);
    } else {
      AppendCellBytesText(out, enumeration->type, enumeration->cell_val_num != core::kVarNum,
                          EnumerationValue(*enumeration, static_cast<uint64_t>(idx)));
    }
  }
}

core::Status CheckColumn(const core::Column& c) {
  auto fail = [&](std::string what) {
    return core::Error::InvalidArgument(fmt::format("column '{}': {}", c.name, what));
  };
  if (c.cell_val_num == 0) return fail("cell_val_num is 0");
  if (c.var()) {
    if (c.offsets.size() != c.cell_count + 1 || c.cell_count == UINT64_MAX) {
      return fail(fmt::format("offsets has {} entries, expected cell_count + 1 = {}",
                              c.offsets.size(), c.cell_count + 1));
    }
    for (uint64_t k = 0; k < c.cell_count; ++k) {
      if (c.offsets[k + 1] < c.offsets[k]) {
        return fail(fmt::format("offsets decrease at cell {}", k));
      }
    }
    if (c.offsets[0] > c.offsets.back() || c.offsets.back() > c.data.size()) {
      return fail(
          fmt::format("offsets end at {}, past data of {} bytes", c.offsets.back(), c.data.size()));
    }
  } else {
    uint64_t size = c.cell_size();
    if (size != 0 && c.cell_count > c.data.size() / size) {
      return fail(fmt::format("data has {} bytes, less than {} cells of {} bytes", c.data.size(),
                              c.cell_count, size));
    }
    if (size != 0 && c.data.size() != c.cell_count * size) {
      return fail(fmt::format("data has {} bytes, expected {} cells of {} bytes", c.data.size(),
                              c.cell_count, size));
    }
  }
  if (c.nullable && c.validity.size() != c.cell_count) {
    return fail(fmt::format("validity has {} bytes, expected cell_count = {}", c.validity.size(),
                            c.cell_count));
  }
  return core::Ok();
}

}  // namespace tiledbfs::fusefs
