// SlurmTestCluster: a real, throw-away Slurm 22.05 cluster on this host for integration
// tests -- slurmctld, one slurmd per simulated node (NodeName=nK, NodeAddr=127.0.0.1, each
// with its own port and `gpus_per_node` fake GPUs: gres.conf File= symlinks to /dev/null),
// and optionally slurmrestd with JWT auth. Authentication is auth/none + cred/none (no
// munged); all state lives in a fresh temp directory; clients find it through SLURM_CONF
// (conf()). Ports are picked free by the kernel (all above 16000 on Linux).
//
// Teardown (destructor, also after a failed Start): scancel every job and wait for an empty
// queue (jobs outlive slurmd: slurmstepd has its own session), then stop the daemons by PID
// and remove the directory.
//
// Thread-safety: not thread-safe; one test thread drives it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/clock.h"
#include "core/result.h"

namespace gpuscale::slurm_test {

class SlurmTestCluster {
 public:
  struct Options {
    int nodes = 2;
    int gpus_per_node = 4;
    bool rest = true;  // start slurmrestd (JWT) too
  };

  // "" when the Slurm binaries are installed; else what is missing (for GTEST_SKIP).
  static std::string MissingBinaries();

  // Errors: kUnavailable with the daemons' log tails when the cluster does not come up in
  // three attempts (each on fresh ports and a fresh directory).
  static Result<std::unique_ptr<SlurmTestCluster>> Start(Options options);
  ~SlurmTestCluster();
  SlurmTestCluster(const SlurmTestCluster&) = delete;
  SlurmTestCluster& operator=(const SlurmTestCluster&) = delete;

  const std::string& dir() const { return dir_; }
  const std::string& conf() const { return conf_; }    // the slurm.conf path (SLURM_CONF)
  std::string rest_url() const;                          // "http://127.0.0.1:<port>"
  const std::string& token() const { return token_; }   // JWT for slurmrestd
  std::string user() const;

  // Runs a Slurm client (sbatch, squeue, ...) with SLURM_CONF set; returns stdout.
  // Errors: kUnavailable with stderr when it fails.
  Result<std::string> Client(const std::vector<std::string>& argv) const;

  // Stops / restarts slurmctld (its state survives in the state directory).
  void StopController();
  Status StartController();

  // scancel every job and wait (up to `timeout`) until squeue lists none running.
  Status CancelAllJobs(Seconds timeout);

 private:
  explicit SlurmTestCluster(Options options) : options_(options) {}
  Status WriteConfig();
  static Result<std::unique_ptr<SlurmTestCluster>> StartOnce(Options options);
  Status StartDaemons();
  Status WaitForIdleNodes(Seconds timeout);
  Status FetchToken();
  int Spawn(const std::vector<std::string>& argv, const std::string& log_name);
  std::string LogTails() const;

  Options options_;
  std::string dir_;
  std::string conf_;
  std::string token_;
  int ctld_port_ = 0;
  int rest_port_ = 0;
  std::vector<int> node_ports_;
  int ctld_pid_ = 0;
  int rest_pid_ = 0;
  std::vector<int> slurmd_pids_;
};

}  // namespace gpuscale::slurm_test
