// Writing array metadata: one __meta/<name> file per write, the mirror of
// core/metadata/metadata.h (ParseMetadataFile, LoadMetadata), whose entry
// table applies. Spec: format_spec/metadata.md; TileDB 2.30's
// Metadata::serialize / Metadata::store (tiledb/sm/metadata/metadata.cc).
//
// As TileDB writes it:
//   - the file is __meta/__<t>_<t>_<32 hex> (no format version suffix), t
//     the write's timestamp, one generic tile (format 22, GZIP level 1)
//     whose data is the entries one after another, in key order, each key
//     once;
//   - a put is key length, key, 0, value type, value count, values; a
//     deletion is key length, key, 1 and nothing else.
// The file is written under a temporary name in the array folder (one that
// neither TileDB nor our listing takes for anything) and renamed into
// __meta/, so a reader never sees half of it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/metadata/metadata.h"
#include "core/util/limits.h"

namespace tiledbfs::core {

// A value from its type name (as schema.json spells datatypes: INT32,
// FLOAT64, STRING_UTF8, ...) and its values as text. Numbers: one or more
// (integers range-checked, BOOL 0/1/true/false, DATETIME_* and TIME_* as
// int64 counts, floats as strtod reads them, nan and inf included). CHAR,
// STRING_ASCII, STRING_UTF8, BLOB, GEOM_WKB, GEOM_WKT: exactly one value,
// its bytes as given (an empty string is a value of count 0).
// kInvalidArgument naming the type or value otherwise (unknown type, ANY,
// a wrong number of values, a value that does not parse or fit);
// kUnsupported for STRING_UTF16/UTF32/UCS2/UCS4.
Result<MetadataValue> MetadataValueFromText(std::string_view type_name,
                                            const std::vector<std::string>& values);

// The unfiltered data of a metadata file: the entries sorted by key (a key
// given twice: the last one wins, as in TileDB's map). kInvalidArgument
// for a value whose size is not count * type size, or a key or count that
// does not fit its uint32 field.
Result<ByteVec> SerializeMetadataEntries(std::vector<MetadataEntry> entries);

// Writes one metadata file holding `entries` at `timestamp` into
// `array_dir`/__meta and returns its name. kNotFound if `array_dir` is not
// an array; kInvalidArgument for no entries or bad ones (see above); kKey
// for an encrypted array (not written); kIo. Nothing is left on failure.
// The array is opened under `limits` first (to refuse what we cannot read).
Result<std::string> WriteArrayMetadata(const std::string& array_dir, uint64_t timestamp,
                                       std::vector<MetadataEntry> entries, const Limits& limits);

}  // namespace tiledbfs::core
