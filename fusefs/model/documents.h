// The descriptive files of the namespace: metadata.json, fragment.json,
// fragment.txt, tiles.csv, log.txt. Built from the format core's facts; no
// data tile is decoded here. All text is valid UTF-8: a byte of a name or
// value that is not part of valid UTF-8 is written \xHH (core/util/text.h;
// JSON documents are to be dumped with core::DumpJsonText).
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/array/array.h"
#include "core/metadata/metadata.h"

namespace tiledbfs::fusefs {

using core::Result;

// A value of `type` as JSON: integers as numbers, floats as numbers (nan,
// inf, -inf as strings), text as strings, blobs as lowercase hex, datetimes
// as numpy-style text (strings escaped as above).
nlohmann::ordered_json ValueJson(core::Datatype type, core::Bytes value);

// metadata/<key>: strings as they are (but for \xHH), blobs as hex, numbers
// as CSV text separated by spaces.
std::string MetadataValueText(const core::MetadataValue& v);

// {"key": {"type": "INT32", "num": 3, "value": [...]}, ...}
nlohmann::ordered_json MetadataJson(const std::map<std::string, core::MetadataValue>& md);

// fragment.json (docs/namespace.md): name, uuid, timestamp_range (ms and ISO),
// format_version, dense, non_empty_domain, cell_count, tile_count,
// has_timestamps, has_delete_meta, schema_name, file sizes, commit, and the
// consolidated fragment that replaces it, if any.
Result<nlohmann::ordered_json> FragmentJson(const core::Array& array,
                                            const core::FragmentMetadata& fragment);
// The same facts as "key: value" lines for people.
std::string FragmentText(const nlohmann::ordered_json& fragment_json);

// One row per tile: tile, cells, per field offset and size on disk (var and
// validity too), MBR per dimension (sparse), min/max/sum/null count (format 11+).
Result<std::string> RenderTilesCsv(const core::FragmentMetadata& fragment);

// One line per event up to `timestamp`, oldest first: schema, write, delete
// (with its condition), update, consolidation, metadata change.
Result<std::string> RenderLog(const core::Array& array, uint64_t timestamp);

}  // namespace tiledbfs::fusefs
