// Cell values as the writer compares and sums them: the order TileDB keeps
// within a tile and a fragment (numbers by value, anything else bytewise)
// and the per-tile sums it stores (int64 for signed types, uint64 for
// unsigned, double for floats). Spec: format_spec/fragment.md (tile mins,
// maxes, sums).
#pragma once

#include <cstdint>

#include "core/format/datatype.h"
#include "core/util/bytes.h"

namespace tiledbfs::core {

// One value of a fixed-size type, by kind.
struct Num {
  enum Kind { kSigned, kUnsigned, kFloat, kNone } kind = kNone;
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
};

// Loads the value of type `t` at `p` (DatatypeSize(t) bytes). kNone for
// types that are not numbers (strings, blobs).
Num LoadNum(Datatype t, const uint8_t* p);

// <0, 0, >0. `single`: the cells are one value of `t` each, compared by
// value; otherwise bytewise, a shorter prefix first.
int CompareCells(Datatype t, bool single, Bytes a, Bytes b);

// Adds v to a sum stored as TileDB stores it (the 8 bytes of an int64,
// uint64 or double by v's kind); integers saturate instead of wrapping.
uint64_t AddSum(uint64_t acc, Num v);

}  // namespace tiledbfs::core
