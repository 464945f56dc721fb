// EmulatorServer: an OpenAI-compatible HTTP server in front of a BatchEngine that runs in
// real time, so that gpuscale's collector, autoscaler and `gpuscale bench` can be exercised
// without GPUs. What `gpuscale emulate` runs; tests start it in-process on port 0.
//
// Endpoints:
//   POST /v1/completions, /v1/chat/completions  (stream: true -> server-sent events, one
//        token per event (with usage so far under stream_options.continuous_usage_stats),
//        then "data: [DONE]"); one choice per prompt (a list of prompts) times `n`, each an
//        engine sequence of its own; an output runs to max_tokens (absent: the context left)
//        or ends earlier at the emulated answer length (output_tokens, finish_reason "stop")
//        unless the request sets ignore_eos. 400 with an OpenAI error body for a bad body or
//        one past the context, 404 for another model name, 503 while loading or draining.
//        With --role prefill, a request with kv_transfer_params.do_remote_decode (vLLM's
//        disaggregated prefill) is answered with a KV handle in kv_transfer_params; with
//        --role decode, a request must carry such a handle (else 400 naming
//        kv_transfer_params), waits the emulated KV transfer, then decodes with no prefill
//        (disagg_role.h). Transfers in flight count as open requests: a drain waits for them.
//   GET  /v1/models   the one model and its max_model_len, the longest prompt + max_tokens
//                     a request may ask for: --max-model-len when given, else the
//                     emulated model's context (kDefaultMaxModelLen); 503 while loading
//   GET  /v1/models/{id}  that model's entry; 404 (NotFoundError) for another id
//   GET  /health      503 until the emulated model load (startup_seconds) is over, and again
//                     while draining; then 200. GET or POST /ping: the same (SageMaker's)
//   GET  /version     {"version": "0.12.0"}: the vLLM release whose API and metrics it follows
//   POST /tokenize    vLLM's: {"count", "max_model_len", "tokens", "token_strs"} for a
//                     `prompt` or `messages` body, counted as completions count prompt tokens
//   GET  /metrics     vLLM's metric names (vllm_metrics.h)
//
// Threads: net::HttpServer's I/O threads (http_threads, default 1), on which every connection
// is a coroutine, so thousands of streams and the probes' /health and /metrics share them
// without waiting for each other; plus one scheduler thread that sleeps until the engine's
// next step ends, advances the engine and wakes the handlers waiting on it (a wake-up posted
// to each handler's I/O thread). One mutex guards the engine; it is held only for bookkeeping.
//
// Ownership and thread-safety: Start() returns the owner; Shutdown() and the destructor may
// be called from any one thread; port() is safe from any thread.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/clock.h"
#include "core/result.h"
#include "emulator/batch_engine.h"
#include "emulator/disagg_role.h"

namespace gpuscale::emulator {

// The emulated model's context window, what max_model_len is when --max-model-len is not
// given (as vLLM defaults it to the model's max_position_embeddings): Llama 3.1 8B's, the
// model the default options resemble. It does not grow with the KV cache (tp, pp, memory
// utilization), which only decides how many requests fit at once.
inline constexpr int32_t kDefaultMaxModelLen = 131072;

// The max_model_len a server with `engine` enforces and lists: engine.max_model_len when > 0
// (--max-model-len), else kDefaultMaxModelLen.
int32_t ServedMaxModelLen(const EngineConfig& engine);

// The default answer length: about a chat reply's (ShareGPT's mean output is ~200 tokens).
inline constexpr int32_t kDefaultOutputTokens = 256;

struct EmulatorOptions {
  std::string host = "127.0.0.1";  // listen address; 0.0.0.0 to accept remote clients
  int port = 0;                    // 0 = any free port (read it back with port())
  std::string model_name = "gpuscale/emulated-llama-3.1-8b";
  EngineConfig engine;
  double startup_seconds = 2.0;  // emulated model load: /health is 503 until it has passed
  int http_threads = 1;          // I/O threads; each serves any number of connections
  int max_connections = 10000;   // open client connections; past it new ones are closed
  double drain_seconds = 30.0;   // Shutdown(): how long in-flight requests may still run
  // The emulated model's answer length: an output ends there with finish_reason "stop" when
  // the request's limit (max_tokens, else the context left after the prompt) is higher and
  // it does not set ignore_eos. 0: answers never end before the limit.
  int32_t output_tokens = kDefaultOutputTokens;
  // Bytes each of the replica's GPUs holds (GpuMemoryBytes); > 0 adds the emulated-GPU
  // gauges to /metrics (vllm_metrics.h), so a simulated GPU leased to it shows load.
  int64_t gpu_memory_bytes = 0;
  // Prefill/decode disaggregation (disagg_role.h): --role; kAggregated prefills and decodes.
  ReplicaRole role = ReplicaRole::kAggregated;
  KvLink kv_link = {};  // --kv-link: what a decode replica's emulated KV transfer crosses
  // --kv-events-endpoint: where to publish the prefix cache's KV events as vLLM does
  // (kv_event_publisher.h; "tcp://127.0.0.1:*" picks a port); empty: not published.
  std::string kv_events_endpoint;
  std::string kv_events_topic;  // --kv-events-topic: the first frame (vLLM's default: empty)
};

// Errors: InvalidArgument naming the flag (e.g. "--startup-seconds") for a bad option.
Status ValidateEmulatorOptions(const EmulatorOptions& options);

class EmulatorServer {
 public:
  // Validates the options, binds host:port and starts serving. Errors: InvalidArgument for
  // bad options; Unavailable (field "--port") when the address cannot be bound.
  static Result<std::unique_ptr<EmulatorServer>> Start(const EmulatorOptions& options);

  ~EmulatorServer();  // Shutdown()
  EmulatorServer(const EmulatorServer&) = delete;
  EmulatorServer& operator=(const EmulatorServer&) = delete;

  // The bound port (the chosen one when options.port was 0).
  int port() const;
  // Open client connections right now.
  int connections() const;
  // The bound KV-event endpoint (with the chosen port); empty when not publishing.
  std::string KvEventsEndpoint() const;
  // Requests admitted and not yet answered, a decode replica's KV transfers included.
  int OpenRequests() const;

  // Answers new requests with 503 (and /health with 503 "draining"), lets in-flight
  // requests finish for up to options.drain_seconds (then ends their streams early, without
  // [DONE]), closes every connection and joins every thread. Idempotent.
  void Shutdown();

  // Engine stats right now (for tests and the CLI's exit summary).
  EngineStats Stats() const;

  struct Impl;  // in emulator_server.cc; public only so that the .cc's helpers can name it

 private:
  explicit EmulatorServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuscale::emulator
