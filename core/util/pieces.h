// Bytes handed out as pieces of memory that others own (decoded tiles),
// instead of copied into one buffer: a reader that can send pieces as they
// are (the FUSE adapter's writev) saves a pass over every byte.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/util/bytes.h"

namespace tiledbfs::core {

struct Pieces {
  std::vector<Bytes> spans;  // in order
  // What the spans point into, held for as long as the Pieces.
  std::vector<std::shared_ptr<const void>> keep;
  uint64_t bytes = 0;  // summed over the spans

  // Appends n bytes at p (the caller keeps what holds them), joined to the
  // last span when they follow it in memory.
  void Add(const uint8_t* p, uint64_t n) {
    if (n == 0) return;
    bytes += n;
    if (!spans.empty() && spans.back().data() + spans.back().size() == p) {
      spans.back() = Bytes(spans.back().data(), spans.back().size() + n);
      return;
    }
    spans.emplace_back(p, n);
  }
  // Appends n bytes of a new buffer, kept here, for the caller to fill.
  uint8_t* AddOwned(uint64_t n) {
    auto buf = std::make_shared<ByteVec>(n);
    uint8_t* p = buf->data();
    keep.push_back(std::move(buf));
    Add(p, n);
    return p;
  }
  void Clear() {
    spans.clear();
    keep.clear();
    bytes = 0;
  }
};

}  // namespace tiledbfs::core
