#include "gateway/gateway_stats.h"

#include <limits>
#include <vector>

#include "metrics/exposition_writer.h"

namespace gpuscale::gateway {
namespace {

using metrics::Label;
using metrics::MetricType;

std::string CodeClass(int status) {
  if (status <= 0) return "none";
  return std::to_string(status / 100) + "xx";
}

void AddHistogram(metrics::ExpositionWriter& w, const std::vector<Label>& labels,
                  const metrics::BucketHistogram& h) {
  const std::vector<double> counts = h.CumulativeCounts();
  w.AddHistogram(labels, h.upper_bounds(), counts, h.sum());
}

HistogramSample Sample(const metrics::BucketHistogram& h) {
  HistogramSample out;
  out.upper_bounds.assign(h.upper_bounds().begin(), h.upper_bounds().end());
  out.upper_bounds.push_back(std::numeric_limits<double>::infinity());
  out.cumulative_counts = h.CumulativeCounts();
  out.cumulative_counts.push_back(static_cast<double>(h.count()));
  out.sum = h.sum();
  return out;
}

}  // namespace

void GatewayStats::Record(const std::string& service, const RequestMeasurement& m) {
  Service& s = services_[service];
  ++s.requests_by_code[CodeClass(m.status)];
  if (!m.error.empty()) ++s.errors_by_reason[m.error];
  if (!m.replica.empty()) ++s.requests_by_replica[m.replica];
  s.queue.Observe(m.queue_seconds);
  if (m.ttft_seconds) s.ttft.Observe(*m.ttft_seconds);
  if (m.tpot_seconds) s.tpot.Observe(*m.tpot_seconds);
  s.e2e.Observe(m.e2e_seconds);
  if (m.added_seconds) s.added.Observe(*m.added_seconds);
}

ServiceStatsView GatewayStats::View(const std::string& service) const {
  static const Service kNone;
  auto it = services_.find(service);
  const Service& s = it == services_.end() ? kNone : it->second;
  ServiceStatsView v;
  for (const auto& [code, n] : s.requests_by_code) v.requests += n;
  for (const auto& [reason, n] : s.errors_by_reason) v.errors += n;
  v.requests_by_replica = s.requests_by_replica;
  v.queue = Sample(s.queue);
  v.ttft = Sample(s.ttft);
  v.tpot = Sample(s.tpot);
  v.e2e = Sample(s.e2e);
  v.added = Sample(s.added);
  return v;
}

std::string GatewayStats::Text(
    const std::map<std::pair<std::string, std::string>, int>& in_flight,
    const std::map<std::string, int>& queued,
    const std::map<std::pair<std::string, std::string>, int>& queued_by_priority) const {
  metrics::ExpositionWriter w;
  w.BeginFamily("gpuscale_gateway_connections", MetricType::kGauge,
                "Client connections open at the gateway.");
  w.AddValue({}, static_cast<double>(connections_));
  w.BeginFamily("gpuscale_gateway_upstream_connections_opened_total", MetricType::kCounter,
                "TCP connections the gateway opened to replicas (kept-alive ones are reused).");
  w.AddValue({}, static_cast<double>(upstream_connects_));
  w.BeginFamily("gpuscale_gateway_requests_total", MetricType::kCounter,
                "Requests answered by the gateway, by service and status class.");
  for (const auto& [service, s] : services_) {
    for (const auto& [code, n] : s.requests_by_code) {
      w.AddValue(std::vector<Label>{{"service", service}, {"code", code}}, n);
    }
  }
  w.BeginFamily("gpuscale_gateway_errors_total", MetricType::kCounter,
                "Failed requests by service and reason.");
  for (const auto& [service, s] : services_) {
    for (const auto& [reason, n] : s.errors_by_reason) {
      w.AddValue(std::vector<Label>{{"service", service}, {"reason", reason}}, n);
    }
  }
  w.BeginFamily("gpuscale_gateway_replica_requests_total", MetricType::kCounter,
                "Requests sent to each replica.");
  for (const auto& [service, s] : services_) {
    for (const auto& [replica, n] : s.requests_by_replica) {
      w.AddValue(std::vector<Label>{{"service", service}, {"replica", replica}}, n);
    }
  }
  w.BeginFamily("gpuscale_gateway_replica_in_flight_requests", MetricType::kGauge,
                "Requests in flight on each replica through the gateway.");
  for (const auto& [key, n] : in_flight) {
    w.AddValue(std::vector<Label>{{"service", key.first}, {"replica", key.second}}, n);
  }
  w.BeginFamily("gpuscale_gateway_queued_requests", MetricType::kGauge,
                "Requests waiting in the activator queue for a ready replica.");
  for (const auto& [service, n] : queued) {
    w.AddValue(std::vector<Label>{{"service", service}}, n);
  }
  w.BeginFamily("gpuscale_gateway_queue_requests", MetricType::kGauge,
                "Requests waiting for a replica, by service and priority (critical, standard, "
                "sheddable).");
  for (const auto& [key, n] : queued_by_priority) {
    w.AddValue(std::vector<Label>{{"service", key.first}, {"priority", key.second}}, n);
  }
  struct HistogramFamily {
    const char* name;
    const char* help;
    metrics::BucketHistogram Service::*member;
  };
  for (const HistogramFamily& f : {
           HistogramFamily{"gpuscale_gateway_queue_seconds",
                           "Time requests waited for a ready replica.", &Service::queue},
           HistogramFamily{"gpuscale_gateway_time_to_first_token_seconds",
                           "Request arrival to the first response body byte.", &Service::ttft},
           HistogramFamily{"gpuscale_gateway_time_per_output_token_seconds",
                           "Mean gap between a stream's events after the first.", &Service::tpot},
           HistogramFamily{"gpuscale_gateway_request_duration_seconds",
                           "Request arrival to the last response byte.", &Service::e2e},
           HistogramFamily{"gpuscale_gateway_added_latency_seconds",
                           "The gateway's own part of the time to the first response body byte "
                           "(routing, connecting, relaying; not the replica's time or the queue).",
                           &Service::added},
       }) {
    w.BeginFamily(f.name, MetricType::kHistogram, f.help);
    for (const auto& [service, s] : services_) {
      AddHistogram(w, {{"service", service}}, s.*f.member);
    }
  }
  return w.Take();
}

}  // namespace gpuscale::gateway
