// `variants:` of a service spec (VariantConfig): the entries are read by the simulator's
// reader (config/sim_variant_config.h, VariantDialect::kDaemon); this file adds what only the
// daemon has: the relative `capacity`, ids-safe names, and the service fields variants replace.
#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include "config/sim_variant_config.h"
#include "serve_config/daemon_config_internal.h"
#include "yaml/yaml_util.h"

namespace gpuscale::daemon {
namespace {

using yaml::FieldError;
using yaml::Join;

// Variant names become part of replica ids ("<service>.<variant>-<n>").
bool ValidVariantName(std::string_view name) {
  if (name.empty() || name.size() > 32) return false;
  for (char c : name) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return name.front() != '-';
}

// The service fields a variants list replaces, and the engines that cannot run one.
Status CheckVariantsFit(const YAML::Node& n, const std::string& path, const ServiceConfig& s) {
  const std::string field = Join(path, "variants");
  if (s.engine != "local" || s.disaggregated) {
    return FieldError(Child(n, "variants"), field,
                      "places the replicas of a local, non-disaggregated service only");
  }
  for (const char* key : {"gpu_type", "gpus_per_replica"}) {
    if (Child(n, key).IsDefined()) {
      return FieldError(Child(n, key), Join(path, key),
                        fmt::format("give {} per variant when the service lists variants", key));
    }
  }
  return OkStatus();
}

// Each variant's capacity: `capacity` as given, or the profiles' ratio to the first's when
// every variant has a profile; a list mixing the two could not say what 1 means.
Status ReadCapacities(const YAML::Node& list, const std::string& path,
                      const std::vector<sim::VariantSpec>& parsed,
                      std::vector<VariantConfig>& variants) {
  size_t profiled = 0;
  for (const sim::VariantSpec& v : parsed) profiled += v.capacity_tokens_per_second > 0 ? 1 : 0;
  for (size_t i = 0; i < parsed.size(); ++i) {
    const std::string entry = yaml::Index(path, i);
    const YAML::Node capacity = list[i]["capacity"];
    if (profiled > 0 && (profiled < parsed.size() || capacity.IsDefined())) {
      return FieldError(list[i], entry,
                        "give every variant a profile or none (a capacity then, default 1)");
    }
    if (profiled > 0) {
      variants[i].capacity =
          parsed[i].capacity_tokens_per_second / parsed.front().capacity_tokens_per_second;
      continue;
    }
    GS_ASSIGN_OR_RETURN(variants[i].capacity, yaml::ReadDouble(list[i], "capacity", entry, 1.0));
    if (!(variants[i].capacity > 0) || variants[i].capacity > 1e6) {
      return FieldError(capacity, Join(entry, "capacity"), "must be in (0, 1e6]");
    }
  }
  return OkStatus();
}

}  // namespace

Status ReadVariants(const YAML::Node& n, const std::string& path, ServiceConfig& s) {
  const YAML::Node list = Child(n, "variants");
  if (!list.IsDefined()) return OkStatus();
  GS_RETURN_IF_ERROR(CheckVariantsFit(n, path, s));
  const std::string field = Join(path, "variants");
  GS_ASSIGN_OR_RETURN(std::vector<sim::VariantSpec> parsed,
                      config::ParseVariantList(list, field, config::VariantDialect::kDaemon));
  std::vector<VariantConfig> variants(parsed.size());
  for (size_t i = 0; i < parsed.size(); ++i) {
    const sim::VariantSpec& v = parsed[i];
    if (!ValidVariantName(v.name)) {
      return FieldError(list[i]["name"], Join(yaml::Index(field, i), "name"),
                        fmt::format("expected 1-32 characters [a-z0-9-], starting with a letter "
                                    "or digit (it names the replicas), got '{}'",
                                    v.name));
    }
    variants[i] = {v.name, v.gpu_type, v.gpus_per_replica, 1, v.spot, v.preemption_notice};
  }
  GS_RETURN_IF_ERROR(ReadCapacities(list, field, parsed, variants));
  s.variants = std::move(variants);
  s.gpus_per_replica = s.variants.front().gpus_per_replica;
  return OkStatus();
}

void EmitVariants(YAML::Emitter& out, const std::vector<VariantConfig>& variants) {
  if (variants.empty()) return;
  out << YAML::Key << "variants" << YAML::Value << YAML::BeginSeq;
  for (const VariantConfig& v : variants) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value << v.name;
    out << YAML::Key << "gpu_type" << YAML::Value << v.gpu_type;
    out << YAML::Key << "gpus_per_replica" << YAML::Value << v.gpus_per_replica;
    out << YAML::Key << "capacity" << YAML::Value << fmt::format("{}", v.capacity);
    if (v.spot) {
      out << YAML::Key << "spot" << YAML::Value << true;
      out << YAML::Key << "preemption_notice_seconds" << YAML::Value
          << fmt::format("{}", v.preemption_notice.count());
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
}

}  // namespace gpuscale::daemon
