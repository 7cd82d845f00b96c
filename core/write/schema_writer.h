// Writing array schemas: the mirror of ParseArraySchema (core/schema/
// array_schema.h, whose field table applies) at format version 22, and the
// schema.json form SchemaToJson produces read back into an ArraySchema.
// Spec: format_spec/array_schema.md.
#pragma once

#include <string>
#include <string_view>

#include "core/schema/array_schema.h"
#include "core/util/limits.h"

namespace tiledbfs::core {

// The format version the writer produces (what TileDB 2.30 writes).
constexpr uint32_t kWriteFormatVersion = 22;

// The unfiltered schema payload. kUnsupported for what version 22 cannot
// hold or the writer does not write (dimension labels, enumerations, a
// non-empty current domain). The payload is parsed back under `limits`
// (never written what the reader cannot read).
Result<ByteVec> SerializeArraySchema(const ArraySchema& s, const Limits& limits);

// Parses schema.json as SchemaToJson writes it (keys array_type,
// tile_order, cell_order, capacity, allows_dups, dims, attrs,
// coords_filters, offsets_filters, validity_filters; version and
// timestamp_range are ignored). Each field's "filter_pipeline" (or, if
// absent, its "filters" name list) gives its filters; a dimension whose
// pipeline equals the coords filters stores none of its own. Attribute
// fill values come from "fill_value_hex" when present, else "fill_value",
// else TileDB's default. kInvalidArgument naming the key on bad input;
// the schema is checked by a round trip through the parser under `limits`.
Result<ArraySchema> SchemaFromJson(std::string_view json, const Limits& limits);

}  // namespace tiledbfs::core
