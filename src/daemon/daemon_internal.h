// Daemon's private types, shared by daemon.cc, daemon_open.cc and daemon_requests.cc.
// Not part of the module's interface.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/daemon.h"
#include "daemon/metric_collector.h"
#include "daemon/metric_error_events.h"

namespace gpuscale::daemon {

struct Daemon::Slot {
  std::string name;
  std::unique_ptr<orch::ServiceOrchestrator> orch;
  std::unique_ptr<ServiceRuntime> runtime;  // null for orphans being stopped
  // A deleted service (or an orphan): its store row, marked deleting, goes once the
  // replicas are gone (PollRetiring). False for services retired by Shutdown.
  bool deleting = false;
  Seconds created_at{0};
  MetricErrorEvents metric_events;  // which metric-error events the log gets
  // The spec last rendered for the API view and its YAML (ViewOf; the loop thread only).
  mutable std::optional<std::pair<ServiceConfig, std::string>> spec_yaml;
};

struct Daemon::Command {
  enum class Kind { kCreate, kUpdate, kDelete, kRules, kManual };
  Kind kind = Kind::kCreate;
  std::string service;
  ServiceConfig config;       // kCreate, kUpdate
  std::optional<int> manual;  // kManual
  Seconds created_at{0};      // kCreate
};

// Jobs of one tick, with the slices that belong to each service.
struct Daemon::Observed {
  std::vector<ScrapeJob> scrapes;
  std::vector<QueryJob> queries;
  struct Range {
    size_t scrape_begin = 0, scrape_end = 0, query_begin = 0, query_end = 0;
    std::vector<orch::ReplicaInfo> replicas;  // scraped ones, same order as the scrapes
    std::vector<PromQuery> prom;              // same order as the queries
  };
  std::map<std::string, Range> ranges;  // by service
};

// An event row stamped `now` (store::EventRow has no constructor).
store::EventRow MakeEvent(Seconds now, std::string service, std::string kind, std::string replica,
                          std::string message);

}  // namespace gpuscale::daemon
