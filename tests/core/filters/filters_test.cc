// Each filter reversed on its own: codecs against output of the real
// libraries, TileDB's own transforms against vectors worked by hand from
// tile.md / format_spec/filters/*.md and TileDB's writers.
#include <bzlib.h>
#include <gtest/gtest.h>
#include <lz4.h>
#include <openssl/evp.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>
#include <numeric>

#include "core/filters/filter_pipeline.h"
#include "tests/core/filters/test_util.h"

namespace tiledbfs::core::filters_test {
namespace {

using testing::ByteWriter;
using testing::MakeFilter;
using testing::OneChunkTile;

template <class T>
ByteVec AsBytes(std::vector<T> v) {
  ByteVec b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

Filter Compressor(FilterType t) {
  Filter f = MakeFilter(t);
  f.compression_level = -1;
  return f;
}

TileContext Ctx(Datatype type, uint64_t cell_size = 0, uint32_t version = 22) {
  TileContext c(DefaultLimits());
  c.type = type;
  c.cell_size = cell_size ? cell_size : DatatypeSize(type);
  c.format_version = version;
  c.file = "a0.tdb";
  c.file_offset = 4096;
  return c;
}

Result<ByteVec> Unfilter(const std::vector<Filter>& filters, Bytes tile, const TileContext& ctx) {
  return UnfilterTile(testing::Pipeline(filters), tile, ctx);
}

// The chunk's metadata and data cut short (with consistent framing), and
// the tile itself cut short: every variant must be refused.
void ExpectTruncationsRejected(const std::vector<Filter>& filters, uint32_t original,
                               Bytes metadata, Bytes data, const TileContext& ctx) {
  ByteVec tile = OneChunkTile(original, metadata, data);
  ASSERT_TRUE(Unfilter(filters, tile, ctx).ok());
  for (size_t n = 0; n < tile.size(); ++n) {
    auto r = Unfilter(filters, Bytes(tile.data(), n), ctx);
    ASSERT_FALSE(r.ok()) << "tile prefix " << n;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt) << r.error().ToString();
  }
  for (size_t n = 0; n < data.size(); ++n) {
    auto r = Unfilter(filters, OneChunkTile(original, metadata, data.first(n)), ctx);
    EXPECT_FALSE(r.ok()) << "data prefix " << n;
  }
  for (size_t n = 0; n < metadata.size(); ++n) {
    auto r = Unfilter(filters, OneChunkTile(original, metadata.first(n), data), ctx);
    EXPECT_FALSE(r.ok()) << "metadata prefix " << n;
  }
}

// The compression filter chunk layout: 0 metadata parts, 1 data part.
ByteVec CompressionMetadata(uint32_t original, uint32_t compressed) {
  ByteWriter w;
  w.Put<uint32_t>(0).Put<uint32_t>(1).Put<uint32_t>(original).Put<uint32_t>(compressed);
  return w.Take();
}

ByteVec Sample(size_t n) {
  ByteVec b(n);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<uint8_t>((i * 7) % 13 + (i / 50));
  return b;
}

ByteVec ZstdCompress(Bytes in) {
  ByteVec out(ZSTD_compressBound(in.size()));
  size_t n = ZSTD_compress(out.data(), out.size(), in.data(), in.size(), 3);
  out.resize(n);
  return out;
}
ByteVec ZlibCompress(Bytes in) {
  uLongf n = compressBound(in.size());
  ByteVec out(n);
  compress2(out.data(), &n, in.data(), in.size(), 9);
  out.resize(n);
  return out;
}
ByteVec Lz4Compress(Bytes in) {
  ByteVec out(LZ4_compressBound(in.size()));
  int n = LZ4_compress_default(reinterpret_cast<const char*>(in.data()),
                               reinterpret_cast<char*>(out.data()), in.size(), out.size());
  out.resize(n);
  return out;
}
ByteVec Bzip2Compress(Bytes in) {
  unsigned n = in.size() + in.size() / 100 + 600;
  ByteVec out(n);
  BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(out.data()), &n,
                           reinterpret_cast<char*>(const_cast<uint8_t*>(in.data())), in.size(), 9,
                           0, 0);
  out.resize(n);
  return out;
}

struct Codec {
  FilterType type;
  ByteVec (*compress)(Bytes);
};

class CodecTest : public ::testing::TestWithParam<Codec> {};

TEST_P(CodecTest, ReversesTheLibrarysOutput) {
  const Codec c = GetParam();
  ByteVec plain = Sample(5000);
  ByteVec packed = c.compress(plain);
  ByteVec md = CompressionMetadata(plain.size(), packed.size());
  auto r =
      Unfilter({Compressor(c.type)}, OneChunkTile(plain.size(), md, packed), Ctx(Datatype::kUInt8));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == plain);
}

