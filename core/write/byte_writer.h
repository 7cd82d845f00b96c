// The writing mirror of ByteReader: appends little-endian values to a buffer.
// Every on-disk structure the writer produces goes through it.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>
#include <type_traits>

#include "core/util/bytes.h"

namespace tiledbfs::core {

class ByteWriter {
 public:
  template <class T>
  void Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    AppendBytes(out_, p, sizeof(T));  // hosts are little-endian (docs/style.md)
  }
  void PutBytes(Bytes b) { AppendBytes(out_, b); }
  void PutString(std::string_view s) { PutBytes(AsBytes(s)); }
  // uint32 length then the bytes.
  void PutName32(std::string_view s) {
    Put<uint32_t>(static_cast<uint32_t>(s.size()));
    PutString(s);
  }
  uint64_t size() const { return out_.size(); }
  ByteVec& bytes() { return out_; }
  ByteVec Take() { return std::move(out_); }

 private:
  ByteVec out_;
};

}  // namespace tiledbfs::core
