// The daemon's configuration (`gpuscale serve --config gpuscale.yaml`): GPU backend, API
// listen address and token, state directory, control-loop period, and the services it
// manages. Also what POST/PUT /v1/services accept (a JSON body is read by the same parser,
// since yaml-cpp reads JSON), and what the store keeps as a service's spec.
//
//   gpu:      {backend: auto|nvml|nvidia-smi|simulated, inventory: FILE, nvidia_smi: PATH,
//              nvml_library: PATH, cache_ttl_seconds: 1, sample_interval_seconds: 5,
//              prices: {H100-80GB: 2.49, A100-80GB: 1.29}}
//             (prices: per GPU-hour by type key, for GPUs whose inventory entry names
//             none; unlisted types have an unknown price)
//   api:      {listen: "127.0.0.1:8080", token: "...", token_file: FILE,
//              max_connections: 4096, max_event_streams: 1024}
//             (token and token_file exclude each other; relative paths are relative to
//             the working directory)
//   gateway:  {listen: "127.0.0.1:8000", enabled: true, token: "...", token_file: FILE,
//              threads: 2, max_connections: 20000, queue_size: 1000,
//              queue_timeout_seconds: 300, upstream_timeout_seconds: 600,
//              router: {kind: least_outstanding, slow_start_seconds: 0,
//                       prefix_affinity: false, affinity_load_factor: 1.25}}
//             (the OpenAI-compatible front door; docs/gateway.md; `router` is read by
//             config/router_config.h, as the simulator's is, and may be a kind alone)
//   state_dir: ~/.local/state/gpuscale        (SQLite database, replica logs; a leading
//             "~/" is $HOME; default $XDG_STATE_HOME/gpuscale, else that)
//   loop_interval_seconds: 15
//   prometheus: {url: "http://127.0.0.1:9090", timeout_seconds: 5}   # optional, for PromQL
//   scrape:   {cutoff_ratio: 0.5, stale_after_ticks: 3, view_only_interval_seconds: 5}
//             (how long a tick waits for replica scrapes; ScrapeConfig below)
//   retention: {max_age_days: 7, max_megabytes: 1024}
//             (how much decision and event history the state database keeps; RetentionConfig)
//   tasks:    {recheck_interval_seconds: 2, max_head_skips: 3, stop_grace_seconds: 10}
//             (the experiment scheduler; docs/tasks.md "Daemon settings")
//   services:
//     - name: chat
//       command: [vllm, serve, Qwen/Qwen2.5-7B, --port, "{port}"]   # argv template, no shell
//       env: {HF_HOME: /data/hf}
//       models: [Qwen/Qwen2.5-7B, qwen]    # what clients send as `model`; default [name]
//       gpus_per_replica: 1
//       min_memory_free_mb: 20000
//       gpu_type: H100-80GB                      # optional: only GPUs of this type (the
//                                                  # key `gpuscale gpus` shows); local
//                                                  # engine, not disaggregated
//       variants:                                # optional, instead of gpu_type and
//         - {name: h100, gpu_type: H100-80GB,    # gpus_per_replica: a mixed fleet (issue
//            gpus_per_replica: 1, capacity: 2}   # 47, docs/cluster.md "Mixed fleets"), see
//         - {name: a100, gpu_type: A100-80GB,    # VariantConfig; local engine, not
//            spot: true, preemption_notice_seconds: 120}   # disaggregated
//       readiness_path: /health
//       metrics_path: /metrics
//       startup_timeout_seconds: 900
//       drain_timeout_seconds: 300
//       min_replicas: 1
//       max_replicas: 4
//       slo: {ttft_seconds: 1, tpot_seconds: 0.05}   # the latency SLO the replicas' TTFT and
//                                                  # TPOT histograms are read against: the
//                                                  # slo:*_violation_ratio:1m metrics the
//                                                  # `slo` policy scales on (defaults shown;
//                                                  # each in (0, 3600] seconds)
//       disaggregated: {...}                     # instead of command, env, gpus_per_replica,
//                                                  # min_memory_free_mb, min/max_replicas and
//                                                  # policy: two pools, see DisaggSpec,
//                                                  # docs/gateway.md ("The daemon") and
//                                                  # examples/disagg-service.yaml
//       policy: {family: target, target: {...}}   # config/policy_config.h envelope; the
//                                                  # service's min/max replicas apply to it
//                                                  # (set in both places they must agree;
//                                                  # set only in the policy, they are the
//                                                  # service's). No policy = `rules` whose
//                                                  # rules live in the store. An slo
//                                                  # policy's `profile: PATH` is relative to
//                                                  # this file's folder (the working
//                                                  # directory for a REST body) and must be
//                                                  # measured at the service's slo.
//
// Errors name the field path and line: `services[0].gpus_per_replica: expected an integer
// >= 0, got 'two' (line 12)`.
//
// Pure parsing (plus reading the token file); thread-compatible plain values.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "alloc/pool_budget.h"
#include "core/clock.h"
#include "core/result.h"
#include "gateway/gateway_config.h"
#include "gpumon/backend_factory.h"
#include "serve_config/slo_thresholds.h"
#include "state/retention_config.h"

