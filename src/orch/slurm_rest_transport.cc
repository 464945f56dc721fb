#include "orch/slurm_rest_transport.h"

#include <fmt/format.h>
#include <httplib.h>

#include "orch/slurm_json.h"

namespace gpuscale::orch {
namespace {

constexpr const char* kApi = "/slurm/v0.0.38";

}  // namespace

Result<SlurmRestTransport::Reply> SlurmRestTransport::Call(const std::string& method,
                                                           const std::string& path,
                                                           const std::string& body) {
  httplib::Client client(config_.url);
  if (!client.is_valid()) {
    return Unavailable(fmt::format("invalid slurmrestd url '{}'", config_.url), "slurm.url");
  }
  const auto seconds = static_cast<time_t>(config_.timeout.count());
  const auto usec = static_cast<time_t>((config_.timeout.count() - seconds) * 1e6);
  client.set_connection_timeout(seconds, usec);
  client.set_read_timeout(seconds, usec);
  client.set_write_timeout(seconds, usec);
  httplib::Headers headers;
  if (!config_.user.empty()) headers.emplace("X-SLURM-USER-NAME", config_.user);
  if (!config_.token.empty()) headers.emplace("X-SLURM-USER-TOKEN", config_.token);
  httplib::Result result = method == "GET"    ? client.Get(path.c_str(), headers)
                           : method == "POST" ? client.Post(path.c_str(), headers, body,
                                                            "application/json")
                                              : client.Delete(path.c_str(), headers);
  if (!result) {
    return Unavailable(fmt::format("{} {}{}: {}", method, config_.url, path,
                                   httplib::to_string(result.error())));
  }
  if (result->status == 401 || result->status == 403) {
    return Unavailable(fmt::format("{} {}{}: HTTP {} (authentication failed: check slurm.user "
                                   "and slurm.token / token_file): {}",
                                   method, config_.url, path, result->status, result->body),
                       "slurm.token");
  }
  return Reply{result->status, result->body};
}

Result<std::string> SlurmRestTransport::Submit(const SlurmJobRequest& request) {
  const std::string path = fmt::format("{}/job/submit", kApi);
  GS_ASSIGN_OR_RETURN(Reply reply, Call("POST", path, SlurmSubmitBody(request)));
  Result<std::string> id = ParseSlurmSubmit(reply.body);
  if (!id) {
    const std::string errors = SlurmErrorsOf(reply.body);
    if ((reply.status >= 500 && errors.empty()) || SlurmControllerUnreachable(errors)) {
      return Unavailable(fmt::format("POST {}: HTTP {}: {}", path, reply.status,
                                     errors.empty() ? id.error().message : errors));
    }
  }
  return id;
}

Result<std::vector<SlurmJob>> SlurmRestTransport::ListJobs() {
  GS_ASSIGN_OR_RETURN(Reply reply, Call("GET", fmt::format("{}/jobs", kApi), ""));
  return ParseSlurmJobs(reply.body);
}

Result<std::vector<SlurmNode>> SlurmRestTransport::ListNodes() {
  GS_ASSIGN_OR_RETURN(Reply reply, Call("GET", fmt::format("{}/nodes", kApi), ""));
  return ParseSlurmNodes(reply.body);
}

Status SlurmRestTransport::Cancel(const std::string& job_id) {
  const std::string path = fmt::format("{}/job/{}", kApi, job_id);
  GS_ASSIGN_OR_RETURN(Reply reply, Call("DELETE", path, ""));
  const std::string errors = SlurmErrorsOf(reply.body);
  if (reply.status == 200 && errors.empty()) return OkStatus();
  const std::string message = fmt::format("DELETE {}: HTTP {}: {}", path, reply.status, errors);
  if (errors.find("Invalid job id") != std::string::npos ||
      errors.find("already completing or completed") != std::string::npos) {
    return NotFound(message);
  }
  return Unavailable(message);
}

}  // namespace gpuscale::orch
