#include "cli/task_views.h"

#include <fmt/format.h>

#include <algorithm>
#include <string_view>
#include <utility>
#include <vector>

#include "core/clock.h"

namespace gpuscale::cli {
namespace {

using Json = TaskJsonView;

// A cell's text: strings as they are, numbers and booleans as JSON writes them, "-" for
// null or missing.
std::string Text(const Json& value) {
  if (value.is_null()) return "-";
  if (value.is_string()) return value.get<std::string>();
  return value.dump();
}

const Json& Member(const Json& object, std::string_view key) {
  static const Json kNull;
  if (!object.is_object()) return kNull;
  auto it = object.find(std::string(key));
  return it == object.end() ? kNull : *it;
}

std::string Time(const Json& unix_seconds) {
  return unix_seconds.is_number() ? FormatRfc3339(Seconds{unix_seconds.get<double>()}) : "-";
}

std::string Fixed(const Json& value, int precision, std::string_view unit = "") {
  return value.is_number() ? fmt::format("{:.{}f}{}", value.get<double>(), precision, unit) : "-";
}

// Seconds shown as milliseconds: latencies of LLM serving read better in ms.
std::string Millis(const Json& seconds) {
  return seconds.is_number() ? fmt::format("{:.1f} ms", seconds.get<double>() * 1000.0) : "-";
}

// "max-num-seqs=8 tp=1"
std::string ParametersText(const Json& parameters) {
  std::string text;
  if (!parameters.is_object()) return "-";
  for (const auto& [name, value] : parameters.items()) {
    if (!text.empty()) text += ' ';
    text += name + "=" + Text(value);
  }
  return text.empty() ? "-" : text;
}

// The leased GPUs' indices ("0,1"), empty before allocation.
std::string GpuIdsText(const Json& experiment) {
  const Json& indices = Member(Member(experiment, "gpu_info"), "indices");
  if (!indices.is_array()) return "";
  std::vector<std::string> parts;
  for (const Json& index : indices) parts.push_back(Text(index));
  return fmt::format("{}", fmt::join(parts, ","));
}

// The GPU IDS cell: the leased indices once allocated ("2" is GPU 2, not a count), else how
// many are needed ("needs 2").
std::string GpuIdsCell(const Json& experiment) {
  const std::string ids = GpuIdsText(experiment);
  if (!ids.empty()) return ids;
  return fmt::format("needs {}", Text(Member(experiment, "gpus_required")));
}

// `experiment show`'s gpus line: the count, then the indices ("2 (ids 0,1)", "1 (id 2)").
std::string GpuCountText(const Json& experiment) {
  const Json& indices = Member(Member(experiment, "gpu_info"), "indices");
  if (!indices.is_array() || indices.empty()) return GpuIdsCell(experiment);
  return fmt::format("{} (id{} {})", indices.size(), indices.size() == 1 ? "" : "s",
                     GpuIdsText(experiment));
}

// Columns padded to their widest cell; `right` marks right-aligned columns.
void PrintRows(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right,
               std::ostream& out) {
  std::vector<size_t> widths(right.size(), 0);
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], row[i].size());
  }
  for (const auto& row : rows) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += "  ";
      const std::string pad(widths[i] - row[i].size(), ' ');
      line += right[i] ? pad + row[i] : (i + 1 == row.size() ? row[i] : row[i] + pad);
    }
    out << line << "\n";
  }
}

// The objective's latency of an experiment's bench report ("ttft p90 81.2 ms").
std::string ObjectiveLatency(const Json& objective, const Json& bench) {
  const std::string metric = Text(Member(objective, "latency_metric"));
  const std::string key = metric == "tpot"  ? "time_per_output_token_seconds"
                          : metric == "itl" ? "inter_token_latency_seconds"
                          : metric == "e2e" ? "e2e_latency_seconds"
                                            : "ttft_seconds";
  const Json& percentile = Member(objective, "percentile");
  const std::string p =
      percentile.is_number() ? fmt::format("p{}", percentile.get<double>()) : "p90";
  return fmt::format("{} {} {}", metric, p, Millis(Member(Member(bench, key), p)));
}

