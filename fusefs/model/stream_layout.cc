#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <functional>
#include <mutex>

#include "core/util/byte_reader.h"
#include "core/util/byte_writer.h"
#include "core/util/parallel.h"
#include "core/util/stop.h"
#include "fusefs/model/streamed_file.h"
#include "fusefs/render/csv.h"

namespace tiledbfs::fusefs {

using core::Error;

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

}  // namespace

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

namespace {

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

// Every piece's measures of a view's text files (ComputeViewLayouts), before
// they become layouts: per field, its .txt and var-sized bytes per piece,
// and data.parquet's counts (each piece's own, at entry j + 1, made running
// by FinishLayouts).
struct PieceMeasures {
  std::vector<const core::Enumeration*> enums;
  std::vector<std::vector<uint64_t>> txt, bin;
  std::vector<bool> var;
  std::vector<ParquetNeeds> needs;
  std::vector<ParquetCounts> counts;
  std::vector<bool> not_utf8, unlabeled;
};

PieceMeasures NewMeasures(const core::ArraySchema& schema, const std::vector<std::string>& fields,
                          const std::vector<core::Enumeration>* enums, uint64_t pieces) {
  const size_t nf = fields.size();
  PieceMeasures m;
  m.txt.assign(nf, std::vector<uint64_t>(pieces, 0));
  m.bin.resize(nf);
  m.var.assign(nf, false);
  m.needs.resize(nf);
  m.counts.resize(nf);
  m.not_utf8.assign(nf, false);
  m.unlabeled.assign(nf, false);
  for (size_t k = 0; k < nf; ++k) {
    m.enums.push_back(enums ? EnumerationFor(schema, *enums, fields[k]) : nullptr);
    const int d = schema.DimensionIndex(fields[k]);
    const int a = schema.AttributeIndex(fields[k]);
    m.var[k] = d >= 0 ? schema.dimensions[d].var() : a >= 0 && schema.attributes[a].var();
    if (m.var[k]) m.bin[k].assign(pieces, 0);
    if (d >= 0) {
      m.needs[k] = ParquetNeedsOf(schema.dimensions[d].type, schema.dimensions[d].cell_val_num,
                                  false, true, nullptr);
    } else if (a >= 0) {
      const core::Attribute& attr = schema.attributes[a];
      m.needs[k] = ParquetNeedsOf(attr.type, attr.cell_val_num, attr.nullable, false, m.enums[k]);
    }
    ParquetCounts& c = m.counts[k];
    if (m.needs[k].valid) c.valid.assign(pieces + 1, 0);
    if (m.needs[k].bytes) c.bytes.assign(pieces + 1, 0);
    if (m.needs[k].empty) c.empty.assign(pieces + 1, 0);
    if (k == 0 && d == 0 &&
        ParquetEndsWanted(schema.dimensions[0].type, schema.dimensions[0].cell_val_num)) {
      c.ends.assign(2 * pieces, 0);
    }
  }
  return m;
}

// Measures cells [first, first + cells) of the view, cut in pieces of
// `piece` cells from `first`, into pieces first_piece, first_piece + 1, ...
// of `m`, in batches of `batch` cells (a multiple of piece) on every core.
core::Status MeasureInto(const core::ArrayView& view, const std::vector<std::string>& fields,
                         uint64_t first, uint64_t cells, uint64_t piece, uint64_t batch,
                         uint64_t first_piece, PieceMeasures& m) {
  const size_t nf = fields.size();
  const uint64_t batches = cells / batch + (cells % batch != 0 ? 1 : 0);
  auto not_utf8 = std::make_unique<std::atomic<bool>[]>(nf);
  auto unlabeled = std::make_unique<std::atomic<bool>[]>(nf);
  TRY(RunOnEveryCore(batches, [&](size_t b, core::ReadState* state) -> core::Status {
    const uint64_t at = b * batch, n = std::min(batch, cells - at);
    const uint64_t j0 = first_piece + at / piece;
    for (size_t k = 0; k < nf; ++k) {
      ASSIGN_OR_RETURN(core::Column c, view.ReadFieldRange(fields[k], first + at, n, state));
      ASSIGN_OR_RETURN(CsvTable table, CsvTable::Make({{&c, m.enums[k]}}, false));
      if (m.var[k]) TRY(CheckVarColumn(c, first + at, n));
      if (!m.counts[k].ends.empty()) ParquetPieceEnds(c, j0, piece, m.counts[k]);
      if (m.needs[k].any()) {
        const ParquetFlags flags = ParquetCountPieces(c, m.needs[k], j0, piece, m.counts[k]);
        if (!flags.utf8) not_utf8[k] = true;
        if (!flags.labeled) unlabeled[k] = true;
      }
      for (uint64_t p = 0, j = j0; p < n; p += piece, ++j) {
        const uint64_t e = std::min(n, p + piece);
        m.txt[k][j] = table.MeasureRows(p, e);
        if (m.var[k]) m.bin[k][j] = c.offsets[e] - c.offsets[p];
      }
    }
    return core::Ok();
  }));
  for (size_t k = 0; k < nf; ++k) {
    if (not_utf8[k]) m.not_utf8[k] = true;
    if (unlabeled[k]) m.unlabeled[k] = true;
  }
  return core::Ok();
}

// The layouts the measures make, for a view of `cells` cells.
ViewLayouts FinishLayouts(PieceMeasures m, const std::vector<std::string>& fields, uint64_t cells,
                          uint64_t piece, uint64_t batch) {
  const uint64_t pieces = cells / piece + (cells % piece != 0 ? 1 : 0);
  ViewLayouts out;
  std::vector<uint64_t> csv(pieces, 0);
  for (size_t k = 0; k < fields.size(); ++k) {
    for (uint64_t j = 0; j < pieces; ++j) csv[j] += m.txt[k][j];
    out.txt[fields[k]] = LayoutOf("", m.txt[k], cells, piece, batch);
    if (m.var[k]) out.var_data[fields[k]] = LayoutOf("", m.bin[k], cells, piece, batch);
    ParquetCounts& c = m.counts[k];
    if (m.needs[k].any() || !c.ends.empty()) {
      ParquetRunningTotals(c);
      c.utf8 = !m.not_utf8[k];
      c.labeled = !m.unlabeled[k];
      out.parquet[fields[k]] = std::move(c);
    }
  }
  out.csv = LayoutOf(CsvHeaderLine(fields), csv, cells, piece, batch);
  return out;
}

uint64_t BatchOf(uint64_t batch_cells, uint64_t piece) {
  const uint64_t batch = std::max(batch_cells, piece);
  return (batch / piece) * piece;
}

// The size of piece j of a layout whose every start is known.
uint64_t PieceSize(const StreamLayout& l, uint64_t j) {
  return l.starts->Start(j + 1) - l.starts->Start(j);
}

}  // namespace

