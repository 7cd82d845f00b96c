// diff/<T1>..<T2>/ (docs/namespace.md "Diffs"): what changed between two views of
// an array, as summary.json, added.csv, removed.csv and changed.csv.
//
// Cost follows the change, not the array: only fragments that one view has
// and the other has not (or that both have but whose cell or delete
// timestamps fall between the instants) can make the views differ, so only
// the boxes of their non-empty domains are compared, each as a slice of both
// views (ArrayView::WithSubarray). A dense view whose box grew or shrank adds
// the difference of the two boxes. Delete or update conditions committed
// between the instants can touch any cell: then the whole views are
// compared.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/array/array_view.h"
#include "core/schema/array_schema.h"
#include "core/util/result.h"

namespace tiledbfs::fusefs {

using core::Result;

// One side of a diff: a view and the enumerations of its schema.
struct DiffSide {
  std::shared_ptr<const core::ArrayView> view;
  std::shared_ptr<const std::vector<core::Enumeration>> enums;
  int64_t instant = 0;  // the requested instant, ms since the epoch
};

struct DiffFiles {
  std::shared_ptr<const std::string> summary_json, added_csv, removed_csv, changed_csv;
  uint64_t compared_cells = 0;  // cells of both views read to find the change
  uint64_t footprint() const {
    return summary_json->size() + added_csv->size() + removed_csv->size() + changed_csv->size() +
           256;
  }
};

// The diff from `from` to `to` (either may be the later one). `log` is the
// array's log.txt, whose lines with instants in (min, max] summary.json
// lists as events.
Result<DiffFiles> ComputeDiff(const DiffSide& from, const DiffSide& to, std::string_view log);

// "T1..T2", each an instant as history/ names it; nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> ParseDiffName(std::string_view name);

}  // namespace tiledbfs::fusefs
