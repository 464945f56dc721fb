// CompletionClient: sends one streaming completion (POST {base}/v1/completions with
// stream: true) at a time to an OpenAI-compatible server and times it from the server-sent
// events: time to first token, the gap before every later content event, end-to-end
// latency, and the output token count (the server's usage when it reports one, else the
// number of content events). One client keeps one keep-alive connection, like one user.
//
// Ownership and thread-safety: Send() from one thread at a time; Cancel() from any thread.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "loadgen/workload.h"

namespace gpuscale::loadgen {

// A server's base URL split for the HTTP client: "http://host:port" plus a path prefix
// ("" or e.g. "/serve/llama"); a trailing "/v1" or "/" is dropped so that both
// http://h:8000 and http://h:8000/v1 work.
struct ServerUrl {
  std::string scheme_host_port;
  std::string base_path;
};

// Errors: InvalidArgument (field "--url") unless the URL is http:// or https:// with a host.
Result<ServerUrl> ParseServerUrl(std::string_view url);

// The id of the first model GET {base}/v1/models lists (what the bench sends when no
// --model is given). Errors: Unavailable (field "--url") when the server cannot be reached,
// answers non-200 (the message names the status, e.g. 503 while a model loads) or lists no
// model.
Result<std::string> FetchFirstModel(const ServerUrl& url, double timeout_seconds);

struct ClientOptions {
  double connect_timeout_seconds = 5;
  double read_timeout_seconds = 60;  // longest silence allowed inside one response
  bool ignore_eos = false;           // send vLLM's ignore_eos so outputs reach max_tokens
};

struct RequestOutcome {
  bool ok = false;
  // Empty when ok, else one of: connection_error, connect_timeout, read_error (includes
  // read timeouts), write_error, cancelled, client_error, http_<status> (e.g. http_503),
  // incomplete_stream (ended without [DONE]), invalid_event (not JSON), server_error_event.
  std::string error_kind;
  std::string error_detail;  // first 200 bytes of the error body or event, for logs
  double ttft_seconds = 0;   // send -> first content event
  double e2e_seconds = 0;    // send -> [DONE]
  int32_t input_tokens = 0;
  int32_t output_tokens = 0;
  std::vector<double> inter_token_seconds;  // gaps between successive content events
};

// The prompt sent for `tokens` input tokens: that many common English words, which
// real tokenizers map to about one token each and the emulator counts exactly.
std::string PromptText(int32_t tokens);

class CompletionClient {
 public:
  CompletionClient(const ServerUrl& url, std::string model, const ClientOptions& options);
  ~CompletionClient();
  CompletionClient(const CompletionClient&) = delete;
  CompletionClient& operator=(const CompletionClient&) = delete;

  // Sends `request` and waits for its stream to end. Never fails: errors are outcomes.
  RequestOutcome Send(const PlannedRequest& request);

  // Aborts the request in flight (its outcome is "cancelled") and every later Send().
  void Cancel();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuscale::loadgen
