#include "api/json_views.h"

#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/clock.h"
#include "scale/replica_orchestrator.h"

namespace gpuscale::api {
namespace {

template <typename T>
Json OrNull(const std::optional<T>& value) {
  return value ? Json(*value) : Json(nullptr);
}

// Rounds for output so JSON does not show 0.30000000000000004.
double Round(double value, double scale = 1000.0) { return std::round(value * scale) / scale; }

std::string Time(Seconds at) { return FormatRfc3339(at); }

// A snapshot's GPUs carry their process tables; history points do not (the monitor drops
// them: a table per sample would multiply the history's memory for little use).
Json GpuArray(const std::vector<gpu::GpuInfo>& gpus, const gpu::ScoreWeights& weights,
              bool with_processes) {
  Json array = Json::array();
  for (const gpu::GpuInfo& gpu : gpus) {
    Json entry = GpuJson(gpu, weights);
    if (with_processes) {
      Json& processes = entry["processes"] = Json::array();
      for (const gpu::GpuProcess& p : gpu.processes) {
        processes.push_back(
            Json{{"pid", p.pid}, {"name", p.name}, {"used_memory_mb", OrNull(p.used_memory_mb)}});
      }
    }
    array.push_back(std::move(entry));
  }
  return array;
}

bool IsNumberText(const std::string& text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '+' && c != '-' && c != '.' &&
        c != 'e' && c != 'E') {
      return false;
    }
  }
  return true;
}

// A plain (unquoted) YAML scalar read as YAML 1.2's core schema would: null, bool, integer,
// float, else string.
Json PlainScalarJson(const std::string& text) {
  if (text.empty() || text == "~" || text == "null" || text == "Null" || text == "NULL") {
    return nullptr;
  }
  if (text == "true" || text == "True" || text == "TRUE") return true;
  if (text == "false" || text == "False" || text == "FALSE") return false;
  if (!IsNumberText(text)) return text;
  int64_t integer = 0;
  const char* end = text.data() + text.size();
  if (auto [ptr, ec] = std::from_chars(text.data(), end, integer);
      ec == std::errc() && ptr == end) {
    return integer;
  }
  char* parsed_end = nullptr;
  const double number = std::strtod(text.c_str(), &parsed_end);
  if (parsed_end == text.c_str() + text.size() && std::isfinite(number)) return number;
  return text;
}

// Recursion depth is bounded by the YAML parser's own nesting limit.
Json NodeJson(const YAML::Node& node, bool text_scalars) {
  switch (node.Type()) {
    case YAML::NodeType::Map: {
      Json object = Json::object();
      for (const auto& entry : node) {
        object[entry.first.Scalar()] = NodeJson(entry.second, text_scalars);
      }
      return object;
    }
    case YAML::NodeType::Sequence: {
      Json array = Json::array();
      for (const auto& item : node) array.push_back(NodeJson(item, text_scalars));
      return array;
    }
    case YAML::NodeType::Scalar:
      if (text_scalars || node.Tag() == "!") return node.Scalar();
      return PlainScalarJson(node.Scalar());
    default:
      return nullptr;
  }
}

}  // namespace

Json GpuJson(const gpu::GpuInfo& gpu, const gpu::ScoreWeights& weights) {
  return Json{{"index", gpu.index},
              {"uuid", gpu.uuid},
              {"name", gpu.name},
              {"type", gpu.type.empty() ? Json(nullptr) : Json(gpu.type)},
              {"price_per_hour", OrNull(gpu.price_per_hour)},
              {"spot", gpu.spot},
              {"memory_total_mb", OrNull(gpu.memory_total_mb)},
              {"memory_used_mb", OrNull(gpu.memory_used_mb)},
              {"memory_free_mb", OrNull(gpu.memory_free_mb)},
              {"utilization_percent", OrNull(gpu.utilization_percent)},
              {"temperature_c", OrNull(gpu.temperature_c)},
              {"power_draw_w", OrNull(gpu.power_draw_w)},
              {"score", Round(gpu::AvailabilityScore(gpu, weights), 10000.0)}};
}

Json SnapshotJson(const gpu::GpuSnapshot& snapshot, const gpu::ScoreWeights& weights) {
  return Json{{"backend", snapshot.backend},
              {"timestamp", Time(snapshot.taken_at)},
              {"gpus", GpuArray(snapshot.gpus, weights, true)}};
}

Json HistoryJson(const std::vector<gpu::HistoryPoint>& points, const gpu::ScoreWeights& weights) {
  Json array = Json::array();
  for (const gpu::HistoryPoint& point : points) {
    array.push_back(
        Json{{"timestamp", Time(point.taken_at)}, {"gpus", GpuArray(point.gpus, weights, false)}});
  }
  return Json{{"points", std::move(array)}};
}

