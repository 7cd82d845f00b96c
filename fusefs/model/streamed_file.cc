#include "fusefs/model/streamed_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <functional>
#include <mutex>
#include <thread>

#include "core/util/byte_reader.h"
#include "core/util/byte_writer.h"
#include "core/util/parallel.h"
#include "core/util/stop.h"
#include "fusefs/render/csv.h"

namespace tiledbfs::fusefs {

const core::Enumeration* EnumerationFor(const core::ArraySchema& schema,
                                        const std::vector<core::Enumeration>& enums,
                                        const std::string& field) {
  int a = schema.AttributeIndex(field);
  if (a < 0 || !schema.attributes[a].enumeration_name) return nullptr;
  for (const auto& e : enums) {
    if (e.name == *schema.attributes[a].enumeration_name) return &e;
  }
  return nullptr;
}

using core::Error;

core::Status CellRenderer::Measure(uint64_t first, uint64_t count, uint64_t piece,
                                   std::vector<uint64_t>& sizes, core::ReadState* state) const {
  std::string buf;
  for (uint64_t at = first; at < first + count; at += piece) {
    buf.clear();
    TRY(Render(at, std::min(piece, first + count - at), buf, state));
    sizes.push_back(buf.size());
  }
  return core::Ok();
}

core::Result<std::optional<uint64_t>> CellRenderer::MeasureAll(uint64_t) const {
  return std::optional<uint64_t>();
}

namespace {

void SaveLayout(core::ByteWriter& w, const StreamLayout& l) {
  w.PutName64(l.header).PutName64(l.trailer);
  w.Put<uint64_t>(l.cells).Put<uint64_t>(l.piece_cells).Put<uint64_t>(l.batch_cells);
  w.Put<uint64_t>(l.body_end).Put<uint64_t>(l.pieces());
  for (uint64_t j = 0; j <= l.pieces(); ++j) w.Put<uint64_t>(l.starts->Start(j));
}

Result<StreamLayout> LoadLayout(core::ByteReader& r) {
  auto bad = [](std::string_view what) {
    return Error::Corrupt(fmt::format("saved layout: {}", what));
  };
  StreamLayout l;
  ASSIGN_OR_RETURN(uint64_t header, r.Read<uint64_t>("header size"));
  ASSIGN_OR_RETURN(l.header, r.ReadString(header, "header"));
  ASSIGN_OR_RETURN(uint64_t trailer, r.Read<uint64_t>("trailer size"));
  ASSIGN_OR_RETURN(l.trailer, r.ReadString(trailer, "trailer"));
  ASSIGN_OR_RETURN(l.cells, r.Read<uint64_t>("cells"));
  ASSIGN_OR_RETURN(l.piece_cells, r.Read<uint64_t>("piece cells"));
  ASSIGN_OR_RETURN(l.batch_cells, r.Read<uint64_t>("batch cells"));
  ASSIGN_OR_RETURN(l.body_end, r.Read<uint64_t>("body end"));
  ASSIGN_OR_RETURN(uint64_t pieces, r.Read<uint64_t>("pieces"));
  if (l.piece_cells == 0 || l.batch_cells == 0) return bad("no cells per piece");
  if (pieces != l.cells / l.piece_cells + (l.cells % l.piece_cells != 0)) {
    return bad("pieces that do not cover the cells");
  }
  if (pieces >= r.remaining() / 8) return bad("more pieces than bytes");
  std::vector<uint64_t> starts(pieces + 1);
  for (uint64_t& start : starts) {
    ASSIGN_OR_RETURN(start, r.Read<uint64_t>("piece start"));
    if (&start != starts.data() && start < (&start)[-1]) return bad("piece starts descend");
  }
  if (starts.front() != l.header.size() || starts.back() != l.body_end) {
    return bad("pieces that do not run from the header to the body's end");
  }
  l.starts = std::make_shared<PieceStarts>(std::move(starts));
  return l;
}

}  // namespace

std::string SaveIndexedView(const IndexedView& view) {
  core::ByteWriter w;
  w.Put<uint32_t>(kIndexedViewFormat).PutName64(view.counts);
  SaveLayout(w, view.layouts.csv);
  for (const auto* group : {&view.layouts.txt, &view.layouts.var_data}) {
    w.Put<uint64_t>(group->size());
    for (const auto& [field, layout] : *group) {
      w.PutName64(field);
      SaveLayout(w, layout);
    }
  }
  w.Put<uint64_t>(view.layouts.parquet.size());
  for (const auto& [field, counts] : view.layouts.parquet) {
    w.PutName64(field).Put<uint8_t>((counts.utf8 ? 1 : 0) | (counts.labeled ? 2 : 0));
    for (const auto* v : {&counts.valid, &counts.bytes, &counts.empty, &counts.ends}) {
      w.Put<uint64_t>(v->size());
      for (uint64_t x : *v) w.Put<uint64_t>(x);
    }
  }
  return std::string(reinterpret_cast<const char*>(w.bytes().data()), w.size());
}

Result<IndexedView> LoadIndexedView(std::string_view saved) {
  core::ByteReader r(core::AsBytes(saved));
  ASSIGN_OR_RETURN(uint32_t format, r.Read<uint32_t>("format"));
  if (format != kIndexedViewFormat) return Error::Corrupt("saved view: another format");
  IndexedView out;
  ASSIGN_OR_RETURN(uint64_t counts, r.Read<uint64_t>("counts size"));
  ASSIGN_OR_RETURN(out.counts, r.ReadString(counts, "counts"));
  ASSIGN_OR_RETURN(out.layouts.csv, LoadLayout(r));
  for (auto* group : {&out.layouts.txt, &out.layouts.var_data}) {
    ASSIGN_OR_RETURN(uint64_t n, r.Read<uint64_t>("layouts"));
    if (n > r.remaining() / 8) return Error::Corrupt("saved view: more layouts than bytes");
    for (uint64_t i = 0; i < n; ++i) {
      ASSIGN_OR_RETURN(uint64_t len, r.Read<uint64_t>("field name size"));
      ASSIGN_OR_RETURN(std::string field, r.ReadString(len, "field name"));
      ASSIGN_OR_RETURN((*group)[field], LoadLayout(r));
    }
  }
  ASSIGN_OR_RETURN(uint64_t counted, r.Read<uint64_t>("counted fields"));
  if (counted > r.remaining() / 8) return Error::Corrupt("saved view: more counts than bytes");
  for (uint64_t i = 0; i < counted; ++i) {
    ASSIGN_OR_RETURN(uint64_t len, r.Read<uint64_t>("field name size"));
    ASSIGN_OR_RETURN(std::string field, r.ReadString(len, "field name"));
    ParquetCounts& counts = out.layouts.parquet[field];
    ASSIGN_OR_RETURN(uint8_t flags, r.Read<uint8_t>("flags"));
    counts.utf8 = (flags & 1) != 0;
    counts.labeled = (flags & 2) != 0;
    for (auto* v : {&counts.valid, &counts.bytes, &counts.empty, &counts.ends}) {
      ASSIGN_OR_RETURN(uint64_t n, r.Read<uint64_t>("counts"));
      if (n > r.remaining() / 8) return Error::Corrupt("saved view: more counts than bytes");
      v->resize(n);
      for (uint64_t& x : *v) {
        ASSIGN_OR_RETURN(x, r.Read<uint64_t>("count"));
        // Running totals ascend (ends are values, in any order).
        if (v != &counts.ends && &x != v->data() && x < (&x)[-1]) {
          return Error::Corrupt("saved view: counts descend");
        }
      }
    }
  }
  if (!r.empty()) return Error::Corrupt("saved view: bytes past the end");
  return out;
}

uint64_t DefaultPieceCells(uint64_t cells) {
  constexpr uint64_t kMin = 4096, kMaxPieces = 65536;
  return std::max(kMin, (cells + kMaxPieces - 1) / kMaxPieces);
}

PieceStarts::PieceStarts(std::vector<uint64_t> all)
    : starts_(std::move(all)), pieces_(starts_.size() - 1), end_(starts_.back()) {}

PieceStarts::PieceStarts(uint64_t first, uint64_t pieces, uint64_t end)
    : pieces_(pieces), end_(end) {
  starts_.reserve(pieces + 1);
  starts_.push_back(first);
}

uint64_t PieceStarts::known() const {
  std::lock_guard<std::mutex> lock(mu_);
  return starts_.size() - 1;
}

uint64_t PieceStarts::Start(uint64_t j) const {
  std::lock_guard<std::mutex> lock(mu_);
  return starts_[std::min<uint64_t>(j, starts_.size() - 1)];
}

std::optional<uint64_t> PieceStarts::Find(uint64_t offset) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (offset < starts_.front() || offset >= starts_.back()) return std::nullopt;
  auto it = std::upper_bound(starts_.begin(), starts_.end(), offset);
  return static_cast<uint64_t>(it - starts_.begin()) - 1;
}

