// `gpuscale gpus` and `gpuscale monitor`: read GPUs through a backend, print a table for
// people or JSON for scripts (shapes documented in README and relied on by scripts).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "api/json_views.h"
#include "cli/backend_flags.h"
#include "cli/command.h"
#include "core/clock.h"
#include "gpu/availability_score.h"
#include "gpumon/backend_factory.h"
#include "gpumon/monitor.h"
#include "task/task_json.h"

namespace gpuscale::cli {
namespace {

// Ordered so the keys print in the documented order.
using ojson = nlohmann::ordered_json;

// Rounds for output so JSON does not show 0.30000000000000004.
double Round(double value, double scale = 1000.0) { return std::round(value * scale) / scale; }

std::string Cell(const std::optional<double>& value, std::string_view unit, int precision = 0) {
  return value ? fmt::format("{:.{}f}{}", *value, precision, unit) : "-";
}

std::string Cell(const std::optional<int64_t>& value) {
  return value ? fmt::format("{}", *value) : "-";
}

// "2.49", "0.52 spot", or "-" when the price is unknown (never 0).
std::string PriceCell(const gpu::GpuInfo& gpu) {
  const std::string price = Cell(gpu.price_per_hour, "", 2);
  return gpu.spot ? price + " spot" : price;
}

void PrintGpusTable(const gpu::GpuSnapshot& snapshot, const gpu::ScoreWeights& weights,
                    std::ostream& out) {
  out << fmt::format("backend: {}  time: {}  GPUs: {}\n", snapshot.backend,
                     FormatRfc3339(snapshot.taken_at), snapshot.gpus.size());
  if (snapshot.gpus.empty()) return;
  out << fmt::format("{:<5} {:<26} {:<12} {:>10} {:>20} {:>6} {:>6} {:>8} {:>6}\n", "INDEX", "NAME",
                     "TYPE", "PRICE/H", "MEMORY USED/TOTAL MiB", "UTIL", "TEMP", "POWER", "SCORE");
  for (const gpu::GpuInfo& gpu : snapshot.gpus) {
    out << fmt::format("{:<5} {:<26} {:<12} {:>10} {:>20} {:>6} {:>6} {:>8} {:>6.2f}\n", gpu.index,
                       gpu.name, gpu.type.empty() ? "-" : gpu.type, PriceCell(gpu),
                       fmt::format("{} / {}", Cell(gpu.memory_used_mb), Cell(gpu.memory_total_mb)),
                       Cell(gpu.utilization_percent, "%"), Cell(gpu.temperature_c, " C"),
                       Cell(gpu.power_draw_w, " W", 1), gpu::AvailabilityScore(gpu, weights));
  }
  // The compute processes on each GPU, as nvidia-smi lists them, where the backend knows them.
  bool header = false;
  for (const gpu::GpuInfo& gpu : snapshot.gpus) {
    for (const gpu::GpuProcess& process : gpu.processes) {
      if (!header) {
        out << fmt::format("\n{:<5} {:>8} {:>12}  {}\n", "GPU", "PID", "MEMORY MiB", "PROCESS");
        header = true;
      }
      out << fmt::format("{:<5} {:>8} {:>12}  {}\n", gpu.index, process.pid,
                         Cell(process.used_memory_mb), process.name.empty() ? "-" : process.name);
    }
  }
}

struct GpusArgs {
  gpu::BackendOptions backend;
  OutputFormat format = OutputFormat::kTable;
};

int RunGpus(const GpusArgs& args, CommandContext& ctx) {
  Result<std::unique_ptr<gpu::GpuBackend>> backend = gpu::MakeBackend(args.backend);
  if (!backend) return ctx.Fail(backend.error());
  Result<gpu::GpuSnapshot> snapshot = (*backend)->Query(SystemClock::Instance().Now());
  if (!snapshot) return ctx.Fail(snapshot.error());
  if (args.format == OutputFormat::kTable) {
    PrintGpusTable(*snapshot, args.backend.weights, ctx.out);
    return kExitOk;
  }
  // The same view GET /v1/gpus answers with, so the CLI and the API cannot drift apart.
  ctx.out << api::SnapshotJson(*snapshot, args.backend.weights).dump(2) << "\n";
  return kExitOk;
}

ojson MonitorJson(const gpu::Monitor& monitor, double elapsed_seconds) {
  ojson gpu_stats = ojson::object();
  // The per-GPU object experiments store as gpu_monitoring: one codec, same keys.
  for (const auto& [index, stats] : monitor.Stats()) {
    gpu_stats[std::to_string(index)] = task::GpuStatsJson(stats);
  }
  return ojson{{"monitoring_duration_seconds", Round(elapsed_seconds)},
               {"sample_count", monitor.sample_count()},
               {"gpu_stats", std::move(gpu_stats)}};
}

std::string Range(const gpu::MetricStats& stats, std::string_view unit, int precision) {
  if (stats.samples == 0) return "-";
  return fmt::format("{:.{}f}/{:.{}f}/{:.{}f}{}", stats.min, precision, *stats.Mean(), precision,
                     stats.max, precision, unit);
}

void PrintMonitorTable(const gpu::Monitor& monitor, double elapsed_seconds, std::ostream& out) {
  out << fmt::format("monitored {:.1f} s, {} samples (min/mean/max)\n", elapsed_seconds,
                     monitor.sample_count());
  out << fmt::format("{:<5} {:<26} {:>16} {:>24} {:>18} {:>22}\n", "INDEX", "NAME", "UTIL",
                     "MEMORY USED MiB", "TEMP", "POWER");
  for (const auto& [index, stats] : monitor.Stats()) {
    out << fmt::format("{:<5} {:<26} {:>16} {:>24} {:>18} {:>22}\n", index, stats.name,
                       Range(stats.utilization_percent, "%", 0), Range(stats.memory_used_mb, "", 0),
                       Range(stats.temperature_c, " C", 0), Range(stats.power_draw_w, " W", 1));
  }
}

struct MonitorArgs {
  gpu::BackendOptions backend;
  OutputFormat format = OutputFormat::kTable;
  double interval_seconds = 1.0;
  double duration_seconds = 10.0;
};

// Samples for the requested duration in real time, with a progress line on stderr.
double MonitorFor(gpu::Monitor& monitor, double duration_seconds, std::ostream& err) {
  using SteadyClock = std::chrono::steady_clock;
  const auto start = SteadyClock::now();
  const auto end =
      start + std::chrono::duration_cast<SteadyClock::duration>(Seconds{duration_seconds});
  monitor.Start();
  while (SteadyClock::now() < end) {
    const auto step =
        std::min<SteadyClock::duration>(std::chrono::milliseconds(200), end - SteadyClock::now());
    std::this_thread::sleep_for(step);
    const double elapsed = Seconds{SteadyClock::now() - start}.count();
    err << fmt::format("\rmonitoring: {:.1f}/{:.1f} s, {} samples",
                       std::min(elapsed, duration_seconds), duration_seconds,
                       monitor.sample_count())
        << std::flush;
  }
  monitor.Stop();
  err << "\n";
  return Seconds{SteadyClock::now() - start}.count();
}

int RunMonitor(const MonitorArgs& args, CommandContext& ctx) {
  Result<std::unique_ptr<gpu::GpuBackend>> backend = gpu::MakeBackend(args.backend);
  if (!backend) return ctx.Fail(backend.error());
  gpu::MonitorOptions options;
  options.sample_interval = Seconds{args.interval_seconds};
  gpu::Monitor monitor(**backend, SystemClock::Instance(), options);
  const double elapsed = MonitorFor(monitor, args.duration_seconds, ctx.err);
  if (monitor.sample_count() == 0) {
    std::optional<Error> error = monitor.last_error();
    return ctx.Fail(error ? *error : Error{ErrorCode::kUnavailable, "no sample was taken", ""});
  }
  if (std::optional<Error> error = monitor.last_error()) {
    ctx.err << fmt::format("warning: {} of {} samples failed: {}\n", monitor.failed_sample_count(),
                           monitor.failed_sample_count() + monitor.sample_count(),
                           error->ToString());
  }
  if (args.format == OutputFormat::kJson) {
    ctx.out << MonitorJson(monitor, elapsed).dump(2) << "\n";
  } else {
    PrintMonitorTable(monitor, elapsed, ctx.out);
  }
  return kExitOk;
}

void AddGpusCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<GpusArgs>();
  CLI::App* command = app.add_subcommand(
      "gpus", "List GPUs with memory, utilization, temperature, power and availability score");
  AddBackendFlags(command, args->backend);
  AddOutputOption(command, args->format);
  command->callback([args, &ctx] { RunGpus(*args, ctx); });
}

// CLI11's PositiveNumber prints DBL_MAX in its message; this one says what is expected.
CLI::Validator PositiveIntervalSeconds() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        double value = 0;
        if (CLI::detail::lexical_cast(text, value) && std::isfinite(value) && value > 0) return {};
        return fmt::format("expected a number of seconds > 0, got '{}'", text);
      },
      "SECONDS>0");
}

void AddMonitorCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<MonitorArgs>();
  CLI::App* command = app.add_subcommand(
      "monitor", "Sample GPUs for a while and report min/max/mean per GPU and metric");
  command->add_option("--interval", args->interval_seconds, "Seconds between samples")
      ->check(PositiveIntervalSeconds())
      ->capture_default_str();
  command->add_option("--duration", args->duration_seconds, "Seconds to monitor")
      ->check(PositiveIntervalSeconds())
      ->capture_default_str();
  AddBackendFlags(command, args->backend);
  AddOutputOption(command, args->format);
  command->callback([args, &ctx] { RunMonitor(*args, ctx); });
}

}  // namespace

void AddGpuCommands(CLI::App& app, CommandContext& ctx) {
  AddGpusCommand(app, ctx);
  AddMonitorCommand(app, ctx);
}

}  // namespace gpuscale::cli
