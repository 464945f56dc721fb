// FakeDaemonApi: an in-memory daemon::DaemonApi for the API tests (test-only; no control
// loop). Services, rules, replicas, leases and events live in maps; tests seed GPUs,
// replicas, leases and events directly and read back what the API asked for.
//
// Tasks and experiments live in maps too: SubmitTask stores the task with one queued
// experiment per grid point; tests seed and update tasks and experiments with PutTask /
// PutExperiment (there is no queue: nothing runs unless a test says so).
//
// Behaviour follows daemon_api.h's contract where the API depends on it: duplicate service
// -> kFailedPrecondition, unknown service/rule -> kNotFound, manual replicas outside
// [min, max] -> kInvalidArgument naming "replicas", AddRule on a service whose policy is
// in its spec -> kFailedPrecondition, WaitForEvents blocks on a condition variable, unknown
// task/experiment -> kNotFound naming "id", cancel of an ended task -> kFailedPrecondition.
//
// Thread-safety: every method locks mu_ (the API calls it from many worker threads).
#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "daemon/service_history.h"
#include "daemon_api/daemon_api.h"
#include "serve_config/daemon_config.h"
#include "task/task_types.h"

namespace gpuscale::api {

class FakeDaemonApi : public daemon::DaemonApi {
 public:
  // --- seeding (tests) ---
  void SetGpus(Result<gpu::GpuSnapshot> snapshot) {
    std::lock_guard lock(mu_);
    gpus_ = std::move(snapshot);
  }
  void SetHistory(std::vector<gpu::HistoryPoint> history) {
    std::lock_guard lock(mu_);
    history_ = std::move(history);
  }
  void SetReplicas(const std::string& service, std::vector<daemon::ReplicaView> replicas) {
    std::lock_guard lock(mu_);
    replicas_[service] = std::move(replicas);
  }
  void SetLeases(std::vector<alloc::Lease> leases) {
    std::lock_guard lock(mu_);
    leases_ = std::move(leases);
  }
  void SetReady(Status ready) {
    std::lock_guard lock(mu_);
    ready_ = std::move(ready);
  }
  void SetLastDecision(const std::string& service, Seconds at, std::string reason) {
    std::lock_guard lock(mu_);
    auto it = services_.find(service);
    if (it == services_.end()) return;
    it->second.last_decision_at = at;
    it->second.last_reason = std::move(reason);
    it->second.last_details = {"detail one"};
  }
  // Why `service`'s replicas cannot start (ServiceView::failure; "" = they can).
  void SetFailure(const std::string& service, std::string failure) {
    std::lock_guard lock(mu_);
    auto it = services_.find(service);
    if (it != services_.end()) it->second.failure = std::move(failure);
  }
  void SetApplyFailure(const std::string& service, daemon::ApplyFailure failure) {
    std::lock_guard lock(mu_);
    auto it = services_.find(service);
    if (it != services_.end()) it->second.apply_failure = std::move(failure);
  }
  // Makes `service`'s view a disaggregated one's: its pools and GPU budget.
  void SetPools(const std::string& service, std::vector<daemon::PoolView> pools, int budget,
                int held) {
    std::lock_guard lock(mu_);
    auto it = services_.find(service);
    if (it == services_.end()) return;
    it->second.pools = std::move(pools);
    it->second.gpu_budget = budget;
    it->second.gpus_held = held;
  }
  // Appends an event (ids 1, 2, ...) and wakes WaitForEvents.
  int64_t AddEvent(std::string service, std::string kind, std::string message,
                   std::string data = {}) {
    std::lock_guard lock(mu_);
    daemon::EventView event;
    event.id = static_cast<int64_t>(events_.size()) + 1;
    event.at = Seconds{1700000000.0 + static_cast<double>(event.id)};
    event.service = std::move(service);
    event.kind = std::move(kind);
    event.message = std::move(message);
    event.data = std::move(data);
    events_.push_back(std::move(event));
    events_cv_.notify_all();
    return events_.back().id;
  }
  // --- tasks (seeding) ---
  // Stores or replaces a task (record.id >= 1); SubmitTask ids continue after the largest.
  void PutTask(task::TaskRecord record) {
    std::lock_guard lock(mu_);
    tasks_[record.id] = std::move(record);
  }
  // Stores or replaces an experiment (id >= 1, task_id of a stored task).
  void PutExperiment(task::ExperimentRecord experiment) {
    std::lock_guard lock(mu_);
    next_experiment_id_ = std::max(next_experiment_id_, experiment.id + 1);
    experiments_[experiment.id] = std::move(experiment);
  }
  // The next SubmitTask fails with `error` (once), as the TaskManager's checks would.
  void FailNextSubmit(Error error) {
    std::lock_guard lock(mu_);
    submit_error_ = std::move(error);
  }
  // Every task method fails with `status` (e.g. kUnavailable: no TaskManager wired).
  void SetTasksStatus(Status status) {
    std::lock_guard lock(mu_);
    tasks_status_ = std::move(status);
  }
  // Tasks SubmitTask accepted, in order (definition and source text as received).
  std::vector<task::TaskRecord> submitted() const {
    std::lock_guard lock(mu_);
    return submitted_;
  }

