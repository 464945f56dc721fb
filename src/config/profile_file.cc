#include "config/profile_file.h"

#include <fmt/format.h>

#include <cmath>
#include <limits>
#include <optional>

#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

using profile::CapacityProfile;
using profile::CurvePoint;
using profile::MixProfile;
using yaml::FieldError;
using yaml::Join;

// ---- Writing ----

// A YAML double-quoted scalar (JSON's escapes, which YAML shares).
std::string Quote(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// fmt's "{}" is the shortest text that reads back as the same double: the round trip holds.
std::string Num(double v) { return fmt::format("{}", v); }

std::string CurvePointYaml(const CurvePoint& p) {
  return fmt::format(
      "{{rate_rps: {}, requests: {}, attainment: {}, ttft_p50_seconds: {}, ttft_p99_seconds: {}, "
      "tpot_p50_seconds: {}, tpot_p99_seconds: {}}}",
      Num(p.rate_rps), p.requests, Num(p.attainment), Num(p.ttft_p50_seconds),
      Num(p.ttft_p99_seconds), Num(p.tpot_p50_seconds), Num(p.tpot_p99_seconds));
}

std::string MixYaml(const MixProfile& m) {
  std::string out = fmt::format(
      "  - prompt_tokens: {}\n    output_tokens: {}\n    capacity_rps: {}\n"
      "    capacity_tokens_per_second: {}\n",
      m.mix.prompt_tokens, m.mix.output_tokens, Num(m.capacity_rps),
      Num(m.capacity_tokens_per_second));
  if (m.curve.empty()) return out;
  out += "    curve:\n";
  for (const CurvePoint& p : m.curve) out += "      - " + CurvePointYaml(p) + "\n";
  return out;
}

// ---- Reading ----

// A double in [lo, +inf) (or (lo, +inf) when `open`), finite.
Result<double> ReadNumber(const YAML::Node& n, std::string_view key, std::string_view path,
                          double lo, bool open, std::optional<double> fallback = {}) {
  GS_ASSIGN_OR_RETURN(double v, yaml::ReadDouble(n, key, path, fallback));
  if (std::isfinite(v) && (open ? v > lo : v >= lo)) return v;
  const std::string what =
      open && lo == 0 ? "a positive number" : fmt::format("a number {} {}", open ? ">" : ">=", lo);
  return FieldError(n[std::string(key)], Join(path, key),
                    fmt::format("expected {}, got {}", what, v));
}

Result<double> ReadShare(const YAML::Node& n, std::string_view key, std::string_view path,
                         bool zero_ok) {
  GS_ASSIGN_OR_RETURN(double v, yaml::ReadDouble(n, key, path));
  if ((zero_ok ? v >= 0 : v > 0) && v <= 1) return v;
  return FieldError(n[std::string(key)], Join(path, key),
                    fmt::format("expected a share in {}0, 1], got {}", zero_ok ? "[" : "(", v));
}

Result<int> ReadCount(const YAML::Node& n, std::string_view key, std::string_view path, int lo,
                      std::optional<int> fallback = {}) {
  GS_ASSIGN_OR_RETURN(int v, yaml::ReadInt(n, key, path, fallback));
  if (v >= lo) return v;
  return FieldError(n[std::string(key)], Join(path, key),
                    fmt::format("expected an integer >= {}, got {}", lo, v));
}

Result<std::string> ReadText(const YAML::Node& n, std::string_view key, std::string_view path) {
  GS_ASSIGN_OR_RETURN(std::string v, yaml::ReadString(n, key, path));
  if (!v.empty()) return v;
  return FieldError(n[std::string(key)], Join(path, key), "expected a non-empty string");
}

Status RequireMap(const YAML::Node& root, std::string_view key) {
  const YAML::Node n = root[std::string(key)];
  if (!n.IsDefined() || n.IsNull()) return FieldError(root, key, "required field is missing");
  if (!n.IsMap()) return FieldError(n, key, "expected a mapping");
  return OkStatus();
}

Result<sim::SloSpec> ParseSlo(const YAML::Node& root) {
  GS_RETURN_IF_ERROR(RequireMap(root, "slo"));
  const YAML::Node n = root["slo"];
  GS_RETURN_IF_ERROR(
      yaml::CheckKnownKeys(n, "slo", {"ttft_seconds", "tpot_seconds", "target_ratio"}));
  sim::SloSpec slo;
  GS_ASSIGN_OR_RETURN(slo.ttft_seconds, ReadNumber(n, "ttft_seconds", "slo", 0, true));
  GS_ASSIGN_OR_RETURN(slo.tpot_seconds, ReadNumber(n, "tpot_seconds", "slo", 0, true));
  GS_ASSIGN_OR_RETURN(slo.target_ratio, ReadShare(n, "target_ratio", "slo", false));
  return slo;
}

Result<sim::ReplicaModelConfig> ParseReplicaModel(const YAML::Node& n, const std::string& model) {
  constexpr std::string_view p = "replica_model";
  if (!n.IsMap()) return FieldError(n, p, "expected a mapping");
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      n, p, {"gpu", "tensor_parallel", "max_batch_size", "max_batched_tokens", "kv_cache_tokens"}));
  sim::ReplicaModelConfig m;
  m.model = model;  // the profile's own `model`, not repeated here
  GS_ASSIGN_OR_RETURN(m.gpu, ReadText(n, "gpu", p));
  GS_ASSIGN_OR_RETURN(m.tensor_parallel, ReadCount(n, "tensor_parallel", p, 1, m.tensor_parallel));
  GS_ASSIGN_OR_RETURN(m.max_batch_size, ReadCount(n, "max_batch_size", p, 1, m.max_batch_size));
  GS_ASSIGN_OR_RETURN(m.max_batched_tokens,
                      ReadCount(n, "max_batched_tokens", p, 1, m.max_batched_tokens));
  GS_ASSIGN_OR_RETURN(double kv, ReadNumber(n, "kv_cache_tokens", p, 0, false, 0.0));
  if (kv > sim::kMaxKvCacheTokens) {
    return FieldError(
        n["kv_cache_tokens"], Join(p, "kv_cache_tokens"),
        fmt::format("expected at most {} tokens, got {}", sim::kMaxKvCacheTokens, kv));
  }
  m.kv_cache_tokens = static_cast<int64_t>(kv);
  return m;
}

