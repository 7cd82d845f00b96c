// Hostile lengths: declared sizes far beyond the bytes present must be
// refused without allocating in proportion to the claim. This file replaces
// the global operator new to record the largest single allocation.
#include <bzlib.h>
#include <gtest/gtest.h>
#include <lz4.h>
#include <zlib.h>
#include <zstd.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "core/filters/filter_pipeline.h"
#include "tests/core/filters/test_util.h"

namespace {
std::atomic<bool> g_tracking{false};
std::atomic<size_t> g_largest{0};

void* Allocate(size_t n) {
  if (g_tracking.load(std::memory_order_relaxed)) {
    size_t prev = g_largest.load();
    while (n > prev && !g_largest.compare_exchange_weak(prev, n)) {
    }
  }
  void* p = std::malloc(n ? n : 1);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}
}  // namespace

void* operator new(size_t n) { return Allocate(n); }
void* operator new[](size_t n) { return Allocate(n); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }

namespace tiledbfs::core::hostile_test {
namespace {

using testing::ByteWriter;
using testing::MakeFilter;
using testing::OneChunkTile;

constexpr uint32_t kHuge = 0xffffffffu;
constexpr size_t kAllowed = 16 << 20;  // far below any claim made here

class HostileTest : public ::testing::Test {
 protected:
  // Runs the pipeline; expects failure and no allocation near the claim.
  void ExpectRefused(const std::vector<Filter>& filters, Bytes tile, Datatype type,
                     uint64_t cell_size = 0) {
    TileContext ctx(DefaultLimits());
    ctx.type = type;
    ctx.cell_size = cell_size ? cell_size : DatatypeSize(type);
    ctx.format_version = 22;
    ctx.file = "a0.tdb";
    g_largest = 0;
    g_tracking = true;
    auto r = UnfilterTile(testing::Pipeline(filters), tile, ctx);
    g_tracking = false;
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt) << r.error().ToString();
    EXPECT_LT(g_largest.load(), kAllowed) << r.error().ToString();
  }
};

Filter Compressor(FilterType t) {
  Filter f = MakeFilter(t);
  f.compression_level = -1;
  return f;
}

ByteVec PartMetadata(uint32_t declared, uint32_t compressed) {
  ByteWriter w;
  w.Put<uint32_t>(0).Put<uint32_t>(1).Put<uint32_t>(declared).Put<uint32_t>(compressed);
  return w.Take();
}

ByteVec Plain() { return ByteVec(100, 'x'); }

TEST_F(HostileTest, TheTrackerSeesLargeAllocations) {
  g_largest = 0;
  g_tracking = true;
  auto* big = new ByteVec(kAllowed + 1);
  g_tracking = false;
  EXPECT_GT(g_largest.load(), kAllowed);
  delete big;
}

TEST_F(HostileTest, ChunkClaimingFourGibWithoutFilters) {
  ExpectRefused({}, OneChunkTile(kHuge, {}, Plain()), Datatype::kUInt8);
}

TEST_F(HostileTest, ZstdFrameStatingItsSize) {
  ByteVec p = Plain(), z(ZSTD_compressBound(p.size()));
  z.resize(ZSTD_compress(z.data(), z.size(), p.data(), p.size(), 1));
  ExpectRefused({Compressor(FilterType::kZstd)},
                OneChunkTile(kHuge, PartMetadata(kHuge, z.size()), z), Datatype::kUInt8);
}

TEST_F(HostileTest, ZstdFrameWithoutItsSize) {
  ByteVec p = Plain(), z(ZSTD_compressBound(p.size()));
  ZSTD_CCtx* c = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(c, ZSTD_c_contentSizeFlag, 0);
  z.resize(ZSTD_compress2(c, z.data(), z.size(), p.data(), p.size()));
  ZSTD_freeCCtx(c);
  ASSERT_EQ(ZSTD_getFrameContentSize(z.data(), z.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  ExpectRefused({Compressor(FilterType::kZstd)},
                OneChunkTile(kHuge, PartMetadata(kHuge, z.size()), z), Datatype::kUInt8);
}

TEST_F(HostileTest, GzipBzip2Lz4) {
  ByteVec p = Plain();
  uLongf n = compressBound(p.size());
  ByteVec g(n);
  compress(g.data(), &n, p.data(), p.size());
  g.resize(n);
  ExpectRefused({Compressor(FilterType::kGzip)},
                OneChunkTile(kHuge, PartMetadata(kHuge, g.size()), g), Datatype::kUInt8);
  unsigned bn = 1000;
  ByteVec b(bn);
  BZ2_bzBuffToBuffCompress(reinterpret_cast<char*>(b.data()), &bn,
                           reinterpret_cast<char*>(p.data()), p.size(), 9, 0, 0);
  b.resize(bn);
  ExpectRefused({Compressor(FilterType::kBzip2)},
                OneChunkTile(kHuge, PartMetadata(kHuge, b.size()), b), Datatype::kUInt8);
  ByteVec l(LZ4_compressBound(p.size()));
  l.resize(LZ4_compress_default(reinterpret_cast<const char*>(p.data()),
                                reinterpret_cast<char*>(l.data()), p.size(), l.size()));
  ExpectRefused({Compressor(FilterType::kLz4)},
                OneChunkTile(kHuge, PartMetadata(kHuge, l.size()), l), Datatype::kUInt8);
}

TEST_F(HostileTest, ManyPartsOrHugePartCounts) {
  ByteWriter md;
  md.Put<uint32_t>(kHuge).Put<uint32_t>(kHuge);
  ExpectRefused({Compressor(FilterType::kZstd)}, OneChunkTile(10, md.bytes(), Plain()),
                Datatype::kUInt8);
}

TEST_F(HostileTest, TileDbCodecs) {
  // RLE: one run of 65535 4-byte values for a 4 GiB claim.
  ByteVec run = {1, 2, 3, 4, 0xff, 0xff};
  ExpectRefused({Compressor(FilterType::kRle)}, OneChunkTile(kHuge, PartMetadata(kHuge, 6), run),
                Datatype::kInt32);
  // DELTA / DOUBLE_DELTA: counts matching the claim, values absent.
  const uint32_t declared = 0xfffffff8u;
  ByteWriter d;
  d.Put<uint64_t>(declared / 8).Put<int64_t>(1);
  ExpectRefused({Compressor(FilterType::kDelta)},
                OneChunkTile(declared, PartMetadata(declared, d.bytes().size()), d.bytes()),
                Datatype::kInt64);
  ByteWriter dd;
  dd.Put<uint8_t>(3).Put<uint64_t>(declared / 8).Put<int64_t>(1).Put<int64_t>(2);
  ExpectRefused({Compressor(FilterType::kDoubleDelta)},
                OneChunkTile(declared, PartMetadata(declared, dd.bytes().size()), dd.bytes()),
                Datatype::kInt64);
}

TEST_F(HostileTest, WindowAndPartFilters) {
  ByteWriter bwr;
  bwr.Put<uint32_t>(kHuge).Put<uint32_t>(0);
  ExpectRefused({MakeFilter(FilterType::kBitWidthReduction)}, OneChunkTile(kHuge, bwr.bytes(), {}),
                Datatype::kUInt32);
  ByteWriter parts;
  parts.Put<uint32_t>(1).Put<uint32_t>(kHuge);
  for (FilterType t : {FilterType::kByteshuffle, FilterType::kBitshuffle, FilterType::kXor}) {
    ExpectRefused({MakeFilter(t)}, OneChunkTile(kHuge, parts.bytes(), Plain()), Datatype::kInt32);
  }
  Filter sf = MakeFilter(FilterType::kScaleFloat);
  sf.scale_byte_width = 1;
  ExpectRefused({sf}, OneChunkTile(kHuge, parts.bytes(), Plain()), Datatype::kFloat64);
  ByteWriter sum;
  sum.Put<uint32_t>(0).Put<uint32_t>(1).Put<uint64_t>(~uint64_t{0}).PutBytes(ByteVec(16, 0));
  ExpectRefused({MakeFilter(FilterType::kChecksumMd5)}, OneChunkTile(kHuge, sum.bytes(), Plain()),
                Datatype::kInt32);
}

TEST_F(HostileTest, EncryptedPartLongerThanTheData) {
  EncryptionKey key;
  ByteWriter md;
  md.Put<uint32_t>(0).Put<uint32_t>(1).Put<uint32_t>(kHuge).Put<uint32_t>(kHuge);
  md.PutBytes(ByteVec(28, 0));
  TileContext ctx(DefaultLimits());
  ctx.encrypted = true;
  ctx.key = &key;
  g_largest = 0;
  g_tracking = true;
  auto r = UnfilterTile(testing::Pipeline({}), OneChunkTile(kHuge, md.bytes(), Plain()), ctx);
  g_tracking = false;
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code(), ErrorCode::kCorrupt);
  EXPECT_LT(g_largest.load(), kAllowed);
}

TEST_F(HostileTest, VarStringRunsOfEmptyStrings) {
  // A run of 2^64 - 1 empty strings in a tile of 3 cells.
  ByteWriter data;
  for (int i = 0; i < 8; ++i) data.Put<uint8_t>(0xff);
  data.Put<uint8_t>(0);
  ByteWriter md;
  md.Put<uint32_t>(0).Put<uint32_t>(1).Put<uint32_t>(0).Put<uint32_t>(9).Put<uint32_t>(24);
  md.Put<uint8_t>(8).Put<uint8_t>(1);
  ByteWriter empty;
  empty.Put<uint64_t>(0);
  TileContext octx(DefaultLimits()), dctx(DefaultLimits());
  octx.type = Datatype::kUInt64;
  dctx.type = Datatype::kStringAscii;
  g_largest = 0;
  g_tracking = true;
  auto v = UnfilterVarTile(testing::Pipeline({}), empty.bytes(), octx,
                           testing::Pipeline({Compressor(FilterType::kRle)}),
                           OneChunkTile(0, md.bytes(), data.bytes()), dctx, 0);
  g_tracking = false;
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().code(), ErrorCode::kCorrupt);
  EXPECT_LT(g_largest.load(), kAllowed);
}

}  // namespace
}  // namespace tiledbfs::core::hostile_test
