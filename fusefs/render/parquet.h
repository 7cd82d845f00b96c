// data.parquet as docs/namespace.md "Parquet" defines it: a view's rows in
// data.csv's order, one column per dimension then attribute, typed.
// Format: apache/parquet-format (README.md for the file layout,
// src/main/thrift/parquet.thrift for the footer and page headers,
// Encodings.md for PLAIN and the RLE/bit-packing hybrid, LogicalTypes.md).
//
// The file is planned before any value is read, so that stat knows its
// exact size: "PAR1", then per row group (runs of whole pieces of about
// 1Mi rows) each column's chunk: [dictionary page], data pages (runs of
// whole pieces, at most 64Ki rows and about 1 MiB), then the footer, its
// length and "PAR1". Pages are data page v1, PLAIN (an enumeration's
// indices RLE_DICTIONARY), uncompressed: their bytes are served from
// memory, where compression would cost CPU and buy nothing. Levels are
// written as bit-packed runs only, so their size follows from their count.
// What a size needs beyond the cell count (valid cells, value bytes, empty
// cells, whether strings are UTF-8) comes from the view's layout pass as
// running totals per piece (ParquetCounts). The footer's statistics hold
// null counts (known from the plan) and the first dimension's min and max
// per row group (its values at the group's first and last rows: row-major
// order never decreases it), of fixed width, so that placeholders of the
// same width give the footer's size before the values are read.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/read/column.h"
#include "core/schema/array_schema.h"
#include "core/util/result.h"

namespace tiledbfs::fusefs {

// What the layout pass counts for one field, as running totals at piece
// boundaries (pieces + 1 entries from 0); a vector the field does not need
// (ParquetNeeds) is empty.
struct ParquetCounts {
  std::vector<uint64_t> valid;  // nullable: valid cells
  std::vector<uint64_t> bytes;  // var-sized, strings: bytes of the valid values
  std::vector<uint64_t> empty;  // var-sized numbers: valid cells of no value
  bool utf8 = true;             // strings: every valid value is UTF-8
  bool labeled = true;          // an enumeration's: every valid index has a label
  // The first dimension (ParquetEndsWanted): its values at each piece's
  // first and last rows, 2 per piece, each its bytes zero-padded to 8: its
  // statistics, with no cell read again (a sparse view's would build every
  // window of its cell order).
  std::vector<uint64_t> ends;
};
// What a field needs counted: nullable (valid), var-sized or strings
// (bytes), var-sized numbers (empty), strings (utf8). None (any() false)
// where its sizes follow from the cell count alone.
// An attribute's NaT (INT64's minimum, numpy's "not a time") in a column
// of TIMESTAMP or TIME is a null: readers cannot hold it as an instant
// (DuckDB fails the whole read on it), and pandas reads it back as NaT.
// An attribute with an enumeration whose every index has a label is
// dictionary-encoded (ParquetDictionary: an integer key per cell, labels
// that are strings or one number each); one whose indices are not all
// labelled shows its indices.
struct ParquetNeeds {
  bool valid = false, bytes = false, empty = false, utf8 = false;
  bool nat = false;      // valid cells exclude NaT
  bool labeled = false;  // indices checked against `labels`
  uint64_t labels = 0;
  bool any() const { return valid || bytes || empty || utf8 || labeled; }
};
bool ParquetDictionary(core::Datatype key_type, uint32_t cell_val_num,
                       const core::Enumeration* enumeration);
ParquetNeeds ParquetNeedsOf(core::Datatype type, uint32_t cell_val_num, bool nullable,
                            bool dimension, const core::Enumeration* enumeration);
// Cell i of c as a Parquet value: strings (CHAR, STRING_*) without their
// trailing NUL bytes, as data.csv writes them (TileDB pads fixed cells
// and fills unwritten var cells with NULs); other cells whole.
core::Bytes ParquetValue(const core::Column& c, uint64_t i);
// Counts cells [first, first + c.cell_count) of a field, pieces of
// `piece` cells from first_piece = first / piece, into `counts` (each
// piece's own totals at entry j + 1; ParquetRunningTotals makes them
// running once every piece is in). The vectors needed are sized by the
// caller (pieces + 1 entries). Returns whether every valid value is UTF-8
// (for needs.utf8) and every index labelled (needs.labeled): the caller
// keeps them in ParquetCounts once every piece is in.
struct ParquetFlags {
  bool utf8 = true, labeled = true;
};
ParquetFlags ParquetCountPieces(const core::Column& c, ParquetNeeds needs, uint64_t first_piece,
                                uint64_t piece, ParquetCounts& counts);
void ParquetRunningTotals(ParquetCounts& counts);
// Whether a first dimension of this type has ParquetCounts::ends; and the
// ends of cells [first, first + c.cell_count) (first = first_piece *
// piece) into counts.ends (sized 2 * pieces by the caller).
bool ParquetEndsWanted(core::Datatype type, uint32_t cell_val_num);
void ParquetPieceEnds(const core::Column& c, uint64_t first_piece, uint64_t piece,
                      ParquetCounts& counts);

// A column of the file.
struct ParquetField {
  std::string name;
  core::Datatype type = core::Datatype::kInt32;
  uint32_t cell_val_num = 1;
  bool nullable = false;
  bool dimension = false;
  // Its labels, for an attribute with an enumeration of strings; null
  // otherwise (must outlive the plan).
  const core::Enumeration* enumeration = nullptr;
  ParquetCounts counts;  // what ParquetNeedsOf asks for
};

class ParquetPlan {
 public:
  // How a field's cells become values.
  enum class Kind : uint8_t {
    kFixed,       // a number per cell: INT32 (1- and 2-byte integers widened), INT64, FLOAT, DOUBLE
    kBool,        // BOOLEAN, bit-packed
    kBytes,       // BYTE_ARRAY: a cell's bytes (strings, blobs)
    kList,        // LIST of numbers: var-sized cells or k > 1 per cell
    kDictionary,  // an enumeration: a dictionary page of labels, RLE_DICTIONARY indices
  };
  struct Column {
    ParquetField field;
    Kind kind = Kind::kFixed;
    uint32_t width = 0;     // bytes of a PLAIN value (0: bits or BYTE_ARRAY); a label's
    bool optional = false;  // nullable, or NaT is null (ParquetNeeds::nat)
    bool nat = false;
    int max_def = 0, max_rep = 0;
    uint32_t dict_bits = 0;  // kDictionary: bits per index
  };
  // One page: a dictionary page (rows == 0) or a data page of rows
  // [first_row, first_row + rows) of one column.
  struct Page {
    uint64_t start = 0;  // its header
    uint64_t body = 0;   // its body
    uint64_t end = 0;    // past its body
    uint64_t first_row = 0, rows = 0;
    uint64_t values = 0;  // level entries (rows, or a list's entries); labels
    uint64_t nulls = 0;   // null cells
    uint32_t column = 0;
    bool dictionary = false;
  };
  struct RowGroup {
    uint64_t first_row = 0, rows = 0;
    size_t first_page = 0;  // its pages follow in column order
  };

