// DenseDimensionColumn: a dense view's coordinates, computed from its box,
// against the coordinate of each cell worked out on its own.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/read/coords.h"
#include "core/read/dense_index.h"

namespace tiledbfs::core {
namespace dense_dimension_test {

ByteVec Bytes128(Datatype t, __int128 v) {
  ByteVec b(DatatypeSize(t));
  FromInt128(t, v, b.data());
  return b;
}

TEST(DenseDimensionColumnTest, EveryRangeOfCellsGivesEachCellsCoordinate) {
  // Box 3 x 5 x 7, dimensions of 8, 1 and 2 bytes, lows below zero.
  const std::vector<Datatype> types = {Datatype::kInt64, Datatype::kInt8, Datatype::kUInt16};
  const std::vector<__int128> lows = {-4, -2, 65530};
  ArraySchema schema;
  CellIndex index;
  index.shape = {3, 5, 7};
  for (size_t d = 0; d < types.size(); ++d) {
    Dimension dim;
    dim.name = "d" + std::to_string(d);
    dim.type = types[d];
    schema.dimensions.push_back(dim);
    index.box.push_back({Bytes128(types[d], lows[d]), {}});
  }
  const uint64_t cells = 3 * 5 * 7;
  for (size_t d = 0; d < types.size(); ++d) {
    const uint64_t size = DatatypeSize(types[d]);
    uint64_t inner = 1;
    for (size_t k = d + 1; k < 3; ++k) inner *= index.shape[k];
    for (uint64_t first = 0; first < cells; first += 3) {
      for (uint64_t count : {uint64_t{0}, uint64_t{1}, uint64_t{6}, cells - first}) {
        if (first + count > cells) continue;
        Column c = DenseDimensionColumn(schema, index, d, first, count);
        ASSERT_EQ(c.data.size(), count * size);
        for (uint64_t i = 0; i < count; ++i) {
          const uint64_t coord = ((first + i) / inner) % index.shape[d];
          const ByteVec want = Bytes128(types[d], lows[d] + coord);
          ASSERT_EQ(std::memcmp(c.data.data() + i * size, want.data(), size), 0)
              << "dimension " << d << ", cell " << first + i;
        }
      }
    }
  }
}

}  // namespace dense_dimension_test
}  // namespace tiledbfs::core
