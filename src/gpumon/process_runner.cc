#include "gpumon/process_runner.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>

extern char** environ;

namespace gpuscale::gpu {
namespace {

// Owns the two ends of a pipe; closes what is still open.
struct Pipe {
  int fds[2] = {-1, -1};
  ~Pipe() { CloseBoth(); }
  void Close(int end) {
    if (fds[end] >= 0) close(fds[end]);
    fds[end] = -1;
  }
  void CloseBoth() {
    Close(0);
    Close(1);
  }
};

Result<pid_t> Spawn(const std::vector<std::string>& argv, Pipe& out, Pipe& err) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, out.fds[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, err.fds[1], STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attr, 0);  // own group: a timeout kills its children too

  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    return Unavailable(fmt::format("cannot run '{}': {}", argv[0], std::strerror(rc)));
  }
  return pid;
}

// Reads both pipes until EOF on both or the deadline; false when the deadline passed.
Result<bool> Drain(Pipe& out, Pipe& err, ProcessOutput& output,
                   std::chrono::steady_clock::time_point deadline) {
  std::array<char, 16384> buffer;
  while (out.fds[0] >= 0 || err.fds[0] >= 0) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    std::array<pollfd, 2> polls{{{out.fds[0], POLLIN, 0}, {err.fds[0], POLLIN, 0}}};
    const int ready = poll(polls.data(), polls.size(), static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return Internal(fmt::format("poll failed: {}", std::strerror(errno)));
    for (size_t i = 0; i < polls.size(); ++i) {
      if (polls[i].fd < 0 || polls[i].revents == 0) continue;
      Pipe& pipe = i == 0 ? out : err;
      std::string& text = i == 0 ? output.stdout_text : output.stderr_text;
      const ssize_t n = read(pipe.fds[0], buffer.data(), buffer.size());
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        pipe.Close(0);
      } else if (text.size() < kMaxProcessOutputBytes) {
        text.append(buffer.data(), static_cast<size_t>(n));
      }
    }
  }
  return true;
}

int ExitCodeOf(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Blocking wait (used after SIGKILL, which cannot be ignored).
int WaitExitCode(pid_t pid) {
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return ExitCodeOf(status);
}

// Waits for a child that closed its output; nullopt when it is still running at `deadline`.
std::optional<int> WaitUntil(pid_t pid, std::chrono::steady_clock::time_point deadline) {
  while (true) {
    int status = 0;
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return ExitCodeOf(status);
    if (done < 0 && errno != EINTR) return -1;
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    usleep(500);
  }
}

}  // namespace

Result<ProcessOutput> RunProcess(const std::vector<std::string>& argv, Seconds timeout) {
  if (argv.empty()) return Internal("RunProcess: empty argv");
  Pipe out;
  Pipe err;
  if (pipe2(out.fds, O_CLOEXEC) != 0 || pipe2(err.fds, O_CLOEXEC) != 0) {
    return Internal(fmt::format("cannot create pipe: {}", std::strerror(errno)));
  }
  GS_ASSIGN_OR_RETURN(pid_t pid, Spawn(argv, out, err));
  out.Close(1);
  err.Close(1);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout);
  ProcessOutput output;
  Result<bool> finished = Drain(out, err, output, deadline);
  std::optional<int> exit_code;
  if (finished && *finished) exit_code = WaitUntil(pid, deadline);
  if (!exit_code) {
    kill(-pid, SIGKILL);  // the whole group: wrapper scripts and their children
    WaitExitCode(pid);
    if (!finished) return Unexpected<Error>(finished.error());
    return Unavailable(fmt::format("'{}' did not finish within {:.3g} s and was killed", argv[0],
                                   timeout.count()));
  }
  output.exit_code = *exit_code;
  return output;
}

}  // namespace gpuscale::gpu
