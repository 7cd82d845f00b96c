// Input: the unfiltered payload of an __schema file. A parsed schema is also
// rendered, as the mount does for its schema files.
#include "core/schema/array_schema.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto schema = core::ParseArraySchema(core::Bytes(data, size), 0, fuzz::FuzzLimits());
  if (schema.ok()) {
    (void)core::SchemaToJson(*schema, nullptr);
    (void)core::SchemaToText(*schema, nullptr);
  }
  return 0;
}
