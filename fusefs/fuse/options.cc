#include "fusefs/fuse/options.h"

#include <cctype>
#include <cstdlib>
#include <limits>

#include "fusefs/model/instant.h"

namespace tiledbfs::fusefs {
namespace {

using core::Error;

Error Usage(std::string m) { return Error::InvalidArgument(std::move(m)); }

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// Parses all of `s` as an unsigned decimal; nullopt on anything else or overflow.
std::optional<uint64_t> ParseDecimal(std::string_view s) {
  if (s.empty()) return std::nullopt;
  uint64_t v = 0;
  for (char c : s) {
    if (!IsDigit(c)) return std::nullopt;
    uint64_t d = static_cast<uint64_t>(c - '0');
    if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) return std::nullopt;
    v = v * 10 + d;
  }
  return v;
}

// Applies one -o item; returns false if it is not one of ours.
Result<bool> ApplyOwnOption(std::string_view item, CommandLine& cl) {
  const size_t eq = item.find('=');
  const std::string_view name = item.substr(0, eq);
  const bool has_value = eq != std::string_view::npos;
  const std::string_view value = has_value ? item.substr(eq + 1) : std::string_view();
  auto need_value = [&]() -> core::Status {
    if (!has_value || value.empty()) {
      return Usage("option '" + std::string(name) + "' needs a value (" + std::string(name) +
                   "=...)");
    }
    return core::Ok();
  };
  if (name == "timestamp") {
    TRY(need_value());
    ASSIGN_OR_RETURN(cl.timestamp_ms, ParseTimestamp(value));
    return true;
  }
  if (name == "key_file") {
    TRY(need_value());
    cl.key_file = std::string(value);
    return true;
  }
  if (name == "cache_size") {
    TRY(need_value());
    ASSIGN_OR_RETURN(cl.cache_bytes, ParseSize(value));
    return true;
  }
  if (name == "index") {
    TRY(need_value());
    if (value != "on" && value != "off" && value != "auto") {
      return Usage("bad index '" + std::string(value) + "': on, off or auto");
    }
    cl.index = std::string(value);
    return true;
  }
  if (name == "index_dir") {
    TRY(need_value());
    cl.index_dir = std::string(value);
    return true;
  }
  if (name == "index_size") {
    TRY(need_value());
    ASSIGN_OR_RETURN(cl.index_bytes, ParseSize(value));
    return true;
  }
  if (name == "page_cache" && !has_value) {
    cl.page_cache = true;
    return true;
  }
  if (name == "stats" && !has_value) {
    cl.stats = true;
    return true;
  }
  if (name == "debug" && !has_value) {
    cl.debug = true;
    return true;
  }
  ASSIGN_OR_RETURN(bool storage, ApplyStorageOption(item, cl.storage));
  if (storage) return true;
  if (name == "ro" && !has_value) return true;  // always read-only
  if (name == "rw" && !has_value) {
    return Usage("'rw' is not supported: tiledbfs mounts are read-only");
  }
  return false;
}

}  // namespace

Result<bool> ApplyStorageOption(std::string_view item, core::StorageOptions& options) {
  const size_t eq = item.find('=');
  const std::string name(item.substr(0, eq));
  if (name.rfind("s3_", 0) != 0) return false;
  const bool has_value = eq != std::string_view::npos;
  const std::string value = has_value ? std::string(item.substr(eq + 1)) : std::string();
  auto bad = [&](std::string_view why) {
    return Usage("bad option '" + std::string(item) + "': " + std::string(why));
  };
  core::S3Options& s3 = options.s3;
  if (name == "s3_anonymous") {
    if (has_value) return bad("takes no value");
    s3.anonymous = true;
    return true;
  }
  if (value.empty()) return bad("needs a value (" + name + "=...)");
  if (name == "s3_endpoint") {
    s3.endpoint = value;
  } else if (name == "s3_region") {
    s3.region = value;
  } else if (name == "s3_profile") {
    s3.profile = value;
  } else if (name == "s3_addressing") {
    if (value != "path" && value != "virtual") return bad("expected path or virtual");
    s3.path_style = value == "path";
  } else if (name == "s3_parallel") {
    const std::optional<uint64_t> n = ParseDecimal(value);
    if (!n || *n < 1 || *n > 1024) return bad("expected a number of requests from 1 to 1024");
    s3.parallel = static_cast<unsigned>(*n);
  } else if (name == "s3_recheck") {
    char* end = nullptr;
    const double v = std::strtod(value.c_str(), &end);
    if (end != value.c_str() + value.size() || !(v >= 0 && v <= 86400)) {
      return bad("expected seconds from 0 to 86400");
    }
    s3.recheck_seconds = v;
  } else {
    return bad(
        "unknown S3 option (s3_endpoint, s3_region, s3_profile, s3_addressing, "
        "s3_anonymous, s3_parallel, s3_recheck)");
  }
  return true;
}

