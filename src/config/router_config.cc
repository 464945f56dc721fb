#include "config/router_config.h"

#include <fmt/format.h>

#include <string>

#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

using yaml::FieldError;
using yaml::Join;

// The kind's own defaults: round robin has no slow start and no prefix affinity.
route::PickerSpec StartFrom(route::PickerSpec defaults, route::PickerKind kind) {
  defaults.kind = kind;
  if (kind != route::PickerKind::kLeastOutstanding) {
    defaults.slow_start_seconds = 0;
    defaults.prefix_affinity = false;
  }
  return defaults;
}

// A route:: error (whose field is a key of the block) located at that key's node.
Unexpected<Error> AtKey(const YAML::Node& node, std::string_view path, const Error& error) {
  const YAML::Node key = node.IsMap() ? node[error.field] : YAML::Node();
  if (!key.IsDefined()) return FieldError(node, path, error.message);
  return FieldError(key, Join(path, error.field), error.message);
}

Result<route::PickerSpec> ParseMapping(const YAML::Node& n, std::string_view path,
                                       const route::PickerSpec& defaults) {
  GS_RETURN_IF_ERROR(
      yaml::CheckKnownKeys(n, path,
                           {route::kKindField, route::kSlowStartField, route::kPrefixAffinityField,
                            route::kAffinityLoadFactorField, route::kPrefixIndexField}));
  GS_ASSIGN_OR_RETURN(const std::string name,
                      yaml::ReadString(n, route::kKindField, path,
                                       std::string(route::PickerKindName(defaults.kind))));
  Result<route::PickerKind> kind = route::ParsePickerKind(name);
  if (!kind) return AtKey(n, path, kind.error());
  route::PickerSpec spec = StartFrom(defaults, *kind);
  GS_ASSIGN_OR_RETURN(spec.slow_start_seconds,
                      yaml::ReadDouble(n, route::kSlowStartField, path, spec.slow_start_seconds));
  GS_ASSIGN_OR_RETURN(spec.prefix_affinity,
                      yaml::ReadBool(n, route::kPrefixAffinityField, path, spec.prefix_affinity));
  GS_ASSIGN_OR_RETURN(
      spec.affinity_load_factor,
      yaml::ReadDouble(n, route::kAffinityLoadFactorField, path, spec.affinity_load_factor));
  GS_ASSIGN_OR_RETURN(const std::string index,
                      yaml::ReadString(n, route::kPrefixIndexField, path,
                                       std::string(route::PrefixIndexModeName(spec.prefix_index))));
  Result<route::PrefixIndexMode> mode = route::ParsePrefixIndexMode(index);
  if (!mode) return AtKey(n, path, mode.error());
  spec.prefix_index = *mode;
  return spec;
}

}  // namespace

Result<route::PickerSpec> ParseRouterConfig(const YAML::Node& node, std::string_view path,
                                            const route::PickerSpec& defaults) {
  // Empty (`router:`) reads as absent, as every yaml/ reader does.
  if (!node.IsDefined() || node.IsNull()) return defaults;
  route::PickerSpec spec;
  if (node.IsMap()) {
    GS_ASSIGN_OR_RETURN(spec, ParseMapping(node, path, defaults));
  } else if (node.IsScalar()) {
    Result<route::PickerKind> kind = route::ParsePickerKind(node.Scalar());
    if (!kind) return FieldError(node, path, kind.error().message);
    spec = StartFrom(defaults, *kind);
  } else {
    return FieldError(
        node, path,
        fmt::format("expected one of {}, or a mapping {{kind: ...}}", route::PickerKindNames()));
  }
  if (Status checked = route::CheckPickerSpec(spec); !checked) {
    return AtKey(node, path, checked.error());
  }
  return spec;
}

}  // namespace gpuscale::config
