#include "core/array/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>

#include "core/read/coords.h"
#include "core/util/stop.h"

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

bool SameCell(const Column& a, uint64_t i, const Column& b, uint64_t j) {
  const bool va = a.valid(i), vb = b.valid(j);
  if (va != vb) return false;
  if (!va) return true;
  Bytes x = a.cell(i), y = b.cell(j);
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size()) == 0);
}

Box BoxOf(const ArraySchema& s, const std::vector<Range>& r) {
  Box b;
  for (size_t d = 0; d < r.size() && d < s.dimensions.size(); ++d) {
    b.emplace_back(ToInt128(s.dimensions[d].type, r[d].lo),
                   ToInt128(s.dimensions[d].type, r[d].hi));
  }
  return b;
}

bool InBox(const Box& b, const std::vector<I128>& c) {
  if (b.empty()) return false;
  for (size_t d = 0; d < b.size(); ++d) {
    if (c[d] < b[d].first || c[d] > b[d].second) return false;
  }
  return true;
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

// <0, 0, >0: cell i of `a` against cell j of `b` in row-major order of
// their first `dims` columns (a tie of values with other bytes, -0.0 and
// 0.0, by bytes).
int CompareCoords(const ArraySchema& s, const std::vector<Column>& a, uint64_t i,
                  const std::vector<Column>& b, uint64_t j, const std::vector<size_t>& ca,
                  const std::vector<size_t>& cb) {
  for (size_t d = 0; d < s.dimensions.size(); ++d) {
    const int c = CompareValues(s.dimensions[d].type, a[ca[d]].cell(i), b[cb[d]].cell(j));
    if (c != 0) return c;
  }
  for (size_t d = 0; d < s.dimensions.size(); ++d) {
    Bytes x = a[ca[d]].cell(i), y = b[cb[d]].cell(j);
    const int c = x.size() == y.size() ? (x.empty() ? 0 : std::memcmp(x.data(), y.data(), x.size()))
                                       : (x.size() < y.size() ? -1 : 1);
    if (c != 0) return c;
  }
  return 0;
}

// The coordinates of cell i of a cursor (integer dimensions: columns `at`).
template <class C>
void IntCoords(const C& c, const std::vector<size_t>& at, size_t dims, uint64_t i,
               std::vector<I128>& out) {
  out.resize(dims);
  for (size_t d = 0; d < out.size(); ++d) {
    const Column& col = c.cols()[at[d]];
    out[d] = ToInt128(col.type, col.cell(c.at(i)));
  }
}

// The coordinates of cell i of `cols` (columns `at` of them), each as its
// length then its bytes.
void CoordsKey(const std::vector<Column>& cols, const std::vector<size_t>& at, size_t dims,
               uint64_t i, std::string& key) {
  key.clear();
  for (size_t d = 0; d < dims; ++d) {
    Bytes v = cols[at[d]].cell(i);
    const uint64_t n = v.size();
    key.append(reinterpret_cast<const char*>(&n), sizeof(n));
    key.append(reinterpret_cast<const char*>(v.data()), v.size());
  }
}

// Two CoordsKey keys in row-major order of their values.
int CompareKeys(const ArraySchema& s, const std::string& x, const std::string& y) {
  size_t p = 0, q = 0;
  for (const Dimension& dim : s.dimensions) {
    uint64_t n, m;
    std::memcpy(&n, x.data() + p, sizeof(n));
    std::memcpy(&m, y.data() + q, sizeof(m));
    p += sizeof(n);
    q += sizeof(m);
    const int c = CompareValues(dim.type, Bytes(reinterpret_cast<const uint8_t*>(x.data() + p), n),
                                Bytes(reinterpret_cast<const uint8_t*>(y.data() + q), m));
    if (c != 0) return c;
    p += n;
    q += m;
  }
  return 0;
}

}  // namespace

