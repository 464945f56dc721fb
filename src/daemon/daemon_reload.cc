// Daemon::Reload: a config file read again on SIGHUP, applied through the same create and
// update paths as the REST API, so a reload and a PUT behave alike.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "daemon/daemon.h"
#include "daemon/daemon_internal.h"

namespace gpuscale::daemon {

using events::EventKind;

namespace {

// The top-level sections a running daemon cannot change: they are read once, at Open (the
// GPU backend and sampler, the API listener, the store).
std::vector<std::string> SectionsNeedingRestart(const DaemonConfig& running,
                                                const DaemonConfig& reread) {
  std::vector<std::string> changed;
  if (running.gpu != reread.gpu) changed.push_back("gpu");
  if (running.api != reread.api) changed.push_back("api");
  if (running.state_dir != reread.state_dir) changed.push_back("state_dir");
  return changed;
}

std::string Names(const std::vector<std::string>& names) {
  return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::string FormatReloadReport(const ReloadReport& r) {
  if (!r.applied) return fmt::format("not applied, nothing changed: {}", fmt::join(r.errors, "; "));
  std::string line = fmt::format("created {}; updated {}; unchanged {}", Names(r.created),
                                 Names(r.updated), Names(r.unchanged));
  if (!r.kept.empty()) {
    line += fmt::format("; kept (no longer in the file; DELETE /v1/services/NAME removes one) {}",
                        Names(r.kept));
  }
  if (!r.applied_live.empty()) line += fmt::format("; applied {}", Names(r.applied_live));
  if (!r.needs_restart.empty()) {
    line += fmt::format("; changed but read only at start (restart to apply) {}",
                        Names(r.needs_restart));
  }
  if (!r.errors.empty()) line += fmt::format("; errors: {}", fmt::join(r.errors, "; "));
  return line;
}

// The sections read afresh where they are used: the PromQL server, the scrape cutoff and the
// retention (under loop_mu_, which the tick holds), the task scheduler's tuning
// (TaskManager::Retune) and the loop interval (under mu_, which the loop holds to wait).
std::vector<std::string> Daemon::ApplyLiveSections(const DaemonConfig& reread) {
  std::vector<std::string> applied;
  bool retune = false;
  {
    MutexLock loop_lock(loop_mu_);
    if (config_.prometheus != reread.prometheus) {
      config_.prometheus = reread.prometheus;
      applied.push_back("prometheus");
    }
    if (config_.scrape != reread.scrape) {
      config_.scrape = reread.scrape;  // read by the next tick's collect
      applied.push_back("scrape");
    }
    if (config_.retention != reread.retention) {
      config_.retention = reread.retention;  // read by the next tick's persist phase
      applied.push_back("retention");
    }
    if (config_.tasks != reread.tasks) {
      config_.tasks = reread.tasks;  // only OpenTasks reads it otherwise
      retune = true;
      applied.push_back("tasks");
    }
  }
  if (retune && tasks_) {  // takes the task manager's own locks: none of ours held
    tasks_->Retune({reread.tasks.recheck_interval, reread.tasks.max_head_skips,
                    reread.tasks.stop_grace.value_or(options_.stop_grace)});
  }
  MutexLock lock(mu_);
  if (config_.loop_interval != reread.loop_interval) {
    config_.loop_interval = reread.loop_interval;
    applied.push_back("loop_interval_seconds");
  }
  return applied;
}

ReloadReport Daemon::Reload(const Result<DaemonConfig>& reread) {
  ReloadReport report;
  const Seconds now = clock_.Now();
  if (!reread) {
    report.applied = false;
    report.errors.push_back(reread.error().ToString());
    PublishEvents(
        {MakeEvent(now, "", EventKind::kConfigReloadFailed, "", FormatReloadReport(report))});
    return report;
  }
  // First, so that the services created or updated below query the new server from the start.
  report.applied_live = ApplyLiveSections(*reread);
  std::set<std::string> named;
  for (size_t i = 0; i < reread->services.size(); ++i) {
    const ServiceConfig& service = reread->services[i];
    named.insert(service.name);
    Result<ServiceView> current = GetService(service.name);
    if (current && current->spec_yaml == ServiceConfigToYaml(service)) {
      report.unchanged.push_back(service.name);
      continue;
    }
    Result<ServiceView> applied = current ? UpdateService(service) : CreateService(service);
    if (!applied) {
      Error e = applied.error();
      if (!e.field.empty()) e.field = fmt::format("services[{}].{}", i, e.field);
      report.errors.push_back(fmt::format("service '{}' left as it was: {}", service.name,
                                          e.ToString()));
      continue;
    }
    (current ? report.updated : report.created).push_back(service.name);
  }
  for (const ServiceView& view : ListServices()) {
    if (named.count(view.config.name) == 0) report.kept.push_back(view.config.name);
  }
  report.needs_restart = SectionsNeedingRestart(config_, *reread);
  PublishEvents({MakeEvent(now, "", EventKind::kConfigReloaded, "", FormatReloadReport(report))});
  return report;
}

}  // namespace gpuscale::daemon