namespace YAML {
class Node;
}

namespace gpuscale::daemon {

struct GpuConfig {
  gpu::BackendOptions backend;  // kind defaults to "auto"
  Seconds cache_ttl{1};         // gpu::Monitor snapshot cache
  Seconds sample_interval{5};   // gpu::Monitor sampler (history, /v1/gpus/history)

  friend bool operator==(const GpuConfig&, const GpuConfig&) = default;
};

struct ApiConfig {
  std::string host = "127.0.0.1";         // `listen: host:port`; loopback unless asked otherwise
  int port = 8080;                        // 0 = the kernel picks one (tests); printed at start-up
  std::string token;                      // bearer token; empty = no auth. token_file is read
                                          // into this at parse time (first line, trimmed).
  int max_connections = 4096;             // open API connections; past it new ones are closed
  int max_event_streams = 1024;           // open /v1/events/stream; past it 503
  int max_connections_per_client = 1024;  // per client address (0 = no cap)

  friend bool operator==(const ApiConfig&, const ApiConfig&) = default;
};

struct PrometheusConfig {
  std::string url;  // e.g. "http://127.0.0.1:9090"; empty = no Prometheus server
  Seconds timeout{5};

  friend bool operator==(const PrometheusConfig&, const PrometheusConfig&) = default;
};

// The `scrape:` section: how long a control tick waits for the replicas' /metrics
// (scrape/replica_scrapes.h). A scrape still in flight at the cutoff goes on into the next
// tick; its replica keeps its previous values meanwhile, for stale_after_ticks ticks at most.
struct ScrapeConfig {
  // `cutoff_ratio`: the share of the loop's current interval (loop_interval_seconds, or the
  // 1 s of a settling loop) that a tick's collect phase waits for scrapes, in (0, 1];
  // default 0.5. The phase ends sooner once every scrape it started has ended.
  double cutoff_ratio = 0.5;
  // `stale_after_ticks`: a replica whose scrapes have not answered for this many ticks is
  // reported stale (a metric error naming it) instead of keeping its last values; >= 1,
  // default 3.
  int stale_after_ticks = 3;
  // `view_only_interval_seconds`: how often the ready replicas of a service whose policy
  // reads none of their metrics (only the gateway's measurements, PromQL, or nothing) are
  // scraped: their scrapes then feed only the API's per-replica gauges, so a gateway-fronted
  // fleet is not scraped every tick for nothing. Draining replicas are scraped every tick
  // (their drain waits on the count). In (0, 3600]; default 5; at most the loop interval =
  // every tick.
  Seconds view_only_interval{5};

  friend bool operator==(const ScrapeConfig&, const ScrapeConfig&) = default;
};

// A service's `slurm:` block (engine: slurm): how to reach Slurm and what each replica's
// batch job asks for. docs/cluster.md explains every field.
struct SlurmServiceConfig {
  std::string transport = "cli";  // "cli" (sbatch/squeue/sinfo/scancel) or "rest" (slurmrestd)
  std::string url;                // rest: "http://host:6820"; required for rest
  std::string user;               // rest: X-SLURM-USER-NAME
  std::string token;              // rest: X-SLURM-USER-TOKEN (JWT); prefer token_file
  std::string token_file;         // rest: read (first line, trimmed) when the service starts
  std::string slurm_conf;         // cli: exported as SLURM_CONF; "" = inherit
  std::string bin_dir;            // cli: where sbatch & co. live; "" = PATH
  std::string partition;          // "" = the cluster's default
  std::string gres_type;          // --gres=gpu:<type>:N; "" = any GPU type
  std::string account;            // "" = the user's default
  int time_limit_minutes = 0;     // --time; 0 = the partition's default
  std::vector<std::string> extra_sbatch_args;  // cli only, e.g. ["--qos=inference"]
  int port_range_start = 20000;  // `port_range: [start, end]`, inclusive; replica ports
  int port_range_end = 20999;
  Seconds timeout{15};  // `timeout_seconds`: per Slurm command / request