core::Status PieceStarts::Record(uint64_t j, uint64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t known = starts_.size() - 1;
  if (j < known) {
    if (starts_[j + 1] - starts_[j] == size) return core::Ok();
    return Error::Corrupt(fmt::format("piece {} rendered to {} bytes, {} before", j, size,
                                      starts_[j + 1] - starts_[j]));
  }
  if (j > known || j >= pieces_) {
    return Error::InvalidArgument(
        fmt::format("piece {} recorded, {} of {} known", j, known, pieces_));
  }
  const uint64_t end = starts_.back() + size;
  if (j + 1 == pieces_ ? end != end_ : end > end_) {
    return Error::Corrupt(
        fmt::format("pieces 0 to {} end at byte {}, the layout measured {}", j, end, end_));
  }
  starts_.push_back(end);
  return core::Ok();
}

namespace {

// Runs task(i, state) for every i < n on every core, each worker with a
// read state of its own. The first failed task's error (by i) is the
// result; once one fails, tasks not started yet are skipped. Once the
// process is stopping (core/util/stop.h), a task not started yet fails with
// kCancelled instead of running (a batch of cells may render for a while
// from tiles already decoded).
core::Status RunOnEveryCore(size_t n,
                            const std::function<core::Status(size_t, core::ReadState*)>& task) {
  std::vector<core::Status> status(n, core::Ok());
  std::atomic<bool> failed{false};
  std::mutex states_mu;
  std::vector<std::unique_ptr<core::ReadState>> states;  // free ones
  core::ParallelFor(n, [&](size_t i) {
    if (failed.load()) return;
    if (core::StopRequested()) {
      status[i] = core::CheckStop("a pass over the cells");
      failed = true;
      return;
    }
    std::unique_ptr<core::ReadState> state;
    {
      std::lock_guard<std::mutex> lock(states_mu);
      if (!states.empty()) {
        state = std::move(states.back());
        states.pop_back();
      }
    }
    if (!state) state = std::make_unique<core::ReadState>();
    status[i] = task(i, state.get());
    if (!status[i].ok()) failed = true;
    std::lock_guard<std::mutex> lock(states_mu);
    states.push_back(std::move(state));
  });
  for (auto& st : status) TRY(st);
  return core::Ok();
}

// The sizes of the pieces of cells [first, first + count) (first a
// multiple of piece), measured in batches on every core.
core::Result<std::vector<uint64_t>> MeasurePieces(const CellRenderer& renderer, uint64_t first,
                                                  uint64_t count, uint64_t piece,
                                                  uint64_t batch_cells) {
  uint64_t batch = std::max(batch_cells, piece);
  batch = (batch / piece) * piece;
  const uint64_t batches = count / batch + (count % batch != 0 ? 1 : 0);
  std::vector<std::vector<uint64_t>> sizes(batches);
  TRY(RunOnEveryCore(batches, [&](size_t b, core::ReadState* state) -> core::Status {
    const uint64_t at = first + b * batch, n = std::min(batch, first + count - at);
    TRY(renderer.Measure(at, n, piece, sizes[b], state));
    const uint64_t expected = n / piece + (n % piece != 0 ? 1 : 0);
    if (sizes[b].size() != expected) {
      return Error::Corrupt(fmt::format("layout of cells [{}, +{}): {} piece sizes for {} pieces",
                                        at, n, sizes[b].size(), expected));
    }
    return core::Ok();
  }));
  std::vector<uint64_t> all;
  for (auto& v : sizes) all.insert(all.end(), v.begin(), v.end());
  return all;
}

// A layout of `header` and the pieces of `sizes`.
StreamLayout LayoutOf(std::string header, const std::vector<uint64_t>& sizes, uint64_t cells,
                      uint64_t piece, uint64_t batch) {
  StreamLayout layout;
  layout.header = std::move(header);
  layout.cells = cells;
  layout.piece_cells = piece;
  layout.batch_cells = batch;
  std::vector<uint64_t> starts;
  starts.reserve(sizes.size() + 1);
  uint64_t at = layout.header.size();
  starts.push_back(at);
  for (uint64_t size : sizes) starts.push_back(at += size);
  layout.body_end = at;
  layout.starts = std::make_shared<PieceStarts>(std::move(starts));
  return layout;
}

}  // namespace

