// The README's commands run as written from a fresh clone (issue 22): every indented command
// line of README.md, in order, with a scratch HOME (so the daemon's state starts empty) and
// the repository as the working directory, as a new user would type them after `scripts/run`.
//
// How each line runs (through `bash -c`, so quoting, $(...) and trailing comments are bash's):
//   - `build/gpuscale` becomes this build tree's binary (the ASan tree tests its own);
//   - `scripts/run` is `build/gpuscale serve` (what it execs after setting up);
//   - long-lived commands start in the background and must come up: a daemon (`serve`) stops
//     the previous one first (as Ctrl-C would) and must answer GET /healthz on the README's
//     API port; `emulate --port N` must answer /health on N; `curl -sN` (a stream) must print
//     something within 2 s and is then stopped;
//   - every other line must exit 0 within 3 minutes; `--duration N` of bench and monitor is
//     cut to 2 s (the README's 30-40 s show a scale-out; the walk checks that they run).
// Not walked: the other scripts/ lines (setup and test are CI itself; sim-*, gateway-bench
// are long reproductions with their own checks) and the benchmark build/run lines.
// The README uses fixed ports (8000, 8080, 8001, 9091): the test is skipped, saying which
// one, when another program holds one.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <fstream>
#include <regex>
#include <string>
#include <vector>

#include "daemon_test_util.h"

namespace gpuscale::daemon_test {
namespace {

constexpr int kApiPort = 8080;  // the embedded default's and examples/gpuscale.yaml's

// The README's indented command lines, continuation lines joined, in order.
std::vector<std::string> ReadmeCommands() {
  std::ifstream in(GPUSCALE_SOURCE_DIR "/README.md");
  std::vector<std::string> commands;
  std::string line, pending;
  while (std::getline(in, line)) {
    if (!pending.empty()) {
      pending += " " + line.substr(line.find_first_not_of(' '));
    } else if (line.starts_with("    ") && line.size() > 4 && line[4] != ' ') {
      pending = line.substr(4);
    } else {
      continue;
    }
    if (pending.ends_with("\\")) {
      pending.pop_back();
      continue;
    }
    commands.push_back(pending);
    pending.clear();
  }
  return commands;
}

bool PortFree(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const bool free = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return free;
}

bool Answers(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  client.set_connection_timeout(1);
  client.set_read_timeout(2);
  httplib::Result r = client.Get(path);
  return r && r->status == 200;
}

class ReadmeWalkTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = MakeTempDir("gpuscale_readme_");
    ASSERT_FALSE(dir_.empty());
    std::filesystem::create_directories(dir_ + "/home");
    marker_ = TestMarker(dir_);
  }

  void TearDown() override {
    StopDaemon();
    KillMarkedProcesses(marker_);
    std::filesystem::remove_all(dir_);
  }

  // The line as this test runs it: the tree's binary, shortened durations.
  static std::string Adapt(std::string command) {
    const std::string binary = std::string(GPUSCALE_BINARY_DIR) + "/gpuscale";
    if (command.starts_with("scripts/run")) command = "build/gpuscale serve";
    command = std::regex_replace(command, std::regex(R"(\bbuild/gpuscale\b)"), binary);
    if (command.find(" bench ") != std::string::npos ||
        command.find(" monitor ") != std::string::npos) {
      command = std::regex_replace(command, std::regex(R"(--duration \d+)"), "--duration 2");
    }
    return command;
  }

  pid_t Background(const std::string& command, const std::string& log) {
    return Spawn({"bash", "-c", "cd " GPUSCALE_SOURCE_DIR " && exec " + command}, -1, log,
                 {marker_, "HOME=" + dir_ + "/home"});
  }

