#include "orch/slurm_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>

namespace gpuscale::orch {
namespace {

using nlohmann::json;

// A string field; "" when absent, null or not a string (Slurm prints null for unset fields).
std::string Str(const json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return "";
  return it->get<std::string>();
}

std::vector<std::string> StrList(const json& object, const char* key) {
  std::vector<std::string> out;
  auto it = object.find(key);
  if (it == object.end() || !it->is_array()) return out;
  for (const json& item : *it) {
    if (item.is_string()) out.push_back(item.get<std::string>());
  }
  return out;
}

std::string ErrorsText(const json& doc) {
  std::string out;
  auto it = doc.find("errors");
  if (it == doc.end() || !it->is_array()) return out;
  for (const json& e : *it) {
    // slurmrestd puts the context in "description" and the cause in "error" ("Batch job
    // submission failed" / "Unable to contact slurm controller"): keep both.
    const std::string description = Str(e, "description");
    const std::string cause = Str(e, "error");
    std::string text = description.empty() ? cause
                       : cause.empty()     ? description
                                           : description + " (" + cause + ")";
    if (text.empty()) text = e.dump();
    out += (out.empty() ? "" : "; ") + text;
  }
  return out;
}

// Parses `text` and checks it holds `array_key` and no errors.
Result<json> Document(std::string_view text, const char* array_key) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Unavailable(fmt::format("slurm answered with something that is not JSON: '{}'",
                                   text.substr(0, 200)));
  }
  if (std::string errors = ErrorsText(doc); !errors.empty()) {
    return Unavailable("slurm reported: " + errors);
  }
  auto it = doc.find(array_key);
  if (it == doc.end() || !it->is_array()) {
    return Unavailable(fmt::format("slurm's answer has no '{}' list", array_key));
  }
  return doc;
}

// Splits "a(x,y),b" at the commas outside parentheses.
std::vector<std::string_view> SplitGres(std::string_view gres) {
  std::vector<std::string_view> items;
  int depth = 0;
  size_t begin = 0;
  for (size_t i = 0; i <= gres.size(); ++i) {
    if (i == gres.size() || (gres[i] == ',' && depth == 0)) {
      if (i > begin) items.push_back(gres.substr(begin, i - begin));
      begin = i + 1;
    } else if (gres[i] == '(') {
      ++depth;
    } else if (gres[i] == ')') {
      depth = std::max(0, depth - 1);
    }
  }
  return items;
}

}  // namespace

Result<std::vector<SlurmJob>> ParseSlurmJobs(std::string_view json_text) {
  GS_ASSIGN_OR_RETURN(json doc, Document(json_text, "jobs"));
  std::vector<SlurmJob> jobs;
  for (const json& j : doc["jobs"]) {
    if (!j.is_object()) continue;
    SlurmJob job;
    auto id = j.find("job_id");
    if (id == j.end() || !id->is_number_integer()) continue;
    job.id = std::to_string(id->get<int64_t>());
    job.name = Str(j, "name");
    job.comment = Str(j, "comment");
    job.state = Str(j, "job_state");
    job.reason = Str(j, "state_reason");
    job.batch_host = Str(j, "batch_host");
    job.nodes = Str(j, "nodes");
    jobs.push_back(std::move(job));
  }
  return jobs;
}

Result<std::vector<SlurmNode>> ParseSlurmNodes(std::string_view json_text) {
  GS_ASSIGN_OR_RETURN(json doc, Document(json_text, "nodes"));
  std::vector<SlurmNode> nodes;
  for (const json& n : doc["nodes"]) {
    if (!n.is_object()) continue;
    SlurmNode node;
    node.name = Str(n, "name");
    node.address = Str(n, "address");
    node.hostname = Str(n, "hostname");
    node.state = Str(n, "state");
    node.state_flags = StrList(n, "state_flags");
    node.partitions = StrList(n, "partitions");
    node.gres = Str(n, "gres");
    node.gres_used = Str(n, "gres_used");
    nodes.push_back(std::move(node));
  }
  return nodes;
}

