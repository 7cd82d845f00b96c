#include "fusefs/model/instant.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

namespace tiledbfs::fusefs {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// civil-from-days algorithm, inverted).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = static_cast<int64_t>(yoe) + era * 400 + (*m <= 2);
}

bool Digits(std::string_view s, size_t pos, size_t n, unsigned* out) {
  if (pos + n > s.size()) return false;
  unsigned v = 0;
  for (size_t i = pos; i < pos + n; ++i) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + static_cast<unsigned>(s[i] - '0');
  }
  *out = v;
  return true;
}

}  // namespace

std::string FormatIso(int64_t ms) {
  int64_t days = ms >= 0 ? ms / 86400000 : -((-ms + 86399999) / 86400000);
  int64_t rem = ms - days * 86400000;
  int64_t y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%03lldZ",
                static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600000),
                static_cast<long long>(rem / 60000 % 60), static_cast<long long>(rem / 1000 % 60),
                static_cast<long long>(rem % 1000));
  return buf;
}

std::optional<int64_t> ParseInstant(std::string_view s) {
  if (s.empty()) return std::nullopt;
  // Digits alone are milliseconds, however few (arrays written at
  // timestamps 1, 2, 3...): an ISO date has a '-' after its year.
  if (s.find_first_not_of("0123456789") == std::string_view::npos) {
    int64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
  }
  if (s.back() == 'Z') s.remove_suffix(1);
  unsigned y, mo, d, h = 0, mi = 0, sec = 0, ms = 0;
  if (!Digits(s, 0, 4, &y) || s.size() < 10 || s[4] != '-' || !Digits(s, 5, 2, &mo) ||
      s[7] != '-' || !Digits(s, 8, 2, &d)) {
    return std::nullopt;
  }
  size_t pos = 10;
  if (pos < s.size()) {
    if ((s[pos] != 'T' && s[pos] != ' ') || !Digits(s, pos + 1, 2, &h) || pos + 3 >= s.size() ||
        s[pos + 3] != ':' || !Digits(s, pos + 4, 2, &mi)) {
      return std::nullopt;
    }
    pos += 6;
    if (pos < s.size()) {
      if (s[pos] != ':' || !Digits(s, pos + 1, 2, &sec)) return std::nullopt;
      pos += 3;
      if (pos < s.size()) {
        if (s[pos] != '.') return std::nullopt;
        size_t n = s.size() - pos - 1;
        if (n == 0 || n > 9) return std::nullopt;
        unsigned frac;
        if (!Digits(s, pos + 1, n, &frac)) return std::nullopt;
        // Keep milliseconds: pad or cut to three digits.
        unsigned scaled = frac;
        for (size_t i = n; i < 3; ++i) scaled *= 10;
        for (size_t i = 3; i < n; ++i) scaled /= 10;
        ms = scaled;
      }
    }
  }
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59) return std::nullopt;
  static const unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d > kDays[mo - 1] + (mo == 2 && leap ? 1 : 0)) return std::nullopt;
  int64_t days = DaysFromCivil(y, mo, d);
  return ((days * 24 + h) * 60 + mi) * 60000 + static_cast<int64_t>(sec) * 1000 + ms;
}

namespace {

using I128 = __int128;

// Attoseconds per unit of a DATETIME type finer than a day (0 for others).
I128 AttosecondsPer(core::Datatype t) {
  using core::Datatype;
  const I128 s = static_cast<I128>(1000000000000000000LL);
  switch (t) {
    case Datatype::kDatetimeHr:
      return 3600 * s;
    case Datatype::kDatetimeMin:
      return 60 * s;
    case Datatype::kDatetimeSec:
      return s;
    case Datatype::kDatetimeMs:
      return s / 1000;
    case Datatype::kDatetimeUs:
      return s / 1000000;
    case Datatype::kDatetimeNs:
      return s / 1000000000;
    case Datatype::kDatetimePs:
      return 1000000;
    case Datatype::kDatetimeFs:
      return 1000;
    case Datatype::kDatetimeAs:
      return 1;
    default:
      return 0;
  }
}

I128 FloorDiv(I128 a, I128 b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0)) ? 1 : 0); }

}  // namespace

std::optional<int64_t> ParseDatetime(std::string_view s, core::Datatype t) {
  using core::Datatype;
  if (!s.empty() && s.back() == 'Z') s.remove_suffix(1);
  size_t pos = 0;
  bool negative = false;
  if (pos < s.size() && (s[pos] == '-' || s[pos] == '+')) negative = s[pos++] == '-';
  // The year: four digits or more (numpy writes years past 9999 in full).
  size_t year_end = pos;
  while (year_end < s.size() && s[year_end] >= '0' && s[year_end] <= '9') ++year_end;
  if (year_end - pos < 4 || year_end - pos > 12) return std::nullopt;
  int64_t year = 0;
  for (size_t i = pos; i < year_end; ++i) year = year * 10 + (s[i] - '0');
  if (negative) year = -year;
  pos = year_end;
  unsigned mo = 1, d = 1, h = 0, mi = 0, sec = 0;
  I128 frac_as = 0;
  auto field = [&](char sep, unsigned* out, bool time_sep = false) {
    if (pos >= s.size()) return true;
    if (!(s[pos] == sep || (time_sep && s[pos] == ' '))) return false;
    if (!Digits(s, pos + 1, 2, out)) return false;
    pos += 3;
    return true;
  };
  if (!field('-', &mo) || !field('-', &d) || !field('T', &h, true) || !field(':', &mi) ||
      !field(':', &sec)) {
    return std::nullopt;
  }
  if (pos < s.size()) {
    if (s[pos] != '.') return std::nullopt;
    const size_t n = s.size() - pos - 1;
    if (n == 0 || n > 18) return std::nullopt;
    I128 scale = static_cast<I128>(1000000000000000000LL);
    for (size_t i = pos + 1; i < s.size(); ++i) {
      if (s[i] < '0' || s[i] > '9') return std::nullopt;
      scale /= 10;
      frac_as += (s[i] - '0') * scale;
    }
  }
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59) return std::nullopt;
  static const unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (d > kDays[mo - 1] + (mo == 2 && leap ? 1 : 0)) return std::nullopt;
  const int64_t days = DaysFromCivil(year, mo, d);
  I128 v;
  switch (t) {
    case Datatype::kDatetimeYear:
      v = year - 1970;
      break;
    case Datatype::kDatetimeMonth:
      v = static_cast<I128>(year - 1970) * 12 + (mo - 1);
      break;
    case Datatype::kDatetimeWeek:
      v = FloorDiv(days, 7);
      break;
    case Datatype::kDatetimeDay:
      v = days;
      break;
    default: {
      const I128 per = AttosecondsPer(t);
      if (per == 0) return std::nullopt;
      const I128 secs = static_cast<I128>(days) * 86400 + h * 3600 + mi * 60 + sec;
      v = FloorDiv(secs * static_cast<I128>(1000000000000000000LL) + frac_as, per);
    }
  }
  if (v < INT64_MIN || v > INT64_MAX) return std::nullopt;
  return static_cast<int64_t>(v);
}

}  // namespace tiledbfs::fusefs
