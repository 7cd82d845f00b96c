// Input: one generic tile (header, pipeline, chunks) as found in schema,
// commit, metadata and fragment metadata files.
#include "core/tile/generic_tile.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)core::DecodeGenericTile(core::Bytes(data, size), "fuzz", 0, nullptr, fuzz::FuzzLimits());
  return 0;
}
