// Input: a file or folder name (__t1_t2_uuid_v[.ext]).
#include <string_view>

#include "core/directory/array_directory.h"
#include "core/directory/timestamped_name.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view name(reinterpret_cast<const char*>(data), size);
  (void)core::ParseTimestampedName(name);
  (void)core::ReduceToStoragePath(name);
  return 0;
}
