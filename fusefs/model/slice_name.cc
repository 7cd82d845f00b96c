#include "fusefs/model/slice_name.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/read/coords.h"
#include "fusefs/model/instant.h"

namespace tiledbfs::fusefs {

using core::Datatype;
using core::Error;

namespace {

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

template <typename T>
core::ByteVec Store(T v) {
  core::ByteVec out(sizeof(T));
  std::memcpy(out.data(), &v, sizeof(T));
  return out;
}

// An integer of type T, written in decimal; nullopt if it is not one or
// does not fit T.
template <typename T>
std::optional<T> ParseInteger(std::string_view s) {
  T v{};
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

template <typename T>
std::optional<core::ByteVec> IntegerBytes(std::string_view s) {
  auto v = ParseInteger<T>(s);
  if (!v) return std::nullopt;
  return Store(*v);
}

template <typename T>
std::optional<core::ByteVec> FloatBytes(std::string_view s) {
  T v{};
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty() || std::isnan(v)) {
    return std::nullopt;
  }
  return Store(v);
}

}  // namespace

std::optional<std::string> UnescapePercent(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 2 >= text.size()) return std::nullopt;
    const int a = HexDigit(text[i + 1]), b = HexDigit(text[i + 2]);
    if (a < 0 || b < 0) return std::nullopt;
    out.push_back(static_cast<char>(a * 16 + b));
    i += 2;
  }
  return out;
}

Result<core::ByteVec> ParseDimensionValue(std::string_view s, const core::Dimension& dim) {
  std::optional<core::ByteVec> v;
  switch (dim.type) {
    case Datatype::kInt8:
      v = IntegerBytes<int8_t>(s);
      break;
    case Datatype::kUInt8:
      v = IntegerBytes<uint8_t>(s);
      break;
    case Datatype::kInt16:
      v = IntegerBytes<int16_t>(s);
      break;
    case Datatype::kUInt16:
      v = IntegerBytes<uint16_t>(s);
      break;
    case Datatype::kInt32:
      v = IntegerBytes<int32_t>(s);
      break;
    case Datatype::kUInt32:
      v = IntegerBytes<uint32_t>(s);
      break;
    case Datatype::kInt64:
      v = IntegerBytes<int64_t>(s);
      break;
    case Datatype::kUInt64:
      v = IntegerBytes<uint64_t>(s);
      break;
    case Datatype::kFloat32:
      v = FloatBytes<float>(s);
      break;
    case Datatype::kFloat64:
      v = FloatBytes<double>(s);
      break;
    default:
      if (core::IsDatetime(dim.type)) {
        // The raw count, or ISO as data.csv writes it.
        std::optional<int64_t> n = ParseInteger<int64_t>(s);
        if (!n) n = ParseDatetime(s, dim.type);
        if (n) v = Store(*n);
      } else if (core::IsTime(dim.type)) {
        v = IntegerBytes<int64_t>(s);
      } else if (dim.var() || dim.type == Datatype::kChar || dim.type == Datatype::kStringAscii ||
                 dim.type == Datatype::kStringUtf8) {
        v = core::ByteVec(s.begin(), s.end());
      }
  }
  if (!v) {
    return Error::NotFound(fmt::format("'{}' is not a value of dimension '{}' ({})", s, dim.name,
                                       core::DatatypeName(dim.type)));
  }
  return std::move(*v);
}

Result<core::Subarray> ParseSliceName(std::string_view name, const core::ArraySchema& schema) {
  const size_t dims = schema.dimensions.size();
  core::Subarray sub(dims);
  auto fail = [&](std::string why) {
    return Error::NotFound(fmt::format("slice/{}: {}", name, why));
  };
  if (name.empty()) return fail("no range");
  size_t start = 0;
  while (start <= name.size()) {
    size_t end = name.find(',', start);
    if (end == std::string_view::npos) end = name.size();
    std::string_view part = name.substr(start, end - start);
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) return fail(fmt::format("'{}' has no '='", part));
    std::optional<std::string> dim_name = UnescapePercent(part.substr(0, eq));
    if (!dim_name) return fail(fmt::format("'{}': a '%' not followed by two hex digits", part));
    const int d = schema.DimensionIndex(*dim_name);
    if (d < 0) return fail(fmt::format("no dimension '{}'", *dim_name));
    if (sub[d]) return fail(fmt::format("dimension '{}' named twice", *dim_name));
    std::string_view value = part.substr(eq + 1);
    // A '.' next to another is written %2E, so ".." can only be the range's.
    const size_t dots = value.find("..");
    std::string_view lo_text = dots == std::string_view::npos ? value : value.substr(0, dots);
    std::string_view hi_text = dots == std::string_view::npos ? value : value.substr(dots + 2);
    std::optional<std::string> lo_s = UnescapePercent(lo_text), hi_s = UnescapePercent(hi_text);
    if (!lo_s || !hi_s)
      return fail(fmt::format("'{}': a '%' not followed by two hex digits", part));
    const core::Dimension& dim = schema.dimensions[d];
    auto lo = ParseDimensionValue(*lo_s, dim);
    if (!lo.ok()) return fail(lo.error().message());
    auto hi = ParseDimensionValue(*hi_s, dim);
    if (!hi.ok()) return fail(hi.error().message());
    if (core::CompareValues(dim.type, core::Bytes(*lo), core::Bytes(*hi)) > 0) {
      return fail(fmt::format("dimension '{}': {} is above {}", dim.name, *lo_s, *hi_s));
    }
    if (!dim.var() && dim.domain.lo.size() == lo->size() && dim.domain.hi.size() == hi->size() &&
        (core::CompareValues(dim.type, core::Bytes(*lo), core::Bytes(dim.domain.lo)) < 0 ||
         core::CompareValues(dim.type, core::Bytes(*hi), core::Bytes(dim.domain.hi)) > 0)) {
      return fail(fmt::format("dimension '{}': {}..{} leaves the domain", dim.name, *lo_s, *hi_s));
    }
    sub[d] = core::Range{std::move(*lo), std::move(*hi)};
    start = end + 1;
  }
  return sub;
}

}  // namespace tiledbfs::fusefs