Result<uint64_t> ReadSeed(const YAML::Node& n, std::string_view path, uint64_t fallback) {
  const YAML::Node v = n["seed"];
  if (!v.IsDefined() || v.IsNull()) return fallback;
  uint64_t seed = 0;
  if (!v.IsScalar() || !YAML::convert<uint64_t>::decode(v, seed)) {
    return FieldError(v, Join(path, "seed"), "expected an integer >= 0");
  }
  return seed;
}

Result<profile::Measurement> ParseMeasurement(const YAML::Node& n) {
  constexpr std::string_view p = "measurement";
  profile::Measurement m;
  if (!n.IsDefined() || n.IsNull()) return m;
  GS_RETURN_IF_ERROR(
      yaml::CheckKnownKeys(n, p, {"method", "point_seconds", "warmup_seconds", "seed"}));
  GS_ASSIGN_OR_RETURN(m.method, yaml::ReadString(n, "method", p, m.method));
  if (m.method != "bisection" && m.method != "steps" && m.method != "model") {
    return FieldError(n["method"], Join(p, "method"),
                      fmt::format("expected bisection, steps or model, got '{}'", m.method));
  }
  // A profile computed from the replica model (a role profile's) offered no load of its own.
  const bool measured = m.method != "model";
  GS_ASSIGN_OR_RETURN(m.point_seconds, measured ? ReadNumber(n, "point_seconds", p, 0, true)
                                                : ReadNumber(n, "point_seconds", p, 0, false, 0.0));
  GS_ASSIGN_OR_RETURN(m.warmup_seconds, ReadNumber(n, "warmup_seconds", p, 0, false, 0.0));
  GS_ASSIGN_OR_RETURN(m.seed, ReadSeed(n, p, m.seed));
  return m;
}

