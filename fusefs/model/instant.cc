#include "fusefs/model/instant.h"

#include <charconv>
#include <cstdio>

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

}  // namespace tiledbfs::fusefs