  // Runs a short command to its end; "" when it exited 0, else what went wrong.
  std::string RunToEnd(const std::string& command) {
    const std::string out = dir_ + "/out.txt";
    const int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const pid_t pid = Spawn({"bash", "-c", "cd " GPUSCALE_SOURCE_DIR " && " + command}, fd, out,
                            {marker_, "HOME=" + dir_ + "/home"});
    close(fd);
    if (pid <= 0) return "could not start bash";
    int status = 0;
    const bool ended = WaitFor([&] { return waitpid(pid, &status, WNOHANG) == pid; },
                               std::chrono::minutes(3));
    if (!ended) {
      kill(-pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
    std::ifstream in(out);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (text.size() > 2000) text = "..." + text.substr(text.size() - 2000);
    if (!ended) return "still running after 3 minutes; output:\n" + text;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      return "exit status " + std::to_string(WIFEXITED(status) ? WEXITSTATUS(status) : -1) +
             "; output:\n" + text;
    }
    return "";
  }

  // Ctrl-C for the running daemon: it stops its replicas and exits.
  void StopDaemon() {
    if (daemon_ <= 0) return;
    kill(daemon_, SIGINT);
    int status = 0;
    if (!WaitFor([&] { return waitpid(daemon_, &status, WNOHANG) == daemon_; },
                 std::chrono::seconds(30))) {
      kill(-daemon_, SIGKILL);
      waitpid(daemon_, &status, 0);
    }
    daemon_ = -1;
  }

  std::string StartDaemon(const std::string& command) {
    StopDaemon();
    const std::string log = dir_ + "/daemon.err";
    daemon_ = Background(command, log);
    if (daemon_ <= 0) return "could not start it";
    int status = 0;
    const bool up = WaitFor(
        [&] { return waitpid(daemon_, &status, WNOHANG) == 0 && Answers(kApiPort, "/healthz"); },
        std::chrono::seconds(30));
    if (up) return "";
    std::ifstream in(log);
    return "no API on 127.0.0.1:8080 within 30 s; stderr:\n" +
           std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  std::string StartServer(const std::string& command) {
    std::smatch port;
    if (!std::regex_search(command, port, std::regex(R"(--port (\d+))"))) return "no --port";
    const pid_t pid = Background(command, dir_ + "/server.err");
    if (pid <= 0) return "could not start it";
    const int n = std::stoi(port[1]);
    return WaitFor([&] { return Answers(n, "/health"); }, std::chrono::seconds(20))
               ? ""
               : "no /health on port " + port[1].str() + " within 20 s";
  }

  // A stream never ends: it must print something within 2 s. The line's trailing comment
  // goes, or it would swallow the rest of the pipeline.
  std::string Stream(const std::string& command) {
    const std::string bare = std::regex_replace(command, std::regex(R"(\s{2,}#.*$)"), "");
    return RunToEnd("test -n \"$(timeout 2 " + bare + " | head -c 64)\"");
  }

  std::string dir_, marker_;
  pid_t daemon_ = -1;
};

TEST_F(ReadmeWalkTest, EveryCommandRunsAsWritten) {
  for (int port : {8000, 8080, 8001, 9091}) {
    if (!PortFree(port)) GTEST_SKIP() << "port " << port << " is in use; the README's commands need it";
  }
  const std::vector<std::string> commands = ReadmeCommands();
  ASSERT_GT(commands.size(), 20u) << "README.md lost its command lines?";
  int walked = 0;
  for (const std::string& line : commands) {
    const bool skipped = (line.starts_with("scripts/") && !line.starts_with("scripts/run")) ||
                         line.starts_with("cmake ") || line.starts_with("build/bench/");
    if (skipped) continue;
    const std::string command = Adapt(line);
    std::string problem;
    if (std::regex_search(command, std::regex(R"(gpuscale serve\b)"))) {
      problem = StartDaemon(command);
    } else if (std::regex_search(command, std::regex(R"(gpuscale emulate\b)"))) {
      problem = StartServer(command);
    } else if (command.starts_with("curl -sN")) {
      problem = Stream(command);
    } else {
      problem = RunToEnd(command);
    }
    ++walked;
    EXPECT_EQ(problem, "") << "README line: " << line;
  }
  EXPECT_GT(walked, 20);
}

}  // namespace
}  // namespace gpuscale::daemon_test