TEST_P(CodecTest, CompressesMetadataPartsToo) {
  // Two stages: the compressor's input metadata came from BYTESHUFFLE.
  const Codec c = GetParam();
  ByteVec plain = AsBytes<int32_t>({1, 2, 3, 4});
  ByteVec shuffled = {1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  ByteWriter shuffle_md;
  shuffle_md.Put<uint32_t>(1).Put<uint32_t>(16);
  ByteVec pm = c.compress(shuffle_md.bytes());
  ByteVec pd = c.compress(shuffled);
  ByteWriter md;
  md.Put<uint32_t>(1).Put<uint32_t>(1);
  md.Put<uint32_t>(shuffle_md.bytes().size()).Put<uint32_t>(pm.size());
  md.Put<uint32_t>(16).Put<uint32_t>(pd.size());
  ByteVec data = pm;
  AppendBytes(data, pd);
  auto r = Unfilter({MakeFilter(FilterType::kByteshuffle), Compressor(c.type)},
                    OneChunkTile(16, md.bytes(), data), Ctx(Datatype::kInt32));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == plain);
}

TEST_P(CodecTest, TruncationsAreRejected) {
  const Codec c = GetParam();
  ByteVec plain = Sample(300);
  ByteVec packed = c.compress(plain);
  ExpectTruncationsRejected({Compressor(c.type)}, plain.size(),
                            CompressionMetadata(plain.size(), packed.size()), packed,
                            Ctx(Datatype::kUInt8));
}

TEST_P(CodecTest, WrongDeclaredSizeIsCorrupt) {
  const Codec c = GetParam();
  ByteVec plain = Sample(300);
  ByteVec packed = c.compress(plain);
  for (uint32_t declared : {299u, 301u}) {
    auto r = Unfilter({Compressor(c.type)},
                      OneChunkTile(declared, CompressionMetadata(declared, packed.size()), packed),
                      Ctx(Datatype::kUInt8));
    ASSERT_FALSE(r.ok()) << declared;
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
    EXPECT_NE(r.error().message().find(std::string(FilterName(c.type))), std::string::npos)
        << r.error().message();
    EXPECT_NE(r.error().message().find("a0.tdb: tile at offset 4096"), std::string::npos);
  }
}

TEST_P(CodecTest, GarbageInputIsCorruptWithTheLibrarysText) {
  const Codec c = GetParam();
  ByteVec garbage = {0x13, 0x37, 0xde, 0xad, 0xbe, 0xef, 0x00, 0x42, 0x99, 0x01, 0x02};
  auto r = Unfilter({Compressor(c.type)},
                    OneChunkTile(64, CompressionMetadata(64, garbage.size()), garbage),
                    Ctx(Datatype::kUInt8));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
  if (c.type == FilterType::kZstd) {
    EXPECT_NE(r.error().message().find("Unknown frame descriptor"), std::string::npos)
        << r.error().message();
  }
  if (c.type == FilterType::kGzip) {
    EXPECT_NE(r.error().message().find("incorrect header check"), std::string::npos)
        << r.error().message();
  }
}

INSTANTIATE_TEST_SUITE_P(Codecs, CodecTest,
                         ::testing::Values(Codec{FilterType::kZstd, ZstdCompress},
                                           Codec{FilterType::kGzip, ZlibCompress},
                                           Codec{FilterType::kLz4, Lz4Compress},
                                           Codec{FilterType::kBzip2, Bzip2Compress}),
                         [](const ::testing::TestParamInfo<Codec>& i) {
                           return std::string(FilterName(i.param.type));
                         });

// --- TileDB's own codecs, by hand ------------------------------------------

TEST(RleTest, RunsOfCellsWithBigEndianLengths) {
  // int32 7 x3, -1 x1: [07 00 00 00][00 03] [ff ff ff ff][00 01]
  ByteVec runs = {7, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff, 0, 1};
  ByteVec want = AsBytes<int32_t>({7, 7, 7, -1});
  ByteVec md = CompressionMetadata(16, runs.size());
  auto r =
      Unfilter({Compressor(FilterType::kRle)}, OneChunkTile(16, md, runs), Ctx(Datatype::kInt32));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == want);
  ExpectTruncationsRejected({Compressor(FilterType::kRle)}, 16, md, runs, Ctx(Datatype::kInt32));
  // The run value size is the cell size: 3 x int16 per cell.
  ByteVec cells = {1, 0, 2, 0, 3, 0, 0, 2};
  auto c3 = Unfilter({Compressor(FilterType::kRle)},
                     OneChunkTile(12, CompressionMetadata(12, 8), cells), Ctx(Datatype::kInt16, 6));
  ASSERT_TRUE(c3.ok()) << c3.error().ToString();
  EXPECT_TRUE(*c3 == AsBytes<int16_t>({1, 2, 3, 1, 2, 3}));
}

