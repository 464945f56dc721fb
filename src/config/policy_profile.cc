#include "config/policy_profile.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <system_error>

#include "config/profile_file.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

// Parsed from the same decimal text, equal SLOs compare equal exactly; the tolerance only
// forgives a value that went through arithmetic.
bool Close(double a, double b) {
  return std::abs(a - b) <= 1e-9 * std::max(std::abs(a), std::abs(b));
}

std::string DescribeSlo(double ttft, double tpot, std::optional<double> target) {
  std::string text = fmt::format("TTFT <= {} s, TPOT <= {} s", ttft, tpot);
  if (target) text += fmt::format(" for a share {} of requests", *target);
  return text;
}

// The slo block of an envelope whose family is slo and which names a profile; undefined
// otherwise.
YAML::Node ProfileBlock(const YAML::Node& envelope) {
  const YAML::Node none(YAML::NodeType::Undefined);
  if (!envelope.IsMap()) return none;
  const YAML::Node family = envelope["family"];
  if (!family.IsDefined() || !family.IsScalar() || family.Scalar() != "slo") return none;
  const YAML::Node block = envelope["slo"];
  if (!block.IsDefined() || !block.IsMap()) return none;
  const YAML::Node path = block["profile"];
  return path.IsDefined() && !path.IsNull() ? block : none;
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
  const YAML::Node block = envelope["slo"];
  if (!block.IsDefined() || !block.IsMap()) return;
  // A handle on the file's own node: assigning a scalar keeps its line mark, so errors about
  // the profile still name the line of the config that gave it.
  YAML::Node node = block["profile"];
  if (!node.IsDefined() || !node.IsScalar() || node.Scalar().empty()) return;
  const std::filesystem::path given(node.Scalar());
  if (given.is_absolute()) return;
  std::error_code ec;
  const std::filesystem::path full = std::filesystem::absolute(base_dir / given, ec);
  if (ec) return;  // no working directory: left relative, and the load will say it is missing
  node = full.lexically_normal().string();
}

Status CheckProfileSlo(const YAML::Node& envelope, const std::string& policy_path,
                       double ttft_seconds, double tpot_seconds, std::optional<double> target_ratio,
                       const YAML::Node& slo_node, std::string_view slo_path) {
  const YAML::Node block = ProfileBlock(envelope);
  if (!block.IsDefined()) return OkStatus();
  const std::string path = yaml::Join(policy_path, "slo");
  GS_ASSIGN_OR_RETURN(profile::CapacityProfile p, LoadNamedProfile(block, path));
  const bool same = Close(p.slo.ttft_seconds, ttft_seconds) &&
                    Close(p.slo.tpot_seconds, tpot_seconds) &&
                    (!target_ratio || Close(p.slo.target_ratio, *target_ratio));
  if (same) return OkStatus();
  const int line = yaml::LineOf(slo_node);
  const std::string where = line > 0 ? fmt::format("{} (line {})", slo_path, line)
                                     : fmt::format("{} (its defaults)", slo_path);
  const std::optional<double> profile_target =
      target_ratio ? std::optional<double>(p.slo.target_ratio) : std::nullopt;
  return yaml::FieldError(
      block["profile"], yaml::Join(path, "profile"),
      fmt::format("the profile was measured at {}, but {} asks {}; a capacity holds at one "
                  "SLO only, so profile the replica at this SLO (gpuscale profile) or use the "
                  "profile's",
                  DescribeSlo(p.slo.ttft_seconds, p.slo.tpot_seconds, profile_target), where,
                  DescribeSlo(ttft_seconds, tpot_seconds, target_ratio)));
}

}  // namespace gpuscale::config
