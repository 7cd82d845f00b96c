// Byte spans and owned byte buffers used across the core.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace tiledbfs::core {

using Bytes = std::span<const uint8_t>;

// An allocator whose construct() without a value leaves the element as it is
// (default-initialized): ByteVec(n) and resize(n) do not zero new bytes. In
// builds with assertions (Debug, as the sanitizer build of the tests) new
// bytes are set to kUnsetByte instead, so that a test reading a byte nobody
// wrote sees the same wrong value every run.
inline constexpr uint8_t kUnsetByte = 0xA5;
template <class T>
struct NoInitAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <class U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
#ifndef NDEBUG
    if constexpr (std::is_same_v<U, uint8_t>) *p = kUnsetByte;
#endif
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

// Owned bytes. ByteVec(n) and resize(n) leave the new bytes unset, for the
// decode path that overwrites them at once (zeroing them would add a pass
// over every decoded buffer); ByteVec(n, 0) and resize(n, 0) zero them.
using ByteVec = std::vector<uint8_t, NoInitAllocator<uint8_t>>;

// Appends n bytes at p to v. ByteVec's insert() and its growth copy byte by
// byte (the allocator's construct() is called per element, which the
// library does not turn into memcpy), too slow for text values gathered
// run by run.
inline void AppendBytes(ByteVec& v, const uint8_t* p, size_t n) {
  if (n == 0) return;
  const size_t at = v.size();
  if (v.capacity() - at < n) {
    ByteVec grown;
    grown.reserve(std::max(at + n, 2 * v.capacity()));
    grown.resize(at + n);
    if (at > 0) std::memcpy(grown.data(), v.data(), at);
    v.swap(grown);
  } else {
    v.resize(at + n);
  }
  std::memcpy(v.data() + at, p, n);
}
inline void AppendBytes(ByteVec& v, std::span<const uint8_t> b) {
  AppendBytes(v, b.data(), b.size());
}
// A copy of b (ByteVec(begin, end) copies byte by byte too).
inline ByteVec CopyBytes(std::span<const uint8_t> b) {
  ByteVec v(b.size());
  if (!b.empty()) std::memcpy(v.data(), b.data(), b.size());
  return v;
}

inline Bytes AsBytes(std::string_view s) {
  return Bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size());
}
inline std::string_view AsStringView(Bytes b) {
  return std::string_view(reinterpret_cast<const char*>(b.data()), b.size());
}
inline std::string ToString(Bytes b) { return std::string(AsStringView(b)); }

}  // namespace tiledbfs::core
