#include "core/write/metadata_writer.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include "core/array/array.h"
#include "core/util/byte_writer.h"
#include "core/write/atomic_file.h"
#include "core/write/filter_writer.h"
#include "core/write/fragment_writer.h"
#include "core/write/schema_writer.h"

namespace tiledbfs::core {
namespace {

bool TakesOneString(Datatype t) {
  return t == Datatype::kChar || t == Datatype::kStringAscii || t == Datatype::kStringUtf8 ||
         IsBlobLike(t);
}

bool IsUnsignedType(Datatype t) {
  return t == Datatype::kUInt8 || t == Datatype::kUInt16 || t == Datatype::kUInt32 ||
         t == Datatype::kUInt64;
}

// One number of type t from text, appended to `out`.
Status AppendNumber(Datatype t, const std::string& s, ByteVec& out) {
  const uint64_t size = DatatypeSize(t);
  const auto bad = [&] {
    return Error::InvalidArgument(fmt::format("'{}' is not a {} value", s, DatatypeName(t)));
  };
  if (s.empty() || std::isspace(static_cast<unsigned char>(s[0]))) return bad();
  char* end = nullptr;
  errno = 0;
  uint8_t buf[8] = {};
  if (IsFloat(t)) {
    const double d = std::strtod(s.c_str(), &end);
    if (*end != '\0') return bad();
    if (t == Datatype::kFloat32) {
      const float f = static_cast<float>(d);
      if (std::isinf(f) && !std::isinf(d)) return bad();  // out of float range
      std::memcpy(buf, &f, 4);
    } else {
      std::memcpy(buf, &d, 8);
    }
  } else if (t == Datatype::kBool) {
    if (s == "1" || s == "true") {
      buf[0] = 1;
    } else if (s != "0" && s != "false") {
      return bad();
    }
  } else if (IsUnsignedType(t)) {
    if (s[0] == '-') return bad();
    const unsigned long long v = std::strtoull(s.c_str(), &end, 10);
    const uint64_t max = size == 8 ? UINT64_MAX : (uint64_t{1} << (8 * size)) - 1;
    if (*end != '\0' || errno == ERANGE || v > max) return bad();
    const uint64_t u = v;
    std::memcpy(buf, &u, size);
  } else if (IsInteger(t) || IsDatetime(t) || IsTime(t)) {
    const long long v = std::strtoll(s.c_str(), &end, 10);
    const int64_t lo = size == 8 ? INT64_MIN : -(int64_t{1} << (8 * size - 1));
    const int64_t hi = size == 8 ? INT64_MAX : (int64_t{1} << (8 * size - 1)) - 1;
    if (*end != '\0' || errno == ERANGE || v < lo || v > hi) return bad();
    const int64_t i = v;
    std::memcpy(buf, &i, size);
  } else {
    return Error::Unsupported(fmt::format("values of type {} are not written", DatatypeName(t)));
  }
  AppendBytes(out, buf, size);
  return Ok();
}

bool IsArray(const std::string& dir) {
  auto storage = LocalStorage::Open(dir);
  return storage.ok() && (*storage)->IsDir("__schema");
}

}  // namespace

Result<MetadataValue> MetadataValueFromText(std::string_view type_name,
                                            const std::vector<std::string>& values) {
  const std::optional<Datatype> type = DatatypeFromName(type_name);
  if (!type) {
    return Error::InvalidArgument(fmt::format("unknown type '{}'", type_name));
  }
  const Datatype t = *type;
  if (t == Datatype::kAny) return Error::InvalidArgument("metadata values cannot be of type ANY");
  MetadataValue v;
  v.type = t;
  if (t == Datatype::kStringUtf16 || t == Datatype::kStringUtf32 || t == Datatype::kStringUcs2 ||
      t == Datatype::kStringUcs4) {
    return Error::Unsupported(
        fmt::format("metadata values of type {} cannot be given as text", type_name));
  }
  if (TakesOneString(t)) {
    if (values.size() != 1) {
      return Error::InvalidArgument(fmt::format("a value of type {} is one string, {} values given",
                                                type_name, values.size()));
    }
    if (values[0].size() > UINT32_MAX) return Error::InvalidArgument("value too long");
    v.value.assign(values[0].begin(), values[0].end());
    v.num = static_cast<uint32_t>(v.value.size());
    return v;
  }
  if (values.empty()) {
    return Error::InvalidArgument(
        fmt::format("a value of type {} needs at least one number", type_name));
  }
  if (values.size() > UINT32_MAX) return Error::InvalidArgument("too many values");
  for (size_t i = 0; i < values.size(); ++i) {
    Status st = AppendNumber(t, values[i], v.value);
    if (!st.ok()) {
      return Error(st.error().code(), fmt::format("value {}: {}", i + 1, st.error().message()));
    }
  }
  v.num = static_cast<uint32_t>(values.size());
  return v;
}

Result<ByteVec> SerializeMetadataEntries(std::vector<MetadataEntry> entries) {
  // TileDB keeps the entries of one write in a std::map: key order, the
  // last put or deletion of a key wins.
  std::map<std::string, MetadataEntry> sorted;
  for (MetadataEntry& e : entries) {
    std::string key = e.key;
    sorted.insert_or_assign(std::move(key), std::move(e));
  }
  ByteWriter w;
  for (const auto& [key, e] : sorted) {
    if (key.size() > UINT32_MAX) return Error::InvalidArgument("metadata key too long");
    w.PutName32(key);
    w.Put<uint8_t>(e.deleted ? 1 : 0);
    if (e.deleted) continue;
    if (e.value.type == Datatype::kAny || DatatypeSize(e.value.type) == 0) {
      return Error::InvalidArgument(fmt::format("metadata key '{}': bad type", key));
    }
    if (e.value.value.size() != uint64_t{e.value.num} * DatatypeSize(e.value.type)) {
      return Error::InvalidArgument(fmt::format("metadata key '{}': {} bytes for {} values of {}",
                                                key, e.value.value.size(), e.value.num,
                                                DatatypeName(e.value.type)));
    }
    w.Put<uint8_t>(static_cast<uint8_t>(e.value.type));
    w.Put<uint32_t>(e.value.num);
    w.PutBytes(e.value.value);
  }
  return w.Take();
}

Result<std::string> WriteArrayMetadata(const std::string& array_dir, uint64_t timestamp,
                                       std::vector<MetadataEntry> entries, const Limits& limits) {
  if (entries.empty()) return Error::InvalidArgument("no metadata to write");
  if (!IsArray(array_dir)) return Error::NotFound(array_dir + " is not an array");
  {
    // Refuses encrypted arrays (the metadata would have to be encrypted too)
    // and anything our reader cannot open.
    ASSIGN_OR_RETURN(auto storage, LocalStorage::Open(array_dir));
    ASSIGN_OR_RETURN(auto array, Array::Open(storage, std::nullopt, limits));
    (void)array;
  }
  ASSIGN_OR_RETURN(ByteVec payload, SerializeMetadataEntries(std::move(entries)));
  ASSIGN_OR_RETURN(ByteVec tile, EncodeGenericTile(payload, kWriteFormatVersion));
  const std::string name = NewTimestampedName(timestamp, 0);
  TRY(WriteArrayFileAtomically(array_dir, "__meta/" + name, tile));
  return name;
}

}  // namespace tiledbfs::core
