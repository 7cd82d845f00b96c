// Helpers for the fragment metadata tests: corpus access, hand-built
// schemas, and a writer that lays out fragment metadata files of any format
// version 1..23 field by field (as TileDB's FragmentMetadata::store_* and
// write_footer do), with unfiltered generic tiles (tests/core/test_util.h).
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/directory/timestamped_name.h"
#include "core/fragment/fragment_metadata.h"
#include "core/schema/array_schema.h"
#include "core/storage/storage.h"
#include "core/util/byte_writer.h"
#include "tests/core/test_util.h"

namespace tiledbfs::core::fragment_testing {

using core::ByteWriter;
using core::testing::CorpusDir;
using core::testing::MakeGenericTile;

// Each value, as TileDB writes a fixed-length list.
inline ByteWriter& PutU64s(ByteWriter& w, const std::vector<uint64_t>& v) {
  for (uint64_t x : v) w.Put<uint64_t>(x);
  return w;
}
// The count, then each value.
inline ByteWriter& PutList(ByteWriter& w, const std::vector<uint64_t>& v) {
  return PutU64s(w.Put<uint64_t>(v.size()), v);
}

template <class T>
ByteVec Le(T v) {
  ByteVec b(sizeof(T), 0);
  std::memcpy(b.data(), &v, sizeof(T));
  return b;
}

template <class T>
Range R(T lo, T hi) {
  return Range{Le(lo), Le(hi)};
}

inline Range RS(const std::string& lo, const std::string& hi) {
  return Range{ByteVec(lo.begin(), lo.end()), ByteVec(hi.begin(), hi.end())};
}

inline Dimension Dim(const std::string& name, Datatype t, Range domain,
                     std::optional<ByteVec> extent) {
  Dimension d;
  d.name = name;
  d.type = t;
  d.domain = std::move(domain);
  d.tile_extent = std::move(extent);
  return d;
}

inline Dimension VarDim(const std::string& name) {
  Dimension d;
  d.name = name;
  d.type = Datatype::kStringAscii;
  d.cell_val_num = kVarNum;
  return d;
}

inline Attribute Attr(const std::string& name, Datatype t, bool var = false,
                      bool nullable = false) {
  Attribute a;
  a.name = name;
  a.type = t;
  a.cell_val_num = var ? kVarNum : 1;
  a.nullable = nullable;
  return a;
}

// Sparse, dims r, c INT32 [1,100] extent 10, capacity 4; attributes
// a INT32, s var STRING_ASCII nullable.
inline ArraySchema SparseSchema(uint32_t version, const std::string& name) {
  ArraySchema s;
  s.version = version;
  s.array_type = ArrayType::kSparse;
  s.capacity = 4;
  s.dimensions.push_back(Dim("r", Datatype::kInt32, R<int32_t>(1, 100), Le<int32_t>(10)));
  s.dimensions.push_back(Dim("c", Datatype::kInt32, R<int32_t>(1, 100), Le<int32_t>(10)));
  s.attributes.push_back(Attr("a", Datatype::kInt32));
  s.attributes.push_back(Attr("s", Datatype::kStringAscii, true, true));
  s.name = name;
  return s;
}

// Everything a synthetic fragment holds; Build() writes the metadata file.
struct SyntheticFragment {
  uint32_t version = 22;
  ArraySchema schema;
  bool dense = false;
  bool has_timestamps = false;
  bool has_delete_meta = false;
  std::vector<Range> ned;
  uint64_t tile_num = 3;
  uint64_t last_tile_cell_num = 2;
  std::vector<std::vector<Range>> mbrs;             // one per tile
  std::vector<std::vector<uint64_t>> tile_offsets;  // per field (N)
  std::vector<std::vector<uint64_t>> var_offsets;
  std::vector<std::vector<uint64_t>> var_sizes;
  std::vector<std::vector<uint64_t>> validity_offsets;
  std::vector<uint64_t> file_sizes, file_var_sizes, file_validity_sizes;
  std::vector<std::string> processed_conditions;
  bool unknown_optional_section = false;
  bool global_order_section = false;
  // When set, the payload of attribute 0's tile offsets tile.
  std::optional<ByteVec> override_tile_offsets0;

