// POSIX process plumbing for the local-process orchestrator: start a long-running replica
// process detached into its own process group with its output appended to a log file,
// check whether a pid has exited without blocking (children and adopted non-children
// alike), signal a process group, read /proc/<pid>/cmdline, and find a free TCP port.
//
// Processes are exec'd from an argv vector with posix_spawnp: no shell is involved.
// Reaping is per pid (waitpid(pid, WNOHANG)), never waitpid(-1), so children started by
// other modules (e.g. RunProcess for nvidia-smi) are not stolen.
//
// Thread-safety: functions are reentrant; they touch only the process table and the files
// they are given.
#pragma once

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"

namespace gpuscale::orch {

struct SpawnRequest {
  std::vector<std::string> argv;  // argv[0] is looked up on PATH
  std::vector<std::string> env;   // the child's whole environment, "NAME=value"
  std::string log_path;           // stdout and stderr are appended here (created 0644)
  std::string log_header;         // written to the log before the process starts
};

// Starts the process in a new process group (so a signal to the daemon's terminal does not
// reach it, and stopping it reaches its children), stdin from /dev/null, file descriptors
// other than 0-2 closed. A bare `gpuscale` as argv[0] runs the daemon's own executable when
// the daemon is gpuscale (no PATH needed; argv[0] stays as given). Returns the pid. Errors: kUnavailable naming the program when it
// cannot be started (not found, not executable) or the log cannot be opened (naming it).
Result<int> SpawnDetached(const SpawnRequest& request);

// The daemon's environment with `overrides` applied (replacing or adding; when a name is
// overridden twice, the later value wins).
std::vector<std::string> ChildEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides);

// Non-blocking exit check. nullopt while `pid` runs. When it has exited: its exit code, or
// 128 + signal when a signal ended it; -1 when the status cannot be known (a process that is
// not our child, e.g. one adopted after a daemon restart, is reaped by someone else). A
// reaped pid is no longer watched (WatchExit).
std::optional<int> CheckExited(int pid);

// The children whose exit should wake `gpuscale serve`'s control loop at once (replica
// processes: a crash is then noticed before the next tick), out of all the children whose
// exit raises SIGCHLD. The others (nvidia-smi, squeue, sinfo, sbatch: gpu::RunProcess) end
// all the time, and waking the loop for them made it tick on and on: each tick's Slurm
// listings ended in a SIGCHLD that started the next tick (100+ ticks a second with two
// Slurm services on a 15 s loop). Process-wide, like SIGCHLD itself; thread-safe.
void WatchExit(int pid);
// True when a watched child has exited and is not reaped yet (waitid with WNOWAIT: the
// orchestrator still reaps it with CheckExited). Pids that are no longer our children are
// forgotten.
bool AnyWatchedExited();

// "exit code 3", "signal 9 (SIGKILL)", "exit status unknown".
std::string DescribeExit(int code);

// Sends `signal` to the process group led by `pid`, or to `pid` alone when it does not lead
// a group. False when the process no longer exists.
bool SignalGroup(int pid, int signal);

// True when `pid` names a live (not zombie) process.
bool ProcessAlive(int pid);

// True while a live (not zombie) process is in process group `pgid`, e.g. an engine's
// worker that outlived the replica's leader process (and may still hold its GPUs).
bool GroupHasLiveMembers(int pgid);

// The environment entry every replica process of a daemon carries: its state directory,
// absolute ("GPUSCALE_REPLICA_OF=/var/lib/gpuscale"). It finds replica processes without the
// database: one started just before a crash, before its record was saved, is found and
// stopped by the next daemon instead of holding GPUs nobody knows of.
inline constexpr char kReplicaMarkerEnv[] = "GPUSCALE_REPLICA_OF";

// The marker's value for `state_dir`: the directory, absolute and normalized.
std::string ReplicaMarkerValue(const std::string& state_dir);

// Beside the marker, every replica process says which replica it is (service, replica id,
// port, GPU lease keys; its GPU indices are CUDA_VISIBLE_DEVICES), so that a daemon whose
// replicas table cannot be read adopts the processes from what they carry
// (marked_replicas.h) instead of placing new replicas over their GPUs.
inline constexpr char kReplicaServiceEnv[] = "GPUSCALE_REPLICA_SERVICE";
inline constexpr char kReplicaIdEnv[] = "GPUSCALE_REPLICA_ID";
inline constexpr char kReplicaPortEnv[] = "GPUSCALE_REPLICA_PORT";
inline constexpr char kReplicaGpuKeysEnv[] = "GPUSCALE_REPLICA_GPU_KEYS";  // comma-separated

// The value of `name` in an environment of "KEY=VALUE" entries; nullopt when absent.
std::optional<std::string> EnvValue(const std::vector<std::string>& environment,
                                    std::string_view name);

// True when marker value `marker` names `state_dir`: equal as ReplicaMarkerValue writes
// them, or once symbolic links are resolved (the same directory reached by another path).
bool MarkerNamesStateDir(const std::string& marker, const std::string& state_dir);

// A live process and its process group.
struct MarkedProcess {
  int pid = 0;
  int pgid = 0;
};

// Live processes whose environment holds exactly `entry` ("KEY=VALUE"), read from
// /proc/<pid>/environ (processes of other users cannot be read and are skipped).
std::vector<MarkedProcess> FindProcessesWithEnv(const std::string& entry);

// The process's argv from /proc/<pid>/cmdline; nullopt when it cannot be read (gone).
std::optional<std::vector<std::string>> ReadCmdline(int pid);
// The process's environment ("KEY=VALUE" entries) from /proc/<pid>/environ; nullopt when it
// cannot be read (gone, or another user's).
std::optional<std::vector<std::string>> ReadEnviron(int pid);

// A TCP port free on 127.0.0.1: the first in [range_start, range_end] that is not in
// `exclude` and can be bound, or, with range_start == 0, one the kernel picks. The port is
// released before returning, so the child can bind it (a small race, re-checked by the
// readiness probe). Errors: kResourceExhausted naming the range when none is free;
// kInternal when no socket can be created.
Result<int> PickFreePort(int range_start, int range_end, const std::set<int>& exclude);

}  // namespace gpuscale::orch
