// Files of a view that grow with its cells (data.csv, <field>.txt, var-sized
// .bin and .offsets, .validity) served with bounded memory: nothing holds a
// whole field or a whole rendered file.
//
// A streamed file is an optional header, then one piece per run of
// `piece_cells` cells (the last may be shorter), then an optional trailer.
// Its StreamLayout is the byte offset where every piece starts, kept
// (small: 8 bytes per piece) so that stat and open do not redo the work
// that found it. A read renders only the pieces covering the requested
// bytes, each from ReadFieldRange of those cells.
//
// The size of rendered text cannot be known without measuring every cell
// (numbers have variable widths). A view's text files (data.csv, every
// .txt and var-sized .bin) are measured together in one pass in the view's
// order (ComputeViewLayouts), which keeps every piece's size: a read at any
// offset then renders its own pieces alone (tail -c 100 renders the last).
// A renderer that knows its total size up front (CellRenderer::MeasureAll)
// may instead find piece starts as the file is read (a lazy PieceStarts).
//
// In three files by job: stream_layout.cc finds and keeps the layouts
// (and saves them for the persistent index), streamed_file.cc serves
// reads over them, cell_renderers.cc renders the cells of each file.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/array/array_view.h"
#include "core/schema/array_schema.h"
#include "fusefs/model/tree.h"
#include "fusefs/render/parquet.h"

namespace tiledbfs::fusefs {

// Where each piece of a streamed file starts. Either all known at once (a
// layout pass measured every piece), or found as the file is read (a lazy
// layout: CellRenderer::MeasureAll gave the size of all pieces together,
// so stat needs no pass; the start of piece j is known once pieces
// 0 ... j - 1 have been rendered by a reader going forward, or measured
// for a reader that jumped ahead). Shared by the open files of a layout;
// thread-safe.
class PieceStarts {
 public:
  // Every start: all[j] for piece j, all.back() where the last one ends.
  explicit PieceStarts(std::vector<uint64_t> all);
  // Only where the first piece starts and where the last one ends.
  PieceStarts(uint64_t first, uint64_t pieces, uint64_t end);

  uint64_t pieces() const { return pieces_; }
  // The starts of pieces 0 ... known() are known (piece known() is the
  // first whose end is not, unless known() == pieces()).
  uint64_t known() const;
  uint64_t Start(uint64_t j) const;  // j <= known()
  // The last known piece j < known() with Start(j) <= offset; nullopt if
  // offset >= Start(known()) or offset < Start(0).
  std::optional<uint64_t> Find(uint64_t offset) const;
  // Piece j is `size` bytes: a piece known() extends what is known; a
  // known piece of another size, or a last piece that does not end where
  // the layout says, is kCorrupt (never silently wrong bytes); a piece
  // past known() is kInvalidArgument.
  core::Status Record(uint64_t j, uint64_t size);
  // Held while measuring the pieces left (one such pass at a time).
  std::mutex& measuring() { return measure_mu_; }

 private:
  mutable std::mutex mu_;
  std::vector<uint64_t> starts_;  // known() + 1 entries (room for pieces_ + 1)
  uint64_t pieces_ = 0;
  uint64_t end_ = 0;
  std::mutex measure_mu_;
};

struct StreamLayout {
  std::string header;   // bytes before the first piece
  std::string trailer;  // bytes after the last piece
  uint64_t cells = 0;
  uint64_t piece_cells = 1;
  uint64_t batch_cells = 1;             // cells per batch of a pass that measures pieces
  uint64_t body_end = 0;                // where the trailer starts
  std::shared_ptr<PieceStarts> starts;  // never null; starts->Start(0) == header.size()
  // Called with the reason when the view's cells do not fit the layout (a
  // piece renders to another size, or past the cells): for a layout the
  // persistent index kept, the entry is stale and is dropped. May be null.
  std::function<void(const std::string&)> on_mismatch;

  uint64_t pieces() const { return starts->pieces(); }
  uint64_t size() const { return body_end + trailer.size(); }
  // What the layout costs to keep (for the cache budget).
  uint64_t footprint() const {
    return sizeof(*this) + sizeof(PieceStarts) + header.size() + trailer.size() +
           (pieces() + 1) * 8;
  }
};

// Renders a run of cells of one file.
// The enumeration whose labels attribute `field` of `schema` prints, among
// `enums`; null for a field without one.
const core::Enumeration* EnumerationFor(const core::ArraySchema& schema,
                                        const std::vector<core::Enumeration>& enums,
                                        const std::string& field);

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
  // The byte size of all cells together, found without rendering them in
  // order (in batches of about `batch_cells`), or nullopt if this renderer
  // cannot (the default): the layout is then lazy (PieceStarts).
  virtual core::Result<std::optional<uint64_t>> MeasureAll(uint64_t batch_cells) const;
  // A reader going forward has rendered every cell before `to`, and had
  // those before `from`: the tiles it is done with may leave the cache
  // (ArrayView::ReleaseTiles). The default keeps them.
  virtual void Release(uint64_t /*from*/, uint64_t /*to*/) const {}
};