const Json& ExperimentById(const Json& task, const Json& id) {
  static const Json kNull;
  const Json& experiments = Member(task, "experiments");
  if (!experiments.is_array() || id.is_null()) return kNull;
  for (const Json& experiment : experiments) {
    if (Member(experiment, "id") == id) return experiment;
  }
  return kNull;
}

void PrintBench(const Json& bench, std::ostream& out) {
  if (!bench.is_object()) return;
  out << fmt::format("  benchmark:   {} tok/s out, {} req/s, {} completed, {} failed\n",
                     Fixed(Member(bench, "output_token_throughput_per_second"), 1),
                     Fixed(Member(bench, "request_throughput_per_second"), 2),
                     Text(Member(bench, "requests_completed")),
                     Text(Member(bench, "requests_failed")));
  std::vector<std::vector<std::string>> rows = {{"  LATENCY", "P50", "P90", "P99"}};
  for (const auto& [label, key] : {std::pair{"  ttft", "ttft_seconds"},
                                   std::pair{"  tpot", "time_per_output_token_seconds"},
                                   std::pair{"  itl", "inter_token_latency_seconds"},
                                   std::pair{"  e2e", "e2e_latency_seconds"}}) {
    const Json& summary = Member(bench, key);
    rows.push_back({label, Millis(Member(summary, "p50")), Millis(Member(summary, "p90")),
                    Millis(Member(summary, "p99"))});
  }
  PrintRows(rows, {false, true, true, true}, out);
}

void PrintMonitoring(const Json& monitoring, std::ostream& out) {
  const Json& gpus = Member(monitoring, "gpus");
  if (gpus.is_object() && !gpus.empty()) {
    std::vector<std::vector<std::string>> rows = {
        {"  GPU", "UTIL MEAN", "UTIL MAX", "MEM MAX MiB", "POWER MEAN"}};
    for (const auto& [index, stats] : gpus.items()) {
      rows.push_back({"  " + index, Fixed(Member(Member(stats, "utilization"), "mean"), 1, "%"),
                      Fixed(Member(Member(stats, "utilization"), "max"), 1, "%"),
                      Fixed(Member(Member(stats, "memory_used_mb"), "max"), 0),
                      Fixed(Member(Member(stats, "power_draw_w"), "mean"), 1, " W")});
    }
    PrintRows(rows, {false, true, true, true, true}, out);
  }
}

}  // namespace

void PrintTaskList(const Json& list, std::ostream& out) {
  const Json& tasks = Member(list, "tasks");
  if (!tasks.is_array() || tasks.empty()) {
    out << "no tasks (submit one with: gpuscale task submit FILE)\n";
    return;
  }
  std::vector<std::vector<std::string>> rows = {
      {"ID", "NAME", "STATUS", "DONE", "RUNNING", "FAILED", "BEST", "CREATED", "MODEL"}};
  for (const Json& task : tasks) {
    const Json& best = Member(task, "best_experiment_id");
    rows.push_back({Text(Member(task, "id")), Text(Member(task, "name")),
                    Text(Member(task, "status")),
                    Text(Member(task, "experiments_done")) + "/" +
                        Text(Member(task, "experiments_total")),
                    Text(Member(task, "experiments_running")),
                    Text(Member(task, "experiments_failed")),
                    best.is_null() ? "-" : "#" + Text(best), Time(Member(task, "created_at")),
                    Text(Member(task, "model"))});
  }
  PrintRows(rows, {true, false, false, true, true, true, false, false, false}, out);
}

