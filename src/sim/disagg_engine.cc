// The discrete-event loop of RunDisaggSimulation. Event order at equal times (reproducible
// runs): prefill replica events, decode replica events, KV transfers ending, control ticks
// (prefill pool, then decode), scrapes, then arrivals, as in the aggregated engine.
//
// The link is modelled without contention (each transfer at the full link rate): at the
// rates of one service the KV stream is a small share of a 100-400 Gb/s NIC per GPU pair,
// and the bound this gives on TTFT is the one the issue asks to report.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <queue>

#include "core/numbers.h"
#include "sim/disagg.h"
#include "sim/disagg_pool.h"
#include "sim/replica_model_calibrated.h"
#include "sim/report.h"

namespace gpuscale::sim {
namespace {

constexpr int kPrefillPool = 0;
constexpr int kDecodePool = 1;

// The pool's view of the run: its spec as the service, the cluster and SLO of the run.
SimulationConfig PoolConfig(const SimulationConfig& config, const ServiceSpec& pool) {
  SimulationConfig c = config;
  c.disaggregated.reset();
  c.service = pool;
  return c;
}

struct RoleCounts;

struct Transfer {
  double done;
  uint32_t id;
  bool operator>(const Transfer& o) const { return done != o.done ? done > o.done : id > o.id; }
};

class DisaggEngine {
 public:
  DisaggEngine(const SimulationConfig& config, const DisaggModels& models,
               std::unique_ptr<scale::Policy> prefill_policy,
               std::unique_ptr<scale::Policy> decode_policy, const Trace& trace,
               const SimOptions& options, SharedGpus& shared)
      : config_(config),
        spec_(*config.disaggregated),
        models_(models),
        trace_(trace),
        options_(options),
        shared_(shared),
        prefill_("prefill", PoolConfig(config, spec_.prefill), *models.prefill,
                 std::move(prefill_policy), shared, kPrefillPool, trace.requests.size()),
        decode_("decode", PoolConfig(config, spec_.decode), *models.decode,
                std::move(decode_policy), shared, kDecodePool, trace.requests.size()),
        transfer_s_(trace.requests.size(), -1) {}

  DisaggResult Run();

 private:
  void Arrive(uint32_t id, double now);
  void OnPrefilled(double now);
  void OnTransferred(double now);
  bool PopPoolEvent(double t);
  void Finish(double end);
  // The requests as the user saw them (sim::MeetsSlo's input), and the pools' own counts.
  std::vector<RequestRecord> UserView(RoleCounts& counts, std::vector<double>& transfers) const;
  int64_t Outstanding() const {
    return prefill_.Outstanding() + decode_.Outstanding() + static_cast<int64_t>(transfers_.size());
  }

