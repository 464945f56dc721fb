// `gpuscale emulate`: runs the replica emulator (emulator/emulator_server.h) in the
// foreground until SIGTERM or SIGINT, then drains in-flight requests and exits 0. Prints
// "listening on HOST:PORT" on stdout once bound, so scripts and tests using --port 0 can
// read the chosen port.
#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <memory>
#include <thread>

#include "cli/command.h"
#include "emulator/emulator_server.h"

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

int RunEmulate(const emulator::EmulatorOptions& options, CommandContext& ctx) {
  // Before binding: a SIGTERM sent as soon as the port is printed must not kill us.
  StopSignalScope signals;
  Result<std::unique_ptr<emulator::EmulatorServer>> server =
      emulator::EmulatorServer::Start(options);
  if (!server) return ctx.Fail(server.error());
  ctx.out << fmt::format("listening on {}:{}\n", options.host, (*server)->port()) << std::flush;
  ctx.err << fmt::format(
      "emulating model '{}': prefill {} ms/1k tokens, decode {} ms + {} ms/seq, batch <= {}, "
      "KV cache {} tokens, ready in {} s\n",
      options.model_name, options.engine.prefill_ms_per_1k_tokens, options.engine.decode_ms_base,
      options.engine.decode_ms_per_seq, options.engine.max_batch_size,
      options.engine.kv_cache_tokens, options.startup_seconds);
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

}  // namespace

void AddEmulateCommands(CLI::App& app, CommandContext& ctx) {
  auto options = std::make_shared<emulator::EmulatorOptions>();
  options->port = 8000;
  CLI::App* cmd = app.add_subcommand(
      "emulate",
      "Serve an OpenAI-compatible API that emulates an LLM engine's timing (no GPU needed): "
      "/v1/completions, /v1/chat/completions (stream: true = SSE), /v1/models, /health, and "
      "vLLM's /metrics. Runs until SIGTERM/SIGINT, then drains and exits 0.");
  cmd->add_option("--port", options->port, "TCP port; 0 picks a free one (printed on stdout)")
      ->capture_default_str();
  cmd->add_option("--host", options->host, "Listen address (0.0.0.0 for remote clients)")
      ->capture_default_str();
  cmd->add_option("--model", options->model_name, "Model name served and required in requests")
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
  cmd->add_option("--max-batch-size", options->engine.max_batch_size,
                  "Most requests running at once (vLLM max_num_seqs); others wait")
      ->capture_default_str();
  cmd->add_option("--kv-cache-tokens", options->engine.kv_cache_tokens,
                  "KV-cache capacity; a request reserves prompt + max_tokens, others wait")
      ->capture_default_str();
  cmd->add_option("--startup-seconds", options->startup_seconds,
                  "Emulated model load: /health answers 503 until it has passed")
      ->capture_default_str();
  cmd->add_option("--http-threads", options->http_threads,
                  "HTTP worker threads = most concurrent client connections")
      ->capture_default_str();
  cmd->add_option("--drain-seconds", options->drain_seconds,
                  "On SIGTERM: how long in-flight requests may still run")
      ->capture_default_str();
  cmd->callback([options, &ctx] { RunEmulate(*options, ctx); });
}

}  // namespace gpuscale::cli
