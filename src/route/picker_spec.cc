#include "route/picker_spec.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <string>
#include <utility>

namespace gpuscale::route {
namespace {

// The one spelling table of the router kinds.
constexpr std::array<std::pair<PickerKind, std::string_view>, 3> kKindNames = {{
    {PickerKind::kLeastOutstanding, "least_outstanding"},
    {PickerKind::kRoundRobin, "round_robin"},
    {PickerKind::kPrefixCache, "prefix_cache"},
}};

Unexpected<Error> FieldError(std::string_view field, std::string message) {
  return InvalidArgument(std::move(message), std::string(field));
}

}  // namespace

std::string_view PickerKindNames() {
  static const std::string names = [] {
    std::string out;
    for (const auto& [kind, name] : kKindNames)
      out += (out.empty() ? "" : ", ") + std::string(name);
    return out;
  }();
  return names;
}

std::string_view PickerKindName(PickerKind kind) {
  for (const auto& [k, name] : kKindNames) {
    if (k == kind) return name;
  }
  return "unknown";
}

Result<PickerKind> ParsePickerKind(std::string_view name) {
  for (const auto& [kind, spelling] : kKindNames) {
    if (spelling == name) return kind;
  }
  return FieldError(kKindField,
                    fmt::format("expected one of {}, got '{}'", PickerKindNames(), name));
}

std::string_view PrefixIndexModeName(PrefixIndexMode mode) {
  return mode == PrefixIndexMode::kPrecise ? "precise" : "approximate";
}

Result<PrefixIndexMode> ParsePrefixIndexMode(std::string_view name) {
  for (PrefixIndexMode mode : {PrefixIndexMode::kApproximate, PrefixIndexMode::kPrecise}) {
    if (PrefixIndexModeName(mode) == name) return mode;
  }
  return FieldError(kPrefixIndexField,
                    fmt::format("expected approximate or precise, got '{}'", name));
}

Status CheckPickerSpec(const PickerSpec& spec) {
  const double slow_start = spec.slow_start_seconds;
  if (!(slow_start >= 0) || !std::isfinite(slow_start)) {
    return FieldError(kSlowStartField,
                      fmt::format("expected a finite number of seconds >= 0, got {}", slow_start));
  }
  if (spec.kind != PickerKind::kLeastOutstanding) {
    const std::string message =
        fmt::format("applies to {} only", PickerKindName(PickerKind::kLeastOutstanding));
    if (slow_start > 0) return FieldError(kSlowStartField, message);
    if (spec.prefix_affinity) return FieldError(kPrefixAffinityField, message);
  }
  const double factor = spec.affinity_load_factor;
  if (!(factor > 1 && factor <= 100)) {
    return FieldError(kAffinityLoadFactorField,
                      fmt::format("expected a factor in (1, 100], got {}", factor));
  }
  if (spec.prefix_index == PrefixIndexMode::kPrecise && spec.kind != PickerKind::kPrefixCache) {
    return FieldError(kPrefixIndexField,
                      fmt::format("applies to {} only", PickerKindName(PickerKind::kPrefixCache)));
  }
  return OkStatus();
}

}  // namespace gpuscale::route
