// Values as the bytes of a field the writer takes (hosts are little-endian,
// docs/style.md).
#pragma once

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

}  // namespace tiledbfs::core
