// Array schema: __schema/<timestamped name> (and the legacy
// __array_schema.tdb), one generic tile. Spec: format_spec/array_schema.md,
// format_spec/enumeration.md, format_spec/current_domain.md.
//
//   field                       type            since
//   version                     uint32
//   allows dups                 bool            5
//   array type                  uint8
//   tile order, cell order      uint8, uint8
//   capacity                    uint64
//   coords/offsets filters      pipeline x2
//   validity filters            pipeline        7
//   domain                      Domain          (datatype byte only before 5)
//   attributes                  uint32 + Attribute[]
//   dimension labels            uint32 + DimensionLabel[]   18
//   enumerations                uint32 + (name, file name)[] 20
//   current domain              CurrentDomain   22
//
// Where TileDB's source differs from the spec tables (TileDB is the truth):
//  - an attribute ends with uint32 enumeration-name length + name (since 20);
//  - a dimension label is: uint32 dimension index, uint32 name length, name,
//    bool relative URI, uint64 URI length, URI, uint32 attribute-name length,
//    attribute name, uint8 label order, uint8 datatype, uint32 cell_val_num,
//    bool is-external (no domain);
//  - the current domain version is 0 (the spec says 1);
//  - an enumeration file holds its name and path name after the version.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/filters/filter_pipeline.h"
#include "core/format/datatype.h"
#include "core/storage/storage.h"

namespace tiledbfs::core {

// Format-version predicates (docs/style.md 3).
inline bool HasAllowsDups(uint32_t v) { return v >= 5; }
inline bool HasPerDimensionType(uint32_t v) { return v >= 5; }
inline bool HasFillValues(uint32_t v) { return v >= 6; }
inline bool HasNullable(uint32_t v) { return v >= 7; }
inline bool HasAttributeOrder(uint32_t v) { return v >= 17; }
inline bool HasDimensionLabels(uint32_t v) { return v >= 18; }
inline bool HasEnumerations(uint32_t v) { return v >= 20; }
inline bool HasCurrentDomain(uint32_t v) { return v >= 22; }

// One value range [lo, hi] of a dimension, as raw bytes of its type (var
// dimensions: the strings themselves).
struct Range {
  ByteVec lo;
  ByteVec hi;
  bool operator==(const Range&) const = default;
};

struct Dimension {
  std::string name;
  Datatype type = Datatype::kInt32;
  uint32_t cell_val_num = 1;
  FilterPipeline filters;              // empty: use the schema's coords filters
  Range domain;                        // empty bytes for var-sized (string) dimensions
  std::optional<ByteVec> tile_extent;  // nullopt: null tile extent

  bool var() const { return cell_val_num == kVarNum; }
  uint64_t cell_size() const { return var() ? 8 : DatatypeSize(type) * cell_val_num; }
};

struct Attribute {
  std::string name;
  Datatype type = Datatype::kInt32;
  uint32_t cell_val_num = 1;
  FilterPipeline filters;
  ByteVec fill_value;  // one cell's worth (var: one value)
  bool nullable = false;
  uint8_t fill_value_validity = 0;
  uint8_t order = 0;                            // 0 unordered, 1 increasing, 2 decreasing
  std::optional<std::string> enumeration_name;  // since 20

  bool var() const { return cell_val_num == kVarNum; }
  uint64_t cell_size() const { return var() ? 8 : DatatypeSize(type) * cell_val_num; }
};

// Not stored on disk: TileDB keeps a label's domain in the label array.
struct DimensionLabel {
  uint32_t dimension_index = 0;
  uint8_t label_order = 0;
  std::string name;
  bool relative_uri = true;
  std::string uri;
  std::string attribute_name;
  Datatype type = Datatype::kInt32;
  uint32_t cell_val_num = 1;
  Range domain;
  bool is_external = false;
};

// An enumeration referenced by the schema: its name and the file under
// __schema/__enumerations/ holding its values.
struct EnumerationRef {
  std::string name;
  std::string path_name;
};

struct CurrentDomain {
  uint32_t version = 0;
  bool empty = true;
  uint8_t type = 0;           // 0: NDRectangle
  std::vector<Range> ranges;  // one per dimension when not empty
};

struct ArraySchema {
  uint32_t version = 0;
  bool allows_dups = false;
  ArrayType array_type = ArrayType::kDense;
  Layout tile_order = Layout::kRowMajor;
  Layout cell_order = Layout::kRowMajor;
  uint64_t capacity = 10000;
  FilterPipeline coords_filters;
  FilterPipeline offsets_filters;
  FilterPipeline validity_filters;
  std::vector<Dimension> dimensions;
  std::vector<Attribute> attributes;
  std::vector<DimensionLabel> labels;
  std::vector<EnumerationRef> enumerations;
  CurrentDomain current_domain;

