// Hand-built schema and enumeration payloads for parser tests: every field
// written explicitly, in the layout of the format version asked for.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "core/util/byte_writer.h"
#include "core/util/bytes.h"

namespace tiledbfs::core::testing {

using core::ByteWriter;

// An empty pipeline, or one ZSTD filter at `level`.
inline ByteWriter& PutPipeline(ByteWriter& w, bool zstd = false, int32_t level = -1,
                               uint32_t chunk = 65536) {
  w.Put<uint32_t>(chunk).Put<uint32_t>(zstd ? 1 : 0);
  if (zstd) w.Put<uint8_t>(2).Put<uint32_t>(5).Put<uint8_t>(2).Put<int32_t>(level);
  return w;
}

template <class T>
ByteVec Le(std::initializer_list<T> values) {
  ByteVec out;
  for (T v : values) {
    size_t at = out.size();
    out.resize(at + sizeof(T), 0);
    std::memcpy(out.data() + at, &v, sizeof(T));
  }
  return out;
}

struct DimSpec {
  std::string name = "d";
  uint8_t type = 1;  // INT64
  uint32_t cell_val_num = 1;
  bool zstd = false;
  ByteVec domain = Le<int64_t>({1, 100});  // empty for var dims
  std::optional<ByteVec> extent = Le<int64_t>({10});
};

struct AttrSpec {
  std::string name = "a";
  uint8_t type = 0;  // INT32
  uint32_t cell_val_num = 1;
  bool zstd = false;
  ByteVec fill = Le<int32_t>({7});
  bool nullable = false;
  uint8_t fill_validity = 0;
  uint8_t order = 0;
  std::string enumeration;
};

struct LabelSpec {
  uint32_t dim = 0;
  std::string name = "lbl";
  bool relative = true;
  std::string uri = "__labels/l0";
  std::string attr = "label";
  uint8_t order = 1;
  uint8_t type = 3;  // FLOAT64
  uint32_t cell_val_num = 1;
  bool external = false;
};

struct SchemaSpec {
  uint32_t version = 22;
  bool allows_dups = false;
  uint8_t array_type = 1;  // sparse
  uint8_t tile_order = 0, cell_order = 0;
  uint64_t capacity = 1000;
  uint8_t legacy_type = 1;  // INT64, the domain datatype before version 5
  std::vector<DimSpec> dims = {DimSpec{}};
  std::vector<AttrSpec> attrs = {AttrSpec{}};
  std::vector<LabelSpec> labels;
  std::vector<std::pair<std::string, std::string>> enums;  // name, file
  bool cd_empty = true;
  uint32_t cd_version = 0;
  std::vector<ByteVec> cd_ranges;  // serialized 1D ranges, one per dimension
};

inline ByteVec BuildSchema(const SchemaSpec& s) {
  ByteWriter w;
  const uint32_t v = s.version;
  w.Put<uint32_t>(v);
  if (v >= 5) w.Put<uint8_t>(s.allows_dups);
  w.Put<uint8_t>(s.array_type).Put<uint8_t>(s.tile_order).Put<uint8_t>(s.cell_order);
  w.Put<uint64_t>(s.capacity);
  PutPipeline(PutPipeline(w, true), true);
  if (v >= 7) PutPipeline(w);
  if (v < 5) w.Put<uint8_t>(s.legacy_type);
  w.Put<uint32_t>(s.dims.size());
  for (const DimSpec& d : s.dims) {
    w.PutName32(d.name);
    if (v >= 5) {
      PutPipeline(w.Put<uint8_t>(d.type).Put<uint32_t>(d.cell_val_num), d.zstd);
      w.Put<uint64_t>(d.domain.size());
    }
    w.PutBytes(d.domain);
    w.Put<uint8_t>(d.extent ? 0 : 1);
    if (d.extent) w.PutBytes(*d.extent);
  }
  w.Put<uint32_t>(s.attrs.size());
  for (const AttrSpec& a : s.attrs) {
    PutPipeline(w.PutName32(a.name).Put<uint8_t>(a.type).Put<uint32_t>(a.cell_val_num), a.zstd);
    if (v >= 6) w.Put<uint64_t>(a.fill.size()).PutBytes(a.fill);
    if (v >= 7) w.Put<uint8_t>(a.nullable).Put<uint8_t>(a.fill_validity);
    if (v >= 17) w.Put<uint8_t>(a.order);
    if (v >= 20) w.PutName32(a.enumeration);
  }
  if (v >= 18) {
    w.Put<uint32_t>(s.labels.size());
    for (const LabelSpec& l : s.labels) {
      w.Put<uint32_t>(l.dim)
          .PutName32(l.name)
          .Put<uint8_t>(l.relative)
          .PutName64(l.uri)
          .PutName32(l.attr);
      w.Put<uint8_t>(l.order).Put<uint8_t>(l.type).Put<uint32_t>(l.cell_val_num);
      w.Put<uint8_t>(l.external);
    }
  }
  if (v >= 20) {
    w.Put<uint32_t>(s.enums.size());
    for (const auto& [name, file] : s.enums) w.PutName32(name).PutName32(file);
  }
  if (v >= 22) {
    w.Put<uint32_t>(s.cd_version).Put<uint8_t>(s.cd_empty);
    if (!s.cd_empty) {
      w.Put<uint8_t>(0);
      for (const ByteVec& r : s.cd_ranges) w.PutBytes(r);
    }
  }
  return w.bytes();
}

// A var-sized 1D range: total size, size of the lower bound, both bounds.
inline ByteVec VarRange(const std::string& lo, const std::string& hi) {
  ByteWriter w;
  w.Put<uint64_t>(lo.size() + hi.size()).Put<uint64_t>(lo.size()).PutString(lo).PutString(hi);
  return w.bytes();
}

struct EnumSpec {
  uint32_t version = 0;
  std::string name = "e";
  std::string path = "__abc_0";
  uint8_t type = 11;  // STRING_ASCII
  uint32_t cell_val_num = 0xFFFFFFFFu;
  bool ordered = false;
  ByteVec data;
  std::optional<ByteVec> offsets;  // written when var
};

inline ByteVec BuildEnumeration(const EnumSpec& e) {
  ByteWriter w;
  w.Put<uint32_t>(e.version).PutName32(e.name).PutName32(e.path).Put<uint8_t>(e.type);
  w.Put<uint32_t>(e.cell_val_num).Put<uint8_t>(e.ordered);
  w.Put<uint64_t>(e.data.size()).PutBytes(e.data);
  if (e.cell_val_num == 0xFFFFFFFFu) {
    ByteVec offsets = e.offsets.value_or(ByteVec{});
    w.Put<uint64_t>(offsets.size()).PutBytes(offsets);
  }
  return w.bytes();
}

}  // namespace tiledbfs::core::testing
