#include "fusefs/render/diff_csv.h"

namespace tiledbfs::fusefs {

DiffCsv::DiffCsv(const core::DiffPlan& plan, std::vector<const core::Enumeration*> from_enums,
                 std::vector<const core::Enumeration*> to_enums)
    : plan_(plan) {
  enums_[0] = std::move(from_enums);
  enums_[1] = std::move(to_enums);
}

std::vector<std::string> DiffCsv::Header(core::DiffKind kind) const {
  switch (kind) {
    case core::DiffKind::kAdded:
      return plan_.to_fields();
    case core::DiffKind::kRemoved:
      return plan_.from_fields();
    case core::DiffKind::kChanged:
      break;
  }
  const core::ArraySchema& s = plan_.to_schema();
  std::vector<std::string> out;
  for (const auto& d : s.dimensions) out.push_back(d.name);
  for (const auto& [a, b] : plan_.common()) {
    out.push_back(s.attributes[b].name + ":before");
    out.push_back(s.attributes[b].name + ":after");
  }
  return out;
}

core::Result<const CsvTable*> DiffCsv::Table(const core::DiffStream& s, int side) {
  const uint64_t chunk = side == 0 ? s.from_chunk() : s.to_chunk();
  if (tables_[side].size() <= s.box()) tables_[side].resize(s.box() + 1);
  BoxTable& at = tables_[side][s.box()];
  if (!at.table || at.chunk != chunk) {
    const size_t fields = (side == 0 ? plan_.from_fields() : plan_.to_fields()).size();
    std::vector<CsvColumn> columns;
    for (size_t f = 0; f < fields; ++f) {
      columns.push_back({side == 0 ? &s.from_column(f) : &s.to_column(f), enums_[side][f]});
    }
    at.table.reset();
    ASSIGN_OR_RETURN(CsvTable t, CsvTable::Make(std::move(columns), false));
    at.table.emplace(std::move(t));
    at.chunk = chunk;
  }
  return &*at.table;
}

void DiffCsv::AppendChanged(std::string& out, const core::DiffStream& s, uint64_t rows) {
  const size_t dims = plan_.to_schema().dimensions.size();
  const uint64_t i0 = s.from_index(), j0 = s.to_index();
  for (uint64_t r = 0; r < rows; ++r) {
    const uint64_t i = i0 + r, j = j0 + r;
    for (size_t d = 0; d < dims; ++d) {
      if (d > 0) out.push_back(',');
      AppendCsvCell(out, s.to_column(d), j, nullptr, scratch_);
    }
    for (const auto& [a, b] : plan_.common()) {
      out.push_back(',');
      AppendCsvCell(out, s.from_column(dims + a), i, enums_[0][dims + a], scratch_);
      out.push_back(',');
      AppendCsvCell(out, s.to_column(dims + b), j, enums_[1][dims + b], scratch_);
    }
    out.push_back('\n');
  }
}

core::Status DiffCsv::AppendRun(std::string& out, const core::DiffStream& s, uint64_t rows) {
  if (s.kind() == core::DiffKind::kChanged) {
    AppendChanged(out, s, rows);
    return core::Ok();
  }
  const int side = s.kind() == core::DiffKind::kAdded ? 1 : 0;
  ASSIGN_OR_RETURN(const CsvTable* t, Table(s, side));
  const uint64_t first = side == 1 ? s.to_index() : s.from_index();
  t->AppendRows(out, first, first + rows);
  return core::Ok();
}

core::Result<uint64_t> DiffCsv::MeasureRun(const core::DiffStream& s, uint64_t rows) {
  if (s.kind() == core::DiffKind::kChanged) {
    text_.clear();
    AppendChanged(text_, s, rows);
    return uint64_t{text_.size()};
  }
  const int side = s.kind() == core::DiffKind::kAdded ? 1 : 0;
  ASSIGN_OR_RETURN(const CsvTable* t, Table(s, side));
  const uint64_t first = side == 1 ? s.to_index() : s.from_index();
  return t->MeasureRows(first, first + rows);
}

}  // namespace tiledbfs::fusefs