// The pieces of a view of `cells` cells: 4096 cells per piece, more for
// views of over 256Mi cells so that a layout holds at most 64Ki pieces.
uint64_t DefaultPieceCells(uint64_t cells);

// The layout of header + pieces + trailer: lazy if the renderer's
// MeasureAll knows the size of all cells, else from one pass over cells
// [0, cells) in batches of `batch_cells` (rounded up to a multiple of
// piece_cells), on every core. Errors: those of the renderer.
core::Result<StreamLayout> ComputeStreamLayout(const CellRenderer& renderer, std::string header,
                                               std::string trailer, uint64_t cells,
                                               uint64_t piece_cells, uint64_t batch_cells);

// The sizes of the pieces of cells [first, first + count) (first a
// multiple of piece), measured in batches of about `batch_cells` on every
// core (a lazy layout's rest, or a layout's whole pass). Errors: those of
// the renderer; kCorrupt for a renderer that measures too few or too many.
core::Result<std::vector<uint64_t>> MeasurePieces(const CellRenderer& renderer, uint64_t first,
                                                  uint64_t count, uint64_t piece,
                                                  uint64_t batch_cells);

// kCorrupt unless var-sized column `c` (ReadFieldRange of cells
// [first, first + count)) has count + 1 offsets from 0, non-decreasing,
// ending at data.size().
core::Status CheckVarColumn(const core::Column& c, uint64_t first, uint64_t count);

// The text files of a view, measured together (ComputeViewLayouts):
// data.csv over `fields` (its header line first) and, for each field, its
// .txt and, for a var-sized one, its .bin; and what data.parquet's sizes
// need counted of the fields that need it (ParquetNeedsOf), per piece.
struct ViewLayouts {
  StreamLayout csv;
  std::map<std::string, StreamLayout> txt;
  std::map<std::string, StreamLayout> var_data;
  std::map<std::string, ParquetCounts> parquet;
};
// What the persistent index keeps of a view: its sparse windows' counts
// (ArrayView::SaveCounts; empty for other views) and its text files'
// layouts, every piece start known as ComputeViewLayouts leaves them.
struct IndexedView {
  std::string counts;
  ViewLayouts layouts;
};
// The saved form's version, part of the index's keys too: bump it when the
// form or any file's text changes (a value rendered otherwise would not
// fit the sizes kept).
inline constexpr uint32_t kIndexedViewFormat = 3;
// As bytes, and back. Load checks that each layout holds together (its
// pieces cover its cells, its starts ascend from its header to its body's
// end): kCorrupt otherwise, nothing taken. The counts are checked when a
// view takes them (ArrayView::RestoreCounts).
std::string SaveIndexedView(const IndexedView& view);
core::Result<IndexedView> LoadIndexedView(std::string_view saved);

// One pass over the view's `cells` cells in its order, in batches of
// `batch_cells` (rounded up to a multiple of piece_cells) on every core:
// each field is read once and its text (and var-sized bytes, and
// data.parquet's counts) measured a piece at a time, so that every piece start of every file is
// known and a read anywhere renders only its own pieces. A data.csv piece is the sum of its fields'
// .txt pieces: a field then a separator or the line end is one byte more, as a .txt line's end.
// `enums` (may be null): the view schema's enumerations. Errors: those of the reads.
core::Result<ViewLayouts> ComputeViewLayouts(const core::ArrayView& view,
                                             const std::vector<std::string>& fields,
                                             const std::vector<core::Enumeration>* enums,
                                             uint64_t cells, uint64_t piece_cells,
                                             uint64_t batch_cells);

// The layouts of a view whose cells are the `base` view's (laid out whole,
// every piece start known, as the index keeps them) followed by `tail`'s
// `tail_cells` cells (a slice of the view holding just those), cut as base
// is: base's pieces are kept, its last one completed by the tail's first
// cells, and only the tail's cells are read. The same layouts as
// ComputeViewLayouts of the whole view. kInvalidArgument for a base laid
// out otherwise (another field, a lazy layout); else the reads' errors.
core::Result<ViewLayouts> ExtendViewLayouts(const ViewLayouts& base, const core::ArrayView& tail,
                                            const std::vector<std::string>& fields,
                                            const std::vector<core::Enumeration>* enums,
                                            uint64_t tail_cells, uint64_t batch_cells);

// The open file over a layout: a read renders the pieces it covers. Over a
// lazy layout, a read past the known starts renders forward from them if
// it is within 16 MiB, else first measures every piece left. The pieces
// rendered last are kept in buffers reused from read to read, so that
// sequential reads render each piece once and allocate nothing: a
// sequential reader's pieces are rendered ahead, in windows that double up
// to 16 MiB (or one piece), split over every core; a seek renders one
// piece. Before a window that goes on from the last one, the renderer
// releases the cells before it (CellRenderer::Release). A piece that does
// not render to the size its layout says is kCorrupt (a renderer that is
// not deterministic): never silently wrong bytes. Reads of one file are
// serialised. ReadPieces hands out the rendered text itself (no copy): a
// piece a reply still holds is never rendered over, its window slot takes
// a new buffer instead.
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
