// Result<T>: a value or an Error, shaped like std::expected (C++23), with a
// small code enum and a message carrying context (file relative to the array,
// offset, structure and field, format version). Errors are returned, never
// thrown across modules (docs/style.md 5).
#pragma once

#include <cassert>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace tiledbfs::core {

enum class ErrorCode {
  kCorrupt,          // the bytes contradict the format
  kUnsupported,      // valid but not something we can read (filter, version)
  kNotFound,         // no such array, file, field, key or view
  kIo,               // the storage failed
  kInvalidArgument,  // the caller asked for something malformed
  kOutOfMemory,      // a limit (core/util/limits.h) would be exceeded
  kKey,              // missing or wrong encryption key
  kAccessDenied,     // the object store refused our credentials (or found none)
  kCancelled,        // the process is stopping (core/util/stop.h): no answer about the array
};

std::string_view ErrorCodeName(ErrorCode code);

class Error {
 public:
  Error(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Error Corrupt(std::string m) { return {ErrorCode::kCorrupt, std::move(m)}; }
  static Error Unsupported(std::string m) { return {ErrorCode::kUnsupported, std::move(m)}; }
  static Error NotFound(std::string m) { return {ErrorCode::kNotFound, std::move(m)}; }
  static Error Io(std::string m) { return {ErrorCode::kIo, std::move(m)}; }
  static Error InvalidArgument(std::string m) {
    return {ErrorCode::kInvalidArgument, std::move(m)};
  }
  static Error OutOfMemory(std::string m) { return {ErrorCode::kOutOfMemory, std::move(m)}; }
  static Error Key(std::string m) { return {ErrorCode::kKey, std::move(m)}; }
  static Error AccessDenied(std::string m) { return {ErrorCode::kAccessDenied, std::move(m)}; }
  static Error Cancelled(std::string m) { return {ErrorCode::kCancelled, std::move(m)}; }

  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "context: message", e.g. WithContext("__schema/__1_1_abc") so that the
  // outermost loader names the file.
  Error WithContext(std::string_view context) const {
    return Error(code_, std::string(context) + ": " + message_);
  }

  // "<code name>: <message>", for logs and tool output.
  std::string ToString() const;

 private:
  ErrorCode code_;
  std::string message_;
};

// Tag for constructing a failed Result, like std::unexpected.
struct Unexpected {
  Error error;
};
inline Unexpected Fail(Error e) { return Unexpected{std::move(e)}; }

template <class T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::in_place_index<0>, std::move(value)) {}         // NOLINT
  Result(Error error) : v_(std::in_place_index<1>, std::move(error)) {}     // NOLINT
  Result(Unexpected u) : v_(std::in_place_index<1>, std::move(u.error)) {}  // NOLINT

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(v_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(v_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(v_));
  }
  const Error& error() const {
    assert(!ok());
    return std::get<1>(v_);
  }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

 private:
  std::variant<T, Error> v_;
};

template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : error_(std::move(error)), ok_(false) {}     // NOLINT
  Result(Unexpected u) : error_(std::move(u.error)), ok_(false) {}  // NOLINT
  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const Error& error() const {
    assert(!ok_);
    return error_;
  }

 private:
  Error error_{ErrorCode::kCorrupt, ""};
  bool ok_ = true;
};

using Status = Result<void>;
inline Status Ok() { return {}; }

}  // namespace tiledbfs::core

#define TILEDBFS_CONCAT_INNER(a, b) a##b
#define TILEDBFS_CONCAT(a, b) TILEDBFS_CONCAT_INNER(a, b)

// TRY(expr): returns the error of a Result/Status expression.
#define TRY(expr)                                      \
  do {                                                 \
    auto&& _tiledbfs_r = (expr);                       \
    if (!_tiledbfs_r.ok()) return _tiledbfs_r.error(); \
  } while (0)

// ASSIGN_OR_RETURN(lhs, expr): lhs = *expr, or return its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL(TILEDBFS_CONCAT(_tiledbfs_r_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                          \
  if (!tmp.ok()) return tmp.error();          \
  lhs = std::move(tmp).value()

// Same, adding context (e.g. the file name) to the error on the way out.
#define ASSIGN_OR_RETURN_CTX(lhs, expr, ctx) \
  ASSIGN_OR_RETURN_CTX_IMPL(TILEDBFS_CONCAT(_tiledbfs_r_, __LINE__), lhs, expr, ctx)
#define ASSIGN_OR_RETURN_CTX_IMPL(tmp, lhs, expr, ctx) \
  auto tmp = (expr);                                   \
  if (!tmp.ok()) return tmp.error().WithContext(ctx);  \
  lhs = std::move(tmp).value()