namespace {

// Values rounded to 4 significant-ish decimals (charts need no more; it halves the body).
Json ColumnJson(const daemon::HistorySeries::Column& column) {
  Json array = Json::array();
  for (const std::optional<double>& v : column) {
    array.push_back(v ? Json(std::round(*v * 10000) / 10000) : Json(nullptr));
  }
  return array;
}

}  // namespace

Json ServiceHistoryJson(const std::string& service, const daemon::HistorySeries& series) {
  Json metrics = Json::array();
  for (const daemon::HistorySeries::Metric& m : series.metrics) {
    metrics.push_back(
        Json{{"name", m.name}, {"value", ColumnJson(m.value)}, {"target", ColumnJson(m.target)}});
  }
  Json gateway = Json::object();
  for (size_t g = 0; g < daemon::kHistoryGatewayFields.size(); ++g) {
    gateway[daemon::kHistoryGatewayFields[g]] = ColumnJson(series.gateway[g]);
  }
  return Json{{"service", service},
              {"from", series.from.count()},
              {"to", series.to.count()},
              {"step", series.step.count()},
              {"t", series.t},
              {"desired", ColumnJson(series.desired)},
              {"ready", ColumnJson(series.ready)},
              {"current", ColumnJson(series.current)},
              {"metrics", std::move(metrics)},
              {"gateway", std::move(gateway)}};
}

// The gateway's figures (daemon_api/gateway_figures.h); durations in seconds, null when the
// window holds no observation.
Json GatewayJson(const std::optional<daemon::GatewayFigures>& g) {
  if (!g) return nullptr;
  return Json{{"requests_total", g->requests_total},
              {"errors_total", g->errors_total},
              {"in_flight", g->in_flight},
              {"queued", g->queued},
              {"request_rate_per_second", OrNull(g->request_rate)},
              {"error_ratio", OrNull(g->error_ratio)},
              {"ttft_p50_seconds", OrNull(g->ttft_p50)},
              {"ttft_p90_seconds", OrNull(g->ttft_p90)},
              {"tpot_p50_seconds", OrNull(g->tpot_p50)},
              {"e2e_p90_seconds", OrNull(g->e2e_p90)},
              {"added_latency_p99_seconds", OrNull(g->added_p99)},
              {"ttft_violation_ratio", OrNull(g->ttft_violation_ratio)},
              {"tpot_violation_ratio", OrNull(g->tpot_violation_ratio)}};
}

namespace {

// The spec as JSON, converted from its YAML text once per distinct text: parsing YAML was
// most of a 1,000-service GET /v1/services (a document per service per request), and a
// spec changes only when someone edits it. Bounded: cleared past 16,384 texts (a fleet of
// that many services, or that many edits; ~4 KB each).
Json SpecJson(const std::string& yaml_text) {
  static std::mutex mu;
  static auto* cache = new std::unordered_map<std::string, Json>();
  std::lock_guard lock(mu);
  if (auto it = cache->find(yaml_text); it != cache->end()) return it->second;
  if (cache->size() >= 16384) cache->clear();
  return cache->emplace(yaml_text, YamlTextToJson(yaml_text)).first->second;
}

}  // namespace

Json ServiceJson(const daemon::ServiceView& service) {
  Json json = ServiceStatusJson(service);
  json["spec"] = SpecJson(service.spec_yaml);
  return json;
}

namespace {

Json ApplyFailureJson(const std::optional<daemon::ApplyFailure>& failure) {
  if (!failure) return nullptr;
  return Json{{"message", failure->message},
              {"attempts", failure->attempts},
              {"next_retry_at", Time(failure->next_retry_at)}};
}

}  // namespace

