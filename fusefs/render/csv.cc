#include "fusefs/render/csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/read/sparse_order.h"
#include "core/util/text.h"
#include "fusefs/render/number_text.h"
#include "fusefs/render/shortest_decimal.h"
#include "fusefs/render/value_text.h"

namespace tiledbfs::fusefs {

bool CsvNeedsQuotes(std::string_view text) {
  return text.empty() || text.find_first_of(",\"\r\n") != std::string_view::npos;
}

void AppendCsvField(std::string& out, std::string_view text) {
  if (!core::ValidUtf8(text)) {
    // Escaping adds only \ x and hex digits: the quoting stays the same.
    std::string escaped;
    core::AppendUtf8Escaped(escaped, text);
    return AppendCsvField(out, escaped);
  }
  if (!CsvNeedsQuotes(text)) {
    out += text;
    return;
  }
  out += '"';
  for (char ch : text) {
    if (ch == '"') out += '"';
    out += ch;
  }
  out += '"';
}

void AppendCsvCell(std::string& out, const core::Column& c, uint64_t i,
                   const core::Enumeration* enumeration, std::string& scratch) {
  if (!c.valid(i)) return;
  scratch.clear();
  AppendCellText(scratch, c, i, enumeration);
  AppendCsvField(out, scratch);
}

core::Result<CsvTable> CsvTable::Make(std::vector<CsvColumn> columns, bool header) {
  if (columns.empty()) return core::Error::InvalidArgument("CSV table without columns");
  uint64_t rows = 0;
  for (size_t k = 0; k < columns.size(); ++k) {
    const core::Column* c = columns[k].column;
    if (c == nullptr) {
      return core::Error::InvalidArgument(fmt::format("CSV table column {} is null", k));
    }
    TRY(CheckColumn(*c));
    if (k == 0) rows = c->cell_count;
    if (c->cell_count != rows) {
      return core::Error::InvalidArgument(
          fmt::format("CSV table: column '{}' has {} cells, column '{}' has {}", c->name,
                      c->cell_count, columns[0].column->name, rows));
    }
  }
  return CsvTable(std::move(columns), header, rows);
}

void CsvTable::AppendHeader(std::string& out) const {
  if (!header_) return;
  for (size_t k = 0; k < columns_.size(); ++k) {
    if (k > 0) out += ',';
    AppendCsvField(out, columns_[k].column->name);
  }
  out += '\n';
}

namespace {

// How a column's cells are written (CsvTable::kinds_).
enum Kind : uint8_t {
  kGeneric,  // AppendCellText into a scratch string, then quoted if needed
  kInt8,
  kUInt8,
  kInt16,
  kUInt16,
  kInt32,
  kUInt32,
  kInt64,  // also TIME_*
  kUInt64,
  kFloat32,
  kFloat64,
  kBool,
  // CHAR, STRING_ASCII, STRING_UTF8: the bytes (\xHH where not UTF-8),
  // trailing NULs dropped
  kRawText,
};

Kind KindOf(const core::Column& c, const core::Enumeration* e) {
  using core::Datatype;
  if (e != nullptr && core::IsInteger(c.type)) return kGeneric;  // labels
  bool raw_text = c.type == Datatype::kChar || c.type == Datatype::kStringAscii ||
                  c.type == Datatype::kStringUtf8;
  if (raw_text) return kRawText;
  if (c.var() || c.cell_val_num != 1) return kGeneric;
  switch (c.type) {
    case Datatype::kInt8:
      return kInt8;
    case Datatype::kUInt8:
      return kUInt8;
    case Datatype::kInt16:
      return kInt16;
    case Datatype::kUInt16:
      return kUInt16;
    case Datatype::kInt32:
      return kInt32;
    case Datatype::kUInt32:
      return kUInt32;
    case Datatype::kInt64:
      return kInt64;
    case Datatype::kUInt64:
      return kUInt64;
    case Datatype::kFloat32:
      return kFloat32;
    case Datatype::kFloat64:
      return kFloat64;
    case Datatype::kBool:
      return kBool;
    default:
      return core::IsTime(c.type) ? kInt64 : kGeneric;
  }
}

// Where Emit writes: `out` grown in large steps, its tail past `p` scratch
// space. Emit keeps p and end in locals (registers) and calls Room before
// each write that may need more than is left. Every store through a char
// pointer may alias any memory, so a cursor kept in an object was written
// back and reloaded around every store.
struct Cursor {
  char* p;
  char* end;
};

// Makes room for `need` bytes at c.p: uses the capacity there is before
// reallocating (a caller that reserved the size it expects gets no
// reallocation), then doubles.
Cursor Grow(std::string& out, Cursor c, size_t need) {
  const size_t used = static_cast<size_t>(c.p - out.data());
  const size_t cap = out.capacity();
  // Within the capacity, a block at a time: resize zero-fills, and a caller
  // appending a few rows at a time to a large buffer (diff runs) would
  // otherwise fill the whole rest of it on every call.
  constexpr size_t kBlock = 16384;
  out.resize(used + need <= cap ? std::min(cap, used + std::max(need, kBlock))
                                : std::max({used + need, 2 * cap, size_t{65536}}));
  return {out.data() + used, out.data() + out.size()};
}

inline Cursor Room(std::string& out, Cursor c, size_t need) {
  return static_cast<size_t>(c.end - c.p) >= need ? c : Grow(out, c, need);
}

// A CSV field at p (room for 2 * n + 2 bytes): quoted if `quote`, quotes
// doubled.
char* WriteText(char* p, const char* text, size_t n, bool quote) {
  if (!quote) {
    std::memcpy(p, text, n);
    return p + n;
  }
  *p++ = '"';
  for (size_t k = 0; k < n; ++k) {
    if (text[k] == '"') *p++ = '"';
    *p++ = text[k];
  }
  *p++ = '"';
  return p;
}

// The bytes that make a field quoted: , " CR LF.
constexpr std::array<bool, 256> MakeSpecial() {
  std::array<bool, 256> t{};
  t[static_cast<uint8_t>(',')] = t[static_cast<uint8_t>('"')] = true;
  t[static_cast<uint8_t>('\r')] = t[static_cast<uint8_t>('\n')] = true;
  return t;
}
constexpr std::array<bool, 256> kSpecial = MakeSpecial();

// A field is quoted when empty or holding , " CR or LF.
bool NeedsQuotes(const char* text, size_t n) {
  if (n == 0) return true;
  for (size_t k = 0; k < n; ++k) {
    if (kSpecial[static_cast<uint8_t>(text[k])]) return true;
  }
  return false;
}

// True if bytes [p, end) hold none of , " CR LF NUL; `ascii` tells whether
// all of them are below 0x80.
bool NoSpecialBytes(const uint8_t* p, const uint8_t* end, bool& ascii) {
  uint8_t hit = 0, high = 0;
#if defined(__SSE2__)
  // 16 bytes at a time: the byte loop below does not vectorize (the
  // compiler makes it a branch per byte), and it was a third of measuring
  // a table with a text column.
  const __m128i comma = _mm_set1_epi8(','), quote = _mm_set1_epi8('"');
  const __m128i cr = _mm_set1_epi8('\r'), lf = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
  __m128i any = zero, bytes = zero;
  for (; end - p >= 16; p += 16) {
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    bytes = _mm_or_si128(bytes, b);
    any = _mm_or_si128(
        any, _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, comma), _mm_cmpeq_epi8(b, quote)),
                          _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(b, cr), _mm_cmpeq_epi8(b, lf)),
                                       _mm_cmpeq_epi8(b, zero))));
  }
  hit = _mm_movemask_epi8(any) != 0;
  high = _mm_movemask_epi8(bytes) != 0 ? 0x80 : 0;