  // The plan of `rows` rows of `fields` (each field's counts of pieces of
  // `piece_rows` rows, as ParquetNeedsOf asks). `metadata`: the file's
  // key-value metadata. `first_dim_stats`: min/max of fields[0] per row
  // group (a fixed-size number; FooterStats gives them). Errors:
  // kInvalidArgument for counts that do not cover the rows, kCorrupt for
  // counts that do not fit (a var-sized number's bytes not a multiple of
  // its size), kOutOfMemory for a file past 2^63 bytes or a page past 2 GiB.
  static core::Result<ParquetPlan> Make(std::vector<ParquetField> fields, uint64_t rows,
                                        uint64_t piece_rows,
                                        std::map<std::string, std::string> metadata,
                                        bool first_dim_stats);

  uint64_t size() const { return size_; }
  uint64_t rows() const { return rows_; }
  const std::vector<Column>& columns() const { return columns_; }
  const std::vector<Page>& pages() const { return pages_; }
  const std::vector<RowGroup>& row_groups() const { return groups_; }
  uint64_t footer_start() const { return footer_start_; }
  bool first_dim_stats() const { return first_dim_stats_; }
  // The page whose header or body holds `offset` (footer_start() <= offset:
  // none, pages().size()).
  size_t PageAt(uint64_t offset) const;

  // Page p's header (Page::body - Page::start bytes).
  std::string PageHeader(size_t p) const;
  // Page p's body from `cells`, its rows of its column (ReadFieldRange);
  // ignored for a dictionary page. kCorrupt if the cells do not fit the
  // plan (another count of valid cells or bytes, an enumeration index past
  // the labels): never bytes of another size.
  core::Status AppendPageBody(size_t p, const core::Column& cells, std::string& out) const;
  // For a column whose data page bodies are only values of `width` bytes
  // (REQUIRED kFixed): the values of cells, converted (widened), so that a
  // read inside a body maps to rows directly. 0 for other columns.
  uint32_t DirectWidth(size_t column) const;
  static void AppendFixedValues(const Column& column, const core::Column& cells, std::string& out);

  // The footer with its length and the closing magic (size() -
  // footer_start() bytes). first_dim: per row group, PLAIN bytes of the
  // first dimension's value at its first and last rows (ignored without
  // first_dim_stats). kCorrupt if a value is not of the width planned.
  struct MinMax {
    std::string min, max;
  };
  core::Result<std::string> Footer(const std::vector<MinMax>& first_dim) const;
  // The PLAIN bytes of cell 0 of `cells`, as the column's statistics hold
  // a value (widened; -0.0 for a min of zero, +0.0 for a max: the spec's rule).
  std::string StatValue(const core::Column& cells, bool is_max) const;
  // Footer's first_dim from the first column's counts (ParquetCounts::ends
  // of pieces of `piece_rows`); nullopt where it has none.
  std::optional<std::vector<MinMax>> StatsFromEnds(uint64_t piece_rows) const;

 private:
  std::string EncodeFooter(const std::vector<MinMax>* first_dim) const;
  std::vector<Column> columns_;
  std::vector<Page> pages_;
  std::vector<RowGroup> groups_;
  std::map<std::string, std::string> metadata_;
  uint64_t rows_ = 0;
  uint64_t footer_start_ = 0;
  uint64_t size_ = 0;
  bool first_dim_stats_ = false;
};

}  // namespace tiledbfs::fusefs
