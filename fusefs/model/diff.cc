#include "fusefs/model/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/read/coords.h"
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

// One box of the change, read from both views.
struct Region {
  std::shared_ptr<const core::ArrayView> from, to;
  std::vector<core::Column> from_cols, to_cols;  // by the side's CsvFields order
};

// A row of an output file: region, cell in `from` and cell in `to` (-1: none).
struct Row {
  size_t region = 0;
  int64_t from = -1, to = -1;
};

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

// The coordinates of cell i as one string (var values length-prefixed).
void AppendKey(std::string& key, const std::vector<core::Column>& cols, size_t dims, uint64_t i) {
  for (size_t d = 0; d < dims; ++d) {
    core::Bytes v = cols[d].cell(i);
    if (cols[d].var()) {
      const uint64_t n = v.size();
      key.append(reinterpret_cast<const char*>(&n), sizeof(n));
    }
    key.append(reinterpret_cast<const char*>(v.data()), v.size());
  }
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

// Appends the rows `rows` (cells of each region's `from` or `to` columns,
// as `to_side` says) through each region's CsvTable, consecutive cells of
// one region as one run: data.csv's own fast path.
Status AppendRowsOf(std::string& out, const std::vector<Region>& regions,
                    const std::vector<Row>& rows, bool to_side,
                    const std::vector<const core::Enumeration*>& enums) {
  std::vector<std::optional<CsvTable>> tables(regions.size());
  for (size_t i = 0; i < rows.size();) {
    const size_t k = rows[i].region;
    const uint64_t first = static_cast<uint64_t>(to_side ? rows[i].to : rows[i].from);
    size_t j = i + 1;
    while (j < rows.size() && rows[j].region == k &&
           static_cast<uint64_t>(to_side ? rows[j].to : rows[j].from) == first + (j - i)) {
      ++j;
    }
    if (!tables[k]) {
      const auto& cols = to_side ? regions[k].to_cols : regions[k].from_cols;
      std::vector<CsvColumn> columns;
      for (size_t c = 0; c < cols.size(); ++c) columns.push_back({&cols[c], enums[c]});
      ASSIGN_OR_RETURN(CsvTable t, CsvTable::Make(std::move(columns), false));
      tables[k] = std::move(t);
    }
    tables[k]->AppendRows(out, first, first + (j - i));
    i = j;
  }
  return core::Ok();
}

// Reads every field of `view` (in FieldsOf order).
Result<std::vector<core::Column>> ReadAll(const core::ArrayView& view) {
  std::vector<core::Column> out;
  for (const std::string& f : FieldsOf(view.schema())) {
    ASSIGN_OR_RETURN(core::Column c, view.ReadField(f));
    out.push_back(std::move(c));
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

  ASSIGN_OR_RETURN(auto boxes, ChangedBoxes(from, to));
  if (!boxes) {
    // Anywhere: the whole views (sparse: no range; dense: both boxes).
    core::Subarray all(dims);
    if (dense) {
      ASSIGN_OR_RETURN(std::vector<core::Range> n1, from.view->NonEmptyDomain());
      ASSIGN_OR_RETURN(std::vector<core::Range> n2, to.view->NonEmptyDomain());
      std::vector<core::Subarray> both;
      for (const auto* n : {&n1, &n2}) {
        if (n->empty()) continue;
        core::Subarray sub(dims);
        for (size_t d = 0; d < dims; ++d) sub[d] = (*n)[d];
        both.push_back(std::move(sub));
      }
      all = both.empty() ? core::Subarray() : Hull(s2, both);
    }
    boxes = std::vector<core::Subarray>();
    if (!all.empty() || !dense) boxes->push_back(std::move(all));
  }

  Box box1, box2;  // dense: each view's bounding box
  if (dense) {
    ASSIGN_OR_RETURN(std::vector<core::Range> n1, from.view->NonEmptyDomain());
    ASSIGN_OR_RETURN(std::vector<core::Range> n2, to.view->NonEmptyDomain());
    box1 = BoxOf(s1, n1);
    box2 = BoxOf(s2, n2);
  }

  DiffFiles files;
  std::vector<Region> regions;
  std::vector<Row> added, removed, changed;
  for (const core::Subarray& sub : *boxes) {
    Region r;
    r.from = from.view->WithSubarray(sub);
    r.to = to.view->WithSubarray(sub);
    ASSIGN_OR_RETURN(r.from_cols, ReadAll(*r.from));
    ASSIGN_OR_RETURN(r.to_cols, ReadAll(*r.to));
    const uint64_t n1 = r.from_cols.empty() ? 0 : r.from_cols[0].cell_count;
    const uint64_t n2 = r.to_cols.empty() ? 0 : r.to_cols[0].cell_count;
    files.compared_cells += n1 + n2;
    const size_t k = regions.size();
    std::string key;
    // A cell of an earlier box was classified there (boxes may overlap).
    auto first_time = [&](const std::vector<core::Column>& cols, uint64_t i) {
      for (size_t b = 0; b < k; ++b) {
        if (core::CellIn(s2, (*boxes)[b], [&](size_t d) { return cols[d].cell(i); })) return false;
      }
      return true;
    };
    auto same_values = [&](uint64_t i, uint64_t j) {
      for (const auto& [a, b] : common) {
        if (!SameCell(r.from_cols[dims + a], i, r.to_cols[dims + b], j)) return false;
      }
      return true;
    };
    if (dense) {
      // Both slices hold every cell of the box, in the same order.
      std::vector<I128> c(dims);
      for (uint64_t i = 0; i < n2 && i < n1; ++i) {
        if (!first_time(r.to_cols, i)) continue;
        for (size_t d = 0; d < dims; ++d) {
          c[d] = core::ToInt128(s2.dimensions[d].type, r.to_cols[d].cell(i));
        }
        const bool in1 = InBox(box1, c), in2 = InBox(box2, c);
        const int64_t ii = static_cast<int64_t>(i);
        if (in1 && in2) {
          if (!same_values(i, i)) changed.push_back({k, ii, ii});
        } else if (in2) {
          added.push_back({k, -1, ii});
        } else if (in1) {
          removed.push_back({k, ii, -1});
        }
      }
    } else if (!dups) {
      std::unordered_map<std::string, uint64_t> at1;
      for (uint64_t i = 0; i < n1; ++i) {
        key.clear();
        AppendKey(key, r.from_cols, dims, i);
        at1.emplace(key, i);
      }
      std::vector<bool> matched(n1, false);
      for (uint64_t j = 0; j < n2; ++j) {
        key.clear();
        AppendKey(key, r.to_cols, dims, j);
        auto it = at1.find(key);
        if (!first_time(r.to_cols, j)) {
          if (it != at1.end()) matched[it->second] = true;
          continue;
        }
        if (it == at1.end()) {
          added.push_back({k, -1, static_cast<int64_t>(j)});
          continue;
        }
        matched[it->second] = true;
        if (!same_values(it->second, j)) {
          changed.push_back({k, static_cast<int64_t>(it->second), static_cast<int64_t>(j)});
        }
      }
      for (uint64_t i = 0; i < n1; ++i) {
        if (matched[i] || !first_time(r.from_cols, i)) continue;
        removed.push_back({k, static_cast<int64_t>(i), -1});
      }
    } else {
      // Whole rows as multisets: coordinates and the compared attributes.
      auto row_key = [&](const std::vector<core::Column>& cols, uint64_t i, bool is_from) {
        std::string rk;
        AppendKey(rk, cols, dims, i);
        for (const auto& [a, b] : common) {
          const core::Column& c = cols[dims + (is_from ? a : b)];
          const bool v = c.valid(i);
          rk.push_back(v ? '\1' : '\0');
          core::Bytes bytes = v ? c.cell(i) : core::Bytes();
          const uint64_t len = bytes.size();
          rk.append(reinterpret_cast<const char*>(&len), sizeof(len));
          rk.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
        }
        return rk;
      };
      std::unordered_map<std::string, uint64_t> count1, budget;
      for (uint64_t i = 0; i < n1; ++i) ++count1[row_key(r.from_cols, i, true)];
      for (uint64_t j = 0; j < n2; ++j) {
        if (!first_time(r.to_cols, j)) continue;
        const std::string rk = row_key(r.to_cols, j, false);
        auto it = count1.find(rk);
        if (it != count1.end() && it->second > 0) {
          --it->second;
          ++budget[rk];
        } else {
          added.push_back({k, -1, static_cast<int64_t>(j)});
        }
      }
      for (uint64_t i = 0; i < n1; ++i) {
        if (!first_time(r.from_cols, i)) continue;
        const std::string rk = row_key(r.from_cols, i, true);
        auto it = budget.find(rk);
        if (it != budget.end() && it->second > 0) {
          --it->second;
        } else {
          removed.push_back({k, static_cast<int64_t>(i), -1});
        }
      }
    }
    regions.push_back(std::move(r));
  }

  // Row-major order of coordinates across regions (one region is in order already).
  auto coords_less = [&](const Row& x, const Row& y) {
    const auto& cx = x.to >= 0 ? regions[x.region].to_cols : regions[x.region].from_cols;
    const auto& cy = y.to >= 0 ? regions[y.region].to_cols : regions[y.region].from_cols;
    const uint64_t ix = static_cast<uint64_t>(x.to >= 0 ? x.to : x.from);
    const uint64_t iy = static_cast<uint64_t>(y.to >= 0 ? y.to : y.from);
    for (size_t d = 0; d < dims; ++d) {
      const int c = core::CompareValues(s2.dimensions[d].type, cx[d].cell(ix), cy[d].cell(iy));
      if (c != 0) return c < 0;
    }
    return false;
  };
  if (regions.size() > 1) {
    for (auto* rows : {&added, &removed, &changed}) {
      std::stable_sort(rows->begin(), rows->end(), coords_less);
    }
  }

  // The files.
  const std::vector<core::Enumeration> none;
  const auto& e1 = from.enums ? *from.enums : none;
  const auto& e2 = to.enums ? *to.enums : none;
  auto enums_of = [](const core::ArraySchema& s, const std::vector<core::Enumeration>& e) {
    std::vector<const core::Enumeration*> out;
    for (const auto& f : FieldsOf(s)) out.push_back(EnumerationFor(s, e, f));
    return out;
  };
  const auto enums1 = enums_of(s1, e1), enums2 = enums_of(s2, e2);
  std::string scratch;
  files.added_csv = CsvHeaderLine(FieldsOf(s2));
  TRY(AppendRowsOf(files.added_csv, regions, added, true, enums2));
  files.removed_csv = CsvHeaderLine(FieldsOf(s1));
  TRY(AppendRowsOf(files.removed_csv, regions, removed, false, enums1));
  std::vector<std::string> changed_fields;
  for (const auto& d : s2.dimensions) changed_fields.push_back(d.name);
  for (const auto& [a, b] : common) {
    changed_fields.push_back(s2.attributes[b].name + ":before");
    changed_fields.push_back(s2.attributes[b].name + ":after");
  }
  files.changed_csv = CsvHeaderLine(changed_fields);
  for (const Row& row : changed) {
    const Region& r = regions[row.region];
    std::string& out = files.changed_csv;
    for (size_t d = 0; d < dims; ++d) {
      if (d) out.push_back(',');
      AppendCsvCell(out, r.to_cols[d], row.to, nullptr, scratch);
    }
    for (const auto& [a, b] : common) {
      out.push_back(',');
      AppendCsvCell(out, r.from_cols[dims + a], row.from, enums1[dims + a], scratch);
      out.push_back(',');
      AppendCsvCell(out, r.to_cols[dims + b], row.to, enums2[dims + b], scratch);
    }
    out.push_back('\n');
  }

  const int64_t lo = std::min(from.instant, to.instant), hi = std::max(from.instant, to.instant);
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(start, end - start);
    const size_t sp = line.find(' ');
    std::optional<int64_t> at = ParseInstant(line.substr(0, sp));
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
  files.summary_json = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return files;
}

}  // namespace tiledbfs::fusefs
