#include "core/schema/array_schema.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "core/tile/generic_tile.h"
#include "core/util/byte_reader.h"

namespace tiledbfs::core {
namespace {

// TileDB's Hilbert curve handles at most this many dimensions.
constexpr uint32_t kMaxHilbertDims = 16;

template <class T>
ByteVec Repeat(T value, uint64_t n) {
  ByteVec out(n * sizeof(T), 0);
  for (uint64_t i = 0; i < n; ++i) std::memcpy(out.data() + i * sizeof(T), &value, sizeof(T));
  return out;
}

Result<std::string> ReadName32(ByteReader& r, std::string_view field) {
  ASSIGN_OR_RETURN(uint32_t n, r.Read<uint32_t>(field));
  return r.ReadString(n, field);
}

Result<Layout> ParseTileOrder(ByteReader& r) {
  uint64_t at = r.offset();
  ASSIGN_OR_RETURN(uint8_t b, r.Read<uint8_t>("tile_order"));
  if (b > 1) return Error::Corrupt(fmt::format("offset {}: tile_order: bad layout byte {}", at, b));
  return static_cast<Layout>(b);
}

Result<Layout> ParseCellOrder(ByteReader& r) {
  uint64_t at = r.offset();
  ASSIGN_OR_RETURN(uint8_t b, r.Read<uint8_t>("cell_order"));
  if (b != 0 && b != 1 && b != 4) {
    return Error::Corrupt(fmt::format("offset {}: cell_order: bad layout byte {}", at, b));
  }
  return static_cast<Layout>(b);
}

Result<Datatype> ReadDatatype(ByteReader& r, std::string_view field) {
  uint64_t at = r.offset();
  ASSIGN_OR_RETURN(uint8_t b, r.Read<uint8_t>(field));
  auto t = ParseDatatype(b);
  if (!t.ok()) return t.error().WithContext(fmt::format("offset {}: {}", at, field));
  return *t;
}

// 0 unordered, 1 increasing, 2 decreasing.
Result<uint8_t> ReadDataOrder(ByteReader& r, std::string_view field) {
  uint64_t at = r.offset();
  ASSIGN_OR_RETURN(uint8_t b, r.Read<uint8_t>(field));
  if (b > 2) return Error::Corrupt(fmt::format("offset {}: {}: bad data order {}", at, field, b));
  return b;
}

bool ValidDimensionType(Datatype t) {
  return IsInteger(t) || IsFloat(t) || IsDatetime(t) || IsTime(t) || t == Datatype::kStringAscii;
}

template <class T>
bool FixedRangeOk(const Range& range) {
  T lo, hi;
  std::memcpy(&lo, range.lo.data(), sizeof(T));
  std::memcpy(&hi, range.hi.data(), sizeof(T));
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(lo) || std::isnan(hi)) return false;
  }
  return lo <= hi;
}

// lo <= hi for a fixed-size dimension type (and neither NaN).
bool RangeOrdered(Datatype t, const Range& r) {
  switch (t) {
    case Datatype::kInt8:
      return FixedRangeOk<int8_t>(r);
    case Datatype::kUInt8:
      return FixedRangeOk<uint8_t>(r);
    case Datatype::kInt16:
      return FixedRangeOk<int16_t>(r);
    case Datatype::kUInt16:
      return FixedRangeOk<uint16_t>(r);
    case Datatype::kInt32:
      return FixedRangeOk<int32_t>(r);
    case Datatype::kUInt32:
      return FixedRangeOk<uint32_t>(r);
    case Datatype::kUInt64:
      return FixedRangeOk<uint64_t>(r);
    case Datatype::kFloat32:
      return FixedRangeOk<float>(r);
    case Datatype::kFloat64:
      return FixedRangeOk<double>(r);
    default:
      return FixedRangeOk<int64_t>(r);  // INT64, datetimes, times
  }
}

Range SplitRange(Bytes b, uint64_t lo_size) {
  Range r;
  r.lo.assign(b.begin(), b.begin() + lo_size);
  r.hi.assign(b.begin() + lo_size, b.end());
  return r;
}