  // What the API last asked for.
  Seconds last_history_window() const {
    std::lock_guard lock(mu_);
    return last_history_window_;
  }
  daemon::EventQuery last_event_query() const {
    std::lock_guard lock(mu_);
    return last_event_query_;
  }

  // --- DaemonApi ---
  Result<gpu::GpuSnapshot> Gpus() override {
    std::lock_guard lock(mu_);
    return gpus_;
  }
  gpu::ScoreWeights ScoreWeights() const override { return {}; }
  std::vector<gpu::HistoryPoint> GpuHistory(Seconds window) override {
    std::lock_guard lock(mu_);
    last_history_window_ = window;
    return history_;
  }

  std::vector<daemon::ServiceView> ListServices() override {
    std::lock_guard lock(mu_);
    std::vector<daemon::ServiceView> views;
    for (const auto& [name, view] : services_) views.push_back(view);
    return views;
  }
  Result<daemon::ServiceView> GetService(const std::string& name) override {
    std::lock_guard lock(mu_);
    auto it = services_.find(name);
    if (it == services_.end()) return NotFound(fmt_no_service(name), "name");
    return it->second;
  }
  Result<daemon::ServiceView> CreateService(const daemon::ServiceConfig& config) override {
    std::lock_guard lock(mu_);
    if (services_.count(config.name) > 0) {
      return FailedPrecondition("service '" + config.name + "' already exists", "name");
    }
    daemon::ServiceView view = MakeView(config);
    view.created_at = Seconds{1700000000.0};
    services_[config.name] = view;
    return view;
  }
  Result<daemon::ServiceView> UpdateService(const daemon::ServiceConfig& config) override {
    std::lock_guard lock(mu_);
    auto it = services_.find(config.name);
    if (it == services_.end()) return NotFound(fmt_no_service(config.name), "name");
    daemon::ServiceView view = MakeView(config);
    view.created_at = it->second.created_at;
    view.manual_replicas = it->second.manual_replicas;
    it->second = view;
    return view;
  }
  Status DeleteService(const std::string& name) override {
    std::lock_guard lock(mu_);
    if (services_.erase(name) == 0) return NotFound(fmt_no_service(name), "name");
    return OkStatus();
  }

  Result<std::vector<daemon::RuleView>> ListRules(const std::string& service) override {
    std::lock_guard lock(mu_);
    if (services_.count(service) == 0) return NotFound(fmt_no_service(service), "name");
    std::vector<daemon::RuleView> rules;
    for (const daemon::RuleView& rule : rules_) {
      if (rule.service == service) rules.push_back(rule);
    }
    return rules;
  }
  Result<daemon::RuleView> AddRule(const std::string& service,
                                   const daemon::RuleView& rule) override {
    std::lock_guard lock(mu_);
    auto it = services_.find(service);
    if (it == services_.end()) return NotFound(fmt_no_service(service), "name");
    if (!it->second.config.policy_yaml.empty()) {
      return FailedPrecondition("service '" + service + "' has its policy in its spec");
    }
    daemon::RuleView added = rule;
    added.id = next_rule_id_++;
    added.service = service;
    added.created_at = Seconds{1700000100.0};
    rules_.push_back(added);
    return added;
  }
  Status DeleteRule(const std::string& service, int64_t rule_id) override {
    std::lock_guard lock(mu_);
    if (services_.count(service) == 0) return NotFound(fmt_no_service(service), "name");
    auto it = std::find_if(rules_.begin(), rules_.end(), [&](const daemon::RuleView& r) {
      return r.service == service && r.id == rule_id;
    });
    if (it == rules_.end()) return NotFound("no rule " + std::to_string(rule_id), "id");
    rules_.erase(it);
    return OkStatus();
  }

