// DiffPlan (diff.h): the boxes where two views can differ, and both views'
// slices of each, counted once.
#include <fmt/format.h>

#include <algorithm>

#include "core/array/diff.h"
#include "core/read/coords.h"

namespace tiledbfs::core {

using I128 = __int128;

namespace {

// Past this many boxes the change is compared as their bounding box: a
// slice per fragment would read the same tiles many times over.
constexpr size_t kMaxRegions = 16;

using Box = std::vector<std::pair<I128, I128>>;  // integer dimensions only (dense)

std::vector<std::string> FieldsOf(const ArraySchema& s) {
  std::vector<std::string> out;
  for (const auto& d : s.dimensions) out.push_back(d.name);
  for (const auto& a : s.attributes) out.push_back(a.name);
  return out;
}

// Attributes of `to` that `from` has with the same type, cell size and
// nullability: the ones compared, in `to`'s order.
std::vector<std::pair<size_t, size_t>> CommonAttributes(const ArraySchema& from,
                                                        const ArraySchema& to) {
  std::vector<std::pair<size_t, size_t>> out;  // (index in from, index in to)
  for (size_t j = 0; j < to.attributes.size(); ++j) {
    const Attribute& b = to.attributes[j];
    const int i = from.AttributeIndex(b.name);
    if (i < 0) continue;
    const Attribute& a = from.attributes[i];
    if (a.type == b.type && a.cell_val_num == b.cell_val_num && a.nullable == b.nullable) {
      out.emplace_back(static_cast<size_t>(i), j);
    }
  }
  return out;
}

Box BoxOf(const ArraySchema& s, const std::vector<Range>& r) {
  Box b;
  for (size_t d = 0; d < r.size() && d < s.dimensions.size(); ++d) {
    b.emplace_back(ToInt128(s.dimensions[d].type, r[d].lo),
                   ToInt128(s.dimensions[d].type, r[d].hi));
  }
  return b;
}

// The parts of box a outside box b, as disjoint boxes (at most 2 per dimension).
std::vector<Box> Minus(Box a, const Box& b) {
  std::vector<Box> out;
  if (a.empty()) return out;
  if (b.empty()) return {a};
  for (size_t d = 0; d < a.size(); ++d) {
    if (a[d].second < b[d].first || a[d].first > b[d].second) return {std::move(a)};
  }
  for (size_t d = 0; d < a.size(); ++d) {
    if (a[d].first < b[d].first) {
      Box part = a;
      part[d].second = b[d].first - 1;
      out.push_back(std::move(part));
      a[d].first = b[d].first;
    }
    if (a[d].second > b[d].second) {
      Box part = a;
      part[d].first = b[d].second + 1;
      out.push_back(std::move(part));
      a[d].second = b[d].second;
    }
  }
  return out;
}

Subarray SubarrayOf(const ArraySchema& s, const Box& b) {
  Subarray sub(s.dimensions.size());
  for (size_t d = 0; d < b.size(); ++d) {
    const Datatype t = s.dimensions[d].type;
    Range r;
    r.lo.resize(DatatypeSize(t));
    r.hi.resize(DatatypeSize(t));
    FromInt128(t, b[d].first, r.lo.data());
    FromInt128(t, b[d].second, r.hi.data());
    sub[d] = std::move(r);
  }
  return sub;
}

// The smallest range of each dimension holding every one of `subs`.
Subarray Hull(const ArraySchema& s, const std::vector<Subarray>& subs) {
  Subarray out(s.dimensions.size());
  for (const auto& sub : subs) {
    for (size_t d = 0; d < sub.size(); ++d) {
      const Datatype t = s.dimensions[d].type;
      if (!sub[d]) continue;
      if (!out[d]) {
        out[d] = sub[d];
        continue;
      }
      if (CompareValues(t, sub[d]->lo, out[d]->lo) < 0) out[d]->lo = sub[d]->lo;
      if (CompareValues(t, sub[d]->hi, out[d]->hi) > 0) out[d]->hi = sub[d]->hi;
    }
  }
  return out;
}

// The boxes where the two views can differ; nullopt for "anywhere".
// `extents`: dense, each view's non-empty box (DiffPlan::extent_).
Result<std::optional<std::vector<Subarray>>> ChangedBoxes(const ArrayView& from,
                                                          const ArrayView& to, int64_t from_instant,
                                                          int64_t to_instant,
                                                          const Box (&extents)[2]) {
  using Boxes = std::optional<std::vector<Subarray>>;
  const ArraySchema& schema = to.schema();
  const size_t dims = schema.dimensions.size();
  if (from.DeleteMarkers() != to.DeleteMarkers()) return Boxes();
  const uint64_t lo = static_cast<uint64_t>(std::min(from_instant, to_instant));
  const uint64_t hi = static_cast<uint64_t>(std::max(from_instant, to_instant));
  std::map<std::string, std::shared_ptr<FragmentMetadata>> a, b;
  for (const auto& f : from.fragments()) a[f->dir()] = f;
  for (const auto& f : to.fragments()) b[f->dir()] = f;
  std::vector<std::shared_ptr<FragmentMetadata>> changed;
  for (const auto& [dir, f] : a) {
    if (!b.count(dir)) changed.push_back(f);
  }
  for (const auto& [dir, f] : b) {
    if (!a.count(dir)) {
      changed.push_back(f);
    } else if ((f->footer().has_timestamps || f->footer().has_delete_meta) && f->name().t1 <= hi &&
               f->name().t2 > lo) {
      // Both see it, but its cells' own timestamps may fall in between.
      changed.push_back(f);
    }
  }
  std::vector<Subarray> boxes;
  for (const auto& f : changed) {
    const FragmentFooter& ft = f->footer();
    if (f->tile_num() == 0 && f->cell_num() == 0) continue;
    if (ft.null_non_empty_domain || ft.non_empty_domain.size() != dims) return Boxes();
    Subarray sub(dims);
    for (size_t d = 0; d < dims; ++d) sub[d] = ft.non_empty_domain[d];
    boxes.push_back(std::move(sub));
  }
  if (schema.dense()) {
    // Cells of one view's box outside the other's: added or removed.
    const Box& b1 = extents[0];
    const Box& b2 = extents[1];
    for (const Box& part : Minus(b2, b1)) boxes.push_back(SubarrayOf(schema, part));
    for (const Box& part : Minus(b1, b2)) boxes.push_back(SubarrayOf(schema, part));
  }
  if (boxes.size() > kMaxRegions) boxes = {Hull(schema, boxes)};
  return Boxes(std::move(boxes));
}

// The boxes as disjoint integer boxes (dense), merged into their hull past
// kMaxRegions.
std::vector<Box> DisjointBoxes(const ArraySchema& s, const std::vector<Subarray>& boxes) {
  std::vector<Box> out;
  for (const Subarray& sub : boxes) {
    std::vector<Range> r;
    for (const auto& x : sub) r.push_back(*x);
    std::vector<Box> parts = {BoxOf(s, r)};
    for (const Box& earlier : out) {
      std::vector<Box> next;
      for (Box& p : parts) {
        for (Box& q : Minus(std::move(p), earlier)) next.push_back(std::move(q));
      }
      parts = std::move(next);
    }
    for (Box& p : parts) out.push_back(std::move(p));
  }
  if (out.size() > kMaxRegions) {
    Box hull = out[0];
    for (const Box& b : out) {
      for (size_t d = 0; d < hull.size(); ++d) {
        hull[d].first = std::min(hull[d].first, b[d].first);
        hull[d].second = std::max(hull[d].second, b[d].second);
      }
    }
    out = {hull};
  }
  return out;
}

}  // namespace

Result<std::shared_ptr<const DiffPlan>> DiffPlan::Make(std::shared_ptr<const ArrayView> from,
                                                       std::shared_ptr<const ArrayView> to,
                                                       int64_t from_instant, int64_t to_instant,
                                                       std::span<const std::string> counts) {
  const ArraySchema& s1 = from->schema();
  const ArraySchema& s2 = to->schema();
  const size_t dims = s2.dimensions.size();
  if (s1.dimensions.size() != dims) {
    return Error::Unsupported("the two instants' schemas have different dimensions");
  }
  std::shared_ptr<DiffPlan> p(new DiffPlan());
  p->dense_ = s2.dense();
  p->dups_ = !p->dense_ && s2.allows_dups;
  p->common_ = CommonAttributes(s1, s2);
  p->fields_[0] = FieldsOf(s1);
  p->fields_[1] = FieldsOf(s2);
  if (!p->dense_) {
    for (const auto& d : s2.dimensions) {
      p->compared_[0].push_back(d.name);
      p->compared_[1].push_back(d.name);
    }
  }
  for (const auto& [a, b] : p->common_) {
    p->compared_[0].push_back(s1.attributes[a].name);
    p->compared_[1].push_back(s2.attributes[b].name);
  }
  if (p->dense_) {
    ASSIGN_OR_RETURN(std::vector<Range> n1, from->NonEmptyDomain());
    ASSIGN_OR_RETURN(std::vector<Range> n2, to->NonEmptyDomain());
    p->extent_[0] = BoxOf(s1, n1);
    p->extent_[1] = BoxOf(s2, n2);
  }
  ASSIGN_OR_RETURN(auto changed, ChangedBoxes(*from, *to, from_instant, to_instant, p->extent_));
  if (!changed) {
    // Anywhere: the whole views (sparse: no range; dense: both boxes).
    changed.emplace();
    if (!p->dense_) {
      changed->push_back(Subarray(dims));
    } else {
      std::vector<Subarray> both;
      for (const Box& b : p->extent_) {
        if (!b.empty()) both.push_back(SubarrayOf(s2, b));
      }
      if (!both.empty()) changed->push_back(Hull(s2, both));
    }
  }
  p->boxes_ = std::move(*changed);
  p->int_dims_ = !p->dense_;
  for (size_t d = 0; d < dims; ++d) {
    const Datatype t = s2.dimensions[d].type;
    if (t != s1.dimensions[d].type || !(IsInteger(t) || IsDatetime(t) || IsTime(t))) {
      p->int_dims_ = false;
    }
  }
  if (p->int_dims_) {
    constexpr I128 kMin = -(I128(1) << 126), kMax = I128(1) << 126;  // past any 64-bit value
    for (const Subarray& box : p->boxes_) {
      Box b;
      for (size_t d = 0; d < dims; ++d) {
        const Datatype t = s2.dimensions[d].type;
        b.emplace_back(box[d] ? ToInt128(t, box[d]->lo) : kMin,
                       box[d] ? ToInt128(t, box[d]->hi) : kMax);
      }
      p->int_boxes_.push_back(std::move(b));
    }
  }
  if (p->dense_) {
    p->dense_boxes_ = DisjointBoxes(s2, p->boxes_);
    p->boxes_.clear();
    for (const Box& b : p->dense_boxes_) p->boxes_.push_back(SubarrayOf(s2, b));
  }
  // The slices of every box are read at once (a merge across boxes): their
  // sparse index windows share one view's room, not that much each, and
  // one owner in the views' window pool (they must not drop one another's);
  // the stream builds them as it goes, with no thread ahead for each.
  const uint64_t window = std::max<uint64_t>(
      uint64_t{64} << 10, to->index_window_cells() / (2 * std::max<size_t>(p->boxes_.size(), 1)));
  if (counts.size() != 2 * p->boxes_.size()) counts = {};
  for (size_t b = 0; b < p->boxes_.size(); ++b) {
    Slices sl;
    sl.view[0] = from->WithSubarray(p->boxes_[b])->WithIndexWindow(window, p.get());
    sl.view[1] = to->WithSubarray(p->boxes_[b])->WithIndexWindow(window, p.get());
    for (int side = 0; side < 2; ++side) {
      // Counts that do not fit cost only the count.
      if (!counts.empty()) (void)sl.view[side]->RestoreCounts(counts[2 * b + side]).ok();
      ASSIGN_OR_RETURN(sl.cells[side], sl.view[side]->CellCount());
      p->compared_cells_ += sl.cells[side];
    }
    p->slices_.push_back(std::move(sl));
  }
  p->from_ = std::move(from);
  p->to_ = std::move(to);
  return std::shared_ptr<const DiffPlan>(std::move(p));
}

std::vector<std::string> DiffPlan::SaveCounts() const {
  std::vector<std::string> out;
  for (const Slices& sl : slices_) {
    for (const auto& view : sl.view) out.push_back(view->SaveCounts());
  }
  return out;
}

}  // namespace tiledbfs::core