#endif
  for (; p < end; ++p) {
    const uint8_t b = *p;
    hit |= static_cast<uint8_t>((b == ',') | (b == '"') | (b == '\r') | (b == '\n') | (b == 0));
    high |= b;
  }
  ascii = (high & 0x80) == 0;
  return hit == 0;
}

// True if cells [first, last) of a var-sized text column hold no byte that
// quoting or NUL-trimming looks at (, " CR LF NUL) and each is valid UTF-8:
// then a cell is written as it is, or as "" when empty.
bool PlainText(const core::Column& c, uint64_t first, uint64_t last) {
  if (!c.var() || first >= last) return false;
  const uint8_t* d = c.data.data();
  const uint64_t from = c.offsets[first], to = c.offsets[last];
  bool ascii = false;
  if (!NoSpecialBytes(d + from, d + to, ascii)) return false;
  if (ascii) return true;
  // Valid as a whole, and no cell starts with a continuation byte (inside a
  // sequence): then every cell is valid on its own.
  if (!core::ValidUtf8(core::Bytes(d + from, to - from))) return false;
  for (uint64_t i = first + 1; i < last; ++i) {
    if (c.offsets[i] < to && (d[c.offsets[i]] & 0xC0) == 0x80) return false;
  }
  return true;
}

// True if cells [first, last) of a text column are all ASCII: then none
// needs its bytes checked for UTF-8 one by one.
bool AsciiText(const core::Column& c, uint64_t first, uint64_t last) {
  if (first >= last) return true;
  const uint8_t* d = c.data.data();
  const uint64_t from = c.var() ? c.offsets[first] : first * c.cell_size();
  const uint64_t to = c.var() ? c.offsets[last] : last * c.cell_size();
  bool ascii = false;
  NoSpecialBytes(d + from, d + to, ascii);
  return ascii;
}

