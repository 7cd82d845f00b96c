// Where a read of an OpenFile puts its bytes: copied into the reader's
// buffer (Read), or handed out as pieces of the memory that holds them
// (ReadPieces, core/util/pieces.h), so that FUSE's writev sends them as
// they are.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "core/util/pieces.h"

namespace tiledbfs::fusefs {

struct ReadTarget {
  uint8_t* buf = nullptr;          // buf[0] is file byte `offset`
  core::Pieces* pieces = nullptr;  // or appended here, in file order
  uint64_t offset = 0;
  uint64_t end = 0;

  // The part of file bytes [from, from + src.size()) that falls in the
  // read; `owner` (for pieces) holds src, null where src outlives the reply.
  // Returns the file byte past that part (0 where none falls in the read).
  uint64_t Put(std::string_view src, uint64_t from,
               const std::shared_ptr<const void>& owner) const {
    const uint64_t a = std::max(from, offset), b = std::min(from + src.size(), end);
    if (a >= b) return 0;
    const char* p = src.data() + (a - from);
    if (pieces == nullptr) {
      std::memcpy(buf + (a - offset), p, b - a);
    } else {
      pieces->Add(reinterpret_cast<const uint8_t*>(p), b - a);
      if (owner && (pieces->keep.empty() || pieces->keep.back() != owner)) {
        pieces->keep.push_back(owner);
      }
    }
    return b;
  }
  // The same for bytes that live only for this call: pieces get a copy.
  uint64_t PutCopy(std::string_view src, uint64_t from) const {
    if (pieces == nullptr) return Put(src, from, nullptr);
    const uint64_t a = std::max(from, offset), b = std::min(from + src.size(), end);
    if (a >= b) return 0;
    std::memcpy(pieces->AddOwned(b - a), src.data() + (a - from), b - a);
    return b;
  }
};

}  // namespace tiledbfs::fusefs
