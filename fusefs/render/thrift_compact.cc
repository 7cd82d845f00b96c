#include "fusefs/render/thrift_compact.h"

namespace tiledbfs::fusefs {

namespace {

// Field and list header types (compact protocol).
constexpr uint8_t kTrue = 1, kFalse = 2, kByte = 3, kI32 = 5, kI64 = 6, kBinary = 8, kList = 9,
                  kStruct = 12;

uint64_t ZigZag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

}  // namespace

void ThriftWriter::Varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}

uint64_t ThriftWriter::VarintSize(uint64_t v) {
  uint64_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

void ThriftWriter::FieldHeader(int16_t id, uint8_t type) {
  const int delta = id - last_.back();
  if (delta > 0 && delta <= 15) {
    out_.push_back(static_cast<char>(delta << 4 | type));
  } else {
    out_.push_back(static_cast<char>(type));
    Varint(out_, ZigZag(id));
  }
  last_.back() = id;
}

ThriftWriter& ThriftWriter::I32(int16_t id, int32_t v) {
  FieldHeader(id, kI32);
  Varint(out_, ZigZag(v));
  return *this;
}

ThriftWriter& ThriftWriter::I64(int16_t id, int64_t v) {
  FieldHeader(id, kI64);
  Varint(out_, ZigZag(v));
  return *this;
}

ThriftWriter& ThriftWriter::I8(int16_t id, int8_t v) {
  FieldHeader(id, kByte);
  out_.push_back(static_cast<char>(v));
  return *this;
}

ThriftWriter& ThriftWriter::Bool(int16_t id, bool v) {
  FieldHeader(id, v ? kTrue : kFalse);
  return *this;
}

ThriftWriter& ThriftWriter::Binary(int16_t id, std::string_view v) {
  FieldHeader(id, kBinary);
  Varint(out_, v.size());
  out_.append(v);
  return *this;
}

ThriftWriter& ThriftWriter::BeginStruct(int16_t id) {
  FieldHeader(id, kStruct);
  last_.push_back(0);
  return *this;
}

ThriftWriter& ThriftWriter::EndStruct() {
  out_.push_back(0);
  last_.pop_back();
  return *this;
}

ThriftWriter& ThriftWriter::BeginList(int16_t id, ThriftType element, uint64_t n) {
  FieldHeader(id, kList);
  const uint8_t type = static_cast<uint8_t>(element);
  if (n < 15) {
    out_.push_back(static_cast<char>(n << 4 | type));
  } else {
    out_.push_back(static_cast<char>(0xF0 | type));
    Varint(out_, n);
  }
  return *this;
}

ThriftWriter& ThriftWriter::ListI32(int32_t v) {
  Varint(out_, ZigZag(v));
  return *this;
}

ThriftWriter& ThriftWriter::ListBinary(std::string_view v) {
  Varint(out_, v.size());
  out_.append(v);
  return *this;
}

ThriftWriter& ThriftWriter::BeginListStruct() {
  last_.push_back(0);
  return *this;
}

void ThriftWriter::End() { out_.push_back(0); }

static_assert(kI32 == static_cast<uint8_t>(ThriftType::kI32) &&
              kI64 == static_cast<uint8_t>(ThriftType::kI64) &&
              kBinary == static_cast<uint8_t>(ThriftType::kBinary) &&
              kStruct == static_cast<uint8_t>(ThriftType::kStruct));

}  // namespace tiledbfs::fusefs
