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
  // Each Put returns the writer, so that a structure reads as one chain.
  template <class T>
  ByteWriter& Put(T v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    AppendBytes(out_, p, sizeof(T));  // hosts are little-endian (docs/style.md)
    return *this;
  }
  ByteWriter& PutBytes(Bytes b) {
    AppendBytes(out_, b);
    return *this;
  }
  ByteWriter& PutString(std::string_view s) { return PutBytes(AsBytes(s)); }
  // uint32 length then the bytes.
  ByteWriter& PutName32(std::string_view s) {
    return Put<uint32_t>(static_cast<uint32_t>(s.size())).PutString(s);
  }
  // uint64 length then the bytes.
  ByteWriter& PutName64(std::string_view s) { return Put<uint64_t>(s.size()).PutString(s); }
  uint64_t size() const { return out_.size(); }
  ByteVec& bytes() { return out_; }
  const ByteVec& bytes() const { return out_; }
  ByteVec Take() { return std::move(out_); }

 private:
  ByteVec out_;
};

}  // namespace tiledbfs::core
