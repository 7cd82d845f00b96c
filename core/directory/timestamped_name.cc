#include "core/directory/timestamped_name.h"

#include <fmt/format.h>

#include <tuple>
#include <vector>

namespace tiledbfs::core {
namespace {

constexpr size_t kUuidChars = 32;
constexpr size_t kMaxDecimalDigits = 20;  // uint64 max has 20 digits

bool IsHexUuid(std::string_view s) {
  if (s.size() != kUuidChars) return false;
  for (char c : s) {
    bool hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    if (!hex) return false;
  }
  return true;
}

bool AllDigits(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Decimal digits only (no sign, no spaces), no overflow.
bool ParseDecimal(std::string_view s, uint64_t max, uint64_t* out) {
  if (!AllDigits(s) || s.size() > kMaxDecimalDigits) return false;
  uint64_t v = 0;
  for (char c : s) {
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (max - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

std::vector<std::string_view> SplitUnderscore(std::string_view s) {
  std::vector<std::string_view> parts;
  size_t start = 0;
  while (true) {
    size_t p = s.find('_', start);
    if (p == std::string_view::npos) {
      parts.push_back(s.substr(start));
      return parts;
    }
    parts.push_back(s.substr(start, p - start));
    start = p + 1;
  }
}

}  // namespace

bool TimestampedName::operator<(const TimestampedName& o) const {
  return std::tie(t1, t2, uuid, name) < std::tie(o.t1, o.t2, o.uuid, o.name);
}

uint32_t TimestampedName::ImpliedFormatVersion() const {
  switch (format) {
    case NameFormat::kUuidTimestamp:
      return 2;
    case NameFormat::kTimestampsUuid:
      return 4;
    case NameFormat::kTimestampsUuidVersion:
      return version;
  }
  return version;
}

Result<TimestampedName> ParseTimestampedName(std::string_view file_name) {
  auto bad = [&](std::string_view why) {
    return Error::Corrupt(fmt::format("not a timestamped name \"{}\": {}", file_name, why));
  };
  if (file_name.find('/') != std::string_view::npos) return bad("contains '/'");
  if (file_name.find('\0') != std::string_view::npos) return bad("contains a NUL byte");

  TimestampedName out;
  std::string_view stem = file_name;
  size_t dot = file_name.rfind('.');
  if (dot != std::string_view::npos) {
    stem = file_name.substr(0, dot);
    out.extension = std::string(file_name.substr(dot));
    if (out.extension.size() == 1) return bad("empty extension");
  }
  if (stem.find('.') != std::string_view::npos) return bad("more than one '.'");
  if (stem.size() < 2 || stem.substr(0, 2) != "__") return bad("does not start with \"__\"");
  out.name = std::string(stem);

  std::vector<std::string_view> f = SplitUnderscore(stem.substr(2));
  constexpr uint64_t kU64Max = ~uint64_t{0};
  if (f.size() == 2 || (f.size() == 3 && !IsHexUuid(f[2]))) {
    // __uuid_t or __uuid_tfirst_tlast (format 1-2).
    out.format = NameFormat::kUuidTimestamp;
    if (!IsHexUuid(f[0])) return bad("uuid is not 32 hex digits");
    uint64_t t = 0;
    if (!ParseDecimal(f[1], kU64Max, &t)) return bad("timestamp is not a decimal uint64");
    if (f.size() == 3 && !ParseDecimal(f[2], kU64Max, &t)) {
      return bad("second timestamp is not a decimal uint64");
    }
    out.uuid = std::string(f[0]);
    out.t1 = out.t2 = t;
    return out;
  }
  if (f.size() != 3 && f.size() != 4) {
    return bad(fmt::format("{} '_'-separated fields, expected 2 to 4", f.size()));
  }
  out.format = f.size() == 3 ? NameFormat::kTimestampsUuid : NameFormat::kTimestampsUuidVersion;
  if (!ParseDecimal(f[0], kU64Max, &out.t1)) return bad("t1 is not a decimal uint64");
  if (!ParseDecimal(f[1], kU64Max, &out.t2)) return bad("t2 is not a decimal uint64");
  if (!IsHexUuid(f[2])) return bad("uuid is not 32 hex digits");
  out.uuid = std::string(f[2]);
  if (f.size() == 4) {
    uint64_t v = 0;
    if (!ParseDecimal(f[3], ~uint32_t{0}, &v)) return bad("version is not a decimal uint32");
    out.version = static_cast<uint32_t>(v);
  }
  if (out.t1 > out.t2) return bad(fmt::format("t1 {} is after t2 {}", out.t1, out.t2));
  return out;
}

}  // namespace tiledbfs::core