Status ParseFit(const YAML::Node& root, CapacityProfile& profile) {
  GS_RETURN_IF_ERROR(RequireMap(root, "fit"));
  const YAML::Node n = root["fit"];
  constexpr std::string_view p = "fit";
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      n, p, {"output_token_weight", "capacity_tokens_per_second", "max_error_ratio"}));
  GS_ASSIGN_OR_RETURN(profile.output_token_weight,
                      ReadNumber(n, "output_token_weight", p, 0, false));
  GS_ASSIGN_OR_RETURN(profile.capacity_tokens_per_second,
                      ReadNumber(n, "capacity_tokens_per_second", p, 0, true));
  GS_ASSIGN_OR_RETURN(profile.fit_max_error_ratio,
                      ReadNumber(n, "max_error_ratio", p, 0, false, 0.0));
  return OkStatus();
}

Result<CurvePoint> ParseCurvePoint(const YAML::Node& n, const std::string& p) {
  GS_RETURN_IF_ERROR(
      yaml::CheckKnownKeys(n, p,
                           {"rate_rps", "requests", "attainment", "ttft_p50_seconds",
                            "ttft_p99_seconds", "tpot_p50_seconds", "tpot_p99_seconds"}));
  CurvePoint c;
  GS_ASSIGN_OR_RETURN(c.rate_rps, ReadNumber(n, "rate_rps", p, 0, true));
  GS_ASSIGN_OR_RETURN(c.requests, ReadCount(n, "requests", p, 0));
  GS_ASSIGN_OR_RETURN(c.attainment, ReadShare(n, "attainment", p, true));
  GS_ASSIGN_OR_RETURN(c.ttft_p50_seconds, ReadNumber(n, "ttft_p50_seconds", p, 0, false));
  GS_ASSIGN_OR_RETURN(c.ttft_p99_seconds, ReadNumber(n, "ttft_p99_seconds", p, 0, false));
  GS_ASSIGN_OR_RETURN(c.tpot_p50_seconds, ReadNumber(n, "tpot_p50_seconds", p, 0, false));
  GS_ASSIGN_OR_RETURN(c.tpot_p99_seconds, ReadNumber(n, "tpot_p99_seconds", p, 0, false));
  return c;
}

Result<MixProfile> ParseMix(const YAML::Node& n, const std::string& p) {
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(
      n, p,
      {"prompt_tokens", "output_tokens", "capacity_rps", "capacity_tokens_per_second", "curve"}));
  MixProfile m;
  GS_ASSIGN_OR_RETURN(m.mix.prompt_tokens, ReadCount(n, "prompt_tokens", p, 1));
  GS_ASSIGN_OR_RETURN(m.mix.output_tokens, ReadCount(n, "output_tokens", p, 1));
  GS_ASSIGN_OR_RETURN(m.capacity_rps, ReadNumber(n, "capacity_rps", p, 0, true));
  GS_ASSIGN_OR_RETURN(m.capacity_tokens_per_second,
                      ReadNumber(n, "capacity_tokens_per_second", p, 0, true));
  const YAML::Node curve = n["curve"];
  if (!curve.IsDefined() || curve.IsNull()) return m;
  const std::string curve_path = Join(p, "curve");
  if (!curve.IsSequence()) return FieldError(curve, curve_path, "expected a list of points");
  for (size_t i = 0; i < curve.size(); ++i) {
    GS_ASSIGN_OR_RETURN(CurvePoint point, ParseCurvePoint(curve[i], yaml::Index(curve_path, i)));
    m.curve.push_back(point);
  }
  return m;
}