core::Result<StreamLayout> ComputeStreamLayout(const CellRenderer& renderer, std::string header,
                                               std::string trailer, uint64_t cells,
                                               uint64_t piece_cells, uint64_t batch_cells) {
  StreamLayout layout;
  layout.header = std::move(header);
  layout.trailer = std::move(trailer);
  layout.cells = cells;
  layout.piece_cells = std::max<uint64_t>(piece_cells, 1);
  layout.batch_cells = std::max<uint64_t>(batch_cells, 1);
  const uint64_t piece = layout.piece_cells;
  const uint64_t pieces = cells / piece + (cells % piece != 0 ? 1 : 0);
  ASSIGN_OR_RETURN(std::optional<uint64_t> total, renderer.MeasureAll(layout.batch_cells));
  if (total) {
    layout.body_end = layout.header.size() + *total;
    layout.starts = std::make_shared<PieceStarts>(layout.header.size(), pieces, layout.body_end);
    return layout;
  }
  ASSIGN_OR_RETURN(std::vector<uint64_t> sizes,
                   MeasurePieces(renderer, 0, cells, piece, layout.batch_cells));
  StreamLayout measured =
      LayoutOf(std::move(layout.header), sizes, cells, piece, layout.batch_cells);
  measured.trailer = std::move(layout.trailer);
  return measured;
}

namespace {

// kCorrupt where a var-sized column's offsets do not fit its cells (below).
core::Status CheckVarColumn(const core::Column& c, uint64_t first, uint64_t count);

}  // namespace

