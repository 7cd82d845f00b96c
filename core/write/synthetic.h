// Synthetic fragments for tests and benchmarks: reproducible values, made
// and written tile by tile (core/write/fragment_stream.h), so memory does
// not grow with the fragment.
//
// Values are a function of (seed, attribute, the cell's coordinates) only,
// never of the cell's position in a write: fragments written with the same
// seed hold the same value wherever they overlap. Every attribute gets
// values: numbers (floats uniform in [-1000, 1000), integers their full
// range), fixed and var-sized strings (lowercase letters, var lengths 0 to
// 12), var-sized numbers (0 to 3 values), nullable ones about one null in
// ten.
//
// Sparse cells are chosen distinct and already in the global order (space
// tile order, then cell order), so nothing is sorted: the box is split
// recursively along that order (tiles, then cells), the count split between
// the halves at random in proportion to their sizes, down to small boxes
// sampled cell by cell. Arrays with a float or string dimension fall back to
// random coordinates sorted in memory (WriteFragment), for small writes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/schema/array_schema.h"

namespace tiledbfs::core {

struct SyntheticSpec {
  uint64_t seed = 0;
  // Inclusive range per dimension (raw bytes of its type); empty: the
  // domain. Integer dimensions only.
  std::vector<Range> subarray;
  // Sparse: cells per fragment, drawn per fragment in [cells_min, cells_max].
  uint64_t cells_min = 1000;
  uint64_t cells_max = 1000;
  // The subarray is cut into this many bands of (nearly) equal height along
  // the first dimension; fragment k writes band k at timestamp T + k.
  uint64_t fragments = 1;
};

// Writes spec.fragments fragments at timestamps timestamp, timestamp + 1,
// ...; `schema` carries its file name. Calls on_fragment (when set) with
// each fragment's name as it is committed and returns them all. Errors:
// kInvalidArgument (subarray outside the domain, more fragments than rows,
// more cells than a band holds, a subarray with a non-integer dimension),
// kUnsupported, kIo. A failed fragment leaves nothing behind; the
// fragments committed before it stay.
Result<std::vector<std::string>> WriteSyntheticFragments(
    const std::string& array_dir, const ArraySchema& schema, uint64_t timestamp,
    const SyntheticSpec& spec, const std::function<void(const std::string&)>& on_fragment = {});

// Chooses `n` distinct cells of the box [lo[d], hi[d]] of a schema with
// integer dimensions, pseudo-randomly from `seed`, and calls emit with each
// one's coordinates in the global order of `schema`. kInvalidArgument when
// the box holds fewer than n cells or a dimension is not an integer type.
Status SampleSparseCells(const ArraySchema& schema, const std::vector<__int128>& lo,
                         const std::vector<__int128>& hi, uint64_t n, uint64_t seed,
                         const std::function<Status(const __int128*)>& emit);

}  // namespace tiledbfs::core