Result<std::shared_ptr<const DiffPlan>> DiffPlan::Make(std::shared_ptr<const ArrayView> from,
                                                       std::shared_ptr<const ArrayView> to,
                                                       int64_t from_instant, int64_t to_instant) {
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
  for (const Subarray& box : p->boxes_) {
    Slices sl;
    sl.view[0] = from->WithSubarray(box)->WithIndexWindow(window, p.get());
    sl.view[1] = to->WithSubarray(box)->WithIndexWindow(window, p.get());
    for (int side = 0; side < 2; ++side) {
      ASSIGN_OR_RETURN(sl.cells[side], sl.view[side]->CellCount());
      p->compared_cells_ += sl.cells[side];
    }
    p->slices_.push_back(std::move(sl));
  }
  p->from_ = std::move(from);
  p->to_ = std::move(to);
  return std::shared_ptr<const DiffPlan>(std::move(p));
}

namespace {

// A slice's fields read forward a chunk at a time.
class Cursor {
 public:
  Cursor(std::shared_ptr<const ArrayView> view, const std::vector<std::string>* names, uint64_t n,
         uint64_t chunk, uint64_t* loads)
      : view_(std::move(view)), names_(names), n_(n), chunk_(chunk), loads_(loads) {}
  bool Holds(uint64_t i) const { return loaded_ && i >= first_ && i < first_ + count_; }
  // The cells from i on in the chunk read (0 unless it holds i).
  uint64_t HeldFrom(uint64_t i) const { return Holds(i) ? first_ + count_ - i : 0; }
  // Makes cell i (i < n) readable through cols() at at(i).
  Status Load(uint64_t i) {
    if (Holds(i)) return Ok();
    TRY(CheckStop("a diff"));
    first_ = i;
    count_ = std::min(chunk_, n_ - i);
    cols_.clear();
    loaded_ = false;
    for (const std::string& f : *names_) {
      ASSIGN_OR_RETURN(Column c, view_->ReadFieldRange(f, first_, count_, &state_));
      cols_.push_back(std::move(c));
    }
    loaded_ = true;
    generation_ = ++*loads_;
    return Ok();
  }
  // Done with the slice (its box read to the end): its chunk, the tiles and
  // windows its reads held go, and a Load reads them again.
  void Drop() {
    cols_.clear();
    cols_.shrink_to_fit();
    state_ = ReadState{};
    loaded_ = false;
    view_->LetGoOfWindows();
  }
  const std::vector<Column>& cols() const { return cols_; }
  uint64_t at(uint64_t i) const { return i - first_; }
  uint64_t generation() const { return generation_; }

 private:
  std::shared_ptr<const ArrayView> view_;
  const std::vector<std::string>* names_;
  uint64_t n_, chunk_;
  uint64_t* loads_;  // the stream's count of loads: generations are unique in it
  ReadState state_;
  bool loaded_ = false;
  uint64_t first_ = 0, count_ = 0, generation_ = 0;
  std::vector<Column> cols_;
};

constexpr uint64_t kNone = UINT64_MAX;

}  // namespace

struct DiffStream::Box {
  struct Row {
    DiffKind kind;
    uint64_t from, to;  // kNone: no cell on that side
  };
  std::unique_ptr<Cursor> cur[2];
  uint64_t n[2] = {0, 0};
  uint64_t i = 0, j = 0;    // where the next step starts
  uint64_t i0 = 0, j0 = 0;  // where the pending rows' step started
  std::vector<Row> rows;    // pending rows (several: a group of duplicates)
  size_t taken = 0;         // rows.size(): none pending, the next step is due
  bool done = false;
  bool dropped = false;  // done, and its cursors' memory let go (Next)
  // The pending rows' coordinates: as integers (dense, integer dimensions),
  // else as a CoordsKey.
  std::vector<I128> coords;
  std::string key;
  std::vector<I128> x1, x2;  // scratch
  std::string key1;
  bool pending() const { return !done && taken < rows.size(); }
};

