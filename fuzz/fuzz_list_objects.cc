// Input: an S3 response body (a ListObjectsV2 page, or an error).
#include "core/storage/s3/list_xml.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)core::s3::ParseListObjectsV2(core::Bytes(data, size));
  (void)core::s3::ParseS3Error(core::Bytes(data, size));
  return 0;
}
