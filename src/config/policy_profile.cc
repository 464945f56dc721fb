#include "config/policy_profile.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <system_error>
#include <utility>
#include <vector>

#include "config/profile_file.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

// Parsed from the same decimal text, equal SLOs compare equal exactly; the tolerance only
// forgives a value that went through arithmetic.
bool Close(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

// The targets a profile's capacities answer to: a prefill replica's to TTFT alone (it makes
// one token), a decode replica's to TPOT alone (its TTFT is the wait for a decode slot, which
// the profile does not measure), an aggregated replica's to both.
struct ProfiledTargets {
  bool ttft = true;
  bool tpot = true;
};

ProfiledTargets TargetsOf(profile::ProfileRole role) {
  return {role != profile::ProfileRole::kDecode, role != profile::ProfileRole::kPrefill};
}

std::string DescribeSlo(double ttft, double tpot, double target, bool with_target,
                        ProfiledTargets which) {
  std::vector<std::string> parts;
  if (which.ttft) parts.push_back(fmt::format("TTFT <= {} s", ttft));
  if (which.tpot) parts.push_back(fmt::format("TPOT <= {} s", tpot));
  std::string text = fmt::format("{}", fmt::join(parts, ", "));
  if (with_target) text += fmt::format(" for a share {} of requests", target);
  return text;
}

// The families whose block may name a profile: slo (an aggregated profile) and disagg (a role
// profile).
constexpr const char* kProfileFamilies[] = {"slo", "disagg"};

// The block of an envelope whose family reads a profile and which names one, with the
// family's name; an undefined node otherwise.
std::pair<YAML::Node, std::string> ProfileBlock(const YAML::Node& envelope) {
  const YAML::Node none(YAML::NodeType::Undefined);
  if (!envelope.IsDefined() || !envelope.IsMap()) return {none, ""};
  const YAML::Node family = envelope["family"];
  if (!family.IsDefined() || !family.IsScalar()) return {none, ""};
  for (const char* name : kProfileFamilies) {
    if (family.Scalar() != name) continue;
    const YAML::Node block = envelope[name];
    if (!block.IsDefined() || !block.IsMap()) return {none, ""};
    const YAML::Node path = block["profile"];
    if (path.IsDefined() && !path.IsNull()) return {block, name};
  }
  return {none, ""};
}

}  // namespace

Result<profile::CapacityProfile> LoadNamedProfile(const YAML::Node& block,
                                                  const std::string& path) {
  const std::string field = yaml::Join(path, "profile");
  GS_ASSIGN_OR_RETURN(std::string file, yaml::ReadString(block, "profile", path));
  if (file.empty()) {
    return yaml::FieldError(block["profile"], field,
                            "expected the path of a capacity profile (gpuscale profile --out)");
  }
  Result<profile::CapacityProfile> loaded = LoadProfileFile(file);
  if (!loaded) {
    // The profile's own field and line stay as they are; the line that named the file goes
    // beside its name, so that the two lines cannot be mistaken for each other.
    const Error& e = loaded.error();
    const std::string why = e.field == file ? e.message : e.ToString();  // a missing file
    const int line = yaml::LineOf(block["profile"]);
    const std::string named = line > 0 ? fmt::format(" (named in line {})", line) : "";
    return InvalidArgument(fmt::format("capacity profile '{}'{}: {}", file, named, why), field);
  }
  return loaded;
}

void ResolveProfilePath(const YAML::Node& envelope, const std::string& base_dir) {
  // IsDefined first: a service without a `policy:` gives an invalid node, whose type throws.
  if (!envelope.IsDefined() || !envelope.IsMap()) return;
  for (const char* family : kProfileFamilies) {
    const YAML::Node block = envelope[family];
    if (!block.IsDefined() || !block.IsMap()) continue;
    // A handle on the file's own node: assigning a scalar keeps its line mark, so errors
    // about the profile still name the line of the config that gave it.
    YAML::Node node = block["profile"];
    if (!node.IsDefined() || !node.IsScalar() || node.Scalar().empty()) continue;
    const std::filesystem::path given(node.Scalar());
    if (given.is_absolute()) continue;
    std::error_code ec;
    const std::filesystem::path full = std::filesystem::absolute(base_dir / given, ec);
    if (ec) continue;  // no working directory: left relative; the load says it is missing
    node = full.lexically_normal().string();
  }
}

Status CheckProfileSlo(const YAML::Node& envelope, const std::string& policy_path,
                       double ttft_seconds, double tpot_seconds, std::optional<double> target_ratio,
                       const YAML::Node& slo_node, std::string_view slo_path) {
  const auto [block, family] = ProfileBlock(envelope);
  if (!block.IsDefined()) return OkStatus();
  const std::string path = yaml::Join(policy_path, family);
  GS_ASSIGN_OR_RETURN(profile::CapacityProfile p, LoadNamedProfile(block, path));
  const ProfiledTargets which = TargetsOf(p.role);
  const bool same = (!which.ttft || Close(p.slo.ttft_seconds, ttft_seconds)) &&
                    (!which.tpot || Close(p.slo.tpot_seconds, tpot_seconds)) &&
                    (!target_ratio || Close(p.slo.target_ratio, *target_ratio));
  if (same) return OkStatus();
  const int line = yaml::LineOf(slo_node);
  const std::string where = line > 0 ? fmt::format("{} (line {})", slo_path, line)
                                     : fmt::format("{} (its defaults)", slo_path);
  // The profile's target ratio is named only where the service has one to compare.
  const double profile_target = p.slo.target_ratio;
  const double service_target = target_ratio.value_or(0);
  const bool with_target = target_ratio.has_value();
  return yaml::FieldError(
      block["profile"], yaml::Join(path, "profile"),
      fmt::format(
          "the profile was measured at {}, but {} asks {}; a capacity holds at one "
          "SLO only, so profile the replica at this SLO (gpuscale profile) or use the "
          "profile's",
          DescribeSlo(p.slo.ttft_seconds, p.slo.tpot_seconds, profile_target, with_target, which),
          where, DescribeSlo(ttft_seconds, tpot_seconds, service_target, with_target, which)));
}

Status ReadProfileTarget(const YAML::Node& block, const std::string& path,
                         const profile::CapacityProfile& p, double& target_attainment) {
  const YAML::Node given_node = block["target_attainment"];
  if (given_node.IsDefined()) {
    const std::string profile_field = yaml::Join(path, "profile");
    GS_ASSIGN_OR_RETURN(double given, yaml::ReadDouble(block, "target_attainment", path));
    if (std::abs(given - p.slo.target_ratio) > 1e-12) {
      return yaml::FieldError(
          given_node, yaml::Join(path, "target_attainment"),
          fmt::format("is {} but {} (line {}) was measured for a share {} of requests within "
                      "the SLO; a capacity holds at one target only: remove this field or "
                      "profile the replica at {}",
                      given, profile_field, yaml::LineOf(block["profile"]), p.slo.target_ratio,
                      given));
    }
  }
  target_attainment = p.slo.target_ratio;
  return OkStatus();
}

}  // namespace gpuscale::config
