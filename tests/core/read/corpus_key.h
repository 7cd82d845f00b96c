// The key of an encrypted array of the fixture corpora, for the read tests.
#pragma once

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "core/filters/filter_pipeline.h"

namespace tiledbfs::core {

// <array>.key beside the array folder (64 hex digits), or nullopt.
inline std::optional<EncryptionKey> CorpusKeyFor(const std::filesystem::path& array_dir) {
  std::filesystem::path key = array_dir.parent_path() / (array_dir.filename().string() + ".key");
  if (!std::filesystem::exists(key)) return std::nullopt;
  std::ifstream in(key);
  std::string hex;
  in >> hex;
  EncryptionKey k;
  for (size_t i = 0; i < 32 && 2 * i + 1 < hex.size(); ++i) {
    k.bytes[i] = std::stoi(hex.substr(2 * i, 2), nullptr, 16);
  }
  return k;
}

}  // namespace tiledbfs::core
