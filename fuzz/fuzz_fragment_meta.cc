// Input: byte 0 picks a corpus schema, byte 1 a parser, byte 2 a format
// version (and for tile min/max the var flag and cell size); the rest is the
// structure: a footer, or the payload of one fragment metadata section, or a
// consolidated fragment metadata payload, or a legacy (1-2) metadata payload.
#include "core/fragment/consolidated_fragment_meta.h"
#include "core/fragment/fragment_footer.h"
#include "core/fragment/fragment_sections.h"
#include "core/fragment/legacy_fragment_metadata.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  static const char* const kArrays[] = {"dense_1d", "sparse_2d", "sparse_strdim", "types"};
  auto schema = fuzz::CorpusSchema(kArrays[data[0] % std::size(kArrays)]);
  uint32_t version = data[2] % 25;  // 0..24: also below 3 and above 23
  core::Bytes in(data + 3, size - 3);
  switch (data[1] % 9) {
    case 0:
      (void)core::ParseFragmentFooter(in, 0, *schema, version);
      break;
    case 1:
      (void)core::PeekFragmentFooter(in, 0);
      break;
    case 2: {
      uint64_t consumed = 0;
      (void)core::ParseFragmentFooterFields(in, 0, *schema, version, &consumed);
      break;
    }
    case 3:
      (void)core::ParseRTreeLeaves(in, 0, *schema, version);
      break;
    case 4:
      (void)core::ParseUint64List(in, 0, "fuzz");
      break;
    case 5:
      (void)core::ParseTileMinMax(in, 0, data[2] & 1, data[2] >> 1, "fuzz");
      break;
    case 6:
      (void)core::ParseFragmentStats(in, 0, data[2] % 8);
      break;
    case 7:
      (void)core::ParseConsolidatedFragmentMeta(in, 0, fuzz::FuzzLimits());
      break;
    case 8:
      (void)core::ParseLegacyFragmentMetadata(in, 0, *schema, data[2] & 1);
      break;
  }
  return 0;
}
