// Writing arrays: creating the folder with its schema, and one fragment per
// write at format version 22, the mirror of core/fragment (footer, sections)
// and core/directory (timestamped names, commit files).
// Spec: format_spec/array_file_hierarchy.md, format_spec/fragment.md.
//
// A fragment is written in this order: __fragments/<name>/ with its data
// files (a<i>.tdb, a<i>_var.tdb, a<i>_validity.tdb, d<i>.tdb, d<i>_var.tdb)
// and __fragment_metadata.tdb (R-tree, tile offsets, var offsets, var
// sizes, validity offsets, tile mins, maxes, sums, null counts, fragment
// min/max/sum/null count, processed conditions, footer, footer length), then
// __commits/<name>.wrt last. On failure the fragment folder is removed, so a
// reader never sees part of a fragment. WriteFragment holds the cells of a
// batch in memory; the files are laid out by core/write/fragment_stream.h,
// which also writes fragments tile by tile from a generator.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/schema/array_schema.h"
#include "core/util/limits.h"

namespace tiledbfs::core {

// The cells of one field, in the order of the write.
struct FieldCells {
  ByteVec data;                   // fixed: cell_count * cell size; var: the values
  std::vector<uint64_t> offsets;  // var only: start of each cell in data
  ByteVec validity;               // nullable only: one byte per cell (1 valid)
};

struct WriteBatch {
  // Every attribute; for sparse arrays every dimension too.
  std::map<std::string, FieldCells> fields;
  // Dense only: the subarray written, inclusive [lo, hi] per dimension (raw
  // bytes of the dimension type); its cells come in row-major order.
  std::vector<Range> subarray;
};

// "__<t>_<t>_<32 hex>" (+ "_<version>" when version != 0).
std::string NewTimestampedName(uint64_t timestamp, uint32_t version);
// "__<t1>_<t2>_<32 hex>" (+ "_<version>"): a consolidated range.
std::string NewTimestampedName(uint64_t t1, uint64_t t2, uint32_t version);

// Creates the array folder (which must not exist or be empty): __schema/
// with the schema at `timestamp`, __commits/, __fragments/. Returns the
// schema file name. The schema is checked under `limits` (SerializeArraySchema).
Result<std::string> CreateArray(const std::string& array_dir, const ArraySchema& schema,
                                uint64_t timestamp, const Limits& limits);

// Writes one fragment. `schema` must have its name (the file under
// __schema/, as LoadArraySchema sets it). Returns the fragment name.
// Errors: kInvalidArgument (missing field, wrong cell counts, coordinates
// out of the domain, duplicates where not allowed, decreasing values under
// POSITIVE_DELTA), kUnsupported (a filter or layout not written), kIo.
Result<std::string> WriteFragment(const std::string& array_dir, const ArraySchema& schema,
                                  uint64_t timestamp, const WriteBatch& batch);
// The same, named for the timestamp range [t1, t2] (a consolidated fragment).
Result<std::string> WriteFragment(const std::string& array_dir, const ArraySchema& schema,
                                  uint64_t t1, uint64_t t2, const WriteBatch& batch);

}  // namespace tiledbfs::core
