// SlurmClusterSuite: the base of the test suites that run against a real Slurm cluster
// (SlurmTestCluster, slurm_fixture.h), parameterized by transport ("cli" or "rest"). The
// cluster starts once per suite (SetUpTestSuite) and stops with it (TearDownTestSuite);
// SetUp skips every test when the Slurm binaries are missing and fails it when the cluster
// did not start; CancelJobs() empties the queue so each test starts from none.
//
// Ownership: the suite owns the cluster (static, one suite at a time, as GoogleTest runs
// them). Thread-safety: none; GoogleTest's one thread drives it.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <string>

#include "core/clock.h"
#include "core/result.h"
#include "orch/process_util.h"
#include "slurm_fixture.h"

namespace gpuscale::slurm_test {

class SlurmClusterSuite : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() {
    if (!SlurmTestCluster::MissingBinaries().empty()) return;
    Result<std::unique_ptr<SlurmTestCluster>> started = SlurmTestCluster::Start({});
    if (started) {
      cluster_ = std::move(*started);
    } else {
      start_error_ = started.error().ToString();
    }
  }
  static void TearDownTestSuite() {
    cluster_.reset();  // cancels the jobs, stops Slurm
    start_error_.clear();
  }

  // A derived SetUp calls this first and returns when IsSkipped() or HasFatalFailure().
  void SetUp() override {
    if (const std::string missing = SlurmTestCluster::MissingBinaries(); !missing.empty()) {
      GTEST_SKIP() << missing;
    }
    ASSERT_NE(cluster_, nullptr) << start_error_;
  }

  // scancel every job and fail the test when the queue is not empty within `timeout`.
  static void CancelJobs(Seconds timeout) {
    if (cluster_ != nullptr && !cluster_->CancelAllJobs(timeout)) {
      ADD_FAILURE() << "jobs left behind";
    }
  }

  // The first of ten consecutive free ports (Slurm replicas' port range: ports are per node,
  // and every node is this host), tried at random among `lowest + 10 * k` for k < `blocks`;
  // the last one tried when 50 tries find none free. Keep the blocks below the kernel's
  // ephemeral ports (32768 and up on Linux): there a client's connection (bench, the daemon's
  // scrapes, a test running beside this one) can take a port between this check and the
  // replica's bind, and the replica dies at start.
  static int FreePortBase(int lowest, int blocks) {
    std::mt19937 random{std::random_device{}()};
    int base = lowest;
    for (int attempt = 0; attempt < 50; ++attempt) {
      base = lowest + static_cast<int>(random() % static_cast<unsigned>(blocks)) * 10;
      bool free = true;
      for (int p = base; p < base + 10 && free; ++p) {
        free = orch::PickFreePort(p, p, {}).has_value();
      }
      if (free) break;
    }
    return base;
  }

  static inline std::unique_ptr<SlurmTestCluster> cluster_;
  static inline std::string start_error_;
};

}  // namespace gpuscale::slurm_test
