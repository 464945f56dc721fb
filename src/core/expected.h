// `Expected<T, E>`: std::expected where the standard library provides it (GCC 12 in C++23),
// otherwise a small stand-in with the same surface. The stand-in exists only because the
// fuzz preset builds with clang 14, whose concepts level hides libstdc++'s <expected>; all
// project code goes through these names so both compilers build it.
#pragma once

#include <version>

#if defined(__cpp_lib_expected)
#include <expected>

namespace gpuscale {
template <typename T, typename E>
using Expected = std::expected<T, E>;
template <typename E>
using Unexpected = std::unexpected<E>;
}  // namespace gpuscale

#else
#include <cassert>
#include <type_traits>
#include <utility>
#include <variant>

namespace gpuscale {

template <typename E>
class Unexpected {
 public:
  explicit Unexpected(E error) : error_(std::move(error)) {}
  const E& error() const& { return error_; }
  E& error() & { return error_; }
  E&& error() && { return std::move(error_); }

 private:
  E error_;
};

template <typename T, typename E>
class Expected {
 public:
  using value_type = T;
  using error_type = E;

  Expected() requires std::is_default_constructible_v<T> : state_(std::in_place_index<0>) {}
  template <typename U = T>
    requires(std::is_constructible_v<T, U &&> &&
             !std::is_same_v<std::remove_cvref_t<U>, Expected> &&
             !std::is_same_v<std::remove_cvref_t<U>, Unexpected<E>>)
  Expected(U&& value) : state_(std::in_place_index<0>, std::forward<U>(value)) {}
  template <typename G>
  Expected(const Unexpected<G>& u) : state_(std::in_place_index<1>, u.error()) {}
  template <typename G>
  Expected(Unexpected<G>&& u) : state_(std::in_place_index<1>, std::move(u).error()) {}

  bool has_value() const { return state_.index() == 0; }
  explicit operator bool() const { return has_value(); }
  T& value() & { return std::get<0>(state_); }
  const T& value() const& { return std::get<0>(state_); }
  T&& value() && { return std::get<0>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  template <typename U>
  T value_or(U&& fallback) const& {
    return has_value() ? value() : static_cast<T>(std::forward<U>(fallback));
  }
  E& error() & { return std::get<1>(state_); }
  const E& error() const& { return std::get<1>(state_); }
  E&& error() && { return std::get<1>(std::move(state_)); }

 private:
  std::variant<T, E> state_;
};

template <typename E>
class Expected<void, E> {
 public:
  using value_type = void;
  using error_type = E;

  Expected() = default;
  template <typename G>
  Expected(const Unexpected<G>& u) : error_(u.error()), ok_(false) {}
  template <typename G>
  Expected(Unexpected<G>&& u) : error_(std::move(u).error()), ok_(false) {}

  bool has_value() const { return ok_; }
  explicit operator bool() const { return ok_; }
  void value() const { assert(ok_); }
  void operator*() const {}
  E& error() & { return error_; }
  const E& error() const& { return error_; }
  E&& error() && { return std::move(error_); }

 private:
  E error_{};
  bool ok_ = true;
};

}  // namespace gpuscale
#endif
