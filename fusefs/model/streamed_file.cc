#include "fusefs/model/streamed_file.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <mutex>

#include "core/util/parallel.h"
#include "fusefs/model/read_target.h"

namespace tiledbfs::fusefs {

using core::Error;

namespace {

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
    t.Put(l.header, 0, layout_);
    if (l.pieces() > 0 && offset < l.body_end && t.end > l.header.size()) {
      std::lock_guard<std::mutex> lock(mu_);
      TRY(Reach(offset));
      // The piece holding offset (empty pieces before it skipped), or the
      // first one for a read that starts in the header.
      uint64_t j = s.Find(offset).value_or(0);
      for (; j < l.pieces() && s.Start(j) < t.end; ++j) {
        ASSIGN_OR_RETURN(const std::shared_ptr<std::string>* text, Piece(j));
        t.Put(**text, s.Start(j), *text);
      }
    }
    t.Put(l.trailer, l.body_end, layout_);
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

}  // namespace tiledbfs::fusefs