TEST(DeltaTest, FirstValueThenTruncatedDeltas) {
  ByteWriter w;
  w.Put<uint64_t>(3).Put<int32_t>(10).Put<int32_t>(2).Put<int32_t>(-3);
  ByteVec md = CompressionMetadata(12, w.bytes().size());
  auto r = Unfilter({Compressor(FilterType::kDelta)}, OneChunkTile(12, md, w.bytes()),
                    Ctx(Datatype::kInt32));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == AsBytes<int32_t>({10, 12, 9}));
  ExpectTruncationsRejected({Compressor(FilterType::kDelta)}, 12, md, w.bytes(),
                            Ctx(Datatype::kInt32));
  // Reinterpreted as UINT16: six 2-byte values from twelve bytes of INT32s.
  Filter as16 = Compressor(FilterType::kDelta);
  as16.reinterpret_datatype = Datatype::kUInt16;
  ByteWriter w16;
  w16.Put<uint64_t>(6).Put<uint16_t>(1).Put<uint16_t>(0xffff).Put<uint16_t>(3);
  w16.Put<uint16_t>(0).Put<uint16_t>(0xfffd).Put<uint16_t>(1);
  auto r16 = Unfilter({as16}, OneChunkTile(12, CompressionMetadata(12, 20), w16.bytes()),
                      Ctx(Datatype::kInt32));
  ASSERT_TRUE(r16.ok()) << r16.error().ToString();
  EXPECT_TRUE(*r16 == AsBytes<uint16_t>({1, 0, 3, 3, 0, 1}));
  // Floats cannot be delta-coded.
  auto f = Unfilter({Compressor(FilterType::kDelta)}, OneChunkTile(12, md, w.bytes()),
                    Ctx(Datatype::kFloat32));
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.error().message().find("FLOAT32"), std::string::npos);
}

TEST(DoubleDeltaTest, SignAndMagnitudeBitsMostSignificantFirst) {
  // 0, 10, 15, 17: deltas 10, 5, 2; double deltas -5, -3. The largest of
  // |first delta| and |double deltas| is 10: 4 bits. Stream: 1 0101, 1 0011.
  ByteWriter w;
  w.Put<uint8_t>(4).Put<uint64_t>(4).Put<int64_t>(0).Put<int64_t>(10);
  w.Put<uint64_t>(uint64_t{0b1010110011} << 54);
  ByteVec md = CompressionMetadata(32, w.bytes().size());
  auto r = Unfilter({Compressor(FilterType::kDoubleDelta)}, OneChunkTile(32, md, w.bytes()),
                    Ctx(Datatype::kInt64));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == AsBytes<int64_t>({0, 10, 15, 17}));
  ExpectTruncationsRejected({Compressor(FilterType::kDoubleDelta)}, 32, md, w.bytes(),
                            Ctx(Datatype::kInt64));
}

TEST(DoubleDeltaTest, DoubleDeltasCrossWordBoundaries) {
  // 1, 3, 6, 10, ...: deltas 2, 3, 4, ...; every double delta 1; bit size 2
  // (|first delta| = 2); 40 values = 38 double deltas of 3 bits = 114 bits.
  std::vector<int32_t> values(40);
  for (int i = 0; i < 40; ++i) values[i] = 1 + i * (i + 3) / 2;
  std::vector<bool> bits;
  for (int i = 2; i < 40; ++i) bits.insert(bits.end(), {false, false, true});
  ByteWriter w;
  w.Put<uint8_t>(2).Put<uint64_t>(40).Put<int32_t>(values[0]).Put<int32_t>(values[1]);
  for (size_t at = 0; at < bits.size(); at += 64) {
    uint64_t word = 0;
    for (size_t b = 0; b < 64 && at + b < bits.size(); ++b) {
      if (bits[at + b]) word |= uint64_t{1} << (63 - b);
    }
    w.Put<uint64_t>(word);
  }
  auto r = Unfilter({Compressor(FilterType::kDoubleDelta)},
                    OneChunkTile(160, CompressionMetadata(160, w.bytes().size()), w.bytes()),
                    Ctx(Datatype::kInt32));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == AsBytes(values));
}

TEST(DoubleDeltaTest, WideBitSizeStoresValuesRaw) {
  ByteWriter w;
  w.Put<uint8_t>(15).Put<uint64_t>(2).Put<int16_t>(-32768).Put<int16_t>(32767);
  auto r = Unfilter({Compressor(FilterType::kDoubleDelta)},
                    OneChunkTile(4, CompressionMetadata(4, w.bytes().size()), w.bytes()),
                    Ctx(Datatype::kInt16));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == AsBytes<int16_t>({-32768, 32767}));
}

