// Errors as values at module boundaries, never exceptions.
//
// `Result<T>` is Expected<T, Error> (std::expected under GCC) marked [[nodiscard]]; `Status` is
// Result<void>.
// Write `return InvalidArgument(...)` (or `return Unexpected<Error>(err)`), never
// std::unexpected directly, so that the clang fuzz build compiles too. An Error carries one of a
// few codes, a message a user can act on, and optionally the field (config key, flag, line)
// at fault. No exception crosses a module boundary; main() maps codes to exit codes and the
// API maps each code to exactly one HTTP status.
//
// Thread-safety: plain values, safe to copy between threads.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "core/expected.h"

namespace gpuscale {

enum class ErrorCode {
  kInvalidArgument,     // bad input: config, flag, request body, file contents
  kNotFound,            // named thing does not exist
  kFailedPrecondition,  // state does not allow the operation (e.g. min > max)
  kResourceExhausted,   // not enough GPUs / memory / capacity
  kUnavailable,         // backend or endpoint unreachable; retrying may help
  kDeadlineExceeded,    // a wait ran out of time
  kInternal,            // a bug; report it
};

std::string_view ErrorCodeName(ErrorCode code);

struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string field;  // e.g. "rules[1].comparator" or "line 17"; empty when not applicable

  // "field: message" when a field is known, else the message alone.
  std::string ToString() const;
};

// [[nodiscard]] so that a dropped error is a compile error (-Werror): a caller either handles
// the Result or says why not with an explicit `(void)`. std::expected itself is not nodiscard,
// hence this thin subclass; it adds no state and converts both ways with Expected<T, Error>.
template <typename T>
class [[nodiscard]] Result : public Expected<T, Error> {
  using Base = Expected<T, Error>;

 public:
  using Base::Base;
  Result() = default;
  Result(const Base& other) : Base(other) {}
  Result(Base&& other) : Base(std::move(other)) {}
};
using Status = Result<void>;

inline Unexpected<Error> MakeError(ErrorCode code, std::string message,
                                        std::string field = {}) {
  return Unexpected<Error>(Error{code, std::move(message), std::move(field)});
}
inline Unexpected<Error> InvalidArgument(std::string message, std::string field = {}) {
  return MakeError(ErrorCode::kInvalidArgument, std::move(message), std::move(field));
}
inline Unexpected<Error> NotFound(std::string message, std::string field = {}) {
  return MakeError(ErrorCode::kNotFound, std::move(message), std::move(field));
}
inline Unexpected<Error> FailedPrecondition(std::string message, std::string field = {}) {
  return MakeError(ErrorCode::kFailedPrecondition, std::move(message), std::move(field));
}
inline Unexpected<Error> ResourceExhausted(std::string message, std::string field = {}) {
  return MakeError(ErrorCode::kResourceExhausted, std::move(message), std::move(field));
}
inline Unexpected<Error> Unavailable(std::string message, std::string field = {}) {
  return MakeError(ErrorCode::kUnavailable, std::move(message), std::move(field));
}
inline Unexpected<Error> DeadlineExceeded(std::string message, std::string field = {}) {
  return MakeError(ErrorCode::kDeadlineExceeded, std::move(message), std::move(field));
}
inline Unexpected<Error> Internal(std::string message, std::string field = {}) {
  return MakeError(ErrorCode::kInternal, std::move(message), std::move(field));
}

inline Status OkStatus() { return {}; }

}  // namespace gpuscale

#define GS_CONCAT_INNER_(a, b) a##b
#define GS_CONCAT_(a, b) GS_CONCAT_INNER_(a, b)

// Returns the error of a Result/Status expression from the enclosing function.
#define GS_RETURN_IF_ERROR(expr)                                      \
  do {                                                                \
    auto gs_status_ = (expr);                                         \
    if (!gs_status_) return ::gpuscale::Unexpected<::gpuscale::Error>(std::move(gs_status_).error()); \
  } while (0)

// `GS_ASSIGN_OR_RETURN(auto x, Foo());` binds the value or returns the error.
#define GS_ASSIGN_OR_RETURN(lhs, expr) \
  GS_ASSIGN_OR_RETURN_IMPL_(GS_CONCAT_(gs_result_, __LINE__), lhs, expr)
#define GS_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr)                \
  auto tmp = (expr);                                             \
  if (!tmp) return ::gpuscale::Unexpected<::gpuscale::Error>(std::move(tmp).error());      \
  lhs = std::move(*tmp)
