#include "fusefs/render/csv.h"

#include <fmt/format.h>

#include <algorithm>

#include "fusefs/render/value_text.h"

namespace tiledbfs::fusefs {

bool CsvNeedsQuotes(std::string_view text) {
  return text.empty() || text.find_first_of(",\"\r\n") != std::string_view::npos;
}

void AppendCsvField(std::string& out, std::string_view text) {
  if (!CsvNeedsQuotes(text)) {
    out += text;
    return;
  }
  out += '"';
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
}

void AppendCsvCell(std::string& out, const core::Column& c, uint64_t i,
                   const core::Enumeration* enumeration, std::string& scratch) {
  if (!c.valid(i)) return;
  scratch.clear();
  AppendCellText(scratch, c, i, enumeration);
  AppendCsvField(out, scratch);
}

core::Result<CsvTable> CsvTable::Make(std::vector<CsvColumn> columns, bool header) {
  if (columns.empty()) return core::Error::InvalidArgument("CSV table without columns");
  uint64_t rows = 0;
  for (size_t k = 0; k < columns.size(); ++k) {
    const core::Column* c = columns[k].column;
    if (c == nullptr) {
      return core::Error::InvalidArgument(fmt::format("CSV table column {} is null", k));
    }
    TRY(CheckColumn(*c));
    if (k == 0) rows = c->cell_count;
    if (c->cell_count != rows) {
      return core::Error::InvalidArgument(
          fmt::format("CSV table: column '{}' has {} cells, column '{}' has {}", c->name,
                      c->cell_count, columns[0].column->name, rows));
    }
  }
  return CsvTable(std::move(columns), header, rows);
}

void CsvTable::AppendHeader(std::string& out) const {
  if (!header_) return;
  for (size_t k = 0; k < columns_.size(); ++k) {
    if (k > 0) out += ',';
    AppendCsvField(out, columns_[k].column->name);
  }
  out += '\n';
}

void CsvTable::AppendRows(std::string& out, uint64_t first, uint64_t last) const {
  last = std::min(last, rows_);
  std::string scratch;
  for (uint64_t i = first; i < last; ++i) {
    for (size_t k = 0; k < columns_.size(); ++k) {
      if (k > 0) out += ',';
      AppendCsvCell(out, *columns_[k].column, i, columns_[k].enumeration, scratch);
    }
    out += '\n';
  }
}

CsvLayout ComputeCsvLayout(const CsvTable& table, uint64_t rows_per_checkpoint) {
  CsvLayout layout;
  layout.rows_per_checkpoint = std::max<uint64_t>(rows_per_checkpoint, 1);
  std::string buf;
  table.AppendHeader(buf);
  layout.header_size = buf.size();
  uint64_t at = buf.size();
  uint64_t n = table.row_count();
  for (uint64_t first = 0; first < n; first += layout.rows_per_checkpoint) {
    layout.checkpoints.push_back(at);
    buf.clear();
    table.AppendRows(buf, first, first + std::min(layout.rows_per_checkpoint, n - first));
    at += buf.size();
  }
  layout.checkpoints.push_back(at);
  layout.total_size = at;
  return layout;
}

void ReadCsvRange(const CsvTable& table, const CsvLayout& layout, uint64_t offset, uint64_t size,
                  std::string& out) {
  if (offset >= layout.total_size || size == 0) return;
  uint64_t end = offset + std::min(size, layout.total_size - offset);
  if (offset < layout.header_size) {
    std::string header;
    table.AppendHeader(header);
    uint64_t stop = std::min<uint64_t>(end, header.size());
    out.append(header, offset, stop - offset);
    offset = stop;
  }
  if (offset >= end) return;
  // The last checkpoint at or before offset (checkpoints[0] == header_size).
  auto it = std::upper_bound(layout.checkpoints.begin(), layout.checkpoints.end(), offset);
  uint64_t j = static_cast<uint64_t>(it - layout.checkpoints.begin()) - 1;
  uint64_t at = layout.checkpoints[j];
  uint64_t row = j * layout.rows_per_checkpoint;
  std::string buf;
  while (offset < end && row < table.row_count()) {
    buf.clear();
    uint64_t last = row + std::min(layout.rows_per_checkpoint, table.row_count() - row);
    table.AppendRows(buf, row, last);
    uint64_t block_end = at + buf.size();
    if (block_end > offset) {
      uint64_t from = offset - at;
      uint64_t stop = std::min(end, block_end) - at;
      out.append(buf, from, stop - from);
      offset = at + stop;
    }
    at = block_end;
    row = last;
  }
}

}  // namespace tiledbfs::fusefs
