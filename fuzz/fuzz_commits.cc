// Input: byte 0 picks the parser (even: consolidated commits .con, odd:
// vacuum/ignore URI list), the rest is the file.
#include "core/directory/array_directory.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  core::Bytes in(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    (void)core::ParseConsolidatedCommits(in);
  } else {
    (void)core::ParseUriList(in);
  }
  return 0;
}
