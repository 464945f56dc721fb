#include "scale/slo_policy.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "scale/metric_names.h"
#include "scale/policy_util.h"

namespace gpuscale::scale {
namespace {

namespace names = metric_names;

// The short rate window (30 s) and the long one (2 min) are centred 45 s apart.
constexpr double kTrendBaseSeconds = 45;
constexpr double kBacklogDrainSeconds = 30;
constexpr double kBurstWindowSeconds = 30;
// A violation ratio this many times the allowed share means overload, not noise.
constexpr double kOverloadFactor = 3;
constexpr Seconds kCutCooldown{120};
// A learned mu below the load-test figure regains half its gap to it in this much clean time.
constexpr Seconds kRecoveryHalfLife{300};

std::optional<double> ServiceValue(const ScalingInput& input, std::string_view name) {
  auto it = input.metrics.find(std::string(name));
  if (it == input.metrics.end() || !it->second.service_value) return std::nullopt;
  double v = *it->second.service_value;
  return IsUsableSample(v) ? std::optional<double>(v) : std::nullopt;
}

std::optional<double> SumPerReplica(const ScalingInput& input, std::string_view name) {
  MetricReading r = ReadMetric(input, std::string(name), Aggregation::kSum);
  return r.value;
}

// A fleet's size in reference replicas (ScalingInput::current_capacity), rounded down: a
// mixed fleet of 4 H100s and 3 A100s at 0.41 each is 5 (5.23) of them, so that holding it
// asks for nothing and a need of 6 grows it. Unset: the count.
int CapacityUnits(const std::optional<double>& capacity, int count) {
  return capacity ? static_cast<int>(std::floor(*capacity + 1e-6)) : count;
}

BurstMemoryConfig BurstConfig(const SloPolicyConfig& c) {
  BurstMemoryConfig b;
  b.lead = c.burst_lead;
  return b;
}

}  // namespace

double CapacityAtMix(const std::vector<MixCapacity>& mixes, double prompt_tokens,
                     double output_tokens) {
  // Inverse-distance weights in log-length space: exact at a profiled mix, between them a
  // blend dominated by the nearest, and never outside the profile's range of capacities.
  const double lp = std::log(std::max(prompt_tokens, 1.0));
  const double lo = std::log(std::max(output_tokens, 1.0));
  double weights = 0, sum = 0;
  for (const MixCapacity& m : mixes) {
    const double dp = lp - std::log(std::max(m.prompt_tokens, 1.0));
    const double dout = lo - std::log(std::max(m.output_tokens, 1.0));
    const double d2 = dp * dp + dout * dout;
    if (d2 < 1e-12) return m.capacity_tokens_per_second;
    weights += 1 / d2;
    sum += m.capacity_tokens_per_second / d2;
  }
  return sum / weights;
}

std::vector<std::string> SloPolicy::MetricNames() const {
  std::vector<std::string> out;
  for (std::string_view name :
       {names::kWaiting, names::kRunning, names::kSuccessRate30s, names::kSuccessRate2m,
        names::kTtftViolationRatio, names::kTpotViolationRatio}) {
    out.emplace_back(name);
  }
  if (config_.output_token_weight > 0) {
    out.emplace_back(names::kPromptTokensRate30s);
    out.emplace_back(names::kGenerationTokensRate30s);
  }
  return out;
}

SloPolicy::SloPolicy(SloPolicyConfig config)
    : config_(config),
      initial_capacity_(std::max(config.output_token_weight > 0
                                     ? config.initial_capacity_tokens_per_second
                                     : config.initial_capacity_rps,
                                 1e-3)),
      capacity_(initial_capacity_),
      burst_memory_(BurstConfig(config)) {}

bool SloPolicy::ToWorkUnits(const ScalingInput& input, Observation& obs) {
  if (config_.output_token_weight <= 0) return true;
  auto done = ServiceValue(input, names::kSuccessRate30s);
  auto prompt = ServiceValue(input, names::kPromptTokensRate30s);
  auto generated = ServiceValue(input, names::kGenerationTokensRate30s);
  if (done && prompt && generated && *done > 0) {
    work_per_request_ =
        (config_.prompt_token_weight * *prompt + config_.output_token_weight * *generated) / *done;
    if (!config_.mix_capacities.empty()) {
      mix_factor_ = initial_capacity_ /
                    CapacityAtMix(config_.mix_capacities, *prompt / *done, *generated / *done);
    }
  }
  if (!work_per_request_) return false;
  // A mix the replicas serve at a lower capacity counts as that much more load, so that one
  // capacity (initial_capacity_, then learned) holds for every mix.
  obs.mix_factor = mix_factor_;
  obs.unit = *work_per_request_ * mix_factor_;
  if (obs.rate_short) *obs.rate_short *= obs.unit;
  if (obs.rate_long) *obs.rate_long *= obs.unit;
  obs.waiting *= obs.unit;
  return true;
}

std::optional<SloPolicy::Observation> SloPolicy::Observe(const ScalingInput& input) {
  if (input.metrics_error) return std::nullopt;
  auto waiting = SumPerReplica(input, names::kWaiting);
  auto running = SumPerReplica(input, names::kRunning);
  if (!waiting || !running) return std::nullopt;
  Observation obs;
  obs.waiting = *waiting;
  if (auto it = input.metrics.find(std::string(names::kWaiting)); it != input.metrics.end()) {
    for (double w : it->second.per_replica) {
      if (IsUsableSample(w)) obs.waiting_per_replica.push_back(w);
    }
  }
  obs.in_system = *waiting + *running;
  // What arrives either finishes or piles up in the system: arrivals over the completion
  // rate's 30 s window are its completions plus what the system gained over the same window.
  // (A growth smoothed over ticks instead lagged the completions: while a queue drained, the
  // completions ran at the fleet's full capacity and the smoothed growth still showed half the
  // queue's rise, so arrivals read a third above the load and bought replicas for it.)
  in_system_history_.emplace_back(input.now, obs.in_system);
  while (in_system_history_.size() > 1 &&
         input.now - in_system_history_[1].first >= Seconds{kBurstWindowSeconds}) {
    in_system_history_.pop_front();
  }
  const auto& [then, was] = in_system_history_.front();
  const double growth = input.now > then ? (obs.in_system - was) / (input.now - then).count() : 0;
  if (auto done = ServiceValue(input, names::kSuccessRate30s)) {
    obs.rate_short = std::max(0.0, *done + growth);
  }
  if (auto done = ServiceValue(input, names::kSuccessRate2m)) obs.rate_long = *done;
  obs.ttft_violation = ServiceValue(input, names::kTtftViolationRatio);
  obs.tpot_violation = ServiceValue(input, names::kTpotViolationRatio);
  for (const std::optional<double>& ratio : {obs.ttft_violation, obs.tpot_violation}) {
    if (ratio) obs.violation = std::max(obs.violation.value_or(0), *ratio);
  }
  return obs;
}

void SloPolicy::LearnCapacity(const Observation& obs, double ready, Seconds now, bool in_grace) {
  if (!config_.learn_capacity || ready <= 1e-9 || !obs.rate_short || !obs.violation) return;
  // Per reference replica: in a mixed fleet an A100 at 0.41 of an H100 carries 0.41 of its
  // load, and counting it as a whole replica read the H100's capacity as 0.41 lower.
  double per_replica = *obs.rate_short / ready;
  double allowed = 1 - config_.target_attainment;
  bool cooled = !last_cut_ || now - *last_cut_ >= kCutCooldown;
  if (*obs.violation > kOverloadFactor * allowed) {
    if (in_grace) return;
    // A violation teaches a lower mu only at a load mu says the replicas carry: between 60 %
    // of mu (below that it is a transient, e.g. a cold-start backlog draining) and mu. At a
    // load above mu the fleet was short, which mu already said: the fleet grows for it, and
    // cutting mu too (as a cold-start queue or a mix shift's first minutes did) sized every
    // later fleet for a slowness the replicas never had. One cut per cooldown: the violation
    // window lags the cut by a minute.
    if (cooled && per_replica >= 0.6 * capacity_ && per_replica < capacity_) {
      capacity_ = std::max(0.9 * capacity_, config_.min_capacity_ratio * initial_capacity_);
      last_cut_ = now;
    }
  } else if (*obs.violation <= allowed / 4 && cooled) {
    // Below the load-test figure, a clean tick moves mu back toward it (half the gap in
    // kRecoveryHalfLife): a cut is evidence from one stretch of load, and a fleet sized by a
    // low mu runs its replicas too lightly ever to probe mu up again, so without this a cut
    // would size every later fleet for good.
    if (capacity_ < initial_capacity_ && last_tick_ && now > *last_tick_) {
      const double kept = std::exp2(-(now - *last_tick_).count() / kRecoveryHalfLife.count());
      capacity_ = initial_capacity_ - (initial_capacity_ - capacity_) * kept;
    }
    // The SLO held at this load: the capacity is at least that, and probably a bit more.
    // Probing only close to the load the plan runs replicas at (target_utilization x mu: else
    // a fleet sized below mu never probes): at a lighter load a clean minute says nothing about
    // mu, and probing there ratchets mu up tick after tick until the SLO breaks (the
    // violation window lags by a minute, so it breaks hard).
    if (per_replica > capacity_)
      capacity_ = per_replica;
    else if (per_replica > config_.probe_load_ratio * config_.target_utilization * capacity_)
      capacity_ *= 1.005;
  }
}

double SloPolicy::Trend(const Observation& obs, Seconds now) {
  const double short_rate = *obs.rate_short;
  const double window_trend =
      (short_rate - obs.rate_long.value_or(short_rate)) / kTrendBaseSeconds;
  while (!recent_rates_.empty() && now - recent_rates_.front().first > config_.trend_window) {
    recent_rates_.pop_front();
  }
  recent_rates_.emplace_back(now, short_rate);
  if (window_trend <= 0) return 0;
  // Least-squares slope over the history; needs three samples spanning half a short window.
  const size_t n = recent_rates_.size();
  if (n < 3 || (now - recent_rates_.front().first).count() < kBurstWindowSeconds / 2) {
    return window_trend;
  }
  double mean_t = 0, mean_r = 0;
  for (const auto& [t, r] : recent_rates_) {
    mean_t += t.count() / n;
    mean_r += r / n;
  }
  double cov = 0, var = 0;
  for (const auto& [t, r] : recent_rates_) {
    cov += (t.count() - mean_t) * (r - mean_r);
    var += (t.count() - mean_t) * (t.count() - mean_t);
  }
  const double slope = var > 0 ? cov / var : window_trend;
  return std::clamp(slope, 0.0, window_trend);
}

int SloPolicy::Need(const Observation& obs, double trend, double expected, int ordered,
                    double* forecast) const {
  double short_rate = *obs.rate_short;
  double long_rate = obs.rate_long.value_or(short_rate);
  double base = config_.follow_short_rate ? std::max(short_rate, long_rate) : long_rate;
  base = std::max(base, expected);
  const double f = base + trend * config_.forecast_horizon.count() +
                   config_.burst_z * std::sqrt(base * obs.unit / kBurstWindowSeconds);
  // A replica's queue is served by that replica alone (the router sends new arrivals to the
  // least loaded, never a queued request to a new replica): however long it is, it asks for at
  // most one replica's capacity. Summed whole, a cold start's queue piled on the one or two
  // replicas ready during a step asked for dozens of replicas that could never take any of it.
  double backlog = 0;
  if (obs.waiting_per_replica.empty()) {
    backlog = obs.waiting / kBacklogDrainSeconds;
  } else {
    // A mixed fleet's replica serves its queue at its own capacity; the mean one's stands in
    // (the per-replica samples do not say which replica is which).
    const double one_replica = capacity_ * obs.mean_replica_capacity;
    for (double w : obs.waiting_per_replica) {
      backlog += std::min(w * obs.unit / kBacklogDrainSeconds, one_replica);
    }
  }
  *forecast = f + backlog;
  const double per_replica = capacity_ * config_.target_utilization;
  auto replicas = [&](double load) {
    return static_cast<int>(std::ceil(load / per_replica - 1e-9)) + config_.spare_replicas;
  };
  // While replicas ordered earlier are still starting, the queue grows because they are not
  // ready yet, not because more are needed: buying for it each tick of a cold start (a burst's
  // queue, drained over 30 s, asks for several times the load) ordered two to three times the
  // fleet the load needed. The queue keeps the replicas ordered for it; the rates (arrivals
  // include the queue's growth) still order more when the load itself is higher.
  const int need = replicas(f + backlog);
  if (ordered <= 0) return need;
  return std::max(replicas(f), std::min(need, ordered));
}

bool SloPolicy::QueueIsSpread(const Observation& obs) {
  if (obs.waiting_per_replica.empty()) return true;  // a service-level count only: assume so
  const auto queued = std::count_if(obs.waiting_per_replica.begin(), obs.waiting_per_replica.end(),
                                    [](double w) { return w >= 1; });
  return 2 * queued >= static_cast<std::ptrdiff_t>(obs.waiting_per_replica.size());
}

Decision SloPolicy::Evaluate(const ScalingInput& input) {
  inputs_.clear();
  Decision decision = Decide(input);
  decision.inputs = std::move(inputs_);
  return decision;
}

Decision SloPolicy::Decide(const ScalingInput& input) {
  // In reference replicas (a mixed fleet's capacity); the counts where every replica is one.
  const int current = CapacityUnits(input.current_capacity, input.current_replicas);
  const double ready_capacity = input.ready_capacity.value_or(input.ready_replicas);
  auto clamp = [&](int n) { return ClampReplicas(n, config_.min_replicas, config_.max_replicas); };
  auto obs = Observe(input);
  if (!obs || !obs->rate_short || !ToWorkUnits(input, *obs)) {
    return {clamp(current),
            fmt::format("hold at {}: {}", current,
                        input.metrics_error      ? "metrics unavailable this tick"
                        : obs && obs->rate_short ? "no token-rate data yet"
                                                 : "no arrival-rate data yet"),
            input.metric_errors,
            {},
            {}};
  }
  // A fleet that just grew is judged on violations measured after it did (ready_grace).
  if (last_ready_ >= 0 && input.ready_replicas > last_ready_) ready_rise_ = input.now;
  last_ready_ = input.ready_replicas;
  const bool in_grace = ready_rise_ && input.now - *ready_rise_ < config_.ready_grace;
  if (input.ready_replicas > 0) obs->mean_replica_capacity = ready_capacity / input.ready_replicas;
  LearnCapacity(*obs, ready_capacity, input.now, in_grace);
  last_tick_ = input.now;
  inputs_.push_back({"SLO violation ratio", obs->violation, 1 - config_.target_attainment});
  inputs_.push_back({config_.output_token_weight > 0 ? "load per ready replica (tokens/s)"
                                                     : "load per ready replica (req/s)",
                     *obs->rate_short / std::max(1.0, ready_capacity), capacity_});
  double forecast = 0;
  // Without the short rate there is no trend to extrapolate (nor its history to keep).
  const double trend = config_.follow_short_rate ? Trend(*obs, input.now) : 0;
  std::optional<BurstMemory::Expectation> expected;
  if (config_.recurring_bursts) {
    // One Poisson standard deviation of the 30 s rate, in the rate's unit.
    const double noise = std::sqrt(*obs->rate_short * obs->unit / kBurstWindowSeconds);
    burst_memory_.Observe(input.now, *obs->rate_short, noise);
    expected = burst_memory_.Expect(input.now);
  }
  // Replicas ordered and not ready yet: the fleet the queue has already bought.
  const int ordered = input.current_replicas > input.ready_replicas ? current : 0;
  int need = Need(*obs, trend, expected ? expected->rate : 0, ordered, &forecast);
  const double waiting_requests = obs->waiting / obs->unit;
  double allowed = 1 - config_.target_attainment;
  bool violating = !in_grace && obs->violation && *obs->violation > allowed;
  if (violating && obs->waiting > 0 && input.current_replicas == input.ready_replicas) {
    need = std::max(need, CapacityUnits(ready_capacity, input.ready_replicas) + 1);
  }
  need = clamp(need);
  while (!recent_needs_.empty() &&
         input.now - recent_needs_.front().at > config_.scale_down_delay) {
    recent_needs_.pop_front();
  }
  recent_needs_.push_back({input.now, need, burst_memory_.InBurst() || expected.has_value()});
  const char* unit = config_.output_token_weight > 0 ? "tokens/s" : "req/s";
  auto ratio = [](const std::optional<double>& r) {
    return r ? FormatNumber(*r) : std::string("n/a");
  };
  std::string why = fmt::format(
      "forecast {} {} over {} s (now {}), capacity {} {} per replica at the SLO, "
      "violations TTFT {}, TPOT {}",
      FormatNumber(forecast), unit, FormatNumber(config_.forecast_horizon.count()),
      FormatNumber(*obs->rate_short), FormatNumber(capacity_), unit, ratio(obs->ttft_violation),
      ratio(obs->tpot_violation));
  if (std::abs(obs->mix_factor - 1) > 0.005) {
    why += fmt::format(", this mix costs x{} (profile)", FormatNumber(obs->mix_factor));
  }
  if (expected) why += fmt::format(", ready for {} {}: {}", FormatNumber(expected->rate), unit,
                                   expected->reason);
  // A queue (more than a request waiting per ready replica: a stray one is a batch filling
  // up) on most replicas says the fleet is short now, whatever the forecast. One piled on a
  // few replicas does not: only they can serve it, and holding the rest of the fleet for it
  // held 50 replicas where 16 served the load, for the ten minutes two of them took to drain
  // a step's queue.
  if (need < current && waiting_requests > std::max(1, input.ready_replicas) &&
      QueueIsSpread(*obs)) {
    return {clamp(current),
            fmt::format("hold at {}: {} requests wait in a queue ({}), need {}", current,
                        FormatNumber(waiting_requests), why, need),
            {},
            {},
            {}};
  }
  if (need >= current) {
    return {
        need, fmt::format("{}: {} -> need {}", FormatChange(current, need), why, need), {}, {}, {}};
  }
  return ScaleDown(input, need, why);
}

Decision SloPolicy::ScaleDown(const ScalingInput& input, int need, std::string why) {
  const int current = CapacityUnits(input.current_capacity, input.current_replicas);
  // Between bursts that recur on a period the load is back at its level and the next burst
  // is expected in time (BurstMemory): what the last burst needed is not held, nor is the
  // way down paced, or holding it would keep the burst's fleet through most of the period.
  const bool gap = config_.recurring_bursts && burst_memory_.BetweenPeriodicBursts(input.now);
  int held = need;
  for (const PastNeed& past : recent_needs_) {
    if (!(gap && past.in_burst)) held = std::max(held, past.replicas);
  }
  const int step = gap ? current : std::max(config_.max_scale_down_step, 1);
  int desired = std::max(held, current - step);
  desired = std::min(desired, current);
  std::string reason =
      desired == current
          ? fmt::format("hold at {}: need {} now, but {} within the last {} s ({})", current, need,
                        held, FormatNumber(config_.scale_down_delay.count()), why)
          : fmt::format("{}: {} -> need {}", FormatChange(current, desired), why, need);
  return {ClampReplicas(desired, config_.min_replicas, config_.max_replicas), reason, {}, {}, {}};
}

}  // namespace gpuscale::scale
