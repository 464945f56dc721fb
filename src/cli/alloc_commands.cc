// `gpuscale allocate`, `gpuscale wait` and `gpuscale estimate`: GPU selection, waiting for
// GPUs and requirement estimation from the command line (shapes in README; scripts rely on
// them). Exit codes: 3 when `allocate` cannot be met, 4 when `wait` times out, 2 for bad
// flags or task files.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>

#include "alloc/gpu_selector.h"
#include "alloc/gpu_waiter.h"
#include "alloc/requirements.h"
#include "cli/backend_flags.h"
#include "cli/command.h"
#include "config/task_file.h"
#include "core/clock.h"
#include "gpumon/backend_factory.h"

namespace gpuscale::cli {
namespace {

using nlohmann::json;

// --- flag validators: each message says what is expected (CLI11 prefixes the flag) ---

struct NumberRule {
  double lo = 0;
  bool lo_open = false;  // value > lo rather than >= lo
  double hi = 1e9;
  bool integer = false;
};

CLI::Validator NumberValidator(std::string name, NumberRule rule, std::string expectation) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        const bool ok = CLI::detail::lexical_cast(text, value) && std::isfinite(value) &&
                        (rule.lo_open ? value > rule.lo : value >= rule.lo) && value <= rule.hi &&
                        (!rule.integer || std::floor(value) == value);
        return ok ? std::string() : fmt::format("expected {}, got '{}'", expectation, text);
      },
      std::move(name));
}

CLI::Validator PositiveCount() {
  return NumberValidator("N>=1", {0, true, 1e6, true}, "a whole number of GPUs >= 1");
}
CLI::Validator NonNegativeMib() {
  return NumberValidator("MIB>=0", {0, false, 1e12, true}, "a whole number of MiB >= 0");
}
CLI::Validator Percentage() {
  return NumberValidator("0..100", {0, false, 100, false}, "a percentage in 0..100");
}
CLI::Validator NonNegativeSeconds() {
  return NumberValidator("SECONDS>=0", {0, false, 1e9, false}, "a number of seconds >= 0");
}
CLI::Validator PositiveSeconds() {
  return NumberValidator("SECONDS>0", {0, true, 1e9, false}, "a number of seconds > 0");
}

// --gpus, --min-memory-mb, --max-utilization, --gpu-type: shared by allocate and wait.
void AddRequestFlags(CLI::App* command, alloc::SelectionRequest& request) {
  command->add_option("--gpus", request.gpu_count, "Number of GPUs needed")
      ->required()
      ->check(PositiveCount());
  command
      ->add_option("--min-memory-mb", request.min_memory_free_mb,
                   "Minimum free memory per GPU, MiB (0: no memory filter)")
      ->check(NonNegativeMib())
      ->capture_default_str();
  command
      ->add_option("--max-utilization", request.max_utilization_percent,
                   "Maximum GPU utilization, percent (100: no utilization filter)")
      ->check(Percentage())
      ->capture_default_str();
  command->add_option("--gpu-type", request.gpu_type,
                      "Only GPUs of this type key, e.g. A100-80GB (the TYPE `gpuscale gpus` "
                      "shows); default: any type");
}

// --- output ---

json SelectionJson(const alloc::Selection& selection) {
  json details = json::array();
  for (const alloc::SelectedGpu& gpu : selection.gpus) {
    details.push_back(
        {{"index", gpu.index},
         {"name", gpu.name},
         {"type", gpu.type.empty() ? json(nullptr) : json(gpu.type)},
         {"price_per_hour", gpu.price_per_hour ? json(*gpu.price_per_hour) : json(nullptr)},
         {"spot", gpu.spot},
         {"memory_free_mb", gpu.memory_free_mb},
         {"utilization_percent",
          gpu.utilization_percent ? json(*gpu.utilization_percent) : json(nullptr)},
         {"score", std::round(gpu.score * 10000.0) / 10000.0}});
  }
  return json{{"gpus", selection.Indices()}, {"details", std::move(details)}};
}

