#include "fusefs/model/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>

#include "core/read/coords.h"
#include "core/util/text.h"
#include "fusefs/model/instant.h"
#include "fusefs/model/streamed_file.h"
#include "fusefs/render/csv.h"

namespace tiledbfs::fusefs {

using core::Error;
using core::Status;
using I128 = __int128;

namespace {

// Past this many boxes the change is compared as their bounding box: a
// slice per fragment would read the same tiles many times over.
constexpr size_t kMaxRegions = 16;

using Box = std::vector<std::pair<I128, I128>>;  // integer dimensions only (dense)

std::vector<std::string> FieldsOf(const core::ArraySchema& s) {
  std::vector<std::string> out;
  for (const auto& d : s.dimensions) out.push_back(d.name);
  for (const auto& a : s.attributes) out.push_back(a.name);
  return out;
}

// Attributes of `to` that `from` has with the same type, cell size and
// nullability: the ones compared, in `to`'s order.
std::vector<std::pair<size_t, size_t>> CommonAttributes(const core::ArraySchema& from,
                                                        const core::ArraySchema& to) {
  std::vector<std::pair<size_t, size_t>> out;  // (index in from, index in to)
  for (size_t j = 0; j < to.attributes.size(); ++j) {
    const core::Attribute& b = to.attributes[j];
    const int i = from.AttributeIndex(b.name);
    if (i < 0) continue;
    const core::Attribute& a = from.attributes[i];
    if (a.type == b.type && a.cell_val_num == b.cell_val_num && a.nullable == b.nullable) {
      out.emplace_back(static_cast<size_t>(i), j);
    }
  }
  return out;
}

bool SameCell(const core::Column& a, uint64_t i, const core::Column& b, uint64_t j) {
  const bool va = a.valid(i), vb = b.valid(j);
  if (va != vb) return false;
  if (!va) return true;
  core::Bytes x = a.cell(i), y = b.cell(j);
  return x.size() == y.size() && (x.empty() || std::memcmp(x.data(), y.data(), x.size()) == 0);
}

Box BoxOf(const core::ArraySchema& s, const std::vector<core::Range>& r) {
  Box b;
  for (size_t d = 0; d < r.size() && d < s.dimensions.size(); ++d) {
    b.emplace_back(core::ToInt128(s.dimensions[d].type, r[d].lo),
                   core::ToInt128(s.dimensions[d].type, r[d].hi));
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

core::Subarray SubarrayOf(const core::ArraySchema& s, const Box& b) {
  core::Subarray sub(s.dimensions.size());
  for (size_t d = 0; d < b.size(); ++d) {
    const core::Datatype t = s.dimensions[d].type;
    core::Range r;
    r.lo.resize(core::DatatypeSize(t));
    r.hi.resize(core::DatatypeSize(t));
    core::FromInt128(t, b[d].first, r.lo.data());
    core::FromInt128(t, b[d].second, r.hi.data());
    sub[d] = std::move(r);
  }
  return sub;
}

// The smallest range of each dimension holding every one of `ranges`.
core::Subarray Hull(const core::ArraySchema& s, const std::vector<core::Subarray>& subs) {
  core::Subarray out(s.dimensions.size());
  for (const auto& sub : subs) {
    for (size_t d = 0; d < sub.size(); ++d) {
      const core::Datatype t = s.dimensions[d].type;
      if (!sub[d]) continue;
      if (!out[d]) {
        out[d] = sub[d];
        continue;
      }
      if (core::CompareValues(t, sub[d]->lo, out[d]->lo) < 0) out[d]->lo = sub[d]->lo;
      if (core::CompareValues(t, sub[d]->hi, out[d]->hi) > 0) out[d]->hi = sub[d]->hi;
    }
  }
  return out;
}

// The boxes where the two views can differ; nullopt for "anywhere".
Result<std::optional<std::vector<core::Subarray>>> ChangedBoxes(const DiffSide& from,
                                                                const DiffSide& to) {
  using Boxes = std::optional<std::vector<core::Subarray>>;
  const core::ArraySchema& schema = to.view->schema();
  const size_t dims = schema.dimensions.size();
  if (from.view->DeleteMarkers() != to.view->DeleteMarkers()) return Boxes();
  const uint64_t lo = static_cast<uint64_t>(std::min(from.instant, to.instant));
  const uint64_t hi = static_cast<uint64_t>(std::max(from.instant, to.instant));
  std::map<std::string, std::shared_ptr<core::FragmentMetadata>> a, b;
  for (const auto& f : from.view->fragments()) a[f->dir()] = f;
  for (const auto& f : to.view->fragments()) b[f->dir()] = f;
  std::vector<std::shared_ptr<core::FragmentMetadata>> changed;
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
  std::vector<core::Subarray> boxes;
  for (const auto& f : changed) {
    const core::FragmentFooter& ft = f->footer();
    if (f->tile_num() == 0 && f->cell_num() == 0) continue;
    if (ft.null_non_empty_domain || ft.non_empty_domain.size() != dims) return Boxes();
    core::Subarray sub(dims);
    for (size_t d = 0; d < dims; ++d) sub[d] = ft.non_empty_domain[d];
    boxes.push_back(std::move(sub));
  }
  if (schema.dense()) {
    // Cells of one view's box outside the other's: added or removed.
    ASSIGN_OR_RETURN(std::vector<core::Range> ned1, from.view->NonEmptyDomain());
    ASSIGN_OR_RETURN(std::vector<core::Range> ned2, to.view->NonEmptyDomain());
    const Box b1 = BoxOf(schema, ned1), b2 = BoxOf(schema, ned2);
    for (const Box& part : Minus(b2, b1)) boxes.push_back(SubarrayOf(schema, part));
    for (const Box& part : Minus(b1, b2)) boxes.push_back(SubarrayOf(schema, part));
  }
  if (boxes.size() > kMaxRegions) boxes = {Hull(schema, boxes)};
  return Boxes(std::move(boxes));
}

// Cells read per field at a time: a diff's memory does not grow with the
// boxes it compares.
constexpr uint64_t kChunkCells = uint64_t{1} << 20;

// Cells [first, first + count) of every field of `names`.
Result<std::vector<core::Column>> ReadRun(const core::ArrayView& view,
                                          const std::vector<std::string>& names, uint64_t first,
                                          uint64_t count, core::ReadState* state) {
  std::vector<core::Column> out;
  for (const std::string& f : names) {
    ASSIGN_OR_RETURN(core::Column c, view.ReadFieldRange(f, first, count, state));
    out.push_back(std::move(c));
  }
  return out;
}

// A view's fields `names` read forward a chunk at a time.
class Cursor {
 public:
  Cursor(std::shared_ptr<const core::ArrayView> view, std::vector<std::string> names, uint64_t n)
      : view_(std::move(view)), names_(std::move(names)), n_(n) {}
  uint64_t size() const { return n_; }
  // Makes cell i (ascending calls; i < size()) readable through cell().
  Status Load(uint64_t i) {
    if (loaded_ && i >= first_ && i < first_ + count_) return core::Ok();
    first_ = i;
    count_ = std::min(kChunkCells, n_ - i);
    ASSIGN_OR_RETURN(cols_, ReadRun(*view_, names_, first_, count_, &state_));
    loaded_ = true;
    return core::Ok();
  }
  const core::Column& col(size_t f) const { return cols_[f]; }
  uint64_t at(uint64_t i) const { return i - first_; }

 private:
  std::shared_ptr<const core::ArrayView> view_;
  std::vector<std::string> names_;
  uint64_t n_;
  core::ReadState state_;
  bool loaded_ = false;
  uint64_t first_ = 0, count_ = 0;
  std::vector<core::Column> cols_;
};

// <0, 0, >0: cell i of `a` against cell j of `b` in row-major order of
// their first `dims` columns (a tie of values with other bytes, -0.0 and
// 0.0, by bytes).
int CompareCoords(const core::ArraySchema& s, const std::vector<const core::Column*>& a, uint64_t i,
                  const std::vector<const core::Column*>& b, uint64_t j) {
  for (size_t d = 0; d < s.dimensions.size(); ++d) {
    const int c = core::CompareValues(s.dimensions[d].type, a[d]->cell(i), b[d]->cell(j));
    if (c != 0) return c;
  }
  for (size_t d = 0; d < s.dimensions.size(); ++d) {
    core::Bytes x = a[d]->cell(i), y = b[d]->cell(j);
    const int c = x.size() == y.size() ? (x.empty() ? 0 : std::memcmp(x.data(), y.data(), x.size()))
                                       : (x.size() < y.size() ? -1 : 1);
    if (c != 0) return c;
  }
  return 0;
}

// A row of an output file: the cell in `from` and in `to` (-1: none) of one
// region; where several regions' rows interleave (sparse), `coords` indexes
// its coordinates (CoordsKey) in a list beside the rows.
struct Row {
  uint32_t region = 0;
  uint32_t coords = 0;
  int64_t from = -1, to = -1;
};

std::string CoordsKey(const std::vector<const core::Column*>& cols, size_t dims, uint64_t i) {
  std::string key;
  for (size_t d = 0; d < dims; ++d) {
    core::Bytes v = cols[d]->cell(i);
    const uint64_t n = v.size();
    key.append(reinterpret_cast<const char*>(&n), sizeof(n));
    key.append(reinterpret_cast<const char*>(v.data()), v.size());
  }
  return key;
}

std::vector<core::Bytes> SplitKey(const std::string& key, size_t dims) {
  std::vector<core::Bytes> out;
  size_t p = 0;
  for (size_t d = 0; d < dims; ++d) {
    uint64_t n;
    std::memcpy(&n, key.data() + p, sizeof(n));
    p += sizeof(n);
    out.emplace_back(reinterpret_cast<const uint8_t*>(key.data() + p), n);
    p += n;
  }
  return out;
}
}  // namespace

std::optional<std::pair<int64_t, int64_t>> ParseDiffName(std::string_view name) {
  const size_t dots = name.find("..");
  if (dots == std::string_view::npos) return std::nullopt;
  std::optional<int64_t> a = ParseInstant(name.substr(0, dots));
  std::optional<int64_t> b = ParseInstant(name.substr(dots + 2));
  if (!a || !b || *a < 0 || *b < 0) return std::nullopt;
  return std::make_pair(*a, *b);
}

Result<DiffFiles> ComputeDiff(const DiffSide& from, const DiffSide& to, std::string_view log) {
  const core::ArraySchema& s1 = from.view->schema();
  const core::ArraySchema& s2 = to.view->schema();
  const size_t dims = s2.dimensions.size();
  if (s1.dimensions.size() != dims) {
    return Error::Unsupported("the two instants' schemas have different dimensions");
  }
  const bool dense = s2.dense();
  const bool dups = !dense && s2.allows_dups;
  const auto common = CommonAttributes(s1, s2);
  const std::vector<std::string> fields1 = FieldsOf(s1), fields2 = FieldsOf(s2);

  Box box1, box2;  // dense: each view's bounding box
  if (dense) {
    ASSIGN_OR_RETURN(std::vector<core::Range> n1, from.view->NonEmptyDomain());
    ASSIGN_OR_RETURN(std::vector<core::Range> n2, to.view->NonEmptyDomain());
    box1 = BoxOf(s1, n1);
    box2 = BoxOf(s2, n2);
  }
  ASSIGN_OR_RETURN(auto changed_boxes, ChangedBoxes(from, to));
  std::vector<core::Subarray> boxes;
  if (!changed_boxes) {
    // Anywhere: the whole views (sparse: no range; dense: both boxes).
    if (!dense) {
      boxes.push_back(core::Subarray(dims));
    } else {
      std::vector<core::Subarray> both;
      for (const Box* b : {&box1, &box2}) {
        if (!b->empty()) both.push_back(SubarrayOf(s2, *b));
      }
      if (!both.empty()) boxes.push_back(Hull(s2, both));
    }
  } else {
    boxes = std::move(*changed_boxes);
  }
  std::vector<Box> dense_boxes;  // dense: the boxes made disjoint
  if (dense) {
    for (const core::Subarray& sub : boxes) {
      std::vector<core::Range> r;
      for (const auto& x : sub) r.push_back(*x);
      std::vector<Box> parts = {BoxOf(s2, r)};
      for (const Box& earlier : dense_boxes) {
        std::vector<Box> next;
        for (Box& p : parts) {
          for (Box& q : Minus(std::move(p), earlier)) next.push_back(std::move(q));
        }
        parts = std::move(next);
      }
      for (Box& p : parts) dense_boxes.push_back(std::move(p));
    }
    if (dense_boxes.size() > kMaxRegions) {
      Box hull = dense_boxes[0];
      for (const Box& b : dense_boxes) {
        for (size_t d = 0; d < dims; ++d) {
          hull[d].first = std::min(hull[d].first, b[d].first);
          hull[d].second = std::max(hull[d].second, b[d].second);
        }
      }
      dense_boxes = {hull};
    }
    boxes.clear();
    for (const Box& b : dense_boxes) boxes.push_back(SubarrayOf(s2, b));
  }
  const bool many = boxes.size() > 1;

  // Classification: one pass over each box of both views, a chunk at a time.
  struct Slices {
    std::shared_ptr<const core::ArrayView> from, to;
  };
  std::vector<Slices> slices;
  std::vector<Row> added, removed, changed;
  std::vector<std::string> keys;  // Row::coords (sparse, several boxes)
  DiffFiles files;
  std::vector<std::string> cmp1, cmp2;  // dimensions (sparse), then the common attributes
  if (!dense) {
    for (const auto& d : s2.dimensions) cmp1.push_back(d.name), cmp2.push_back(d.name);
  }
  for (const auto& [a, b] : common) {
    cmp1.push_back(s1.attributes[a].name);
    cmp2.push_back(s2.attributes[b].name);
  }
  const size_t off = dense ? 0 : dims;  // where the attributes start in cmp1/cmp2
  for (size_t k = 0; k < boxes.size(); ++k) {
    Slices sl{from.view->WithSubarray(boxes[k]), to.view->WithSubarray(boxes[k])};
    ASSIGN_OR_RETURN(uint64_t n1, sl.from->CellCount());
    ASSIGN_OR_RETURN(uint64_t n2, sl.to->CellCount());
    files.compared_cells += n1 + n2;
    Cursor c1(sl.from, cmp1, n1), c2(sl.to, cmp2, n2);
    const uint32_t region = static_cast<uint32_t>(k);
    auto same_values = [&](uint64_t i, uint64_t j) {
      for (size_t a = 0; a < common.size(); ++a) {
        if (!SameCell(c1.col(off + a), c1.at(i), c2.col(off + a), c2.at(j))) return false;
      }
      return true;
    };
    if (dense) {
      // Both slices hold every cell of the box, row-major.
      const Box& b = dense_boxes[k];
      std::vector<uint64_t> shape(dims);
      for (size_t d = 0; d < dims; ++d)
        shape[d] = static_cast<uint64_t>(b[d].second - b[d].first + 1);
      std::vector<I128> c(dims);
      for (uint64_t i = 0; i < n2 && i < n1; ++i) {
        uint64_t rest = i;
        for (size_t d = dims; d-- > 0;) {
          c[d] = b[d].first + static_cast<I128>(rest % shape[d]);
          rest /= shape[d];
        }
        const bool in1 = InBox(box1, c), in2 = InBox(box2, c);
        const int64_t ii = static_cast<int64_t>(i);
        if (in1 && in2) {
          TRY(c1.Load(i));
          TRY(c2.Load(i));
          if (!same_values(i, i)) changed.push_back({region, 0, ii, ii});
        } else if (in2) {
          added.push_back({region, 0, -1, ii});
        } else if (in1) {
          removed.push_back({region, 0, ii, -1});
        }
      }
    } else {
      std::vector<const core::Column*> d1(dims), d2(dims);
      auto bind = [&](Cursor& cur, std::vector<const core::Column*>& d) {
        for (size_t x = 0; x < dims; ++x) d[x] = &cur.col(x);
      };
      // A cell that an earlier box holds was classified with it.
      auto earlier = [&](const std::vector<const core::Column*>& d, uint64_t at) {
        for (size_t e = 0; e < k; ++e) {
          if (core::CellIn(s2, boxes[e], [&](size_t x) { return d[x]->cell(at); })) return true;
        }
        return false;
      };
      auto key_of = [&](const std::vector<const core::Column*>& d, uint64_t at) -> uint32_t {
        if (!many) return 0;
        keys.push_back(CoordsKey(d, dims, at));
        return static_cast<uint32_t>(keys.size() - 1);
      };
      uint64_t i = 0, j = 0;
      while (i < n1 || j < n2) {
        int cmp;
        if (i < n1) {
          TRY(c1.Load(i));
          bind(c1, d1);
        }
        if (j < n2) {
          TRY(c2.Load(j));
          bind(c2, d2);
        }
        if (i >= n1) {
          cmp = 1;
        } else if (j >= n2) {
          cmp = -1;
        } else {
          cmp = CompareCoords(s2, d1, c1.at(i), d2, c2.at(j));
        }
        if (cmp < 0) {
          if (!earlier(d1, c1.at(i))) {
            removed.push_back({region, key_of(d1, c1.at(i)), static_cast<int64_t>(i), -1});
          }
          ++i;
        } else if (cmp > 0) {
          if (!earlier(d2, c2.at(j))) {
            added.push_back({region, key_of(d2, c2.at(j)), -1, static_cast<int64_t>(j)});
          }
          ++j;
        } else if (!dups) {
          if (!earlier(d2, c2.at(j)) && !same_values(i, j)) {
            changed.push_back(
                {region, key_of(d2, c2.at(j)), static_cast<int64_t>(i), static_cast<int64_t>(j)});
          }
          ++i, ++j;
        } else {
          // Duplicates: the cells at these coordinates on both sides, as
          // multisets of their compared values.
          const std::string coords = CoordsKey(d2, dims, c2.at(j));
          const uint32_t coords_at = key_of(d2, c2.at(j));
          const bool skip = earlier(d2, c2.at(j));
          auto value_key = [&](Cursor& cur, uint64_t at) {
            std::string vk;
            for (size_t a = 0; a < common.size(); ++a) {
              const core::Column& col = cur.col(off + a);
              const bool v = col.valid(at);
              core::Bytes bytes = v ? col.cell(at) : core::Bytes();
              const uint64_t n = bytes.size();
              vk.push_back(v ? '\1' : '\0');
              vk.append(reinterpret_cast<const char*>(&n), sizeof(n));
              vk.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
            }
            return vk;
          };
          std::vector<std::pair<std::string, uint64_t>> g1, g2;
          while (i < n1) {
            TRY(c1.Load(i));
            bind(c1, d1);
            if (CoordsKey(d1, dims, c1.at(i)) != coords) break;
            g1.emplace_back(value_key(c1, c1.at(i)), i);
            ++i;
          }
          while (j < n2) {
            TRY(c2.Load(j));
            bind(c2, d2);
            if (CoordsKey(d2, dims, c2.at(j)) != coords) break;
            g2.emplace_back(value_key(c2, c2.at(j)), j);
            ++j;
          }
          if (skip) continue;
          std::map<std::string, int64_t> left;
          for (const auto& g : g1) ++left[g.first];
          std::map<std::string, int64_t> matched;
          for (const auto& [vk, at] : g2) {
            if (left[vk] > 0) {
              --left[vk];
              ++matched[vk];
            } else {
              added.push_back({region, coords_at, -1, static_cast<int64_t>(at)});
            }
          }
          for (const auto& [vk, at] : g1) {
            if (matched[vk] > 0) {
              --matched[vk];
            } else {
              removed.push_back({region, coords_at, static_cast<int64_t>(at), -1});
            }
          }
        }
      }
    }
    slices.push_back(std::move(sl));
  }

  // Row-major order of coordinates across boxes (one box is in order already).
  if (many) {
    auto dense_coords = [&](const Row& r, std::vector<I128>& c) {
      const Box& b = dense_boxes[r.region];
      uint64_t rest = static_cast<uint64_t>(r.to >= 0 ? r.to : r.from);
      for (size_t d = dims; d-- > 0;) {
        const uint64_t extent = static_cast<uint64_t>(b[d].second - b[d].first + 1);
        c[d] = b[d].first + static_cast<I128>(rest % extent);
        rest /= extent;
      }
    };
    auto less = [&](const Row& x, const Row& y) {
      if (dense) {
        std::vector<I128> a(dims), b(dims);
        dense_coords(x, a);
        dense_coords(y, b);
        return a < b;
      }
      const auto a = SplitKey(keys[x.coords], dims), b = SplitKey(keys[y.coords], dims);
      for (size_t d = 0; d < dims; ++d) {
        const int c = core::CompareValues(s2.dimensions[d].type, a[d], b[d]);
        if (c != 0) return c < 0;
      }
      return false;
    };
    for (auto* rows : {&added, &removed, &changed})
      std::stable_sort(rows->begin(), rows->end(), less);
  }

  // Rendering: runs of consecutive cells of one box, read once more (the
  // tiles are still held) and written through data.csv's CsvTable.
  const std::vector<core::Enumeration> none;
  auto enums_of = [&](const core::ArraySchema& s, const DiffSide& side) {
    std::vector<const core::Enumeration*> out;
    for (const auto& f : FieldsOf(s))
      out.push_back(EnumerationFor(s, side.enums ? *side.enums : none, f));
    return out;
  };
  const auto enums1 = enums_of(s1, from), enums2 = enums_of(s2, to);
  std::vector<core::ReadState> states1(slices.size()), states2(slices.size());
  auto render = [&](std::string& out, const std::vector<Row>& rows, bool to_side) -> Status {
    const auto& names = to_side ? fields2 : fields1;
    const auto& enums = to_side ? enums2 : enums1;
    for (size_t i = 0; i < rows.size();) {
      const uint32_t k = rows[i].region;
      const uint64_t first = static_cast<uint64_t>(to_side ? rows[i].to : rows[i].from);
      size_t j = i + 1;
      while (j < rows.size() && rows[j].region == k &&
             static_cast<uint64_t>(to_side ? rows[j].to : rows[j].from) == first + (j - i)) {
        ++j;
      }
      const auto& view = to_side ? slices[k].to : slices[k].from;
      for (uint64_t at = first; at < first + (j - i); at += kChunkCells) {
        const uint64_t n = std::min(kChunkCells, first + (j - i) - at);
        ASSIGN_OR_RETURN(std::vector<core::Column> cols,
                         ReadRun(*view, names, at, n, to_side ? &states2[k] : &states1[k]));
        std::vector<CsvColumn> columns;
        for (size_t c = 0; c < cols.size(); ++c) columns.push_back({&cols[c], enums[c]});
        ASSIGN_OR_RETURN(CsvTable t, CsvTable::Make(std::move(columns), false));
        t.AppendRows(out, 0, n);
      }
      i = j;
    }
    return core::Ok();
  };
  std::string added_csv = CsvHeaderLine(fields2);
  TRY(render(added_csv, added, true));
  std::string removed_csv = CsvHeaderLine(fields1);
  TRY(render(removed_csv, removed, false));
  std::vector<std::string> changed_fields;
  for (const auto& d : s2.dimensions) changed_fields.push_back(d.name);
  std::vector<std::string> names1, names2;  // the compared attributes
  for (const auto& [a, b] : common) {
    changed_fields.push_back(s2.attributes[b].name + ":before");
    changed_fields.push_back(s2.attributes[b].name + ":after");
    names1.push_back(s1.attributes[a].name);
    names2.push_back(s2.attributes[b].name);
  }
  std::vector<std::string> dim_names(fields2.begin(),
                                     fields2.begin() + static_cast<ptrdiff_t>(dims));
  std::string changed_csv = CsvHeaderLine(changed_fields);
  for (size_t i = 0; i < changed.size();) {
    const Row& r = changed[i];
    size_t j = i + 1;
    while (j < changed.size() && changed[j].region == r.region &&
           changed[j].from == r.from + static_cast<int64_t>(j - i) &&
           changed[j].to == r.to + static_cast<int64_t>(j - i)) {
      ++j;
    }
    const Slices& sl = slices[r.region];
    const uint64_t n = j - i;
    ASSIGN_OR_RETURN(auto coords, ReadRun(*sl.to, dim_names, r.to, n, &states2[r.region]));
    ASSIGN_OR_RETURN(auto before, ReadRun(*sl.from, names1, r.from, n, &states1[r.region]));
    ASSIGN_OR_RETURN(auto after, ReadRun(*sl.to, names2, r.to, n, &states2[r.region]));
    std::vector<CsvColumn> columns;
    for (const auto& c : coords) columns.push_back({&c, nullptr});
    for (size_t a = 0; a < common.size(); ++a) {
      columns.push_back({&before[a], enums1[dims + common[a].first]});
      columns.push_back({&after[a], enums2[dims + common[a].second]});
    }
    ASSIGN_OR_RETURN(CsvTable t, CsvTable::Make(std::move(columns), false));
    t.AppendRows(changed_csv, 0, n);
    i = j;
  }

  const int64_t lo = std::min(from.instant, to.instant), hi = std::max(from.instant, to.instant);
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(start, end - start);
    std::optional<int64_t> at = ParseInstant(line.substr(0, line.find(' ')));
    if (at && *at > lo && *at <= hi) events.push_back(std::string(line));
    start = end + 1;
  }
  nlohmann::ordered_json j;
  j["from"] = FormatIso(from.instant);
  j["to"] = FormatIso(to.instant);
  j["from_ms"] = from.instant;
  j["to_ms"] = to.instant;
  j["added"] = added.size();
  j["removed"] = removed.size();
  j["changed"] = changed.size();
  j["schema_changed"] = s1.name != s2.name;
  j["events"] = std::move(events);
  j["compared_cells"] = files.compared_cells;
  files.summary_json = std::make_shared<const std::string>(core::DumpJsonText(j, 2) + "\n");
  files.added_csv = std::make_shared<const std::string>(std::move(added_csv));
  files.removed_csv = std::make_shared<const std::string>(std::move(removed_csv));
  files.changed_csv = std::make_shared<const std::string>(std::move(changed_csv));
  return files;
}

}  // namespace tiledbfs::fusefs
