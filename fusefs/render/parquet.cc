#include "fusefs/render/parquet.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <optional>

#include "core/util/text.h"
#include "fusefs/render/parquet_format.h"
#include "fusefs/render/thrift_compact.h"
#include "fusefs/render/value_text.h"

namespace tiledbfs::fusefs {

using core::Datatype;
using core::Error;
using namespace parquet_format;

namespace {

// Rows per row group and per page (at most; both whole pieces), and the
// bytes a page grows to before the next piece starts a new one.
constexpr uint64_t kGroupRows = uint64_t{1} << 20;
constexpr uint64_t kPageRows = uint64_t{1} << 16;
constexpr uint64_t kPageBytes = uint64_t{1} << 20;
// Page sizes and value counts are i32 in the header.
constexpr uint64_t kMaxPage = (uint64_t{1} << 31) - 1;

// Cell i holds a value: valid, and not NaT where NaT is null.
bool HasValue(const core::Column& c, uint64_t i, bool nat) {
  if (!c.valid(i)) return false;
  if (!nat) return true;
  int64_t v;
  std::memcpy(&v, c.cell(i).data(), 8);
  return v != std::numeric_limits<int64_t>::min();
}

uint64_t Groups(uint64_t n) { return n / 8 + (n % 8 != 0); }
// A bit-packed run of n values of `bits` bits (RLE/bit-packing hybrid).
uint64_t HybridSize(uint64_t n, uint32_t bits) {
  return ThriftWriter::VarintSize(Groups(n) << 1 | 1) + Groups(n) * bits;
}
// A data page v1 levels block: its 4-byte length, then the run.
uint64_t LevelsSize(uint64_t n, uint32_t bits) { return 4 + HybridSize(n, bits); }
uint32_t BitsFor(uint64_t max_value) {
  return std::max<uint32_t>(1, static_cast<uint32_t>(std::bit_width(max_value)));
}

// Appends n values of `bits` bits, value(i) for the i-th, as one
// bit-packed run (LSB first, the last group padded with zeros).
template <class F>
void AppendHybrid(std::string& out, uint64_t n, uint32_t bits, F value) {
  ThriftWriter::Varint(out, Groups(n) << 1 | 1);
  uint64_t acc = 0;
  uint32_t held = 0;
  for (uint64_t i = 0; i < Groups(n) * 8; ++i) {
    acc |= static_cast<uint64_t>(i < n ? value(i) : 0) << held;
    held += bits;
    while (held >= 8) {
      out.push_back(static_cast<char>(acc & 0xFF));
      acc >>= 8;
      held -= 8;
    }
  }
}

template <class F>
void AppendLevels(std::string& out, uint64_t n, uint32_t bits, F value) {
  const size_t at = out.size();
  out.append(4, '\0');
  AppendHybrid(out, n, bits, value);
  const uint32_t len = static_cast<uint32_t>(out.size() - at - 4);
  std::memcpy(out.data() + at, &len, 4);
}

}  // namespace

core::Bytes ParquetValue(const core::Column& c, uint64_t i) {
  const core::Bytes cell = c.cell(i);
  return core::IsString(c.type) ? StripTrailingNuls(cell, core::DatatypeSize(c.type)) : cell;
}

bool ParquetDictionary(Datatype key_type, uint32_t cell_val_num, const core::Enumeration* e) {
  if (e == nullptr || !core::IsInteger(key_type) || cell_val_num != 1) return false;
  if (IsBytes(e->type)) return true;
  return e->cell_val_num == 1 && e->type != Datatype::kBool;
}

ParquetNeeds ParquetNeedsOf(Datatype type, uint32_t cell_val_num, bool nullable, bool dimension,
                            const core::Enumeration* enumeration) {
  ParquetNeeds n;
  const bool var = cell_val_num == core::kVarNum;
  n.nat = !dimension && cell_val_num == 1 && (IsTimestamp(type) || IsTimeOfDay(type));
  n.valid = nullable || n.nat;
  n.bytes = var || core::IsString(type);
  n.empty = var && !IsBytes(type);
  n.utf8 = IsText(type);
  if (ParquetDictionary(type, cell_val_num, enumeration)) {
    n.labels = EnumerationSize(*enumeration);
    n.labeled = true;
  }
  return n;
}

ParquetFlags ParquetCountPieces(const core::Column& c, ParquetNeeds needs, uint64_t first_piece,
                                uint64_t piece, ParquetCounts& counts) {
  ParquetFlags flags;
  for (uint64_t p = 0, j = first_piece; p < c.cell_count; p += piece, ++j) {
    const uint64_t e = std::min(c.cell_count, p + piece);
    uint64_t valid = 0, bytes = 0, empty = 0;
    for (uint64_t i = p; i < e; ++i) {
      if (!HasValue(c, i, needs.nat)) continue;
      ++valid;
      const core::Bytes cell = ParquetValue(c, i);
      bytes += cell.size();
      empty += cell.empty();
      if (needs.utf8 && flags.utf8) flags.utf8 = core::ValidUtf8(cell);
      if (needs.labeled && flags.labeled) {
        const __int128 k = EnumerationIndex(c.type, cell);
        flags.labeled = k >= 0 && k < static_cast<__int128>(needs.labels);
      }
    }
    if (needs.valid) counts.valid[j + 1] = valid;
    if (needs.bytes) counts.bytes[j + 1] = bytes;
    if (needs.empty) counts.empty[j + 1] = empty;
  }
  return flags;
}

bool ParquetEndsWanted(Datatype type, uint32_t cell_val_num) {
  return cell_val_num == 1 && (core::IsInteger(type) || core::IsFloat(type) ||
                               core::IsDatetime(type) || core::IsTime(type));
}

void ParquetPieceEnds(const core::Column& c, uint64_t first_piece, uint64_t piece,
                      ParquetCounts& counts) {
  const uint64_t size = core::DatatypeSize(c.type);
  auto raw = [&](uint64_t i) {
    uint64_t v = 0;
    std::memcpy(&v, c.data.data() + i * size, size);
    return v;
  };
  for (uint64_t p = 0, j = first_piece; p < c.cell_count; p += piece, ++j) {
    counts.ends[2 * j] = raw(p);
    counts.ends[2 * j + 1] = raw(std::min(c.cell_count, p + piece) - 1);
  }
}

void ParquetRunningTotals(ParquetCounts& counts) {
  for (auto* v : {&counts.valid, &counts.bytes, &counts.empty}) {
    for (size_t j = 1; j < v->size(); ++j) (*v)[j] += (*v)[j - 1];
  }
}

namespace {

// What a data page of rows [a, b) (pieces [j, k)) of a column holds.
struct PageShape {
  uint64_t rows = 0, valid = 0, values = 0, entries = 0, body = 0;
};

core::Result<PageShape> ShapeOf(const ParquetPlan::Column& col, uint64_t piece, uint64_t rows,
                                uint64_t j, uint64_t k) {
  const ParquetField& f = col.field;
  const ParquetCounts& c = f.counts;
  PageShape s;
  const uint64_t a = j * piece, b = std::min(rows, k * piece);
  s.rows = b - a;
  s.valid = col.optional ? c.valid[k] - c.valid[j] : s.rows;
  const bool var = f.cell_val_num == core::kVarNum;
  const uint64_t bytes = c.bytes.empty() ? 0 : c.bytes[k] - c.bytes[j];
  s.entries = s.rows;
  s.body = col.max_def > 0 && col.kind != ParquetPlan::Kind::kList ? LevelsSize(s.rows, 1) : 0;
  using Kind = ParquetPlan::Kind;
  switch (col.kind) {
    case Kind::kFixed:
      s.values = s.valid;
      s.body += s.valid * col.width;
      break;
    case Kind::kBool:
      s.values = s.valid;
      s.body += Groups(s.valid);
      break;
    case Kind::kBytes:
      s.values = s.valid;
      s.body += 4 * s.valid +
                (!c.bytes.empty() ? bytes : s.valid * core::DatatypeSize(f.type) * f.cell_val_num);
      break;
    case Kind::kList: {
      const uint64_t elem = core::DatatypeSize(f.type);
      if (var && bytes % elem != 0) {
        return Error::Corrupt(fmt::format("{}: {} bytes of {} values in rows [{}, {})", f.name,
                                          bytes, core::DatatypeName(f.type), a, b));
      }
      s.values = var ? bytes / elem : s.valid * f.cell_val_num;
      const uint64_t empty = var ? c.empty[k] - c.empty[j] : 0;
      s.entries = s.values + empty + (s.rows - s.valid);
      s.body = LevelsSize(s.entries, 1) + LevelsSize(s.entries, BitsFor(col.max_def)) +
               (col.width == 0 ? Groups(s.values) : s.values * col.width);
      break;
    }
    case Kind::kDictionary:
      s.values = s.valid;
      s.body += 1 + HybridSize(s.valid, col.dict_bits);
      break;
  }
  return s;
}

std::string DataPageHeader(uint64_t body, uint64_t entries, int32_t encoding) {
  std::string out;
  ThriftWriter w(out);
  w.I32(1, kDataPage).I32(2, static_cast<int32_t>(body)).I32(3, static_cast<int32_t>(body));
  w.BeginStruct(5).I32(1, static_cast<int32_t>(entries)).I32(2, encoding);
  w.I32(3, kRle).I32(4, kRle).EndStruct();
  w.End();
  return out;
}

std::string DictionaryPageHeader(uint64_t body, uint64_t labels) {
  std::string out;
  ThriftWriter w(out);
  w.I32(1, kDictionaryPage).I32(2, static_cast<int32_t>(body)).I32(3, static_cast<int32_t>(body));
  w.BeginStruct(7).I32(1, static_cast<int32_t>(labels)).I32(2, kPlain).EndStruct();
  w.End();
  return out;
}

// Label i as a value: strings without trailing NULs, as data.csv shows them.
core::Bytes LabelValue(const core::Enumeration& e, uint64_t i) {
  const core::Bytes label = EnumerationValue(e, i);
  return core::IsString(e.type) ? StripTrailingNuls(label, core::DatatypeSize(e.type)) : label;
}

Physical LabelPhysical(const core::Enumeration& e) { return PhysicalOf(e.type); }

// A dictionary page's body: the labels, PLAIN.
void AppendDictionary(std::string& out, const core::Enumeration& e, uint32_t width) {
  for (uint64_t i = 0; i < EnumerationSize(e); ++i) {
    const core::Bytes label = LabelValue(e, i);
    if (width != 0) {
      AppendNumbers(out, e.type, width, label.data(), 1);
      continue;
    }
    const uint32_t len = static_cast<uint32_t>(label.size());
    out.append(reinterpret_cast<const char*>(&len), 4);
    out.append(reinterpret_cast<const char*>(label.data()), label.size());
  }
}

uint64_t DictionaryBody(const core::Enumeration& e, uint32_t width) {
  uint64_t n = 0;
  for (uint64_t i = 0; i < EnumerationSize(e); ++i) {
    n += width != 0 ? width : 4 + LabelValue(e, i).size();
  }
  return n;
}

bool LabelsUtf8(const core::Enumeration& e) {
  for (uint64_t i = 0; i < EnumerationSize(e); ++i) {
    if (!core::ValidUtf8(LabelValue(e, i))) return false;
  }
  return IsText(e.type);
}

}  // namespace

core::Result<ParquetPlan> ParquetPlan::Make(std::vector<ParquetField> fields, uint64_t rows,
                                            uint64_t piece_rows,
                                            std::map<std::string, std::string> metadata,
                                            bool first_dim_stats) {
  ParquetPlan plan;
  plan.rows_ = rows;
  plan.metadata_ = std::move(metadata);
  const uint64_t piece = std::max<uint64_t>(piece_rows, 1);
  const uint64_t pieces = rows / piece + (rows % piece != 0);
  for (ParquetField& f : fields) {
    const ParquetNeeds needs =
        ParquetNeedsOf(f.type, f.cell_val_num, f.nullable, f.dimension, f.enumeration);
    auto covers = [&](const std::vector<uint64_t>& v, bool needed) {
      return !needed || v.size() == pieces + 1;
    };
    if (!covers(f.counts.valid, needs.valid) || !covers(f.counts.bytes, needs.bytes) ||
        !covers(f.counts.empty, needs.empty)) {
      return Error::InvalidArgument(
          fmt::format("{}: counts that do not cover {} pieces", f.name, pieces));
    }
    Column col;
    const Physical physical = PhysicalOf(f.type);
    if (needs.labeled && f.counts.labeled) {
      // Every index has its label (an enumeration that has not is shown by
      // its indices, as data.csv shows the ones without).
      col.kind = Kind::kDictionary;
      col.dict_bits = BitsFor(std::max<uint64_t>(EnumerationSize(*f.enumeration), 1) - 1);
      col.width = WidthOf(LabelPhysical(*f.enumeration));
    } else if (physical == kBytes) {
      col.kind = Kind::kBytes;
    } else if (f.cell_val_num != 1) {
      col.kind = Kind::kList;
      col.width = WidthOf(physical);
    } else {
      col.kind = physical == kBoolean ? Kind::kBool : Kind::kFixed;
      col.width = WidthOf(physical);
    }
    if (col.kind == Kind::kDictionary) f.counts.utf8 = LabelsUtf8(*f.enumeration);
    col.nat = needs.nat;
    col.optional = f.nullable || needs.nat;
    col.max_rep = col.kind == Kind::kList ? 1 : 0;
    col.max_def = (col.kind == Kind::kList ? 1 : 0) + (col.optional ? 1 : 0);
    col.field = std::move(f);
    plan.columns_.push_back(std::move(col));
  }
  plan.first_dim_stats_ = first_dim_stats && !plan.columns_.empty() &&
                          plan.columns_[0].kind == Kind::kFixed && !plan.columns_[0].optional;

  uint64_t at = 4;  // "PAR1"
  auto add_page = [&](Page page, uint64_t header, uint64_t body) -> core::Status {
    if (body > kMaxPage || page.values > kMaxPage) {
      return Error::OutOfMemory(fmt::format("{}: a page of rows [{}, +{}) is past 2 GiB",
                                            plan.columns_[page.column].field.name, page.first_row,
                                            page.rows));
    }
    page.start = at;
    page.body = at + header;
    page.end = page.body + body;
    if (page.end < at || page.end > (uint64_t{1} << 62)) {
      return Error::OutOfMemory("data.parquet would be past 2^62 bytes");
    }
    at = page.end;
    plan.pages_.push_back(page);
    return core::Ok();
  };
  const uint64_t group_pieces = std::max<uint64_t>(1, kGroupRows / piece);
  const uint64_t page_pieces = std::max<uint64_t>(1, kPageRows / piece);
  for (uint64_t gj = 0; gj < pieces; gj += group_pieces) {
    const uint64_t gk = std::min(pieces, gj + group_pieces);
    plan.groups_.push_back(
        {gj * piece, std::min(rows, gk * piece) - gj * piece, plan.pages_.size()});
    for (uint32_t c = 0; c < plan.columns_.size(); ++c) {
      const Column& col = plan.columns_[c];
      if (col.kind == Kind::kDictionary) {
        const uint64_t labels = EnumerationSize(*col.field.enumeration);
        const uint64_t body = DictionaryBody(*col.field.enumeration, col.width);
        Page page;
        page.column = c;
        page.dictionary = true;
        page.values = labels;
        TRY(add_page(page, DictionaryPageHeader(body, labels).size(), body));
      }
      for (uint64_t j = gj; j < gk;) {
        // Whole pieces, while the page stays within its rows and bytes.
        uint64_t k = j + 1;
        ASSIGN_OR_RETURN(PageShape shape, ShapeOf(col, piece, rows, j, k));
        while (k < gk && k - j < page_pieces) {
          ASSIGN_OR_RETURN(PageShape more, ShapeOf(col, piece, rows, j, k + 1));
          if (more.body > kPageBytes) break;
          shape = more;
          ++k;
        }
        Page page;
        page.column = c;
        page.first_row = j * piece;
        page.rows = shape.rows;
        page.values = shape.entries;
        page.nulls = shape.rows - shape.valid;
        const int32_t encoding = col.kind == Kind::kDictionary ? kRleDictionary : kPlain;
        TRY(add_page(page, DataPageHeader(shape.body, shape.entries, encoding).size(), shape.body));
        j = k;
      }
    }
  }
  plan.footer_start_ = at;
  plan.size_ = at + plan.EncodeFooter(nullptr).size();
  return plan;
}

size_t ParquetPlan::PageAt(uint64_t offset) const {
  if (offset >= footer_start_) return pages_.size();
  auto it = std::upper_bound(pages_.begin(), pages_.end(), offset,
                             [](uint64_t o, const Page& p) { return o < p.start; });
  return it == pages_.begin() ? pages_.size() : static_cast<size_t>(it - pages_.begin()) - 1;
}

std::string ParquetPlan::PageHeader(size_t p) const {
  const Page& page = pages_[p];
  const Column& col = columns_[page.column];
  if (page.dictionary) return DictionaryPageHeader(page.end - page.body, page.values);
  return DataPageHeader(page.end - page.body, page.values,
                        col.kind == Kind::kDictionary ? kRleDictionary : kPlain);
}

uint32_t ParquetPlan::DirectWidth(size_t column) const {
  const Column& col = columns_[column];
  return col.kind == Kind::kFixed && col.max_def == 0 ? col.width : 0;
}

void ParquetPlan::AppendFixedValues(const Column& column, const core::Column& cells,
                                    std::string& out) {
  AppendNumbers(out, cells.type, column.width, cells.data.data(), cells.cell_count);
}

core::Status ParquetPlan::AppendPageBody(size_t p, const core::Column& cells,
                                         std::string& out) const {
  const Page& page = pages_[p];
  const Column& col = columns_[page.column];
  const ParquetField& f = col.field;
  const size_t at = out.size();
  auto mismatch = [&](std::string_view what) {
    return Error::Corrupt(fmt::format("data.parquet: column {}, rows [{}, +{}): {}", f.name,
                                      page.first_row, page.rows, what));
  };
  if (page.dictionary) {
    AppendDictionary(out, *f.enumeration, col.width);
  } else {
    if (cells.cell_count != page.rows || cells.type != f.type ||
        cells.cell_val_num != f.cell_val_num || (f.nullable && cells.validity.size() < page.rows)) {
      return mismatch(fmt::format("{} cells read", cells.cell_count));
    }
    auto has = [&](uint64_t i) { return HasValue(cells, i, col.nat); };
    const uint64_t n = page.rows;
    if (col.max_def > 0 && col.kind != Kind::kList) {
      AppendLevels(out, n, 1, [&](uint64_t i) { return has(i) ? 1u : 0u; });
    }
    switch (col.kind) {
      case Kind::kFixed:
        if (!col.optional) {
          AppendFixedValues(col, cells, out);
          break;
        }
        for (uint64_t i = 0; i < n; ++i) {
          if (has(i)) AppendNumbers(out, f.type, col.width, cells.cell(i).data(), 1);
        }
        break;
      case Kind::kBool: {
        std::vector<uint8_t> bits;
        for (uint64_t i = 0; i < n; ++i) {
          if (has(i)) bits.push_back(cells.cell(i)[0] != 0);
        }
        for (uint64_t g = 0; g < Groups(bits.size()); ++g) {
          uint8_t byte = 0;
          for (uint64_t b = 0; b < 8 && g * 8 + b < bits.size(); ++b) byte |= bits[g * 8 + b] << b;
          out.push_back(static_cast<char>(byte));
        }
        break;
      }
      case Kind::kBytes:
        for (uint64_t i = 0; i < n; ++i) {
          if (!has(i)) continue;
          const core::Bytes cell = ParquetValue(cells, i);
          const uint32_t len = static_cast<uint32_t>(cell.size());
          out.append(reinterpret_cast<const char*>(&len), 4);
          out.append(reinterpret_cast<const char*>(cell.data()), cell.size());
        }
        break;
      case Kind::kList: {
        // Levels: a null cell is (rep 0, def 0); an empty one (0, max_def
        // - 1); an element (0 for a cell's first, else 1; max_def).
        const uint64_t elem = core::DatatypeSize(f.type);
        std::vector<uint8_t> rep, def;
        rep.reserve(page.values);
        def.reserve(page.values);
        for (uint64_t i = 0; i < n; ++i) {
          const uint64_t k = has(i) ? cells.cell(i).size() / elem : 0;
          if (!has(i) || k == 0) {
            rep.push_back(0);
            def.push_back(has(i) ? col.max_def - 1 : 0);
          }
          for (uint64_t e = 0; e < k; ++e) {
            rep.push_back(e == 0 ? 0 : 1);
            def.push_back(col.max_def);
          }
        }
        if (rep.size() != page.values) return mismatch(fmt::format("{} list entries", rep.size()));
        AppendLevels(out, rep.size(), 1, [&](uint64_t i) { return rep[i]; });
        AppendLevels(out, def.size(), BitsFor(col.max_def), [&](uint64_t i) { return def[i]; });
        if (col.width == 0) {  // BOOLEAN elements, bit-packed
          std::string bits;
          uint64_t v = 0;
          uint8_t byte = 0;
          for (uint64_t i = 0; i < n; ++i) {
            if (!has(i)) continue;
            for (uint8_t b : cells.cell(i)) {
              byte |= (b != 0 ? 1 : 0) << (v % 8);
              if (++v % 8 == 0) {
                out.push_back(static_cast<char>(byte));
                byte = 0;
              }
            }
          }
          if (v % 8 != 0) out.push_back(static_cast<char>(byte));
          break;
        }
        for (uint64_t i = 0; i < n; ++i) {
          if (!has(i)) continue;
          const core::Bytes cell = cells.cell(i);
          AppendNumbers(out, f.type, col.width, cell.data(), cell.size() / elem);
        }
        break;
      }
      case Kind::kDictionary: {
        const uint64_t labels = EnumerationSize(*f.enumeration);
        std::vector<uint32_t> index;
        for (uint64_t i = 0; i < n; ++i) {
          if (!has(i)) continue;
          const __int128 k = EnumerationIndex(f.type, cells.cell(i));
          if (k < 0 || k >= static_cast<__int128>(labels)) {
            return mismatch(fmt::format("row {}: enumeration index {} past its {} labels",
                                        page.first_row + i, static_cast<int64_t>(k), labels));
          }
          index.push_back(static_cast<uint32_t>(k));
        }
        out.push_back(static_cast<char>(col.dict_bits));
        AppendHybrid(out, index.size(), col.dict_bits, [&](uint64_t i) { return index[i]; });
        break;
      }
    }
  }
  if (out.size() - at != page.end - page.body) {
    const uint64_t got = out.size() - at;
    out.resize(at);
    return mismatch(fmt::format("{} bytes of page, {} planned (the cells changed?)", got,
                                page.end - page.body));
  }
  return core::Ok();
}

}  // namespace tiledbfs::fusefs
