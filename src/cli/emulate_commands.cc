// `gpuscale emulate`: runs the replica emulator (emulator/emulator_server.h) in the
// foreground until SIGTERM or SIGINT, then drains in-flight requests and exits 0. Prints
// "listening on HOST:PORT" on stdout once bound, so scripts and tests using --port 0 can
// read the chosen port. Also accepts the vLLM engine flags an autotuner sweeps
// (emulator/engine_flags.h) and lets them change the emulated timing.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "emulator/emulator_server.h"
#include "emulator/engine_flags.h"
#include "emulator/fleet_server.h"
#include "emulator/step_timer.h"

namespace gpuscale::cli {
namespace {

// Set by the signal handler; lock-free, so safe to write from it.
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void OnStopSignal(int signal_number) { g_stop_signal.store(signal_number); }

// Installs OnStopSignal for SIGTERM and SIGINT for the command's lifetime.
class StopSignalScope {
 public:
  StopSignalScope() {
    g_stop_signal = 0;
    struct sigaction action {};
    action.sa_handler = OnStopSignal;
    sigemptyset(&action.sa_mask);
    sigaction(SIGTERM, &action, &old_term_);
    sigaction(SIGINT, &action, &old_int_);
  }
  ~StopSignalScope() {
    sigaction(SIGTERM, &old_term_, nullptr);
    sigaction(SIGINT, &old_int_, nullptr);
  }

