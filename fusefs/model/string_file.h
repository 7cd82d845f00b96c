// An open file whose bytes were rendered in full (a shared, immutable string).
#pragma once

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>

#include "fusefs/model/tree.h"

namespace tiledbfs::fusefs {

class StringFile final : public OpenFile {
 public:
  explicit StringFile(std::shared_ptr<const std::string> s) : s_(std::move(s)) {}
  uint64_t size() const override { return s_->size(); }
  Result<size_t> Read(uint64_t offset, std::span<uint8_t> out) override {
    if (offset >= s_->size()) return size_t{0};
    size_t n = std::min<uint64_t>(out.size(), s_->size() - offset);
    std::memcpy(out.data(), s_->data() + offset, n);
    return n;
  }

 private:
  std::shared_ptr<const std::string> s_;
};

}  // namespace tiledbfs::fusefs
