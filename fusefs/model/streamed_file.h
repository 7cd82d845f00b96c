// Files of a view that grow with its cells (data.csv, <field>.txt, var-sized
// .bin and .offsets, .validity) served with bounded memory: nothing holds a
// whole field or a whole rendered file.
//
// A streamed file is an optional header, then one piece per run of
// `piece_cells` cells (the last may be shorter), then an optional trailer.
// Its StreamLayout is the byte offset where every piece starts, computed
// once by one pass over the view in batches of cells (ComputeStreamLayout)
// and kept (small: 8 bytes per piece) so that stat and open do not redo the
// pass. A read renders only the pieces covering the requested bytes, each
// from ReadFieldRange of those cells.
//
// The size of rendered text cannot be known without rendering it (numbers
// have variable widths), so for CSV files the layout pass renders the whole
// file once, keeping nothing but the piece sizes.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/array/array_view.h"
#include "core/schema/array_schema.h"
#include "fusefs/model/tree.h"

namespace tiledbfs::fusefs {

struct StreamLayout {
  std::string header;   // bytes before the first piece
  std::string trailer;  // bytes after the last piece
  uint64_t cells = 0;
  uint64_t piece_cells = 1;
  // starts[j]: file offset of piece j; starts.back(): where the trailer
  // starts. pieces() + 1 entries, starts[0] == header.size().
  std::vector<uint64_t> starts;

  uint64_t pieces() const { return starts.size() - 1; }
  uint64_t size() const { return starts.back() + trailer.size(); }
  // What the layout costs to keep (for the cache budget).
  uint64_t footprint() const {
    return sizeof(*this) + header.size() + trailer.size() + starts.size() * 8;
  }
};

// Renders a run of cells of one file.
class CellRenderer {
 public:
  virtual ~CellRenderer() = default;
  // Appends the bytes of cells [first, first + count), read from the view
  // with the reader's `state` (core/read/tile_cache.h; may be null).
  virtual core::Status Render(uint64_t first, uint64_t count, std::string& out,
                              core::ReadState* state) const = 0;
  // Appends to `sizes` the byte size of each run of `piece` cells in
  // [first, first + count) (the last run may be shorter). The default renders
  // each run into a reused buffer.
  virtual core::Status Measure(uint64_t first, uint64_t count, uint64_t piece,
                               std::vector<uint64_t>& sizes, core::ReadState* state) const;
};

// The pieces of a view of `cells` cells: 4096 cells per piece, more for
// views of over 256Mi cells so that a layout holds at most 64Ki pieces.
uint64_t DefaultPieceCells(uint64_t cells);

// One pass over cells [0, cells) in batches of `batch_cells` (rounded up to
// a multiple of piece_cells): the layout of header + pieces + trailer.
// Errors: those of the renderer.
core::Result<StreamLayout> ComputeStreamLayout(const CellRenderer& renderer, std::string header,
                                               std::string trailer, uint64_t cells,
                                               uint64_t piece_cells, uint64_t batch_cells);

// The open file over a layout: a read renders the pieces it covers. The
// pieces rendered last are kept in buffers reused from read to read, so
// that sequential reads render each piece once and allocate nothing: a
// sequential reader's pieces are rendered ahead, in windows that double up
// to 16 MiB (or one piece), split over every core; a seek renders one piece. A piece that does not
// render to the size its layout says is kCorrupt (a renderer that is not deterministic): never
// silently wrong bytes. Reads of one file are serialised.
std::unique_ptr<OpenFile> MakeStreamedFile(std::shared_ptr<const StreamLayout> layout,
                                           std::shared_ptr<const CellRenderer> renderer);

// A fixed-stride file over a field: an optional header, then `stride` bytes
// per cell taken from ReadFieldRange of the cells a read covers: the values
// of a fixed-size field (.bin, .npy after its header) or the validity bytes
// of a nullable one (.validity, stride 1).
enum class FieldPart { kData, kValidity };
std::unique_ptr<OpenFile> MakeFieldRangeFile(std::shared_ptr<const core::ArrayView> view,
                                             std::string field, FieldPart part, std::string header,
                                             uint64_t cells, uint64_t stride);

// Renderers over a view (they keep the view and enumerations alive).
// data.csv (header = true: every dimension then every attribute) or
// <field>.txt (one field, header = false). `enums` are the view schema's
// enumerations; an attribute with one prints its labels.
std::shared_ptr<const CellRenderer> MakeCsvRenderer(
    std::shared_ptr<const core::ArrayView> view, std::vector<std::string> fields,
    std::shared_ptr<const std::vector<core::Enumeration>> enums);
// The header line of data.csv for those fields.
std::string CsvHeaderLine(const std::vector<std::string>& fields);
// The values of a var-sized field, concatenated (var .bin). Measure only
// gathers the cells (no text).
std::shared_ptr<const CellRenderer> MakeVarDataRenderer(std::shared_ptr<const core::ArrayView> view,
                                                        std::string field);
// The .offsets entries of a var-sized field for each cell (8 bytes LE per
// cell: the byte offset of the cell in .bin), given the layout of its .bin
// (`data_layout`, from MakeVarDataRenderer): pieces of the .offsets file
// must use the same piece_cells. The final entry is the .offsets layout's
// trailer (see VarOffsetsLayout).
std::shared_ptr<const CellRenderer> MakeVarOffsetsRenderer(
    std::shared_ptr<const core::ArrayView> view, std::string field,
    std::shared_ptr<const StreamLayout> data_layout);
// The layout of .offsets from the layout of .bin: no pass needed.
StreamLayout VarOffsetsLayout(const StreamLayout& data_layout);

}  // namespace tiledbfs::fusefs
