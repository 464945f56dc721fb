// Helpers for the `gpuscale serve` integration tests (tests/daemon_*_test.cc): spawn real
// processes in their own process group, talk JSON to the daemon over loopback, poll with
// deadlines, and find every process a test started (by an environment marker) to kill it in
// TearDown even after a failed assertion.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <httplib.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace gpuscale::daemon_test {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

inline constexpr char kBinary[] = GPUSCALE_BINARY_DIR "/gpuscale";

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
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return pids;
  while (dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    std::ifstream in("/proc/" + std::string(entry->d_name) + "/environ", std::ios::binary);
    std::string env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    size_t pos = 0;
    while (pos < env.size()) {
      const size_t end = env.find('\0', pos);
      if (env.compare(pos, (end == std::string::npos ? env.size() : end) - pos, marker) == 0) {
        pids.push_back(pid);
        break;
      }
      if (end == std::string::npos) break;
      pos = end + 1;
    }
  }
  closedir(proc);
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

}  // namespace gpuscale::daemon_test