  const SimulationConfig& config_;
  const DisaggSpec& spec_;
  const DisaggModels& models_;
  const Trace& trace_;
  const SimOptions& options_;
  SharedGpus& shared_;
  DisaggPool prefill_;
  DisaggPool decode_;
  std::priority_queue<Transfer, std::vector<Transfer>, std::greater<Transfer>> transfers_;
  std::vector<double> transfer_s_;  // per request; < 0 until its prefill finished
  std::vector<uint32_t> finished_;  // reused per event
  size_t next_arrival_ = 0;
  int peak_gpus_ = 0;
  int64_t events_ = 0;
  DisaggResult result_;
};

void DisaggEngine::Arrive(uint32_t id, double now) {
  const TraceRequest& t = trace_.requests[id];
  RequestRecord& r = prefill_.record(id);
  r.arrival_s = t.arrival_s;
  r.input_tokens = std::max(t.input_tokens, 0);
  r.output_tokens = 1;  // the first token: all a prefill replica makes
  prefill_.Route(id, now);
}

void DisaggEngine::OnPrefilled(double now) {
  for (uint32_t id : finished_) {
    const double s =
        KvTransferSeconds(prefill_.record(id).input_tokens, models_.kv_bytes_per_token, spec_.link);
    transfer_s_[id] = s;
    transfers_.push({now + s, id});
  }
  finished_.clear();
}

void DisaggEngine::OnTransferred(double now) {
  const uint32_t id = transfers_.top().id;
  transfers_.pop();
  const TraceRequest& t = trace_.requests[id];
  RequestRecord& r = decode_.record(id);
  r.arrival_s = now;
  r.input_tokens = prefill_.record(id).input_tokens;
  r.prefilled_tokens = std::max(r.input_tokens, 1);  // its KV arrived: no prefill chunk
  r.output_tokens = std::max(t.output_tokens, 1) - 1;
  if (r.output_tokens == 0) {
    r.first_token_s = r.finish_s = now;  // one token: done when it reaches the user
    return;
  }
  decode_.Route(id, now);
}

bool DisaggEngine::PopPoolEvent(double t) {
  if (prefill_.NextEventTime() == t) {
    prefill_.PopEvent(t, finished_);
    OnPrefilled(t);
    return true;
  }
  if (decode_.NextEventTime() == t) {
    decode_.PopEvent(t, finished_);
    finished_.clear();  // the user-level records are assembled at the end
    return true;
  }
  if (!transfers_.empty() && transfers_.top().done == t) {
    OnTransferred(t);
    return true;
  }
  return false;
}

DisaggResult DisaggEngine::Run() {
  prefill_.StartWarm();
  decode_.StartWarm();
  peak_gpus_ = shared_.budget.total_held();
  const size_t n = trace_.requests.size();
  const double last_arrival = n ? trace_.requests[n - 1].arrival_s : 0;
  const double scrape = config_.scrape_interval.count();
  int64_t scrapes = 0;
  double next_tick = 0;
  double now = 0;
  while (next_arrival_ < n || Outstanding() > 0) {
    const double t_pool = std::min(prefill_.NextEventTime(), decode_.NextEventTime());
    const double t_transfer = transfers_.empty() ? kInf : transfers_.top().done;
    const double t_tick = next_tick;
    const double t_scrape = static_cast<double>(scrapes) * scrape;
    const double t_arrival = next_arrival_ < n ? trace_.requests[next_arrival_].arrival_s : kInf;
    const double t = std::min({t_pool, t_transfer, t_tick, t_scrape, t_arrival});
    if (t > last_arrival + kTailSeconds) break;
    now = t;
    ++events_;
    if ((t_pool == t || t_transfer == t) && PopPoolEvent(t)) continue;
    if (t_tick == t) {
      if (t_scrape == t) ++scrapes;  // each pool's Tick scrapes
      prefill_.Tick(t, options_.record_timeline, result_.errors);
      decode_.Tick(t, options_.record_timeline, result_.errors);
      peak_gpus_ = std::max(peak_gpus_, shared_.budget.total_held());
      // The daemon's one loop ticks every service sooner while any of them settles.
      next_tick = t + std::min(prefill_.NextTickSeconds(), decode_.NextTickSeconds());
    } else if (t_scrape == t) {
      ++scrapes;
      prefill_.Scrape(t);
      decode_.Scrape(t);
    } else {
      Arrive(static_cast<uint32_t>(next_arrival_++), t);
      if (options_.progress && (next_arrival_ & 0xFFFF) == 0) {
        options_.progress(static_cast<double>(next_arrival_) / static_cast<double>(n));
      }
    }
  }
  Finish(std::max(now, last_arrival));
  return std::move(result_);
}

// What each pool's own target saw: TTFT (queue + prefill + transfer) of every request,
// TPOT of those the decode pool generated for.
struct RoleCounts {
  int64_t ttft_met = 0, decoded = 0, tpot_met = 0;
};

std::vector<RequestRecord> DisaggEngine::UserView(RoleCounts& counts,
                                                  std::vector<double>& transfers) const {
  const size_t n = trace_.requests.size();
  std::vector<RequestRecord> user(n);
  for (size_t i = 0; i < n; ++i) {
    const RequestRecord& p = prefill_.records()[i];
    const RequestRecord& d = decode_.records()[i];
    RequestRecord& u = user[i];
    u.arrival_s = trace_.requests[i].arrival_s;
    u.input_tokens = std::max(trace_.requests[i].input_tokens, 0);
    u.output_tokens = std::max(trace_.requests[i].output_tokens, 1);
    u.aborted = p.aborted || d.aborted;
    u.on_fresh_replica = p.on_fresh_replica || d.on_fresh_replica;
    if (transfer_s_[i] >= 0) transfers.push_back(transfer_s_[i]);
    if (d.prefilled_tokens == 0) continue;  // never reached decode
    u.first_token_s = d.arrival_s;
    u.finish_s = d.finish_s;
    if (u.first_token_s - u.arrival_s <= config_.slo.ttft_seconds) ++counts.ttft_met;
    if (u.output_tokens <= 1) continue;
    ++counts.decoded;
    if (!d.aborted && d.finish_s >= 0 &&
        (d.finish_s - d.arrival_s) / (u.output_tokens - 1) <= config_.slo.tpot_seconds) {
      ++counts.tpot_met;
    }
  }
  return user;
}

// The run's totals over both pools (the request fields come from the user's view).
void SumPools(DisaggReport& r) {
  SimReport& t = r.total;
  t.policy = r.prefill.policy == r.decode.policy
                 ? r.prefill.policy
                 : fmt::format("{}+{}", r.prefill.policy, r.decode.policy);
  t.gpu_hours = r.prefill.gpu_hours + r.decode.gpu_hours;
  t.scale_ups = r.prefill.scale_ups + r.decode.scale_ups;
  t.scale_downs = r.prefill.scale_downs + r.decode.scale_downs;
  t.replicas_started = r.prefill.replicas_started + r.decode.replicas_started;
  t.replicas_stopped = r.prefill.replicas_stopped + r.decode.replicas_stopped;
  t.peak_replicas = r.prefill.peak_replicas + r.decode.peak_replicas;
  t.aborted = r.prefill.aborted + r.decode.aborted;
  t.controller_errors = r.prefill.controller_errors + r.decode.controller_errors;
}

void DisaggEngine::Finish(double end) {
  RoleCounts counts;
  std::vector<double> transfers;
  const std::vector<RequestRecord> user = UserView(counts, transfers);
  const auto n = static_cast<int64_t>(user.size());
  DisaggReport& r = result_.report;
  r.total = SummarizeRequests(user, config_.slo, SimReport{});
  r.prefill = prefill_.Summarize(end);
  r.decode = decode_.Summarize(end);
  r.prefill.requests = n;
  r.prefill.slo_met = counts.ttft_met;
  r.prefill.attainment = n ? static_cast<double>(counts.ttft_met) / static_cast<double>(n) : 0;
  r.decode.requests = counts.decoded;
  r.decode.slo_met = counts.tpot_met;
  r.decode.attainment =
      counts.decoded ? static_cast<double>(counts.tpot_met) / static_cast<double>(counts.decoded)
                     : 1;
  r.transfer_s = ComputePercentiles(transfers);
  r.peak_gpus = peak_gpus_;
  r.gpu_budget = shared_.budget.budget();
  SumPools(r);
  r.total.duration_s = end;
  r.total.events = events_;
  result_.prefill_timeline = std::move(prefill_.timeline());
  result_.decode_timeline = std::move(decode_.timeline());
  if (options_.progress) options_.progress(1.0);
}

Status ValidatePool(const ServiceSpec& s, const ClusterSpec& cluster, const std::string& path) {
  if (s.gpus_per_replica < 1 || s.gpus_per_replica > cluster.gpus_per_node) {
    return InvalidArgument(
        fmt::format("must be in [1, cluster.gpus_per_node = {}]", cluster.gpus_per_node),
        path + ".gpus_per_replica");
  }
  if (s.min_replicas < 0 || s.max_replicas < s.min_replicas) {
    return InvalidArgument("need 0 <= min_replicas <= max_replicas", path + ".min_replicas");
  }
  if (s.initial_replicas < -1) {
    return InvalidArgument("must be >= 0 ('auto' is not supported per pool)",
                           path + ".initial_replicas");
  }
  if (s.cold_start.count() < 0)
    return InvalidArgument("must be >= 0", path + ".cold_start_seconds");
  return OkStatus();
}

}  // namespace

double KvTransferSeconds(int64_t prompt_tokens, int64_t kv_bytes_per_token, const LinkSpec& link) {
  const double bytes = static_cast<double>(std::max<int64_t>(prompt_tokens, 1)) *
                       static_cast<double>(kv_bytes_per_token);
  return bytes / (link.gbps * 1e9 / 8);
}

Result<LinkSpec> ParseLink(std::string_view text, std::string_view gpu) {
  if (text == "rdma-100g") return LinkSpec{std::string(text), 100};
  if (text == "rdma-400g") return LinkSpec{std::string(text), 400};
  if (text == "nvlink") {
    const GpuSpec* spec = FindGpuSpec(gpu);
    if (spec == nullptr || !(spec->nvlink_bytes_per_s > 0)) {
      return InvalidArgument(fmt::format("no NVLink bandwidth known for gpu '{}'", gpu), "link");
    }
    return LinkSpec{"nvlink", spec->nvlink_bytes_per_s * 8 / 1e9};
  }
  char* end = nullptr;
  const std::string s(text);
  const double gbps = std::strtod(s.c_str(), &end);
  if (end != s.c_str() && *end == '\0' && gbps > 0 && std::isfinite(gbps)) {
    return LinkSpec{fmt::format("{:g} Gb/s", gbps), gbps};
  }
  return InvalidArgument(
      fmt::format("expected nvlink, rdma-100g, rdma-400g or a number of Gb/s > 0, got '{}'", text),
      "link");
}

Status ValidateDisaggConfig(const SimulationConfig& config) {
  GS_RETURN_IF_ERROR(ValidateSimulationConfig(config));
  if (!config.disaggregated) return InvalidArgument("not a disaggregated service", "disaggregated");
  const DisaggSpec& d = *config.disaggregated;
  GS_RETURN_IF_ERROR(ValidatePool(d.prefill, config.cluster, "disaggregated.prefill"));
  GS_RETURN_IF_ERROR(ValidatePool(d.decode, config.cluster, "disaggregated.decode"));
  const int cluster_gpus = config.cluster.nodes * config.cluster.gpus_per_node;
  const int budget = d.BudgetGpus(config.cluster);
  if (budget < 1 || budget > cluster_gpus) {
    return InvalidArgument(fmt::format("must be in [1, the cluster's {} GPUs]", cluster_gpus),
                           "disaggregated.gpu_budget");
  }
  const int minimums = d.prefill.min_replicas * d.prefill.gpus_per_replica +
                       d.decode.min_replicas * d.decode.gpus_per_replica;
  if (minimums > budget) {
    return InvalidArgument(
        fmt::format("{} GPUs cannot hold both pools' minimums ({} GPUs)", budget, minimums),
        "disaggregated.gpu_budget");
  }
  if (!(d.link.gbps > 0)) return InvalidArgument("must be > 0 Gb/s", "disaggregated.link");
  if (!config.faults.crash_at_seconds.empty() || !config.faults.metrics_outages.empty()) {
    return InvalidArgument("not simulated for a disaggregated service yet", "faults");
  }
  return OkStatus();
}

Result<DisaggResult> RunDisaggSimulation(const SimulationConfig& config, const DisaggModels& models,
                                         std::unique_ptr<scale::Policy> prefill_policy,
                                         std::unique_ptr<scale::Policy> decode_policy,
                                         const Trace& trace, const SimOptions& options) {
  GS_RETURN_IF_ERROR(ValidateDisaggConfig(config));
  if (trace.requests.empty()) return InvalidArgument("the trace has no requests", "trace");
  if (!prefill_policy || !decode_policy) return InvalidArgument("no policy given", "policy");
  const double span = trace.requests.back().arrival_s;
  if (span / std::min(config.scrape_interval.count(), config.control_interval.count()) >
      kMaxSimulatedTicks) {
    return InvalidArgument(fmt::format("the trace spans {:.0f} s, over the {:.0f} ticks one run "
                                       "simulates",
                                       span, kMaxSimulatedTicks),
                           "trace");
  }
  const DisaggSpec& d = *config.disaggregated;
  GS_ASSIGN_OR_RETURN(
      alloc::PoolBudget budget,
      alloc::PoolBudget::Make(d.BudgetGpus(config.cluster),
                              {{"prefill", d.prefill.min_replicas * d.prefill.gpus_per_replica},
                               {"decode", d.decode.min_replicas * d.decode.gpus_per_replica}}));
  SharedGpus shared(MakeSimInventory(config.cluster), std::move(budget));
  DisaggEngine engine(config, models, std::move(prefill_policy), std::move(decode_policy), trace,
                      options, shared);
  return engine.Run();
}

}  // namespace gpuscale::sim