  friend bool operator==(const SlurmServiceConfig&, const SlurmServiceConfig&) = default;
};

// One pool of a disaggregated service (`disaggregated: {prefill: {...}, decode: {...}}`): the
// replica fields that differ between the pools; the rest (models, paths, timeouts, slo) are
// the service's. Fields as in ServiceConfig.
struct PoolSpec {
  std::vector<std::string> command;  // required
  std::vector<std::pair<std::string, std::string>> env;
  int gpus_per_replica = 1;
  int64_t min_memory_free_mb = 0;
  int min_replicas = 1;
  int max_replicas = 1;
  // Default: {family: disagg, disagg: {role: <the pool's>}} (scale/disagg_policy.h), which
  // needs disagg.capacity_tokens_per_second; a disagg block's role defaults to the pool's.
  std::string policy_yaml;
  std::string policy_family;

  friend bool operator==(const PoolSpec&, const PoolSpec&) = default;
};

// A prefill/decode disaggregated service (issue 24; docs/gateway.md): two pools on one GPU
// budget (alloc::PoolBudget), scaled each by its own policy, routed in two steps by the
// gateway. engine: local only.
struct DisaggSpec {
  int gpu_budget = 0;  // GPUs both pools together may hold; >= the pools' minimums, required
  PoolSpec prefill;
  PoolSpec decode;

  friend bool operator==(const DisaggSpec&, const DisaggSpec&) = default;
};

// One way a replica of a mixed-fleet service may run (`variants:`, issue 47): a GPU type and
// shape, with the replica's capacity relative to the first variant's. Its price per GPU-hour
// is the inventory's for the type (gpu.prices, an inventory's `prices` or a GPU's
// price_per_hour), looked up when the service starts; the read itself is config/
// sim_variant_config.h's, shared with the simulator (VariantDialect::kDaemon).
struct VariantConfig {
  std::string name;          // [a-z0-9][a-z0-9-]*, unique in the service; in replica ids
  std::string gpu_type;      // type key (gpu/gpu_type.h), required
  int gpus_per_replica = 1;  // >= 1
  // `capacity`: what one replica serves relative to one of the first variant (> 0, default
  // 1); with `profile: FILE` on every variant instead, the profiles' capacities' ratio. The
  // policy's replica counts are in first-variant replicas, and the gateway weights each
  // replica's share of requests by it.
  double capacity = 1;
  bool spot = false;  // preemptible: a provider's notice (POST .../preempt) may reclaim it
  // `preemption_notice_seconds` (spot only): the notice a preempt call without one gets.
  Seconds preemption_notice{120};

  friend bool operator==(const VariantConfig&, const VariantConfig&) = default;
};

// The largest max_replicas a service may have: far above any fleet gpuscale runs, and low
// enough that replica arithmetic (replicas x GPUs, policy ratios) never overflows.
inline constexpr int kMaxReplicasPerService = 100000;

struct ServiceConfig {
  std::string name;  // [a-z0-9][a-z0-9-]{0,62}; unique
  // "local" (processes on this machine), "slurm", or "fleet" (replicas emulated by a
  // `gpuscale fleet` process, for tests at fleet scale: orch/fleet_orchestrator.h)
  std::string engine = "local";
  SlurmServiceConfig slurm;          // read only with engine: slurm
  std::string fleet_url;             // engine: fleet: `fleet: {url: http://host:port}`
  std::vector<std::string> command;  // argv template, required
  std::vector<std::pair<std::string, std::string>> env;  // in file order
  // `models: [...]`: the model names the gateway routes to this service (the request's
  // `model` field). Empty = the service's name. Use ServedModels() to read it.
  std::vector<std::string> models;
  int gpus_per_replica = 1;
  int64_t min_memory_free_mb = 0;
  // `gpu_type`: type key (gpu/gpu_type.h) every replica's GPUs must have; "" = any type.
  std::string gpu_type;
  // `variants`: the GPU types and shapes its replicas may run on (a mixed fleet); empty = one
  // shape (gpus_per_replica, gpu_type). With variants, gpus_per_replica is the first's.
  std::vector<VariantConfig> variants;
  std::string readiness_path = "/health";
  std::string metrics_path = "/metrics";
  Seconds startup_timeout{900};
  Seconds drain_timeout{300};
  int min_replicas = 1;
  int max_replicas = 1;  // at most kMaxReplicasPerService
  // `slo: {ttft_seconds, tpot_seconds}`: what the violation ratios are measured against.
  SloThresholds slo;
  // The policy block as YAML text, re-parsed (config::ParsePolicy) whenever a policy
  // instance is built; min_replicas/max_replicas above are merged into its envelope.
  // Validated at parse time. Empty = a `rules` policy whose rules live in the store
  // (managed with /v1/services/{name}/rules).
  std::string policy_yaml;
  std::string policy_family;  // "target", "rules", ... as parsed (for display)
  // Set: a disaggregated service. Its command, env, gpus_per_replica, min_memory_free_mb and
  // policy are then the pools' (PoolServiceConfig); min/max_replicas are the pools' sums and
  // policy_family theirs ("disagg", or "prefill-family/decode-family" when they differ).
  std::optional<DisaggSpec> disaggregated;