core::Result<ViewLayouts> ComputeViewLayouts(const core::ArrayView& view,
                                             const std::vector<std::string>& fields,
                                             const std::vector<core::Enumeration>* enums,
                                             uint64_t cells, uint64_t piece_cells,
                                             uint64_t batch_cells) {
  const uint64_t piece = std::max<uint64_t>(piece_cells, 1);
  uint64_t batch = std::max(batch_cells, piece);
  batch = (batch / piece) * piece;
  const uint64_t pieces = cells / piece + (cells % piece != 0 ? 1 : 0);
  const uint64_t batches = cells / batch + (cells % batch != 0 ? 1 : 0);
  const size_t nf = fields.size();
  std::vector<const core::Enumeration*> field_enums;
  for (const std::string& f : fields) {
    field_enums.push_back(enums ? EnumerationFor(view.schema(), *enums, f) : nullptr);
  }
  // Per field, its .txt and var-sized bytes of every piece (the latter
  // left empty for a fixed-size field); each batch fills its own pieces.
  std::vector<std::vector<uint64_t>> txt(nf, std::vector<uint64_t>(pieces, 0));
  std::vector<std::vector<uint64_t>> bin(nf);
  std::vector<bool> var(nf, false);
  for (size_t k = 0; k < nf; ++k) {
    const core::ArraySchema& schema = view.schema();
    const int d = schema.DimensionIndex(fields[k]);
    const int a = schema.AttributeIndex(fields[k]);
    var[k] = d >= 0 ? schema.dimensions[d].var() : a >= 0 && schema.attributes[a].var();
    if (var[k]) bin[k].assign(pieces, 0);
  }
  // data.parquet's counts, for the fields that need them.
  std::vector<ParquetNeeds> needs(nf);
  std::vector<ParquetCounts> counts(nf);
  auto not_utf8 = std::make_unique<std::atomic<bool>[]>(nf);
  auto unlabeled = std::make_unique<std::atomic<bool>[]>(nf);
  for (size_t k = 0; k < nf; ++k) {
    const core::ArraySchema& schema = view.schema();
    const int d = schema.DimensionIndex(fields[k]);
    const int a = schema.AttributeIndex(fields[k]);
    if (d >= 0) {
      needs[k] = ParquetNeedsOf(schema.dimensions[d].type, schema.dimensions[d].cell_val_num, false,
                                true, nullptr);
    } else if (a >= 0) {
      const core::Attribute& attr = schema.attributes[a];
      needs[k] = ParquetNeedsOf(attr.type, attr.cell_val_num, attr.nullable, false, field_enums[k]);
    }
    if (needs[k].valid) counts[k].valid.assign(pieces + 1, 0);
    if (needs[k].bytes) counts[k].bytes.assign(pieces + 1, 0);
    if (needs[k].empty) counts[k].empty.assign(pieces + 1, 0);
    if (k == 0 && d == 0 &&
        ParquetEndsWanted(schema.dimensions[0].type, schema.dimensions[0].cell_val_num)) {
      counts[k].ends.assign(2 * pieces, 0);
    }
  }
  TRY(RunOnEveryCore(batches, [&](size_t b, core::ReadState* state) -> core::Status {
    const uint64_t at = b * batch, n = std::min(batch, cells - at);
    const uint64_t first_piece = at / piece;
    for (size_t k = 0; k < nf; ++k) {
      ASSIGN_OR_RETURN(core::Column c, view.ReadFieldRange(fields[k], at, n, state));
      ASSIGN_OR_RETURN(CsvTable table, CsvTable::Make({{&c, field_enums[k]}}, false));
      if (var[k]) TRY(CheckVarColumn(c, at, n));
      if (!counts[k].ends.empty()) ParquetPieceEnds(c, first_piece, piece, counts[k]);
      if (needs[k].any()) {
        const ParquetFlags flags = ParquetCountPieces(c, needs[k], first_piece, piece, counts[k]);
        if (!flags.utf8) not_utf8[k] = true;
        if (!flags.labeled) unlabeled[k] = true;
      }
      for (uint64_t p = 0, j = first_piece; p < n; p += piece, ++j) {
        const uint64_t e = std::min(n, p + piece);
        txt[k][j] = table.MeasureRows(p, e);
        if (var[k]) bin[k][j] = c.offsets[e] - c.offsets[p];
      }
    }
    return core::Ok();
  }));
  ViewLayouts out;
  std::vector<uint64_t> csv(pieces, 0);
  for (size_t k = 0; k < nf; ++k) {
    for (uint64_t j = 0; j < pieces; ++j) csv[j] += txt[k][j];
    out.txt[fields[k]] = LayoutOf("", txt[k], cells, piece, batch);
    if (var[k]) out.var_data[fields[k]] = LayoutOf("", bin[k], cells, piece, batch);
    if (needs[k].any() || !counts[k].ends.empty()) {
      ParquetRunningTotals(counts[k]);
      counts[k].utf8 = !not_utf8[k];
      counts[k].labeled = !unlabeled[k];
      out.parquet[fields[k]] = std::move(counts[k]);
    }
  }
  out.csv = LayoutOf(CsvHeaderLine(fields), csv, cells, piece, batch);
  return out;
}

namespace {

// Where a read's bytes go: copied into a buffer (Read), or handed out as
// pieces of the memory that holds them (ReadPieces).
struct ReadTarget {
  uint8_t* buf = nullptr;          // buf[0] is file byte `offset`
  core::Pieces* pieces = nullptr;  // or appended here, in file order
  uint64_t offset = 0;
  uint64_t end = 0;
};

// The part of file bytes [from, from + src.size()) that falls in the read,
// to it; `owner` (for pieces) holds src.
void CopyOverlap(std::string_view src, uint64_t from, const ReadTarget& t,
                 const std::shared_ptr<const void>& owner) {
  uint64_t a = std::max(from, t.offset), b = std::min(from + src.size(), t.end);
  if (a >= b) return;
  const char* p = src.data() + (a - from);
  if (t.pieces == nullptr) {
    std::memcpy(t.buf + (a - t.offset), p, b - a);
    return;
  }
  t.pieces->Add(reinterpret_cast<const uint8_t*>(p), b - a);
  if (t.pieces->keep.empty() || t.pieces->keep.back() != owner) t.pieces->keep.push_back(owner);
}

class StreamedFile final : public OpenFile {
 public:
  StreamedFile(std::shared_ptr<const StreamLayout> layout,
               std::shared_ptr<const CellRenderer> renderer)
      : layout_(std::move(layout)), renderer_(std::move(renderer)) {
    workers_ = std::clamp<unsigned>(core::UsableCores(), 1, kMaxWorkers);
  }

  uint64_t size() const override { return layout_->size(); }

  Result<size_t> Read(uint64_t offset, std::span<uint8_t> out) override {
    return ReadTo(offset, out.size(), out.data(), nullptr);
  }
  // The rendered pieces go out as they are, without a copy into the
  // reader's buffer.
  bool ReadsPieces() const override { return true; }
  Result<size_t> ReadPieces(uint64_t offset, size_t n, core::Pieces* out) override {
    return ReadTo(offset, n, nullptr, out);
  }

