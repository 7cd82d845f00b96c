#include "fusefs/model/key_file.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

namespace tiledbfs::fusefs {

using core::Error;

core::Result<core::EncryptionKey> ParseKey(std::string_view bytes) {
  core::EncryptionKey key;
  if (bytes.size() == 32) {
    std::memcpy(key.bytes.data(), bytes.data(), 32);
    return key;
  }
  std::string_view s = bytes;
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  if (s.size() != 64) {
    return Error::Key(fmt::format("key file holds {} bytes: expected 32 raw bytes or 64 hex digits",
                                  bytes.size()));
  }
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < 32; ++i) {
    int hi = nibble(s[2 * i]), lo = nibble(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return Error::Key("key file: not 64 hexadecimal digits");
    key.bytes[i] = static_cast<uint8_t>(hi * 16 + lo);
  }
  return key;
}

core::Result<core::EncryptionKey> ReadKeyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error::Key(fmt::format("{}: cannot read key file: {}", path, std::strerror(errno)));
  std::string bytes;
  char buf[256];
  while (in.read(buf, sizeof(buf)) || in.gcount() > 0) {
    bytes.append(buf, static_cast<size_t>(in.gcount()));
    if (bytes.size() > 1024) return Error::Key(fmt::format("{}: key file too large", path));
  }
  auto key = ParseKey(bytes);
  if (!key.ok()) return key.error().WithContext(path);
  return key;
}

}  // namespace tiledbfs::fusefs
