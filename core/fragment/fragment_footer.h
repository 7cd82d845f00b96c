// Fragment metadata footer: the plain blob at the end of
// __fragment_metadata.tdb (format 3+), also stored, without its length field,
// in consolidated fragment metadata files.
// Spec: format_spec/fragment.md#footer.
//
//   field                               type                 since
//   version                             uint32
//   schema name size, schema name       uint64, char[]       10
//   dense                               uint8
//   null non-empty domain               uint8
//   non-empty domain                    MBR (see below)
//   sparse tile num                     uint64
//   last tile cell num                  uint64
//   has timestamps                      uint8                14
//   has delete meta                     uint8                15
//   file sizes                          uint64[N]            (N0 before 5)
//   file var sizes                      uint64[N]            (N0-1 before 5)
//   file validity sizes                 uint64[N]            7
//   R-tree offset                       uint64
//   tile offsets offsets                uint64[N]            (N0 before 5)
//   tile var offsets offsets            uint64[N]            (N0-1 before 5)
//   tile var sizes offsets              uint64[N]            (N0-1 before 5)
//   tile validity offsets offsets       uint64[N]            7
//   tile min/max/sum/null count offsets uint64[N] x 4        11
//   fragment min/max/sum/nc offset      uint64               12
//   processed conditions offset         uint64               16
//   optional sections                   uint32 + sections    23
//   footer length                       uint64               10 (before: only with a var dim)
//
// N (the field count) is A attributes + 1 (the legacy zipped-coordinates
// slot) + D dimensions + 1 if has timestamps + 2 if has delete meta, in that
// order: a0..aA-1, __coords, d0..dD-1, t, dt, dci. Before format 5 there are
// no per-dimension slots: N0 = A + 1, and the var arrays have no coords slot.
//
// Non-empty domain: per dimension, fixed-sized: lo and hi (coord size each);
// var-sized (5+): uint64 range size, uint64 lo size, then the lo and hi bytes.
// Before 5 every dimension uses the coord size of dimension 0.
//
// Before 10 the footer has no length field unless a dimension is var-sized:
// its size is computed from the schema (FixedFooterSize).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/schema/array_schema.h"
#include "core/util/byte_reader.h"

namespace tiledbfs::core {

// Newest fragment format this reader understands.
constexpr uint32_t kMaxFragmentVersion = kMaxFormatVersion;

inline bool HasFragmentFooter(uint32_t v) { return v >= 3; }
inline bool HasPerDimensionFiles(uint32_t v) { return v >= 5; }
inline bool HasValiditySections(uint32_t v) { return v >= 7; }
inline bool HasPercentEncodedNames(uint32_t v) { return v == 8; }
inline bool HasNumberedDataFiles(uint32_t v) { return v >= 9; }
inline bool HasSchemaName(uint32_t v) { return v >= 10; }
inline bool HasFooterLength(uint32_t v) { return v >= 10; }
inline bool HasTileMetadata(uint32_t v) { return v >= 11; }
inline bool HasFragmentStatistics(uint32_t v) { return v >= 12; }
inline bool HasTimestampsFlag(uint32_t v) { return v >= 14; }
inline bool HasDeleteMetaFlag(uint32_t v) { return v >= 15; }
inline bool HasProcessedConditions(uint32_t v) { return v >= 16; }
inline bool HasOptionalSections(uint32_t v) { return v >= 23; }

// The schema every fragment older than 10 refers to.
inline constexpr const char* kLegacySchemaName = "__array_schema.tdb";

// A stored field of a fragment. Footer arrays and data file names are
// indexed by FragmentMetadata::FieldIndex(field).
struct FieldRef {
  enum class Kind {
    kAttribute,
    kDimension,
    kCoords,
    kTimestamps,
    kDeleteTimestamps,
    kDeleteConditionIndex
  };
  Kind kind = Kind::kAttribute;
  uint32_t index = 0;  // attribute or dimension index in the fragment's schema

