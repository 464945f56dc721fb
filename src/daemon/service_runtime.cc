// ServiceRuntime: one service's observe -> decide -> reconcile step (service_runtime.h).
#include "daemon/service_runtime.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "scale/metric_names.h"

namespace gpuscale::daemon {

ServiceRuntime::ServiceRuntime(ServiceConfig config, std::unique_ptr<scale::Policy> policy,
                               scale::ReplicaOrchestrator& orchestrator)
    : config_(std::move(config)), orchestrator_(orchestrator), view_(config_.slo) {
  auto wrapped = std::make_unique<scale::OverridablePolicy>(std::move(policy));
  policy_ = wrapped.get();
  scale::ControllerConfig controller_config;
  controller_config.reconciler.drain_timeout = config_.drain_timeout;
  controller_ =
      std::make_unique<scale::Controller>(std::move(wrapped), orchestrator_, controller_config);
  LearnPolicyMetrics();
}

void ServiceRuntime::LearnPolicyMetrics() {
  metric_names_ = policy_->inner().MetricNames();
  const std::vector<PromQuery> queries = PromQueries();
  scraped_metrics_.clear();
  for (const std::string& name : metric_names_) {
    const bool queried = std::any_of(queries.begin(), queries.end(),
                                     [&](const PromQuery& q) { return q.key == name; });
    if (!queried) scraped_metrics_.push_back(name);
  }
  // Only the windows the policy reads (a rules policy's metrics change with its rules).
  view_.SetReadMetrics(metric_names_);
}

ServiceRuntime::~ServiceRuntime() = default;

std::optional<double> SumOfFamily(const metrics::Exposition& exposition, std::string_view name) {
  const metrics::MetricFamily* family = exposition.FindFamily(name);
  if (family == nullptr || family->samples.empty()) return std::nullopt;
  double sum = 0;
  for (const metrics::Sample& s : family->samples) sum += s.value;
  return sum;
}

scale::ScalingInput ServiceRuntime::Observe(Seconds now, const ServiceObservation& observation,
                                            const gpu::GpuSnapshot* gpus,
                                            const OutstandingSink& sink,
                                            ServiceTickResult& result) {
  // Views of the observation's ids and GPUs, not copies: a copy of every replica's, 10,000
  // a tick at fleet scale, cost a tick more than any use of them.
  std::vector<ReadyReplicaRef>& ready = ready_;
  std::vector<std::string_view>& seen = seen_;
  ready.clear();
  seen.clear();
  auto add_ready = [&](const ReplicaObservation& r) { ready.push_back({r.id, r.gpus}); };
  for (const ReplicaObservation& r : observation.replicas) {
    seen.push_back(r.id);
    if (r.sample == metrics::SampleKind::kKept) {
      // Its scrape is in flight, or not due: the view's latest values of it stand (none yet:
      // left out).
      if (r.ready) {
        add_ready(r);
        if (sink) sink(r.id, kNotScraped);
      }
      continue;
    }
    if (!r.exposition) {
      if (r.sample == metrics::SampleKind::kNew) ++result.scrape_errors;
      // A draining replica's scrape only feeds the drain; its failure is no policy input.
      if (r.ready) result.metric_errors.push_back(r.exposition.error().ToString());
      continue;
    }
    if (r.exposition->families.empty() && r.exposition->skipped_lines > 0) {
      // Nothing but malformed lines (a replica serving something else on /metrics): as bad
      // as a failed scrape. A few bad lines among good ones are skipped silently.
      ++result.scrape_errors;
      if (r.ready) {
        const metrics::Exposition& e = *r.exposition;
        result.metric_errors.push_back(fmt::format(
            "replica {}: /metrics has no valid sample ({} malformed lines skipped{}{})", r.id,
            e.skipped_lines, e.line_errors.empty() ? "" : "; first: ",
            e.line_errors.empty() ? "" : e.line_errors.front().ToString()));
      }
      continue;
    }
    if (sink) {
      const double running = SumOfFamily(*r.exposition, scale::metric_names::kRunning).value_or(0);
      const double waiting = SumOfFamily(*r.exposition, scale::metric_names::kWaiting).value_or(0);
      const double outstanding = running + waiting;
      if (std::isfinite(outstanding) && outstanding >= 0) {
        sink(r.id, static_cast<int>(std::lround(outstanding)));
      }
    }
    if (!r.ready) continue;
    view_.Record(now, r.id, *r.exposition);
    add_ready(r);
  }
  view_.Retain(seen);
  if (observation.gateway) view_.RecordGateway(now, *observation.gateway);
  result.gateway = view_.Gateway(now);

  scale::ScalingInput input;
  view_.Fill(now, ready, gpus, input);
  for (const QueryObservation& q : observation.queries) {
    if (q.value) {
      input.metrics[q.key] = scale::MetricValue{scale::MetricSource::kPrometheus, {}, *q.value};
    } else {
      result.metric_errors.push_back(
          fmt::format("query '{}': {}", q.key, q.value.error().ToString()));
    }
  }
  ReportUnexported(ready, input, result);
  input.requests_waiting_without_replica = observation.gateway_waiting;
  input.metrics_error = !result.metric_errors.empty();
  input.metric_errors = result.metric_errors;
  return input;
}

namespace {

std::string UnexportedMessage(const ServiceMetricView::Unexported& u) {
  std::string message = fmt::format("metric '{}' is exported by none of the {} ready replica{}",
                                    u.metric, u.ready, u.ready == 1 ? "" : "s");
  if (u.families.size() == 1 && u.families[0] == u.metric) return message;
  std::string looked_for = u.families.back();
  if (u.families.size() > 1) {
    const std::vector<std::string> head(u.families.begin(), u.families.end() - 1);
    looked_for = fmt::format("{} or {}", fmt::join(head, ", "), u.families.back());
  }
  return fmt::format("{} (read from {})", message, looked_for);
}

}  // namespace

// A metric the policy reads that no ready replica exports would otherwise reach the policy
// as "no data" tick after tick (a renamed vLLM metric, a histogram the engine lacks): it is a
// metric error, named, so the dashboard shows it and the policy does not scale down on it.
// Names the daemon asks Prometheus for are checked by their queries instead.
void ServiceRuntime::ReportUnexported(const std::vector<ReadyReplicaRef>& ready,
                                      const scale::ScalingInput& input,
                                      ServiceTickResult& result) const {
  for (const ServiceMetricView::Unexported& u :
       view_.FindUnexported(ready, scraped_metrics_, input)) {
    result.metric_errors.push_back(UnexportedMessage(u));
  }
}

const ServiceTickResult& ServiceRuntime::Tick(Seconds now, const ServiceObservation& observation,
                                              const gpu::GpuSnapshot* gpus,
                                              const OutstandingSink& report_outstanding) {
  ServiceTickResult result;
  scale::ScalingInput input = Observe(now, observation, gpus, report_outstanding, result);
  result.tick = controller_->Tick(now, std::move(input));
  result.desired_changed = !last_ || last_->tick.desired_replicas != result.tick.desired_replicas;
  last_ = std::move(result);
  return *last_;
}

Status ServiceRuntime::SetManualReplicas(std::optional<int> replicas) {
  if (replicas && (*replicas < config_.min_replicas || *replicas > config_.max_replicas)) {
    return InvalidArgument(fmt::format("must be within the service's bounds [{}, {}], got {}",
                                       config_.min_replicas, config_.max_replicas, *replicas),
                           "replicas");
  }
  policy_->set_manual(replicas);
  return OkStatus();
}

std::optional<int> ServiceRuntime::manual_replicas() const { return policy_->manual(); }

void ServiceRuntime::ReplacePolicy(std::unique_ptr<scale::Policy> policy) {
  policy_->set_inner(std::move(policy));
  LearnPolicyMetrics();
}

std::vector<PromQuery> ServiceRuntime::PromQueries() const {
  return PromQueriesOf(policy_->inner());
}

std::string_view ServiceRuntime::policy_family() const { return policy_->Family(); }

bool ServiceRuntime::PolicyReadsReplicas() const {
  return std::any_of(scraped_metrics_.begin(), scraped_metrics_.end(),
                     [this](const std::string& m) { return view_.NeedsScrapes(m); });
}

void ServiceRuntime::AddScrapedFamilies(std::set<std::string, std::less<>>& families) const {
  ServiceMetricView::AddReadFamilies(metric_names_, families);
}

}  // namespace gpuscale::daemon