 private:
  Result<size_t> ReadTo(uint64_t offset, size_t n, uint8_t* buf, core::Pieces* pieces) {
    const StreamLayout& l = *layout_;
    PieceStarts& s = *l.starts;
    const uint64_t size = l.size();
    if (offset >= size || n == 0) return size_t{0};
    const ReadTarget t{buf, pieces, offset, offset + std::min<uint64_t>(n, size - offset)};
    // In file order: the header, the pieces, the trailer.
    CopyOverlap(l.header, 0, t, layout_);
    if (l.pieces() > 0 && offset < l.body_end && t.end > l.header.size()) {
      std::lock_guard<std::mutex> lock(mu_);
      TRY(Reach(offset));
      // The piece holding offset (empty pieces before it skipped), or the
      // first one for a read that starts in the header.
      uint64_t j = s.Find(offset).value_or(0);
      for (; j < l.pieces() && s.Start(j) < t.end; ++j) {
        ASSIGN_OR_RETURN(const std::shared_ptr<std::string>* text, Piece(j));
        CopyOverlap(**text, s.Start(j), t, *text);
      }
    }
    CopyOverlap(l.trailer, l.body_end, t, layout_);
    return static_cast<size_t>(t.end - offset);
  }

  // Pieces rendered ahead of a sequential reader: up to this many bytes (a
  // window of pieces, at least one) ... Large enough that the cores do not
  // idle between windows while FUSE hands the bytes out and the kernel asks
  // for more. A reader keeps its window's text: 16 MiB at most.
  static constexpr uint64_t kAheadBytes = uint64_t{16} << 20;
  // ... and this many pieces, rendered by up to kMaxWorkers threads.
  static constexpr uint64_t kMaxAhead = 256;
  static constexpr unsigned kMaxWorkers = 4;

  // A piece's text is shared with the replies that hand it out
  // (ReadPieces): a slot renders into a new buffer while one holds it.
  struct Slot {
    core::Status status = core::Ok();
    std::shared_ptr<std::string> text = std::make_shared<std::string>();
  };

  // Piece j's bytes, valid until the next call (mu_ held). The window holds
  // the pieces [first_, first_ + count_) rendered last, in buffers reused
  // from window to window (no fresh memory per read). A miss just past the
  // window (a sequential reader) renders a window twice as long as the last
  // one, up to kAheadBytes, its pieces rendered on every core (each worker
  // with its own read state: the tiles a run needs are decoded once, into
  // the shared cache, by the first worker to reach them); any other miss
  // renders that piece alone.
  Result<const std::shared_ptr<std::string>*> Piece(uint64_t j) {
    const StreamLayout& l = *layout_;
    PieceStarts& s = *l.starts;
    if (j < first_ || j - first_ >= count_) {
      uint64_t want = 1;
      if (count_ > 0 && j == first_ + count_) {
        want = std::min(2 * count_, kMaxAhead);
        // Going on: the cells before the window are done with.
        const uint64_t done = j * l.piece_cells;
        if (done > released_) renderer_->Release(released_, done);
        released_ = done;
      }
      // A piece's size: known, or else the average.
      const uint64_t known = s.known();
      const uint64_t average = (l.body_end - l.header.size()) / l.pieces();
      auto bytes_of = [&](uint64_t k) { return k < known ? s.Start(k + 1) - s.Start(k) : average; };
      uint64_t n = 1, bytes = bytes_of(j);
      while (n < want && j + n < l.pieces()) {
        bytes += bytes_of(j + n);
        if (bytes > kAheadBytes) break;
        ++n;
      }
      Render(j, n);
      // The window's sizes, in order up to the first failure: they extend
      // a lazy layout's known starts (and are checked against known ones).
      for (uint64_t k = 0; k < n; ++k) {
        Slot& slot = window_[k];
        if (slot.status.ok()) slot.status = s.Record(j + k, slot.text->size());
        if (!slot.status.ok()) break;
      }
    }
    Slot& slot = window_[j - first_];
    TRY(slot.status);
    return &slot.text;
  }

  // Makes the start of a piece past `offset` known, or every start: a
  // reader within kAheadBytes of the known starts renders forward from
  // them (as a sequential reader would); one further ahead has every piece
  // left measured first (the pass an eager layout makes up front).
  core::Status Reach(uint64_t offset) {
    PieceStarts& s = *layout_->starts;
    while (true) {
      const uint64_t k = s.known();
      if (k == s.pieces() || s.Start(k) > offset) return core::Ok();
      if (offset - s.Start(k) > kAheadBytes) return MeasureRest();
      TRY(Piece(k));
      if (s.known() <= k) {
        return Error::Corrupt(fmt::format("piece {} rendered but its size not recorded", k));
      }
    }
  }

  core::Status MeasureRest() {
    const StreamLayout& l = *layout_;
    PieceStarts& s = *l.starts;
    std::lock_guard<std::mutex> lock(s.measuring());
    const uint64_t k = s.known();
    if (k == l.pieces()) return core::Ok();
    const uint64_t first = k * l.piece_cells;
    ASSIGN_OR_RETURN(std::vector<uint64_t> sizes, MeasurePieces(*renderer_, first, l.cells - first,
                                                                l.piece_cells, l.batch_cells));
    for (uint64_t i = 0; i < sizes.size(); ++i) TRY(s.Record(k + i, sizes[i]));
    return core::Ok();
  }