TEST(BitWidthReductionTest, WindowsOfReducedValues) {
  // uint32 1000, 1001, 1255: offset 1000, range 256 needs 9 bits -> 16.
  ByteWriter md;
  md.Put<uint32_t>(12).Put<uint32_t>(1).Put<uint32_t>(1000).Put<uint8_t>(16).Put<uint32_t>(12);
  ByteVec data = AsBytes<uint16_t>({0, 1, 255});
  auto r = Unfilter({MakeFilter(FilterType::kBitWidthReduction)},
                    OneChunkTile(12, md.bytes(), data), Ctx(Datatype::kUInt32));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == AsBytes<uint32_t>({1000, 1001, 1255}));
  ExpectTruncationsRejected({MakeFilter(FilterType::kBitWidthReduction)}, 12, md.bytes(), data,
                            Ctx(Datatype::kUInt32));
  // A second, unreduced window (bit width 32 = the type's) is stored as is.
  ByteWriter md2;
  md2.Put<uint32_t>(8).Put<uint32_t>(2);
  md2.Put<int32_t>(-5).Put<uint8_t>(8).Put<uint32_t>(4);
  md2.Put<int32_t>(0).Put<uint8_t>(32).Put<uint32_t>(4);
  ByteVec d2 = {3};
  ByteVec raw = AsBytes<int32_t>({-2000000000});
  AppendBytes(d2, raw);
  auto r2 = Unfilter({MakeFilter(FilterType::kBitWidthReduction)}, OneChunkTile(8, md2.bytes(), d2),
                     Ctx(Datatype::kInt32));
  ASSERT_TRUE(r2.ok()) << r2.error().ToString();
  EXPECT_TRUE(*r2 == AsBytes<int32_t>({-2, -2000000000}));
}

TEST(BitWidthReductionTest, DatetimesOnlyFromVersion20) {
  ByteWriter md;
  md.Put<uint32_t>(16).Put<uint32_t>(1).Put<int64_t>(100).Put<uint8_t>(8).Put<uint32_t>(16);
  ByteVec data = {0, 5};
  auto v20 = Unfilter({MakeFilter(FilterType::kBitWidthReduction)},
                      OneChunkTile(16, md.bytes(), data), Ctx(Datatype::kDatetimeMs, 8, 20));
  ASSERT_TRUE(v20.ok()) << v20.error().ToString();
  EXPECT_TRUE(*v20 == AsBytes<int64_t>({100, 105}));
  // Before version 20 the filter left datetimes alone: the bytes are the values.
  ByteVec plain = AsBytes<int64_t>({100, 105});
  auto v19 = Unfilter({MakeFilter(FilterType::kBitWidthReduction)}, OneChunkTile(16, {}, plain),
                      Ctx(Datatype::kDatetimeMs, 8, 19));
  ASSERT_TRUE(v19.ok()) << v19.error().ToString();
  EXPECT_TRUE(*v19 == plain);
}

TEST(PositiveDeltaTest, DeltasFromTheWindowsFirstValue) {
  ByteWriter md;
  md.Put<uint32_t>(1).Put<uint16_t>(5).Put<uint32_t>(8);
  ByteVec data = AsBytes<uint16_t>({0, 2, 0, 3});
  auto r = Unfilter({MakeFilter(FilterType::kPositiveDelta)}, OneChunkTile(8, md.bytes(), data),
                    Ctx(Datatype::kUInt16));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == AsBytes<uint16_t>({5, 7, 7, 10}));
  ExpectTruncationsRejected({MakeFilter(FilterType::kPositiveDelta)}, 8, md.bytes(), data,
                            Ctx(Datatype::kUInt16));
  // Floats pass through untouched.
  ByteVec f = AsBytes<float>({1.5f});
  auto pf = Unfilter({MakeFilter(FilterType::kPositiveDelta)}, OneChunkTile(4, {}, f),
                     Ctx(Datatype::kFloat32));
  ASSERT_TRUE(pf.ok());
  EXPECT_TRUE(*pf == f);
}

TEST(ByteshuffleTest, BytePlanesThenLeftover) {
  ByteWriter md;
  md.Put<uint32_t>(1).Put<uint32_t>(9);
  ByteVec data = {1, 5, 2, 6, 3, 7, 4, 8, 9};
  auto r = Unfilter({MakeFilter(FilterType::kByteshuffle)}, OneChunkTile(9, md.bytes(), data),
                    Ctx(Datatype::kInt32));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == (ByteVec{1, 2, 3, 4, 5, 6, 7, 8, 9}));
  ExpectTruncationsRejected({MakeFilter(FilterType::kByteshuffle)}, 9, md.bytes(), data,
                            Ctx(Datatype::kInt32));
}

