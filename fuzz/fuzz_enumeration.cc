// Input: the unfiltered payload of an __schema/__enumerations file.
#include "core/schema/array_schema.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto e = core::ParseEnumeration(core::Bytes(data, size));
  return 0;
}