Result<std::string> ParseSlurmSubmit(std::string_view json_text) {
  json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Unavailable(fmt::format("slurmrestd answered the submission with something that is "
                                   "not JSON: '{}'",
                                   json_text.substr(0, 200)));
  }
  if (std::string errors = ErrorsText(doc); !errors.empty()) {
    return InvalidArgument("slurm refused the job: " + errors);
  }
  auto id = doc.find("job_id");
  if (id == doc.end() || !id->is_number_integer()) {
    return Unavailable("slurmrestd's submission answer has no job_id");
  }
  return std::to_string(id->get<int64_t>());
}

std::string SlurmErrorsOf(std::string_view json_text) {
  json doc = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return "";
  return ErrorsText(doc);
}

std::string SlurmSubmitBody(const SlurmJobRequest& r) {
  json job = {{"name", r.name},
              {"comment", r.comment},
              {"standard_output", r.output_path},
              {"standard_error", r.output_path},
              {"current_working_directory", r.working_dir}};
  json env = json::object();
  for (const auto& [name, value] : r.environment) env[name] = value;
  job["environment"] = env;
  if (!r.gres.empty()) job["gres"] = r.gres;
  if (!r.partition.empty()) job["partition"] = r.partition;
  if (!r.account.empty()) job["account"] = r.account;
  if (r.time_limit_minutes > 0) job["time_limit"] = r.time_limit_minutes;
  return json{{"script", r.script}, {"job", job}}.dump();
}

int CountGpus(std::string_view gres, std::string_view type) {
  int total = 0;
  for (std::string_view item : SplitGres(gres)) {
    item = item.substr(0, item.find('('));
    std::vector<std::string_view> parts;
    for (size_t pos = 0; pos <= item.size();) {
      const size_t colon = std::min(item.find(':', pos), item.size());
      parts.push_back(item.substr(pos, colon - pos));
      pos = colon + 1;
    }
    if (parts.size() < 2 || parts.size() > 3 || parts[0] != "gpu") continue;
    if (!type.empty() && (parts.size() != 3 || parts[1] != type)) continue;
    int count = 0;
    const std::string_view digits = parts.back();
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
    // from_chars takes a sign: "gpu:-2" is as unparsable as "gpu:x". The sum saturates
    // rather than overflow on counts no node has.
    if (ec == std::errc() && end == digits.data() + digits.size() && count >= 0) {
      total = static_cast<int>(
          std::min<int64_t>(int64_t{total} + count, std::numeric_limits<int>::max()));
    }
  }
  return total;
}

bool SlurmControllerUnreachable(std::string_view error_text) {
  for (std::string_view sign : {"Unable to contact", "connect failure", "timed out",
                                "Connection refused", "Zero Bytes were transmitted"}) {
    if (error_text.find(sign) != std::string_view::npos) return true;
  }
  return false;
}

bool SlurmJobActive(std::string_view state) {
  static constexpr std::string_view kActive[] = {
      "PENDING", "RUNNING", "CONFIGURING", "SUSPENDED", "REQUEUED", "REQUEUE_HOLD",
      "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD", "STOPPED"};
  return std::find(std::begin(kActive), std::end(kActive), state) != std::end(kActive);
}

bool SlurmNodeUsable(const SlurmNode& node) {
  static constexpr std::string_view kBadStates[] = {"down", "drained", "draining", "future",
                                                    "unknown", "error"};
  static constexpr std::string_view kBadFlags[] = {"DRAIN", "DRAINED", "DRAINING",
                                                   "NOT_RESPONDING", "MAINTENANCE", "FAIL"};
  std::string state = node.state;
  std::transform(state.begin(), state.end(), state.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  for (std::string_view bad : kBadStates) {
    if (state == bad) return false;
  }
  for (const std::string& flag : node.state_flags) {
    for (std::string_view bad : kBadFlags) {
      if (flag == bad) return false;
    }
  }
  return true;
}

}  // namespace gpuscale::orch