Result<Dimension> ParseDimension(ByteReader& r, uint32_t version, Datatype legacy_type) {
  Dimension d;
  ASSIGN_OR_RETURN(d.name, ReadName32(r, "dimension.name"));
  if (HasPerDimensionType(version)) {
    ASSIGN_OR_RETURN(d.type, ReadDatatype(r, "dimension.datatype"));
    uint64_t at = r.offset();
    ASSIGN_OR_RETURN(d.cell_val_num, r.Read<uint32_t>("dimension.cell_val_num"));
    if (d.cell_val_num != 1 && d.cell_val_num != kVarNum) {
      return Error::Corrupt(fmt::format("offset {}: dimension.cell_val_num: {} (must be 1 or var)",
                                        at, d.cell_val_num));
    }
    ASSIGN_OR_RETURN_CTX(d.filters, ParseFilterPipeline(r, version), "dimension.filters");
  } else {
    d.type = legacy_type;
    d.cell_val_num = IsString(d.type) ? kVarNum : 1;
  }
  if (!ValidDimensionType(d.type)) {
    return Error::Unsupported(
        fmt::format("dimension datatype {} is not a dimension type", DatatypeName(d.type)));
  }
  if (d.var() != (d.type == Datatype::kStringAscii)) {
    return Error::Corrupt(fmt::format("dimension of type {} with cell_val_num {}",
                                      DatatypeName(d.type), d.cell_val_num));
  }

  uint64_t domain_size = 2 * DatatypeSize(d.type);
  uint64_t at = r.offset();
  if (HasPerDimensionType(version)) {
    ASSIGN_OR_RETURN(domain_size, r.Read<uint64_t>("dimension.domain_size"));
  }
  uint64_t expected = d.var() ? 0 : 2 * DatatypeSize(d.type);
  if (domain_size != expected) {
    return Error::Corrupt(fmt::format("offset {}: dimension.domain_size: {} (expected {})", at,
                                      domain_size, expected));
  }
  if (!d.var()) {
    at = r.offset();
    ASSIGN_OR_RETURN(Bytes dom, r.ReadBytes(domain_size, "dimension.domain"));
    d.domain = SplitRange(dom, domain_size / 2);
    if (!RangeOrdered(d.type, d.domain)) {
      return Error::Corrupt(
          fmt::format("offset {}: dimension.domain: lower bound above upper", at));
    }
  }

  at = r.offset();
  ASSIGN_OR_RETURN(uint8_t null_extent, r.Read<uint8_t>("dimension.null_tile_extent"));
  if (null_extent > 1) {
    return Error::Corrupt(
        fmt::format("offset {}: dimension.null_tile_extent: byte {}", at, null_extent));
  }
  if (null_extent == 0) {
    ASSIGN_OR_RETURN(Bytes ext, r.ReadBytes(DatatypeSize(d.type), "dimension.tile_extent"));
    d.tile_extent = ByteVec(ext.begin(), ext.end());
  }
  return d;
}

