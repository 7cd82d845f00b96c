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

using Box = std::vector<std::pair<I128, I128>>;  // integer dimensions only (dense)

bool SameCell(const Column& a, uint64_t i, const Column& b, uint64_t j) {
  const bool va = a.valid(i), vb = b.valid(j);
  if (va != vb) return false;
  if (!va) return true;
  Bytes x = a.cell(i), y = b.cell(j);
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size()) == 0);
}

bool InBox(const Box& b, const std::vector<I128>& c) {
  if (b.empty()) return false;
  for (size_t d = 0; d < b.size(); ++d) {
    if (c[d] < b[d].first || c[d] > b[d].second) return false;
  }
  return true;
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