// An integer column's last value and where Emit wrote its text. A sparse
// array's leading dimension holds one value for a run of cells (a row of a
// tile: about 100 cells in sparse8), so its text is copied from the last row
// instead of being converted again.
struct LastInteger {
  uint64_t value = 0;
  size_t at = 0;    // offset of its text in `out`
  size_t size = 0;  // 0: nothing written yet
};

// Integer T at v, written at p, or copied from `last`'s text in `out` when
// it is the same value. The copy moves kMaxIntegerText bytes through
// registers: the source may be as close as the last row (a row of one
// narrow column), so it is read whole before the store.
inline constexpr size_t kMaxIntegerText = 24;  // 20 digits and a sign fit

template <class T>
char* WriteIntRepeatAt(char* p, const uint8_t* v, const char* base, LastInteger& last) {
  T x;
  std::memcpy(&x, v, sizeof(T));
  const uint64_t bits = static_cast<uint64_t>(x);
  if (bits == last.value && last.size != 0) {
    char text[kMaxIntegerText];
    std::memcpy(text, base + last.at, kMaxIntegerText);
    std::memcpy(p, text, kMaxIntegerText);
    return p + last.size;
  }
  char* end = WriteInteger(p, x);
  last = {bits, static_cast<size_t>(p - base), static_cast<size_t>(end - p)};
  return end;
}

// Float columns are converted to their shortest digits kFormBlock values
// at a time (ShortestDecimals), before the values are written.
inline constexpr uint64_t kFormBlock = 256;

// F at v, its ShortestDecimals form `dec`.
template <class F>
char* WriteFloatAt(char* p, const uint8_t* v, DecimalForm dec) {
  F x;
  std::memcpy(&x, v, sizeof(F));
  if (std::isfinite(x)) return WriteShortestFrom(p, x, dec);
  // The sign of a NaN means nothing to a reader (value_text.h).
  const std::string_view text = std::isnan(x) ? "nan" : x < 0 ? "-inf" : "inf";
  std::memcpy(p, text.data(), text.size());
  return p + text.size();
}

}  // namespace

CsvTable::CsvTable(std::vector<CsvColumn> columns, bool header, uint64_t rows)
    : columns_(std::move(columns)), header_(header), rows_(rows) {
  for (const auto& c : columns_) kinds_.push_back(KindOf(*c.column, c.enumeration));
}

