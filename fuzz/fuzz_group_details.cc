// Input: the unfiltered payload of a __group details file.
#include "core/metadata/group.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)core::ParseGroupDetails(core::Bytes(data, size), 0);
  return 0;
}
