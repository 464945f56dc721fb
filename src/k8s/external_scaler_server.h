// KEDA external scaler (gRPC service `externalscaler.ExternalScaler`, proto/externalscaler.proto,
// the same protocol as kedacore/keda pkg/scalers/externalscaler) backed by the running daemon.
//
// A ScaledObject trigger `{type: external, metadata: {scalerAddress: HOST:PORT, service: NAME}}`
// makes KEDA call this server with scalerMetadata["service"] = NAME, the gpuscale service.
// The metric served is that service's desired replica count as gpuscale's policy decided it
// (DaemonApi ServiceView::desired_replicas) with a target of 1, so HPA's AverageValue rule
// desired = ceil(value / target) reaches the same count whatever the policy family:
//   GetMetricSpec  -> [{metricName, targetSize 1, targetSizeFloat 1}]
//   GetMetrics     -> [{metricName, metricValue desired, metricValueFloat desired}]
//   IsActive       -> desired > 0 (KEDA scales 0 <-> 1 on this)
//   StreamIsActive -> the current activity at once, then one message per change, polling the
//                     daemon every poll_interval; ends when the client cancels or Stop() runs.
// Errors, as gRPC statuses: INVALID_ARGUMENT when scalerMetadata has no `service`,
// NOT_FOUND naming the known services for an unknown one, UNAVAILABLE / INTERNAL for daemon
// failures. HPA keeps its 10 % tolerance: a change smaller than 10 % of the current count
// is not applied by Kubernetes (docs/cluster.md).
//
// Owns the gRPC server and its threads; the DaemonApi must outlive it. Start/Stop from one
// thread; the RPC handlers run on gRPC's threads and only call the thread-safe DaemonApi.
#pragma once

#include <memory>
#include <string>

#include "core/clock.h"
#include "core/result.h"
#include "daemon_api/daemon_api.h"

namespace gpuscale::k8s {

struct ExternalScalerOptions {
  std::string host = "127.0.0.1";  // loopback unless asked otherwise
  int port = 0;                    // 0 = the kernel picks one (Start returns it)
  Seconds poll_interval{1};        // StreamIsActive's daemon polling period; > 0
};

class ExternalScalerServer {
 public:
  ExternalScalerServer(daemon::DaemonApi& api, ExternalScalerOptions options);
  ~ExternalScalerServer();  // Stop()s
  ExternalScalerServer(const ExternalScalerServer&) = delete;
  ExternalScalerServer& operator=(const ExternalScalerServer&) = delete;

  // Binds and starts serving; returns the bound port. Errors: kUnavailable naming the
  // address when it cannot be bound, kFailedPrecondition when already started.
  Result<int> Start();
  // Ends open streams, waits for in-flight RPCs, stops the server. Idempotent.
  void Stop();

  // Name of the metric served for `service` (stable: KEDA keys HPA metrics on it).
  static std::string MetricName(const std::string& service);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuscale::k8s
