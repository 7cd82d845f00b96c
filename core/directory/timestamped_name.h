// Timestamped names: __t1_t2_uuid[_v] (format 5+), __t1_t2_uuid (3-4),
// __uuid_t1[_t2] (1-2), optionally followed by an extension (".wrt").
// Spec: format_spec/timestamped_name.md.
//
//   format   fields (split on '_' after the leading "__")     example
//   1-2      uuid, t           or  uuid, t_first, t_last      __5dc2...0c55_1541540586869
//   3-4      t1, t2, uuid __1700000000000_1700000000000_049f...7019 5+       t1, t2, uuid, v
//   __1700000002000_1700000002000_0a72...1d_22
//
// t1, t2: decimal milliseconds since the epoch (uint64), t1 <= t2; uuid: 32 hex
// digits; v: decimal format version (uint32). Schema, array metadata and
// (group) metadata names use the 3-field form at every format version.
// Format 1-2 names with two numbers were written by TileDB 1.5 consolidation
// as __uuid_<consolidation time>_<newest fragment time>; like TileDB's
// FragmentID, both t1 and t2 are then the LAST number.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "core/util/result.h"

namespace tiledbfs::core {

enum class NameFormat : uint8_t {
  kUuidTimestamp,          // __uuid_t1[_t2]   (format versions 1-2)
  kTimestampsUuid,         // __t1_t2_uuid     (3-4; also schema/metadata names)
  kTimestampsUuidVersion,  // __t1_t2_uuid_v   (5+)
};

struct TimestampedName {
  std::string name;       // the whole name without directory and extension
  std::string extension;  // ".wrt", ".ok", ".vac", ... or "" (no dot in name)
  uint64_t t1 = 0;
  uint64_t t2 = 0;
  std::string uuid;
  uint32_t version = 0;  // 0 when the name carries none
  NameFormat format = NameFormat::kTimestampsUuidVersion;

  bool operator<(const TimestampedName& o) const;  // by (t1, t2, uuid, name)
  bool operator==(const TimestampedName& o) const = default;

  // The format version the name implies, as TileDB reads fragment names: the
  // version field when present, else 2 for __uuid_t names and 4 for
  // __t1_t2_uuid names.
  uint32_t ImpliedFormatVersion() const;
};

// Parses a file or folder name (no '/'). The extension is everything from the
// last '.'. kCorrupt if it is not a timestamped name; the message quotes it
// and says which field is wrong.
Result<TimestampedName> ParseTimestampedName(std::string_view file_name);

}  // namespace tiledbfs::core