Result<Attribute> ParseAttribute(ByteReader& r, uint32_t version, const Limits& limits) {
  Attribute a;
  ASSIGN_OR_RETURN(a.name, ReadName32(r, "attribute.name"));
  ASSIGN_OR_RETURN(a.type, ReadDatatype(r, "attribute.datatype"));
  uint64_t at = r.offset();
  ASSIGN_OR_RETURN(a.cell_val_num, r.Read<uint32_t>("attribute.cell_val_num"));
  if (a.cell_val_num == 0 || (a.type == Datatype::kAny && !a.var())) {
    return Error::Corrupt(fmt::format("offset {}: attribute.cell_val_num: {} for type {}", at,
                                      a.cell_val_num, DatatypeName(a.type)));
  }
  ASSIGN_OR_RETURN_CTX(a.filters, ParseFilterPipeline(r, version), "attribute.filters");

  if (HasFillValues(version)) {
    at = r.offset();
    ASSIGN_OR_RETURN(uint64_t size, r.Read<uint64_t>("attribute.fill_value_size"));
    if (size == 0 || (!a.var() && size != a.cell_size())) {
      return Error::Corrupt(
          fmt::format("offset {}: attribute.fill_value_size: {} (cell size {})", at, size,
                      a.var() ? std::string("var") : std::to_string(a.cell_size())));
    }
    ASSIGN_OR_RETURN(Bytes fill, r.ReadBytes(size, "attribute.fill_value"));
    a.fill_value.assign(fill.begin(), fill.end());
  } else {
    // Limits::max_default_fill_bytes: a larger cell gets one default value.
    bool whole = !a.var() && a.cell_size() <= limits.max_default_fill_bytes;
    a.fill_value = DefaultFillValue(a.type, whole ? a.cell_val_num : 1);
  }
  if (HasNullable(version)) {
    ASSIGN_OR_RETURN(a.nullable, r.ReadBool("attribute.nullable"));
    ASSIGN_OR_RETURN(a.fill_value_validity, r.Read<uint8_t>("attribute.fill_value_validity"));
  }
  if (HasAttributeOrder(version)) {
    ASSIGN_OR_RETURN(a.order, ReadDataOrder(r, "attribute.order"));
  }
  if (HasEnumerations(version)) {
    ASSIGN_OR_RETURN(std::string enum_name, ReadName32(r, "attribute.enumeration_name"));
    if (!enum_name.empty()) a.enumeration_name = std::move(enum_name);
  }
  return a;
}

Result<DimensionLabel> ParseDimensionLabel(ByteReader& r) {
  DimensionLabel l;
  ASSIGN_OR_RETURN(l.dimension_index, r.Read<uint32_t>("label.dimension_index"));
  ASSIGN_OR_RETURN(l.name, ReadName32(r, "label.name"));
  ASSIGN_OR_RETURN(l.relative_uri, r.ReadBool("label.relative_uri"));
  ASSIGN_OR_RETURN(uint64_t uri_size, r.Read<uint64_t>("label.uri_size"));
  ASSIGN_OR_RETURN(l.uri, r.ReadString(uri_size, "label.uri"));
  ASSIGN_OR_RETURN(l.attribute_name, ReadName32(r, "label.attribute_name"));
  ASSIGN_OR_RETURN(l.label_order, ReadDataOrder(r, "label.order"));
  ASSIGN_OR_RETURN(l.type, ReadDatatype(r, "label.datatype"));
  uint64_t at = r.offset();
  ASSIGN_OR_RETURN(l.cell_val_num, r.Read<uint32_t>("label.cell_val_num"));
  if (l.cell_val_num == 0) {
    return Error::Corrupt(fmt::format("offset {}: label.cell_val_num: 0", at));
  }
  ASSIGN_OR_RETURN(l.is_external, r.ReadBool("label.is_external"));
  return l;
}

Result<CurrentDomain> ParseCurrentDomain(ByteReader& r, const std::vector<Dimension>& dims) {
  CurrentDomain cd;
  uint64_t at = r.offset();
  ASSIGN_OR_RETURN(cd.version, r.Read<uint32_t>("current_domain.version"));
  if (cd.version > 0) {
    return Error::Unsupported(
        fmt::format("offset {}: current_domain.version: {} is newer than 0", at, cd.version));
  }
  ASSIGN_OR_RETURN(cd.empty, r.ReadBool("current_domain.empty"));
  if (cd.empty) return cd;
  at = r.offset();
  ASSIGN_OR_RETURN(cd.type, r.Read<uint8_t>("current_domain.type"));
  if (cd.type != 0) {
    return Error::Corrupt(fmt::format("offset {}: current_domain.type: bad type {}", at, cd.type));
  }
  for (size_t i = 0; i < dims.size(); ++i) {
    const Dimension& d = dims[i];
    at = r.offset();
    if (!d.var()) {
      uint64_t size = 2 * DatatypeSize(d.type);
      ASSIGN_OR_RETURN(Bytes b, r.ReadBytes(size, "current_domain.range"));
      Range range = SplitRange(b, size / 2);
      if (!RangeOrdered(d.type, range)) {
        return Error::Corrupt(fmt::format(
            "offset {}: current_domain.range of '{}': lower bound above upper", at, d.name));
      }
      cd.ranges.push_back(std::move(range));
    } else {
      ASSIGN_OR_RETURN(uint64_t size, r.Read<uint64_t>("current_domain.range_size"));
      ASSIGN_OR_RETURN(uint64_t lo_size, r.Read<uint64_t>("current_domain.range_start_size"));
      if (lo_size > size) {
        return Error::Corrupt(
            fmt::format("offset {}: current_domain.range_start_size: {} exceeds range size {}", at,
                        lo_size, size));
      }
      ASSIGN_OR_RETURN(Bytes b, r.ReadBytes(size, "current_domain.range"));
      cd.ranges.push_back(SplitRange(b, lo_size));
    }
  }
  return cd;
}