// Every value size TileDB types have, counts around the 16 values the
// unshuffle takes at a time, and leftover bytes: against the definition
// (byte j of value i at j * n + i) on pseudo-random bytes.
TEST(ByteshuffleTest, EveryValueSizeCountAndLeftover) {
  const std::pair<Datatype, uint64_t> types[] = {{Datatype::kInt8, 1},
                                                 {Datatype::kInt16, 2},
                                                 {Datatype::kFloat32, 4},
                                                 {Datatype::kFloat64, 8}};
  std::vector<uint64_t> counts;
  for (uint64_t n = 0; n <= 50; ++n) counts.push_back(n);
  for (uint64_t n : {127, 128, 129, 4095, 4096, 4097}) counts.push_back(n);
  uint32_t seed = 12345;
  for (auto [type, ts] : types) {
    for (uint64_t n : counts) {
      for (uint64_t left = 0; left < ts; ++left) {
        const uint64_t size = n * ts + left;
        ByteVec original(size);
        for (auto& b : original) {
          seed = seed * 1103515245 + 12345;
          b = static_cast<uint8_t>(seed >> 16);
        }
        ByteVec shuffled(original);
        for (uint64_t i = 0; i < n; ++i) {
          for (uint64_t j = 0; j < ts; ++j) shuffled[j * n + i] = original[i * ts + j];
        }
        ByteWriter md;
        md.Put<uint32_t>(1).Put<uint32_t>(static_cast<uint32_t>(size));
        auto r =
            Unfilter({MakeFilter(FilterType::kByteshuffle)},
                     OneChunkTile(static_cast<uint32_t>(size), md.bytes(), shuffled), Ctx(type));
        ASSERT_TRUE(r.ok()) << r.error().ToString();
        ASSERT_TRUE(*r == original)
            << "value size " << ts << ", " << n << " values, " << left << " bytes left over";
      }
    }
  }
}

TEST(BitshuffleTest, BitPlanesOfEightValues) {
  // Eight uint16: value 3 is 0x0100 (bit 0 of byte 1: row 8, bit 3 -> 0x08);
  // value 0 is 0x0003 (bits 0 and 1 of byte 0: rows 0 and 1, bit 0).
  ByteVec shuffled(16, 0);
  shuffled[0] = 0x01;
  shuffled[1] = 0x01;
  shuffled[8] = 0x08;
  ByteWriter md;
  md.Put<uint32_t>(1).Put<uint32_t>(16);
  auto r = Unfilter({MakeFilter(FilterType::kBitshuffle)}, OneChunkTile(16, md.bytes(), shuffled),
                    Ctx(Datatype::kUInt16));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == AsBytes<uint16_t>({3, 0, 0, 0x0100, 0, 0, 0, 0}));
  ExpectTruncationsRejected({MakeFilter(FilterType::kBitshuffle)}, 16, md.bytes(), shuffled,
                            Ctx(Datatype::kUInt16));
  // A part whose length is not a multiple of 8 is stored as is.
  ByteWriter md6;
  md6.Put<uint32_t>(1).Put<uint32_t>(6);
  ByteVec six = {1, 2, 3, 4, 5, 6};
  auto r6 = Unfilter({MakeFilter(FilterType::kBitshuffle)}, OneChunkTile(6, md6.bytes(), six),
                     Ctx(Datatype::kUInt16));
  ASSERT_TRUE(r6.ok());
  EXPECT_TRUE(*r6 == six);
}

TEST(XorTest, EachValueXorThePrevious) {
  ByteWriter md;
  md.Put<uint32_t>(1).Put<uint32_t>(12);
  ByteVec data = AsBytes<int32_t>({5, 5 ^ 6, 0});
  auto r = Unfilter({MakeFilter(FilterType::kXor)}, OneChunkTile(12, md.bytes(), data),
                    Ctx(Datatype::kFloat32));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == AsBytes<int32_t>({5, 6, 6}));
  ExpectTruncationsRejected({MakeFilter(FilterType::kXor)}, 12, md.bytes(), data,
                            Ctx(Datatype::kFloat32));
}