  Result<daemon::ServiceView> SetDesiredReplicas(const std::string& service,
                                                 std::optional<int> replicas) override {
    std::lock_guard lock(mu_);
    auto it = services_.find(service);
    if (it == services_.end()) return NotFound(fmt_no_service(service), "name");
    const daemon::ServiceConfig& config = it->second.config;
    if (replicas && (*replicas < config.min_replicas || *replicas > config.max_replicas)) {
      return InvalidArgument("outside [min_replicas, max_replicas]", "replicas");
    }
    it->second.manual_replicas = replicas;
    if (replicas) it->second.desired_replicas = *replicas;
    return it->second;
  }
  Result<std::vector<daemon::ReplicaView>> ListReplicas(const std::string& service) override {
    std::lock_guard lock(mu_);
    if (services_.count(service) == 0) return NotFound(fmt_no_service(service), "name");
    return replicas_[service];
  }
  // A notice for a replica some service lists (no variants here: every one is taken).
  Result<daemon::PreemptNotice> PreemptReplica(const std::string& replica,
                                               std::optional<Seconds> notice) override {
    std::lock_guard lock(mu_);
    for (const auto& [service, views] : replicas_) {
      for (const daemon::ReplicaView& r : views) {
        if (r.id == replica)
          return daemon::PreemptNotice{service, replica, notice.value_or(Seconds{120})};
      }
    }
    return NotFound("no replica '" + replica + "'", "replica");
  }
  // Tests record ticks into `history` (the daemon's own HistoryBook, so its range checks
  // are the daemon's: the one daemon piece api_test links); services without any get empty
  // steps, as from the daemon.
  // Defaults: to = 3600 (the fakes' clocks start at 0), from = to - 3600.
  Result<daemon::HistorySeries> History(const std::string& service,
                                        std::optional<Seconds> from_at,
                                        std::optional<Seconds> to_at, Seconds step) override {
    const Seconds to = to_at.value_or(Seconds{3600});
    const Seconds from = from_at.value_or(to - Seconds{3600});
    {
      std::lock_guard lock(mu_);
      if (services_.count(service) == 0) return NotFound(fmt_no_service(service), "name");
    }
    return history.Query(service, from, to, step);
  }
  daemon::HistoryBook history;

  std::vector<alloc::Lease> Leases() override {
    std::lock_guard lock(mu_);
    return leases_;
  }

  Result<std::vector<daemon::EventView>> Events(const daemon::EventQuery& query) override {
    std::lock_guard lock(mu_);
    last_event_query_ = query;
    std::vector<daemon::EventView> out;
    for (const daemon::EventView& event : events_) {
      if (event.id <= query.since_id) continue;
      if (!query.service.empty() && event.service != query.service) continue;
      if (query.kind && event.kind != events::EventKindName(*query.kind)) continue;
      if (static_cast<int>(out.size()) >= query.limit) break;
      out.push_back(event);
    }
    return out;
  }
  int64_t WaitForEvents(int64_t after_id, Seconds timeout) override {
    std::unique_lock lock(mu_);
    events_cv_.wait_for(lock, timeout, [&] { return NewestLocked() > after_id; });
    return std::max(after_id, NewestLocked());
  }

