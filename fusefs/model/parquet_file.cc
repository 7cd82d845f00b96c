#include "fusefs/model/parquet_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>

#include "core/read/tile_cache.h"
#include "fusefs/model/read_target.h"

namespace tiledbfs::fusefs {

using core::Error;

Result<std::shared_ptr<const std::string>> ParquetSource::Footer() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (footer_) return footer_;
  std::vector<ParquetPlan::MinMax> stats = first_dim_.value_or(std::vector<ParquetPlan::MinMax>{});
  if (plan_.first_dim_stats() && !first_dim_) {
    const std::string& name = plan_.columns()[0].field.name;
    core::ReadState state;
    for (const ParquetPlan::RowGroup& g : plan_.row_groups()) {
      ParquetPlan::MinMax m;
      ASSIGN_OR_RETURN(core::Column first, view_->ReadFieldRange(name, g.first_row, 1, &state));
      ASSIGN_OR_RETURN(core::Column last,
                       view_->ReadFieldRange(name, g.first_row + g.rows - 1, 1, &state));
      if (first.cell_count != 1 || last.cell_count != 1) {
        return Error::Corrupt(fmt::format("data.parquet: {} at rows {} and {}: no cell", name,
                                          g.first_row, g.first_row + g.rows - 1));
      }
      m.min = plan_.StatValue(first, false);
      m.max = plan_.StatValue(last, true);
      stats.push_back(std::move(m));
    }
  }
  ASSIGN_OR_RETURN(std::string footer, plan_.Footer(stats));
  footer_ = std::make_shared<const std::string>(std::move(footer));
  return footer_;
}

uint64_t ParquetSource::footprint() const {
  uint64_t counts = 0;  // what the plan keeps of the layout pass's counts
  for (const ParquetPlan::Column& c : plan_.columns()) {
    const ParquetCounts& n = c.field.counts;
    counts += (n.valid.size() + n.bytes.size() + n.empty.size() + n.ends.size()) * 8;
  }
  return sizeof(*this) + plan_.pages().size() * sizeof(ParquetPlan::Page) +
         plan_.row_groups().size() * sizeof(ParquetPlan::RowGroup) + counts;
}

namespace {

class ParquetFile final : public OpenFile {
 public:
  explicit ParquetFile(std::shared_ptr<const ParquetSource> source) : source_(std::move(source)) {
    state_.parts = true;  // a seek decodes only the chunks it needs
  }

  uint64_t size() const override { return source_->plan().size(); }
  bool ReadsAtRandom() const override { return true; }

  Result<size_t> Read(uint64_t offset, std::span<uint8_t> out) override {
    return ReadTo(offset, out.size(), out.data(), nullptr);
  }
  // Values stored as Parquet writes them go out as spans of their decoded
  // tiles, without a copy.
  bool ReadsPieces() const override { return true; }
  Result<size_t> ReadPieces(uint64_t offset, size_t n, core::Pieces* out) override {
    return ReadTo(offset, n, nullptr, out);
  }

 private:
  Result<size_t> ReadTo(uint64_t offset, size_t n, uint8_t* buf, core::Pieces* pieces) {
    const ParquetPlan& plan = source_->plan();
    const uint64_t end = std::min<uint64_t>(plan.size(), offset + n);
    if (offset >= end) return size_t{0};
    std::lock_guard<std::mutex> lock(mu_);
    const ReadTarget t{buf, pieces, offset, end};
    for (uint64_t at = offset; at < end;) {
      ASSIGN_OR_RETURN(const uint64_t next, Next(plan, t, at));
      if (next <= at) return Error::Corrupt(fmt::format("data.parquet: no bytes at {}", at));
      at = next;
    }
    return static_cast<size_t>(end - offset);
  }

