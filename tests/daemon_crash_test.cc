// The daemon killed (-9) at random moments of scale-ups and scale-downs (issue 27's
// randomized fault test). After each restart, and at every moment in between, three things
// hold over all runs: every replica process (found by its GPUSCALE_REPLICA_OF marker in
// /proc, not through the daemon) belongs to a replica the daemon knows (its process group),
// no two live replicas share a GPU, and every GPU lease belongs to a replica that exists. The seed is printed, and
// GPUSCALE_CRASH_SEED / GPUSCALE_CRASH_RUNS replay or lengthen a run.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "daemon_serve_fixture.h"
#include "orch/process_util.h"

namespace gpuscale::daemon_test {
namespace {

// CUDA_VISIBLE_DEVICES of a live process, "" when it has none or is gone.
std::string VisibleDevices(int pid) {
  for (const std::string& entry : orch::ReadEnviron(pid).value_or(std::vector<std::string>{})) {
    if (entry.rfind("CUDA_VISIBLE_DEVICES=", 0) == 0) return entry.substr(21);
  }
  return "";
}

std::vector<std::string> SplitComma(const std::string& text) {
  std::vector<std::string> parts;
  std::stringstream in(text);
  for (std::string part; std::getline(in, part, ',');) {
    if (!part.empty()) parts.push_back(part);
  }
  return parts;
}

// "pid 123 (ppid 1, pgid 123, state S: gpuscale emulate --port 4000 ...)" for a failure.
std::string Describe(int pid) {
  std::string stat;
  if (std::optional<std::vector<std::string>> argv = orch::ReadCmdline(pid)) {
    for (const std::string& a : *argv) stat += (stat.empty() ? "" : " ") + a;
  }
  // read(2), not std::ifstream: a process that exits mid-read makes ifstream throw.
  std::string proc_stat;
  const int fd = open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    char buffer[512];
    const ssize_t n = read(fd, buffer, sizeof buffer);
    if (n > 0) proc_stat.assign(buffer, static_cast<size_t>(n));
    close(fd);
  }
  const size_t paren = proc_stat.rfind(')');
  return "pid " + std::to_string(pid) + " [" +
         (paren == std::string::npos ? std::string("gone") : proc_stat.substr(paren + 2, 24)) +
         "] " + stat.substr(0, 120);
}

int EnvInt(const char* name, int fallback) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? std::atoi(value) : fallback;
}

class DaemonCrashTest : public DaemonServeTest {
 protected:
  std::string ReplicaMarker() {
    return "GPUSCALE_REPLICA_OF=" + std::filesystem::absolute(dir_ + "/state").string();
  }

  // "" when no two live replicas hold one GPU, else what they share. A replica is a process
  // group (the daemon starts each in its own): processes of one group share its GPUs (an
  // engine's workers; under ASan, the leak checker's tracer forked at exit).
  std::string SharedGpu() {
    std::map<std::string, orch::MarkedProcess> holder;
    for (const orch::MarkedProcess& p : orch::FindProcessesWithEnv(ReplicaMarker())) {
      for (const std::string& gpu : SplitComma(VisibleDevices(p.pid))) {
        const auto [it, fresh] = holder.emplace(gpu, p);
        if (!fresh && it->second.pgid != p.pgid) {
          return "GPU " + gpu + " held by " + Describe(it->second.pid) + " and " +
                 Describe(p.pid);
        }
      }
    }
    return "";
  }

  // "" when every marked process is a replica the daemon lists and every lease's owner is a
  // listed replica (one lease per GPU), else what differs.
  std::string Inconsistency() {
    const json replicas = Replicas();
    std::set<int> known_pids;
    std::set<std::string> owners;
    for (const json& r : replicas) {
      if (r["pid"].is_number() && r["pid"].get<int>() > 0) known_pids.insert(r["pid"].get<int>());
      owners.insert("replica/" + r["id"].get<std::string>());
    }
    for (const orch::MarkedProcess& p : orch::FindProcessesWithEnv(ReplicaMarker())) {
      if (!known_pids.count(p.pgid)) {  // a replica's pid leads its process group
        return "replica process " + Describe(p.pid) + " (group " + std::to_string(p.pgid) +
               ") is unknown to the daemon; it lists " + replicas.dump();
      }
    }
    const json leases = Http(Port(), "GET", "/v1/leases", token_).body["leases"];
    std::set<int> leased_gpus;
    for (const json& l : leases) {
      const std::string owner = l["owner"].get<std::string>();
      if (!owners.count(owner)) return "lease " + l.dump() + " belongs to no replica";
      if (!leased_gpus.insert(l["gpu_index"].get<int>()).second) {
        return "GPU " + std::to_string(l["gpu_index"].get<int>()) + " leased twice: " +
               leases.dump();
      }
    }
    return "";
  }
};

