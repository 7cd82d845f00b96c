// BYTESHUFFLE and BITSHUFFLE (tile.md "Byteshuffle Filter", "Bitshuffle
// Filter"). TileDB runs them through c-blosc2's (bit)shuffle; the layouts,
// written here from their definition:
//   metadata: uint32 parts, uint32 length of each part; the rest of the
//             metadata belongs to the next stage
//   data:     the shuffled parts, same lengths as the originals.
// Byteshuffle of n values of s bytes stores byte j of value i at j*n + i;
// bytes past the last whole value stay in place.
// Bitshuffle works on blocks of at most 8192 bytes; in a block of n values of
// s bytes, the first n8 = n - n % 8 values are stored as 8*s rows of n8 bits
// (row 8*j + b holds bit b of byte j of each value, value i at bit i % 8 of
// byte i / 8 of the row); the bytes past them stay in place. A part whose
// length is not a multiple of 8 and of the value size is stored as is.
#include <fmt/format.h>

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "core/filters/filter_stage.h"

namespace tiledbfs::core::filters {

namespace {

constexpr uint64_t kBitshuffleBlock = 8192;

// Values of TS bytes: reads the TS byte planes side by side and writes each
// value whole, so the output is written once, in order.
template <uint64_t TS>
void ByteUnshuffleFixed(const uint8_t* src, uint64_t n, uint8_t* dst) {
  uint64_t i = 0;
#if defined(__SSE2__)
  // 16 values at a time: 16 bytes of each plane, interleaved byte by byte,
  // then pairs, then quads (a transpose in log2(TS) rounds of unpacks);
  // the values past the last 16 go one by one below. The scalar loop was a
  // large share of a BYTESHUFFLE+ZSTD read.
  for (; i + 16 <= n; i += 16) {
    __m128i a[TS];
    for (uint64_t j = 0; j < TS; ++j) {
      a[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j * n + i));
    }
    __m128i* out = reinterpret_cast<__m128i*>(dst + i * TS);
    if constexpr (TS == 2) {
      _mm_storeu_si128(out, _mm_unpacklo_epi8(a[0], a[1]));
      _mm_storeu_si128(out + 1, _mm_unpackhi_epi8(a[0], a[1]));
    } else {
      // b: planes 2k, 2k+1 as byte pairs (values 0-7, then 8-15).
      __m128i b[TS];
      for (uint64_t k = 0; k < TS / 2; ++k) {
        b[2 * k] = _mm_unpacklo_epi8(a[2 * k], a[2 * k + 1]);
        b[2 * k + 1] = _mm_unpackhi_epi8(a[2 * k], a[2 * k + 1]);
      }
      // c: planes 4k..4k+3 as quads; c[4k + q] holds values 4q..4q+3.
      __m128i c[TS];
      for (uint64_t k = 0; k < TS / 4; ++k) {
        const __m128i* p = b + 4 * k;  // p[0], p[2]: values 0-7; p[1], p[3]: 8-15
        c[4 * k] = _mm_unpacklo_epi16(p[0], p[2]);
        c[4 * k + 1] = _mm_unpackhi_epi16(p[0], p[2]);
        c[4 * k + 2] = _mm_unpacklo_epi16(p[1], p[3]);
        c[4 * k + 3] = _mm_unpackhi_epi16(p[1], p[3]);
      }
      if constexpr (TS == 4) {
        for (uint64_t q = 0; q < 4; ++q) _mm_storeu_si128(out + q, c[q]);
      } else {
        // Bytes 0-3 of values 4q..4q+3 beside bytes 4-7 of the same values.
        for (uint64_t q = 0; q < 4; ++q) {
          _mm_storeu_si128(out + 2 * q, _mm_unpacklo_epi32(c[q], c[4 + q]));
          _mm_storeu_si128(out + 2 * q + 1, _mm_unpackhi_epi32(c[q], c[4 + q]));
        }
      }
    }
  }
#endif
  for (; i < n; ++i) {
    uint8_t v[TS];
    for (uint64_t j = 0; j < TS; ++j) v[j] = src[j * n + i];
    std::memcpy(dst + i * TS, v, TS);
  }
}

void ByteUnshuffle(const uint8_t* src, uint64_t size, uint64_t ts, uint8_t* dst) {
  const uint64_t n = ts == 0 ? 0 : size / ts;
  if (ts <= 1 || n == 0) {
    if (size > 0) std::memcpy(dst, src, size);  // an empty chunk may have null pointers
    return;
  }
  switch (ts) {
    case 2:
      ByteUnshuffleFixed<2>(src, n, dst);
      break;
    case 4:
      ByteUnshuffleFixed<4>(src, n, dst);
      break;
    case 8:
      ByteUnshuffleFixed<8>(src, n, dst);
      break;
    default:
      for (uint64_t j = 0; j < ts; ++j) {
        for (uint64_t i = 0; i < n; ++i) dst[i * ts + j] = src[j * n + i];
      }
  }
  std::memcpy(dst + n * ts, src + n * ts, size - n * ts);
}

void BitUnshuffleBlock(const uint8_t* src, uint64_t size, uint64_t ts, uint8_t* dst) {
  uint64_t n = size / ts;
  n -= n % 8;
  const uint64_t row = n / 8;  // bytes per bit row
  std::memset(dst, 0, n * ts);
  for (uint64_t j = 0; j < ts; ++j) {
    for (uint64_t b = 0; b < 8; ++b) {
      const uint8_t* r = src + (j * 8 + b) * row;
      for (uint64_t k = 0; k < row; ++k) {
        uint8_t bits = r[k];
        if (bits == 0) continue;
        for (uint64_t m = 0; m < 8; ++m) {
          dst[(k * 8 + m) * ts + j] |= static_cast<uint8_t>(((bits >> m) & 1) << b);
        }
      }
    }
  }
  std::memcpy(dst + n * ts, src + n * ts, size - n * ts);
}

template <class Unshuffle>
Result<StageOutput> ReverseShuffle(const StageContext& ctx, Bytes metadata, Bytes data,
                                   std::string_view name, Unshuffle unshuffle) {
  ByteReader md(metadata);
  ASSIGN_OR_RETURN(uint32_t parts, md.Read<uint32_t>(fmt::format("{}: number of parts", name)));
  if (parts > md.remaining() / 4) {
    return md.Corrupt(fmt::format("{}: parts", name),
                      fmt::format("{} parts cannot fit in {} bytes", parts, md.remaining()));
  }
  ByteReader in(data);
  StageOutput out;
  if (data.size() > ctx.capacity) {
    return Error::Corrupt(
        fmt::format("{}: {} bytes exceed the expected {}", name, data.size(), ctx.capacity));
  }
  ByteVec* dst = &out.data;
  if (ctx.sink != nullptr) {
    dst = ctx.sink;
    out.data_in_sink = true;
  }
  const uint64_t base = dst->size();
  dst->resize(base + data.size());
  uint64_t at = base;
  for (uint32_t p = 0; p < parts; ++p) {
    ASSIGN_OR_RETURN(uint32_t len, md.Read<uint32_t>(fmt::format("{}: part length", name)));
    ASSIGN_OR_RETURN(Bytes src, in.ReadBytes(len, fmt::format("{}: part {}", name, p)));
    unshuffle(src.data(), len, dst->data() + at);
    at += len;
  }
  if (!in.empty()) {
    return in.Corrupt(name, fmt::format("{} bytes after the parts", in.remaining()));
  }
  out.metadata.assign(md.rest().begin(), md.rest().end());
  return out;
}

}  // namespace

Result<StageOutput> ReverseByteshuffle(const StageContext& ctx, Bytes metadata, Bytes data) {
  const uint64_t ts = DatatypeSize(ctx.type);
  return ReverseShuffle(
      ctx, metadata, data, "BYTESHUFFLE",
      [ts](const uint8_t* src, uint64_t size, uint8_t* dst) { ByteUnshuffle(src, size, ts, dst); });
}

Result<StageOutput> ReverseBitshuffle(const StageContext& ctx, Bytes metadata, Bytes data) {
  const uint64_t ts = DatatypeSize(ctx.type);
  return ReverseShuffle(ctx, metadata, data, "BITSHUFFLE",
                        [ts](const uint8_t* src, uint64_t size, uint8_t* dst) {
                          if (ts == 0 || size % ts != 0 || size % 8 != 0) {
                            if (size > 0) std::memcpy(dst, src, size);
                            return;
                          }
                          for (uint64_t at = 0; at < size; at += kBitshuffleBlock) {
                            uint64_t block = std::min(kBitshuffleBlock, size - at);
                            BitUnshuffleBlock(src + at, block, ts, dst + at);
                          }
                        });
}

}  // namespace tiledbfs::core::filters