// One walk over the cells, writing them (MeasureRows counts the same bytes
// column by column; tests check that the two agree on every corpus view).
void CsvTable::Emit(std::string& out, uint64_t first, uint64_t last) const {
  last = std::min(last, rows_);
  std::string scratch;
  const size_t nc = columns_.size();
  std::vector<uint64_t> sizes(nc);      // cell sizes of fixed columns (0: var)
  std::vector<uint8_t> plain(nc);       // text columns without bytes to quote or trim here
  std::vector<uint8_t> ascii(nc);       // text columns that are ASCII here
  std::vector<LastInteger> repeat(nc);  // integer columns: the last value written
  for (size_t k = 0; k < nc; ++k) {
    sizes[k] = columns_[k].column->cell_size();
    plain[k] = kinds_[k] == kRawText && PlainText(*columns_[k].column, first, last);
    ascii[k] = kinds_[k] == kRawText && !plain[k] && AsciiText(*columns_[k].column, first, last);
  }
  // Room for a separator and a number (or true, false, nan, -inf).
  constexpr size_t kCell = kMaxNumberText + 1;
  constexpr uint64_t kShortText = 16;
  // The float columns' forms (ShortestDecimals) for the rows of a block:
  // column k's at forms[form_at[k]].
  std::vector<size_t> form_at(nc, 0);
  size_t float_columns = 0;
  for (size_t k = 0; k < nc; ++k) {
    if (kinds_[k] == kFloat32 || kinds_[k] == kFloat64) form_at[k] = kFormBlock * float_columns++;
  }
  std::vector<DecimalForm> forms(kFormBlock * float_columns);
  Cursor at{out.data() + out.size(), out.data() + out.size()};
  for (uint64_t block = first; block < last; block += kFormBlock) {
    const uint64_t block_end = std::min(last, block + kFormBlock);
    for (size_t k = 0; k < nc; ++k) {
      const uint8_t* data = columns_[k].column->data.data();
      if (kinds_[k] == kFloat32) {
        ShortestDecimals<float>(data + block * 4, block_end - block, &forms[form_at[k]]);
      } else if (kinds_[k] == kFloat64) {
        ShortestDecimals<double>(data + block * 8, block_end - block, &forms[form_at[k]]);
      }
    }
    for (uint64_t i = block; i < block_end; ++i) {
      for (size_t k = 0; k < nc; ++k) {
        at = Room(out, at, kCell);
        char* p = at.p;
        if (k > 0) *p++ = ',';
        const core::Column& c = *columns_[k].column;
        if (c.nullable && c.validity[i] == 0) {
          at.p = p;
          continue;
        }
        const uint8_t* fixed = c.data.data() + i * sizes[k];  // fixed columns only
        switch (kinds_[k]) {
          case kInt8:
            p = WriteIntRepeatAt<int8_t>(p, fixed, out.data(), repeat[k]);
            break;
          case kUInt8:
            p = WriteIntRepeatAt<uint8_t>(p, fixed, out.data(), repeat[k]);
            break;
          case kInt16:
            p = WriteIntRepeatAt<int16_t>(p, fixed, out.data(), repeat[k]);
            break;
          case kUInt16:
            p = WriteIntRepeatAt<uint16_t>(p, fixed, out.data(), repeat[k]);
            break;
          case kInt32:
            p = WriteIntRepeatAt<int32_t>(p, fixed, out.data(), repeat[k]);
            break;
          case kUInt32:
            p = WriteIntRepeatAt<uint32_t>(p, fixed, out.data(), repeat[k]);
            break;
          case kInt64:
            p = WriteIntRepeatAt<int64_t>(p, fixed, out.data(), repeat[k]);
            break;
          case kUInt64:
            p = WriteIntRepeatAt<uint64_t>(p, fixed, out.data(), repeat[k]);
            break;
          case kFloat32:
            p = WriteFloatAt<float>(p, fixed, forms[form_at[k] + (i - block)]);
            break;
          case kFloat64:
            p = WriteFloatAt<double>(p, fixed, forms[form_at[k] + (i - block)]);
            break;
          case kBool: {
            const std::string_view text = fixed[0] != 0 ? "true" : "false";
            std::memcpy(p, text.data(), text.size());
            p += text.size();
            break;
          }
          case kRawText: {
            const char* text;
            size_t n;
            bool quote;
            if (plain[k]) {
              const uint64_t from = c.offsets[i];
              n = c.offsets[i + 1] - from;
              text = reinterpret_cast<const char*>(c.data.data() + from);
              if (n - 1 < kShortText && from + kShortText <= c.data.size()) {
                // A short value (1 to 16 bytes) with 16 bytes to read from:
                // one fixed-size copy, no memcpy call per value.
                at.p = p;
                at = Room(out, at, kShortText);
                std::memcpy(at.p, text, kShortText);
                p = at.p + n;
                break;
              }
              quote = n == 0;
            } else {
              core::Bytes cell = c.cell(i);
              n = cell.size();
              while (n > 0 && cell[n - 1] == 0) --n;
              text = reinterpret_cast<const char*>(cell.data());
              if (!ascii[k] && !core::ValidUtf8(cell.first(n))) {
                scratch.clear();
                core::AppendUtf8Escaped(scratch, cell.first(n));
                text = scratch.data();
                n = scratch.size();
              }
              quote = NeedsQuotes(text, n);
            }
            at.p = p;
            at = Room(out, at, 2 * n + 2);
            p = WriteText(at.p, text, n, quote);
            break;
          }
          default:
            scratch.clear();
            AppendCellText(scratch, c, i, columns_[k].enumeration);
            at.p = p;
            at = Room(out, at, 2 * scratch.size() + 2);
            p = WriteText(at.p, scratch.data(), scratch.size(),
                          NeedsQuotes(scratch.data(), scratch.size()));
            break;
        }
        at.p = p;
      }
      at = Room(out, at, 1);
      *at.p++ = '\n';
    }
  }
  out.resize(static_cast<size_t>(at.p - out.data()));
}

