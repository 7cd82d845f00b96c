// Helpers for the tiledbfs_metadata tests: building generic tiles and
// payloads by hand, reading corpus files.
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

namespace tiledbfs::core::testing {

inline std::string CorpusDir() { return std::string(TILEDBFS_TEST_DATA) + "/corpus"; }
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

// An unencrypted generic tile (format version 22) with an empty filter
// pipeline holding `payload` in one chunk.
inline ByteVec MakeGenericTile(Bytes payload) {
  ByteWriter tile;
  tile.Put<uint64_t>(1)  // one chunk
      .Put<uint32_t>(static_cast<uint32_t>(payload.size()))
      .Put<uint32_t>(static_cast<uint32_t>(payload.size()))
      .Put<uint32_t>(0)
      .PutBytes(payload);
  ByteWriter out;
  out.Put<uint32_t>(22)
      .Put<uint64_t>(tile.bytes().size())
      .Put<uint64_t>(payload.size())
      .Put<uint8_t>(4)   // CHAR
      .Put<uint64_t>(1)  // cell size
      .Put<uint8_t>(0)   // no encryption
      .Put<uint32_t>(8)  // pipeline size
      .Put<uint32_t>(65536)
      .Put<uint32_t>(0)  // no filters
      .PutBytes(tile.bytes());
  return out.Take();
}

}  // namespace tiledbfs::core::testing