// A count of items each at least `min_bytes` long must fit in what is left.
Status CheckCount(const ByteReader& r, uint64_t count, uint64_t min_bytes, std::string_view field) {
  if (count > r.remaining() / min_bytes) {
    return r.Corrupt(field,
                     fmt::format("count {} cannot fit in {} bytes left", count, r.remaining()));
  }
  return Ok();
}

Result<ArraySchema> ParseSchemaBody(ByteReader& r, const Limits& limits) {
  ArraySchema s;
  uint64_t at = r.offset();
  ASSIGN_OR_RETURN(s.version, r.Read<uint32_t>("schema.version"));
  if (s.version == 0) {
    return Error::Corrupt(fmt::format("offset {}: schema.version: 0 is not a format version", at));
  }
  if (s.version > kMaxFormatVersion) {
    return Error::Unsupported(
        fmt::format("offset {}: schema.version: format version {} is newer "
                    "than {}, the newest supported",
                    at, s.version, kMaxFormatVersion));
  }
  const uint32_t v = s.version;
  if (HasAllowsDups(v)) {
    ASSIGN_OR_RETURN(s.allows_dups, r.ReadBool("schema.allows_dups"));
  }
  at = r.offset();
  ASSIGN_OR_RETURN(uint8_t type_byte, r.Read<uint8_t>("schema.array_type"));
  auto array_type = ParseArrayType(type_byte);
  if (!array_type.ok()) {
    return Error::Corrupt(
        fmt::format("offset {}: schema.array_type: bad array type {}", at, type_byte));
  }
  s.array_type = *array_type;
  ASSIGN_OR_RETURN(s.tile_order, ParseTileOrder(r));
  ASSIGN_OR_RETURN(s.cell_order, ParseCellOrder(r));
  ASSIGN_OR_RETURN(s.capacity, r.Read<uint64_t>("schema.capacity"));
  ASSIGN_OR_RETURN_CTX(s.coords_filters, ParseFilterPipeline(r, v), "coords filters");
  ASSIGN_OR_RETURN_CTX(s.offsets_filters, ParseFilterPipeline(r, v), "offsets filters");
  if (HasNullable(v)) {
    ASSIGN_OR_RETURN_CTX(s.validity_filters, ParseFilterPipeline(r, v), "validity filters");
  }

  Datatype legacy_type = Datatype::kInt32;
  if (!HasPerDimensionType(v)) {
    ASSIGN_OR_RETURN(legacy_type, ReadDatatype(r, "domain.datatype"));
  }
  at = r.offset();
  ASSIGN_OR_RETURN(uint32_t dim_num, r.Read<uint32_t>("domain.dim_num"));
  if (dim_num == 0) return Error::Corrupt(fmt::format("offset {}: domain.dim_num: 0", at));
  TRY(CheckCount(r, dim_num, 5, "domain.dim_num"));
  for (uint32_t i = 0; i < dim_num; ++i) {
    ASSIGN_OR_RETURN_CTX(Dimension d, ParseDimension(r, v, legacy_type),
                         fmt::format("dimension {}", i));
    if (s.dense() && (IsFloat(d.type) || d.var())) {
      return Error::Corrupt(
          fmt::format("dimension {} '{}': dense arrays need integer dimensions, "
                      "not {}",
                      i, d.name, DatatypeName(d.type)));
    }
    s.dimensions.push_back(std::move(d));
  }
  if (s.cell_order == Layout::kHilbert && (dim_num > kMaxHilbertDims || s.dense())) {
    return Error::Corrupt(fmt::format("hilbert cell order with {} {} dimensions", dim_num,
                                      s.dense() ? "dense" : "sparse"));
  }

  at = r.offset();
  ASSIGN_OR_RETURN(uint32_t attr_num, r.Read<uint32_t>("schema.attribute_num"));
  TRY(CheckCount(r, attr_num, 9, "schema.attribute_num"));
  if (s.dense() && attr_num == 0) {
    return Error::Corrupt(
        fmt::format("offset {}: schema.attribute_num: dense array without "
                    "attributes",
                    at));
  }
  for (uint32_t i = 0; i < attr_num; ++i) {
    ASSIGN_OR_RETURN_CTX(Attribute a, ParseAttribute(r, v, limits), fmt::format("attribute {}", i));
    s.attributes.push_back(std::move(a));
  }

  if (HasDimensionLabels(v)) {
    ASSIGN_OR_RETURN(uint32_t label_num, r.Read<uint32_t>("schema.label_num"));
    TRY(CheckCount(r, label_num, 28, "schema.label_num"));
    for (uint32_t i = 0; i < label_num; ++i) {
      ASSIGN_OR_RETURN_CTX(DimensionLabel l, ParseDimensionLabel(r),
                           fmt::format("dimension label {}", i));
      if (l.dimension_index >= dim_num) {
        return Error::Corrupt(fmt::format("dimension label {} '{}': dimension index {} of {}", i,
                                          l.name, l.dimension_index, dim_num));
      }
      s.labels.push_back(std::move(l));
    }
  }

  if (HasEnumerations(v)) {
    ASSIGN_OR_RETURN(uint32_t enum_num, r.Read<uint32_t>("schema.enumeration_num"));
    TRY(CheckCount(r, enum_num, 8, "schema.enumeration_num"));
    for (uint32_t i = 0; i < enum_num; ++i) {
      EnumerationRef e;
      at = r.offset();
      ASSIGN_OR_RETURN(e.name, ReadName32(r, "enumeration.name"));
      ASSIGN_OR_RETURN(e.path_name, ReadName32(r, "enumeration.path_name"));
      // The path name becomes a file name under __schema/__enumerations/.
      if (e.name.empty() || e.path_name.empty() || e.path_name == "." || e.path_name == ".." ||
          e.path_name.find('/') != std::string::npos ||
          e.path_name.find('\0') != std::string::npos) {
        return Error::Corrupt(fmt::format("offset {}: enumeration {}: bad name '{}' or file '{}'",
                                          at, i, e.name, e.path_name));
      }
      if (s.FindEnumeration(e.name) != nullptr) {
        return Error::Corrupt(
            fmt::format("offset {}: enumeration {}: duplicate name '{}'", at, i, e.name));
      }
      s.enumerations.push_back(std::move(e));
    }
  }

  if (HasCurrentDomain(v)) {
    ASSIGN_OR_RETURN_CTX(s.current_domain, ParseCurrentDomain(r, s.dimensions), "current domain");
  }

  if (!r.empty()) {
    return r.Corrupt("schema", fmt::format("{} trailing bytes after the schema", r.remaining()));
  }

  // Names must be unique: each becomes a file in the mount.
  std::set<std::string_view> names;
  for (const Dimension& d : s.dimensions) {
    if (!names.insert(d.name).second) {
      return Error::Corrupt(fmt::format("duplicate dimension name '{}'", d.name));
    }
  }
  for (const Attribute& a : s.attributes) {
    if (!names.insert(a.name).second) {
      return Error::Corrupt(fmt::format("duplicate attribute name '{}'", a.name));
    }
    if (a.enumeration_name && s.FindEnumeration(*a.enumeration_name) == nullptr) {
      return Error::Corrupt(fmt::format("attribute '{}' refers to unknown enumeration '{}'", a.name,
                                        *a.enumeration_name));
    }
  }
  return s;
}

