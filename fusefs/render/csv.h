// CSV as docs/namespace.md defines it for data.csv, <field>.txt and tiles.csv:
// comma-separated, LF line ends, RFC 4180 quoting (a field holding `,` `"`
// CR or LF is quoted, quotes doubled), an empty string is `""`, a null is an
// empty unquoted field. Values follow value_text.h. Every byte written is
// part of valid UTF-8: a byte of a value or name that is not is written
// \xHH (core/util/text.h), and the measured sizes count it so.
//
// Streaming: a table is rendered in pieces. CsvTable renders any range of
// rows, and measures one without keeping its text (the size of rendered text
// is not knowable without rendering: numbers have variable widths);
// fusefs/model/streamed_file.h lays a file out from those pieces.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/read/column.h"
#include "core/schema/array_schema.h"
#include "core/util/result.h"

namespace tiledbfs::fusefs {

// Appends `text` as one CSV field: as it is, or quoted with quotes doubled
// when it holds , " CR or LF or is empty; bytes not part of valid UTF-8 as
// \xHH. (A null is no call at all.)
void AppendCsvField(std::string& out, std::string_view text);
// True if AppendCsvField would quote `text`.
bool CsvNeedsQuotes(std::string_view text);

// Appends cell i of c as a CSV field: nothing for a null, else the quoted
// or bare text of AppendCellText. `scratch` is reused between calls to avoid
// allocations.
void AppendCsvCell(std::string& out, const core::Column& c, uint64_t i,
                   const core::Enumeration* enumeration, std::string& scratch);

// One column of a table and, for an attribute with an enumeration, the
// enumeration whose labels it prints. Both pointers must outlive the table.
struct CsvColumn {
  const core::Column* column = nullptr;
  const core::Enumeration* enumeration = nullptr;
};

// Rows over columns of equal cell_count: data.csv (header row of the column
// names, then one row per cell) or <field>.txt (one column, no header).
class CsvTable {
 public:
  // Errors: kInvalidArgument if there is no column, a column is null or
  // inconsistent (CheckColumn), or the cell counts differ.
  static core::Result<CsvTable> Make(std::vector<CsvColumn> columns, bool header);

  uint64_t row_count() const { return rows_; }
  bool has_header() const { return header_; }

  // Appends the header line (names as CSV fields, then LF); nothing for a
  // table without header.
  void AppendHeader(std::string& out) const;
  // Appends rows [first, last), each ending with LF. last is clamped to
  // row_count(). Common cells (integers, floats, plain text without an
  // enumeration) are written straight into `out`, with no allocation per
  // cell; others go through AppendCellText.
  void AppendRows(std::string& out, uint64_t first, uint64_t last) const;
  // The number of bytes AppendRows(out, first, last) appends, counted
  // without writing the common cells.
  uint64_t MeasureRows(uint64_t first, uint64_t last) const;

 private:
  void Emit(std::string& out, uint64_t first, uint64_t last) const;
  CsvTable(std::vector<CsvColumn> columns, bool header, uint64_t rows);
  std::vector<CsvColumn> columns_;
  std::vector<uint8_t> kinds_;  // per column: how its cells are written (csv.cc)
  bool header_;
  uint64_t rows_;
};

// The widths of an integer column's CSV text, which depend on the value
// alone: widths[0] for the values below bounds[0], widths[i] for those from
// bounds[i - 1] on, bounds ascending in the type's core::OrderedValue
// order. A column's text bytes are then the sum of the counts of its values
// in each class times the class's width (core::CountDimensionValues).
struct CsvWidthClasses {
  std::vector<uint64_t> bounds;
  std::vector<uint64_t> widths;  // bounds.size() + 1
};
// nullopt for a column whose cells CsvTable does not write as integers.
std::optional<CsvWidthClasses> CsvIntegerWidths(core::Datatype type, uint32_t cell_val_num);

}  // namespace tiledbfs::fusefs