 private:
  struct sigaction old_term_ {};
  struct sigaction old_int_ {};
};

// The engine flags and what CLI11 did not recognise, folded into the emulator options.
struct EmulateFlags {
  emulator::EmulatorOptions options;
  emulator::EngineFlags engine;
  bool accept_unknown_flags = false;
  std::string role = "aggregated";    // --role
  std::string kv_link = "rdma-400g";  // --kv-link
  std::string timing = "calibrated";  // --timing
  bool enable_prefix_caching = false;  // --enable-prefix-caching
  int32_t block_size = 16;             // --block-size: tokens per KV block (vLLM's default)
};

// The flags whose mere presence matters (calibrated_timing.h): the linear knobs, the batch
// limit that overrides the model's, and the calibrated model's own.
constexpr const char* kPresenceFlags[] = {"--prefill-ms-per-1k-tokens",
                                          "--decode-ms-base",
                                          "--decode-ms-per-seq",
                                          "--kv-cache-tokens",
                                          "--max-batch-size",
                                          "--gpu",
                                          "--model-preset"};

// Applies the engine flags (and -tp/-pp or ignored flags among `extras`) to the options;
// prints a warning per ignored flag. Errors as ApplyExtraArgs / ApplyEngineFlags.
Result<emulator::EmulatorOptions> ResolveOptions(EmulateFlags flags,
                                                 const std::vector<std::string>& extras,
                                                 CommandContext& ctx) {
  GS_ASSIGN_OR_RETURN(std::vector<std::string> ignored,
                      emulator::ApplyExtraArgs(extras, flags.accept_unknown_flags, flags.engine));
  for (const std::string& flag : ignored) {
    ctx.err << fmt::format("warning: ignoring engine flag the emulator does not model: {}\n",
                           flag);
  }
  GS_ASSIGN_OR_RETURN(flags.engine.timing, emulator::ParseStepTiming(flags.timing));
  GS_ASSIGN_OR_RETURN(flags.options.engine,
                      emulator::ApplyEngineFlags(flags.options.engine, flags.engine));
  if (flags.block_size < 1) {
    return InvalidArgument(fmt::format("expected >= 1, got {}", flags.block_size), "--block-size");
  }
  if (flags.enable_prefix_caching) flags.options.engine.prefix_block_tokens = flags.block_size;
  if (!flags.options.kv_events_endpoint.empty() && !flags.enable_prefix_caching) {
    return InvalidArgument("KV events need --enable-prefix-caching", "--kv-events-endpoint");
  }
  GS_ASSIGN_OR_RETURN(flags.options.role, emulator::ParseReplicaRole(flags.role));
  GS_ASSIGN_OR_RETURN(flags.options.kv_link, emulator::ParseKvLink(flags.kv_link));
  flags.options.gpu_memory_bytes =
      emulator::GpuMemoryBytes(flags.options.model_name, flags.engine, flags.options.engine);
  return flags.options;
}

// The startup line saying how steps are timed and what the engine holds.
void PrintTiming(const emulator::EmulatorOptions& options, CommandContext& ctx) {
  const emulator::EngineConfig& engine = options.engine;
  if (engine.step_timer) {
    ctx.err << fmt::format(
        "emulating model '{}': {}, step {:.3g} ms (1 seq, no prefill), batch <= {}, KV cache {} "
        "tokens, chunked prefill {} tokens/step, ready in {} s\n",
        options.model_name, engine.step_timer->Describe(),
        engine.step_timer->StepSeconds({.batch_size = 1, .decoding = 1}) * 1000,
        engine.max_batch_size, engine.kv_cache_tokens, engine.max_num_batched_tokens,
        options.startup_seconds);
    return;
  }
  ctx.err << fmt::format(
      "emulating model '{}': prefill {} ms/1k tokens, decode {} ms + {} ms/seq, batch <= {}, "
      "KV cache {} tokens, tp {}, pp {}, step x{:.3g} (1 seq, no prefill), ready in {} s\n",
      options.model_name, engine.prefill_ms_per_1k_tokens, engine.decode_ms_base,
      engine.decode_ms_per_seq, engine.max_batch_size, engine.kv_cache_tokens,
      engine.tensor_parallel_size, engine.pipeline_parallel_size,
      emulator::StepMilliseconds(engine, 1, 0) / (engine.decode_ms_base + engine.decode_ms_per_seq),
      options.startup_seconds);
}

int RunEmulate(const emulator::EmulatorOptions& options, CommandContext& ctx) {
  // Before binding: a SIGTERM sent as soon as the port is printed must not kill us.
  StopSignalScope signals;
  Result<std::unique_ptr<emulator::EmulatorServer>> server =
      emulator::EmulatorServer::Start(options);
  if (!server) return ctx.Fail(server.error());
  ctx.out << fmt::format("listening on {}:{}\n", options.host, (*server)->port()) << std::flush;
  PrintTiming(options, ctx);
  if (options.role != emulator::ReplicaRole::kAggregated) {
    ctx.err << fmt::format(
        "role {}: KV link {} ({:g} Gb/s), {:.3g} ms per 1k prompt tokens moved\n",
        emulator::ReplicaRoleName(options.role), options.kv_link.name, options.kv_link.gbps,
        emulator::KvTransferSeconds(1000, options.kv_link) * 1000);
  }
  while (g_stop_signal.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ctx.err << fmt::format("received {}: draining in-flight requests (up to {} s)\n",
                         g_stop_signal.load() == SIGTERM ? "SIGTERM" : "SIGINT",
                         options.drain_seconds)
          << std::flush;
  (*server)->Shutdown();
  const emulator::EngineStats stats = (*server)->Stats();
  ctx.err << fmt::format("served {} requests ({} cancelled), {} output tokens\n",
                         stats.requests_finished_total, stats.requests_cancelled_total,
                         stats.generation_tokens_total);
  return kExitOk;
}

int RunFleet(const emulator::FleetOptions& options, CommandContext& ctx) {
  StopSignalScope signals;
  RaiseOpenFilesLimit();  // a listening port per replica, and a descriptor per connection
  Result<std::unique_ptr<emulator::FleetServer>> fleet = emulator::FleetServer::Start(options);
  if (!fleet) return ctx.Fail(fleet.error());
  ctx.out << fmt::format("listening on {}:{}\n", options.host, (*fleet)->port()) << std::flush;
  while (g_stop_signal.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ctx.err << fmt::format("stopping: {} replicas\n", (*fleet)->replica_count());
  (*fleet)->Stop();
  return kExitOk;
}

}  // namespace

void AddFleetCommand(CLI::App& app, CommandContext& ctx) {
  auto options = std::make_shared<emulator::FleetOptions>();
  CLI::App* cmd = app.add_subcommand(
      "fleet",
      "Emulate many replicas in one process for control-plane tests at fleet scale: each "
      "replica gets a port answering /health and vLLM's /metrics; a service with "
      "`engine: fleet` and `fleet: {url: http://HOST:PORT}` starts and stops them through "
      "this process's control API (POST/GET /replicas, DELETE /replicas/ID, PUT "
      "/replicas/ID/load {running, waiting, metrics_delay_ms}). Runs until SIGTERM/SIGINT.");
  cmd->add_option("--port", options->port, "Control API port; 0 picks a free one (printed)")
      ->capture_default_str();
  cmd->add_option("--host", options->host, "Listen address of the control API and replicas")
      ->capture_default_str();
  cmd->add_option("--threads", options->threads, "I/O threads for every port")
      ->capture_default_str();
  cmd->add_option("--model", options->model_name, "model_name label of the replicas' metrics")
      ->capture_default_str();
  cmd->callback([options, &ctx] { RunFleet(*options, ctx); });
}

// The vLLM engine flags (engine_flags.h says what each changes).
void AddEngineFlagOptions(CLI::App* cmd, EmulateFlags& flags) {
  emulator::EngineFlags& engine = flags.engine;
  cmd->add_option("--tensor-parallel-size", engine.tensor_parallel_size,
                  "GPUs a step is split over (also -tp): step x (1/tp + 0.1 (tp-1)/tp), KV x tp")
      ->capture_default_str();
  cmd->add_option("--pipeline-parallel-size", engine.pipeline_parallel_size,
                  "Pipeline stages (also -pp): step x (1/pp + 0.25 (pp-1)/pp), KV x pp")
      ->capture_default_str();
  cmd->add_option("--max-model-len", engine.max_model_len,
                  "Most prompt + output tokens per request; 0 = the model's context (131072)")
      ->capture_default_str();
  cmd->add_option("--gpu-memory-utilization", engine.gpu_memory_utilization,
                  "KV cache scales with it (--kv-cache-tokens is the size at 0.9)")
      ->capture_default_str();
  cmd->add_flag("--enable-chunked-prefill", engine.enable_chunked_prefill,
                "Split prompts over steps within the token budget (default budget 2048)");
  cmd->add_option("--max-num-batched-tokens", engine.max_num_batched_tokens,
                  "Token budget of one step (decodes + prefill); 0 = no limit")
      ->capture_default_str();
  cmd->add_option("--dtype", engine.dtype, "auto|half|float16|bfloat16|float|float32")
      ->capture_default_str();
  cmd->add_option("--quantization,-q", engine.quantization,
                  "fp8 (decode 0.7x) | awq, gptq, awq_marlin, gptq_marlin (decode 0.6x) | none");
  cmd->add_option("--timing", flags.timing,
                  "calibrated: the simulator's model of --model-preset on --gpu at -tp (step "
                  "time, KV cache, batch <= 256, chunked prefill of 8192 tokens/step; the "
                  "linear knobs are then errors) | linear: the step-time knobs "
                  "(--decode-ms-base ...; fast, for tests)")
      ->capture_default_str();
  cmd->add_option("--gpu", engine.gpu, "h100 | a100 (calibrated timing; a100: llama-2-70b only)")
      ->capture_default_str();
  cmd->add_option("--model-preset", engine.model_preset,
                  "llama-3-8b | llama-2-7b | llama-2-70b: the model calibrated timing times "
                  "(--model only names the served model)")
      ->capture_default_str();
  cmd->add_flag("--accept-unknown-flags", flags.accept_unknown_flags,
                "Ignore (with a warning) engine flags the emulator does not model, instead of "
                "failing like vLLM's argument parser");
}

void AddEmulateCommands(CLI::App& app, CommandContext& ctx) {
  auto flags = std::make_shared<EmulateFlags>();
  emulator::EmulatorOptions* options = &flags->options;
  options->port = 8000;
  CLI::App* cmd = app.add_subcommand(
      "emulate",
      "Serve an OpenAI-compatible API that emulates an LLM engine's timing (no GPU needed): "
      "/v1/completions, /v1/chat/completions (stream: true = SSE), /v1/embeddings, "
      "/v1/models[/{id}], /health, /ping, /version, /tokenize, and "
      "vLLM's /metrics. Runs until SIGTERM/SIGINT, then drains and exits 0.");
  cmd->allow_extras();  // -tp/-pp and unknown engine flags: ResolveOptions decides
  cmd->add_option("--port", options->port, "TCP port; 0 picks a free one (printed on stdout)")
      ->capture_default_str();
  cmd->add_option("--host", options->host, "Listen address (0.0.0.0 for remote clients)")
      ->capture_default_str();
  cmd->add_option("--model,--served-model-name", options->model_name,
                  "Model name served and required in requests")
      ->capture_default_str();
  cmd->add_option("--prefill-ms-per-1k-tokens", options->engine.prefill_ms_per_1k_tokens,
                  "Prefill time per 1000 prompt tokens admitted in a step")
      ->capture_default_str();
  cmd->add_option("--decode-ms-base", options->engine.decode_ms_base,
                  "Fixed time of one engine step (one token for every running request)")
      ->capture_default_str();
  cmd->add_option("--decode-ms-per-seq", options->engine.decode_ms_per_seq,
                  "Extra step time per sequence in the batch")
      ->capture_default_str();
  cmd->add_option("--max-batch-size,--max-num-seqs", options->engine.max_batch_size,
                  "Most requests running at once (vLLM max_num_seqs); others wait")
      ->capture_default_str();
  cmd->add_option(
         "--kv-cache-tokens", options->engine.kv_cache_tokens,
         "KV-cache capacity at --gpu-memory-utilization 0.9 and tp = pp = 1 (linear timing); a "
         "request reserves prompt + its output, others wait")
      ->capture_default_str();
  cmd->add_option("--output-tokens", options->output_tokens,
                  "The emulated model's answer length: outputs end there (finish_reason "
                  "\"stop\") below the request's max_tokens unless it sets ignore_eos; without "
                  "max_tokens the limit is the context left. 0: always run to the limit")
      ->capture_default_str();
  cmd->add_option("--startup-seconds", options->startup_seconds,
                  "Emulated model load: /health answers 503 until it has passed")
      ->capture_default_str();
  cmd->add_option("--http-threads", options->http_threads,
                  "I/O threads (asynchronous: each serves any number of connections)")
      ->capture_default_str();
  cmd->add_option("--max-connections", options->max_connections,
                  "Most open client connections; past it new ones are closed")
      ->capture_default_str();
  cmd->add_option("--drain-seconds", options->drain_seconds,
                  "On SIGTERM: how long in-flight requests may still run")
      ->capture_default_str();
  cmd->add_option("--role", flags->role,
                  "aggregated | prefill | decode: a replica of a disaggregated service (vLLM's "
                  "kv_transfer_params: prefill answers do_remote_decode with a KV handle; "
                  "decode requires one and decodes after the emulated KV transfer)")
      ->capture_default_str();
  cmd->add_option("--kv-link", flags->kv_link,
                  "Link a decode replica's KV transfer crosses: nvlink (H100, 3600 Gb/s), "
                  "rdma-100g, rdma-400g, or Gb/s; transfer = prompt tokens x 128 KiB / link")
      ->capture_default_str();
  cmd->add_flag("--enable-prefix-caching", flags->enable_prefix_caching,
                "vLLM's automatic prefix caching: prompts' cached leading blocks skip prefill "
                "(a token is a whitespace word; docs/gateway.md, KV events)");
  cmd->add_option("--block-size", flags->block_size, "Tokens per KV block (prefix caching)")
      ->capture_default_str();
  cmd->add_option("--kv-events-endpoint", options->kv_events_endpoint,
                  "Publish the prefix cache's KV events as vLLM does (ZeroMQ PUB, msgpack), "
                  "bound here, e.g. tcp://127.0.0.1:5557")
      ->capture_default_str();
  cmd->add_option("--kv-events-topic", options->kv_events_topic,
                  "The KV-event messages' topic frame")
      ->capture_default_str();
  AddEngineFlagOptions(cmd, *flags);
  cmd->callback([flags, cmd, &ctx] {
    for (const char* flag : kPresenceFlags) {
      if (cmd->count(flag) > 0) flags->engine.given.push_back(flag);
    }
    Result<emulator::EmulatorOptions> resolved = ResolveOptions(*flags, cmd->remaining(), ctx);
    if (!resolved) {
      ctx.Fail(resolved.error());
      return;
    }
    RunEmulate(*resolved, ctx);
  });
}

}  // namespace gpuscale::cli