// "__<t1>_<t2>_<uuid>[_<v>]" -> t1, t2; false if the name is not of that form.
bool ParseSchemaTimestamps(std::string_view name, uint64_t* t1, uint64_t* t2) {
  if (name.substr(0, 2) != "__") return false;
  name.remove_prefix(2);
  uint64_t ts[2];
  for (uint64_t& t : ts) {
    size_t end = name.find('_');
    if (end == 0 || end == std::string_view::npos || end > 20) return false;
    t = 0;
    for (char c : name.substr(0, end)) {
      if (c < '0' || c > '9') return false;
      if (__builtin_mul_overflow(t, 10, &t) || __builtin_add_overflow(t, c - '0', &t)) {
        return false;
      }
    }
    name.remove_prefix(end + 1);
  }
  *t1 = ts[0];
  *t2 = ts[1];
  return true;
}

std::string BaseName(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

Limits MetadataLimits(const Limits& limits) {
  Limits l = limits;
  l.max_tile_bytes = l.max_metadata_bytes;
  return l;
}

}  // namespace

ByteVec DefaultFillValue(Datatype type, uint32_t cell_val_num) {
  uint64_t n = cell_val_num == kVarNum ? 1 : cell_val_num;
  switch (type) {
    case Datatype::kInt8:
      return Repeat<int8_t>(INT8_MIN, n);
    case Datatype::kUInt8:
      return Repeat<uint8_t>(UINT8_MAX, n);
    case Datatype::kInt16:
      return Repeat<int16_t>(INT16_MIN, n);
    case Datatype::kUInt16:
      return Repeat<uint16_t>(UINT16_MAX, n);
    case Datatype::kInt32:
      return Repeat<int32_t>(INT32_MIN, n);
    case Datatype::kUInt32:
      return Repeat<uint32_t>(UINT32_MAX, n);
    case Datatype::kInt64:
      return Repeat<int64_t>(INT64_MIN, n);
    case Datatype::kUInt64:
      return Repeat<uint64_t>(UINT64_MAX, n);
    case Datatype::kFloat32:
      return Repeat<float>(std::numeric_limits<float>::quiet_NaN(), n);
    case Datatype::kFloat64:
      return Repeat<double>(std::numeric_limits<double>::quiet_NaN(), n);
    case Datatype::kChar:
      return Repeat<uint8_t>(0x80, n);  // CHAR_MIN of a signed char
    default:
      if (IsDatetime(type) || IsTime(type)) return Repeat<int64_t>(INT64_MIN, n);
      // Strings, ANY, BOOL, BLOB and geometries: zero of the value size.
      return ByteVec(n * DatatypeSize(type), 0);
  }
}

