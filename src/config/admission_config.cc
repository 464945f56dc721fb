#include "config/admission_config.h"

#include <fmt/format.h>

#include <cmath>
#include <string>
#include <utility>

#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

using yaml::FieldError;
using yaml::Join;

// parent[key], or an undefined node when absent (never inserts).
YAML::Node Child(const YAML::Node& parent, std::string_view key) {
  for (const auto& entry : parent) {
    if (entry.first.IsScalar() && entry.first.Scalar() == key) return entry.second;
  }
  return YAML::Node(YAML::NodeType::Undefined);
}

// A priority name at `n` (`path` for errors).
Result<route::Priority> ReadPriority(const YAML::Node& n, const std::string& path) {
  if (!n.IsScalar()) return FieldError(n, path, "expected critical, standard or sheddable");
  const std::optional<route::Priority> p = route::ParsePriority(n.Scalar());
  if (!p) {
    return FieldError(
        n, path, fmt::format("expected critical, standard or sheddable, got '{}'", n.Scalar()));
  }
  return *p;
}

Status ReadHeaders(const YAML::Node& n, std::string_view path, route::AdmissionConfig& a) {
  for (auto [key, value] : {std::pair{"priority_header", &a.priority_header},
                            std::pair{"tenant_header", &a.tenant_header}}) {
    GS_ASSIGN_OR_RETURN(*value, yaml::ReadString(n, key, path, *value));
    if (value->find_first_of(" :\r\n\t") != std::string::npos) {
      return FieldError(Child(n, key), Join(path, key),
                        fmt::format("expected a header name, got '{}'", *value));
    }
  }
  if (a.priority_header.empty()) {
    return FieldError(Child(n, "priority_header"), Join(path, "priority_header"),
                      "expected a header name");
  }
  GS_ASSIGN_OR_RETURN(
      a.tenant_tokens_per_minute,
      yaml::ReadDouble(n, "tenant_tokens_per_minute", path, a.tenant_tokens_per_minute));
  if (!(a.tenant_tokens_per_minute >= 0) || !std::isfinite(a.tenant_tokens_per_minute)) {
    return FieldError(Child(n, "tenant_tokens_per_minute"), Join(path, "tenant_tokens_per_minute"),
                      "expected 0 (no limit) or a positive number of tokens per minute");
  }
  return OkStatus();
}

Status ReadPriorities(const YAML::Node& n, std::string_view path, route::AdmissionConfig& a) {
  if (n["default_priority"]) {
    GS_ASSIGN_OR_RETURN(a.default_priority,
                        ReadPriority(n["default_priority"], Join(path, "default_priority")));
  }
  const YAML::Node m = n["model_priority"];
  if (!m) return OkStatus();
  const std::string map_path = Join(path, "model_priority");
  if (!m.IsMap()) {
    return FieldError(m, map_path, "expected a mapping {model: critical|standard|sheddable}");
  }
  for (const auto& entry : m) {
    GS_ASSIGN_OR_RETURN(std::string model, yaml::KeyName(entry.first, map_path));
    GS_ASSIGN_OR_RETURN(a.model_priority[model], ReadPriority(entry.second, Join(map_path, model)));
  }
  return OkStatus();
}

// critical_reserved_per_replica: slots of max_in_flight_per_replica that only critical
// requests take, so it needs that limit and must leave the others at least one slot.
Status ReadReserve(const YAML::Node& n, std::string_view path, route::AdmissionConfig& a) {
  constexpr std::string_view kKey = "critical_reserved_per_replica";
  GS_ASSIGN_OR_RETURN(a.critical_reserved_per_replica,
                      yaml::ReadInt(n, kKey, path, a.critical_reserved_per_replica));
  const int reserved = a.critical_reserved_per_replica;
  const int limit = a.max_in_flight_per_replica;
  if (reserved == 0) return OkStatus();
  if (reserved < 0) {
    return FieldError(Child(n, kKey), Join(path, kKey), "expected 0 (none) or more");
  }
  if (limit == 0) {
    return FieldError(Child(n, kKey), Join(path, kKey),
                      "reserves slots of max_in_flight_per_replica, which is 0 (no limit): set "
                      "it too");
  }
  if (reserved >= limit) {
    return FieldError(Child(n, kKey), Join(path, kKey),
                      fmt::format("expected fewer than max_in_flight_per_replica ({}), got {}: "
                                  "standard and sheddable requests would get no slot",
                                  limit, reserved));
  }
  return OkStatus();
}

}  // namespace

Status ParseAdmissionConfig(const YAML::Node& n, std::string_view path, AdmissionDoor door,
                            route::AdmissionConfig& a) {
  if (!n.IsDefined()) return OkStatus();
  if (!n.IsMap()) {
    return FieldError(n, path, "expected a mapping {max_in_flight_per_replica: n, ...}");
  }
  GS_RETURN_IF_ERROR(
      door == AdmissionDoor::kGateway
          ? yaml::CheckKnownKeys(
                n, path,
                {"max_in_flight_per_replica", "critical_reserved_per_replica", "priority_header",
                 "tenant_header", "default_priority", "model_priority",
                 "sheddable_max_wait_seconds", "tenant_tokens_per_minute"})
          : yaml::CheckKnownKeys(
                n, path,
                {"max_in_flight_per_replica", "critical_reserved_per_replica", "default_priority",
                 "model_priority", "sheddable_max_wait_seconds"}));
  GS_ASSIGN_OR_RETURN(
      a.max_in_flight_per_replica,
      yaml::ReadInt(n, "max_in_flight_per_replica", path, a.max_in_flight_per_replica));
  if (a.max_in_flight_per_replica < 0) {
    return FieldError(Child(n, "max_in_flight_per_replica"),
                      Join(path, "max_in_flight_per_replica"), "expected 0 (no limit) or more");
  }
  GS_RETURN_IF_ERROR(ReadReserve(n, path, a));
  if (door == AdmissionDoor::kGateway) GS_RETURN_IF_ERROR(ReadHeaders(n, path, a));
  GS_RETURN_IF_ERROR(ReadPriorities(n, path, a));
  GS_ASSIGN_OR_RETURN(const double wait, yaml::ReadDouble(n, "sheddable_max_wait_seconds", path,
                                                          a.sheddable_max_wait.count()));
  if (!(wait > 0) || !std::isfinite(wait)) {
    return FieldError(Child(n, "sheddable_max_wait_seconds"),
                      Join(path, "sheddable_max_wait_seconds"),
                      fmt::format("expected a finite number of seconds > 0, got {}", wait));
  }
  a.sheddable_max_wait = Seconds{wait};
  return OkStatus();
}

}  // namespace gpuscale::config
