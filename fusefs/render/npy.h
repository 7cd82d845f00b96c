// attributes/<a>.npy and dimensions/<d>.npy: NumPy format 1.0
// (numpy.lib.format; https://numpy.org/doc/stable/reference/generated/numpy.lib.format.html).
//
//   offset  size  field
//   0       6     magic "\x93NUMPY"
//   6       1     major version 1
//   7       1     minor version 0
//   8       2     HEADER_LEN, uint16 little-endian
//   10      H     header: a Python dict literal
//                 "{'descr': '<i4', 'fortran_order': False, 'shape': (20,), }"
//                 padded with spaces and ended by '\n' so that the data
//                 starts at a multiple of 64
//   10+H    ...   the data: exactly the bytes of <field>.bin
//
// The header is byte-identical to what np.save (numpy >= 1.24) writes for
// the same dtype and shape, including its spare spaces for growing the
// first axis (21 - len(repr(shape[0])) of them) and a full 64 spaces of
// padding when the text already ends on a boundary.
//
// dtype per TileDB type (cell_val_num k; "axis k" = a last axis of length k
// when k > 1, as docs/namespace.md says):
//   INT8..UINT64     '|i1' '|u1' '<i2' '<u2' '<i4' '<u4' '<i8' '<u8', axis k
//   FLOAT32/64       '<f4' '<f8', axis k
//   BOOL             '|b1', axis k
//   DATETIME_<u>     '<M8[u]' (u = Y M W D h m s ms us ns ps fs as), axis k
//   TIME_<u>         '<m8[u]', axis k
//   CHAR, STRING_ASCII, STRING_UTF8   '|S<k>' (no extra axis)
//   STRING_UTF32, STRING_UCS4         '<U<k>' (numpy's own UCS4 strings)
//   STRING_UTF16, STRING_UCS2         '<u2', axis k (numpy has no UTF-16
//                                     string dtype: the code units)
//   BLOB, GEOM_*, ANY                 '|u1', axis k (the bytes)
// Nullable fields: the .npy holds the values as stored (null cells keep
// whatever bytes TileDB returned); the validity is in <field>.validity.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "core/format/datatype.h"
#include "core/util/result.h"

namespace tiledbfs::fusefs {

struct NpyDtype {
  std::string descr;       // "<i4", "|S4", "<M8[ms]"
  uint64_t item_size = 0;  // bytes of one element of that dtype
  uint32_t last_axis = 0;  // 0: none; else the length of the added last axis
};

// The dtype for a field. Errors: kInvalidArgument for a var-sized field
// (cell_val_num == kVarNum: no .npy) or cell_val_num 0.
core::Result<NpyDtype> NpyDtypeFor(core::Datatype t, uint32_t cell_val_num);

struct NpyFile {
  std::string header;      // magic through the final '\n'; size % 64 == 0
  uint64_t data_size = 0;  // bytes that follow: cells * cell_size
  uint64_t total_size() const { return header.size() + data_size; }
};

// The header for a field whose cells form `cell_shape` (dense: the extents
// of the bounding box, slowest dimension first; sparse: {n}). The file is
// the header followed by the field's .bin bytes, whose size must be
// data_size. Errors: kInvalidArgument (var-sized, cell_val_num 0, empty
// shape), kOutOfMemory if the element count or data size overflow 64 bits,
// kUnsupported if the header would not fit format 1.0's 16-bit length.
core::Result<NpyFile> MakeNpyFile(core::Datatype t, uint32_t cell_val_num,
                                  std::span<const uint64_t> cell_shape);

}  // namespace tiledbfs::fusefs