DiffStream::DiffStream(std::shared_ptr<const DiffPlan> plan, bool all_fields, uint64_t chunk_cells)
    : plan_(std::move(plan)) {
  const uint64_t chunk = std::max<uint64_t>(chunk_cells, 1);
  const auto* names0 = all_fields ? &plan_->fields_[0] : &plan_->compared_[0];
  const auto* names1 = all_fields ? &plan_->fields_[1] : &plan_->compared_[1];
  for (const auto& sl : plan_->slices_) {
    auto b = std::make_unique<Box>();
    b->cur[0] = std::make_unique<Cursor>(sl.view[0], names0, sl.cells[0], chunk, &loads_);
    b->cur[1] = std::make_unique<Cursor>(sl.view[1], names1, sl.cells[1], chunk, &loads_);
    b->n[0] = sl.cells[0];
    b->n[1] = sl.cells[1];
    boxes_.push_back(std::move(b));
  }
  // Where each compared field is among the loaded ones.
  for (int side = 0; side < 2; ++side) {
    const auto& loaded = all_fields ? plan_->fields_[side] : plan_->compared_[side];
    for (const std::string& f : plan_->compared_[side]) {
      compared_at_[side].push_back(
          static_cast<size_t>(std::find(loaded.begin(), loaded.end(), f) - loaded.begin()));
    }
  }
}

DiffStream::~DiffStream() = default;

Status DiffStream::Seek() { return Seek(DiffPosition{}); }

Status DiffStream::Seek(const DiffPosition& position) {
  const size_t k = boxes_.size();
  if (!position.at.empty() && position.at.size() != 3 * k) {
    return Error::InvalidArgument("a diff position of another plan");
  }
  current_ = SIZE_MAX;
  run_ = 0;
  for (size_t b = 0; b < k; ++b) {
    Box& box = *boxes_[b];
    box.i = position.at.empty() ? 0 : position.at[3 * b];
    box.j = position.at.empty() ? 0 : position.at[3 * b + 1];
    const uint64_t taken = position.at.empty() ? 0 : position.at[3 * b + 2];
    box.done = false;
    box.dropped = false;
    TRY(Fill(b, true));
    if (box.done) continue;
    if (taken > box.rows.size()) return Error::InvalidArgument("a diff position past its rows");
    box.taken = taken;
  }
  return Ok();
}

DiffPosition DiffStream::Position() const {
  DiffPosition p;
  for (size_t b = 0; b < boxes_.size(); ++b) {
    const Box& box = *boxes_[b];
    if (b == current_ && run_ > 0) {
      p.at.insert(p.at.end(), run_at_.begin(), run_at_.end());
    } else if (box.done) {
      p.at.insert(p.at.end(), {box.n[0], box.n[1], 0});
    } else if (!box.pending()) {
      p.at.insert(p.at.end(), {box.i, box.j, 0});
    } else {
      p.at.insert(p.at.end(), {box.i0, box.j0, box.taken});
    }
  }
  return p;
}

