// What changed between two views of an array (docs/namespace.md "Diffs"), as
// a stream of rows: each cell added, removed or changed, in row-major order
// of its coordinates, read in bounded memory and resumable from any
// position recorded on the way.
//
// Cost follows the change, not the array: only fragments that one view has
// and the other has not (or that both have but whose cell or delete
// timestamps fall between the instants) can make the views differ, so only
// the boxes of their non-empty domains are compared, each as a slice of both
// views (ArrayView::WithSubarray). A dense view whose box grew or shrank adds
// the difference of the two boxes. Delete or update conditions committed
// between the instants can touch any cell: then the whole views are
// compared. Each box is a merge of its two slices; a cell that an earlier
// box holds is classified there only, so the boxes' rows are disjoint and
// the stream merges them by coordinates.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/array/array_view.h"
#include "core/read/subarray.h"
#include "core/util/result.h"

namespace tiledbfs::core {

enum class DiffKind : uint8_t { kAdded = 0, kRemoved = 1, kChanged = 2 };
inline constexpr int kDiffKinds = 3;

// What is compared, fixed once: the boxes and both views' slices of them.
class DiffPlan {
 public:
  // The diff from `from` to `to` (either may be the later one), taken at
  // the requested instants (ms). kUnsupported if the schemas' dimensions
  // differ.
  // `counts`: SaveCounts of an earlier plan of the same views (the
  // persistent index), given to the slices before they are counted, so
  // that they need not be; counts that do not fit are not taken.
  static Result<std::shared_ptr<const DiffPlan>> Make(std::shared_ptr<const ArrayView> from,
                                                      std::shared_ptr<const ArrayView> to,
                                                      int64_t from_instant, int64_t to_instant,
                                                      std::span<const std::string> counts = {});
  // Each box's slices' counts (ArrayView::SaveCounts), from then to.
  std::vector<std::string> SaveCounts() const;

  const ArraySchema& from_schema() const { return from_->schema(); }
  const ArraySchema& to_schema() const { return to_->schema(); }
  // Every dimension, then every attribute, of each side: the columns of
  // removed.csv (from) and added.csv (to).
  const std::vector<std::string>& from_fields() const { return fields_[0]; }
  const std::vector<std::string>& to_fields() const { return fields_[1]; }
  // The attributes both sides have with the same type, cell size and
  // nullability, as (index in from, index in to), in `to`'s order.
  const std::vector<std::pair<size_t, size_t>>& common() const { return common_; }
  size_t boxes() const { return slices_.size(); }
  // The cells of both views read to find the change.
  uint64_t compared_cells() const { return compared_cells_; }

 private:
  friend class DiffStream;
  DiffPlan() = default;
  std::shared_ptr<const ArrayView> from_, to_;
  bool dense_ = false, dups_ = false;
  std::vector<std::string> fields_[2];
  std::vector<std::pair<size_t, size_t>> common_;
  std::vector<std::string> compared_[2];  // dimensions (sparse), then the common attributes
  std::vector<Subarray> boxes_;
  std::vector<std::vector<std::pair<__int128, __int128>>> dense_boxes_;  // dense: as integers
  std::vector<std::pair<__int128, __int128>> extent_[2];  // dense: each view's non-empty box
  // Sparse arrays whose dimensions are all integers (the common case)
  // compare coordinates as integers, and the boxes as integer bounds.
  bool int_dims_ = false;
  std::vector<std::vector<std::pair<__int128, __int128>>> int_boxes_;
  struct Slices {
    std::shared_ptr<const ArrayView> view[2];
    uint64_t cells[2] = {0, 0};
  };
  std::vector<Slices> slices_;
  uint64_t compared_cells_ = 0;
};

// Where a stream stands: per box, its cursors into both slices where its
// pending rows begin, and how many of those rows were taken. Small: three
// numbers per box.
struct DiffPosition {
  std::vector<uint64_t> at;
  uint64_t footprint() const { return sizeof(*this) + at.size() * sizeof(uint64_t); }
};

// The rows of a plan, in order, a run at a time: rows of one kind whose
// cells are consecutive in each side's slice, so that they render as one
// range of columns. Reads each box's slices forward a chunk of
// `chunk_cells` cells at a time (all of each side's fields when
// `all_fields`, else only the compared ones). Not thread-safe: one per
// reader.
class DiffStream {
 public:
  DiffStream(std::shared_ptr<const DiffPlan> plan, bool all_fields, uint64_t chunk_cells);
  ~DiffStream();
  DiffStream(const DiffStream&) = delete;
  DiffStream& operator=(const DiffStream&) = delete;

  // Goes to the first row (default) or to a position Position() returned
  // on a stream of the same plan.
  Status Seek(const DiffPosition& position);
  Status Seek();
  // Makes the next run current: 1 to max[kind] rows; 0 at the end. Errors:
  // those of the reads, kCancelled when the process is stopping.
  Result<uint64_t> Next(const std::array<uint64_t, kDiffKinds>& max);
  // Where the current run starts: Seek to it and Next() makes a run from
  // the same first row current (before the first Next: the first row).
  DiffPosition Position() const;

  // The current run.
  DiffKind kind() const { return run_kind_; }
  // Field f of the side's fields (DiffPlan::from_fields / to_fields; with
  // all_fields, else the compared ones) and the index in those columns of
  // the run's first cell on that side: in `from` for removed and changed
  // rows, in `to` for added and changed ones. The run's cells follow it.
  const Column& from_column(size_t f) const;
  uint64_t from_index() const;
  const Column& to_column(size_t f) const;
  uint64_t to_index() const;
  // The box the run comes from (< DiffPlan::boxes()), and numbers that
  // change whenever the side's columns do: what a caller builds over the
  // columns is valid while they stay.
  size_t box() const { return current_; }
  uint64_t from_chunk() const;
  uint64_t to_chunk() const;

 private:
  struct Box;
  Status Fill(size_t box, bool may_read);
  bool Before(size_t a, size_t b) const;
  std::shared_ptr<const DiffPlan> plan_;
  uint64_t loads_ = 0;
  std::vector<size_t> compared_at_[2];  // each compared field among the loaded ones
  std::vector<std::unique_ptr<Box>> boxes_;
  size_t current_ = SIZE_MAX;         // the box of the current run
  uint64_t run_ = 0;                  // its rows
  std::array<uint64_t, 3> run_at_{};  // its box's position where it starts
  DiffKind run_kind_ = DiffKind::kAdded;
  uint64_t run_from_ = 0, run_to_ = 0;  // its first cells (UINT64_MAX: none)
};

}  // namespace tiledbfs::core
