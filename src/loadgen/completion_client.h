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

#include "core/result.h"
#include "workload/bench_options.h"
#include "workload/bench_report.h"
#include "workload/server_url.h"
#include "workload/workload.h"

namespace gpuscale::loadgen {

// The id of the first model GET {base}/v1/models lists (what the bench sends when no
// --model is given). Errors: Unavailable (field "--url") when the server cannot be reached,
// answers non-200 (the message names the status, e.g. 503 while a model loads) or lists no
// model.
Result<std::string> FetchFirstModel(const ServerUrl& url, double timeout_seconds);

// The prompt sent for `tokens` input tokens: that many common English words, which
// real tokenizers map to about one token each and the emulator counts exactly.
std::string PromptText(int32_t tokens);

class CompletionClient {
 public:
  CompletionClient(const ServerUrl& url, std::string model, const ClientOptions& options);
  ~CompletionClient();
  CompletionClient(const CompletionClient&) = delete;
  CompletionClient& operator=(const CompletionClient&) = delete;

  // Sends `request` (its prompt, else PromptText(input_tokens)) and waits for its stream to
  // end. Never fails: errors are outcomes.
  RequestOutcome Send(const PlannedRequest& request);

  // Aborts the request in flight (its outcome is "cancelled") and every later Send().
  void Cancel();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpuscale::loadgen
