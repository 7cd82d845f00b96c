#include "core/util/byte_reader.h"

#include <fmt/format.h>

namespace tiledbfs::core {

Result<bool> ByteReader::ReadBool(std::string_view field) {
  if (remaining() < 1) return Short(1, field);
  uint8_t b = data_[pos_];
  if (b > 1) return Corrupt(field, fmt::format("boolean byte is {}", b));
  ++pos_;
  return b == 1;
}

Result<Bytes> ByteReader::ReadBytes(uint64_t n, std::string_view field) {
  if (n > remaining()) return Short(n, field);
  Bytes out = data_.subspan(pos_, n);
  pos_ += n;
  return out;
}

Result<std::string> ByteReader::ReadString(uint64_t n, std::string_view field) {
  ASSIGN_OR_RETURN(Bytes b, ReadBytes(n, field));
  return ToString(b);
}

Status ByteReader::Skip(uint64_t n, std::string_view field) {
  if (n > remaining()) return Short(n, field);
  pos_ += n;
  return Ok();
}

Error ByteReader::Corrupt(std::string_view field, std::string_view what) const {
  return Error::Corrupt(fmt::format("offset {}: {}: {}", offset(), field, what));
}

Error ByteReader::Short(uint64_t n, std::string_view field) const {
  return Error::Corrupt(fmt::format("offset {}: {}: need {} bytes, {} left (truncated)", offset(),
                                    field, n, remaining()));
}

}  // namespace tiledbfs::core