Status ParseMixes(const YAML::Node& root, CapacityProfile& profile) {
  const YAML::Node n = root["mixes"];
  if (!n.IsDefined() || n.IsNull()) return FieldError(root, "mixes", "required field is missing");
  if (!n.IsSequence() || n.size() == 0) return FieldError(n, "mixes", "expected a non-empty list");
  for (size_t i = 0; i < n.size(); ++i) {
    GS_ASSIGN_OR_RETURN(MixProfile mix, ParseMix(n[i], yaml::Index("mixes", i)));
    profile.mixes.push_back(std::move(mix));
  }
  return OkStatus();
}

Result<profile::ProfileRole> ParseRole(const YAML::Node& root) {
  const YAML::Node n = root["role"];
  if (!n.IsDefined() || n.IsNull()) return profile::ProfileRole::kAggregated;
  GS_ASSIGN_OR_RETURN(std::string role, yaml::ReadString(root, "role", ""));
  if (role == "prefill") return profile::ProfileRole::kPrefill;
  if (role == "decode") return profile::ProfileRole::kDecode;
  return FieldError(n, "role",
                    fmt::format("expected prefill or decode (no role: an aggregated replica's "
                                "profile), got '{}'",
                                role));
}

// An aggregated profile's fit is what the slo policy reads; a role profile has none (the
// disagg policy reads each mix's capacity), so one beside a role is a file of two kinds.
Status ParseFitOfRole(const YAML::Node& root, CapacityProfile& p) {
  if (p.role == profile::ProfileRole::kAggregated) return ParseFit(root, p);
  const YAML::Node fit = root["fit"];
  if (!fit.IsDefined() || fit.IsNull()) return OkStatus();
  return FieldError(fit, "fit",
                    fmt::format("a {} role profile has no fit (the disagg policy reads each "
                                "mix's capacity); remove it, or remove role: for an aggregated "
                                "profile",
                                profile::ProfileRoleName(p.role)));
}

// A prefill replica makes the first token only: a mix asking more was not a prefill's.
Status CheckPrefillMixes(const YAML::Node& root, const CapacityProfile& p) {
  if (p.role != profile::ProfileRole::kPrefill) return OkStatus();
  for (size_t i = 0; i < p.mixes.size(); ++i) {
    if (p.mixes[i].mix.output_tokens == 1) continue;
    return FieldError(root["mixes"][i]["output_tokens"],
                      Join(yaml::Index("mixes", i), "output_tokens"),
                      fmt::format("expected 1 in a prefill profile (a prefill replica makes "
                                  "the first token only), got {}",
                                  p.mixes[i].mix.output_tokens));
  }
  return OkStatus();
}

Result<CapacityProfile> ParseProfileFields(const YAML::Node& root) {
  GS_RETURN_IF_ERROR(yaml::CheckKnownKeys(root, "",
                                          {"version", "model", "source", "role", "slo",
                                           "replica_model", "measurement", "fit", "mixes"}));
  GS_ASSIGN_OR_RETURN(int version, yaml::ReadInt(root, "version", ""));
  if (version != profile::kProfileVersion) {
    return FieldError(root["version"], "version",
                      fmt::format("unsupported version {}; this gpuscale reads version {}", version,
                                  profile::kProfileVersion));
  }
  CapacityProfile p;
  GS_ASSIGN_OR_RETURN(p.model, ReadText(root, "model", ""));
  GS_ASSIGN_OR_RETURN(p.source, ReadText(root, "source", ""));
  GS_ASSIGN_OR_RETURN(p.role, ParseRole(root));
  GS_ASSIGN_OR_RETURN(p.slo, ParseSlo(root));
  if (const YAML::Node m = root["replica_model"]; m.IsDefined() && !m.IsNull()) {
    GS_ASSIGN_OR_RETURN(p.replica_model, ParseReplicaModel(m, p.model));
  }
  GS_ASSIGN_OR_RETURN(p.measurement, ParseMeasurement(root["measurement"]));
  GS_RETURN_IF_ERROR(ParseFitOfRole(root, p));
  GS_RETURN_IF_ERROR(ParseMixes(root, p));
  GS_RETURN_IF_ERROR(CheckPrefillMixes(root, p));
  return p;
}

}  // namespace

