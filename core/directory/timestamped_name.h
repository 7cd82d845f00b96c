// Timestamped names: __t1_t2_uuid[_v] (format 5+), __t1_t2_uuid (3-4),
// __uuid_t1[_t2] (1-2), optionally followed by an extension (".wrt").
// Spec: format_spec/timestamped_name.md.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/result.h"

namespace tiledbfs::core {

struct TimestampedName {
  std::string name;       // the whole name without directory and extension
  std::string extension;  // ".wrt", ".ok", ".vac", ... or "" (no dot in name)
  uint64_t t1 = 0;
  uint64_t t2 = 0;
  std::string uuid;
  uint32_t version = 0;   // 0 when the name carries none

  bool operator<(const TimestampedName& o) const;  // by (t1, t2, uuid)
};

// Parses a file or folder name (no '/'). kCorrupt if it is not a timestamped
// name (the message quotes it).
Result<TimestampedName> ParseTimestampedName(std::string_view file_name);

}  // namespace tiledbfs::core
