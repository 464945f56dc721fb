#include "orch/process_util.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>

extern char** environ;

namespace gpuscale::orch {
namespace {

// Owns the posix_spawn attribute objects for one call.
struct SpawnAttrs {
  posix_spawn_file_actions_t actions;
  posix_spawnattr_t attr;
  SpawnAttrs() {
    posix_spawn_file_actions_init(&actions);
    posix_spawnattr_init(&attr);
  }
  ~SpawnAttrs() {
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attr);
  }
};

std::vector<char*> CStrings(const std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (const std::string& s : strings) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// 'R', 'S', 'Z', ... from /proc/<pid>/stat; '\0' when unreadable.
// The whole of /proc/<pid>/<name>; nullopt when it cannot be read. POSIX reads, not
// std::ifstream: a process that exits mid-read makes read() fail with ESRCH, which
// libstdc++'s filebuf turns into an exception (seen: a crash scanning for marked processes
// while replicas were being stopped).
std::optional<std::string> ReadProcFile(int pid, const char* name) {
  const std::string path = fmt::format("/proc/{}/{}", pid, name);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return text;
}

// "a\0b\0" -> {"a", "b"} (/proc's argv and environment lists).
std::vector<std::string> SplitAtNul(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\0', start);
    if (end == std::string::npos) end = text.size();
    parts.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return parts;
}

// Calls `visit(pid)` for each process in /proc until it returns false. Steps with
// increment(ec), not a range-for: the range-for's ++ throws when /proc changes under it (a
// process exiting mid-scan can fail the read of the next entry).
template <typename Visit>
void ForEachPid(Visit&& visit) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc", ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    int pid = 0;
    auto [ptr, err] = std::from_chars(name.data(), name.data() + name.size(), pid);
    if (err != std::errc() || ptr != name.data() + name.size()) continue;
    if (!visit(pid)) return;
  }
}

char ProcState(int pid) {
  const std::string text = ReadProcFile(pid, "stat").value_or("");
  const size_t paren = text.rfind(')');  // the command name may contain spaces and ')'
  if (paren == std::string::npos || paren + 2 >= text.size()) return '\0';
  return text[paren + 2];
}

bool CanBind(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return ok;
}

// What to exec for argv[0]: a bare "gpuscale" is this very program when the daemon is
// gpuscale, so that examples and tasks that run `gpuscale emulate` need no PATH entry and
// never start another installed version. Anything else is looked up on PATH as given.
std::string ProgramToExec(const std::string& argv0) {
  if (argv0 != "gpuscale") return argv0;
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec || self.filename() != "gpuscale") return argv0;
  return self.string();
}

}  // namespace

Result<int> SpawnDetached(const SpawnRequest& request) {
  if (request.argv.empty()) return Internal("SpawnDetached: empty argv");
  const int log_fd = open(request.log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log_fd < 0) {
    return Unavailable(fmt::format("cannot open replica log '{}': {}", request.log_path,
                                   std::strerror(errno)));
  }
  if (!request.log_header.empty()) {
    // The header only helps a reader of the log; a disk too full for it fails the replica's
    // own output instead, which its log's reader sees.
    (void)!write(log_fd, request.log_header.data(), request.log_header.size());
  }
  SpawnAttrs spawn;
  posix_spawn_file_actions_addopen(&spawn.actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&spawn.actions, log_fd, STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&spawn.actions, log_fd, STDERR_FILENO);
  // The daemon's sockets (API listener, scrapes) must not leak into a replica: a leaked
  // listener would keep the API port bound after the daemon exits.
  posix_spawn_file_actions_addclosefrom_np(&spawn.actions, STDERR_FILENO + 1);
  posix_spawnattr_setflags(&spawn.attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                            POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&spawn.attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&spawn.attr, &none);   // the daemon may block signals in threads
  posix_spawnattr_setsigdefault(&spawn.attr, &all);  // and ignore SIGPIPE; children must not
  std::vector<char*> argv = CStrings(request.argv);
  std::vector<char*> env = CStrings(request.env);
  pid_t pid = 0;
  const std::string program = ProgramToExec(request.argv[0]);
  const int rc =
      posix_spawnp(&pid, program.c_str(), &spawn.actions, &spawn.attr, argv.data(), env.data());
  close(log_fd);
  if (rc != 0) {
    return Unavailable(fmt::format("cannot start '{}': {} (check the service's command and PATH)",
                                   request.argv[0], std::strerror(rc)),
                       "command[0]");
  }
  return static_cast<int>(pid);
}

std::vector<std::string> ChildEnvironment(
    const std::vector<std::pair<std::string, std::string>>& overrides) {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    bool overridden = false;
    for (const auto& [key, value] : overrides) overridden = overridden || key == name;
    if (!overridden) env.emplace_back(entry);
  }
  for (size_t i = 0; i < overrides.size(); ++i) {
    const auto& [key, value] = overrides[i];
    bool later = false;  // the last override of a name wins
    for (size_t j = i + 1; j < overrides.size(); ++j) later = later || overrides[j].first == key;
    if (!later) env.push_back(key + "=" + value);
  }
  return env;
}

namespace {

std::mutex watched_mu;
std::set<int>& Watched() {  // guarded by watched_mu
  static std::set<int> watched;
  return watched;
}

void Unwatch(int pid) {
  std::lock_guard<std::mutex> lock(watched_mu);
  Watched().erase(pid);
}

}  // namespace

void WatchExit(int pid) {
  std::lock_guard<std::mutex> lock(watched_mu);
  Watched().insert(pid);
}

