// Comparing and converting coordinate values of any dimension type.
#pragma once

#include <cstdint>
#include <cstring>

#include "core/format/datatype.h"
#include "core/util/bytes.h"

namespace tiledbfs::core {

// <0, 0, >0 as a < b, a == b, a > b in the type's own order: integers by
// value, floats numerically, strings byte-wise (a prefix sorts first).
int CompareValues(Datatype t, Bytes a, Bytes b);

// An integer-like value (integers, datetimes, times, bool) as a 128-bit
// integer; 0 for other types.
__int128 ToInt128(Datatype t, Bytes v);
// Writes an integer-like value of type t (DatatypeSize(t) bytes) to out.
void FromInt128(Datatype t, __int128 v, uint8_t* out);

}  // namespace tiledbfs::core