TEST_F(DaemonCrashTest, KillNineAtRandomMomentsOfScalingLosesNoReplicaAndSharesNoGpu) {
  const int runs = EnvInt("GPUSCALE_CRASH_RUNS", 50);
  const unsigned seed = static_cast<unsigned>(
      EnvInt("GPUSCALE_CRASH_SEED", static_cast<int>(std::random_device{}() & 0x7fffffff)));
  SCOPED_TRACE("GPUSCALE_CRASH_SEED=" + std::to_string(seed));
  std::mt19937 rng(seed);
  const std::string config = Config(Service(1, 4, kFastQueuePolicyYaml), 4);
  StartDaemon(config);
  ASSERT_TRUE(WaitFor([&] { return Count("ready") == 1; }, std::chrono::seconds(15)));

  std::vector<std::string> failures;
  int desired = 1;
  for (int run = 0; run < runs; ++run) {
    int next = desired;
    while (next == desired) next = std::uniform_int_distribution<int>(1, 4)(rng);
    desired = next;
    const HttpReply put = Http(Port(), "PUT", "/v1/services/x/replicas", token_,
                               json{{"replicas", desired}}.dump());
    if (put.status != 200) {
      failures.push_back("run " + std::to_string(run) + ": PUT " + put.body.dump());
    }
    // Kill somewhere in the scaling that follows. Half of the kills land within 5 ms of a
    // replica process appearing or vanishing (the narrow windows between starting a process
    // and saving it, or stopping one and forgetting it, which a uniform moment rarely
    // hits); the other half at a uniform moment of the next 1.5 s (drains, saves, probes).
    const bool at_change = std::bernoulli_distribution(0.5)(rng);
    const auto give_up =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(at_change ? 3000
                                            : std::uniform_int_distribution<int>(0, 1500)(rng));
    std::set<int> before;
    for (const orch::MarkedProcess& p : orch::FindProcessesWithEnv(ReplicaMarker())) {
      before.insert(p.pid);
    }
    while (std::chrono::steady_clock::now() < give_up) {
      if (at_change) {  // polls /proc as fast as it can
        std::set<int> now;
        for (const orch::MarkedProcess& p : orch::FindProcessesWithEnv(ReplicaMarker())) {
          now.insert(p.pid);
        }
        if (now != before) {
          std::this_thread::sleep_for(
              std::chrono::microseconds(std::uniform_int_distribution<int>(0, 5000)(rng)));
          break;
        }
      } else {
        if (std::string shared = SharedGpu(); !shared.empty()) {
          failures.push_back("run " + std::to_string(run) + " before the kill: " + shared);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(25));
      }
    }
    daemon_.Kill(SIGKILL);
    StartDaemon(config);
    std::string last, shared;
    const bool settled = WaitFor(
        [&] {
          if (shared.empty()) shared = SharedGpu();  // the first sighting is enough
          last = Inconsistency();
          return last.empty();
        },
        std::chrono::seconds(15));
    if (!shared.empty()) {
      failures.push_back("run " + std::to_string(run) + " after the restart: " + shared);
    }
    if (!settled) failures.push_back("run " + std::to_string(run) + " after the restart: " + last);
    if (failures.size() > 5) break;  // enough to see the pattern
  }
  std::string all;
  for (const std::string& f : failures) all += f + "\n";
  EXPECT_TRUE(failures.empty()) << failures.size() << " failures over " << runs << " kills:\n"
                                << all;
}

}  // namespace
}  // namespace gpuscale::daemon_test