TEST(ScaleFloatTest, ScaleTimesStoredPlusOffset) {
  Filter f = MakeFilter(FilterType::kScaleFloat);
  f.scale_byte_width = 2;
  f.scale_factor = 0.5;
  f.scale_offset = 1;
  ByteWriter md;
  md.Put<uint32_t>(1).Put<uint32_t>(6);
  ByteVec data = AsBytes<int16_t>({0, 2, -4});
  auto r = Unfilter({f}, OneChunkTile(24, md.bytes(), data), Ctx(Datatype::kFloat64));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == AsBytes<double>({1.0, 2.0, -1.0}));
  ExpectTruncationsRejected({f}, 24, md.bytes(), data, Ctx(Datatype::kFloat64));
  // Followed by a filter, SCALE_FLOAT's output type (INT16) is what that
  // filter saw: BYTESHUFFLE with 2-byte values.
  ByteWriter md2;
  md2.Put<uint32_t>(1).Put<uint32_t>(6).Put<uint32_t>(1).Put<uint32_t>(6);
  ByteVec shuffled = {0, 2, 0xfc, 0, 0, 0xff};
  auto r2 = Unfilter({f, MakeFilter(FilterType::kByteshuffle)},
                     OneChunkTile(24, md2.bytes(), shuffled), Ctx(Datatype::kFloat64));
  ASSERT_TRUE(r2.ok()) << r2.error().ToString();
  EXPECT_TRUE(*r2 == AsBytes<double>({1.0, 2.0, -1.0}));
}

ByteVec Digest(const EVP_MD* md, Bytes b) {
  ByteVec out(EVP_MAX_MD_SIZE);
  unsigned n = 0;
  EVP_Digest(b.data(), b.size(), out.data(), &n, md, nullptr);
  out.resize(n);
  return out;
}

TEST(ChecksumTest, VerifiesAndNamesTheMismatch) {
  ByteVec abc = {'a', 'b', 'c'};
  // Known vectors: MD5("abc"), SHA-256("abc").
  ASSERT_EQ(Digest(EVP_md5(), abc)[0], 0x90);
  ASSERT_EQ(Digest(EVP_sha256(), abc)[0], 0xba);
  for (FilterType t : {FilterType::kChecksumMd5, FilterType::kChecksumSha256}) {
    SCOPED_TRACE(FilterName(t));
    ByteVec digest = Digest(t == FilterType::kChecksumMd5 ? EVP_md5() : EVP_sha256(), abc);
    ByteWriter md;
    md.Put<uint32_t>(0).Put<uint32_t>(1).Put<uint64_t>(3).PutBytes(digest);
    auto ok = Unfilter({MakeFilter(t)}, OneChunkTile(3, md.bytes(), abc), Ctx(Datatype::kChar));
    ASSERT_TRUE(ok.ok()) << ok.error().ToString();
    EXPECT_TRUE(*ok == abc);
    ExpectTruncationsRejected({MakeFilter(t)}, 3, md.bytes(), abc, Ctx(Datatype::kChar));

    ByteVec bad = {'a', 'b', 'd'};
    auto r = Unfilter({MakeFilter(t)}, OneChunkTile(3, md.bytes(), bad), Ctx(Datatype::kChar));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
    const std::string& m = r.error().message();
    EXPECT_NE(m.find("a0.tdb: tile at offset 4096: chunk at offset 4104"), std::string::npos) << m;
    EXPECT_NE(m.find("checksum mismatch in data part 0"), std::string::npos) << m;
  }
}

TEST(ChecksumTest, CoversThePreviousStagesMetadata) {
  // CHECKSUM_SHA256 after BYTESHUFFLE: the checksum metadata is followed by
  // byteshuffle's, which a metadata checksum covers.
  ByteWriter inner;
  inner.Put<uint32_t>(1).Put<uint32_t>(4);
  ByteVec data = {1, 2, 3, 4};
  ByteWriter md;
  md.Put<uint32_t>(1).Put<uint32_t>(1);
  md.Put<uint64_t>(8).PutBytes(Digest(EVP_sha256(), inner.bytes()));
  md.Put<uint64_t>(4).PutBytes(Digest(EVP_sha256(), data));
  md.PutBytes(inner.bytes());
  std::vector<Filter> fs = {MakeFilter(FilterType::kByteshuffle),
                            MakeFilter(FilterType::kChecksumSha256)};
  auto r = Unfilter(fs, OneChunkTile(4, md.bytes(), data), Ctx(Datatype::kInt32));
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == data);
  ByteVec broken = md.bytes();
  broken.back() ^= 1;  // byteshuffle's part length, covered by the checksum
  auto b = Unfilter(fs, OneChunkTile(4, broken, data), Ctx(Datatype::kInt32));
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.error().message().find("metadata part 0"), std::string::npos);
}

void Encrypt(const EncryptionKey& key, Bytes iv, Bytes plain, ByteVec* cipher, ByteVec* tag) {
  EVP_CIPHER_CTX* c = EVP_CIPHER_CTX_new();
  EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), nullptr, key.bytes.data(), iv.data());
  cipher->resize(plain.size() + 16);
  int n = 0, m = 0;
  EVP_EncryptUpdate(c, cipher->data(), &n, plain.data(), plain.size());
  EVP_EncryptFinal_ex(c, cipher->data() + n, &m);
  cipher->resize(n + m);
  tag->resize(16);
  EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag->data());
  EVP_CIPHER_CTX_free(c);
}

