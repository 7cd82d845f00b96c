#include "fusefs/model/streamed_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <thread>

#include "core/read/parallel.h"
#include "fusefs/render/csv.h"

namespace tiledbfs::fusefs {

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

uint64_t DefaultPieceCells(uint64_t cells) {
  constexpr uint64_t kMin = 4096, kMaxPieces = 65536;
  return std::max(kMin, (cells + kMaxPieces - 1) / kMaxPieces);
}

core::Result<StreamLayout> ComputeStreamLayout(const CellRenderer& renderer, std::string header,
                                               std::string trailer, uint64_t cells,
                                               uint64_t piece_cells, uint64_t batch_cells) {
  StreamLayout layout;
  layout.header = std::move(header);
  layout.trailer = std::move(trailer);
  layout.cells = cells;
  layout.piece_cells = std::max<uint64_t>(piece_cells, 1);
  const uint64_t piece = layout.piece_cells;
  const uint64_t pieces = cells / piece + (cells % piece != 0 ? 1 : 0);
  uint64_t batch = std::max(batch_cells, piece);
  batch = (batch / piece) * piece;
  // Batches are measured on every core (each worker with its own read
  // state), then their piece sizes are summed in order. An error stops
  // the pass (batches not started yet are skipped).
  const uint64_t batches = cells / batch + (cells % batch != 0 ? 1 : 0);
  std::vector<std::vector<uint64_t>> sizes(batches);
  std::vector<core::Status> status(batches, core::Ok());
  std::atomic<bool> failed{false};
  std::mutex states_mu;
  std::vector<std::unique_ptr<core::ReadState>> states;  // free ones
  core::ParallelFor(batches, [&](size_t b) {
    if (failed.load()) return;
    std::unique_ptr<core::ReadState> state;
    {
      std::lock_guard<std::mutex> lock(states_mu);
      if (!states.empty()) {
        state = std::move(states.back());
        states.pop_back();
      }
    }
    if (!state) state = std::make_unique<core::ReadState>();
    const uint64_t first = b * batch, n = std::min(batch, cells - first);
    status[b] = renderer.Measure(first, n, piece, sizes[b], state.get());
    const uint64_t expected = n / piece + (n % piece != 0 ? 1 : 0);
    if (status[b].ok() && sizes[b].size() != expected) {
      status[b] =
          Error::Corrupt(fmt::format("layout of cells [{}, +{}): {} piece sizes for {} pieces",
                                     first, n, sizes[b].size(), expected));
    }
    if (!status[b].ok()) failed = true;
    std::lock_guard<std::mutex> lock(states_mu);
    states.push_back(std::move(state));
  });
  layout.starts.reserve(pieces + 1);
  uint64_t at = layout.header.size();
  layout.starts.push_back(at);
  for (uint64_t b = 0; b < batches; ++b) {
    TRY(status[b]);
    for (uint64_t s : sizes[b]) {
      at += s;
      layout.starts.push_back(at);
    }
  }
  return layout;
}

namespace {

// Copies the part of file bytes [from, from + src.size()) that falls in
// [offset, end) to out (out[0] is file byte `offset`).
void CopyOverlap(std::string_view src, uint64_t from, uint64_t offset, uint64_t end,
                 std::span<uint8_t> out) {
  uint64_t a = std::max(from, offset), b = std::min(from + src.size(), end);
  if (a >= b) return;
  std::memcpy(out.data() + (a - offset), src.data() + (a - from), b - a);
}

class StreamedFile final : public OpenFile {
 public:
  StreamedFile(std::shared_ptr<const StreamLayout> layout,
               std::shared_ptr<const CellRenderer> renderer)
      : layout_(std::move(layout)), renderer_(std::move(renderer)) {
    workers_ = std::clamp<unsigned>(std::thread::hardware_concurrency(), 1, kMaxWorkers);
  }

  uint64_t size() const override { return layout_->size(); }

  Result<size_t> Read(uint64_t offset, std::span<uint8_t> out) override {
    const StreamLayout& l = *layout_;
    const uint64_t size = l.size();
    if (offset >= size || out.empty()) return size_t{0};
    const uint64_t end = offset + std::min<uint64_t>(out.size(), size - offset);
    CopyOverlap(l.header, 0, offset, end, out);
    CopyOverlap(l.trailer, l.starts.back(), offset, end, out);
    if (l.pieces() > 0 && offset < l.starts.back() && end > l.starts.front()) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = std::upper_bound(l.starts.begin(), l.starts.end(), offset);
      uint64_t j = it == l.starts.begin() ? 0 : static_cast<uint64_t>(it - l.starts.begin()) - 1;
      for (; j < l.pieces() && l.starts[j] < end; ++j) {
        if (l.starts[j + 1] <= offset) continue;  // an empty piece
        ASSIGN_OR_RETURN(const std::string* text, Piece(j));
        CopyOverlap(*text, l.starts[j], offset, end, out);
      }
    }
    return static_cast<size_t>(end - offset);
  }