  // Gives what starts at file byte `at` (the magic, a page header or body,
  // the footer); returns the byte past what it gave.
  Result<uint64_t> Next(const ParquetPlan& plan, const ReadTarget& t, uint64_t at) {
    if (at < 4) return t.Put("PAR1", 0, nullptr);
    if (at >= plan.footer_start()) {
      ASSIGN_OR_RETURN(std::shared_ptr<const std::string> footer, source_->Footer());
      return t.Put(*footer, plan.footer_start(), footer);
    }
    const size_t p = plan.PageAt(at);
    if (p >= plan.pages().size()) return Error::Corrupt("data.parquet: a byte in no page");
    const ParquetPlan::Page& page = plan.pages()[p];
    if (at < page.body) return t.PutCopy(plan.PageHeader(p), page.start);
    const ParquetField& f = plan.columns()[page.column].field;
    const uint32_t width = page.dictionary ? 0 : plan.DirectWidth(page.column);
    if (width != 0) {
      // Values only: the rows this read spans, converted.
      const uint64_t from = (at - page.body) / width;
      const uint64_t to = (std::min(t.end, page.end) - page.body + width - 1) / width;
      const uint64_t first = page.body + from * width;
      if (core::DatatypeSize(f.type) == width) {
        // Stored as Parquet writes them: the tiles' own bytes.
        core::Pieces got;
        ASSIGN_OR_RETURN(core::Column cells,
                         source_->view().ReadFieldRange(f.name, page.first_row + from, to - from,
                                                        &state_, nullptr, &got));
        const uint64_t bytes = (to - from) * width;
        if (cells.cell_count != to - from || (got.bytes != bytes && cells.data.size() != bytes)) {
          return Error::Corrupt(fmt::format("data.parquet: {} cells of {} read at row {}",
                                            cells.cell_count, f.name, page.first_row + from));
        }
        // Coordinates computed, not gathered, come in the column itself.
        if (got.bytes != bytes) {
          return t.PutCopy({reinterpret_cast<const char*>(cells.data.data()), bytes}, first);
        }
        // Each span is held by one of got.keep: all of them go with it.
        if (t.pieces != nullptr) {
          t.pieces->keep.insert(t.pieces->keep.end(), got.keep.begin(), got.keep.end());
        }
        uint64_t pos = first, given = 0;
        for (const core::Bytes& span : got.spans) {
          given = std::max(given, t.Put({reinterpret_cast<const char*>(span.data()), span.size()},
                                        pos, nullptr));
          pos += span.size();
        }
        return given;
      }
      ASSIGN_OR_RETURN(core::Column cells, source_->view().ReadFieldRange(
                                               f.name, page.first_row + from, to - from, &state_));
      if (cells.cell_count != to - from) {
        return Error::Corrupt(fmt::format("data.parquet: {} cells of {} read at row {}",
                                          cells.cell_count, f.name, page.first_row + from));
      }
      scratch_.clear();
      ParquetPlan::AppendFixedValues(plan.columns()[page.column], cells, scratch_);
      return t.PutCopy(scratch_, first);
    }
    ASSIGN_OR_RETURN(std::shared_ptr<const std::string> body, Body(p));
    return t.Put(*body, page.body, body);
  }

  // Page p's body, rendered whole; the last two rendered are kept (a
  // reader going forward crosses each page in several reads). Shared: a
  // reply's pieces may still hold one that this file renders over.
  Result<std::shared_ptr<const std::string>> Body(size_t p) {
    for (Rendered& r : rendered_) {
      if (r.page == p && r.body) return r.body;
    }
    Rendered& r = rendered_[next_];
    next_ = (next_ + 1) % rendered_.size();
    r.page = SIZE_MAX;
    r.body.reset();
    const ParquetPlan& plan = source_->plan();
    const ParquetPlan::Page& page = plan.pages()[p];
    core::Column cells;
    if (!page.dictionary) {
      ASSIGN_OR_RETURN(cells, source_->view().ReadFieldRange(plan.columns()[page.column].field.name,
                                                             page.first_row, page.rows, &state_));
    }
    auto body = std::make_shared<std::string>();
    TRY(plan.AppendPageBody(p, cells, *body));
    r.body = std::move(body);
    r.page = p;
    return r.body;
  }

  struct Rendered {
    size_t page = SIZE_MAX;
    std::shared_ptr<const std::string> body;
  };
  std::shared_ptr<const ParquetSource> source_;
  std::mutex mu_;  // reads of one file are serialised
  core::ReadState state_;
  std::string scratch_;
  std::array<Rendered, 2> rendered_;
  size_t next_ = 0;
};

}  // namespace

std::unique_ptr<OpenFile> MakeParquetFile(std::shared_ptr<const ParquetSource> source) {
  return std::make_unique<ParquetFile>(std::move(source));
}

}  // namespace tiledbfs::fusefs