void PrintSelection(const alloc::Selection& selection, OutputFormat format, std::ostream& out) {
  if (format == OutputFormat::kJson) {
    out << SelectionJson(selection).dump(2) << "\n";
    return;
  }
  out << fmt::format("{:<5} {:<12} {:<26} {:<12} {:>10} {:>15} {:>6} {:>6}\n", "INDEX", "NODE",
                     "NAME", "TYPE", "PRICE/H", "FREE MiB", "UTIL", "SCORE");
  for (const alloc::SelectedGpu& gpu : selection.gpus) {
    const std::string price =
        gpu.price_per_hour ? fmt::format("{:.2f}{}", *gpu.price_per_hour, gpu.spot ? " spot" : "")
                           : "-";
    out << fmt::format(
        "{:<5} {:<12} {:<26} {:<12} {:>10} {:>15} {:>6} {:>6.3f}\n", gpu.index,
        gpu.node.empty() ? "-" : gpu.node, gpu.name, gpu.type.empty() ? "-" : gpu.type, price,
        gpu.memory_free_mb,
        gpu.utilization_percent ? fmt::format("{:.0f}%", *gpu.utilization_percent) : "-",
        gpu.score);
  }
  out << fmt::format("CUDA_VISIBLE_DEVICES={}\n", fmt::join(selection.Indices(), ","));
}

Result<gpu::GpuSnapshot> ReadGpus(gpu::GpuBackend& backend) {
  return backend.Query(SystemClock::Instance().Now());
}

// --- allocate ---

struct AllocateArgs {
  alloc::SelectionRequest request;
  gpu::BackendOptions backend;
  OutputFormat format = OutputFormat::kTable;
};

int RunAllocate(const AllocateArgs& args, CommandContext& ctx) {
  Result<std::unique_ptr<gpu::GpuBackend>> backend = gpu::MakeBackend(args.backend);
  if (!backend) return ctx.Fail(backend.error());
  Result<gpu::GpuSnapshot> snapshot = ReadGpus(**backend);
  if (!snapshot) return ctx.Fail(snapshot.error());
  alloc::SelectionRequest request = args.request;
  request.weights = args.backend.weights;
  Result<alloc::Selection> selection = alloc::SelectGpus(*snapshot, request);
  if (!selection) return ctx.Fail(selection.error());
  PrintSelection(*selection, args.format, ctx.out);
  return kExitOk;
}

void AddAllocateCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<AllocateArgs>();
  CLI::App* command = app.add_subcommand(
      "allocate",
      "Select the N best GPUs now: filter by free memory and utilization, rank by availability "
      "score, keep multi-GPU picks close in topology. One-shot: it selects but leases nothing "
      "(only the daemon's lease ledger keeps GPUs from being handed out twice). Exit 3 when N "
      "GPUs cannot be found.");
  AddRequestFlags(command, args->request);
  AddBackendFlags(command, args->backend);
  AddOutputOption(command, args->format);
  command->callback([args, &ctx] { RunAllocate(*args, ctx); });
}

// --- wait ---

struct WaitArgs {
  alloc::SelectionRequest request;
  gpu::BackendOptions backend;
  OutputFormat format = OutputFormat::kTable;
  double timeout_seconds = 300;
  double interval_seconds = 30;
};

int RunWait(const WaitArgs& args, CommandContext& ctx) {
  Result<std::unique_ptr<gpu::GpuBackend>> backend = gpu::MakeBackend(args.backend);
  if (!backend) return ctx.Fail(backend.error());
  gpu::GpuBackend& source = **backend;
  alloc::SelectionRequest request = args.request;
  request.weights = args.backend.weights;
  auto progress = [&ctx](const alloc::WaitProgress& p) {
    ctx.err << fmt::format("waiting: check {} at {:.1f} s, {:.1f} s left: {}\n", p.checks,
                           p.elapsed.count(), p.remaining.count(), p.last.ToString())
            << std::flush;
  };
  Result<alloc::WaitResult> result = alloc::WaitForGpus(
      request, [&source] { return ReadGpus(source); }, SystemClock::Instance(),
      [](Seconds pause) { std::this_thread::sleep_for(pause); },
      alloc::WaitOptions{Seconds{args.timeout_seconds}, Seconds{args.interval_seconds}}, progress);
  if (!result) return ctx.Fail(result.error());
  ctx.err << fmt::format("{} GPU{} available after {:.1f} s ({} check{}): {}\n", request.gpu_count,
                         request.gpu_count == 1 ? "" : "s", result->waited.count(), result->checks,
                         result->checks == 1 ? "" : "s",
                         fmt::join(result->selection.Indices(), ","));
  PrintSelection(result->selection, args.format, ctx.out);
  return kExitOk;
}

void AddWaitCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<WaitArgs>();
  CLI::App* command = app.add_subcommand(
      "wait",
      "Poll GPUs until N fit the filters (exit 0, prints them like allocate) or the timeout "
      "passes (exit 4, says what is missing). A progress line goes to stderr per check.");
  AddRequestFlags(command, args->request);
  command->add_option("--timeout", args->timeout_seconds, "Give up after this many seconds")
      ->check(NonNegativeSeconds())
      ->capture_default_str();
  command->add_option("--interval", args->interval_seconds, "Seconds between checks")
      ->check(PositiveSeconds())
      ->capture_default_str();
  AddBackendFlags(command, args->backend);
  AddOutputOption(command, args->format);
  command->callback([args, &ctx] { RunWait(*args, ctx); });
}

// --- estimate ---

struct EstimateArgs {
  std::string task_path;
  gpu::BackendOptions backend;
  bool read_backend = false;  // --backend or --inventory given: use the real GPU total
  OutputFormat format = OutputFormat::kTable;
};

// Largest total memory the backend reports (conservative for a memory fraction).
Result<std::optional<int64_t>> BackendTotalMemoryMb(const gpu::BackendOptions& options) {
  GS_ASSIGN_OR_RETURN(std::unique_ptr<gpu::GpuBackend> backend, gpu::MakeBackend(options));
  GS_ASSIGN_OR_RETURN(gpu::GpuSnapshot snapshot, ReadGpus(*backend));
  std::optional<int64_t> total_mb;
  for (const gpu::GpuInfo& gpu : snapshot.gpus) {
    if (gpu.memory_total_mb) total_mb = std::max(total_mb.value_or(0), *gpu.memory_total_mb);
  }
  return total_mb;
}

int RunEstimate(const EstimateArgs& args, CommandContext& ctx) {
  Result<alloc::TaskSpec> task = config::LoadTaskFile(args.task_path);
  if (!task) return ctx.Fail(task.error());
  alloc::EstimateOptions options;
  if (args.read_backend) {
    Result<std::optional<int64_t>> total_mb = BackendTotalMemoryMb(args.backend);
    if (!total_mb) return ctx.Fail(total_mb.error());
    options.gpu_memory_total_mb = *total_mb;
  }
  Result<alloc::Requirement> requirement = alloc::EstimateRequirement(*task, options);
  if (!requirement) return ctx.Fail(requirement.error());
  for (const std::string& warning : requirement->warnings) {
    ctx.err << "warning: " << warning << "\n";
  }
  if (args.format == OutputFormat::kJson) {
    ctx.out << json{{"world_size", requirement->world_size},
                    {"gpus", requirement->gpus},
                    {"memory_mb_per_gpu", requirement->memory_mb_per_gpu},
                    {"warnings", requirement->warnings},
                    {"explanation", requirement->explanation}}
                   .dump(2)
            << "\n";
    return kExitOk;
  }
  ctx.out << fmt::format("world size: {}\nGPUs: {}\nmemory per GPU: {} MiB\n\n{}\n",
                         requirement->world_size, requirement->gpus, requirement->memory_mb_per_gpu,
                         requirement->explanation);
  return kExitOk;
}

void AddEstimateCommand(CLI::App& app, CommandContext& ctx) {
  auto args = std::make_shared<EstimateArgs>();
  CLI::App* command = app.add_subcommand(
      "estimate",
      "Estimate GPUs and memory per GPU for a task file (YAML/JSON with model and parameters; "
      "see examples/task.yaml). With --backend/--inventory the GPUs' real total memory is used "
      "for gpu-memory-utilization.");
  command->add_option("--task", args->task_path, "Task file (YAML or JSON)")->required();
  AddBackendFlags(command, args->backend);
  AddOutputOption(command, args->format);
  command->callback([args, command, &ctx] {
    args->read_backend = command->count("--backend") + command->count("--inventory") > 0;
    RunEstimate(*args, ctx);
  });
}

}  // namespace

void AddAllocCommands(CLI::App& app, CommandContext& ctx) {
  AddAllocateCommand(app, ctx);
  AddWaitCommand(app, ctx);
  AddEstimateCommand(app, ctx);
}

}  // namespace gpuscale::cli