const EnumerationRef* ArraySchema::FindEnumeration(std::string_view n) const {
  for (const EnumerationRef& e : enumerations) {
    if (e.name == n) return &e;
  }
  return nullptr;
}

int ArraySchema::AttributeIndex(std::string_view n) const {
  for (size_t i = 0; i < attributes.size(); ++i) {
    if (attributes[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

int ArraySchema::DimensionIndex(std::string_view n) const {
  for (size_t i = 0; i < dimensions.size(); ++i) {
    if (dimensions[i].name == n) return static_cast<int>(i);
  }
  return -1;
}

Result<ArraySchema> ParseArraySchema(Bytes payload, uint64_t file_offset, const Limits& limits) {
  ByteReader r(payload, file_offset);
  auto s = ParseSchemaBody(r, limits);
  if (!s.ok()) return s.error().WithContext("array schema");
  return s;
}

Result<ArraySchema> LoadArraySchema(const Storage& storage, const std::string& path,
                                    const EncryptionKey* key, const Limits& limits) {
  // ReadGenericTile names the path in its errors.
  ASSIGN_OR_RETURN(GenericTile tile,
                   ReadGenericTile(storage, path, 0, key, MetadataLimits(limits)));
  ASSIGN_OR_RETURN_CTX(ArraySchema s, ParseArraySchema(tile.data, 0, limits), path);
  s.name = BaseName(path);
  if (!ParseSchemaTimestamps(s.name, &s.timestamp_start, &s.timestamp_end)) {
    s.timestamp_start = s.timestamp_end = 0;  // the legacy __array_schema.tdb
  }
  return s;
}

}  // namespace tiledbfs::core
