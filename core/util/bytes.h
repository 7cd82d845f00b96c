// Byte spans and owned byte buffers used across the core.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tiledbfs::core {

using Bytes = std::span<const uint8_t>;
using ByteVec = std::vector<uint8_t>;

inline Bytes AsBytes(std::string_view s) {
  return Bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
inline std::string_view AsStringView(Bytes b) {
  return std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
}
inline std::string ToString(Bytes b) { return std::string(AsStringView(b)); }

}  // namespace tiledbfs::core