  static FieldRef Attribute(uint32_t i) { return {Kind::kAttribute, i}; }
  static FieldRef Dimension(uint32_t i) { return {Kind::kDimension, i}; }
  static FieldRef Timestamps() { return {Kind::kTimestamps, 0}; }
  static FieldRef DeleteTimestamps() { return {Kind::kDeleteTimestamps, 0}; }
  static FieldRef DeleteConditionIndex() { return {Kind::kDeleteConditionIndex, 0}; }
  static FieldRef Coords() { return {Kind::kCoords, 0}; }
  bool operator==(const FieldRef&) const = default;
};

// Identifiers of the optional footer sections (23+).
enum class OptionalSectionId : uint64_t { kTileGlobalOrderBounds = 0 };

// The footer as stored. Every per-field array has exactly FooterFieldCount()
// entries when its section exists in this version and is empty otherwise;
// before 5 the var arrays, which have no coords slot on disk, get a 0 there.
struct FragmentFooter {
  uint32_t version = 0;
  std::string array_schema_name;  // kLegacySchemaName before 10
  bool dense = false;
  bool null_non_empty_domain = false;
  std::vector<Range> non_empty_domain;  // one per dimension (empty when null)
  uint64_t sparse_tile_num = 0;
  uint64_t last_tile_cell_num = 0;
  bool has_timestamps = false;
  bool has_delete_meta = false;
  std::vector<uint64_t> file_sizes;           // per field index
  std::vector<uint64_t> file_var_sizes;       // per field index
  std::vector<uint64_t> file_validity_sizes;  // per field index (7+)
  uint64_t rtree_offset = 0;
  std::vector<uint64_t> tile_offsets_offsets;
  std::vector<uint64_t> tile_var_offsets_offsets;
  std::vector<uint64_t> tile_var_sizes_offsets;
  std::vector<uint64_t> tile_validity_offsets_offsets;  // 7+
  std::vector<uint64_t> tile_min_offsets;               // 11+
  std::vector<uint64_t> tile_max_offsets;
  std::vector<uint64_t> tile_sum_offsets;
  std::vector<uint64_t> tile_null_count_offsets;
  uint64_t fragment_min_max_sum_null_count_offset = 0;  // 12+
  uint64_t processed_conditions_offset = 0;             // 16+
  // Optional section 0 (23+): per dimension, offsets of the generic tiles
  // holding the global-order min and max coordinates of each tile.
  bool has_tile_global_order_bounds = false;
  std::vector<uint64_t> tile_global_order_min_offsets;
  std::vector<uint64_t> tile_global_order_max_offsets;
  // Bytes of the footer: when read from __fragment_metadata.tdb, including
  // its length field if it has one; from a consolidated file, the bytes the
  // footer fields took.
  uint64_t footer_size = 0;
};

// Field count N of the footer arrays (the fixed-size ones before 5).
uint64_t FooterFieldCount(const ArraySchema& schema, uint32_t version, bool has_timestamps,
                          bool has_delete_meta);
// Footer index of a field, or -1 if a fragment of this version and flags
// has no slot for it (dimensions before 5, t/dt/dci without their flags,
// indexes past the schema's fields).
int FooterFieldIndex(const ArraySchema& schema, uint32_t version, bool has_timestamps,
                     bool has_delete_meta, FieldRef f);

// The first fields of a footer, which say how to parse the rest.
struct FooterPrefix {
  uint32_t version = 0;
  std::string array_schema_name;  // kLegacySchemaName before 10
};

// Reads the version and (10+) the schema name. kCorrupt on truncation or an
// empty name; kUnsupported for a version outside 3..kMaxFragmentVersion.
Result<FooterPrefix> PeekFragmentFooter(Bytes footer, uint64_t file_offset);

// Parses the footer fields (no length field) from the start of `footer`,
// which may extend past them; `*consumed` receives the bytes used.
// `version_hint` is the format version from the fragment's name (0 if
// unknown); from 5 on it must match the footer's. Errors: kCorrupt,
// kUnsupported (version).
Result<FragmentFooter> ParseFragmentFooterFields(Bytes footer, uint64_t file_offset,
                                                 const ArraySchema& schema, uint32_t version_hint,
                                                 uint64_t* consumed);

// Parses a footer given its bytes (exactly the footer, length field
// included when it has one) and the schema it refers to. `version_hint` is
// the version from the fragment's name (0 if unknown): 3-4 names carry
// none (hint 4: the footer must say 3 or 4); from 5 on the footer must say
// the same. Whether a length field follows depends on the footer's version
// and the schema (FooterHasLengthField). Errors: kCorrupt (truncated,
// trailing bytes, a length field that disagrees, a version below 3 or
// contradicting the name), kUnsupported (version newer than 23).
Result<FragmentFooter> ParseFragmentFooter(Bytes footer, uint64_t file_offset,
                                           const ArraySchema& schema, uint32_t version_hint);

// Whether a footer of this version ends with its length (always since 10;
// before, only when some dimension is var-sized).
bool FooterHasLengthField(const ArraySchema& schema, uint32_t version);

// Size of a footer without length field (3 <= version < 10, all dimensions
// fixed-sized), computed from the schema as TileDB does. kInvalidArgument
// for a version or schema whose footer has a length field; kCorrupt for a
// schema without dimensions.
Result<uint64_t> FixedFooterSize(const ArraySchema& schema, uint32_t version);

// Reads a non-empty domain / MBR (one Range per dimension) in the 5+
// encoding. Shared by the footer and the R-tree.
Result<std::vector<Range>> ReadNdRange(ByteReader& r, const ArraySchema& schema,
                                       std::string_view field);
// Same, in the pre-5 encoding: every dimension fixed-sized, lo and hi of
// its coord size, or of dimension 0's coord size when `use_first_dim_size`
// (the 3-4 footer's non-empty domain). kCorrupt for a var-sized dimension.
Result<std::vector<Range>> ReadFixedNdRange(ByteReader& r, const ArraySchema& schema,
                                            bool use_first_dim_size, std::string_view field);

// Bytes of one coordinate of dimension d (fixed-sized dimensions).
uint64_t CoordSize(const Dimension& d);

}  // namespace tiledbfs::core