void CsvTable::AppendRows(std::string& out, uint64_t first, uint64_t last) const {
  if (first >= std::min(last, rows_)) return;
  Emit(out, first, last);
}

namespace {

// The bytes of the cells [first, last) of one column (no separators), column
// by column with one loop per type: what Emit writes for them.
template <class Cell>
uint64_t MeasureCells(const core::Column& c, uint64_t first, uint64_t last, Cell cell) {
  uint64_t bytes = 0;
  const uint8_t* valid = c.nullable ? c.validity.data() : nullptr;
  for (uint64_t i = first; i < last; ++i) {
    if (valid != nullptr && valid[i] == 0) continue;
    bytes += cell(i);
  }
  return bytes;
}

template <class T>
uint64_t MeasureIntColumn(const core::Column& c, uint64_t first, uint64_t last) {
  const uint8_t* data = c.data.data();
  return MeasureCells(c, first, last, [&](uint64_t i) {
    T x;
    std::memcpy(&x, data + i * sizeof(T), sizeof(T));
    return MeasureInteger(x);
  });
}

template <class F>
uint64_t MeasureFloatColumn(const core::Column& c, uint64_t first, uint64_t last) {
  const uint8_t* data = c.data.data();
  const uint8_t* valid = c.nullable ? c.validity.data() : nullptr;
  DecimalForm forms[kFormBlock];
  uint64_t bytes = 0;
  for (uint64_t block = first; block < last; block += kFormBlock) {
    const uint64_t n = std::min<uint64_t>(kFormBlock, last - block);
    ShortestDecimals<F>(data + block * sizeof(F), n, forms);
    for (uint64_t j = 0; j < n; ++j) {
      if (valid != nullptr && valid[block + j] == 0) continue;
      F x;
      std::memcpy(&x, data + (block + j) * sizeof(F), sizeof(F));
      bytes += std::isfinite(x) ? MeasureShortestFrom(x, forms[j])
               : std::isnan(x)  ? 3
               : x < 0          ? 4
                                : 3;
    }
  }
  return bytes;
}

uint64_t MeasureText(const char* text, size_t n) {
  if (!NeedsQuotes(text, n)) return n;
  return n + 2 + static_cast<uint64_t>(std::count(text, text + n, '"'));
}

}  // namespace