  // Renders pieces [j, j + n) into the window.
  void Render(uint64_t j, uint64_t n) {
    if (window_.size() < n) window_.resize(n);
    first_ = j;
    count_ = n;
    const uint64_t workers = std::min<uint64_t>(workers_, n);
    // The caller (worker 0) takes pieces from the front, the helpers from
    // the back, each the next one not taken: the runs stay contiguous, and
    // a helper that starts late or is descheduled on a busy machine holds
    // up the window by at most the one piece it is rendering.
    std::mutex claim_mu;
    uint64_t front = 0, back = n;  // pieces [front, back) not taken yet
    auto run = [&](size_t w) {
      while (true) {
        uint64_t k;
        {
          std::lock_guard<std::mutex> lock(claim_mu);
          if (front >= back) return;
          k = w == 0 ? front++ : --back;
        }
        Slot& slot = window_[k];
        // Held by a reply still: this piece gets a buffer of its own. (The
        // count only falls while mu_ is held: no new holder can appear.)
        if (slot.text.use_count() > 1) slot.text = std::make_shared<std::string>();
        slot.status = RenderPiece(j + k, *slot.text, &states_[w]);
      }
    };
    if (workers == 1) {
      run(0);
    } else {
      core::ParallelFor(workers, run, static_cast<unsigned>(workers));
    }
  }

  core::Status RenderPiece(uint64_t j, std::string& text, core::ReadState* state) const {
    const StreamLayout& l = *layout_;
    const PieceStarts& s = *l.starts;
    const uint64_t first = j * l.piece_cells;
    const uint64_t count = std::min(l.piece_cells, l.cells - first);
    // The piece's size if known, else the average (for the buffer).
    std::optional<uint64_t> expected;
    if (j < s.known()) expected = s.Start(j + 1) - s.Start(j);
    const uint64_t room = expected ? *expected : (l.body_end - l.header.size()) / l.pieces();
    text.clear();
    // Give back the room a much larger piece needed.
    if (text.capacity() > (uint64_t{4} << 20) && text.capacity() > 4 * room) {
      text.shrink_to_fit();
    }
    // Room for the piece and for the widest value a renderer reserves at
    // its end, so that the buffer does not reallocate.
    text.reserve(room + 64);
    core::Status rendered = renderer_->Render(first, count, text, state);
    // The layout's cells are past the view's: the layout (kept by the
    // persistent index, say) is not of these cells.
    auto mismatch = [&l](std::string why) {
      if (l.on_mismatch) l.on_mismatch(why);
      return Error::Corrupt(std::move(why));
    };
    if (!rendered.ok() && rendered.error().code() == core::ErrorCode::kInvalidArgument) {
      return mismatch(fmt::format("cells [{}, +{}) of a layout of {}: {}", first, count, l.cells,
                                  rendered.error().message()));
    }
    TRY(rendered);
    if (expected && text.size() != *expected) {
      return mismatch(fmt::format("cells [{}, +{}) rendered to {} bytes, layout says {}", first,
                                  count, text.size(), *expected));
    }
    return core::Ok();
  }

  std::shared_ptr<const StreamLayout> layout_;
  std::shared_ptr<const CellRenderer> renderer_;
  std::mutex mu_;
  unsigned workers_ = 1;
  std::vector<Slot> window_;
  uint64_t first_ = 0, count_ = 0;
  uint64_t released_ = 0;                // the cells before it are released (Release)
  core::ReadState states_[kMaxWorkers];  // the tiles each worker's reads keep
};

class FieldRangeFile final : public OpenFile {
 public:
  FieldRangeFile(std::shared_ptr<const core::ArrayView> view, std::string field, FieldPart part,
                 std::string header, uint64_t cells, uint64_t stride)
      : view_(std::move(view)),
        field_(std::move(field)),
        part_(part),
        header_(std::move(header)),
        cells_(cells),
        stride_(stride) {
    state_.parts = true;  // a seek decodes only the chunks it needs
    // Values of a fixed-size attribute with cells of the stride can be
    // gathered straight into the reader's buffer.
    const core::ArraySchema& schema = view_->schema();
    const int a = schema.AttributeIndex(field_);
    direct_ = part_ == FieldPart::kData && a >= 0 && !schema.attributes[a].var() &&
              schema.attributes[a].cell_size() == stride_;
  }

  uint64_t size() const override { return header_.size() + cells_ * stride_; }

  Result<size_t> Read(uint64_t offset, std::span<uint8_t> out) override {
    return ReadTo(offset, out.size(), out.data(), nullptr);
  }
  bool ReadsPieces() const override { return direct_; }
  Result<size_t> ReadPieces(uint64_t offset, size_t n, core::Pieces* out) override {
    return ReadTo(offset, n, nullptr, out);
  }

