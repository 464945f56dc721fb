// `gpuscale profile`: measures one replica's capacity at an SLO per request mix, fits the
// slo policy's work model to it and writes a capacity profile (profile/capacity_profile.h,
// config/profile_file.h; docs/profiles.md). Two sources: the simulator's replica model
// (--sim CONFIG: deterministic, seconds) or a live endpoint (--url: minutes of real load).
// The profile goes to stdout (table, or -o json) and with --out to a YAML file; progress to
// stderr.
#include <fmt/format.h>

#include <charconv>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli/endpoint_probe.h"
#include "config/profile_file.h"
#include "config/sim_config.h"
#include "profile/capacity_search.h"
#include "profile/sim_probe.h"

namespace gpuscale::cli {
namespace {

using ojson = nlohmann::ordered_json;

constexpr char kHelpFooter[] = R"(
Modes (exactly one):
  --sim CONFIG  one simulated replica of CONFIG's replica_model, judged against its slo;
                the rate is bisected per mix (deterministic for a --seed).
  --url URL     a live OpenAI-compatible endpoint (one replica), judged against --ttft,
                --tpot and --target; the rate rises by --step-factor per step of --duration
                seconds until a step misses, then --refine bisections.
Per mix: capacity = the highest Poisson rate at which --target of requests kept TTFT and
TPOT within the SLO. Across mixes: 1/capacity = (prompt + w x output) / C, fitted by least
squares; w is the slo policy's output_token_weight, C its
initial_capacity_tokens_per_second (a policy reads both with `slo: {profile: FILE}`).
JSON output (-o json): the profile file's fields (docs/profiles.md).)";

struct ProfileFlags {
  std::string sim_config;
  std::string url;
  std::string model;
  std::vector<std::string> mixes;
  double duration = 0;  // 0: the mode's default
  double warmup = 60;
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

Result<std::vector<profile::Mix>> ParseMixes(const ProfileFlags& flags) {
  if (flags.mixes.empty()) return profile::DefaultMixes();
  std::vector<profile::Mix> mixes;
  for (const std::string& text : flags.mixes) {
    GS_ASSIGN_OR_RETURN(profile::Mix mix, ParseMix(text));
    mixes.push_back(mix);
  }
  GS_RETURN_IF_ERROR(profile::CheckFittable(mixes, "--mix"));
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

// The sim config's sections and the replica model they describe, errors naming the file.
struct SimReplica {
  sim::SimulationConfig config;
  std::unique_ptr<sim::ReplicaModel> model;
};

Result<SimReplica> LoadSimReplica(const std::string& path) {
  auto named = [&path](Error e) {
    e.message = fmt::format("{}: {}", path, e.message);
    return Unexpected<Error>(std::move(e));
  };
  Result<sim::SimulationConfig> config = config::LoadSimConfigSections(path);
  if (!config) return named(config.error());
  Result<std::unique_ptr<sim::ReplicaModel>> model = sim::MakeReplicaModel(config->model);
  if (!model) {
    Error e = model.error();
    e.field = e.field.empty() ? "replica_model" : "replica_model." + e.field;
    return named(std::move(e));
  }
  return SimReplica{std::move(*config), std::move(*model)};
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
  GS_ASSIGN_OR_RETURN(SimReplica replica, LoadSimReplica(flags.sim_config));
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
  if (flags.warmup_option->count() > 0) {
    return InvalidArgument("applies to --sim only (each endpoint step is scored whole)",
                           "--warmup");
  }
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
  result.measurement = {"steps", options.step_seconds, 0, flags.seed};
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
  ojson out{{"version", profile::kProfileVersion},
            {"model", p.model},
            {"source", p.source},
            {"slo",
             {{"ttft_seconds", p.slo.ttft_seconds},
              {"tpot_seconds", p.slo.tpot_seconds},
              {"target_ratio", p.slo.target_ratio}}}};
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
  out["fit"] = {{"output_token_weight", p.output_token_weight},
                {"capacity_tokens_per_second", p.capacity_tokens_per_second},
                {"max_error_ratio", p.fit_max_error_ratio}};
  out["mixes"] = std::move(mixes);
  return out;
}

void PrintTable(const profile::CapacityProfile& p, std::ostream& out) {
  out << fmt::format("profile: {} ({}), SLO TTFT <= {} s, TPOT <= {} s for {} of requests\n",
                     p.model, p.source, p.slo.ttft_seconds, p.slo.tpot_seconds, p.slo.target_ratio);
  out << fmt::format("{:<14} {:>12} {:>14} {:>12}\n", "MIX (P:O)", "CAPACITY r/s", "WORK tok/s",
                     "FIT r/s");
  for (const profile::MixProfile& m : p.mixes) {
    const double fit = p.capacity_tokens_per_second /
                       (m.mix.prompt_tokens + p.output_token_weight * m.mix.output_tokens);
    out << fmt::format("{:<14} {:>12.3f} {:>14.0f} {:>12.3f}\n",
                       fmt::format("{}:{}", m.mix.prompt_tokens, m.mix.output_tokens),
                       m.capacity_rps, m.capacity_tokens_per_second, fit);
  }
  out << fmt::format(
      "fit: output_token_weight {:.3f}, capacity_tokens_per_second {:.0f} "
      "(largest error {:.1f} %)\n",
      p.output_token_weight, p.capacity_tokens_per_second, p.fit_max_error_ratio * 100);
  for (const profile::MixProfile& m : p.mixes) {
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
  if (!file) return InvalidArgument(fmt::format("cannot write '{}'", path), "--out");
  return OkStatus();
}

int RunProfile(const ProfileFlags& flags, CommandContext& ctx) {
  if (flags.sim_config.empty() == flags.url.empty()) {
    return ctx.Fail(Error{ErrorCode::kInvalidArgument,
                          "give exactly one of --sim CONFIG (the simulator) and --url URL (a "
                          "live endpoint)",
                          "--sim"});
  }
  if (flags.duration < 0 || flags.warmup < 0) {
    return ctx.Fail(Error{ErrorCode::kInvalidArgument, "expected seconds >= 0",
                          flags.duration < 0 ? "--duration" : "--warmup"});
  }
  Result<std::vector<profile::Mix>> mixes = ParseMixes(flags);
  if (!mixes) return ctx.Fail(mixes.error());
  Result<profile::CapacityProfile> result = flags.sim_config.empty()
                                                ? ProfileEndpoint(flags, *mixes, ctx.err)
                                                : ProfileSimulated(flags, *mixes, ctx.err);
  if (!result) return ctx.Fail(result.error());
  if (Status fit = profile::ApplyFit(*result); !fit) {
    // The measurements took a while: keep them on stderr though no profile can be written.
    for (const profile::MixProfile& m : result->mixes) {
      ctx.err << fmt::format("profile: {}:{} capacity {:.4g} req/s\n", m.mix.prompt_tokens,
                             m.mix.output_tokens, m.capacity_rps);
    }
    return ctx.Fail(fit.error());
  }
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
  cmd->add_option("--mix", f->mixes,
                  "PROMPT:OUTPUT tokens, repeatable (default 256:64 1024:256 2048:128 "
                  "4096:64 512:1024)");
  cmd->add_option("--duration", f->duration,
                  "Seconds of load per measured point: simulated seconds after the warm-up "
                  "(--sim, default 300) or wall seconds per step (--url, default 30)");
  f->warmup_option =
      cmd->add_option("--warmup", f->warmup, "--sim: unscored simulated seconds before each point")
          ->capture_default_str();
  cmd->add_option("--seed", f->seed, "Seed of the Poisson arrivals")->capture_default_str();
  AddEndpointFlags(cmd, *f);
  cmd->add_option("--out", f->out_path, "Write the profile (YAML) to this file");
  AddOutputOption(cmd, f->format);
  cmd->callback([f, &ctx] { RunProfile(*f, ctx); });
}

}  // namespace gpuscale::cli
