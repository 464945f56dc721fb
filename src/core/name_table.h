// Lookups in an enum's one name table, a constexpr array of {value, name} rows: what
// events::EventKind, orch::ReplicaState and the policy enums (scale/enum_names.h) print, parse
// and list in "expected one of" errors.
//
// Pure; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace gpuscale {

template <typename E>
using NameRow = std::pair<E, std::string_view>;
template <typename E>
using NameTable = std::span<const NameRow<E>>;

// The name of `value`; "unknown" for a value the table lacks (a bug: every value has a row).
template <typename E>
std::string_view NameIn(NameTable<E> table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "unknown";
}

// The value named `name` exactly; nullopt when none is.
template <typename E>
std::optional<E> ValueIn(NameTable<E> table, std::string_view name) {
  for (const auto& [v, text] : table) {
    if (text == name) return v;
  }
  return std::nullopt;
}

// "a, b, c": every name in table order, for "expected one of ..." errors.
template <typename E>
std::string NamesIn(NameTable<E> table) {
  std::string out;
  for (const auto& [v, name] : table) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

}  // namespace gpuscale
