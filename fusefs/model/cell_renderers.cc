#include <fmt/format.h>

#include <algorithm>

#include "fusefs/model/streamed_file.h"
#include "fusefs/render/csv.h"

namespace tiledbfs::fusefs {

const core::Enumeration* EnumerationFor(const core::ArraySchema& schema,
                                        const std::vector<core::Enumeration>& enums,
                                        const std::string& field) {
  int a = schema.AttributeIndex(field);
  if (a < 0 || !schema.attributes[a].enumeration_name) return nullptr;
  for (const auto& e : enums) {
    if (e.name == *schema.attributes[a].enumeration_name) return &e;
  }
  return nullptr;
}

using core::Error;

core::Status CellRenderer::Measure(uint64_t first, uint64_t count, uint64_t piece,
                                   std::vector<uint64_t>& sizes, core::ReadState* state) const {
  std::string buf;
  for (uint64_t at = first; at < first + count; at += piece) {
    buf.clear();
    TRY(Render(at, std::min(piece, first + count - at), buf, state));
    sizes.push_back(buf.size());
  }
  return core::Ok();
}

core::Result<std::optional<uint64_t>> CellRenderer::MeasureAll(uint64_t) const {
  return std::optional<uint64_t>();
}
// Checks a var-sized column from ReadFieldRange: offsets from 0, count + 1
// of them, non-decreasing, ending at data.size().
core::Status CheckVarColumn(const core::Column& c, uint64_t first, uint64_t count) {
  bool ok =
      c.offsets.size() == count + 1 && c.offsets.front() == 0 && c.offsets.back() == c.data.size();
  for (uint64_t k = 0; ok && k < count; ++k) ok = c.offsets[k] <= c.offsets[k + 1];
  if (!ok) {
    return Error::Corrupt(
        fmt::format("{}: inconsistent offsets for cells [{}, +{})", c.name, first, count));
  }
  return core::Ok();
}

namespace {

class CsvRenderer final : public CellRenderer {
 public:
  CsvRenderer(std::shared_ptr<const core::ArrayView> view, std::vector<std::string> fields,
              std::shared_ptr<const std::vector<core::Enumeration>> enums)
      : view_(std::move(view)), fields_(std::move(fields)), enums_(std::move(enums)) {
    for (const auto& f : fields_) {
      field_enums_.push_back(enums_ ? EnumerationFor(view_->schema(), *enums_, f) : nullptr);
    }
  }

  core::Status Render(uint64_t first, uint64_t count, std::string& out,
                      core::ReadState* state) const override {
    std::vector<core::Column> cols;
    ASSIGN_OR_RETURN(CsvTable table, Table(first, count, cols, state));
    table.AppendRows(out, 0, count);
    return core::Ok();
  }

  void Release(uint64_t from, uint64_t to) const override {
    std::vector<std::string> attrs;
    for (const std::string& f : fields_) {
      if (view_->schema().DimensionIndex(f) < 0) attrs.push_back(f);
    }
    view_->ReleaseTiles(attrs, from, to);
  }

  core::Status Measure(uint64_t first, uint64_t count, uint64_t piece, std::vector<uint64_t>& sizes,
                       core::ReadState* state) const override {
    std::vector<core::Column> cols;
    ASSIGN_OR_RETURN(CsvTable table, Table(first, count, cols, state));
    for (uint64_t at = 0; at < count; at += piece) {
      sizes.push_back(table.MeasureRows(at, std::min(count, at + piece)));
    }
    return core::Ok();
  }

 private:
  // Reads the fields' cells [first, first + count) into `cols` (which the
  // table points into).
  core::Result<CsvTable> Table(uint64_t first, uint64_t count, std::vector<core::Column>& cols,
                               core::ReadState* state) const {
    cols.reserve(fields_.size());
    for (const auto& f : fields_) {
      ASSIGN_OR_RETURN(core::Column c, view_->ReadFieldRange(f, first, count, state));
      cols.push_back(std::move(c));
    }
    std::vector<CsvColumn> cc;
    for (size_t k = 0; k < cols.size(); ++k) cc.push_back({&cols[k], field_enums_[k]});
    return CsvTable::Make(std::move(cc), false);
  }

  std::shared_ptr<const core::ArrayView> view_;
  std::vector<std::string> fields_;
  std::shared_ptr<const std::vector<core::Enumeration>> enums_;
  std::vector<const core::Enumeration*> field_enums_;
};

class VarDataRenderer final : public CellRenderer {
 public:
  VarDataRenderer(std::shared_ptr<const core::ArrayView> view, std::string field)
      : view_(std::move(view)), field_(std::move(field)) {}