std::vector<std::string> SplitOptionList(std::string_view list) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < list.size(); ++i) {
    const char c = list[i];
    if (c == '\\' && i + 1 < list.size()) {
      cur += list[++i];
    } else if (c == ',') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

Result<int64_t> ParseTimestamp(std::string_view text) {
  const std::optional<int64_t> ms = ParseInstant(text);
  if (!ms) {
    return Usage("bad timestamp '" + std::string(text) +
                 "': expected milliseconds since the epoch or ISO 8601 UTC, e.g. "
                 "1700000002000 or 2023-11-14T22:13:22[.000][Z]");
  }
  if (*ms < 0) return Usage("bad timestamp '" + std::string(text) + "': before 1970");
  return *ms;
}

Result<uint64_t> ParseSize(std::string_view text) {
  const std::string bad = "bad size '" + std::string(text) + "': ";
  size_t digits = 0;
  while (digits < text.size() && IsDigit(text[digits])) ++digits;
  if (digits == 0) return Usage(bad + "expected a number of bytes, e.g. 268435456, 256M or 1G");
  auto number = ParseDecimal(text.substr(0, digits));
  if (!number) return Usage(bad + "too large");
  std::string suffix;
  for (char c : text.substr(digits)) {
    suffix += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  struct Unit {
    std::string_view letter;
    unsigned shift;
  };
  static constexpr Unit kUnits[] = {{"", 0}, {"k", 10}, {"m", 20}, {"g", 30}, {"t", 40}};
  std::optional<unsigned> shift;
  for (const Unit& u : kUnits) {
    for (std::string_view tail : {"", "b", "ib"}) {
      if (u.letter.empty() && tail == "ib") continue;
      if (suffix == std::string(u.letter) + std::string(tail)) shift = u.shift;
    }
  }
  if (!shift) return Usage(bad + "unknown unit '" + suffix + "' (use K, M, G or T)");
  if (*number > (std::numeric_limits<uint64_t>::max() >> *shift)) return Usage(bad + "too large");
  return *number << *shift;
}

Result<CommandLine> ParseCommandLine(std::span<const std::string> args) {
  CommandLine cl;
  std::vector<std::string> positional;
  auto add_list = [&](std::string_view list) -> core::Status {
    for (auto& item : SplitOptionList(list)) {
      ASSIGN_OR_RETURN(bool ours, ApplyOwnOption(item, cl));
      if (!ours) cl.fuse_options.push_back(std::move(item));
    }
    return core::Ok();
  };
  bool options_done = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (options_done || a.empty() || a[0] != '-' || a == "-") {
      positional.push_back(a);
      continue;
    }
    if (a == "--") {
      options_done = true;
    } else if (a == "-o") {
      if (i + 1 >= args.size()) return Usage("option -o needs a value");
      TRY(add_list(args[++i]));
    } else if (a.rfind("-o", 0) == 0) {
      TRY(add_list(std::string_view(a).substr(2)));
    } else if (a == "-f") {
      cl.foreground = true;
    } else if (a == "-d" || a == "--debug") {
      cl.debug = true;
    } else if (a == "-s") {
      cl.single_thread = true;
    } else if (a == "-h" || a == "--help") {
      cl.help = true;
    } else if (a == "-V" || a == "--version") {
      cl.version = true;
    } else {
      return Usage("unknown option " + a);
    }
  }
  if (cl.debug) cl.foreground = true;
  if (cl.help || cl.version) return cl;
  if (positional.empty()) return Usage("missing ARRAY_OR_GROUP and MOUNTPOINT");
  if (positional.size() == 1) return Usage("missing MOUNTPOINT");
  if (positional.size() > 2) return Usage("unexpected argument '" + positional[2] + "'");
  cl.source = positional[0];
  cl.mountpoint = positional[1];
  return cl;
}

}  // namespace tiledbfs::fusefs
