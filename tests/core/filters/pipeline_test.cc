#include <gtest/gtest.h>

#include "core/filters/filter_pipeline.h"
#include "tests/core/filters/test_util.h"

namespace tiledbfs::core {
namespace {

using testing::ByteWriter;
using testing::MakeFilter;
using testing::SerializePipeline;

FilterPipeline AllOptions(uint32_t version) {
  std::vector<Filter> fs;
  for (FilterType t :
       {FilterType::kNone, FilterType::kGzip, FilterType::kZstd, FilterType::kLz4, FilterType::kRle,
        FilterType::kBzip2, FilterType::kDoubleDelta, FilterType::kBitWidthReduction,
        FilterType::kBitshuffle, FilterType::kByteshuffle, FilterType::kPositiveDelta,
        FilterType::kChecksumMd5, FilterType::kChecksumSha256, FilterType::kDictionary,
        FilterType::kScaleFloat, FilterType::kXor, FilterType::kDelta}) {
    Filter f = MakeFilter(t);
    f.compression_level = 7;
    f.max_window_size = 96;
    f.scale_byte_width = 4;
    f.scale_factor = 0.25;
    f.scale_offset = -3;
    if (t == FilterType::kDoubleDelta || t == FilterType::kDelta) {
      f.reinterpret_datatype = Datatype::kUInt16;
    }
    fs.push_back(f);
  }
  return testing::Pipeline(fs, version, 1234);
}

Result<FilterPipeline> Parse(Bytes b, uint32_t version) {
  ByteReader r(b, 1000);
  auto p = ParseFilterPipeline(r, version);
  if (p.ok()) {
    EXPECT_TRUE(r.empty());
  }
  return p;
}

TEST(FilterPipelineTest, ParsesEveryFiltersOptions) {
  ByteVec b = SerializePipeline(AllOptions(22));
  auto p = Parse(b, 22);
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  EXPECT_EQ(p->max_chunk_size, 1234u);
  EXPECT_EQ(p->version, 22u);
  ASSERT_EQ(p->filters.size(), 17u);
  for (const Filter& f : p->filters) {
    SCOPED_TRACE(FilterName(f.type));
    switch (f.type) {
      case FilterType::kGzip:
      case FilterType::kZstd:
      case FilterType::kLz4:
      case FilterType::kBzip2:
      case FilterType::kDictionary:
      case FilterType::kRle:
        EXPECT_EQ(f.compression_level, 7);
        EXPECT_EQ(f.raw_options.size(), 5u);
        break;
      case FilterType::kDoubleDelta:
      case FilterType::kDelta:
        EXPECT_EQ(f.compression_level, 7);
        EXPECT_EQ(f.reinterpret_datatype, Datatype::kUInt16);
        break;
      case FilterType::kBitWidthReduction:
      case FilterType::kPositiveDelta:
        EXPECT_EQ(f.max_window_size, 96u);
        break;
      case FilterType::kScaleFloat:
        EXPECT_EQ(f.scale_byte_width, 4u);
        EXPECT_EQ(f.scale_factor, 0.25);
        EXPECT_EQ(f.scale_offset, -3);
        break;
      default:
        EXPECT_TRUE(f.raw_options.empty());
    }
  }
}

TEST(FilterPipelineTest, ReinterpretTypeByteDependsOnVersion) {
  // Version 19: DELTA has the byte, DOUBLE_DELTA not yet.
  ByteVec b19 = SerializePipeline(AllOptions(19));
  auto p19 = Parse(b19, 19);
  ASSERT_TRUE(p19.ok()) << p19.error().ToString();
  for (const Filter& f : p19->filters) {
    if (f.type == FilterType::kDoubleDelta) {
      EXPECT_FALSE(f.reinterpret_datatype.has_value());
    }
    if (f.type == FilterType::kDelta) {
      EXPECT_EQ(f.reinterpret_datatype, Datatype::kUInt16);
    }
  }
  // Parsed as version 20, the version-19 DOUBLE_DELTA options are one byte short.
  auto wrong = Parse(b19, 20);
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(wrong.error().message().find("DOUBLE_DELTA options"), std::string::npos);
  // ANY means "no reinterpretation".
  Filter dd = MakeFilter(FilterType::kDoubleDelta);
  auto any = Parse(SerializePipeline(testing::Pipeline({dd}, 22)), 22);
  ASSERT_TRUE(any.ok());
  EXPECT_FALSE(any->filters[0].reinterpret_datatype.has_value());
}

TEST(FilterPipelineTest, EveryTruncationPrefixIsCorrupt) {
  ByteVec b = SerializePipeline(AllOptions(22));
  for (size_t n = 0; n < b.size(); ++n) {
    auto p = Parse(Bytes(b.data(), n), 22);
    ASSERT_FALSE(p.ok()) << n;
    EXPECT_EQ(p.error().code(), ErrorCode::kCorrupt) << n;
  }
}

TEST(FilterPipelineTest, BadEnumsAndLengths) {
  auto parse_one = [](uint8_t type, ByteVec options, uint32_t declared_len) {
    ByteWriter w;
    w.Put<uint32_t>(256).Put<uint32_t>(1).Put<uint8_t>(type).Put<uint32_t>(declared_len);
    w.PutBytes(options);
    return Parse(w.bytes(), 22);
  };
  auto unknown = parse_one(99, {}, 0);
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(unknown.error().message().find("unknown filter type 99"), std::string::npos);
  EXPECT_NE(unknown.error().message().find("offset 1008"), std::string::npos);

  // GZIP filter whose compressor byte says ZSTD.
  auto mismatch = parse_one(1, {2, 0, 0, 0, 0}, 5);
  ASSERT_FALSE(mismatch.ok());
  EXPECT_EQ(mismatch.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(mismatch.error().message().find("compressor"), std::string::npos);

  // Options longer than the filter's layout.
  auto longer = parse_one(9, {0}, 1);
  ASSERT_FALSE(longer.ok());
  EXPECT_EQ(longer.error().code(), ErrorCode::kCorrupt);

  // Options length past the end.
  auto past = parse_one(2, {2, 0, 0, 0, 0}, 0xffffffffu);
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().code(), ErrorCode::kCorrupt);

  // SCALE_FLOAT byte width 3.
  ByteWriter sf;
  sf.Put<double>(1).Put<double>(0).Put<uint64_t>(3);
  auto width = parse_one(15, sf.bytes(), 24);
  ASSERT_FALSE(width.ok());
  EXPECT_EQ(width.error().code(), ErrorCode::kCorrupt);
  EXPECT_NE(width.error().message().find("byte width"), std::string::npos);

  // A filter count that cannot fit: refused before reserving.
  ByteWriter many;
  many.Put<uint32_t>(256).Put<uint32_t>(0xffffffffu);
  auto huge = Parse(many.bytes(), 22);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.error().code(), ErrorCode::kCorrupt);
}

TEST(FilterPipelineTest, WebpParsesButDoesNotRun) {
  Filter webp = MakeFilter(FilterType::kWebp);
  webp.raw_options = ByteVec(12, 0);
  auto p = Parse(SerializePipeline(testing::Pipeline({webp})), 22);
  ASSERT_TRUE(p.ok()) << p.error().ToString();
  ASSERT_EQ(p->filters.size(), 1u);
  EXPECT_EQ(p->filters[0].raw_options.size(), 12u);
  ByteVec tile = testing::OneChunkTile(4, {}, ByteVec(4, 0));
  TileContext ctx(DefaultLimits());
  ctx.file = "a3.tdb";
  auto r = UnfilterTile(*p, tile, ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kUnsupported);
  EXPECT_NE(r.error().message().find("unsupported filter WEBP"), std::string::npos);
}

TEST(FilterPipelineTest, SkipsOffsetsFilteringFollowsTileDb) {
  auto with = [](FilterType t, uint32_t v) {
    Filter f = MakeFilter(t);
    return testing::Pipeline({f}, v);
  };
  using D = Datatype;
  EXPECT_FALSE(SkipsOffsetsFiltering(with(FilterType::kRle, 11), D::kStringAscii));
  EXPECT_TRUE(SkipsOffsetsFiltering(with(FilterType::kRle, 12), D::kStringAscii));
  EXPECT_FALSE(SkipsOffsetsFiltering(with(FilterType::kDictionary, 12), D::kStringAscii));
  EXPECT_TRUE(SkipsOffsetsFiltering(with(FilterType::kDictionary, 13), D::kStringAscii));
  EXPECT_FALSE(SkipsOffsetsFiltering(with(FilterType::kRle, 16), D::kStringUtf8));
  EXPECT_TRUE(SkipsOffsetsFiltering(with(FilterType::kRle, 17), D::kStringUtf8));
  EXPECT_TRUE(SkipsOffsetsFiltering(with(FilterType::kDictionary, 17), D::kStringUtf8));
  EXPECT_FALSE(SkipsOffsetsFiltering(with(FilterType::kRle, 22), D::kChar));
  EXPECT_FALSE(SkipsOffsetsFiltering(with(FilterType::kZstd, 22), D::kStringAscii));
}

TEST(FilterPipelineTest, FilterNames) {
  EXPECT_EQ(FilterName(FilterType::kBitWidthReduction), "BIT_WIDTH_REDUCTION");
  EXPECT_EQ(FilterName(FilterType::kChecksumSha256), "CHECKSUM_SHA256");
  EXPECT_EQ(FilterName(FilterType::kWebp), "WEBP");
}

}  // namespace
}  // namespace tiledbfs::core
