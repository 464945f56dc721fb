// What a config reload (SIGHUP, Daemon::Reload) did, and the one line that says so in the
// log and the config_reloaded event.
#pragma once

#include <string>
#include <vector>

#include "serve_config/daemon_config.h"

namespace gpuscale::daemon {

// What Daemon::Reload did; service names in the file's order.
struct ReloadReport {
  std::vector<std::string> created, updated, unchanged;
  std::vector<std::string> kept;           // running services the file no longer names
  std::vector<std::string> applied_live;   // changed top-level sections now in effect
  std::vector<std::string> needs_restart;  // top-level sections that changed ("gpu", "api")
  std::vector<std::string> errors;         // the file, or a service that was left as it was
  bool applied = true;                     // false: the file could not be read (errors[0])
};
// One line for the log and the event: what changed, or why nothing did.
std::string FormatReloadReport(const ReloadReport& report);

// The top-level sections a running daemon cannot change ("gpu", "api", "state_dir"), where
// `reread` differs from `running`: they are read once, at Open (the GPU backend and sampler,
// the API listener, the store).
std::vector<std::string> SectionsNeedingRestart(const DaemonConfig& running,
                                                const DaemonConfig& reread);

}  // namespace gpuscale::daemon