  // Results of Build().
  ByteVec file;
  uint64_t footer_offset = 0;
  uint64_t footer_fields_size = 0;  // without the length field
  FragmentFooter expected;          // the section offsets written

  uint64_t N() const { return FooterFieldCount(schema, version, has_timestamps, has_delete_meta); }

  // Fills the per-field vectors with plausible values: every field with
  // data has tile_num tiles of 16 bytes (var: 32), dims only when sparse.
  void FillDefaults() {
    const uint64_t n = N();
    const uint64_t a = schema.attributes.size();
    tile_offsets.assign(n, {});
    var_offsets.assign(n, {});
    var_sizes.assign(n, {});
    validity_offsets.assign(n, {});
    file_sizes.assign(n, 0);
    file_var_sizes.assign(n, 0);
    file_validity_sizes.assign(n, 0);
    auto seq = [&](uint64_t step) {
      std::vector<uint64_t> v;
      for (uint64_t t = 0; t < tile_num; ++t) v.push_back(t * step);
      return v;
    };
    for (uint64_t i = 0; i < n; ++i) {
      bool has_data = true;
      bool var = false;
      bool nullable = false;
      if (i < a) {
        var = schema.attributes[i].var();
        nullable = schema.attributes[i].nullable;
      } else if (i == a) {
        has_data = !HasPerDimensionFiles(version) && !dense;  // zipped coords
      } else if (i <= a + schema.dimensions.size()) {
        has_data = !dense;
        var = schema.dimensions[i - a - 1].var();
      }
      if (!has_data) continue;
      tile_offsets[i] = seq(16);
      file_sizes[i] = 16 * tile_num;
      if (var) {
        var_offsets[i] = seq(32);
        var_sizes[i] = std::vector<uint64_t>(tile_num, 40);
        file_var_sizes[i] = 32 * tile_num;
      }
      if (nullable && HasValiditySections(version)) {
        validity_offsets[i] = seq(8);
        file_validity_sizes[i] = 8 * tile_num;
      }
    }
    if (mbrs.empty() && !dense) {
      for (uint64_t t = 0; t < tile_num; ++t) {
        std::vector<Range> mbr;
        for (const auto& d : schema.dimensions) {
          if (d.var()) {
            mbr.push_back(RS(fmt::format("a{}", t), fmt::format("b{}", t)));
          } else {
            mbr.push_back(R<int32_t>(static_cast<int32_t>(t + 1), static_cast<int32_t>(t + 5)));
          }
        }
        mbrs.push_back(std::move(mbr));
      }
    }
    if (ned.empty()) {
      for (const auto& d : schema.dimensions) {
        ned.push_back(d.var() ? RS("a0", "b9") : R<int32_t>(1, 30));
      }
    }
  }

  static void PutRange(ByteWriter& w, const Range& r, bool var) {
    if (var) {
      w.Put<uint64_t>(r.lo.size() + r.hi.size()).Put<uint64_t>(r.lo.size());
    }
    w.PutBytes(r.lo).PutBytes(r.hi);
  }

