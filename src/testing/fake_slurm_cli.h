// Test helper for daemon tests: a fake Slurm CLI (sbatch, squeue --json, sinfo --json,
// scancel) as small sh scripts in a temporary directory, for services with `engine: slurm`,
// `transport: cli` and `bin_dir: bin_dir()`. Jobs stay PENDING (reason "Resources") until
// cancelled, which is all the restart and deletion scenarios need; every cancel is logged so
// a test can assert which jobs were cancelled. SetDown(true) makes every command fail as if
// slurmctld were unreachable; SetListingDelay slows squeue down, and ListingRuns counts them.
//
// Ownership: owns its directory (removed by the destructor). Thread-compatible.
#pragma once

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace gpuscale::daemon {

class FakeSlurmCli {
 public:
  // `dir` must exist and be empty or absent; it is removed by the destructor.
  explicit FakeSlurmCli(std::filesystem::path dir) : dir_(std::move(dir)) {
    std::filesystem::create_directories(dir_ / "bin");
    std::filesystem::create_directories(dir_ / "jobs");
    Write("sbatch", kSbatch);
    Write("squeue", kSqueue);
    Write("sinfo", kSinfo);
    Write("scancel", kScancel);
  }
  ~FakeSlurmCli() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  FakeSlurmCli(const FakeSlurmCli&) = delete;
  FakeSlurmCli& operator=(const FakeSlurmCli&) = delete;

  std::string bin_dir() const { return (dir_ / "bin").string(); }

  void SetDown(bool down) {
    if (down) {
      std::ofstream(dir_ / "down") << "down\n";
    } else {
      std::filesystem::remove(dir_ / "down");
    }
  }
  // Ids of jobs in state `state` ("PENDING", "CANCELLED").
  std::set<std::string> Jobs(const std::string& state) const {
    std::set<std::string> ids;
    for (const auto& entry : std::filesystem::directory_iterator(dir_ / "jobs")) {
      std::ifstream in(entry.path());
      std::string name, job_state;
      in >> name >> job_state;
      if (job_state == state) ids.insert(entry.path().filename().string());
    }
    return ids;
  }
  // Each squeue takes this long from now on (a busy controller).
  void SetListingDelay(double seconds) { std::ofstream(dir_ / "squeue_delay") << seconds << "\n"; }
  // How many times squeue ran.
  int ListingRuns() const {
    std::ifstream in(dir_ / "squeue_runs");
    int n = 0;
    for (std::string line; std::getline(in, line);) ++n;
    return n;
  }
  // Ids of the jobs a scancel cancelled.
  std::set<std::string> Cancelled() const {
    std::set<std::string> ids;
    std::ifstream in(dir_ / "cancelled");
    for (std::string id; in >> id;) ids.insert(id);
    return ids;
  }

 private:
  void Write(const std::string& tool, const char* body) {
    const std::filesystem::path path = dir_ / "bin" / tool;
    std::ofstream(path) << "#!/bin/sh\nD='" << dir_.string() << "'\n"
                        << "if [ -e \"$D/down\" ]; then\n"
                        << "  echo \"" << tool
                        << ": error: Unable to contact slurm controller (connect failure)\" >&2\n"
                        << "  exit 1\nfi\n"
                        << body;
    chmod(path.c_str(), 0755);
  }

  static constexpr const char* kSbatch = R"sh(name=job
for a in "$@"; do
  case "$a" in --job-name=*) name="${a#--job-name=}" ;; esac
done
n=$(cat "$D/next_id" 2>/dev/null || echo 100)
echo $((n + 1)) > "$D/next_id"
echo "$name PENDING" > "$D/jobs/$n"
echo "$n"
)sh";

  static constexpr const char* kSqueue = R"sh(echo x >> "$D/squeue_runs"
[ -e "$D/squeue_delay" ] && sleep "$(cat "$D/squeue_delay")"
printf '{"jobs": ['
sep=''
for f in "$D"/jobs/*; do
  [ -e "$f" ] || continue
  read name state < "$f"
  printf '%s{"job_id": %s, "name": "%s", "job_state": "%s", ' "$sep" "${f##*/}" "$name" "$state"
  printf '"state_reason": "Resources", "batch_host": "", "nodes": ""}'
  sep=','
done
printf ']}\n'
)sh";

  static constexpr const char* kSinfo = "printf '{\"nodes\": []}\\n'\n";

  static constexpr const char* kScancel = R"sh(f="$D/jobs/$1"
if [ ! -e "$f" ]; then
  echo "scancel: error: Kill job error on job id $1: Invalid job id specified" >&2
  exit 1
fi
read name state < "$f"
if [ "$state" != PENDING ] && [ "$state" != RUNNING ]; then
  echo "scancel: error: Kill job error on job id $1: Job/step already completing or completed" >&2
  exit 1
fi
echo "$name CANCELLED" > "$f"
echo "$1" >> "$D/cancelled"
)sh";

  std::filesystem::path dir_;
};

}  // namespace gpuscale::daemon
