// Reads of an open tiledbfs file in tests: what Read returns, as a string.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <span>
#include <string>

#include "fusefs/model/tree.h"

namespace tiledbfs::fusefs {

// `size` bytes from `offset`: fewer at the end of the file, none on an error
// (which fails the test).
inline std::string Read(OpenFile& f, uint64_t offset, size_t size) {
  std::string buf(size, '\xAA');
  auto n = f.Read(offset, std::span<uint8_t>(reinterpret_cast<uint8_t*>(buf.data()), size));
  EXPECT_TRUE(n.ok()) << n.error().ToString();
  buf.resize(n.ok() ? *n : 0);
  return buf;
}

}  // namespace tiledbfs::fusefs