Result<uint64_t> DiffStream::Next(const std::array<uint64_t, kDiffKinds>& max) {
  // Boxes whose rows were all taken step on, reading as they need. A box
  // done since the last run (which the caller is done with) lets its
  // slices' memory go, or a diff would keep every finished box's.
  for (size_t b = 0; b < boxes_.size(); ++b) {
    Box& box = *boxes_[b];
    if (box.done && !box.dropped) {
      box.cur[0]->Drop();
      box.cur[1]->Drop();
      box.dropped = true;
    }
    if (!box.done && !box.pending()) TRY(Fill(b, true));
  }
  current_ = SIZE_MAX;
  run_ = 0;
  for (size_t b = 0; b < boxes_.size(); ++b) {
    if (!boxes_[b]->pending()) continue;
    if (current_ == SIZE_MAX || Before(b, current_)) current_ = b;
  }
  if (current_ == SIZE_MAX) return uint64_t{0};
  const size_t k = current_;
  // The box whose rows come next after this one's (it stays put meanwhile).
  size_t second = SIZE_MAX;
  for (size_t b = 0; b < boxes_.size(); ++b) {
    if (b == k || !boxes_[b]->pending()) continue;
    if (second == SIZE_MAX || Before(b, second)) second = b;
  }
  Box& box = *boxes_[k];
  run_at_ = {box.i0, box.j0, box.taken};
  const Box::Row first = box.rows[box.taken];
  // Its cells readable (a group of duplicates may have read past them).
  if (first.from != kNone) TRY(box.cur[0]->Load(first.from));
  if (first.to != kNone) TRY(box.cur[1]->Load(first.to));
  run_kind_ = first.kind;
  run_from_ = first.from;
  run_to_ = first.to;
  const uint64_t limit = std::max<uint64_t>(max[static_cast<int>(run_kind_)], 1);
  // The run goes on while this box's next row continues it: same kind,
  // the next cells of each side, in the chunks read already (the step
  // that finds it reads nothing), and still before the other boxes' rows.
  // One side done, in the only box left and the first one: every cell
  // left on the other side is a row of the run, no step needed.
  const bool alone = second == SIZE_MAX && k == 0 && !plan_->dense_;
  while (true) {
    ++box.taken;
    ++run_;
    if (run_ == limit) break;
    if (alone && !box.pending() && run_kind_ != DiffKind::kChanged) {
      const int side = run_kind_ == DiffKind::kAdded ? 1 : 0;
      uint64_t& at = side == 1 ? box.j : box.i;
      const uint64_t other = side == 1 ? box.i : box.j;
      if (other >= box.n[1 - side] && at == (side == 1 ? run_to_ : run_from_) + run_) {
        const uint64_t n = std::min(limit - run_, box.cur[side]->HeldFrom(at));
        at += n;
        run_ += n;
        break;
      }
    }
    if (!box.pending()) {
      TRY(Fill(k, false));
      if (!box.pending()) break;
    }
    const Box::Row& next = box.rows[box.taken];
    if (next.kind != run_kind_) break;
    if (run_from_ != kNone && (next.from != run_from_ + run_ || !box.cur[0]->Holds(next.from))) {
      break;
    }
    if (run_to_ != kNone && (next.to != run_to_ + run_ || !box.cur[1]->Holds(next.to))) break;
    if (second != SIZE_MAX && !Before(k, second)) break;
  }
  return run_;
}

bool DiffStream::Before(size_t a, size_t b) const {
  const Box& x = *boxes_[a];
  const Box& y = *boxes_[b];
  if (plan_->dense_ || plan_->int_dims_) return x.coords < y.coords;
  return CompareKeys(plan_->to_schema(), x.key, y.key) < 0;
}

const Column& DiffStream::from_column(size_t f) const {
  return boxes_[current_]->cur[0]->cols()[f];
}
uint64_t DiffStream::from_index() const { return boxes_[current_]->cur[0]->at(run_from_); }
uint64_t DiffStream::from_chunk() const { return boxes_[current_]->cur[0]->generation(); }
const Column& DiffStream::to_column(size_t f) const { return boxes_[current_]->cur[1]->cols()[f]; }
uint64_t DiffStream::to_index() const { return boxes_[current_]->cur[1]->at(run_to_); }
uint64_t DiffStream::to_chunk() const { return boxes_[current_]->cur[1]->generation(); }