  void Build() {
    const uint32_t v = version;
    const uint64_t n = N();
    const bool split = HasPerDimensionFiles(v);
    const uint64_t n_var = split ? n : n - 1;
    file.clear();
    expected = FragmentFooter();
    auto add_tile = [&](const ByteVec& payload) {
      uint64_t at = file.size();
      ByteVec t = MakeGenericTile(payload, v);
      file.insert(file.end(), t.begin(), t.end());
      return at;
    };
    // R-tree: a single leaf level (a root level first when there are more).
    ByteWriter rt;
    if (!split) rt.Put<uint32_t>(schema.dimensions.size());
    rt.Put<uint32_t>(10);
    if (!split) rt.Put<uint8_t>(static_cast<uint8_t>(schema.dimensions[0].type));
    std::vector<std::vector<std::vector<Range>>> levels;
    if (mbrs.size() > 1) levels.push_back({mbrs[0]});  // a fake root
    levels.push_back(mbrs);
    if (mbrs.empty()) levels.clear();
    rt.Put<uint32_t>(levels.size());
    for (const auto& level : levels) {
      rt.Put<uint64_t>(level.size());
      for (const auto& mbr : level) {
        for (size_t d = 0; d < mbr.size(); ++d) {
          PutRange(rt, mbr[d], split && schema.dimensions[d].var());
        }
      }
    }
    expected.rtree_offset = add_tile(rt.Take());
    auto lists = [&](const std::vector<std::vector<uint64_t>>& per_field, uint64_t count) {
      std::vector<uint64_t> offs;
      for (uint64_t i = 0; i < count; ++i) {
        ByteWriter w;
        PutList(w, per_field[i]);
        const bool replace = i == 0 && &per_field == &tile_offsets && override_tile_offsets0;
        offs.push_back(add_tile(replace ? *override_tile_offsets0 : w.Take()));
      }
      return offs;
    };
    expected.tile_offsets_offsets = lists(tile_offsets, n);
    expected.tile_var_offsets_offsets = lists(var_offsets, n_var);
    expected.tile_var_sizes_offsets = lists(var_sizes, n_var);
    if (HasValiditySections(v)) expected.tile_validity_offsets_offsets = lists(validity_offsets, n);
    if (HasTileMetadata(v)) {
      for (uint64_t i = 0; i < n; ++i) {
        ByteWriter mins, maxs;
        // attribute 0 (INT32): per-tile min t and max 100 + t.
        if (i == 0) {
          mins.Put<uint64_t>(4 * tile_num).Put<uint64_t>(0);
          maxs.Put<uint64_t>(4 * tile_num).Put<uint64_t>(0);
          for (uint64_t t = 0; t < tile_num; ++t) mins.Put<int32_t>(t);
          for (uint64_t t = 0; t < tile_num; ++t) maxs.Put<int32_t>(100 + t);
        } else if (i == 1) {  // attribute 1 (var string): "m<t>" / "xx<t>"
          std::string mv, xv;
          mins.Put<uint64_t>(8 * tile_num);
          maxs.Put<uint64_t>(8 * tile_num);
          for (uint64_t t = 0; t < tile_num; ++t) {
            mv += fmt::format("m{}", t);
            xv += fmt::format("xx{}", t);
          }
          mins.Put<uint64_t>(mv.size());
          maxs.Put<uint64_t>(xv.size());
          uint64_t mo = 0, xo = 0;
          for (uint64_t t = 0; t < tile_num; ++t) {
            mins.Put<uint64_t>(mo);
            maxs.Put<uint64_t>(xo);
            mo += 1 + std::to_string(t).size();
            xo += 2 + std::to_string(t).size();
          }
          mins.PutString(mv);
          maxs.PutString(xv);
        } else {
          mins.Put<uint64_t>(0).Put<uint64_t>(0);
          maxs.Put<uint64_t>(0).Put<uint64_t>(0);
        }
        expected.tile_min_offsets.push_back(add_tile(mins.Take()));
        expected.tile_max_offsets.push_back(add_tile(maxs.Take()));
      }
      for (uint64_t i = 0; i < n; ++i) {
        ByteWriter w;
        if (i == 0) {
          w.Put<uint64_t>(tile_num);
          for (uint64_t t = 0; t < tile_num; ++t) w.Put<uint64_t>(1000 + t);
        } else {
          w.Put<uint64_t>(0);
        }
        expected.tile_sum_offsets.push_back(add_tile(w.Take()));
      }
      for (uint64_t i = 0; i < n; ++i) {
        ByteWriter w;
        w.Put<uint64_t>(tile_num);
        for (uint64_t t = 0; t < tile_num; ++t) w.Put<uint64_t>(i == 1 ? t : 0);
        expected.tile_null_count_offsets.push_back(add_tile(w.Take()));
      }
    }
    if (HasFragmentStatistics(v)) {
      ByteWriter w;
      for (uint64_t i = 0; i < n; ++i) {
        if (i == 0) {
          w.Put<uint64_t>(4).Put<int32_t>(0).Put<uint64_t>(4).Put<int32_t>(102);
          w.Put<uint64_t>(3003).Put<uint64_t>(0);
        } else {
          w.Put<uint64_t>(0).Put<uint64_t>(0).Put<uint64_t>(0).Put<uint64_t>(i);
        }
      }
      expected.fragment_min_max_sum_null_count_offset = add_tile(w.Take());
    }
    if (HasProcessedConditions(v)) {
      ByteWriter w;
      w.Put<uint64_t>(processed_conditions.size());
      for (const auto& c : processed_conditions) w.Put<uint64_t>(c.size()).PutString(c);
      expected.processed_conditions_offset = add_tile(w.Take());
    }

    // The footer.
    footer_offset = file.size();
    ByteWriter f;
    f.Put<uint32_t>(v);
    if (HasSchemaName(v)) f.Put<uint64_t>(schema.name.size()).PutString(schema.name);
    f.Put<uint8_t>(dense ? 1 : 0).Put<uint8_t>(0);
    for (size_t d = 0; d < ned.size(); ++d) {
      PutRange(f, ned[d], split && schema.dimensions[d].var());
    }
    f.Put<uint64_t>(dense ? 0 : tile_num).Put<uint64_t>(last_tile_cell_num);
    if (HasTimestampsFlag(v)) f.Put<uint8_t>(has_timestamps ? 1 : 0);
    if (HasDeleteMetaFlag(v)) f.Put<uint8_t>(has_delete_meta ? 1 : 0);
    auto head = [](const std::vector<uint64_t>& a, uint64_t k) {
      return std::vector<uint64_t>(a.begin(), a.begin() + k);
    };
    PutU64s(PutU64s(f, file_sizes), head(file_var_sizes, n_var));
    if (HasValiditySections(v)) PutU64s(f, file_validity_sizes);
    PutU64s(f.Put<uint64_t>(expected.rtree_offset), expected.tile_offsets_offsets);
    PutU64s(PutU64s(f, expected.tile_var_offsets_offsets), expected.tile_var_sizes_offsets);
    if (HasValiditySections(v)) PutU64s(f, expected.tile_validity_offsets_offsets);
    if (HasTileMetadata(v)) {
      PutU64s(PutU64s(f, expected.tile_min_offsets), expected.tile_max_offsets);
      PutU64s(PutU64s(f, expected.tile_sum_offsets), expected.tile_null_count_offsets);
    }
    if (HasFragmentStatistics(v)) f.Put<uint64_t>(expected.fragment_min_max_sum_null_count_offset);
    if (HasProcessedConditions(v)) f.Put<uint64_t>(expected.processed_conditions_offset);
    if (HasOptionalSections(v)) {
      uint32_t count = (unknown_optional_section ? 1 : 0) + (global_order_section ? 1 : 0);
      f.Put<uint32_t>(count);
      if (unknown_optional_section) {
        f.Put<uint64_t>(77).Put<uint32_t>(5).PutString("hello");
      }
      if (global_order_section) {
        const uint64_t dims = schema.dimensions.size();
        f.Put<uint64_t>(0).Put<uint32_t>(2 * dims * 8);
        for (uint64_t d = 0; d < 2 * dims; ++d) f.Put<uint64_t>(500 + d);
      }
    }
    footer_fields_size = f.size();
    bool length = HasFooterLength(v);
    for (const auto& d : schema.dimensions) length = length || d.var();
    if (length) f.Put<uint64_t>(footer_fields_size);
    file.insert(file.end(), f.bytes().begin(), f.bytes().end());
    // The var arrays before 5 have a 0 appended for the coords slot.
    if (!split) {
      expected.tile_var_offsets_offsets.push_back(0);
      expected.tile_var_sizes_offsets.push_back(0);
    }
  }

  // The footer bytes as stored in the metadata file (length included).
  Bytes FooterBytes() const { return Bytes(file).subspan(footer_offset); }
};

// A folder name for a fragment of `version`.
inline std::string FragmentName(uint32_t version) {
  if (version <= 2) return "__0123456789abcdef0123456789abcdef_1700000001000";
  if (version <= 4) return "__1700000001000_1700000001000_0123456789abcdef0123456789abcdef";
  return "__1700000001000_1700000001000_0123456789abcdef0123456789abcdef_" +
         std::to_string(version);
}

inline TimestampedName ParsedName(const std::string& name) {
  auto n = ParseTimestampedName(name);
  EXPECT_TRUE(n.ok()) << name << ": " << (n.ok() ? "" : n.error().ToString());
  return n.ok() ? *n : TimestampedName{};
}

using SchemaMap = std::map<std::string, std::shared_ptr<const ArraySchema>>;

}  // namespace tiledbfs::core::fragment_testing
