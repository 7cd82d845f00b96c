// The order of a sparse view's cells (docs/namespace.md "Which cells, in which
// order"): by coordinates, row-major (first dimension slowest), each
// dimension in its type's order (CompareValues); cells with equal
// coordinates newest first (timestamp, then fragment, then position in the
// tile, then tile, all descending), and with `dedup` only the newest kept,
// as TileDB keeps them: a cell goes when its coordinates are the same bytes
// as the cell kept before it (-0.0 and 0.0 are equal, so a float dimension
// keeps both, the newer first).
//
// Cells are named by ordinals: (tile << pos_bits) | pos, where tile indexes
// the `tiles` table (fragments oldest first, each fragment's tiles in order)
// and pos is the cell's position in that tile. Consecutive cells of one tile
// have consecutive ordinals.
//
// Integer-like coordinates (integers, datetimes, times) whose ranges over
// the cells fit, together with the ordinal, in 64 bits are packed into one
// uint64 key per cell and radix sorted; anything else (floats, strings,
// huge ranges) is sorted with a comparator. Both give the same order.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/format/datatype.h"
#include "core/read/tile_source.h"

namespace tiledbfs::core {

struct OrderTile {
  uint32_t fragment = 0;                 // index of the fragment (oldest first)
  uint64_t tile = 0;                     // tile index within the fragment
  std::vector<const DecodedTile*> dims;  // the coordinate tiles, one per dimension
  const DecodedTile* stamps = nullptr;   // per-cell uint64 timestamps, or null
  uint64_t stamp = 0;                    // the cells' timestamp without `stamps`
};

struct OrderInput {
  std::vector<Datatype> types;  // per dimension
  std::vector<OrderTile> tiles;
  int pos_bits = 0;  // bits of an ordinal's position part (cells per tile < 2^pos_bits)
  bool dedup = true;
};

// The bits needed to hold values 0 ... max.
int BitsFor(uint64_t max);

// A coordinate of an integer-like type as a uint64 in the type's order
// (signed values offset by 2^63); false for other types.
bool Packable(Datatype t);
uint64_t OrderedValue(Datatype t, const uint8_t* value);
// OrderedValue for one type, looked up once (null for other types).
using OrderedLoad = uint64_t (*)(const uint8_t* value);
OrderedLoad OrderedLoadFor(Datatype t);
// Writes the DatatypeSize(t) bytes of the coordinate whose OrderedValue is v.
void FromOrdered(Datatype t, uint64_t v, uint8_t* out);

// A dimension's values as uint64 keys that never descend where the values
// ascend (CompareValues), for cutting a view into windows of its first
// dimension: integer-like types their OrderedValue, floating point their
// bits in order (-0.0 as 0.0, which compares equal), strings and other
// var-sized values 8 bytes big-endian from byte `skip` on (`skip`: the
// bytes every value of the view shares).
struct WindowKey {
  Datatype type = Datatype::kInt64;
  size_t skip = 0;
  uint64_t operator()(Bytes value) const;
};

// How coordinates pack into a key: dimension d's OrderedValue minus lo[d]
// at bit shift[d] (the first dimension highest), and the whole key above
// ord_bits bits of ordinal: packed = key << ord_bits | ordinal.
struct KeyPacking {
  std::vector<uint64_t> lo, hi;  // per dimension, OrderedValue bounds
  std::vector<int> shift;
  std::vector<uint64_t> mask;  // per dimension: ones over its bits
  int ord_bits = 0;
  int key_bits = 0;

  // nullopt when the key and the ordinal do not fit in 64 bits.
  static std::optional<KeyPacking> Plan(std::vector<uint64_t> lo, std::vector<uint64_t> hi,
                                        int ord_bits);
  uint64_t OrdinalOf(uint64_t packed) const {
    return ord_bits == 0 ? 0 : packed & (~uint64_t{0} >> (64 - ord_bits));
  }
  uint64_t KeyOf(uint64_t packed) const { return ord_bits >= 64 ? 0 : packed >> ord_bits; }
  // The OrderedValue of dimension d in a packed cell.
  uint64_t Coordinate(uint64_t packed, size_t d) const {
    return shift[d] >= 64 ? lo[d] : ((KeyOf(packed) >> shift[d]) & mask[d]) + lo[d];
  }
};

// Sorts packed cells (key << ord_bits | ordinal) into view order, dropping
// the shadowed ones with in.dedup; they stay packed. Only in.tiles'
// fragment, stamps and stamp and in.pos_bits are used.
void SortPackedCells(const OrderInput& in, const KeyPacking& k, std::vector<uint64_t>& cells);

// Sorts `cells` (ordinals, ascending on entry) into view order, dropping
// the shadowed ones with in.dedup. `packed`, if given, tells which path ran.
void SortSparseCells(const OrderInput& in, std::vector<uint64_t>& cells, bool* packed = nullptr);
// The comparator path alone (for tests).
void SortSparseCellsGeneric(const OrderInput& in, std::vector<uint64_t>& cells);

// Sorts values by bits [lo, hi) (hi - lo <= 64), stably: values whose
// bits there are equal keep their order. `scratch` is reused.
void RadixSortBits(std::vector<uint64_t>& values, int lo, int hi, std::vector<uint64_t>& scratch);
// Sorts values by bits [lo, hi), not stably, with little memory besides
// the values (in place by the top bits, then bucket by bucket).
void RadixSortKeys(std::vector<uint64_t>& values, int lo, int hi);

// Sorts distinct values ascending by merging their maximal ascending runs
// (storage order is mostly a few hundred runs: one per fragment and space
// tile), galloping so that each switch between runs copies a whole segment,
// in place but for a few blocks per run. Declines (false, values untouched)
// where radix sorting is the better choice: more than 4096 runs, or more
// runs, or more segments in the merged order, than one per 32 values (the
// count stops there, having done little work). True when values are sorted
// (untouched when they were already).
bool MergeSortedRuns(std::vector<uint64_t>& values);

}  // namespace tiledbfs::core