 private:
  // Bytes [offset, offset + n) to `buf`, or appended to `pieces`.
  Result<size_t> ReadTo(uint64_t offset, size_t n, uint8_t* buf, core::Pieces* pieces) {
    uint64_t end = std::min<uint64_t>(size(), offset + n);
    if (offset >= end) return size_t{0};
    // Where the k bytes after the first `done` go.
    auto dst = [&](size_t done, uint64_t k) {
      return pieces != nullptr ? pieces->AddOwned(k) : buf + done;
    };
    size_t done = 0;
    if (offset < header_.size()) {
      size_t k = std::min<uint64_t>(header_.size() - offset, end - offset);
      std::memcpy(dst(done, k), header_.data() + offset, k);
      done += k;
      offset += k;
    }
    if (offset < end) {
      uint64_t data_from = offset - header_.size(), data_to = end - header_.size();
      uint64_t first = data_from / stride_;
      uint64_t last = (data_to + stride_ - 1) / stride_;
      // The file's read state serves one read at a time; a read made while
      // another is under way goes without.
      std::unique_lock<std::mutex> lock(mu_, std::try_to_lock);
      core::ReadState* state = lock.owns_lock() ? &state_ : nullptr;
      uint64_t skip = data_from - first * stride_;
      uint64_t k = data_to - data_from;
      // Whole cells of the values: gathered straight into `buf`, or handed
      // as pieces of the tiles.
      const bool direct = direct_ && skip == 0 && k == (last - first) * stride_;
      const uint64_t had = pieces != nullptr ? pieces->bytes : 0;
      ASSIGN_OR_RETURN(core::Column c,
                       view_->ReadFieldRange(field_, first, last - first, state,
                                             direct && pieces == nullptr ? buf + done : nullptr,
                                             direct ? pieces : nullptr));
      if (direct && pieces != nullptr && pieces->bytes - had != k) {
        return Error::Corrupt(fmt::format("{}: {} bytes gathered for cells [{}, {}), expected {}",
                                          field_, pieces->bytes - had, first, last, k));
      }
      if (direct) return done + k;
      const core::ByteVec& bytes = part_ == FieldPart::kData ? c.data : c.validity;
      if (bytes.size() != (last - first) * stride_) {
        return Error::Corrupt(fmt::format("{}: {} bytes decoded for cells [{}, {}), expected {}",
                                          field_, bytes.size(), first, last,
                                          (last - first) * stride_));
      }
      std::memcpy(dst(done, k), bytes.data() + skip, k);
      done += k;
    }
    return done;
  }

  std::shared_ptr<const core::ArrayView> view_;
  std::string field_;
  FieldPart part_;
  std::string header_;
  uint64_t cells_;
  uint64_t stride_;
  bool direct_ = false;
  std::mutex mu_;
  core::ReadState state_;  // the tiles this file's reads keep (mu_)
};

class CsvRenderer final : public CellRenderer {
 public:
  CsvRenderer(std::shared_ptr<const core::ArrayView> view, std::vector<std::string> fields,
              std::shared_ptr<const std::vector<core::Enumeration>> enums)
      : view_(std::move(view)), fields_(std::move(fields)), enums_(std::move(enums)) {
    for (const auto& f : fields_) {
      field_enums_.push_back(enums_ ? EnumerationFor(view_->schema(), *enums_, f) : nullptr);
    }
  }

  core::Status Render(uint64_t first, uint64_t count, std::string& out,
                      core::ReadState* state) const override {
    std::vector<core::Column> cols;
    ASSIGN_OR_RETURN(CsvTable table, Table(first, count, cols, state));
    table.AppendRows(out, 0, count);
    return core::Ok();
  }

  void Release(uint64_t from, uint64_t to) const override {
    std::vector<std::string> attrs;
    for (const std::string& f : fields_) {
      if (view_->schema().DimensionIndex(f) < 0) attrs.push_back(f);
    }
    view_->ReleaseTiles(attrs, from, to);
  }

  core::Status Measure(uint64_t first, uint64_t count, uint64_t piece, std::vector<uint64_t>& sizes,
                       core::ReadState* state) const override {
    std::vector<core::Column> cols;
    ASSIGN_OR_RETURN(CsvTable table, Table(first, count, cols, state));
    for (uint64_t at = 0; at < count; at += piece) {
      sizes.push_back(table.MeasureRows(at, std::min(count, at + piece)));
    }
    return core::Ok();
  }

 private:
  // Reads the fields' cells [first, first + count) into `cols` (which the
  // table points into).
  core::Result<CsvTable> Table(uint64_t first, uint64_t count, std::vector<core::Column>& cols,
                               core::ReadState* state) const {
    cols.reserve(fields_.size());
    for (const auto& f : fields_) {
      ASSIGN_OR_RETURN(core::Column c, view_->ReadFieldRange(f, first, count, state));
      cols.push_back(std::move(c));
    }
    std::vector<CsvColumn> cc;
    for (size_t k = 0; k < cols.size(); ++k) cc.push_back({&cols[k], field_enums_[k]});
    return CsvTable::Make(std::move(cc), false);
  }

  std::shared_ptr<const core::ArrayView> view_;
  std::vector<std::string> fields_;
  std::shared_ptr<const std::vector<core::Enumeration>> enums_;
  std::vector<const core::Enumeration*> field_enums_;
};

// Checks a var-sized column from ReadFieldRange: offsets from 0, count + 1
// of them, non-decreasing, ending at data.size().
core::Status CheckVarColumn(const core::Column& c, uint64_t first, uint64_t count) {
  bool ok =
      c.offsets.size() == count + 1 && c.offsets.front() == 0 && c.offsets.back() == c.data.size();
  for (uint64_t k = 0; ok && k < count; ++k) ok = c.offsets[k] <= c.offsets[k + 1];
  if (!ok) {
    return Error::Corrupt(
        fmt::format("{}: inconsistent offsets for cells [{}, +{})", c.name, first, count));
  }
  return core::Ok();
}

class VarDataRenderer final : public CellRenderer {
 public:
  VarDataRenderer(std::shared_ptr<const core::ArrayView> view, std::string field)
      : view_(std::move(view)), field_(std::move(field)) {}

