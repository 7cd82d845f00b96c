#include "fusefs/model/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/util/byte_reader.h"
#include "core/util/byte_writer.h"
#include "core/util/text.h"
#include "fusefs/model/instant.h"
#include "fusefs/render/diff_csv.h"

namespace tiledbfs::fusefs {

using core::DiffKind;
using core::Error;
using core::Status;

namespace {

// Rows per piece: at least kMinPieceRows (a piece's render resumes the
// stream in every box), more for diffs of over kMaxPieces of those, so
// that a file keeps at most kMaxPieces positions.
constexpr uint64_t kMinPieceRows = 65536;
constexpr uint64_t kMaxPieces = 16384;
// Cells per chunk of the streams that render pieces.
constexpr uint64_t kRenderChunkCells = 8192;
// Cells per chunk of the pass, spread over both slices of every box.
constexpr uint64_t kPassCells = uint64_t{1} << 20;

std::vector<const core::Enumeration*> EnumsOf(const core::ArraySchema& s,
                                              const std::vector<std::string>& fields,
                                              const DiffSide& side) {
  static const std::vector<core::Enumeration> none;
  std::vector<const core::Enumeration*> out;
  for (const auto& f : fields) out.push_back(EnumerationFor(s, side.enums ? *side.enums : none, f));
  return out;
}

// Both sides' enumerations, kept alive with their pointers.
struct DiffEnums {
  DiffSide from, to;
  std::vector<const core::Enumeration*> from_enums, to_enums;
};

// Renders rows [first, first + count) of one kind: the stream resumed at
// the position of the piece holding `first`.
class DiffCsvRenderer final : public CellRenderer {
 public:
  DiffCsvRenderer(std::shared_ptr<const core::DiffPlan> plan,
                  std::shared_ptr<const DiffEnums> enums, DiffKind kind, uint64_t piece,
                  std::vector<core::DiffPosition> marks)
      : plan_(std::move(plan)),
        enums_(std::move(enums)),
        kind_(kind),
        piece_(piece),
        marks_(std::move(marks)) {}

  Status Render(uint64_t first, uint64_t count, std::string& out,
                core::ReadState* /*state: the stream reads through its own*/) const override {
    if (count == 0) return core::Ok();
    const uint64_t mark = first / piece_;
    if (mark >= marks_.size()) {
      return Error::InvalidArgument(fmt::format("diff rows from {}: past the last piece", first));
    }
    core::DiffStream s(plan_, true, kRenderChunkCells);
    TRY(s.Seek(marks_[mark]));
    DiffCsv csv(*plan_, enums_->from_enums, enums_->to_enums);
    uint64_t skip = first - mark * piece_, done = 0;
    std::array<uint64_t, core::kDiffKinds> max;
    max.fill(UINT64_MAX);
    while (done < count) {
      max[static_cast<int>(kind_)] = skip > 0 ? skip : count - done;
      ASSIGN_OR_RETURN(uint64_t rows, s.Next(max));
      if (rows == 0) {
        return Error::Corrupt(fmt::format("the diff's rows ended {} rows before row {}",
                                          count - done, first + count));
      }
      if (s.kind() != kind_) continue;
      if (skip > 0) {
        skip -= rows;
        continue;
      }
      TRY(csv.AppendRun(out, s, rows));
      done += rows;
    }
    return core::Ok();
  }
  uint64_t footprint() const {
    uint64_t n = sizeof(*this);
    for (const auto& m : marks_) n += m.footprint();
    return n;
  }

