// Helpers shared by the filter and generic tile tests.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/filters/filter_pipeline.h"
#include "core/util/byte_writer.h"

namespace tiledbfs::core::testing {

inline std::string CorpusPath(const std::string& rel) {
  return std::string(TILEDBFS_TEST_DATA) + "/corpus/" + rel;
}

inline ByteVec ReadFileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  return ByteVec((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The one directory under `dir` whose name starts with `prefix`.
inline std::string FindEntry(const std::string& dir, const std::string& prefix) {
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name.rfind(prefix, 0) == 0) return e.path().string();
  }
  ADD_FAILURE() << "no " << prefix << "* in " << dir;
  return dir;
}

inline EncryptionKey KeyFromHex(std::string hex) {
  while (!hex.empty() && (hex.back() == '\n' || hex.back() == ' ')) hex.pop_back();
  EncryptionKey k;
  EXPECT_EQ(hex.size(), 64u);
  for (size_t i = 0; i < 32 && 2 * i + 1 < hex.size(); ++i) {
    k.bytes[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  return k;
}

// Little-endian serialization for building test inputs.
using core::ByteWriter;

// A serialized tile of one chunk.
inline ByteVec OneChunkTile(uint32_t original, Bytes metadata, Bytes data) {
  ByteWriter w;
  w.Put<uint64_t>(1).Put<uint32_t>(original).Put<uint32_t>(data.size());
  w.Put<uint32_t>(metadata.size()).PutBytes(metadata).PutBytes(data);
  return w.Take();
}

inline FilterPipeline Pipeline(std::vector<Filter> filters, uint32_t version = 22,
                               uint32_t max_chunk = 256) {
  FilterPipeline p;
  p.filters = std::move(filters);
  p.version = version;
  p.max_chunk_size = max_chunk;
  return p;
}

inline Filter MakeFilter(FilterType t) {
  Filter f;
  f.type = t;
  return f;
}

// Serializes a pipeline the way TileDB does, so that the pipelines used
// below also go through ParseFilterPipeline.
inline ByteVec SerializePipeline(const FilterPipeline& p) {
  ByteWriter w;
  w.Put<uint32_t>(p.max_chunk_size).Put<uint32_t>(p.filters.size());
  for (const Filter& f : p.filters) {
    ByteWriter o;
    switch (f.type) {
      case FilterType::kGzip:
        o.Put<uint8_t>(1).Put<int32_t>(f.compression_level);
        break;
      case FilterType::kZstd:
        o.Put<uint8_t>(2).Put<int32_t>(f.compression_level);
        break;
      case FilterType::kLz4:
        o.Put<uint8_t>(3).Put<int32_t>(f.compression_level);
        break;
      case FilterType::kRle:
        o.Put<uint8_t>(4).Put<int32_t>(f.compression_level);
        break;
      case FilterType::kBzip2:
        o.Put<uint8_t>(5).Put<int32_t>(f.compression_level);
        break;
      case FilterType::kDoubleDelta:
        o.Put<uint8_t>(6).Put<int32_t>(f.compression_level);
        if (p.version >= 20)
          o.Put<uint8_t>(static_cast<uint8_t>(f.reinterpret_datatype.value_or(Datatype::kAny)));
        break;
      case FilterType::kDictionary:
        o.Put<uint8_t>(7).Put<int32_t>(f.compression_level);
        break;
      case FilterType::kDelta:
        o.Put<uint8_t>(8).Put<int32_t>(f.compression_level);
        if (p.version >= 19)
          o.Put<uint8_t>(static_cast<uint8_t>(f.reinterpret_datatype.value_or(Datatype::kAny)));
        break;
      case FilterType::kBitWidthReduction:
      case FilterType::kPositiveDelta:
        o.Put<uint32_t>(f.max_window_size);
        break;
      case FilterType::kScaleFloat:
        o.Put<double>(f.scale_factor).Put<double>(f.scale_offset).Put<uint64_t>(f.scale_byte_width);
        break;
      case FilterType::kWebp:
        o.PutBytes(f.raw_options);
        break;
      default:
        break;
    }
    w.Put<uint8_t>(static_cast<uint8_t>(f.type))
        .Put<uint32_t>(o.bytes().size())
        .PutBytes(o.bytes());
  }
  return w.Take();
}

}  // namespace tiledbfs::core::testing
