// The rows of diff/<T1>..<T2>/'s CSV files (docs/namespace.md "Diffs"), as
// data.csv writes cells: added.csv and removed.csv each hold a side's
// fields (every dimension, then every attribute), changed.csv the
// dimensions, then `<a>:before`, `<a>:after` per compared attribute.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/array/diff.h"
#include "core/schema/array_schema.h"
#include "fusefs/render/csv.h"

namespace tiledbfs::fusefs {

// Renders the runs of a DiffStream read with all fields. Keeps a table over
// the stream's current columns of each side: one per reader.
class DiffCsv {
 public:
  // `from_enums`, `to_enums`: per field of each side (DiffPlan::from_fields,
  // to_fields), the enumeration whose labels it prints, or null. The plan
  // and they must outlive this.
  DiffCsv(const core::DiffPlan& plan, std::vector<const core::Enumeration*> from_enums,
          std::vector<const core::Enumeration*> to_enums);

  // The header fields of the file of rows of `kind`.
  std::vector<std::string> Header(core::DiffKind kind) const;
  // Appends the stream's current run (`rows` rows) as its file writes it.
  core::Status AppendRun(std::string& out, const core::DiffStream& s, uint64_t rows);
  // The bytes AppendRun would append.
  core::Result<uint64_t> MeasureRun(const core::DiffStream& s, uint64_t rows);

 private:
  // added.csv or removed.csv: the table over side `side`'s current columns.
  core::Result<const CsvTable*> Table(const core::DiffStream& s, int side);
  void AppendChanged(std::string& out, const core::DiffStream& s, uint64_t rows);
  const core::DiffPlan& plan_;
  std::vector<const core::Enumeration*> enums_[2];
  // Per side and box: a table over the box's columns, and the stream's
  // chunk it is over (runs alternate between boxes).
  struct BoxTable {
    std::optional<CsvTable> table;
    uint64_t chunk = 0;
  };
  std::vector<BoxTable> tables_[2];
  std::string scratch_, text_;
};

}  // namespace tiledbfs::fusefs
