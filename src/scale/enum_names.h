// One spelling table for each enum that config files, API bodies, the store and the CLI write
// as text (comparators, metric sources, aggregations). Parsers and printers all read these
// tables, so a name is spelled in one place and an error lists exactly the names accepted.
//
// Pure constants and lookups; thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "scale/policy.h"
#include "scale/rules_policy.h"

namespace gpuscale::scale {

template <typename E>
struct Spelling {
  std::string_view name;
  E value;
};
template <typename E>
using Spellings = std::span<const Spelling<E>>;

Spellings<Comparator> ComparatorSpellings();      // LESS_THAN, ... (Backend.AI's spelling)
Spellings<MetricSource> MetricSourceSpellings();  // inference_framework, kernel, ...
Spellings<Aggregation> AggregationSpellings();    // average, max, min, sum

// The value spelled `name` exactly (spellings are case-sensitive); nullopt when none is.
template <typename E>
std::optional<E> ValueNamed(Spellings<E> table, std::string_view name) {
  for (const Spelling<E>& s : table) {
    if (s.name == name) return s.value;
  }
  return std::nullopt;
}

// The spelling of `value`; "" for a value the table lacks (a bug: every enumerator has one).
template <typename E>
std::string_view NameOf(Spellings<E> table, E value) {
  for (const Spelling<E>& s : table) {
    if (s.value == value) return s.name;
  }
  return "";
}

std::string_view ComparatorName(Comparator comparator);     // "GREATER_THAN"
std::string_view MetricSourceName(MetricSource source);     // "inference_framework"
std::string_view AggregationName(Aggregation aggregation);  // "average", "max", ...

// "a, b, c": the accepted names, for "expected one of ..." errors.
template <typename E>
std::string JoinedNames(Spellings<E> table) {
  std::string out;
  for (const Spelling<E>& s : table) {
    if (!out.empty()) out += ", ";
    out += s.name;
  }
  return out;
}

}  // namespace gpuscale::scale
