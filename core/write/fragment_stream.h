// Writing one fragment tile by tile (format version 22): the single place
// the writer lays out a fragment's data files and __fragment_metadata.tdb.
// Spec: format_spec/fragment.md, format_spec/tile.md.
//
// A producer fills the unfiltered cells of one tile of every field, then
// FlushTile filters each and appends it to its file (a<i>.tdb, a<i>_var.tdb,
// a<i>_validity.tdb, d<i>.tdb, d<i>_var.tdb); only per-tile metadata stays
// in memory (offsets, var sizes, MBRs, mins, maxes, sums, null counts), so
// memory does not grow with the fragment. Finish writes
// __fragment_metadata.tdb: R-tree, tile offsets, var offsets, var sizes,
// validity offsets, tile mins, maxes, sums, null counts, fragment
// min/max/sum/null count, processed conditions, footer, footer length.
//
// Dense fragments: the tiles of the subarray expanded to the tile grid, in
// tile order, each whole (cells outside the subarray get the fill value).
// Sparse fragments: the cells in the global order (tile order of the space
// tiles, then cell order), cut every `capacity` cells.
//
// WriteStreamedFragment wraps a producer with the commit protocol: the
// fragment folder first, the commit file __commits/<name>.wrt last, the
// folder removed on failure, so a reader never sees part of a fragment.
#pragma once

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/schema/array_schema.h"

namespace tiledbfs::core {

// The unfiltered cells of one tile of one field.
struct TileBuf {
  ByteVec data;                   // fixed: cells * cell size; var: the values
  std::vector<uint64_t> offsets;  // var: start of each cell in data
  ByteVec validity;               // nullable: one byte per cell (1 valid)
  uint64_t cells = 0;
  void Clear() {
    data.clear();
    offsets.clear();
    validity.clear();
    cells = 0;
  }
};

// One field of the fragment as the writer lays it out.
struct WriteField {
  std::string name;
  std::string file_base;  // "a0", "d1"
  Datatype type = Datatype::kAny;
  uint32_t cell_val_num = 1;
  bool var = false;
  bool nullable = false;
  bool is_dim = false;
  uint64_t cell_size = 0;  // fixed: bytes per cell; var: 8 (an offset)
  const FilterPipeline* filters = nullptr;
  ByteVec fill;  // one cell (fixed) or one value (var)
  uint8_t fill_validity = 1;
};

// The fields of a fragment of `s` in the writer's order: every attribute,
// then (sparse only) every dimension.
std::vector<WriteField> FragmentFields(const ArraySchema& s);

// Appends one cell to a tile.
inline void AppendCell(TileBuf& t, const WriteField& f, Bytes cell, uint8_t valid) {
  if (f.var) t.offsets.push_back(t.data.size());
  AppendBytes(t.data, cell);
  if (f.nullable) t.validity.push_back(valid);
  ++t.cells;
}

class FragmentFileWriter {
 public:
  // Opens the data files of a new fragment in `dir` (an existing folder).
  // `schema` must carry its file name. Dense: `subarray` is the inclusive
  // range per dimension written (checked against the domain); sparse:
  // empty. Errors: kInvalidArgument (bad subarray), kUnsupported (a filter
  // not written, hilbert cell order), kIo.
  static Result<std::unique_ptr<FragmentFileWriter>> Open(const std::filesystem::path& dir,
                                                          const ArraySchema& schema,
                                                          const std::vector<Range>& subarray);
  ~FragmentFileWriter();
  FragmentFileWriter(const FragmentFileWriter&) = delete;
  FragmentFileWriter& operator=(const FragmentFileWriter&) = delete;

  const ArraySchema& schema() const { return schema_; }
  const std::vector<WriteField>& fields() const { return fields_; }
  // The buffers of the tile being filled, one per field (fields() order).
  std::vector<TileBuf>& tile() { return tile_; }

  // Filters the current tile of every field, appends it to the files and
  // clears the buffers. Every field must hold the same number of cells (at
  // least one; dense: the cells of a whole space tile). Sparse: the tile's
  // MBR is computed from its coordinates. Errors: kInvalidArgument
  // (inconsistent cell counts, a filter refusing the data), kIo.
  Status FlushTile();
  // Sparse: call after appending one cell to every field; flushes the tile
  // when it holds `capacity` cells.
  Status SparseCellAdded() {
    return ++sparse_cells_ == capacity_ ? (sparse_cells_ = 0, FlushTile()) : Ok();
  }
  // Flushes a partial last tile (sparse), closes the data files and writes
  // __fragment_metadata.tdb. kInvalidArgument when no cell was written.
  Status Finish();

  uint64_t tile_num() const { return tile_num_; }
  uint64_t cell_num() const { return cell_num_; }

 private:
  struct FieldState;
  FragmentFileWriter(const std::filesystem::path& dir, const ArraySchema& schema);
  Status WriteMetadata();

  std::filesystem::path dir_;
  ArraySchema schema_;
  std::vector<WriteField> fields_;
  std::vector<TileBuf> tile_;
  std::vector<std::unique_ptr<FieldState>> state_;
  std::vector<Range> subarray_;
  std::vector<std::vector<Range>> mbrs_;  // sparse: one per tile
  std::vector<uint64_t> tile_cells_;      // cells per tile
  uint64_t capacity_ = 0;
  uint64_t dense_tile_cells_ = 0;  // dense: cells of every tile
  uint64_t sparse_cells_ = 0;
  uint64_t tile_num_ = 0;
  uint64_t cell_num_ = 0;
  bool finished_ = false;
};

// Supplies the values of cells by their coordinates, for dense tiles.
class CellSource {
 public:
  virtual ~CellSource() = default;
  // Appends to tiles[k] (one per writer field) the `count` cells at
  // `coords`, coords + 1 along dimension `dim`, ..., all inside the
  // subarray. `coords` has one integer coordinate per dimension.
  virtual Status AppendRun(const __int128* coords, size_t dim, uint64_t count,
                           std::vector<TileBuf>& tiles) = 0;
};

// Writes every tile of a dense fragment opened on `subarray`: the space
// tiles covering it in tile order, cells in cell order, values from `src`
// inside the subarray and fill values outside.
Status WriteDenseTiles(FragmentFileWriter& w, const std::vector<Range>& subarray, CellSource& src);

// Creates __fragments/<name>/ for [t1, t2], opens a FragmentFileWriter on
// it, runs `produce` (which fills and flushes its tiles), finishes the
// metadata and writes __commits/<name>.wrt last. On any failure the
// fragment folder is removed. Returns the fragment name.
Result<std::string> WriteStreamedFragment(
    const std::string& array_dir, const ArraySchema& schema, uint64_t t1, uint64_t t2,
    const std::vector<Range>& subarray, const std::function<Status(FragmentFileWriter&)>& produce);

}  // namespace tiledbfs::core