 private:
  std::shared_ptr<const core::DiffPlan> plan_;
  std::shared_ptr<const DiffEnums> enums_;
  DiffKind kind_;
  uint64_t piece_;
  std::vector<core::DiffPosition> marks_;  // where piece k's first row is
};

std::string SummaryJson(const DiffSide& from, const DiffSide& to, std::string_view log,
                        const std::array<uint64_t, core::kDiffKinds>& rows, bool schema_changed,
                        uint64_t compared_cells) {
  const int64_t lo = std::min(from.instant, to.instant), hi = std::max(from.instant, to.instant);
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  size_t start = 0;
  while (start < log.size()) {
    size_t end = log.find('\n', start);
    if (end == std::string_view::npos) end = log.size();
    std::string_view line = log.substr(start, end - start);
    std::optional<int64_t> at = ParseInstant(line.substr(0, line.find(' ')));
    if (at && *at > lo && *at <= hi) events.push_back(std::string(line));
    start = end + 1;
  }
  nlohmann::ordered_json j;
  j["from"] = FormatIso(from.instant);
  j["to"] = FormatIso(to.instant);
  j["from_ms"] = from.instant;
  j["to_ms"] = to.instant;
  j["added"] = rows[static_cast<int>(DiffKind::kAdded)];
  j["removed"] = rows[static_cast<int>(DiffKind::kRemoved)];
  j["changed"] = rows[static_cast<int>(DiffKind::kChanged)];
  j["schema_changed"] = schema_changed;
  j["events"] = std::move(events);
  j["compared_cells"] = compared_cells;
  return core::DumpJsonText(j, 2) + "\n";
}

// The pass's findings for one CSV file.
struct Measure {
  uint64_t rows = 0;
  uint64_t end = 0;              // where the bytes so far end
  std::vector<uint64_t> starts;  // where each piece starts in the file
  std::vector<core::DiffPosition> marks;
};
using Measures = std::array<Measure, core::kDiffKinds>;

constexpr uint32_t kSavedDiffFormat = 1;

std::string SaveDiff(uint64_t piece, const Measures& m, const std::vector<std::string>& counts) {
  core::ByteWriter w;
  w.Put<uint32_t>(kSavedDiffFormat).Put<uint64_t>(piece);
  for (const Measure& k : m) {
    w.Put<uint64_t>(k.rows).Put<uint64_t>(k.end).Put<uint64_t>(k.starts.size());
    for (uint64_t x : k.starts) w.Put<uint64_t>(x);
    w.Put<uint64_t>(k.marks.size());
    for (const core::DiffPosition& p : k.marks) {
      w.Put<uint64_t>(p.at.size());
      for (uint64_t x : p.at) w.Put<uint64_t>(x);
    }
  }
  w.Put<uint64_t>(counts.size());
  for (const std::string& c : counts) w.PutName64(c);
  return std::string(reinterpret_cast<const char*>(w.bytes().data()), w.size());
}

struct SavedDiff {
  uint64_t piece = 0;
  Measures m;
  std::vector<std::string> counts;
};

// Each vector's length is checked against the bytes left before it is
// made: a hostile length is kCorrupt, never a huge allocation.
Result<SavedDiff> LoadDiff(std::string_view saved) {
  core::ByteReader r(core::AsBytes(saved));
  auto bad = [](std::string_view what) {
    return Error::Corrupt(fmt::format("saved diff: {}", what));
  };
  ASSIGN_OR_RETURN(uint32_t format, r.Read<uint32_t>("format"));
  if (format != kSavedDiffFormat) return bad("another format");
  SavedDiff out;
  ASSIGN_OR_RETURN(out.piece, r.Read<uint64_t>("piece rows"));
  for (Measure& k : out.m) {
    ASSIGN_OR_RETURN(k.rows, r.Read<uint64_t>("rows"));
    ASSIGN_OR_RETURN(k.end, r.Read<uint64_t>("end"));
    ASSIGN_OR_RETURN(uint64_t n, r.Read<uint64_t>("pieces"));
    if (n > r.remaining() / 8) return bad("more pieces than bytes");
    k.starts.resize(n);
    for (uint64_t& x : k.starts) {
      ASSIGN_OR_RETURN(x, r.Read<uint64_t>("piece start"));
    }
    ASSIGN_OR_RETURN(uint64_t marks, r.Read<uint64_t>("marks"));
    if (marks > r.remaining() / 8) return bad("more marks than bytes");
    k.marks.resize(marks);
    for (core::DiffPosition& p : k.marks) {
      ASSIGN_OR_RETURN(uint64_t len, r.Read<uint64_t>("mark size"));
      if (len > r.remaining() / 8) return bad("a mark longer than the bytes");
      p.at.resize(len);
      for (uint64_t& x : p.at) {
        ASSIGN_OR_RETURN(x, r.Read<uint64_t>("mark"));
      }
    }
  }
  ASSIGN_OR_RETURN(uint64_t counts, r.Read<uint64_t>("slices"));
  if (counts > r.remaining() / 8) return bad("more slices than bytes");
  out.counts.resize(counts);
  for (std::string& c : out.counts) {
    ASSIGN_OR_RETURN(uint64_t len, r.Read<uint64_t>("counts size"));
    ASSIGN_OR_RETURN(c, r.ReadString(len, "counts"));
  }
  if (!r.empty()) return bad("bytes past the end");
  return out;
}

// Whether saved measures are of this plan's files: `piece` rows a piece,
// each file's pieces starting after its header and ascending to its end,
// a mark per piece of this plan's boxes.
bool Fits(const SavedDiff& s, uint64_t piece, const core::DiffPlan& plan,
          const std::array<std::string, core::kDiffKinds>& headers) {
  if (s.piece != piece || piece == 0) return false;
  for (int k = 0; k < core::kDiffKinds; ++k) {
    const Measure& m = s.m[k];
    const uint64_t pieces = m.rows / piece + (m.rows % piece != 0 ? 1 : 0);
    if (m.marks.size() != pieces || m.starts.size() != pieces + 1) return false;
    if (m.starts.front() != headers[k].size() || m.starts.back() != m.end) return false;
    if (!std::is_sorted(m.starts.begin(), m.starts.end())) return false;
    for (const core::DiffPosition& p : m.marks) {
      if (p.at.size() != 3 * plan.boxes()) return false;
    }
  }
  return true;
}

}  // namespace

std::optional<std::pair<int64_t, int64_t>> ParseDiffName(std::string_view name) {
  const size_t dots = name.find("..");
  if (dots == std::string_view::npos) return std::nullopt;
  std::optional<int64_t> a = ParseInstant(name.substr(0, dots));
  std::optional<int64_t> b = ParseInstant(name.substr(dots + 2));
  if (!a || !b || *a < 0 || *b < 0) return std::nullopt;
  return std::make_pair(*a, *b);
}

Result<DiffFiles> ComputeDiff(const DiffSide& from, const DiffSide& to, std::string_view log,
                              uint64_t piece_rows, DiffIndexed* indexed) {
  std::optional<SavedDiff> saved;
  if (indexed != nullptr && !indexed->saved.empty()) {
    Result<SavedDiff> got = LoadDiff(indexed->saved);
    if (got.ok()) saved = std::move(got).value();
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const core::DiffPlan> plan,
                   core::DiffPlan::Make(from.view, to.view, from.instant, to.instant,
                                        saved ? std::span<const std::string>(saved->counts)
                                              : std::span<const std::string>()));
  auto enums = std::make_shared<DiffEnums>();
  enums->from = from;
  enums->to = to;
  enums->from_enums = EnumsOf(plan->from_schema(), plan->from_fields(), from);
  enums->to_enums = EnumsOf(plan->to_schema(), plan->to_fields(), to);
  const uint64_t piece = piece_rows != 0
                             ? piece_rows
                             : std::max(kMinPieceRows, plan->compared_cells() / kMaxPieces + 1);
  DiffCsv csv(*plan, enums->from_enums, enums->to_enums);
  std::array<std::string, core::kDiffKinds> headers;
  for (int k = 0; k < core::kDiffKinds; ++k) {
    headers[k] = CsvHeaderLine(csv.Header(static_cast<DiffKind>(k)));
  }
  Measures m;
  if (saved && Fits(*saved, piece, *plan, headers)) {
    m = std::move(saved->m);
    indexed->taken = true;
  } else {
    // The pass: every row counted and rendered once to measure its piece.
    for (int k = 0; k < core::kDiffKinds; ++k) m[k].end = headers[k].size();
    const uint64_t boxes = std::max<size_t>(plan->boxes(), 1);
    core::DiffStream s(plan, true, std::max<uint64_t>(kPassCells / (2 * boxes), kRenderChunkCells));
    TRY(s.Seek());
    std::array<uint64_t, core::kDiffKinds> max;  // runs end where pieces do
    while (true) {
      for (int k = 0; k < core::kDiffKinds; ++k) max[k] = piece - m[k].rows % piece;
      ASSIGN_OR_RETURN(uint64_t rows, s.Next(max));
      if (rows == 0) break;
      Measure& k = m[static_cast<int>(s.kind())];
      if (k.rows % piece == 0) {
        k.marks.push_back(s.Position());
        k.starts.push_back(k.end);
      }
      ASSIGN_OR_RETURN(uint64_t bytes, csv.MeasureRun(s, rows));
      k.end += bytes;
      k.rows += rows;
    }
    for (Measure& k : m) k.starts.push_back(k.end);
    if (indexed != nullptr && indexed->to_save != nullptr) {
      *indexed->to_save = SaveDiff(piece, m, plan->SaveCounts());
    }
  }

  const core::ArraySchema& s1 = plan->from_schema();
  const core::ArraySchema& s2 = plan->to_schema();
  std::array<uint64_t, core::kDiffKinds> rows;
  DiffFiles files;
  // The slices' cell indexes live as long as the files (their renderers
  // read through them): 8 bytes per compared cell, as the generic index
  // keeps, so that the cache of diffs does not hold many big ones.
  files.footprint_bytes = 256 + plan->compared_cells() * 8;
  for (int k = 0; k < core::kDiffKinds; ++k) {
    rows[k] = m[k].rows;
    StreamLayout layout;
    layout.header = headers[k];
    layout.cells = m[k].rows;
    layout.piece_cells = piece;
    layout.batch_cells = piece;
    layout.body_end = m[k].end;
    layout.starts = std::make_shared<PieceStarts>(std::move(m[k].starts));
    if (indexed != nullptr && indexed->taken) layout.on_mismatch = indexed->on_mismatch;
    auto renderer = std::make_shared<DiffCsvRenderer>(plan, enums, static_cast<DiffKind>(k), piece,
                                                      std::move(m[k].marks));
    files.footprint_bytes += layout.footprint() + renderer->footprint();
    files.csv[k].layout = std::make_shared<const StreamLayout>(std::move(layout));
    files.csv[k].renderer = std::move(renderer);
  }
  files.summary_json = std::make_shared<const std::string>(
      SummaryJson(from, to, log, rows, s1.name != s2.name, plan->compared_cells()));
  files.footprint_bytes += files.summary_json->size();
  return files;
}

}  // namespace tiledbfs::fusefs