void PrintTask(const Json& task, std::ostream& out) {
  out << fmt::format("task {} '{}': {}\n", Text(Member(task, "id")), Text(Member(task, "name")),
                     Text(Member(task, "status")));
  out << fmt::format("  model:       {}\n", Text(Member(task, "model")));
  out << fmt::format("  objective:   {}\n",
                     Text(Member(Member(task, "objective"), "description")));
  out << fmt::format("  progress:    {}\n", ProgressLine(task));
  out << fmt::format("  created:     {}   finished: {}\n", Time(Member(task, "created_at")),
                     Time(Member(task, "finished_at")));
  const std::string message = Text(Member(task, "message"));
  if (!message.empty() && message != "-") out << fmt::format("  message:     {}\n", message);
  const Json& experiments = Member(task, "experiments");
  if (!experiments.is_array() || experiments.empty()) return;
  out << "\n";
  // Experiments go by their id everywhere (CLI, API, dashboard, logs); the position within the
  // task's grid is not shown, so that "#7" always names the same experiment.
  std::vector<std::vector<std::string>> rows = {
      {"ID", "STATUS", "PARAMETERS", "GPU IDS", "TOK/S", "TTFT P90", "TPOT P90", "MONITORED"}};
  for (const Json& e : experiments) {
    const Json& bench = Member(e, "bench");
    const bool best = Member(e, "is_best") == true;
    rows.push_back({(best ? "*#" : "#") + Text(Member(e, "id")), Text(Member(e, "status")),
                    ParametersText(Member(e, "parameters")), GpuIdsCell(e),
                    Fixed(Member(bench, "output_token_throughput_per_second"), 1),
                    Millis(Member(Member(bench, "ttft_seconds"), "p90")),
                    Millis(Member(Member(bench, "time_per_output_token_seconds"), "p90")),
                    Member(e, "gpu_monitoring").is_object() ? "yes" : "-"});
  }
  PrintRows(rows, {true, false, false, false, true, true, true, false}, out);
  out << "(* best for the objective; details: gpuscale experiment show ID)\n";
}

void PrintExperiment(const Json& e, std::ostream& out) {
  out << fmt::format("experiment #{} (task {}): {}{}\n", Text(Member(e, "id")),
                     Text(Member(e, "task_id")), Text(Member(e, "status")),
                     Member(e, "is_best") == true ? ", best" : "");
  out << fmt::format("  parameters:  {}\n", ParametersText(Member(e, "parameters")));
  const Json& info = Member(e, "gpu_info");
  out << fmt::format("  gpus:        {}, {} MiB per GPU estimated{}\n", GpuCountText(e),
                     Text(Member(e, "memory_mb_per_gpu")),
                     info.is_object() ? fmt::format(", {} via {}", Text(Member(info, "model")),
                                                    Text(Member(info, "allocation_method")))
                                      : "");
  out << fmt::format("  queued:      {}   started: {}   finished: {}\n",
                     Time(Member(e, "queued_at")), Time(Member(e, "started_at")),
                     Time(Member(e, "finished_at")));
  const std::string message = Text(Member(e, "message"));
  if (!message.empty() && message != "-") out << fmt::format("  message:     {}\n", message);
  out << fmt::format("  log:         {}\n", Text(Member(e, "log_path")));
  PrintBench(Member(e, "bench"), out);
  PrintMonitoring(Member(e, "gpu_monitoring"), out);
}

std::string ProgressLine(const Json& task) {
  std::string line = fmt::format("experiments {}/{} done, {} running",
                                 Text(Member(task, "experiments_done")),
                                 Text(Member(task, "experiments_total")),
                                 Text(Member(task, "experiments_running")));
  const Json& failed = Member(task, "experiments_failed");
  if (failed.is_number() && failed.get<double>() > 0) line += fmt::format(", {} failed", Text(failed));
  const Json& best_id = Member(task, "best_experiment_id");
  if (best_id.is_null()) return line + ", no best yet";
  const Json& bench = Member(ExperimentById(task, best_id), "bench");
  const std::string throughput =
      Fixed(Member(bench, "output_token_throughput_per_second"), 1, " tok/s");
  const Json& objective = Member(task, "objective");
  const std::string kind = Text(Member(objective, "kind"));
  if (kind == "min_latency" || kind == "max_throughput_under_latency") {
    return fmt::format("{}, best #{} ({}, {})", line, Text(best_id),
                       ObjectiveLatency(objective, bench), throughput);
  }
  return fmt::format("{}, best #{} ({})", line, Text(best_id), throughput);
}

}  // namespace gpuscale::cli
