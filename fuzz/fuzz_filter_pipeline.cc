// Input: byte 0 version selector, byte 1 datatype byte, byte 2 cell size,
// then a serialized filter pipeline immediately followed by one serialized
// tile (num chunks + chunks). Exercises every filter's reverse path.
#include "core/filters/filter_pipeline.h"
#include "core/format/datatype.h"
#include "core/util/byte_reader.h"
#include "fuzz/fuzz_common.h"

using namespace tiledbfs;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  static constexpr uint32_t kVersions[] = {22, 1, 4, 7, 10, 12, 13, 16, 19, 20, 21, 23};
  uint32_t version = kVersions[data[0] % std::size(kVersions)];
  core::TileContext ctx(core::DefaultLimits());
  auto type = core::ParseDatatype(data[1]);
  ctx.type = type.ok() ? *type : core::Datatype::kUInt8;
  ctx.cell_size = data[2] == 0 ? 1 : data[2];
  ctx.format_version = version;
  ctx.file = "fuzz";
  ctx.limits = &fuzz::FuzzLimits();
  core::Bytes rest(data + 3, size - 3);
  core::ByteReader r(rest);
  auto pipeline = core::ParseFilterPipeline(r, version);
  if (!pipeline.ok()) return 0;
  core::Bytes tile = rest.subspan(r.position());
  (void)core::FilteredTileSize(tile);
  (void)core::UnfilterTile(*pipeline, tile, ctx);
  return 0;
}
