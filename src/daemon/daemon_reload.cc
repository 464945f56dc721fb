// Daemon::Reload: a config file read again on SIGHUP, applied through the same create and
// update paths as the REST API, so a reload and a PUT behave alike.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <set>

#include "daemon/daemon.h"
#include "daemon/daemon_internal.h"

namespace gpuscale::daemon {
namespace {

// The top-level sections a running daemon cannot change: they are read once, at Open.
std::vector<std::string> SectionsNeedingRestart(const DaemonConfig& running,
                                                const DaemonConfig& reread) {
  std::vector<std::string> changed;
  if (running.gpu != reread.gpu) changed.push_back("gpu");
  if (running.api != reread.api) changed.push_back("api");
  if (running.state_dir != reread.state_dir) changed.push_back("state_dir");
  if (running.loop_interval != reread.loop_interval) changed.push_back("loop_interval_seconds");
  if (running.prometheus != reread.prometheus) changed.push_back("prometheus");
  if (running.tasks != reread.tasks) changed.push_back("tasks");
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
  if (!r.needs_restart.empty()) {
    line += fmt::format("; changed but read only at start (restart to apply) {}",
                        Names(r.needs_restart));
  }
  if (!r.errors.empty()) line += fmt::format("; errors: {}", fmt::join(r.errors, "; "));
  return line;
}

ReloadReport Daemon::Reload(const Result<DaemonConfig>& reread) {
  ReloadReport report;
  const Seconds now = clock_.Now();
  if (!reread) {
    report.applied = false;
    report.errors.push_back(reread.error().ToString());
    PublishEvents({MakeEvent(now, "", "config_reload_failed", "", FormatReloadReport(report))});
    return report;
  }
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
  PublishEvents({MakeEvent(now, "", "config_reloaded", "", FormatReloadReport(report))});
  return report;
}

}  // namespace gpuscale::daemon
