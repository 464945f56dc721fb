// Helpers for the `gpuscale serve` integration tests (tests/daemon_*_test.cc, tasks_test.cc,
// slurm_daemon_test.cc): spawn real processes in their own process group, run the daemon
// (ServeDaemon), talk JSON to it over loopback, poll with deadlines, and find every process a
// test started (by an environment marker) to kill it in TearDown even after a failed
// assertion. Also the service YAML and load the scaling scenarios share. Header-only; the
// free functions keep no state (any thread); ServeDaemon is driven by one test thread.
#pragma once

#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli_test_util.h"
#include "orch/process_util.h"

namespace gpuscale::daemon_test {

using cli_test::kBinary;
using cli_test::MakeTempDir;
using nlohmann::json;
using Clock = std::chrono::steady_clock;

// Starts argv[0] (PATH lookup) in a new process group; stdout to `stdout_fd` (or
// /dev/null), stderr to `stderr_path`. Extra environment entries are appended.
inline pid_t Spawn(const std::vector<std::string>& argv, int stdout_fd,
                   const std::string& stderr_path, const std::vector<std::string>& extra_env = {}) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (stdout_fd >= 0) {
    posix_spawn_file_actions_adddup2(&actions, stdout_fd, STDOUT_FILENO);
  } else {
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  }
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, stderr_path.c_str(),
                                   O_WRONLY | O_CREAT | O_APPEND, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) env_strings.emplace_back(*e);
  env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
  std::vector<char*> args, env;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  for (auto& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  pid_t pid = -1;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  return rc == 0 ? pid : -1;
}

// Pids of live processes whose environment contains `marker` (exact "KEY=VALUE" entry).
inline std::vector<pid_t> PidsWithEnv(const std::string& marker) {
  std::vector<pid_t> pids;
  for (const orch::MarkedProcess& p : orch::FindProcessesWithEnv(marker)) pids.push_back(p.pid);
  return pids;
}

// Polls `done` every 100 ms until it holds or `timeout` passes.
inline bool WaitFor(const std::function<bool()>& done, std::chrono::duration<double> timeout) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  while (Clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return done();
}

// Reads lines from `fd` until one starts with `prefix` (returns it) or the timeout passes.
inline std::optional<std::string> ReadLineWithPrefix(int fd, const std::string& prefix,
                                                     std::chrono::duration<double> timeout,
                                                     std::string& seen) {
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(timeout);
  std::string buffer;
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, 100) <= 0) continue;
    char chunk[4096];
    const ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n <= 0) return std::nullopt;  // the process exited
    buffer.append(chunk, static_cast<size_t>(n));
    seen.append(chunk, static_cast<size_t>(n));
    for (size_t nl; (nl = buffer.find('\n')) != std::string::npos; buffer.erase(0, nl + 1)) {
      std::string line = buffer.substr(0, nl);
      if (line.rfind(prefix, 0) == 0) return line;
    }
  }
  return std::nullopt;
}

struct HttpReply {
  int status = 0;  // 0 = no answer
  json body;
};

inline HttpReply Http(int port, const std::string& method, const std::string& path,
                      const std::string& token = {}, const std::string& body = {}) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(2);
  client.set_read_timeout(5);
  httplib::Headers headers;
  if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
  httplib::Result r = method == "GET"    ? client.Get(path, headers)
                      : method == "PUT"  ? client.Put(path, headers, body, "application/json")
                      : method == "POST" ? client.Post(path, headers, body, "application/json")
                                         : client.Delete(path, headers);
  HttpReply reply;
  if (!r) return reply;
  reply.status = r->status;
  reply.body = json::parse(r->body, nullptr, /*allow_exceptions=*/false);
  return reply;
}

// The environment entry that tags every process of the test using scratch directory `dir`
// ("GPUSCALE_TEST_MARK=<dir's name>"): replicas inherit it through the service's `env:`.
inline std::string TestMarker(const std::string& dir) {
  return "GPUSCALE_TEST_MARK=" + std::filesystem::path(dir).filename().string();
}

// The value of a "KEY=VALUE" environment entry such as TestMarker's.
inline std::string MarkerValue(const std::string& marker) {
  return marker.substr(marker.find('=') + 1);
}

// SIGKILLs every live process carrying `marker`, and its process group (replicas lead their
// own groups), so nothing a failed test started outlives it.
inline void KillMarkedProcesses(const std::string& marker) {
  for (pid_t pid : PidsWithEnv(marker)) kill(-pid, SIGKILL), kill(pid, SIGKILL);
}

// Prints `path` under a "--- label ---" header to stderr (for TearDown after a failure).
inline void DumpFile(const std::string& label, const std::string& path) {
  std::ifstream in(path);
  std::cerr << "--- " << label << " ---\n" << in.rdbuf() << "\n";
  std::cerr.clear();  // an empty file sets failbit
}

// GET /v1/services/<service>/replicas: the replica list, [] unless the daemon answers 200.
inline json ServiceReplicas(int port, const std::string& service, const std::string& token = {}) {
  HttpReply r = Http(port, "GET", "/v1/services/" + service + "/replicas", token);
  return r.status == 200 ? r.body["replicas"] : json::array();
}

// Replicas counted as the controller does (all but draining), only those in `phase` when
// given.
inline int CountReplicas(const json& replicas, const std::string& phase = "") {
  int n = 0;
  for (const json& r : replicas) {
    const std::string p = r["phase"];
    if (p != "draining" && (phase.empty() || p == phase)) ++n;
  }
  return n;
}

