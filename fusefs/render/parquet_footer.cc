// data.parquet's footer: the FileMetaData (parquet.thrift) of a
// ParquetPlan, with the first dimension's statistics per row group.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <optional>

#include "fusefs/render/parquet.h"
#include "fusefs/render/parquet_format.h"
#include "fusefs/render/thrift_compact.h"

namespace tiledbfs::fusefs {

using core::Datatype;
using core::Error;
using namespace parquet_format;

namespace {

// The PLAIN bytes of one value of type t at p, as statistics hold it.
std::string StatBytes(Datatype t, uint32_t width, const uint8_t* p, bool is_max) {
  std::string v;
  AppendNumbers(v, t, width, p, 1);
  // parquet.thrift ColumnOrder: a zero float minimum is written -0.0, a
  // zero maximum +0.0, whichever zero the values hold.
  if (t == Datatype::kFloat32 && core::LoadNumber<float>({p, 4}) == 0.0f) {
    const float z = is_max ? 0.0f : -0.0f;
    std::memcpy(v.data(), &z, 4);
  } else if (t == Datatype::kFloat64 && core::LoadNumber<double>({p, 8}) == 0.0) {
    const double z = is_max ? 0.0 : -0.0;
    std::memcpy(v.data(), &z, 8);
  }
  return v;
}

}  // namespace

std::string ParquetPlan::StatValue(const core::Column& cells, bool is_max) const {
  return StatBytes(cells.type, columns_[0].width, cells.data.data(), is_max);
}

std::optional<std::vector<ParquetPlan::MinMax>> ParquetPlan::StatsFromEnds(
    uint64_t piece_rows) const {
  if (!first_dim_stats_) return std::nullopt;
  const ParquetField& f = columns_[0].field;
  const uint64_t piece = std::max<uint64_t>(piece_rows, 1);
  const uint64_t pieces = rows_ / piece + (rows_ % piece != 0);
  if (f.counts.ends.size() != 2 * pieces) return std::nullopt;
  auto value = [&](uint64_t raw, bool is_max) {
    uint8_t bytes[8];
    std::memcpy(bytes, &raw, 8);
    return StatBytes(f.type, columns_[0].width, bytes, is_max);
  };
  std::vector<MinMax> out;
  for (const RowGroup& g : groups_) {
    const uint64_t j = g.first_row / piece, k = (g.first_row + g.rows - 1) / piece;
    out.push_back({value(f.counts.ends[2 * j], false), value(f.counts.ends[2 * k + 1], true)});
  }
  return out;
}

core::Result<std::string> ParquetPlan::Footer(const std::vector<MinMax>& first_dim) const {
  if (first_dim_stats_) {
    if (first_dim.size() != groups_.size()) {
      return Error::InvalidArgument(
          fmt::format("{} statistics for {} row groups", first_dim.size(), groups_.size()));
    }
    for (const MinMax& m : first_dim) {
      if (m.min.size() != columns_[0].width || m.max.size() != columns_[0].width) {
        return Error::Corrupt("data.parquet: a statistic of another width");
      }
    }
  }
  std::string out = EncodeFooter(first_dim_stats_ ? &first_dim : nullptr);
  if (footer_start_ + out.size() != size_) {
    return Error::Corrupt(fmt::format("data.parquet: a footer of {} bytes, {} planned", out.size(),
                                      size_ - footer_start_));
  }
  return out;
}

namespace {

// LogicalType (field 10) and converted_type (6) of a value of type t, as
// SchemaElement fields; `text`: a BYTE_ARRAY annotated STRING.
void WriteAnnotations(ThriftWriter& w, Datatype t, bool text) {
  Converted converted = kNoConverted;
  if (text) converted = kUtf8;
  const bool integer = core::IsInteger(t);
  const bool timestamp =
      t == Datatype::kDatetimeMs || t == Datatype::kDatetimeUs || t == Datatype::kDatetimeNs;
  const bool time = t == Datatype::kTimeUs || t == Datatype::kTimeNs;
  const int bits = static_cast<int>(core::DatatypeSize(t) * 8);
  const bool is_signed = core::IsSigned(t);
  if (timestamp) {
    converted = t == Datatype::kDatetimeMs   ? kTimestampMillis
                : t == Datatype::kDatetimeUs ? kTimestampMicros
                                             : kNoConverted;
  } else if (time) {
    converted = t == Datatype::kTimeUs ? kTimeMicros : kNoConverted;
  } else if (integer) {
    const int log = std::countr_zero(static_cast<unsigned>(bits)) - 3;  // 0 for 8 bits ... 3 for 64
    converted = static_cast<Converted>((is_signed ? kInt8 : kUint8) + log);
  }
  if (converted != kNoConverted) w.I32(6, converted);
  if (!text && !integer && !timestamp && !time) return;
  w.BeginStruct(10);
  if (text) {
    w.BeginStruct(1).EndStruct();
  } else if (timestamp || time) {
    const int16_t unit = t == Datatype::kDatetimeMs                               ? 1
                         : (t == Datatype::kDatetimeUs || t == Datatype::kTimeUs) ? 2
                                                                                  : 3;
    // NANOS as local time: DuckDB has no nanosecond type with a time zone,
    // and would truncate an adjusted one to microseconds.
    w.BeginStruct(timestamp ? 8 : 7).Bool(1, timestamp && t != Datatype::kDatetimeNs);
    w.BeginStruct(2).BeginStruct(unit).EndStruct().EndStruct();
    w.EndStruct();
  } else {
    w.BeginStruct(10).I8(1, static_cast<int8_t>(bits)).Bool(2, is_signed).EndStruct();
  }
  w.EndStruct();
}

// DATETIME and TIME units Parquet has no type for: plain INT64, the unit
// in the column chunk's key-value metadata.
bool UnitInMetadata(Datatype t) {
  return (core::IsDatetime(t) && t != Datatype::kDatetimeMs && t != Datatype::kDatetimeUs &&
          t != Datatype::kDatetimeNs) ||
         (core::IsTime(t) && t != Datatype::kTimeUs && t != Datatype::kTimeNs);
}

}  // namespace

std::string ParquetPlan::EncodeFooter(const std::vector<MinMax>* first_dim) const {
  std::string out;
  ThriftWriter w(out);
  w.I32(1, 2);  // version
  uint64_t elements = 1;
  for (const Column& c : columns_) elements += c.kind == Kind::kList ? 3 : 1;
  w.BeginList(2, ThriftType::kStruct, elements);
  w.BeginListStruct().Binary(4, "schema").I32(5, static_cast<int32_t>(columns_.size())).EndStruct();
  for (const Column& c : columns_) {
    const ParquetField& f = c.field;
    const int32_t repetition = c.optional ? kOptional : kRequired;
    const Datatype value_type = c.kind == Kind::kDictionary ? f.enumeration->type : f.type;
    const Physical physical = PhysicalOf(value_type);
    const bool text = physical == kBytes && f.counts.utf8 && IsText(value_type);
    if (c.kind == Kind::kList) {
      w.BeginListStruct().I32(3, repetition).Binary(4, f.name).I32(5, 1).I32(6, kList);
      w.BeginStruct(10).BeginStruct(3).EndStruct().EndStruct().EndStruct();
      w.BeginListStruct().I32(3, kRepeated).Binary(4, "list").I32(5, 1).EndStruct();
      w.BeginListStruct().I32(1, physical).I32(3, kRequired).Binary(4, "element");
    } else {
      w.BeginListStruct().I32(1, physical).I32(3, repetition).Binary(4, f.name);
    }
    WriteAnnotations(w, value_type, text);
    w.EndStruct();
  }
  w.I64(3, static_cast<int64_t>(rows_));
  w.BeginList(4, ThriftType::kStruct, groups_.size());
  for (size_t g = 0; g < groups_.size(); ++g) {
    const RowGroup& group = groups_[g];
    const size_t end = g + 1 < groups_.size() ? groups_[g + 1].first_page : pages_.size();
    const uint64_t group_start = pages_[group.first_page].start;
    w.BeginListStruct().BeginList(1, ThriftType::kStruct, columns_.size());
    for (size_t p = group.first_page; p < end;) {
      const uint32_t c = pages_[p].column;
      const Column& col = columns_[c];
      size_t q = p;
      uint64_t values = 0, nulls = 0;
      std::optional<uint64_t> dictionary, data;
      for (; q < end && pages_[q].column == c; ++q) {
        const Page& page = pages_[q];
        if (page.dictionary) {
          dictionary = page.start;
          continue;
        }
        if (!data) data = page.start;
        values += page.values;
        nulls += page.nulls;
      }
      const uint64_t chunk_start = pages_[p].start, chunk_size = pages_[q - 1].end - chunk_start;
      w.BeginListStruct().I64(2, static_cast<int64_t>(chunk_start)).BeginStruct(3);
      w.I32(1, PhysicalOf(col.kind == Kind::kDictionary ? col.field.enumeration->type
                                                        : col.field.type));
      if (col.kind == Kind::kDictionary) {
        w.BeginList(2, ThriftType::kI32, 3).ListI32(kPlain).ListI32(kRle).ListI32(kRleDictionary);
      } else if (col.max_def > 0) {
        w.BeginList(2, ThriftType::kI32, 2).ListI32(kPlain).ListI32(kRle);
      } else {
        w.BeginList(2, ThriftType::kI32, 1).ListI32(kPlain);
      }
      if (col.kind == Kind::kList) {
        w.BeginList(3, ThriftType::kBinary, 3)
            .ListBinary(col.field.name)
            .ListBinary("list")
            .ListBinary("element");
      } else {
        w.BeginList(3, ThriftType::kBinary, 1).ListBinary(col.field.name);
      }
      w.I32(4, 0).I64(5, static_cast<int64_t>(values));
      w.I64(6, static_cast<int64_t>(chunk_size)).I64(7, static_cast<int64_t>(chunk_size));
      if (UnitInMetadata(col.field.type)) {
        w.BeginList(8, ThriftType::kStruct, 1).BeginListStruct().Binary(1, "tiledb.datatype");
        w.Binary(2, core::DatatypeName(col.field.type)).EndStruct();
      }
      w.I64(9, static_cast<int64_t>(data.value_or(chunk_start)));
      if (dictionary) w.I64(11, static_cast<int64_t>(*dictionary));
      w.BeginStruct(12).I64(3, static_cast<int64_t>(nulls));
      if (c == 0 && first_dim_stats_) {
        const std::string zeros(col.width, '\0');
        const MinMax* m = first_dim != nullptr ? &(*first_dim)[g] : nullptr;
        w.Binary(5, m ? m->max : zeros).Binary(6, m ? m->min : zeros).Bool(7, true).Bool(8, true);
      }
      w.EndStruct().EndStruct().EndStruct();
      p = q;
    }
    const uint64_t group_end = pages_[end - 1].end;
    w.I64(2, static_cast<int64_t>(group_end - group_start))
        .I64(3, static_cast<int64_t>(group.rows));
    w.I64(5, static_cast<int64_t>(group_start));
    w.I64(6, static_cast<int64_t>(group_end - group_start)).EndStruct();
  }
  w.BeginList(5, ThriftType::kStruct, metadata_.size());
  for (const auto& [k, v] : metadata_) w.BeginListStruct().Binary(1, k).Binary(2, v).EndStruct();
  w.Binary(6, "tiledbfs");
  w.BeginList(7, ThriftType::kStruct, columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    w.BeginListStruct().BeginStruct(1).EndStruct().EndStruct();  // TYPE_ORDER
  }
  w.End();
  const uint32_t len = static_cast<uint32_t>(out.size());
  out.append(reinterpret_cast<const char*>(&len), 4);
  out += "PAR1";
  return out;
}

}  // namespace tiledbfs::fusefs
