// Input: byte 0 picks the parser (even: delete condition, odd: update
// commit), the rest is the unfiltered payload of a .del / .upd file. A parsed
// condition is rendered and negated too.
#include "core/metadata/query_condition.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  core::Bytes in(data + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto c = core::ParseCondition(in, 0, fuzz::FuzzLimits());
    if (c.ok()) {
      (void)core::ConditionToText(*c);
      (void)core::NegateCondition(*c);
    }
  } else {
    (void)core::ParseUpdateCommit(in, 0, fuzz::FuzzLimits());
  }
  return 0;
}
