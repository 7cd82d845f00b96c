// TileDB's own compressors, reversed. Layouts from TileDB's
// tiledb/sm/compressors/{rle,dd,delta,dict}_compressor.* (the spec has pages
// for double delta, delta and dictionary under format_spec/filters/):
//
// RLE (fixed-size values): runs of [value (value size bytes), uint16 run
//   length BIG-endian]; the value size is the tile's cell size.
// DELTA: uint64 n, first value, then n-1 deltas each truncated to the value
//   size; value[i] = value[i-1] + delta[i] modulo 2^(8*size).
// DOUBLE_DELTA: uint8 bit size, uint64 n; if bit size >= 8*size-1 the values
//   follow raw; else the first two values raw, then for each further value
//   one sign bit and `bit size` magnitude bits of the double delta, packed
//   most significant bit first into little-endian uint64 words;
//   value[i] = dd + 2*value[i-1] - value[i-2] modulo 2^(8*size).
// String RLE: runs of [run length, string length, string bytes], both
//   lengths BIG-endian of 1, 2, 4 or 8 bytes.
// DICTIONARY: ids BIG-endian of 1, 2, 4 or 8 bytes; the dictionary is
//   [string length BIG-endian, bytes] repeated.
// The delta codecs see the datatype as TileDB does: float types cannot be
// delta-coded; strings, ANY, BLOB, BOOL, CHAR use one-byte values; datetime
// and time types eight. Only the value size matters when decoding, as all
// arithmetic is modulo 2^(8*size).
#include <fmt/format.h>

#include <cstring>

#include "core/filters/filter_stage.h"

namespace tiledbfs::core::filters {

namespace {

Result<uint64_t> DeltaValueSize(Datatype t, std::string_view codec) {
  if (IsFloat(t)) {
    return Error::Corrupt(fmt::format("{}: cannot apply to {} values", codec, DatatypeName(t)));
  }
  if (IsString(t) || t == Datatype::kAny || IsBlobLike(t) || t == Datatype::kBool) return 1;
  return DatatypeSize(t);
}

uint64_t LoadLe(const uint8_t* p, uint64_t size) {
  uint64_t v = 0;
  std::memcpy(&v, p, size);  // little-endian host (byte_reader.h)
  return v;
}
void StoreLe(uint8_t* p, uint64_t v, uint64_t size) { std::memcpy(p, &v, size); }

uint64_t LoadBe(const uint8_t* p, uint64_t size) {
  uint64_t v = 0;
  for (uint64_t i = 0; i < size; ++i) v = (v << 8) | p[i];
  return v;
}

// TileDB rounds a declared byte size up to an integer width.
Result<uint64_t> IntWidth(uint8_t declared, std::string_view field) {
  if (declared == 0) return Error::Corrupt(fmt::format("{} is 0", field));
  if (declared <= 1) return 1;
  if (declared <= 2) return 2;
  if (declared <= 4) return 4;
  return 8;
}

// A most-significant-bit-first reader over little-endian uint64 words.
class BitReader {
 public:
  explicit BitReader(Bytes words) : words_(words) {}
  bool Next(uint64_t* bit) {
    if (bit_ < 0) {
      if (pos_ + 8 > words_.size()) return false;
      std::memcpy(&word_, words_.data() + pos_, 8);
      pos_ += 8;
      bit_ = 63;
    }
    *bit = (word_ >> bit_) & 1;
    --bit_;
    return true;
  }