  core::Status Render(uint64_t first, uint64_t count, std::string& out,
                      core::ReadState* state) const override {
    ASSIGN_OR_RETURN(core::Column c, view_->ReadFieldRange(field_, first, count, state));
    TRY(CheckVarColumn(c, first, count));
    out.append(reinterpret_cast<const char*>(c.data.data()), c.data.size());
    return core::Ok();
  }

  void Release(uint64_t from, uint64_t to) const override {
    view_->ReleaseTiles({field_}, from, to);
  }

  core::Status Measure(uint64_t first, uint64_t count, uint64_t piece, std::vector<uint64_t>& sizes,
                       core::ReadState* state) const override {
    ASSIGN_OR_RETURN(core::Column c, view_->ReadFieldRange(field_, first, count, state));
    TRY(CheckVarColumn(c, first, count));
    for (uint64_t at = 0; at < count; at += piece) {
      uint64_t b = std::min(count, at + piece);
      sizes.push_back(c.offsets[b] - c.offsets[at]);
    }
    return core::Ok();
  }

 private:
  std::shared_ptr<const core::ArrayView> view_;
  std::string field_;
};

void AppendU64(std::string& out, uint64_t v) {
  char b[8];
  for (int k = 0; k < 8; ++k) b[k] = static_cast<char>(v >> (8 * k));
  out.append(b, 8);
}

class VarOffsetsRenderer final : public CellRenderer {
 public:
  VarOffsetsRenderer(std::shared_ptr<const core::ArrayView> view, std::string field,
                     std::shared_ptr<const StreamLayout> data)
      : view_(std::move(view)), field_(std::move(field)), data_(std::move(data)) {}

  core::Status Render(uint64_t first, uint64_t count, std::string& out,
                      core::ReadState* state) const override {
    const uint64_t piece = data_->piece_cells;
    const PieceStarts& starts = *data_->starts;
    if (first % piece != 0 || first / piece >= starts.known()) {
      return Error::InvalidArgument(
          fmt::format("{}.offsets: cell {} is not the start of a piece", field_, first));
    }
    uint64_t base = starts.Start(first / piece) - starts.Start(0);
    ASSIGN_OR_RETURN(core::Column c, view_->ReadFieldRange(field_, first, count, state));
    TRY(CheckVarColumn(c, first, count));
    for (uint64_t k = 0; k < count; ++k) AppendU64(out, base + c.offsets[k]);
    return core::Ok();
  }

  void Release(uint64_t from, uint64_t to) const override {
    view_->ReleaseTiles({field_}, from, to);
  }

  core::Status Measure(uint64_t first, uint64_t count, uint64_t piece, std::vector<uint64_t>& sizes,
                       core::ReadState*) const override {
    for (uint64_t at = 0; at < count; at += piece) {
      sizes.push_back(8 * (std::min(count, at + piece) - at));
    }
    return core::Ok();
  }

 private:
  std::shared_ptr<const core::ArrayView> view_;
  std::string field_;
  std::shared_ptr<const StreamLayout> data_;
};

}  // namespace

std::shared_ptr<const CellRenderer> MakeCsvRenderer(
    std::shared_ptr<const core::ArrayView> view, std::vector<std::string> fields,
    std::shared_ptr<const std::vector<core::Enumeration>> enums) {
  return std::make_shared<CsvRenderer>(std::move(view), std::move(fields), std::move(enums));
}

std::string CsvHeaderLine(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t k = 0; k < fields.size(); ++k) {
    if (k > 0) out += ',';
    AppendCsvField(out, fields[k]);
  }
  out += '\n';
  return out;
}

std::shared_ptr<const CellRenderer> MakeVarDataRenderer(std::shared_ptr<const core::ArrayView> view,
                                                        std::string field) {
  return std::make_shared<VarDataRenderer>(std::move(view), std::move(field));
}

std::shared_ptr<const CellRenderer> MakeVarOffsetsRenderer(
    std::shared_ptr<const core::ArrayView> view, std::string field,
    std::shared_ptr<const StreamLayout> data_layout) {
  return std::make_shared<VarOffsetsRenderer>(std::move(view), std::move(field),
                                              std::move(data_layout));
}

StreamLayout VarOffsetsLayout(const StreamLayout& data) {
  StreamLayout l;
  l.cells = data.cells;
  l.piece_cells = data.piece_cells;
  l.batch_cells = data.batch_cells;
  std::vector<uint64_t> starts;
  starts.reserve(data.pieces() + 1);
  for (uint64_t j = 0; j < data.pieces(); ++j) starts.push_back(8 * j * data.piece_cells);
  starts.push_back(8 * data.cells);
  l.body_end = starts.back();
  l.starts = std::make_shared<PieceStarts>(std::move(starts));
  AppendU64(l.trailer, data.body_end - data.header.size());
  return l;
}

}  // namespace tiledbfs::fusefs
