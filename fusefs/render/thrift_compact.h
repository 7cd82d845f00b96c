// Thrift's compact protocol, the writing half: what Parquet's page headers
// and footer are made of (apache/thrift doc/specs/thrift-compact-protocol.md).
// Hand-written because Parquet needs a few dozen bytes of it, and because
// data.parquet's size must be known before its footer's values are: each
// encoding here is a pure function of what is written, so the same calls
// with placeholder values of the same widths give the exact size.
// (Debian's libthrift-dev 0.17 would add a generated parquet_types.cpp and
// boost headers to every build for this.)
//
// A struct is written as its fields in ascending id order, each a header
// byte (the id's delta from the previous field's, and the type) then the
// value, and a stop byte. Integers are zigzag varints; binary is a varint
// length then the bytes; a list is a header (size and element type) then
// its elements; booleans in a struct live in the field header's type.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tiledbfs::fusefs {

// Element types of lists (the compact protocol's type ids).
enum class ThriftType : uint8_t { kI32 = 5, kI64 = 6, kBinary = 8, kStruct = 12 };

class ThriftWriter {
 public:
  explicit ThriftWriter(std::string& out) : out_(out) {}

  // Fields of the struct being written (the outermost one needs no Begin).
  ThriftWriter& I32(int16_t id, int32_t v);
  ThriftWriter& I64(int16_t id, int64_t v);
  ThriftWriter& I8(int16_t id, int8_t v);
  ThriftWriter& Bool(int16_t id, bool v);
  ThriftWriter& Binary(int16_t id, std::string_view v);
  // A struct field: its fields follow, then EndStruct.
  ThriftWriter& BeginStruct(int16_t id);
  ThriftWriter& EndStruct();
  // A list field of n elements, written next: list elements of kI32 with
  // ListI32, of kBinary with ListBinary, of kStruct each between
  // BeginListStruct and EndStruct.
  ThriftWriter& BeginList(int16_t id, ThriftType element, uint64_t n);
  ThriftWriter& ListI32(int32_t v);
  ThriftWriter& ListBinary(std::string_view v);
  ThriftWriter& BeginListStruct();
  // The stop byte of the outermost struct.
  void End();

  // ULEB128, as the compact protocol and Parquet's RLE headers write it.
  static void Varint(std::string& out, uint64_t v);
  static uint64_t VarintSize(uint64_t v);

 private:
  void FieldHeader(int16_t id, uint8_t type);
  std::string& out_;
  std::vector<int16_t> last_{0};  // per open struct, the last field id written
};

}  // namespace tiledbfs::fusefs
