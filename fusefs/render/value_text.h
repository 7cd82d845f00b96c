// Values as text, the rules of docs/namespace.md "Values" shared by data.csv,
// <field>.txt, tiles.csv and metadata/<key>. These functions produce the
// bare text of a value or a cell; CSV quoting is csv.h's job.
//
//   integers          decimal ("-128", "18446744073709551615")
//   FLOAT32/FLOAT64   the shortest text that reads back to the same value of
//                     that width: std::to_chars' shortest form, which picks
//                     plain or exponent notation, whichever is shorter (plain
//                     on a tie): "0.1", "100", "1e+20", "1e-05", "-0",
//                     "1.2345678901234568e+17"; "nan" (never "-nan"), "inf",
//                     "-inf". FLOAT32 values are shortest as float32 ("0.1",
//                     not "0.10000000149011612").
//   BOOL              "true" / "false" (any non-zero byte is true)
//   CHAR, STRING_*    the text. ASCII/UTF8/CHAR bytes are copied as they are,
//                     but for a byte not part of valid UTF-8, written \xHH
//                     (core/util/text.h). UTF16/UCS2 (2-byte LE code units) and
//                     UTF32/UCS4 (4-byte LE) are converted to UTF-8; an
//                     invalid unit or unpaired surrogate becomes U+FFFD.
//   BLOB, GEOM_*, ANY lowercase hex of the bytes, no separators
//   DATETIME_<unit>   as numpy.datetime_as_string prints that unit: "2024",
//                     "2024-03", "2024-03-14" (DAY and WEEK), "...T12",
//                     "...T12:30", "...T12:30:05", ".123" / 6 / 9 / 12 / 15 /
//                     18 fraction digits; proleptic Gregorian, years printed
//                     as numpy's "%04d" ("0001", "-001", "10000"); "NaT" for
//                     INT64 min. Where numpy's own int64 arithmetic overflows
//                     (|value| near INT64 max in YEAR, WEEK and DAY, and DAY's
//                     min+1), numpy prints garbage; we print the true date.
//   TIME_<unit>       the integer
//
// Preconditions (callers pass data the core already checked): for numeric,
// bool, datetime and time types `one_value.size() == DatatypeSize(t)`; a
// value of any other size appends nothing.
#pragma once

#include <cstdint>
#include <string>

#include "core/format/datatype.h"
#include "core/read/column.h"
#include "core/schema/array_schema.h"
#include "core/util/bytes.h"

namespace tiledbfs::fusefs {

using core::Bytes;

// Appends the text of one value of type t. For string types `one_value` is
// the whole text (any length, nothing stripped); for BLOB-like types the
// bytes to print in hex.
void AppendValueText(std::string& out, core::Datatype t, Bytes one_value);

// Appends the text of a cell holding `cell_val_num` values (kVarNum: as
// many as fit) of type t, stored in `cell`:
//   - strings: one text without its trailing NUL code units (TileDB pads
//     fixed cells with NULs and fills var strings with one NUL; `fixed`
//     does not change this);
//   - BLOB-like: one hex string of all the bytes;
//   - anything else: the values separated by single spaces ("" for a var
//     cell with no values). A trailing partial value is ignored.
void AppendCellBytesText(std::string& out, core::Datatype t, bool fixed, Bytes cell);

// Appends the text of cell i of column c (precondition: i < c.cell_count
// and c is consistent, see CheckColumn). A null cell appends nothing: the
// caller writes an empty unquoted field. With an enumeration (an attribute
// whose values are indexes into its enumeration), each index prints its
// label, rendered by the rules above with the enumeration's own type; an
// index with no label (negative or >= the number of values) prints as the
// integer itself, so nothing is lost.
void AppendCellText(std::string& out, const core::Column& c, uint64_t i,
                    const core::Enumeration* enumeration /*nullable*/);

// Checks the invariants AppendCellText relies on: data holds cell_count
// cells (fixed) or offsets has cell_count + 1 non-decreasing entries ending
// within data (var), validity has cell_count bytes (nullable), cell_val_num
// is not 0. Errors: kInvalidArgument naming the column and the field.
core::Status CheckColumn(const core::Column& c);

// The bytes without their trailing code units (of `unit` bytes) that are
// all zero: text renderings and data.parquet drop TileDB's NUL padding of
// fixed string cells and its one-NUL fill of var ones.
Bytes StripTrailingNuls(Bytes b, size_t unit);
// An enumeration index as a signed 128-bit number (-1 if not an integer type
// or the bytes are not one value of it).
__int128 EnumerationIndex(core::Datatype t, Bytes b);
// The number of values in an enumeration, and value i's bytes (i < size).
// Var-sized enumerations: value i spans offsets[i] to offsets[i + 1] (or the
// end of data for the last one). Returns 0 values for an enumeration whose
// offsets or data are inconsistent.
uint64_t EnumerationSize(const core::Enumeration& e);
Bytes EnumerationValue(const core::Enumeration& e, uint64_t i);

// Appends the numpy.datetime_as_string text of `value` in the unit of
// DATETIME type t (t must satisfy IsDatetime).
void AppendDatetimeText(std::string& out, core::Datatype t, int64_t value);

// Shortest round-trip text of a float / double (the FLOAT rules above).
void AppendFloatText(std::string& out, float v);
void AppendDoubleText(std::string& out, double v);

}  // namespace tiledbfs::fusefs
