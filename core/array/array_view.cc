#include "core/array/array_view.h"

#include <fmt/format.h>

#include "core/read/coords.h"

namespace tiledbfs::core {

Result<const CellIndex*> ArrayView::Index() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!index_) {
    Result<CellIndex> built = schema_->dense() ? BuildDenseIndex(in_) : BuildSparseIndex(in_);
    if (!built.ok()) return built.error();
    index_ = std::move(built).value();
  }
  return &*index_;
}

Result<uint64_t> ArrayView::CellCount() const {
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  return index->cell_count;
}

Result<std::vector<uint64_t>> ArrayView::Shape() const {
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  if (schema_->dense()) {
    if (index->cell_count == 0) return std::vector<uint64_t>(schema_->dimensions.size(), 0);
    return index->shape;
  }
  return std::vector<uint64_t>{index->cell_count};
}

Result<std::vector<Range>> ArrayView::NonEmptyDomain() const {
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  if (index->cell_count == 0) return std::vector<Range>{};
  if (schema_->dense()) return index->box;
  std::vector<Range> out(schema_->dimensions.size());
  for (size_t d = 0; d < out.size(); ++d) {
    const Column& c = index->dims[d];
    Bytes lo = c.cell(0), hi = c.cell(0);
    for (uint64_t i = 1; i < c.cell_count; ++i) {
      Bytes v = c.cell(i);
      if (CompareValues(c.type, v, lo) < 0) lo = v;
      if (CompareValues(c.type, v, hi) > 0) hi = v;
    }
    out[d].lo.assign(lo.begin(), lo.end());
    out[d].hi.assign(hi.begin(), hi.end());
  }
  return out;
}

Result<Column> ArrayView::ReadField(const std::string& name) const {
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  int d = schema_->DimensionIndex(name);
  if (d >= 0 && !schema_->dense()) return index->dims[d];
  return ReadFieldRange(name, 0, index->cell_count);
}

Result<Column> ArrayView::ReadFieldRange(const std::string& name, uint64_t first,
                                         uint64_t count) const {
  ASSIGN_OR_RETURN(const CellIndex* index, Index());
  if (first > index->cell_count || count > index->cell_count - first) {
    return Error::InvalidArgument(
        fmt::format("{}: cells [{}, +{}) of {}", name, first, count, index->cell_count));
  }
  int d = schema_->DimensionIndex(name);
  if (d >= 0) {
    if (schema_->dense()) return DenseDimensionColumn(*schema_, *index, d, first, count);
    const Column& all = index->dims[d];
    Column c;
    c.name = all.name;
    c.type = all.type;
    c.cell_val_num = all.cell_val_num;
    c.cell_count = count;
    if (all.var()) {
      uint64_t base = all.offsets[first];
      for (uint64_t i = first; i <= first + count; ++i) c.offsets.push_back(all.offsets[i] - base);
      c.data.assign(all.data.begin() + static_cast<ptrdiff_t>(base),
                    all.data.begin() + static_cast<ptrdiff_t>(all.offsets[first + count]));
    } else {
      uint64_t cs = all.cell_size();
      c.data.assign(all.data.begin() + static_cast<ptrdiff_t>(first * cs),
                    all.data.begin() + static_cast<ptrdiff_t>((first + count) * cs));
    }
    return c;
  }
  return GatherAttribute(in_, *index, name, first, count, *cache_);
}

}  // namespace tiledbfs::core
