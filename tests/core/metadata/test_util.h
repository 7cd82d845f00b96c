// Helpers for the tiledbfs_metadata tests: building payloads by hand,
// reading corpus files (generic tiles: tests/core/test_util.h).
#pragma once

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "core/filters/filter_pipeline.h"
#include "core/util/byte_writer.h"
#include "core/util/bytes.h"
#include "tests/core/test_util.h"

namespace tiledbfs::core::testing {

inline std::string CorpusArray(const std::string& name) { return CorpusDir() + "/arrays/" + name; }
inline std::string CorpusExpected(const std::string& name) {
  return CorpusDir() + "/expected/" + name;
}

inline std::string ReadText(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

inline nlohmann::json ReadJson(const std::string& path) {
  return nlohmann::json::parse(ReadText(path));
}

inline std::string ToHex(Bytes b) {
  static const char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t c : b) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

inline EncryptionKey KeyFromHexFile(const std::string& path) {
  std::string hex = ReadText(path);
  EncryptionKey key;
  for (size_t i = 0; i < key.bytes.size(); ++i) {
    key.bytes[i] = static_cast<uint8_t>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
  }
  return key;
}

// Appends little-endian values to a byte vector.
using core::ByteWriter;

}  // namespace tiledbfs::core::testing