Json ServiceStatusJson(const daemon::ServiceView& service) {
  Json last_decision = nullptr;
  if (service.last_decision_at) {
    last_decision = Json{{"at", Time(*service.last_decision_at)},
                         {"reason", service.last_reason},
                         {"details", service.last_details}};
  }
  Json json{{"name", service.config.name},
            {"policy_family", service.policy_family},
            {"min_replicas", service.config.min_replicas},
            {"max_replicas", service.config.max_replicas},
            {"desired_replicas", service.desired_replicas},
            {"manual_replicas", OrNull(service.manual_replicas)},
            {"replicas", service.replicas},
            {"ready_replicas", service.ready_replicas},
            {"pending_replicas", service.pending_replicas},
            {"draining_replicas", service.draining_replicas},
            {"last_decision", std::move(last_decision)},
            {"metric_errors", service.metric_errors},
            {"failure", service.failure.empty() ? Json(nullptr) : Json(service.failure)},
            {"apply_failure", ApplyFailureJson(service.apply_failure)},
            {"gateway", GatewayJson(service.gateway)},
            {"created_at", Time(service.created_at)}};
  if (!service.pools.empty()) {  // a disaggregated service: its pools and their GPU budget
    Json pools = Json::array();
    for (const daemon::PoolView& p : service.pools) {
      pools.push_back(Json{{"role", p.role},
                           {"policy_family", p.policy_family},
                           {"min_replicas", p.min_replicas},
                           {"max_replicas", p.max_replicas},
                           {"gpus_per_replica", p.gpus_per_replica},
                           {"desired_replicas", p.desired_replicas},
                           {"replicas", p.replicas},
                           {"ready_replicas", p.ready_replicas},
                           {"pending_replicas", p.pending_replicas},
                           {"draining_replicas", p.draining_replicas},
                           {"gpus_held", p.gpus_held},
                           {"last_reason", p.last_reason}});
    }
    json["pools"] = std::move(pools);
    json["gpu_budget"] = Json{{"gpus", service.gpu_budget}, {"held", service.gpus_held}};
  }
  return json;
}

Json RuleJson(const daemon::RuleView& rule) {
  return Json{{"id", rule.id},
              {"service", rule.service},
              {"name", rule.name},
              {"source", rule.source},
              {"metric", rule.metric},
              {"aggregation", rule.aggregation},
              {"comparator", rule.comparator},
              {"threshold", rule.threshold},
              {"step_size", rule.step_size},
              {"cooldown_seconds", rule.cooldown.count()},
              {"min_replicas", rule.min_replicas},
              {"max_replicas", rule.max_replicas},
              {"enabled", rule.enabled},
              {"created_at", Time(rule.created_at)}};
}

Json ReplicaJson(const daemon::ReplicaView& replica) {
  return Json{{"id", replica.id},
              {"phase", scale::ReplicaPhaseName(replica.phase)},
              {"state", replica.state},
              {"phase_since", Time(replica.phase_since)},
              // "" = not placed yet (a Slurm job still queued): null, not an address.
              {"host", replica.host.empty() ? Json(nullptr) : Json(replica.host)},
              {"port", replica.port},
              {"gpus", replica.gpus},
              {"pid", replica.pid},
              {"restarts", replica.restarts},
              {"uptime_seconds", Round(replica.uptime.count())},
              {"outstanding_requests", replica.outstanding_requests},
              {"adopted", replica.adopted},
              {"serving", replica.serving},
              {"last_error", replica.last_error},
              {"log_path", replica.log_path},
              // A mixed fleet's: null for a service without variants.
              {"variant", replica.variant.empty() ? Json(nullptr) : Json(replica.variant)},
              {"capacity", replica.capacity},
              {"preempt_deadline",
               replica.preempt_deadline ? Json(Time(*replica.preempt_deadline)) : Json(nullptr)}};
}

Json LeaseJson(const alloc::Lease& lease) {
  return Json{{"key", lease.key},
              {"gpu_index", lease.gpu_index},
              {"node", lease.node},
              {"owner", lease.owner},
              {"gpu_type", lease.gpu_type.empty() ? Json(nullptr) : Json(lease.gpu_type)},
              {"acquired_at", Time(lease.acquired_at)}};
}

Json EventJson(const daemon::EventView& event) {
  Json data = event.data.empty() ? Json(nullptr) : Json(event.data);
  if (!event.data.empty()) {
    Json parsed = Json::parse(event.data, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_discarded()) data = std::move(parsed);
  }
  return Json{{"id", event.id},
              {"at", Time(event.at)},
              {"service", event.service},
              {"kind", event.kind},
              {"replica", event.replica},
              {"message", event.message},
              {"data", std::move(data)}};
}

Json ErrorJson(const Error& error) {
  return Json{{"error",
               {{"code", ErrorCodeName(error.code)},
                {"message", error.message},
                {"field", error.field.empty() ? Json(nullptr) : Json(error.field)}}}};
}

Json YamlTextToJson(std::string_view yaml_text) {
  if (yaml_text.empty()) return nullptr;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const std::exception&) {
    return std::string(yaml_text);
  }
  if (!root.IsMap()) return NodeJson(root, false);
  Json object = Json::object();
  for (const auto& entry : root) {
    const std::string& key = entry.first.Scalar();
    object[key] = NodeJson(entry.second, key == "command" || key == "env");
  }
  return object;
}

}  // namespace gpuscale::api
