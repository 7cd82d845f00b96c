// Helpers the core test folders share: where the fixture corpus is, and
// unfiltered generic tiles made by core/write's encoder.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "core/write/filter_writer.h"

namespace tiledbfs::core::testing {

inline std::string CorpusDir() { return std::string(TILEDBFS_TEST_DATA) + "/corpus"; }

// A generic tile of format `version` holding `payload` behind an empty
// filter pipeline (no encryption).
inline ByteVec MakeGenericTile(Bytes payload, uint32_t version = 22) {
  Result<ByteVec> tile = EncodeGenericTile(payload, version, FilterPipeline());
  EXPECT_TRUE(tile.ok()) << tile.error().ToString();
  return tile.ok() ? std::move(tile).value() : ByteVec();
}

}  // namespace tiledbfs::core::testing
