#include "daemon/reload_report.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace gpuscale::daemon {
namespace {

std::string Names(const std::vector<std::string>& names) {
  return names.empty() ? std::string("none") : fmt::format("{}", fmt::join(names, ", "));
}

}  // namespace

std::vector<std::string> SectionsNeedingRestart(const DaemonConfig& running,
                                                const DaemonConfig& reread) {
  std::vector<std::string> changed;
  if (running.gpu != reread.gpu) changed.push_back("gpu");
  if (running.api != reread.api) changed.push_back("api");
  if (running.state_dir != reread.state_dir) changed.push_back("state_dir");
  return changed;
}

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

}  // namespace gpuscale::daemon
