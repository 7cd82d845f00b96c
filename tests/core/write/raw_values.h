// Values as the bytes of a field the writer takes (hosts are little-endian,
// docs/style.md).
#pragma once

#include <cstring>
#include <vector>

#include "core/util/bytes.h"

namespace tiledbfs::core {

template <class T>
ByteVec Raw(const std::vector<T>& v) {
  return CopyBytes({reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(T)});
}

template <class T>
ByteVec One(T v) {
  return Raw(std::vector<T>{v});
}

// A field's bytes as values (the inverse of Raw).
template <class T>
std::vector<T> As(const ByteVec& b) {
  std::vector<T> v(b.size() / sizeof(T));
  if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
  return v;
}

}  // namespace tiledbfs::core
