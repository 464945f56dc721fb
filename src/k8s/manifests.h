// Kubernetes manifests for one gpuscale service: a Deployment (GPU limits, startup, liveness
// and readiness probes on the readiness path), a Service in front of it, and a KEDA
// ScaledObject that scales the Deployment, either
//   - kPrometheus: one `prometheus` trigger per target metric (query, threshold, metricType)
//     with the HPA behavior, pollingInterval and cooldownPeriod of a target policy, so KEDA
//     + HPA run the same algorithm gpuscale's `target` family simulates (scale/target_policy.h);
//   - kExternal: one `external` trigger pointing at gpuscale's KEDA external scaler
//     (k8s/external_scaler_server.h), whose metric makes HPA reach the count gpuscale's own
//     policy decided; the HPA behavior is then a pass-through (no second smoothing layer).
// The field-by-field mapping is documented in docs/cluster.md.
//
// Pure: builds k8s::Value trees from plain specs; no I/O. Thread-compatible.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/clock.h"
#include "core/result.h"
#include "k8s/document.h"
#include "scale/target_policy.h"

namespace gpuscale::k8s {

// What the Deployment runs.
struct WorkloadSpec {
  std::string name;            // DNS-1035 label ([a-z]([-a-z0-9]*[a-z0-9])?, <= 63 chars)
  std::string namespace_name;  // "" = no metadata.namespace (kubectl's current namespace)
  std::string image = "vllm/vllm-openai:latest";
  // Argv template (orch/argv_template.h placeholders). When `command_is_program`, element 0
  // replaces the image's entrypoint (container `command`) and the rest are `args`; otherwise
  // every element is an `args` entry after the image's entrypoint (Corrino recipes).
  // {port} -> container_port, {gpus} -> "0,...,n-1" (the pod sees only its own GPUs),
  // {replica} -> $(POD_NAME) (Kubernetes expands it from the pod's own name).
  std::vector<std::string> argv;
  bool command_is_program = false;
  std::vector<std::pair<std::string, std::string>> env;
  int container_port = 8000;  // 1..65535
  int service_port = 80;      // the Service's port (Corrino's recipe services listen on 80)
  int gpus_per_replica = 1;   // nvidia.com/gpu limit; 0 = no GPU request
  std::string readiness_path = "/health";  // startup, liveness and readiness probes
  Seconds startup_timeout{900};            // startupProbe: failureThreshold x 10 s periods
  std::optional<Seconds> drain_timeout;    // terminationGracePeriodSeconds when set
  int initial_replicas = 1;                // Deployment spec.replicas (KEDA takes over)
  std::string node_shape;                  // node.kubernetes.io/instance-type selector; "" = none
};

enum class TriggerKind { kPrometheus, kExternal };

struct ScalingSpec {
  TriggerKind kind = TriggerKind::kPrometheus;
  // min/max replicas, and for kPrometheus also metrics (each needs a `query`), behavior,
  // polling_interval_seconds, cooldown_period_seconds and fallback. For kExternal only
  // min/max and polling_interval_seconds are used.
  scale::TargetPolicyConfig target;
  std::string prometheus_url = "http://prometheus.monitoring.svc:9090";  // kPrometheus
  std::string scaler_address;  // kExternal: host:port of gpuscale's scaler, required
  std::string service;         // kExternal: scalerMetadata service name
};

struct ManifestSpec {
  WorkloadSpec workload;
  ScalingSpec scaling;
};

// Deployment, Service, ScaledObject, in that order.
// Errors (kInvalidArgument, naming the field): a name that is not a DNS-1035 label, a port
// out of range, an argv template with an unknown placeholder, a prometheus metric without
// a query or of type Utilization, a behavior whose windows/periods are not whole seconds in
// Kubernetes' ranges, kExternal without scaler_address.
Result<std::vector<Value>> RenderManifests(const ManifestSpec& spec);

// The pass-through HPA behavior of external triggers: no stabilization, and up to the
// whole range in one 15 s period each way, so HPA applies gpuscale's count as is.
scale::Behavior PassThroughBehavior(int max_replicas);

}  // namespace gpuscale::k8s