namespace {

// What a reader of the file learns from its fit (aggregated) or its mixes (a role's).
std::string FitYaml(const CapacityProfile& p) {
  switch (p.role) {
    case profile::ProfileRole::kPrefill:
      return "# What the disagg policy reads: each mix's capacity_tokens_per_second, the prompt\n"
             "# tokens/s one prefill replica sustains within the TTFT target.\n";
    case profile::ProfileRole::kDecode:
      return "# What the disagg policy reads: each mix's capacity_tokens_per_second, the\n"
             "# generated tokens/s one decode replica sustains within the TPOT target.\n";
    case profile::ProfileRole::kAggregated:
      break;
  }
  return fmt::format(
      "# What the slo policy reads (token mode): a generated token costs output_token_weight\n"
      "# prompt tokens; one replica sustains capacity_tokens_per_second of them at the SLO.\n"
      "fit:\n  output_token_weight: {}\n  capacity_tokens_per_second: {}\n"
      "  max_error_ratio: {}\n",
      Num(p.output_token_weight), Num(p.capacity_tokens_per_second), Num(p.fit_max_error_ratio));
}

}  // namespace

std::string ProfileToYaml(const CapacityProfile& p) {
  std::string out =
      "# The capacity of one replica at a latency SLO, measured by `gpuscale profile`\n"
      "# (docs/profiles.md explains every field). Rates in requests/s, latencies in seconds.\n";
  out += fmt::format("version: {}\nmodel: {}\nsource: {}\n", profile::kProfileVersion,
                     Quote(p.model), Quote(p.source));
  // Written only for a role: an aggregated profile reads as it did before roles existed.
  if (p.role != profile::ProfileRole::kAggregated) {
    out += fmt::format("role: {}\n", profile::ProfileRoleName(p.role));
  }
  out += fmt::format("slo: {{ttft_seconds: {}, tpot_seconds: {}, target_ratio: {}}}\n",
                     Num(p.slo.ttft_seconds), Num(p.slo.tpot_seconds), Num(p.slo.target_ratio));
  if (p.replica_model) {
    const sim::ReplicaModelConfig& m = *p.replica_model;
    out += fmt::format(
        "replica_model: {{gpu: {}, tensor_parallel: {}, max_batch_size: {}, "
        "max_batched_tokens: {}, kv_cache_tokens: {}}}\n",
        Quote(m.gpu), m.tensor_parallel, m.max_batch_size, m.max_batched_tokens, m.kv_cache_tokens);
  }
  const profile::Measurement& m = p.measurement;
  out +=
      fmt::format("measurement: {{method: {}, point_seconds: {}, warmup_seconds: {}, seed: {}}}\n",
                  Quote(m.method), Num(m.point_seconds), Num(m.warmup_seconds), m.seed);
  out += FitYaml(p);
  out += "mixes:\n";
  for (const MixProfile& mix : p.mixes) out += MixYaml(mix);
  return out;
}

Result<CapacityProfile> ParseProfile(const YAML::Node& root) {
  if (!root.IsMap()) {
    return FieldError(root, "<root>",
                      "expected a mapping with version, model, source, slo, fit and mixes "
                      "(docs/profiles.md)");
  }
  try {
    return ParseProfileFields(root);
  } catch (const YAML::Exception& e) {
    // yaml-cpp throws on shapes the readers above do not expect (e.g. a list where a
    // mapping's key was looked up); report it where it happened.
    return InvalidArgument(fmt::format("malformed profile: {} (line {})", e.msg, e.mark.line + 1),
                           "<root>");
  }
}

Result<CapacityProfile> ParseProfileText(std::string_view text, std::string_view source) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::ParseYaml(text, source));
  return ParseProfile(root);
}

Result<CapacityProfile> LoadProfileFile(const std::string& path) {
  GS_ASSIGN_OR_RETURN(YAML::Node root, yaml::LoadYamlFile(path));
  return ParseProfile(root);
}

}  // namespace gpuscale::config
