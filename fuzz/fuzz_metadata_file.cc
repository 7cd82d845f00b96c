// Input: the unfiltered payload of an __meta file.
#include "core/metadata/metadata.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)core::ParseMetadataFile(core::Bytes(data, size), 0);
  return 0;
}