// The `command:` lines of a service (indented under `services:`) of `gpuscale emulate`
// replicas that serve one request per batch in 20 ms decode steps, so the load of BenchArgv
// keeps a queue on each of them; with a TestMarker, also the `env:` line that tags them.
inline std::string EmulatedReplicaYaml(const std::string& marker = "") {
  std::string yaml =
      std::string("    command: [") + kBinary +
      ", emulate, --port, \"{port}\", --model, m,\n"
      "              --startup-seconds, \"0.2\", --max-batch-size, \"1\",\n"
      "              --timing, linear, --decode-ms-base, \"20\", --drain-seconds, \"1\"]\n";
  if (!marker.empty()) yaml += "    env: {GPUSCALE_TEST_MARK: " + MarkerValue(marker) + "}\n";
  return yaml;
}

// A target policy (indented under a service's `policy:`) on the replicas' queue,
// vllm:num_requests_waiting averaging 2, with short HPA windows (scale up at once, down
// after 3 s) so scaling scenarios take seconds.
inline constexpr char kFastQueuePolicyYaml[] =
    "      family: target\n"
    "      target:\n"
    "        metrics:\n"
    "          - {name: \"vllm:num_requests_waiting\", type: AverageValue, average_value: 2}\n"
    "        behavior:\n"
    "          scale_up: {stabilization_window_seconds: 0,\n"
    "                     policies: [{type: Pods, value: 4, period_seconds: 1}]}\n"
    "          scale_down: {stabilization_window_seconds: 3,\n"
    "                       policies: [{type: Percent, value: 100, period_seconds: 1}]}\n";

// argv of `gpuscale bench` against `url`: 8 concurrent 16-token requests for
// `duration_seconds`, without the progress line. Enough to queue on the replicas above.
inline std::vector<std::string> BenchArgv(const std::string& url, int duration_seconds) {
  return {kBinary,          "bench", "--url",           url,
          "--concurrency",  "8",     "--duration",      std::to_string(duration_seconds),
          "--input-tokens", "16",    "--output-tokens", "16",
          "--no-progress"};
}

// One `gpuscale serve` process of a test: its config in <dir>/gpuscale.yaml, state in
// <dir>/state, stderr appended to <dir>/daemon.err, the API on a kernel-picked loopback port
// read from its first stdout line. Owns the process: Kill() or the destructor SIGKILLs its
// process group. Not thread-safe: one test thread drives it.
class ServeDaemon {
 public:
  struct Options {
    // Defaults on every member: tests name only what they set (designated initializers).
    std::string dir = {};                     // the test's scratch directory
    std::string loop_interval_seconds = "1";  // --loop-interval
    std::vector<std::string> flags = {};      // more `serve` flags
    std::vector<std::string> env = {};        // more environment entries (the test marker)
    int open_files = 0;  // > 0: the daemon's descriptor limit, soft and hard (prlimit)
  };

  ServeDaemon() = default;
  ServeDaemon(const ServeDaemon&) = delete;
  ServeDaemon& operator=(const ServeDaemon&) = delete;
  ~ServeDaemon() { Kill(SIGKILL); }

  // Writes `config` and starts the daemon. Fails the test (fatally, in this function) when
  // it cannot start or prints no API line within 20 s; stdout read meanwhile is appended to
  // stdout_seen().
  void Start(const std::string& config, const Options& options) {
    static constexpr char kApiPrefix[] = "gpuscale serve: API http://127.0.0.1:";
    std::ofstream(options.dir + "/gpuscale.yaml") << config;
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::vector<std::string> argv = {kBinary,           "serve",
                                     "--config",        options.dir + "/gpuscale.yaml",
                                     "--listen",        "127.0.0.1:0",
                                     "--gateway-listen", "127.0.0.1:0",
                                     "--state-dir",     options.dir + "/state",
                                     "--loop-interval", options.loop_interval_seconds};
    argv.insert(argv.end(), options.flags.begin(), options.flags.end());
    if (options.open_files > 0) {
      // prlimit sets the limit and execs the daemon: the same pid and process group.
      const std::string limit = std::to_string(options.open_files);
      argv.insert(argv.begin(), {"prlimit", "--nofile=" + limit + ":" + limit, "--"});
    }
    pid_ = Spawn(argv, fds[1], options.dir + "/daemon.err", options.env);
    close(fds[1]);
    if (pid_ <= 0) close(fds[0]);
    ASSERT_GT(pid_, 0) << "cannot start " << kBinary;
    std::optional<std::string> line =
        ReadLineWithPrefix(fds[0], kApiPrefix, std::chrono::seconds(20), stdout_seen_);
    close(fds[0]);
    ASSERT_TRUE(line) << "no start-up line: " << stdout_seen_;
    port_ = std::atoi(line->c_str() + std::string(kApiPrefix).size());
    ASSERT_GT(port_, 0) << *line;
  }

  // Sends `sig` to the daemon's process group and reaps the daemon; nothing when none runs.
  void Kill(int sig) {
    if (pid_ <= 0) return;
    kill(-pid_, sig);
    waitpid(pid_, nullptr, 0);
    pid_ = -1;
  }

  pid_t pid() const { return pid_; }
  int port() const { return port_; }  // 0 before the first Start
  // The gateway's port from its start-up line (printed before the API line); 0 when none.
  int gateway_port() const {
    static constexpr char kPrefix[] = "gpuscale serve: gateway http://127.0.0.1:";
    const size_t at = stdout_seen_.find(kPrefix);
    return at == std::string::npos ? 0 : std::atoi(stdout_seen_.c_str() + at + sizeof kPrefix - 1);
  }
  const std::string& stdout_seen() const { return stdout_seen_; }

 private:
  pid_t pid_ = -1;
  int port_ = 0;
  std::string stdout_seen_;
};

}  // namespace gpuscale::daemon_test