// Steps box `k` forward until it has pending rows (or is done), from (i, j).
// Unless `may_read`, stops before a step that would read a new chunk (the
// box then has no pending rows and is not done).
Status DiffStream::Fill(size_t k, bool may_read) {
  Box& box = *boxes_[k];
  const DiffPlan& plan = *plan_;
  const ArraySchema& s2 = plan.to_schema();
  const size_t dims = s2.dimensions.size();
  const size_t off = plan.dense_ ? 0 : dims;  // where the attributes start among the compared
  const auto& at1 = compared_at_[0];
  const auto& at2 = compared_at_[1];
  Cursor& c1 = *box.cur[0];
  Cursor& c2 = *box.cur[1];
  const uint64_t n1 = box.n[0], n2 = box.n[1];
  box.rows.clear();
  box.taken = 0;
  auto same_values = [&](uint64_t i, uint64_t j) {
    for (size_t a = 0; a < plan.common_.size(); ++a) {
      if (!SameCell(c1.cols()[at1[off + a]], c1.at(i), c2.cols()[at2[off + a]], c2.at(j))) {
        return false;
      }
    }
    return true;
  };
  const bool ints = plan.int_dims_;
  // A cell that an earlier box holds was classified with it.
  auto earlier = [&](const Cursor& c, const std::vector<size_t>& at, uint64_t x,
                     const std::vector<I128>& ints_of_x) {
    for (size_t e = 0; e < k; ++e) {
      if (ints ? InBox(plan.int_boxes_[e], ints_of_x) : CellIn(s2, plan.boxes_[e], [&](size_t d) {
            return c.cols()[at[d]].cell(c.at(x));
          })) {
        return true;
      }
    }
    return false;
  };
  // Whether cell x of a side can be read in this step (read now if need be
  // and allowed).
  auto readable = [&](Cursor& c, uint64_t x) -> Result<bool> {
    if (c.Holds(x)) return true;
    if (!may_read) return false;
    TRY(c.Load(x));
    return true;
  };
  // Back to where the step started, with nothing pending.
  auto stall = [&]() {
    box.i = box.i0;
    box.j = box.j0;
    box.rows.clear();
    return Ok();
  };
  uint64_t steps = 0;
  while (box.rows.empty()) {
    if ((++steps & 0xFFFF) == 0) TRY(CheckStop("a diff"));
    box.i0 = box.i;
    box.j0 = box.j;
    if (plan.dense_) {
      // Both slices hold every cell of the box, row-major.
      if (box.i >= n1 || box.i >= n2) break;
      const auto& b = plan.dense_boxes_[k];
      box.coords.resize(dims);
      uint64_t rest = box.i;
      for (size_t d = dims; d-- > 0;) {
        const uint64_t extent = static_cast<uint64_t>(b[d].second - b[d].first + 1);
        box.coords[d] = b[d].first + static_cast<I128>(rest % extent);
        rest /= extent;
      }
      const bool in1 = InBox(plan.extent_[0], box.coords);
      const bool in2 = InBox(plan.extent_[1], box.coords);
      const uint64_t i = box.i;
      if (in1 && in2) {
        ASSIGN_OR_RETURN(bool r1, readable(c1, i));
        ASSIGN_OR_RETURN(bool r2, readable(c2, i));
        if (!r1 || !r2) return stall();
        if (!same_values(i, i)) box.rows.push_back({DiffKind::kChanged, i, i});
      } else if (in2) {
        box.rows.push_back({DiffKind::kAdded, kNone, i});
      } else if (in1) {
        box.rows.push_back({DiffKind::kRemoved, i, kNone});
      }
      box.j = ++box.i;
      continue;
    }
    const uint64_t i = box.i, j = box.j;
    if (i >= n1 && j >= n2) break;
    if (i < n1) {
      ASSIGN_OR_RETURN(bool r, readable(c1, i));
      if (!r) return stall();
    }
    if (j < n2) {
      ASSIGN_OR_RETURN(bool r, readable(c2, j));
      if (!r) return stall();
    }
    if (ints) {
      if (i < n1) IntCoords(c1, at1, dims, i, box.x1);
      if (j < n2) IntCoords(c2, at2, dims, j, box.x2);
    }
    int cmp;
    if (i >= n1) {
      cmp = 1;
    } else if (j >= n2) {
      cmp = -1;
    } else if (ints) {
      cmp = box.x1 < box.x2 ? -1 : (box.x2 < box.x1 ? 1 : 0);
    } else {
      cmp = CompareCoords(s2, c1.cols(), c1.at(i), c2.cols(), c2.at(j), at1, at2);
    }
    // Sets the pending rows' coordinates to those of cell x of a side.
    auto head = [&](const Cursor& c, const std::vector<size_t>& at, uint64_t x,
                    const std::vector<I128>& ints_of_x) {
      if (ints) {
        box.coords = ints_of_x;
      } else {
        CoordsKey(c.cols(), at, dims, c.at(x), box.key);
      }
    };
    if (cmp < 0) {
      if (!earlier(c1, at1, i, box.x1)) {
        box.rows.push_back({DiffKind::kRemoved, i, kNone});
        head(c1, at1, i, box.x1);
      }
      ++box.i;
      continue;
    }
    if (cmp > 0) {
      if (!earlier(c2, at2, j, box.x2)) {
        box.rows.push_back({DiffKind::kAdded, kNone, j});
        head(c2, at2, j, box.x2);
      }
      ++box.j;
      continue;
    }
    if (!plan.dups_) {
      if (!earlier(c2, at2, j, box.x2) && !same_values(i, j)) {
        box.rows.push_back({DiffKind::kChanged, i, j});
        head(c2, at2, j, box.x2);
      }
      ++box.i, ++box.j;
      continue;
    }
    // Duplicates: the cells at these coordinates on both sides, as
    // multisets of their compared values.
    std::string coords;
    CoordsKey(c2.cols(), at2, dims, c2.at(j), coords);
    const std::vector<I128> int_coords = box.x2;
    const bool skip = earlier(c2, at2, j, box.x2);
    auto value_key = [&](const Cursor& cur, const std::vector<size_t>& at, uint64_t x) {
      std::string vk;
      for (size_t a = 0; a < plan.common_.size(); ++a) {
        const Column& col = cur.cols()[at[off + a]];
        const bool v = col.valid(cur.at(x));
        Bytes bytes = v ? col.cell(cur.at(x)) : Bytes();
        const uint64_t n = bytes.size();
        vk.push_back(v ? '\1' : '\0');
        vk.append(reinterpret_cast<const char*>(&n), sizeof(n));
        vk.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      }
      return vk;
    };
    // A side's cells at these coordinates from x on: false if they cannot
    // all be read in this step.
    using Group = std::vector<std::pair<std::string, uint64_t>>;
    auto group = [&](Cursor& c, const std::vector<size_t>& at, uint64_t& x, uint64_t n,
                     Group& g) -> Result<bool> {
      for (; x < n; ++x) {
        ASSIGN_OR_RETURN(bool r, readable(c, x));
        if (!r) return false;
        CoordsKey(c.cols(), at, dims, c.at(x), box.key1);
        if (box.key1 != coords) break;
        g.emplace_back(value_key(c, at, x), x);
      }
      return true;
    };
    Group g1, g2;
    ASSIGN_OR_RETURN(bool read1, group(c1, at1, box.i, n1, g1));
    if (!read1) return stall();
    ASSIGN_OR_RETURN(bool read2, group(c2, at2, box.j, n2, g2));
    if (!read2) return stall();
    if (skip) continue;
    std::map<std::string, int64_t> left;
    for (const auto& g : g1) ++left[g.first];
    std::map<std::string, int64_t> matched;
    for (const auto& [vk, x] : g2) {
      if (left[vk] > 0) {
        --left[vk];
        ++matched[vk];
      } else {
        box.rows.push_back({DiffKind::kAdded, kNone, x});
      }
    }
    for (const auto& [vk, x] : g1) {
      if (matched[vk] > 0) {
        --matched[vk];
      } else {
        box.rows.push_back({DiffKind::kRemoved, x, kNone});
      }
    }
    box.key = std::move(coords);
    box.coords = int_coords;
  }
  if (box.rows.empty()) box.done = true;
  return Ok();
}

}  // namespace tiledbfs::core