core::Result<ViewLayouts> ComputeViewLayouts(const core::ArrayView& view,
                                             const std::vector<std::string>& fields,
                                             const std::vector<core::Enumeration>* enums,
                                             uint64_t cells, uint64_t piece_cells,
                                             uint64_t batch_cells) {
  const uint64_t piece = std::max<uint64_t>(piece_cells, 1);
  const uint64_t batch = BatchOf(batch_cells, piece);
  const uint64_t pieces = cells / piece + (cells % piece != 0 ? 1 : 0);
  PieceMeasures m = NewMeasures(view.schema(), fields, enums, pieces);
  TRY(MeasureInto(view, fields, 0, cells, piece, batch, 0, m));
  return FinishLayouts(std::move(m), fields, cells, piece, batch);
}

core::Result<ViewLayouts> ExtendViewLayouts(const ViewLayouts& base, const core::ArrayView& tail,
                                            const std::vector<std::string>& fields,
                                            const std::vector<core::Enumeration>* enums,
                                            uint64_t tail_cells, uint64_t batch_cells) {
  auto unfit = [](std::string_view what) {
    return Error::InvalidArgument(fmt::format("layouts to extend: {}", what));
  };
  const uint64_t piece = base.csv.piece_cells;
  const uint64_t base_cells = base.csv.cells;
  if (piece == 0) return unfit("no cells per piece");
  const uint64_t batch = BatchOf(batch_cells, piece);
  const uint64_t cells = base_cells + tail_cells;
  const uint64_t pieces = cells / piece + (cells % piece != 0 ? 1 : 0);
  // The base's pieces, its last one partly filled (`part` cells) or not.
  const uint64_t whole = base_cells / piece, part = base_cells % piece;
  const uint64_t kept = whole + (part != 0 ? 1 : 0);
  PieceMeasures m = NewMeasures(tail.schema(), fields, enums, pieces);
  auto known = [&](const StreamLayout& l) {
    return l.piece_cells == piece && l.cells == base_cells && l.pieces() == kept &&
           l.starts->known() == kept;
  };
  if (!known(base.csv)) return unfit("data.csv's layout is not whole");
  for (size_t k = 0; k < fields.size(); ++k) {
    auto txt = base.txt.find(fields[k]);
    if (txt == base.txt.end() || !known(txt->second)) return unfit(fields[k] + ".txt");
    for (uint64_t j = 0; j < kept; ++j) m.txt[k][j] = PieceSize(txt->second, j);
    if (m.var[k]) {
      auto bin = base.var_data.find(fields[k]);
      if (bin == base.var_data.end() || !known(bin->second)) return unfit(fields[k] + ".bin");
      for (uint64_t j = 0; j < kept; ++j) m.bin[k][j] = PieceSize(bin->second, j);
    }
    ParquetCounts& c = m.counts[k];
    if (!m.needs[k].any() && c.ends.empty()) continue;
    auto saved = base.parquet.find(fields[k]);
    if (saved == base.parquet.end()) return unfit(fields[k] + "'s counts");
    const ParquetCounts& s = saved->second;
    for (auto [to, from] :
         {std::pair{&c.valid, &s.valid}, {&c.bytes, &s.bytes}, {&c.empty, &s.empty}}) {
      if (to->empty()) continue;
      if (from->size() != kept + 1) return unfit(fields[k] + "'s counts");
      for (uint64_t j = 0; j < kept; ++j) (*to)[j + 1] = (*from)[j + 1] - (*from)[j];
    }
    if (!c.ends.empty()) {
      if (s.ends.size() != 2 * kept) return unfit(fields[k] + "'s ends");
      std::copy(s.ends.begin(), s.ends.end(), c.ends.begin());
    }
    m.not_utf8[k] = !s.utf8;
    m.unlabeled[k] = !s.labeled;
  }
  // The tail's first cells fill the base's last piece: measured as one
  // piece of their own, then added to it.
  const uint64_t head = part != 0 ? std::min(piece - part, tail_cells) : 0;
  if (head > 0) {
    PieceMeasures h = NewMeasures(tail.schema(), fields, enums, 1);
    TRY(MeasureInto(tail, fields, 0, head, head, BatchOf(head, head), 0, h));
    const uint64_t j = whole;
    for (size_t k = 0; k < fields.size(); ++k) {
      m.txt[k][j] += h.txt[k][0];
      if (m.var[k]) m.bin[k][j] += h.bin[k][0];
      ParquetCounts& c = m.counts[k];
      for (auto [to, from] : {std::pair{&c.valid, &h.counts[k].valid},
                              {&c.bytes, &h.counts[k].bytes},
                              {&c.empty, &h.counts[k].empty}}) {
        if (!to->empty()) (*to)[j + 1] += (*from)[1];
      }
      if (!c.ends.empty()) c.ends[2 * j + 1] = h.counts[k].ends[1];
      if (h.not_utf8[k]) m.not_utf8[k] = true;
      if (h.unlabeled[k]) m.unlabeled[k] = true;
    }
  }
  TRY(MeasureInto(tail, fields, head, tail_cells - head, piece, batch, kept, m));
  return FinishLayouts(std::move(m), fields, cells, piece, batch);
}

}  // namespace tiledbfs::fusefs