TEST(EncryptionTest, DecryptsEachPartWithItsIvAndTag) {
  EncryptionKey key;
  std::iota(key.bytes.begin(), key.bytes.end(), 1);
  ByteVec iv(12, 7), plain = Sample(100), cipher, tag;
  Encrypt(key, iv, plain, &cipher, &tag);
  ByteWriter md;
  md.Put<uint32_t>(0).Put<uint32_t>(1).Put<uint32_t>(100).Put<uint32_t>(cipher.size());
  md.PutBytes(iv).PutBytes(tag);
  TileContext ctx = Ctx(Datatype::kUInt8);
  ctx.encrypted = true;
  ctx.key = &key;
  auto r = Unfilter({}, OneChunkTile(100, md.bytes(), cipher), ctx);
  ASSERT_TRUE(r.ok()) << r.error().ToString();
  EXPECT_TRUE(*r == plain);
  ExpectTruncationsRejected({}, 100, md.bytes(), cipher, ctx);

  EncryptionKey wrong = key;
  wrong.bytes[5] ^= 1;
  ctx.key = &wrong;
  auto w = Unfilter({}, OneChunkTile(100, md.bytes(), cipher), ctx);
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().code(), ErrorCode::kKey);
}

// --- Var-sized strings whose offsets come from the data tile ----------------

ByteVec EmptyOffsetsTile() {
  ByteWriter w;
  w.Put<uint64_t>(0);
  return w.Take();
}

TEST(VarStringTest, RleRunsRebuildTheOffsets) {
  // "aa", "aa", "b": runs (2, "aa"), (1, "b"); 1-byte lengths, big-endian.
  ByteVec runs = {2, 2, 'a', 'a', 1, 1, 'b'};
  ByteWriter md;
  md.Put<uint32_t>(0).Put<uint32_t>(1).Put<uint32_t>(5).Put<uint32_t>(7).Put<uint32_t>(24);
  md.Put<uint8_t>(1).Put<uint8_t>(1);
  auto data_pipeline = testing::Pipeline({Compressor(FilterType::kRle)}, 22);
  auto v = UnfilterVarTile(testing::Pipeline({}), EmptyOffsetsTile(), Ctx(Datatype::kUInt64),
                           data_pipeline, OneChunkTile(5, md.bytes(), runs),
                           Ctx(Datatype::kStringAscii), 5);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->offsets, (std::vector<uint64_t>{0, 2, 4}));
  EXPECT_EQ(std::string(v->data.begin(), v->data.end()), "aaaab");
  // A run longer than the cells the metadata announces.
  ByteVec long_run = {200, 0};
  ByteWriter md2;
  md2.Put<uint32_t>(0).Put<uint32_t>(1).Put<uint32_t>(0).Put<uint32_t>(2).Put<uint32_t>(24);
  md2.Put<uint8_t>(1).Put<uint8_t>(1);
  auto bad = UnfilterVarTile(testing::Pipeline({}), EmptyOffsetsTile(), Ctx(Datatype::kUInt64),
                             data_pipeline, OneChunkTile(0, md2.bytes(), long_run),
                             Ctx(Datatype::kStringAscii), 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code(), ErrorCode::kCorrupt);
}

TEST(VarStringTest, DictionaryIdsRebuildTheOffsets) {
  // "x", "yy", "x": ids 0 1 0; dictionary [1 'x'][2 'y' 'y'].
  ByteVec ids = {0, 1, 0};
  ByteVec dict = {1, 'x', 2, 'y', 'y'};
  ByteWriter md;
  md.Put<uint32_t>(0).Put<uint32_t>(1).Put<uint32_t>(4).Put<uint32_t>(3).Put<uint32_t>(24);
  md.Put<uint8_t>(1).Put<uint8_t>(1).Put<uint32_t>(5).PutBytes(dict);
  auto data_pipeline = testing::Pipeline({Compressor(FilterType::kDictionary)}, 22);
  auto v = UnfilterVarTile(testing::Pipeline({}), EmptyOffsetsTile(), Ctx(Datatype::kUInt64),
                           data_pipeline, OneChunkTile(4, md.bytes(), ids),
                           Ctx(Datatype::kStringUtf8), 0);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->offsets, (std::vector<uint64_t>{0, 1, 3}));
  EXPECT_EQ(std::string(v->data.begin(), v->data.end()), "xyyx");
  ids[1] = 2;  // not in the dictionary
  auto bad = UnfilterVarTile(testing::Pipeline({}), EmptyOffsetsTile(), Ctx(Datatype::kUInt64),
                             data_pipeline, OneChunkTile(4, md.bytes(), ids),
                             Ctx(Datatype::kStringUtf8), 0);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message().find("not in the dictionary"), std::string::npos);
}