  // Set by the loader, not stored in the tile: the file name under __schema/
  // ("__array_schema.tdb" for the legacy file) and its timestamps.
  std::string name;
  uint64_t timestamp_start = 0;
  uint64_t timestamp_end = 0;

  bool dense() const { return array_type == ArrayType::kDense; }
  // The pipeline of dimension d's coordinate tiles: its own, or the coords
  // filters when it has none.
  const FilterPipeline& dim_filters(size_t d) const {
    return dimensions[d].filters.empty() ? coords_filters : dimensions[d].filters;
  }
  // The reference to the enumeration named `name`, or nullptr.
  const EnumerationRef* FindEnumeration(std::string_view name) const;
  // Index of an attribute or dimension by name, or -1.
  int AttributeIndex(std::string_view name) const;
  int DimensionIndex(std::string_view name) const;
};

// The newest format version we read.
constexpr uint32_t kMaxFormatVersion = 23;

// TileDB's default fill value for a type (constants::empty_*): one value for
// var-sized cells, cell_val_num values otherwise. Integers get their minimum
// (signed) or maximum (unsigned), floats NaN, CHAR 0x80, strings/BOOL/BLOB 0,
// datetimes and times INT64 min.
ByteVec DefaultFillValue(Datatype type, uint32_t cell_val_num);

// Parses the unfiltered payload of a schema generic tile. Errors: kCorrupt
// (truncated, bad enum byte, inconsistent sizes), kUnsupported (unknown
// datatype or filter, version newer than 23). Legacy versions (< 5) have a
// single domain datatype: every dimension gets it. Before version 6
// attributes get DefaultFillValue. Trailing bytes after the schema are
// corrupt. `name`, timestamps are left empty (the loader sets them).
Result<ArraySchema> ParseArraySchema(Bytes payload, uint64_t file_offset, const Limits& limits);

// An enumeration's values. Spec: format_spec/enumeration.md.
struct Enumeration {
  std::string name;
  std::string path_name;
  Datatype type = Datatype::kStringAscii;
  uint32_t cell_val_num = kVarNum;
  bool ordered = false;
  ByteVec data;
  std::vector<uint64_t> offsets;  // var-sized: start of each value in data

  uint64_t size() const;  // number of values
  // Value i as bytes; empty span past the end.
  Bytes value(uint64_t i) const;
};

// Errors: kCorrupt (truncated, bad sizes or offsets, trailing bytes),
// kUnsupported (enumeration version > 0, unknown datatype).
Result<Enumeration> ParseEnumeration(Bytes payload, uint64_t file_offset = 0);

// Loads a schema file (generic tile) from storage, decrypting with `key`
// when the tile is encrypted. Errors carry the path.
Result<ArraySchema> LoadArraySchema(const Storage& storage, const std::string& path,
                                    const EncryptionKey* key, const Limits& limits);
Result<Enumeration> LoadEnumeration(const Storage& storage, const std::string& path,
                                    const EncryptionKey* key, const Limits& limits);

// Loads every enumeration `schema` refers to, in the schema's order, from
// "__schema/__enumerations/<path name>" (storage rooted at the array). Each
// schema (after schema evolution too) names its own files, so the values are
// those in force with that schema. kCorrupt if a file holds another name.
Result<std::vector<Enumeration>> LoadSchemaEnumerations(const Storage& storage,
                                                        const ArraySchema& schema,
                                                        const EncryptionKey* key,
                                                        const Limits& limits);

// The schema as JSON (the shape of the corpus' expected schema.json): keys
// array_type, tile_order, cell_order, capacity, allows_dups, version,
// timestamp_range, dims, attrs, [enumerations], [dimension_labels],
// [current_domain], coords_filters, offsets_filters, validity_filters.
// `enums` (may be null) supplies enumeration values. Valid UTF-8: a byte of
// a name or value that is not part of it is written \xHH (core/util/text.h).
std::string SchemaToJson(const ArraySchema& schema, const std::vector<Enumeration>* enums);
// A readable multi-line summary of the same (valid UTF-8 as well).
std::string SchemaToText(const ArraySchema& schema, const std::vector<Enumeration>* enums);

}  // namespace tiledbfs::core