  core::Status Render(uint64_t first, uint64_t count, std::string& out,
                      core::ReadState* state) const override {
    ASSIGN_OR_RETURN(core::Column c, view_->ReadFieldRange(field_, first, count, state));
    TRY(CheckVarColumn(c, first, count));
    out.append(reinterpret_cast<const char*>(c.data.data()), c.data.size());
    return core::Ok();
  }

  void Release(uint64_t from, uint64_t to) const override {
    view_->ReleaseTiles({field_}, from, to);
  }

  core::Status Measure(uint64_t first, uint64_t count, uint64_t piece, std::vector<uint64_t>& sizes,
                       core::ReadState* state) const override {
    ASSIGN_OR_RETURN(core::Column c, view_->ReadFieldRange(field_, first, count, state));
    TRY(CheckVarColumn(c, first, count));
    for (uint64_t at = 0; at < count; at += piece) {
      uint64_t b = std::min(count, at + piece);
      sizes.push_back(c.offsets[b] - c.offsets[at]);
    }
    return core::Ok();
  }

 private:
  std::shared_ptr<const core::ArrayView> view_;
  std::string field_;
};

void AppendU64(std::string& out, uint64_t v) {
  char b[8];
  for (int k = 0; k < 8; ++k) b[k] = static_cast<char>(v >> (8 * k));
  out.append(b, 8);
}

class VarOffsetsRenderer final : public CellRenderer {
 public:
  VarOffsetsRenderer(std::shared_ptr<const core::ArrayView> view, std::string field,
                     std::shared_ptr<const StreamLayout> data)
      : view_(std::move(view)), field_(std::move(field)), data_(std::move(data)) {}

  core::Status Render(uint64_t first, uint64_t count, std::string& out,
                      core::ReadState* state) const override {
    const uint64_t piece = data_->piece_cells;
    const PieceStarts& starts = *data_->starts;
    if (first % piece != 0 || first / piece >= starts.known()) {
      return Error::InvalidArgument(
          fmt::format("{}.offsets: cell {} is not the start of a piece", field_, first));
    }
    uint64_t base = starts.Start(first / piece) - starts.Start(0);
    ASSIGN_OR_RETURN(core::Column c, view_->ReadFieldRange(field_, first, count, state));
    TRY(CheckVarColumn(c, first, count));
    for (uint64_t k = 0; k < count; ++k) AppendU64(out, base + c.offsets[k]);
    return core::Ok();
  }

  void Release(uint64_t from, uint64_t to) const override {
    view_->ReleaseTiles({field_}, from, to);
  }

  core::Status Measure(uint64_t first, uint64_t count, uint64_t piece, std::vector<uint64_t>& sizes,
                       core::ReadState*) const override {
    for (uint64_t at = 0; at < count; at += piece) {
      sizes.push_back(8 * (std::min(count, at + piece) - at));
    }
    return core::Ok();
  }

 private:
  std::shared_ptr<const core::ArrayView> view_;
  std::string field_;
  std::shared_ptr<const StreamLayout> data_;
};

}  // namespace

std::unique_ptr<OpenFile> MakeStreamedFile(std::shared_ptr<const StreamLayout> layout,
                                           std::shared_ptr<const CellRenderer> renderer) {
  return std::make_unique<StreamedFile>(std::move(layout), std::move(renderer));
}

std::unique_ptr<OpenFile> MakeFieldRangeFile(std::shared_ptr<const core::ArrayView> view,
                                             std::string field, FieldPart part, std::string header,
                                             uint64_t cells, uint64_t stride) {
  return std::make_unique<FieldRangeFile>(std::move(view), std::move(field), part,
                                          std::move(header), cells, stride);
}

std::shared_ptr<const CellRenderer> MakeCsvRenderer(
    std::shared_ptr<const core::ArrayView> view, std::vector<std::string> fields,
    std::shared_ptr<const std::vector<core::Enumeration>> enums) {
  return std::make_shared<CsvRenderer>(std::move(view), std::move(fields), std::move(enums));
}

std::string CsvHeaderLine(const std::vector<std::string>& fields) {
  std::string out;
  for (size_t k = 0; k < fields.size(); ++k) {
    if (k > 0) out += ',';
    AppendCsvField(out, fields[k]);
  }
  out += '\n';
  return out;
}

std::shared_ptr<const CellRenderer> MakeVarDataRenderer(std::shared_ptr<const core::ArrayView> view,
                                                        std::string field) {
  return std::make_shared<VarDataRenderer>(std::move(view), std::move(field));
}

std::shared_ptr<const CellRenderer> MakeVarOffsetsRenderer(
    std::shared_ptr<const core::ArrayView> view, std::string field,
    std::shared_ptr<const StreamLayout> data_layout) {
  return std::make_shared<VarOffsetsRenderer>(std::move(view), std::move(field),
                                              std::move(data_layout));
}

StreamLayout VarOffsetsLayout(const StreamLayout& data) {
  StreamLayout l;
  l.cells = data.cells;
  l.piece_cells = data.piece_cells;
  l.batch_cells = data.batch_cells;
  std::vector<uint64_t> starts;
  starts.reserve(data.pieces() + 1);
  for (uint64_t j = 0; j < data.pieces(); ++j) starts.push_back(8 * j * data.piece_cells);
  starts.push_back(8 * data.cells);
  l.body_end = starts.back();
  l.starts = std::make_shared<PieceStarts>(std::move(starts));
  AppendU64(l.trailer, data.body_end - data.header.size());
  return l;
}

}  // namespace tiledbfs::fusefs
