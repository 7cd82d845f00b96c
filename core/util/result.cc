#include "core/util/result.h"

namespace tiledbfs::core {

std::string_view ErrorCodeName(ErrorCode code) {
  switch (code) {
    case ErrorCode::kCorrupt:
      return "corrupt";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kNotFound:
      return "not found";
    case ErrorCode::kIo:
      return "I/O error";
    case ErrorCode::kInvalidArgument:
      return "invalid argument";
    case ErrorCode::kOutOfMemory:
      return "out of memory";
    case ErrorCode::kKey:
      return "encryption key";
    case ErrorCode::kAccessDenied:
      return "access denied";
    case ErrorCode::kCancelled:
      return "cancelled";
  }
  return "error";
}

std::string Error::ToString() const { return std::string(ErrorCodeName(code_)) + ": " + message_; }

}  // namespace tiledbfs::core
