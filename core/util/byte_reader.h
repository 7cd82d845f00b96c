// The one checked reader of little-endian on-disk bytes (docs/style.md 4).
//
// Every read checks `n > remaining()` (which cannot overflow) before touching
// memory, copies with memcpy (never reinterpret_cast to structs), leaves the
// position unchanged on failure, and reports the absolute file offset and the
// field being read:  "offset 40: dimension.name: need 8 bytes, 3 left".
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

#include "core/util/bytes.h"
#include "core/util/result.h"

namespace tiledbfs::core {

static_assert(std::endian::native == std::endian::little,
              "tiledbfs reads little-endian data by memcpy; big-endian hosts need byte swaps");

class ByteReader {
 public:
  // `base_offset` is the file offset of data[0], used only in messages.
  explicit ByteReader(Bytes data, uint64_t base_offset = 0) : data_(data), base_(base_offset) {}

  template <class T>
  Result<T> Read(std::string_view field) {
    static_assert(std::is_trivially_copyable_v<T> && std::is_arithmetic_v<T>);
    if (sizeof(T) > remaining()) return Short(sizeof(T), field);
    T v;
    std::memcpy(&v, data_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // A bool stored as one byte; any value other than 0 or 1 is corrupt.
  Result<bool> ReadBool(std::string_view field);

  // A view of the next n bytes (valid as long as the underlying buffer).
  Result<Bytes> ReadBytes(uint64_t n, std::string_view field);
  Result<std::string> ReadString(uint64_t n, std::string_view field);
  Status Skip(uint64_t n, std::string_view field);

  uint64_t remaining() const { return data_.size() - pos_; }
  bool empty() const { return remaining() == 0; }
  uint64_t position() const { return pos_; }
  // The absolute file offset of the next byte.
  uint64_t offset() const { return base_ + pos_; }
  Bytes rest() const { return data_.subspan(pos_); }

  // A corrupt error at the current offset: "offset N: field: what".
  Error Corrupt(std::string_view field, std::string_view what) const;

 private:
  Error Short(uint64_t n, std::string_view field) const;

  Bytes data_;
  uint64_t base_;
  uint64_t pos_ = 0;
};

// Overflow-checked arithmetic for sizes read from disk.
inline bool MulOverflow(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_mul_overflow(a, b, out);
}
inline bool AddOverflow(uint64_t a, uint64_t b, uint64_t* out) {
  return __builtin_add_overflow(a, b, out);
}

}  // namespace tiledbfs::core