 private:
  // Pieces rendered ahead of a sequential reader: up to this many bytes (a
  // window of pieces, at least one) ... Through a mount, the cores idle
  // between windows while FUSE hands the bytes out and the kernel asks for
  // more (6-20 % idle against 1-5 % in-process): 16 MiB windows made the
  // render of data.csv ~20 % faster than 4 MiB ones there (BENCHMARKS.md,
  // session 12), and changed nothing in-process. A reader keeps its
  // window's text: 16 MiB at most.
  static constexpr uint64_t kAheadBytes = uint64_t{16} << 20;
  // ... and this many pieces, rendered by up to kMaxWorkers threads.
  static constexpr uint64_t kMaxAhead = 256;
  static constexpr unsigned kMaxWorkers = 4;

  struct Slot {
    core::Status status = core::Ok();
    std::string text;
  };

  // Piece j's bytes, valid until the next call (mu_ held). The window holds
  // the pieces [first_, first_ + count_) rendered last, in buffers reused
  // from window to window (no fresh memory per read). A miss just past the
  // window (a sequential reader) renders a window twice as long as the last
  // one, up to kAheadBytes, its pieces rendered on every core (each worker
  // with its own read state: the tiles a run needs are decoded once, into
  // the shared cache, by the first worker to reach them); any other miss
  // renders that piece alone.
  Result<const std::string*> Piece(uint64_t j) {
    const StreamLayout& l = *layout_;
    if (j < first_ || j - first_ >= count_) {
      uint64_t want = 1;
      if (count_ > 0 && j == first_ + count_) want = std::min(2 * count_, kMaxAhead);
      uint64_t n = 1, bytes = l.starts[j + 1] - l.starts[j];
      while (n < want && j + n < l.pieces()) {
        bytes += l.starts[j + n + 1] - l.starts[j + n];
        if (bytes > kAheadBytes) break;
        ++n;
      }
      Render(j, n);
    }
    Slot& s = window_[j - first_];
    TRY(s.status);
    return &s.text;
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
        window_[k].status = RenderPiece(j + k, window_[k].text, &states_[w]);
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
    const uint64_t first = j * l.piece_cells;
    const uint64_t count = std::min(l.piece_cells, l.cells - first);
    const uint64_t expected = l.starts[j + 1] - l.starts[j];
    text.clear();
    // Give back the room a much larger piece needed.
    if (text.capacity() > (uint64_t{4} << 20) && text.capacity() > 4 * expected) {
      text.shrink_to_fit();
    }
    // Room for the piece and for the widest value a renderer reserves at
    // its end, so that the buffer does not reallocate.
    text.reserve(expected + 64);
    TRY(renderer_->Render(first, count, text, state));
    if (text.size() != expected) {
      return Error::Corrupt(fmt::format("cells [{}, +{}) rendered to {} bytes, layout says {}",
                                        first, count, text.size(), expected));
    }
    return core::Ok();
  }

  std::shared_ptr<const StreamLayout> layout_;
  std::shared_ptr<const CellRenderer> renderer_;
  std::mutex mu_;
  unsigned workers_ = 1;
  std::vector<Slot> window_;
  uint64_t first_ = 0, count_ = 0;
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
    if (first % piece != 0 || first / piece >= data_->pieces()) {
      return Error::InvalidArgument(
          fmt::format("{}.offsets: cell {} is not the start of a piece", field_, first));
    }
    uint64_t base = data_->starts[first / piece] - data_->starts[0];
    ASSIGN_OR_RETURN(core::Column c, view_->ReadFieldRange(field_, first, count, state));
    TRY(CheckVarColumn(c, first, count));
    for (uint64_t k = 0; k < count; ++k) AppendU64(out, base + c.offsets[k]);
    return core::Ok();
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
  l.starts.reserve(data.starts.size());
  for (uint64_t j = 0; j < data.pieces(); ++j) l.starts.push_back(8 * j * data.piece_cells);
  l.starts.push_back(8 * data.cells);
  AppendU64(l.trailer, data.starts.back() - data.starts.front());
  return l;
}

}  // namespace tiledbfs::fusefs