bool AnyWatchedExited() {
  std::lock_guard<std::mutex> lock(watched_mu);
  std::set<int>& watched = Watched();
  for (auto it = watched.begin(); it != watched.end();) {
    siginfo_t info{};
    if (waitid(P_PID, static_cast<id_t>(*it), &info, WEXITED | WNOHANG | WNOWAIT) != 0) {
      if (errno == ECHILD) {
        it = watched.erase(it);  // reaped elsewhere, or never our child
        continue;
      }
    } else if (info.si_pid == *it) {
      return true;
    }
    ++it;
  }
  return false;
}

std::optional<int> CheckExited(int pid) {
  int status = 0;
  pid_t done = 0;
  do {
    done = waitpid(pid, &status, WNOHANG);
  } while (done < 0 && errno == EINTR);
  if (done == pid) {
    Unwatch(pid);
    if (WIFEXITED(status)) return WEXITSTATUS(status);
    if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
    return std::nullopt;  // stopped/continued: still there
  }
  if (done == 0) return std::nullopt;
  // ECHILD: not our child (adopted). A zombie awaiting its own parent counts as exited.
  return ProcessAlive(pid) ? std::nullopt : std::optional<int>(-1);
}

std::string DescribeExit(int code) {
  if (code < 0) return "exit status unknown";
  if (code > 128) {
    const char* name = sigabbrev_np(code - 128);
    return fmt::format("signal {} (SIG{})", code - 128, name != nullptr ? name : "?");
  }
  return fmt::format("exit code {}", code);
}

bool SignalGroup(int pid, int signal) {
  if (pid <= 0) return false;
  if (getpgid(pid) == pid) return kill(-pid, signal) == 0;
  return kill(pid, signal) == 0;
}

bool ProcessAlive(int pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  const char state = ProcState(pid);
  return state != '\0' && state != 'Z' && state != 'X';
}

bool GroupHasLiveMembers(int pgid) {
  if (pgid <= 0) return false;
  if (kill(-pgid, 0) != 0 && errno == ESRCH) return false;  // the usual answer: no one left
  // Zombies count as members for kill(); only /proc tells them apart.
  bool found = false;
  ForEachPid([&](int pid) {
    const std::string text = ReadProcFile(pid, "stat").value_or("");
    const size_t paren = text.rfind(')');  // "pid (comm) state ppid pgrp ..."
    if (paren == std::string::npos) return true;
    std::istringstream fields(text.substr(paren + 1));
    char state = '\0';
    int ppid = 0, pgrp = 0;
    if (!(fields >> state >> ppid >> pgrp)) return true;
    found = pgrp == pgid && state != 'Z' && state != 'X';
    return !found;
  });
  return found;
}

std::string ReplicaMarkerValue(const std::string& state_dir) {
  std::error_code ec;
  std::filesystem::path path = std::filesystem::absolute(state_dir, ec);
  if (ec) path = state_dir;
  return path.lexically_normal().string();
}

std::optional<std::string> EnvValue(const std::vector<std::string>& environment,
                                    std::string_view name) {
  for (const std::string& entry : environment) {
    if (entry.size() > name.size() && entry.starts_with(name) && entry[name.size()] == '=') {
      return entry.substr(name.size() + 1);
    }
  }
  return std::nullopt;
}

bool MarkerNamesStateDir(const std::string& marker, const std::string& state_dir) {
  if (marker == ReplicaMarkerValue(state_dir)) return true;
  std::error_code marker_ec, dir_ec;
  const std::filesystem::path a = std::filesystem::weakly_canonical(marker, marker_ec);
  const std::filesystem::path b = std::filesystem::weakly_canonical(state_dir, dir_ec);
  return !marker_ec && !dir_ec && a == b;
}

std::vector<MarkedProcess> FindProcessesWithEnv(const std::string& entry) {
  std::vector<MarkedProcess> found;
  ForEachPid([&](int pid) {
    if (!ProcessAlive(pid)) return true;
    const std::optional<std::vector<std::string>> env = ReadEnviron(pid);
    if (!env) return true;
    bool marked = false;
    for (const std::string& e : *env) marked = marked || e == entry;
    if (!marked) return true;
    const int pgid = getpgid(pid);
    if (pgid > 0) found.push_back({pid, pgid});
    return true;
  });
  return found;
}

std::optional<std::vector<std::string>> ReadCmdline(int pid) {
  std::optional<std::string> text = ReadProcFile(pid, "cmdline");
  if (!text || text->empty()) return std::nullopt;  // gone, a zombie or a kernel thread
  return SplitAtNul(*text);
}

std::optional<std::vector<std::string>> ReadEnviron(int pid) {
  std::optional<std::string> text = ReadProcFile(pid, "environ");
  if (!text) return std::nullopt;
  return SplitAtNul(*text);
}

Result<int> PickFreePort(int range_start, int range_end, const std::set<int>& exclude) {
  if (range_start > 0) {
    for (int port = range_start; port <= range_end; ++port) {
      if (!exclude.contains(port) && CanBind(port)) return port;
    }
    return ResourceExhausted(fmt::format("no free port in {}..{} on 127.0.0.1; widen the port "
                                         "range or stop what uses it",
                                         range_start, range_end),
                             "port_range");
  }
  for (int attempt = 0; attempt < 16; ++attempt) {
    const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Internal(fmt::format("socket() failed: {}", std::strerror(errno)));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    int port = 0;
    if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      port = ntohs(addr.sin_port);
    }
    close(fd);
    if (port > 0 && !exclude.contains(port)) return port;
  }
  return Internal("could not get a free port from the kernel for 127.0.0.1");
}

}  // namespace gpuscale::orch
