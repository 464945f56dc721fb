// `gpuscale profile`: measures one replica's capacity at an SLO per request mix, fits the
// slo policy's work model to it and writes a capacity profile (profile/capacity_profile.h,
// config/profile_file.h; docs/profiles.md). Two sources: the simulator's replica model
// (--sim CONFIG: deterministic, seconds) or a live endpoint (--url: minutes of real load).
// With --role prefill|decode it profiles the replica of one pool of a disaggregated service
// instead (profile_roles.h). The profile goes to stdout (table, or -o json) and with --out to
// a YAML file; progress to stderr.
#include <fmt/format.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/endpoint_probe.h"
#include "cli/profile_roles.h"
#include "config/profile_file.h"
#include "config/sim_config.h"
#include "profile/capacity_search.h"
#include "profile/role_profile.h"
#include "profile/sim_probe.h"

namespace gpuscale::cli {
namespace {

using ojson = nlohmann::ordered_json;

// --url's warm-up per step, wall seconds: long enough for a replica to fill its batch at the
// step's rate (a request of the default mixes runs a few seconds on vLLM), short beside the
// 30 s step it precedes.
constexpr double kEndpointWarmup = 10;

constexpr char kHelpFooter[] = R"(
Modes (exactly one):
  --sim CONFIG  one simulated replica of CONFIG's replica_model, judged against its slo;
                the rate is bisected per mix (deterministic for a --seed).
  --url URL     a live OpenAI-compatible endpoint (one replica), judged against --ttft,
                --tpot and --target; the rate rises by --step-factor per step of --duration
                seconds (after --warmup unscored ones) until a step misses, then --refine
                bisections.
Per mix: capacity = the highest Poisson rate at which --target of requests kept TTFT and
TPOT within the SLO. Across mixes: 1/capacity = (prompt + w x output) / C, fitted by least
squares; w is the slo policy's output_token_weight, C its
initial_capacity_tokens_per_second (a policy reads both with `slo: {profile: FILE}`).
With --role prefill|decode: the replica of one pool of a disaggregated service, whose
profile the disagg policy reads (`disagg: {role: ..., profile: FILE}`); no fit, each mix's
capacity in the role's tokens/s. --sim: sim/role_capacity's figures for the replica model
(prefill: prompt tokens/s within the TTFT target; decode: generated tokens/s within the TPOT
target). --url (prefill only): the steps above on PROMPT:1 completions (default mixes
512:1 2048:1 8192:1).
JSON output (-o json): the profile file's fields (docs/profiles.md).)";

struct ProfileFlags {
  std::string sim_config;
  std::string url;
  std::string model;
  std::string role;  // empty: an aggregated replica
  std::vector<std::string> mixes;
  double duration = 0;  // 0: the mode's default
  double warmup = 60;   // --sim's default; --url's is kEndpointWarmup
  uint64_t seed = 1;
  double start_rate = 1;
  double step_factor = 1.5;
  double max_rate = 1000;
  int refine = 2;
  int32_t max_in_flight = 2048;
  double drain_timeout = 60;
  double request_timeout = 60;
  bool no_ignore_eos = false;
  sim::SloSpec slo;
  std::string out_path;
  OutputFormat format = OutputFormat::kTable;
  std::vector<CLI::Option*> endpoint_only;  // flags that mean nothing with --sim
  // Flags that mean nothing with --sim --role (the model's figures have no load points).
  std::vector<CLI::Option*> measurement_options;
  CLI::Option* warmup_option = nullptr;
};

Result<profile::Mix> ParseMix(const std::string& text) {
  const size_t colon = text.find(':');
  profile::Mix mix;
  auto number = [](std::string_view s, int32_t& out) {
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return ec == std::errc() && ptr == s.data() + s.size() && out >= 1;
  };
  if (colon == std::string::npos ||
      !number(std::string_view(text).substr(0, colon), mix.prompt_tokens) ||
      !number(std::string_view(text).substr(colon + 1), mix.output_tokens)) {
    return InvalidArgument(
        fmt::format("expected PROMPT:OUTPUT tokens, both >= 1 (e.g. 1024:256), got '{}'", text),
        "--mix");
  }
  return mix;
}

Result<std::vector<profile::Mix>> ParseMixes(const ProfileFlags& flags, profile::ProfileRole role) {
  const bool aggregated = role == profile::ProfileRole::kAggregated;
  if (flags.mixes.empty())
    return aggregated ? profile::DefaultMixes() : profile::DefaultPrefillMixes();
  std::vector<profile::Mix> mixes;
  for (const std::string& text : flags.mixes) {
    GS_ASSIGN_OR_RETURN(profile::Mix mix, ParseMix(text));
    mixes.push_back(mix);
  }
  // A role profile keeps each mix's capacity: nothing is fitted across them.
  GS_RETURN_IF_ERROR(aggregated ? profile::CheckFittable(mixes, "--mix")
                                : profile::CheckRoleMixes(role, mixes, "--mix"));
  return mixes;
}

void PrintPoint(std::ostream& err, const profile::Mix& mix, const profile::CurvePoint& p,
                bool held) {
  err << fmt::format(
      "profile: {}:{} at {:.3f} req/s: attainment {:.4f} of {} (TTFT p99 {:.3f} s, TPOT p99 "
      "{:.4f} s) {}\n",
      mix.prompt_tokens, mix.output_tokens, p.rate_rps, p.attainment, p.requests,
      p.ttft_p99_seconds, p.tpot_p99_seconds, held ? "held" : "missed");
}

Result<profile::CapacityProfile> ProfileSimulated(const ProfileFlags& flags,
                                                  const std::vector<profile::Mix>& mixes,
                                                  std::ostream& err) {
  for (const CLI::Option* option : flags.endpoint_only) {
    if (option->count() > 0) {
      return InvalidArgument(
          "applies to --url only (with --sim the config's slo and the bisection decide)",
          option->get_name());
    }
  }
  GS_ASSIGN_OR_RETURN(ProfiledSimReplica replica, LoadProfiledSimReplica(flags.sim_config));
  profile::CapacityProfile result;
  result.model = replica.config.model.model;
  result.source = "simulator";
  result.slo = replica.config.slo;
  result.replica_model = replica.config.model;
  result.measurement = {"bisection", flags.duration > 0 ? flags.duration : 300, flags.warmup,
                        flags.seed};
  profile::SimReplicaProbe probe(
      *replica.model, result.slo,
      {result.measurement.warmup_seconds, result.measurement.point_seconds, flags.seed});
  const profile::SearchProgress progress = [&err](const profile::Mix& mix,
                                                  const profile::CurvePoint& p,
                                                  bool held) { PrintPoint(err, mix, p, held); };
  for (const profile::Mix& mix : mixes) {
    GS_ASSIGN_OR_RETURN(profile::MixProfile measured,
                        profile::BisectCapacity(probe, mix, result.slo.target_ratio, {}, progress));
    result.mixes.push_back(std::move(measured));
  }
  return result;
}

Status CheckEndpointFlags(const ProfileFlags& flags) {
  if (!(flags.slo.ttft_seconds > 0) || !(flags.slo.tpot_seconds > 0)) {
    return InvalidArgument("expected seconds > 0",
                           !(flags.slo.ttft_seconds > 0) ? "--ttft" : "--tpot");
  }
  if (!(flags.slo.target_ratio > 0 && flags.slo.target_ratio <= 1)) {
    return InvalidArgument("expected a share in (0, 1]", "--target");
  }
  if (!(flags.start_rate > 0) || !(flags.max_rate >= flags.start_rate)) {
    return InvalidArgument("expected 0 < --start-rate <= --max-rate", "--start-rate");
  }
  if (!(flags.step_factor > 1)) return InvalidArgument("expected a factor > 1", "--step-factor");
  if (flags.refine < 0) return InvalidArgument("expected 0 or more", "--refine");
  return OkStatus();
}

Result<profile::CapacityProfile> ProfileEndpoint(const ProfileFlags& flags,
                                                 const std::vector<profile::Mix>& mixes,
                                                 std::ostream& err) {
  GS_RETURN_IF_ERROR(CheckEndpointFlags(flags));
  EndpointProbeOptions options;
  options.url = flags.url;
  options.model = flags.model;
  options.slo = flags.slo;
  options.step_seconds = flags.duration > 0 ? flags.duration : 30;
  options.warmup_seconds = flags.warmup_option->count() > 0 ? flags.warmup : kEndpointWarmup;
  options.drain_timeout_seconds = flags.drain_timeout;
  options.request_timeout_seconds = flags.request_timeout;
  options.max_in_flight = flags.max_in_flight;
  options.seed = flags.seed;
  options.ignore_eos = !flags.no_ignore_eos;
  EndpointProbe probe(options);
  const profile::StepOptions steps{flags.start_rate, flags.step_factor, flags.max_rate,
                                   flags.refine};
  const profile::SearchProgress progress = [&err](const profile::Mix& mix,
                                                  const profile::CurvePoint& p,
                                                  bool held) { PrintPoint(err, mix, p, held); };
  profile::CapacityProfile result;
  result.source = flags.url;
  result.slo = flags.slo;
  result.measurement = {"steps", options.step_seconds, options.warmup_seconds, flags.seed};
  for (const profile::Mix& mix : mixes) {
    GS_ASSIGN_OR_RETURN(profile::MixProfile measured,
                        profile::StepCapacity(probe, mix, flags.slo.target_ratio, steps, progress));
    result.mixes.push_back(std::move(measured));
  }
  result.model = probe.model();
  return result;
}

ojson MixJson(const profile::MixProfile& m) {
  ojson curve = ojson::array();
  for (const profile::CurvePoint& c : m.curve) {
    curve.push_back({{"rate_rps", c.rate_rps},
                     {"requests", c.requests},
                     {"attainment", c.attainment},
                     {"ttft_p50_seconds", c.ttft_p50_seconds},
                     {"ttft_p99_seconds", c.ttft_p99_seconds},
                     {"tpot_p50_seconds", c.tpot_p50_seconds},
                     {"tpot_p99_seconds", c.tpot_p99_seconds}});
  }
  return {{"prompt_tokens", m.mix.prompt_tokens},
          {"output_tokens", m.mix.output_tokens},
          {"capacity_rps", m.capacity_rps},
          {"capacity_tokens_per_second", m.capacity_tokens_per_second},
          {"curve", std::move(curve)}};
}

// The profile file's fields, in its order (config/profile_file.h).
ojson ProfileJson(const profile::CapacityProfile& p) {
  ojson mixes = ojson::array();
  for (const profile::MixProfile& m : p.mixes) mixes.push_back(MixJson(m));
  ojson out{{"version", profile::kProfileVersion}, {"model", p.model}, {"source", p.source}};
  if (p.role != profile::ProfileRole::kAggregated) out["role"] = profile::ProfileRoleName(p.role);
  out["slo"] = {{"ttft_seconds", p.slo.ttft_seconds},
                {"tpot_seconds", p.slo.tpot_seconds},
                {"target_ratio", p.slo.target_ratio}};
  if (p.replica_model) {
    out["replica_model"] = {{"gpu", p.replica_model->gpu},
                            {"tensor_parallel", p.replica_model->tensor_parallel},
                            {"max_batch_size", p.replica_model->max_batch_size},
                            {"max_batched_tokens", p.replica_model->max_batched_tokens},
                            {"kv_cache_tokens", p.replica_model->kv_cache_tokens}};
  }
  out["measurement"] = {{"method", p.measurement.method},
                        {"point_seconds", p.measurement.point_seconds},
                        {"warmup_seconds", p.measurement.warmup_seconds},
                        {"seed", p.measurement.seed}};
  if (p.role == profile::ProfileRole::kAggregated) {
    out["fit"] = {{"output_token_weight", p.output_token_weight},
                  {"capacity_tokens_per_second", p.capacity_tokens_per_second},
                  {"max_error_ratio", p.fit_max_error_ratio}};
  }
  out["mixes"] = std::move(mixes);
  return out;
}

// The capacities: an aggregated profile's beside its fit's prediction, a role's in the
// role's tokens (no fit).
void PrintCapacities(const profile::CapacityProfile& p, std::ostream& out) {
  const bool aggregated = p.role == profile::ProfileRole::kAggregated;
  const char* tokens = p.role == profile::ProfileRole::kPrefill ? "PROMPT tok/s" : "OUTPUT tok/s";
  const std::string header = fmt::format("{:<14} {:>12} {:>14}", "MIX (P:O)", "CAPACITY r/s",
                                         aggregated ? "WORK tok/s" : tokens);
  out << header << (aggregated ? fmt::format(" {:>12}", "FIT r/s") : "") << "\n";
  for (const profile::MixProfile& m : p.mixes) {
    const std::string mix = fmt::format("{}:{}", m.mix.prompt_tokens, m.mix.output_tokens);
    if (!aggregated) {
      out << fmt::format("{:<14} {:>12.3f} {:>14.0f}\n", mix, m.capacity_rps,
                         m.capacity_tokens_per_second);
      continue;
    }
    const double fit = p.capacity_tokens_per_second /
                       (m.mix.prompt_tokens + p.output_token_weight * m.mix.output_tokens);
    out << fmt::format("{:<14} {:>12.3f} {:>14.0f} {:>12.3f}\n", mix, m.capacity_rps,
                       m.capacity_tokens_per_second, fit);
  }
  if (!aggregated) return;
  out << fmt::format(
      "fit: output_token_weight {:.3f}, capacity_tokens_per_second {:.0f} "
      "(largest error {:.1f} %)\n",
      p.output_token_weight, p.capacity_tokens_per_second, p.fit_max_error_ratio * 100);
}

void PrintTable(const profile::CapacityProfile& p, std::ostream& out) {
  const std::string role = p.role == profile::ProfileRole::kAggregated
                               ? ""
                               : fmt::format(" {} replica", profile::ProfileRoleName(p.role));
  out << fmt::format("profile: {}{} ({}), SLO TTFT <= {} s, TPOT <= {} s for {} of requests\n",
                     p.model, role, p.source, p.slo.ttft_seconds, p.slo.tpot_seconds,
                     p.slo.target_ratio);
  PrintCapacities(p, out);
  for (const profile::MixProfile& m : p.mixes) {
    if (m.curve.empty()) continue;  // a role profile from the replica model
    out << fmt::format("\ncurve {}:{} (seconds)\n{:>12} {:>8} {:>10} {:>10} {:>10} {:>10}\n",
                       m.mix.prompt_tokens, m.mix.output_tokens, "RATE r/s", "ATTAIN", "TTFT p50",
                       "TTFT p99", "TPOT p50", "TPOT p99");
    for (const profile::CurvePoint& c : m.curve) {
      out << fmt::format("{:>12.3f} {:>8.4f} {:>10.4f} {:>10.4f} {:>10.5f} {:>10.5f}\n", c.rate_rps,
                         c.attainment, c.ttft_p50_seconds, c.ttft_p99_seconds, c.tpot_p50_seconds,
                         c.tpot_p99_seconds);
    }
  }
}

Status WriteProfile(const profile::CapacityProfile& p, const std::string& path) {
  std::ofstream file(path, std::ios::binary);
  file << config::ProfileToYaml(p);
  file.close();
  // A full disk or a missing folder is no usage error (exit 1, not 2): the flag was right.
  if (!file) {
    return Unavailable(fmt::format("cannot write '{}': {}", path, std::strerror(errno)), "--out");
  }
  return OkStatus();
}

// A role's profile (profile_roles.h); the flags that shape load tests mean nothing to the
// replica model's figures, so they are refused there rather than ignored.
Result<profile::CapacityProfile> MeasureRole(const ProfileFlags& flags, profile::ProfileRole role,
                                             std::ostream& err) {
  if (!flags.sim_config.empty()) {
    std::vector<CLI::Option*> unused = flags.measurement_options;
    unused.insert(unused.end(), flags.endpoint_only.begin(), flags.endpoint_only.end());
    for (const CLI::Option* option : unused) {
      if (option->count() == 0) continue;
      return InvalidArgument(
          "does not apply to --sim with --role: the capacities are the replica model's "
          "(sim/role_capacity.h), at the config's slo",
          option->get_name());
    }
    return ProfileRoleFromModel(flags.sim_config, role);
  }
  GS_RETURN_IF_ERROR(CheckRoleEndpoint(role));
  GS_ASSIGN_OR_RETURN(std::vector<profile::Mix> mixes, ParseMixes(flags, role));
  GS_ASSIGN_OR_RETURN(profile::CapacityProfile result, ProfileEndpoint(flags, mixes, err));
  result.role = role;
  profile::ApplyRoleCapacities(result);
  return result;
}

// An aggregated replica's profile, fitted. Errors: the measurement's; the fit's, after the
// capacities measured are printed to `err` (they took a while).
Result<profile::CapacityProfile> MeasureAggregated(const ProfileFlags& flags, std::ostream& err) {
  GS_ASSIGN_OR_RETURN(std::vector<profile::Mix> mixes,
                      ParseMixes(flags, profile::ProfileRole::kAggregated));
  GS_ASSIGN_OR_RETURN(profile::CapacityProfile result, flags.sim_config.empty()
                                                           ? ProfileEndpoint(flags, mixes, err)
                                                           : ProfileSimulated(flags, mixes, err));
  if (Status fit = profile::ApplyFit(result); !fit) {
    for (const profile::MixProfile& m : result.mixes) {
      err << fmt::format("profile: {}:{} capacity {:.4g} req/s\n", m.mix.prompt_tokens,
                         m.mix.output_tokens, m.capacity_rps);
    }
    return Unexpected<Error>(fit.error());
  }
  return result;
}

Result<profile::CapacityProfile> Measure(const ProfileFlags& flags, std::ostream& err) {
  if (flags.sim_config.empty() == flags.url.empty()) {
    return InvalidArgument(
        "give exactly one of --sim CONFIG (the simulator) and --url URL (a live endpoint)",
        "--sim");
  }
  if (flags.duration < 0 || flags.warmup < 0) {
    return InvalidArgument("expected seconds >= 0", flags.duration < 0 ? "--duration" : "--warmup");
  }
  if (flags.role.empty()) return MeasureAggregated(flags, err);
  GS_ASSIGN_OR_RETURN(profile::ProfileRole role, ParseProfileRoleFlag(flags.role));
  return MeasureRole(flags, role, err);
}

int RunProfile(const ProfileFlags& flags, CommandContext& ctx) {
  Result<profile::CapacityProfile> result = Measure(flags, ctx.err);
  if (!result) return ctx.Fail(result.error());
  *result = profile::RoundedForOutput(*result);
  if (!flags.out_path.empty()) {
    if (Status written = WriteProfile(*result, flags.out_path); !written) {
      return ctx.Fail(written.error());
    }
    ctx.err << "profile: wrote " << flags.out_path << "\n";
  }
  if (flags.format == OutputFormat::kJson) {
    ctx.out << ProfileJson(*result).dump(2) << "\n";
  } else {
    PrintTable(*result, ctx.out);
  }
  return kExitOk;
}

void AddEndpointFlags(CLI::App* cmd, ProfileFlags& f) {
  auto only = [&f](CLI::Option* option) { f.endpoint_only.push_back(option); };
  only(cmd->add_option("--model", f.model,
                       "--url: model to request (default: first of /v1/models)"));
  only(cmd->add_option("--ttft", f.slo.ttft_seconds, "--url: TTFT target, seconds")
           ->capture_default_str());
  only(cmd->add_option("--tpot", f.slo.tpot_seconds, "--url: time per output token target, seconds")
           ->capture_default_str());
  only(cmd->add_option("--target", f.slo.target_ratio,
                       "--url: share of requests that must meet both targets")
           ->capture_default_str());
  only(cmd->add_option("--start-rate", f.start_rate, "--url: first step, requests/s")
           ->capture_default_str());
  only(cmd->add_option("--step-factor", f.step_factor, "--url: each step's rate over the last")
           ->capture_default_str());
  only(cmd->add_option("--max-rate", f.max_rate, "--url: no step above this rate")
           ->capture_default_str());
  only(cmd->add_option("--refine", f.refine,
                       "--url: bisections between the last rate that held and the first miss")
           ->capture_default_str());
  only(cmd->add_option("--max-in-flight", f.max_in_flight,
                       "--url: most requests running at once (keep above what a replica holds)")
           ->capture_default_str());
  only(cmd->add_option("--drain-timeout", f.drain_timeout,
                       "--url: how long a step's requests may run past it (then: misses)")
           ->capture_default_str());
  only(cmd->add_option("--request-timeout", f.request_timeout,
                       "--url: longest silence inside one response")
           ->capture_default_str());
  only(cmd->add_flag("--no-ignore-eos", f.no_ignore_eos,
                     "--url: do not send ignore_eos (outputs may end before the mix's length)"));
}

}  // namespace

void AddProfileCommands(CLI::App& app, CommandContext& ctx) {
  auto f = std::make_shared<ProfileFlags>();
  CLI::App* cmd = app.add_subcommand(
      "profile",
      "Measure one replica's capacity at the SLO per request mix (simulator or live endpoint) "
      "and write the capacity profile the slo policy reads");
  cmd->footer(kHelpFooter);
  CLI::Option* sim = cmd->add_option("--sim", f->sim_config,
                                     "Simulation config whose replica_model and slo to profile");
  cmd->add_option("--url", f->url, "Base URL of a live OpenAI-compatible endpoint")->excludes(sim);
  cmd->add_option("--role", f->role,
                  "prefill or decode: profile the replica of one pool of a disaggregated "
                  "service (the disagg policy's profile); default: an aggregated replica");
  f->measurement_options = {
      cmd->add_option("--mix", f->mixes,
                      "PROMPT:OUTPUT tokens, repeatable (default 256:64 1024:256 2048:128 "
                      "4096:64 512:1024; --role prefill: 512:1 2048:1 8192:1)"),
      cmd->add_option("--duration", f->duration,
                      "Seconds of load per measured point: simulated seconds after the warm-up "
                      "(--sim, default 300) or wall seconds per step (--url, default 30)")};
  f->warmup_option = cmd->add_option(
      "--warmup", f->warmup,
      "Unscored seconds of load at the point's rate before it is measured: simulated (--sim, "
      "default 60) or wall seconds (--url, default 10)");
  f->measurement_options.push_back(f->warmup_option);
  f->measurement_options.push_back(
      cmd->add_option("--seed", f->seed, "Seed of the Poisson arrivals")->capture_default_str());
  AddEndpointFlags(cmd, *f);
  cmd->add_option("--out", f->out_path, "Write the profile (YAML) to this file");
  AddOutputOption(cmd, f->format);
  cmd->callback([f, &ctx] { RunProfile(*f, ctx); });
}

}  // namespace gpuscale::cli