  Result<task::TaskRecord> SubmitTask(task::TaskDefinition definition,
                                      std::string source_text) override {
    std::lock_guard lock(mu_);
    GS_RETURN_IF_ERROR(tasks_status_);
    if (submit_error_) {
      Error error = *std::move(submit_error_);
      submit_error_.reset();
      return Unexpected<Error>(std::move(error));
    }
    task::TaskRecord record;
    record.id = NextTaskIdLocked();
    record.definition = std::move(definition);
    record.source_text = std::move(source_text);
    record.created_at = Seconds{1700000200.0 + static_cast<double>(record.id)};
    AddGridExperimentsLocked(record);
    tasks_[record.id] = record;
    submitted_.push_back(record);
    return record;
  }
  std::vector<task::TaskRecord> ListTasks() override {
    std::lock_guard lock(mu_);
    std::vector<task::TaskRecord> newest_first;
    if (!tasks_status_) return newest_first;
    for (auto it = tasks_.rbegin(); it != tasks_.rend(); ++it) newest_first.push_back(it->second);
    return newest_first;
  }
  Result<task::TaskRecord> GetTask(int64_t id) override {
    std::lock_guard lock(mu_);
    GS_RETURN_IF_ERROR(tasks_status_);
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return NotFound("no task " + std::to_string(id), "id");
    return it->second;
  }
  // As the contract says: cancelling an ended task is kFailedPrecondition.
  Result<task::TaskRecord> CancelTask(int64_t id) override {
    std::lock_guard lock(mu_);
    GS_RETURN_IF_ERROR(tasks_status_);
    auto it = tasks_.find(id);
    if (it == tasks_.end()) return NotFound("no task " + std::to_string(id), "id");
    task::TaskRecord& record = it->second;
    if (record.status != task::TaskStatus::kQueued &&
        record.status != task::TaskStatus::kRunning) {
      return FailedPrecondition("task " + std::to_string(id) + " already ended (" +
                                    std::string(task::TaskStatusName(record.status)) + ")",
                                "id");
    }
    record.status = task::TaskStatus::kCancelled;
    record.finished_at = Seconds{1700000900.0};
    record.message = "cancelled by request";
    for (auto& [experiment_id, experiment] : experiments_) {
      if (experiment.task_id != id || task::IsTerminal(experiment.status)) continue;
      experiment.status = task::ExperimentStatus::kCancelled;
      experiment.finished_at = record.finished_at;
      ++record.experiments_done;
    }
    return record;
  }
  Result<std::vector<task::ExperimentRecord>> ListExperiments(int64_t task_id) override {
    std::lock_guard lock(mu_);
    GS_RETURN_IF_ERROR(tasks_status_);
    if (tasks_.count(task_id) == 0) return NotFound("no task " + std::to_string(task_id), "id");
    std::vector<task::ExperimentRecord> by_index;
    for (const auto& [id, experiment] : experiments_) {
      if (experiment.task_id == task_id) by_index.push_back(experiment);
    }
    std::sort(by_index.begin(), by_index.end(),
              [](const auto& a, const auto& b) { return a.index < b.index; });
    return by_index;
  }
  Result<task::ExperimentRecord> GetExperiment(int64_t id) override {
    std::lock_guard lock(mu_);
    GS_RETURN_IF_ERROR(tasks_status_);
    auto it = experiments_.find(id);
    if (it == experiments_.end()) return NotFound("no experiment " + std::to_string(id), "id");
    return it->second;
  }
  std::string MetricsText() override {
    return "# HELP gpuscale_up 1 while the daemon runs.\n# TYPE gpuscale_up gauge\n"
           "gpuscale_up 1\n";
  }
  Status Ready() override {
    std::lock_guard lock(mu_);
    return ready_;
  }

 private:
  static std::string fmt_no_service(const std::string& name) {
    return "no service named '" + name + "'";
  }
  static daemon::ServiceView MakeView(const daemon::ServiceConfig& config) {
    daemon::ServiceView view;
    view.config = config;
    view.spec_yaml = daemon::ServiceConfigToYaml(config);
    view.policy_family = config.policy_family;
    view.desired_replicas = config.min_replicas;
    return view;
  }
  int64_t NewestLocked() const { return events_.empty() ? 0 : events_.back().id; }
  int64_t NextTaskIdLocked() const { return tasks_.empty() ? 1 : tasks_.rbegin()->first + 1; }
  // One queued experiment per grid point (parameters in name order, the last varying
  // fastest, as task/grid.h orders them), so that submitted tasks have experiments to show.
  void AddGridExperimentsLocked(task::TaskRecord& record) {
    const auto& grid = record.definition.spec.parameters;
    int total = 1;
    for (const auto& [name, value] : grid) total *= static_cast<int>(value.items.size());
    for (int index = 0; index < total; ++index) {
      task::ExperimentRecord experiment;
      experiment.id = next_experiment_id_++;
      experiment.task_id = record.id;
      experiment.index = index;
      experiment.queued_at = record.created_at;
      int rest = index;
      for (auto it = grid.rbegin(); it != grid.rend(); ++it) {
        const int size = static_cast<int>(it->second.items.size());
        experiment.parameters[it->first] = it->second.items[rest % size];
        rest /= size;
      }
      experiments_[experiment.id] = std::move(experiment);
    }
    record.experiments_total = total;
  }

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable events_cv_;
  Result<gpu::GpuSnapshot> gpus_ = gpu::GpuSnapshot{};
  std::vector<gpu::HistoryPoint> history_;
  std::map<std::string, daemon::ServiceView> services_;
  std::vector<daemon::RuleView> rules_;
  int64_t next_rule_id_ = 1;
  std::map<std::string, std::vector<daemon::ReplicaView>> replicas_;
  std::vector<alloc::Lease> leases_;
  std::vector<daemon::EventView> events_;
  Status ready_;
  Seconds last_history_window_{0};
  daemon::EventQuery last_event_query_;
  std::map<int64_t, task::TaskRecord> tasks_;
  std::map<int64_t, task::ExperimentRecord> experiments_;
  int64_t next_experiment_id_ = 1;
  std::optional<Error> submit_error_;
  Status tasks_status_;
  std::vector<task::TaskRecord> submitted_;
};

}  // namespace gpuscale::api
