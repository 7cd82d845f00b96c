// A field of a view, materialised: what attributes/<a>.bin, .offsets and
// .validity hold (docs/namespace.md), in the view's cell order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/format/datatype.h"
#include "core/util/bytes.h"

namespace tiledbfs::core {

struct Column {
  std::string name;
  Datatype type = Datatype::kInt32;
  uint32_t cell_val_num = 1;  // kVarNum for var-sized
  bool nullable = false;
  uint64_t cell_count = 0;
  ByteVec data;                   // fixed: cell_count * cell_size bytes; var: values
  std::vector<uint64_t> offsets;  // var only: cell_count + 1 byte offsets into data
  ByteVec validity;               // nullable only: cell_count bytes, 1 valid, 0 null

  bool var() const { return cell_val_num == kVarNum; }
  uint64_t cell_size() const { return var() ? 0 : DatatypeSize(type) * cell_val_num; }
  // The bytes of cell i.
  Bytes cell(uint64_t i) const {
    if (var()) return Bytes(data.data() + offsets[i], offsets[i + 1] - offsets[i]);
    return Bytes(data.data() + i * cell_size(), cell_size());
  }
  bool valid(uint64_t i) const { return !nullable || validity[i] != 0; }
};

}  // namespace tiledbfs::core
