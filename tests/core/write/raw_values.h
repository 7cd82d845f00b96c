// Values as the bytes of a field the writer takes (hosts are little-endian,
// STYLE.md).
#pragma once

#include <cstring>
#include <vector>

#include "core/util/bytes.h"

namespace tiledbfs::core {

template <class T>
ByteVec Raw(const std::vector<T>& v) {
  ByteVec out(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(out.data(), v.data(), out.size());
  return out;
}

template <class T>
ByteVec One(T v) {
  return Raw(std::vector<T>{v});
}

}  // namespace tiledbfs::core
