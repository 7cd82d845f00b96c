// diff/<T1>..<T2>/ (docs/namespace.md "Diffs"): what changed between two views
// of an array, as summary.json, added.csv, removed.csv and changed.csv.
//
// The rows come from core/array/diff.h's stream. One pass over it counts
// them and measures each CSV file piece by piece, keeping where each piece
// starts in the stream (a few numbers per box) and in the file; a read
// renders only the pieces it covers, resuming the stream there. Nothing
// holds the rows or the files' text: memory is bounded by the stream's
// chunks and by a few positions per piece (at most kMaxPieces per file).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/array/array_view.h"
#include "core/array/diff.h"
#include "core/schema/array_schema.h"
#include "core/util/result.h"
#include "fusefs/model/streamed_file.h"

namespace tiledbfs::fusefs {

using core::Result;

// One side of a diff: a view and the enumerations of its schema.
struct DiffSide {
  std::shared_ptr<const core::ArrayView> view;
  std::shared_ptr<const std::vector<core::Enumeration>> enums;
  int64_t instant = 0;  // the requested instant, ms since the epoch
};

// A CSV file of a diff: where its pieces start, and what renders them.
struct DiffCsvFile {
  std::shared_ptr<const StreamLayout> layout;
  std::shared_ptr<const CellRenderer> renderer;
};

struct DiffFiles {
  std::shared_ptr<const std::string> summary_json;
  std::array<DiffCsvFile, core::kDiffKinds> csv;  // by core::DiffKind
  uint64_t footprint_bytes = 0;                   // with the compared slices' indexes
  uint64_t footprint() const { return footprint_bytes; }
};

// What the persistent index keeps of a diff, and gives back: the pass's
// rows and pieces of each CSV file (where each piece starts in the file and
// in the stream) and the slices' counts (DiffPlan::SaveCounts), so that a
// later mount serves the files with no pass. summary.json is made again
// from them (its events come from log.txt as it is then).
struct DiffIndexed {
  std::string_view saved;  // in: `to_save` of an earlier pass of the same views, or empty
  // in: called where a piece taken from `saved` renders to other bytes
  std::function<void(const std::string&)> on_mismatch;
  std::string* to_save = nullptr;  // out: what this pass found, if it ran
  bool taken = false;              // out: whether `saved` served, with no pass
};

// The diff from `from` to `to` (either may be the later one). `log` is the
// array's log.txt, whose lines with instants in (min, max] summary.json
// lists as events. `piece_rows`: rows per piece of the CSV files (0: the
// default; tests make it small so that small diffs make many pieces).
// `indexed`: see DiffIndexed; saved bytes that do not read back, or not of
// this diff's boxes and pieces, are not taken (the pass runs).
Result<DiffFiles> ComputeDiff(const DiffSide& from, const DiffSide& to, std::string_view log,
                              uint64_t piece_rows, DiffIndexed* indexed = nullptr);

// "T1..T2", each an instant as history/ names it; nullopt otherwise.
std::optional<std::pair<int64_t, int64_t>> ParseDiffName(std::string_view name);

}  // namespace tiledbfs::fusefs