  std::vector<std::string> ServedModels() const {
    return models.empty() ? std::vector<std::string>{name} : models;
  }

  friend bool operator==(const ServiceConfig&, const ServiceConfig&) = default;
};

// The `retention:` section: the history (decision and event rows) the state database keeps,
// by age and by size (state/history_retention.h): rows older than max_age go, and when the
// database's used pages pass max_bytes the oldest history goes until it is under 90 % of it.
using RetentionConfig = state::RetentionConfig;

// The `tasks:` section: the TaskManager's settings (experiments/task_manager.h).
struct TasksConfig {
  // `recheck_interval_seconds`: periodic scheduling round, in (0, 3600]; releases wake the
  // scheduler at once, so this bounds how late GPU-reading changes and wait timeouts are seen.
  Seconds recheck_interval{2};
  // Backfills past the head of the experiment queue before the head reserves GPUs; 0 = strict
  // FIFO (no backfill).
  int max_head_skips = 3;
  // `stop_grace_seconds`: experiment server SIGTERM -> SIGKILL, in [0, 3600]; unset = the
  // daemon's replica stop grace (DaemonOptions::stop_grace, 10 s).
  std::optional<Seconds> stop_grace;

  friend bool operator==(const TasksConfig&, const TasksConfig&) = default;
};

struct DaemonConfig {
  GpuConfig gpu;
  ApiConfig api;
  gateway::GatewayConfig gateway;
  std::string state_dir;  // default: $XDG_STATE_HOME/gpuscale or ~/.local/state/gpuscale
  Seconds loop_interval{15};
  PrometheusConfig prometheus;
  ScrapeConfig scrape;
  RetentionConfig retention;
  TasksConfig tasks;
  std::vector<ServiceConfig> services;
};

// The pool names of a disaggregated service, in PoolBudget order (prefill 0, decode 1).
inline constexpr const char* kPoolRoles[] = {"prefill", "decode"};

// One pool of a disaggregated service as a service of its own, what the daemon runs it with
// (orchestrator, policy, runtime): the service's shared fields and the pool's, named
// "<service>.<role>" (replica ids "<service>.<role>-<n>", which no service's can be: '.' is
// not allowed in service names), its SLO read from the pool's own replicas (the gateway's
// figures cover both steps). REQUIRES: service.disaggregated, role 0 (prefill) or 1 (decode).
ServiceConfig PoolServiceConfig(const ServiceConfig& service, int role);
// The pools' shared budget, empty: pool 0 prefill, 1 decode, each owed its min_replicas x
// gpus_per_replica. Errors: PoolBudget::Make's (field "gpu_budget").
Result<alloc::PoolBudget> MakePoolBudget(const DisaggSpec& spec);

// Whole file / text. Unknown keys are rejected with the list of known ones.
Result<DaemonConfig> ParseDaemonConfig(const YAML::Node& root);
Result<DaemonConfig> ParseDaemonConfigText(const std::string& text, const std::string& source);
Result<DaemonConfig> LoadDaemonConfig(const std::string& path);

// One service (a `services[i]` entry or an API body). `path` prefixes field names
// ("services[0]" in a file, "" for an API body).
Result<ServiceConfig> ParseServiceConfig(const YAML::Node& node, const std::string& path);
Result<ServiceConfig> ParseServiceConfigText(const std::string& text, const std::string& source);

// Canonical YAML of a service (what the store keeps and GET /v1/services/{name} shows as
// `spec`); ParseServiceConfigText(ServiceConfigToYaml(s)) gives back `s`.
std::string ServiceConfigToYaml(const ServiceConfig& service);

// The embedded default for `gpuscale serve` without --config: simulated GPUs (4 x H100
// 80 GB), API on 127.0.0.1:8080, and one service "demo" of emulated replicas
// (`<self_exe> emulate --port {port} ...`, 1 GPU each, 1..4 replicas, target policy on
// vllm:num_requests_waiting) so the whole system runs on a machine without GPUs.
DaemonConfig EmbeddedDefaultConfig(const std::string& self_exe);

}  // namespace gpuscale::daemon