 private:
  Bytes words_;
  uint64_t pos_ = 0;
  uint64_t word_ = 0;
  int bit_ = -1;
};

Status CheckDeclared(uint64_t n, uint64_t size, uint64_t declared, std::string_view codec) {
  uint64_t bytes;
  if (MulOverflow(n, size, &bytes) || bytes != declared) {
    return Error::Corrupt(
        fmt::format("{}: {} values of {} bytes, expected {} bytes", codec, n, size, declared));
  }
  return Ok();
}

}  // namespace

Status DecodeRle(Bytes in, uint64_t value_size, uint64_t declared, ByteVec* out) {
  if (value_size == 0 || value_size > (uint64_t{1} << 32)) {
    return Error::Corrupt(fmt::format("RLE: invalid value size {}", value_size));
  }
  const uint64_t run_size = value_size + 2;
  if (in.size() % run_size != 0) {
    return Error::Corrupt(
        fmt::format("RLE: {} bytes are not whole runs of {} bytes", in.size(), run_size));
  }
  const size_t start = out->size();
  uint64_t produced = 0;
  for (uint64_t at = 0; at < in.size(); at += run_size) {
    const uint8_t* v = in.data() + at;
    uint64_t run = (uint64_t{v[value_size]} << 8) | v[value_size + 1];
    if (run * value_size > declared - produced) {
      out->resize(start);
      return Error::Corrupt(fmt::format("RLE: runs expand past the expected {} bytes", declared));
    }
    for (uint64_t j = 0; j < run; ++j) AppendBytes(*out, v, value_size);
    produced += run * value_size;
  }
  if (produced != declared) {
    out->resize(start);
    return Error::Corrupt(
        fmt::format("RLE: runs expand to {} bytes, expected {}", produced, declared));
  }
  return Ok();
}

Status DecodeDelta(Bytes in, Datatype type, uint64_t declared, ByteVec* out) {
  ASSIGN_OR_RETURN(uint64_t size, DeltaValueSize(type, "DELTA"));
  ByteReader r(in);
  ASSIGN_OR_RETURN(uint64_t n, r.Read<uint64_t>("DELTA: number of values"));
  TRY(CheckDeclared(n, size, declared, "DELTA"));
  if (n == 0 || r.remaining() != declared) {
    return Error::Corrupt(
        fmt::format("DELTA: {} values need {} bytes, {} present", n, declared, r.remaining()));
  }
  const size_t start = out->size();
  out->resize(start + declared);
  uint8_t* dst = out->data() + start;
  const uint8_t* src = r.rest().data();
  uint64_t value = LoadLe(src, size);
  StoreLe(dst, value, size);
  for (uint64_t i = 1; i < n; ++i) {
    value += LoadLe(src + i * size, size);
    StoreLe(dst + i * size, value, size);
  }
  return Ok();
}

Status DecodeDoubleDelta(Bytes in, Datatype type, uint64_t declared, ByteVec* out) {
  ASSIGN_OR_RETURN(uint64_t size, DeltaValueSize(type, "DOUBLE_DELTA"));
  ByteReader r(in);
  ASSIGN_OR_RETURN(uint8_t bitsize, r.Read<uint8_t>("DOUBLE_DELTA: bit size"));
  ASSIGN_OR_RETURN(uint64_t n, r.Read<uint64_t>("DOUBLE_DELTA: number of values"));
  TRY(CheckDeclared(n, size, declared, "DOUBLE_DELTA"));
  const size_t start = out->size();
  if (bitsize >= size * 8 - 1) {  // stored raw
    if (r.remaining() != declared) {
      return Error::Corrupt(
          fmt::format("DOUBLE_DELTA: {} raw bytes, expected {}", r.remaining(), declared));
    }
    AppendBytes(*out, r.rest());
    return Ok();
  }
  const uint64_t raw = std::min<uint64_t>(n, 2);
  uint64_t words = 0;
  if (n > 2) {
    // n <= declared, so (n - 2) * (bitsize + 1) cannot overflow.
    uint64_t bits = (n - 2) * (uint64_t{bitsize} + 1);
    words = bits / 64 + (bits % 64 != 0);
  }
  if (r.remaining() != raw * size + words * 8) {
    return Error::Corrupt(
        fmt::format("DOUBLE_DELTA: {} values of {} bits need {} bytes, {} present", n, bitsize,
                    raw * size + words * 8, r.remaining()));
  }
  out->resize(start + declared);
  uint8_t* dst = out->data() + start;
  std::memcpy(dst, r.rest().data(), raw * size);
  if (n <= 2) return Ok();
  BitReader bits(r.rest().subspan(raw * size));
  uint64_t prev2 = LoadLe(dst, size), prev1 = LoadLe(dst + size, size);
  for (uint64_t i = 2; i < n; ++i) {
    uint64_t sign = 0, bit = 0, magnitude = 0;
    bits.Next(&sign);  // the length check above guarantees every bit
    for (int b = 0; b < bitsize; ++b) {
      bits.Next(&bit);
      magnitude = (magnitude << 1) | bit;
    }
    uint64_t dd = sign ? uint64_t{0} - magnitude : magnitude;
    uint64_t value = dd + 2 * prev1 - prev2;
    StoreLe(dst + i * size, value, size);
    prev2 = prev1;
    prev1 = LoadLe(dst + i * size, size);
  }
  return Ok();
}

Status DecodeStringRle(Bytes in, uint8_t run_len_bytes, uint8_t str_len_bytes, uint64_t declared,
                       ByteVec* out, std::vector<uint64_t>* offsets, uint64_t max_cells) {
  ASSIGN_OR_RETURN(uint64_t rw, IntWidth(run_len_bytes, "RLE: run length size"));
  ASSIGN_OR_RETURN(uint64_t sw, IntWidth(str_len_bytes, "RLE: string length size"));
  if (in.empty()) return Error::Corrupt("RLE: no runs");
  const size_t start = out->size();
  uint64_t cells = 0;
  ByteReader r(in);
  while (!r.empty()) {
    ASSIGN_OR_RETURN(Bytes rb, r.ReadBytes(rw, "RLE: run length"));
    ASSIGN_OR_RETURN(Bytes sb, r.ReadBytes(sw, "RLE: string length"));
    uint64_t run = LoadBe(rb.data(), rw);
    uint64_t len = LoadBe(sb.data(), sw);
    ASSIGN_OR_RETURN(Bytes str, r.ReadBytes(len, "RLE: string"));
    uint64_t bytes;
    if (run > max_cells - cells || MulOverflow(run, len, &bytes) ||
        bytes > declared - (out->size() - start)) {
      return r.Corrupt("RLE: run length", fmt::format("run of {} strings of {} bytes overflows "
                                                      "the tile ({} cells, {} bytes)",
                                                      run, len, max_cells, declared));
    }
    for (uint64_t j = 0; j < run; ++j) {
      offsets->push_back(out->size() - start);
      AppendBytes(*out, str);
    }
    cells += run;
  }
  if (out->size() - start != declared) {
    return Error::Corrupt(
        fmt::format("RLE: strings add up to {} bytes, expected {}", out->size() - start, declared));
  }
  return Ok();
}

Status DecodeStringDictionary(Bytes in, Bytes serialized_dict, uint8_t id_bytes,
                              uint8_t str_len_bytes, uint64_t declared, ByteVec* out,
                              std::vector<uint64_t>* offsets, uint64_t max_cells) {
  ASSIGN_OR_RETURN(uint64_t iw, IntWidth(id_bytes, "DICTIONARY: id size"));
  ASSIGN_OR_RETURN(uint64_t sw, IntWidth(str_len_bytes, "DICTIONARY: string length size"));
  if (in.empty() || serialized_dict.empty()) {
    return Error::Corrupt("DICTIONARY: empty ids or dictionary");
  }
  std::vector<Bytes> dict;
  ByteReader d(serialized_dict);
  while (!d.empty()) {
    ASSIGN_OR_RETURN(Bytes lb, d.ReadBytes(sw, "DICTIONARY: string length"));
    ASSIGN_OR_RETURN(Bytes word, d.ReadBytes(LoadBe(lb.data(), sw), "DICTIONARY: string"));
    dict.push_back(word);
  }
  if (in.size() % iw != 0 || in.size() / iw > max_cells) {
    return Error::Corrupt(
        fmt::format("DICTIONARY: {} bytes of {}-byte ids for {} cells", in.size(), iw, max_cells));
  }
  const size_t start = out->size();
  for (uint64_t at = 0; at < in.size(); at += iw) {
    uint64_t id = LoadBe(in.data() + at, iw);
    if (id >= dict.size()) {
      return Error::Corrupt(
          fmt::format("DICTIONARY: id {} of cell {} is not in the dictionary "
                      "({} strings)",
                      id, at / iw, dict.size()));
    }
    const Bytes& w = dict[id];
    if (w.size() > declared - (out->size() - start)) {
      return Error::Corrupt(
          fmt::format("DICTIONARY: strings exceed the expected {} bytes", declared));
    }
    offsets->push_back(out->size() - start);
    AppendBytes(*out, w);
  }
  if (out->size() - start != declared) {
    return Error::Corrupt(fmt::format("DICTIONARY: strings add up to {} bytes, expected {}",
                                      out->size() - start, declared));
  }
  return Ok();
}

}  // namespace tiledbfs::core::filters