TEST(VarStringTest, BeforeVersion12RleStringsHaveStoredOffsets) {
  // Version 11: RLE on strings is the plain cell RLE (value size 1) and the
  // offsets tile is a normal tile.
  ByteVec runs = {'a', 0, 2, 'b', 0, 1};
  auto data_pipeline = testing::Pipeline({Compressor(FilterType::kRle)}, 11);
  ByteVec offsets = AsBytes<uint64_t>({0, 1, 2});
  auto v = UnfilterVarTile(testing::Pipeline({}, 11), OneChunkTile(24, {}, offsets),
                           Ctx(Datatype::kUInt64, 8, 11), data_pipeline,
                           OneChunkTile(3, CompressionMetadata(3, 6), runs),
                           Ctx(Datatype::kStringAscii, 1, 11), 3);
  ASSERT_TRUE(v.ok()) << v.error().ToString();
  EXPECT_EQ(v->offsets, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(std::string(v->data.begin(), v->data.end()), "aab");
}

TEST(VarTileTest, OffsetsAreValidated) {
  auto none = testing::Pipeline({});
  ByteVec data = {'a', 'b', 'c'};
  for (std::vector<uint64_t> bad : {std::vector<uint64_t>{0, 2, 1}, std::vector<uint64_t>{0, 4}}) {
    ByteVec offsets = AsBytes(bad);
    auto v =
        UnfilterVarTile(none, OneChunkTile(offsets.size(), {}, offsets), Ctx(Datatype::kUInt64),
                        none, OneChunkTile(3, {}, data), Ctx(Datatype::kStringAscii), 0);
    ASSERT_FALSE(v.ok());
    EXPECT_EQ(v.error().code(), ErrorCode::kCorrupt);
  }
  ByteVec offsets = AsBytes<uint64_t>({0, 1});
  auto size = UnfilterVarTile(none, OneChunkTile(16, {}, offsets), Ctx(Datatype::kUInt64), none,
                              OneChunkTile(3, {}, data), Ctx(Datatype::kStringAscii), 4);
  ASSERT_FALSE(size.ok());
  EXPECT_NE(size.error().message().find("expected 4"), std::string::npos);
}

// --- Chunk framing -----------------------------------------------------------

TEST(ChunkFramingTest, ChunksConcatenate) {
  ByteWriter w;
  w.Put<uint64_t>(2);
  w.Put<uint32_t>(2).Put<uint32_t>(2).Put<uint32_t>(0).Put<uint8_t>(1).Put<uint8_t>(2);
  w.Put<uint32_t>(1).Put<uint32_t>(1).Put<uint32_t>(0).Put<uint8_t>(3);
  auto r = Unfilter({}, w.bytes(), Ctx(Datatype::kUInt8));
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(*r == (ByteVec{1, 2, 3}));
  auto size = FilteredTileSize(w.bytes());
  ASSERT_TRUE(size.ok());
  EXPECT_EQ(*size, w.bytes().size());
}

TEST(ChunkFramingTest, InconsistentFramesAreCorrupt) {
  ByteVec three = {1, 2, 3};
  // No filters: filtered and original lengths must agree.
  auto r = Unfilter({}, OneChunkTile(4, {}, three), Ctx(Datatype::kUInt8));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
  // Bytes after the last chunk.
  ByteVec tile = OneChunkTile(3, {}, three);
  tile.push_back(0);
  auto t = Unfilter({}, tile, Ctx(Datatype::kUInt8));
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.error().message().find("after the last chunk"), std::string::npos);
  // A chunk count that cannot fit.
  ByteWriter many;
  many.Put<uint64_t>(~uint64_t{0});
  auto m = Unfilter({}, many.bytes(), Ctx(Datatype::kUInt8));
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().code(), ErrorCode::kCorrupt);
  // Expected size.
  TileContext ctx = Ctx(Datatype::kUInt8);
  ctx.expected_size = 4;
  auto e = Unfilter({}, OneChunkTile(3, {}, three), ctx);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.error().message().find("expected 4"), std::string::npos);
}

TEST(ChunkFramingTest, LimitIsOutOfMemory) {
  Limits small;
  small.max_tile_bytes = 2;
  TileContext ctx = Ctx(Datatype::kUInt8);
  ctx.limits = &small;
  auto r = Unfilter({}, OneChunkTile(3, {}, ByteVec{1, 2, 3}), ctx);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kOutOfMemory);
}

}  // namespace
}  // namespace tiledbfs::core::filters_test
