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

}  // namespace tiledbfs::fusefs
