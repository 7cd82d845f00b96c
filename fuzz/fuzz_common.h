// Shared helpers of the fuzz targets (fuzz/README.md). Each target defines
// LLVMFuzzerTestOneInput; under GCC it links replay_main.cc, under clang
// libFuzzer's own main.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/schema/array_schema.h"
#include "core/storage/storage.h"
#include "core/util/bytes.h"
#include "core/util/limits.h"

namespace tiledbfs::fuzz {

// Limits small enough that a legitimate (but large) declared size cannot
// exhaust the fuzzer's memory; anything beyond them must be refused cleanly.
inline const core::Limits& FuzzLimits() {
  static const core::Limits kLimits = [] {
    core::Limits l;
    l.max_tile_bytes = uint64_t{64} << 20;
    l.max_metadata_bytes = uint64_t{64} << 20;
    l.max_view_cells = uint64_t{1} << 22;
    l.max_files = 4096;
    l.max_condition_depth = 64;
    l.max_default_fill_bytes = 4096;
    return l;
  }();
  return kLimits;
}

// The corpus folder (tests/data/corpus/arrays), fixed at build time.
inline std::string CorpusArrays() { return std::string(TILEDBFS_FUZZ_CORPUS) + "/arrays"; }

// The (first) schema of the corpus array `array`, loaded once; aborts if the
// corpus is missing (a setup error, not a finding).
std::shared_ptr<const core::ArraySchema> CorpusSchema(const std::string& array);

// Every regular file under the corpus array `array`, as storage-relative
// paths with their bytes, sorted by path.
const std::vector<std::pair<std::string, core::ByteVec>>& CorpusFiles(const std::string& array);

}  // namespace tiledbfs::fuzz