uint64_t CsvTable::MeasureRows(uint64_t first, uint64_t last) const {
  last = std::min(last, rows_);
  if (first >= last) return 0;
  // Separators: a comma between cells, a newline after each row.
  uint64_t bytes = (last - first) * columns_.size();
  std::string scratch;
  for (size_t k = 0; k < columns_.size(); ++k) {
    const core::Column& c = *columns_[k].column;
    switch (kinds_[k]) {
      case kInt8:
        bytes += MeasureIntColumn<int8_t>(c, first, last);
        break;
      case kUInt8:
        bytes += MeasureIntColumn<uint8_t>(c, first, last);
        break;
      case kInt16:
        bytes += MeasureIntColumn<int16_t>(c, first, last);
        break;
      case kUInt16:
        bytes += MeasureIntColumn<uint16_t>(c, first, last);
        break;
      case kInt32:
        bytes += MeasureIntColumn<int32_t>(c, first, last);
        break;
      case kUInt32:
        bytes += MeasureIntColumn<uint32_t>(c, first, last);
        break;
      case kInt64:
        bytes += MeasureIntColumn<int64_t>(c, first, last);
        break;
      case kUInt64:
        bytes += MeasureIntColumn<uint64_t>(c, first, last);
        break;
      case kFloat32:
        bytes += MeasureFloatColumn<float>(c, first, last);
        break;
      case kFloat64:
        bytes += MeasureFloatColumn<double>(c, first, last);
        break;
      case kBool:
        bytes += MeasureCells(c, first, last,
                              [&](uint64_t i) -> uint64_t { return c.data[i] != 0 ? 4 : 5; });
        break;
      case kRawText:
        if (PlainText(c, first, last)) {
          // The values as they are; an empty one is "" (a null nothing).
          if (!c.nullable) {
            uint64_t empty = 0;
            for (uint64_t i = first; i < last; ++i) empty += c.offsets[i + 1] == c.offsets[i];
            bytes += c.offsets[last] - c.offsets[first] + 2 * empty;
          } else {
            bytes += MeasureCells(c, first, last, [&](uint64_t i) -> uint64_t {
              uint64_t n = c.offsets[i + 1] - c.offsets[i];
              return n == 0 ? 2 : n;
            });
          }
          break;
        }
        if (AsciiText(c, first, last)) {
          bytes += MeasureCells(c, first, last, [&](uint64_t i) {
            core::Bytes cell = c.cell(i);
            size_t n = cell.size();
            while (n > 0 && cell[n - 1] == 0) --n;
            return MeasureText(reinterpret_cast<const char*>(cell.data()), n);
          });
          break;
        }
        bytes += MeasureCells(c, first, last, [&](uint64_t i) {
          core::Bytes cell = c.cell(i);
          size_t n = cell.size();
          while (n > 0 && cell[n - 1] == 0) --n;
          // Escaping keeps the quotes and adds 3 bytes per byte escaped.
          return MeasureText(reinterpret_cast<const char*>(cell.data()), n) +
                 core::Utf8EscapedSize(cell.first(n)) - n;
        });
        break;
      default:
        bytes += MeasureCells(c, first, last, [&](uint64_t i) {
          scratch.clear();
          AppendCellText(scratch, c, i, columns_[k].enumeration);
          return MeasureText(scratch.data(), scratch.size());
        });
        break;
    }
  }
  return bytes;
}

namespace {

// CsvIntegerWidths for a type T: the width of its lowest value, then the
// values where the width changes (-(10^k - 1): k digits and a minus sign;
// 0; 10^k: k + 1 digits) within T's range, in ascending order.
template <class T>
CsvWidthClasses WidthClassesOf(core::Datatype type) {
  CsvWidthClasses w;
  auto ordered = [&](T v) {
    uint8_t bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    return core::OrderedValue(type, bytes);
  };
  w.widths.push_back(MeasureInteger(std::numeric_limits<T>::lowest()));
  auto add = [&](T v) {
    w.bounds.push_back(ordered(v));
    w.widths.push_back(MeasureInteger(v));
  };
  // 10^k fits in T for k <= kDigits, and T's extremes have more digits.
  constexpr int kDigits = std::numeric_limits<T>::digits10;
  if constexpr (std::is_signed_v<T>) {
    int64_t p = 1;
    for (int k = 0; k < kDigits; ++k) p *= 10;
    for (; p > 1; p /= 10) add(static_cast<T>(-(p - 1)));
    add(0);
  }
  uint64_t p = 10;
  for (int k = 1; k <= kDigits; ++k, p *= 10) add(static_cast<T>(p));
  return w;
}

}  // namespace

std::optional<CsvWidthClasses> CsvIntegerWidths(core::Datatype type, uint32_t cell_val_num) {
  core::Column stub;
  stub.type = type;
  stub.cell_val_num = cell_val_num;
  switch (KindOf(stub, nullptr)) {
    case kInt8:
      return WidthClassesOf<int8_t>(type);
    case kUInt8:
      return WidthClassesOf<uint8_t>(type);
    case kInt16:
      return WidthClassesOf<int16_t>(type);
    case kUInt16:
      return WidthClassesOf<uint16_t>(type);
    case kInt32:
      return WidthClassesOf<int32_t>(type);
    case kUInt32:
      return WidthClassesOf<uint32_t>(type);
    case kInt64:
      return WidthClassesOf<int64_t>(type);
    case kUInt64:
      return WidthClassesOf<uint64_t>(type);
    default:
      return std::nullopt;
  }
}

}  // namespace tiledbfs::fusefs
