// SlurmRestTransport: SlurmTransport through slurmrestd's OpenAPI v0.0.38 (Slurm 22.05):
//   POST   /slurm/v0.0.38/job/submit   {"script": ..., "job": {...}}
//   GET    /slurm/v0.0.38/jobs
//   GET    /slurm/v0.0.38/nodes
//   DELETE /slurm/v0.0.38/job/{id}
// over HTTP (TCP) with JWT authentication: every request carries X-SLURM-USER-NAME and
// X-SLURM-USER-TOKEN (slurmrestd -a rest_auth/jwt; tokens from `scontrol token`). Unix-socket
// "local" authentication is not offered: cpp-httplib 0.11 has no AF_UNIX client; sites that
// only expose a socket use the CLI transport.
//
// Ownership: holds its configuration only. Thread-safety: each call opens its own
// connection; calls may run concurrently.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/clock.h"
#include "orch/slurm_transport.h"

namespace gpuscale::orch {

struct SlurmRestConfig {
  std::string url;    // "http://slurmrestd.example:6820" (scheme, host, port); required
  std::string user;   // X-SLURM-USER-NAME; "" = header not sent
  std::string token;  // X-SLURM-USER-TOKEN (JWT); "" = header not sent
  Seconds timeout{15};  // connect and read, per request
};

class SlurmRestTransport final : public SlurmTransport {
 public:
  explicit SlurmRestTransport(SlurmRestConfig config) : config_(std::move(config)) {}

  std::string_view Name() const override { return "rest"; }
  Result<std::string> Submit(const SlurmJobRequest& request) override;
  Result<std::vector<SlurmJob>> ListJobs() override;
  Result<std::vector<SlurmNode>> ListNodes() override;
  Status Cancel(const std::string& job_id) override;

 private:
  struct Reply {
    int status = 0;
    std::string body;
  };
  // Errors: kUnavailable when no HTTP answer came or the answer is 401/403 (authentication).
  Result<Reply> Call(const std::string& method, const std::string& path,
                     const std::string& body);

  SlurmRestConfig config_;
};

}  // namespace gpuscale::orch
