// What the gateway pays to read an OpenAI request body (the model, `stream`, the prompt
// prefix that prefix affinity hashes: gateway/request_scanner.h), next to nlohmann's DOM
// parse of the same body alone (how the gateway read it before the scanner, and the floor
// of any parse-into-a-tree approach). Bodies: a short completion
// (the gateway benchmark's) and chat requests with 4 KiB and 64 KiB of messages.
// Run: build/bench/gateway_parse_bench
#include <benchmark/benchmark.h>
#include <nlohmann/json.hpp>

#include <string>

#include "gateway/openai_request.h"

namespace {

std::string ChatBody(size_t prompt_bytes) {
  std::string words;
  while (words.size() < prompt_bytes) words += "the quick brown fox jumps over the dog. ";
  words.resize(prompt_bytes);
  const nlohmann::json body = {
      {"model", "meta-llama/Llama-3.1-8B-Instruct"},
      {"messages",
       {{{"role", "system"}, {"content", "You are a helpful assistant."}},
        {{"role", "user"}, {"content", words}}}},
      {"max_tokens", 128},
      {"temperature", 0.7},
      {"stream", true}};
  return body.dump();
}

const std::string& Body(int64_t kind) {
  static const std::string kShort = R"({"model":"m","prompt":"hi","max_tokens":1})";
  static const std::string k4k = ChatBody(4 << 10);
  static const std::string k64k = ChatBody(64 << 10);
  return kind == 0 ? kShort : kind == 1 ? k4k : k64k;
}

void BM_ParseInferenceRequest(benchmark::State& state) {
  const std::string& body = Body(state.range(0));
  for (auto _ : state) {
    auto parsed = gpuscale::gateway::ParseInferenceRequest(body, 256);
    benchmark::DoNotOptimize(parsed);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_ParseInferenceRequest)->Arg(0)->Arg(1)->Arg(2);

void BM_NlohmannDomParse(benchmark::State& state) {
  const std::string& body = Body(state.range(0));
  for (auto _ : state) {
    auto j = nlohmann::json::parse(body, nullptr, false);
    benchmark::DoNotOptimize(j);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * body.size()));
}
BENCHMARK(BM_NlohmannDomParse)->Arg(0)->Arg(1)->Arg(2);

}  // namespace

BENCHMARK_MAIN();
