// data.parquet of a view, served (fusefs/render/parquet.h plans and
// encodes it). A read renders only what it covers: a page header, the
// rows of a fixed-size column's values it spans (so a reader of one
// column decodes only that field's tiles), a whole page of another
// column, or the footer.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/array/array_view.h"
#include "fusefs/model/tree.h"
#include "fusefs/render/parquet.h"

namespace tiledbfs::fusefs {

// A view's planned file, shared by its opens: the footer is worked out
// once (its first dimension's statistics read from the view's cells).
class ParquetSource {
 public:
  // `first_dim`: the footer's statistics, if known (else read from the
  // cells when the footer is first read).
  ParquetSource(std::shared_ptr<const core::ArrayView> view, ParquetPlan plan,
                std::optional<std::vector<ParquetPlan::MinMax>> first_dim = std::nullopt)
      : view_(std::move(view)), plan_(std::move(plan)), first_dim_(std::move(first_dim)) {}
  const ParquetPlan& plan() const { return plan_; }
  const core::ArrayView& view() const { return *view_; }
  std::shared_ptr<const core::ArrayView> view_ptr() const { return view_; }
  // The footer (ParquetPlan::Footer), with the statistics read once.
  Result<std::shared_ptr<const std::string>> Footer() const;
  // What the source costs to keep (for the cache budget).
  uint64_t footprint() const;

 private:
  std::shared_ptr<const core::ArrayView> view_;
  ParquetPlan plan_;
  std::optional<std::vector<ParquetPlan::MinMax>> first_dim_;
  mutable std::mutex mu_;
  mutable std::shared_ptr<const std::string> footer_;
};

// The open file. Errors of a read: those of the view's reads, kCorrupt
// where cells do not fit the plan.
std::unique_ptr<OpenFile> MakeParquetFile(std::shared_ptr<const ParquetSource> source);

}  // namespace tiledbfs::fusefs
