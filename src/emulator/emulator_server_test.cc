// The emulator over real HTTP on 127.0.0.1, port 0: health during load, the OpenAI routes,
// SSE streams, vLLM /metrics, and a shutdown that drains in-flight streams.
#include "emulator/emulator_server.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "emulator/engine_flags.h"
#include "emulator/openai_protocol.h"
#include "metrics/metric_lookup.h"
#include "metrics/prometheus_text_parser.h"
#include "testing/fast_emulator_options.h"
#include "testing/open_files.h"
#include "testing/raw_socket.h"
#include "testing/wait_until.h"

namespace gpuscale::emulator {
namespace {

using gpuscale::testing::WaitUntil;
using nlohmann::json;

// Fast steps so a 16-token request takes about 20 ms.
EmulatorOptions FastOptions() {
  EmulatorOptions options = gpuscale::testing::FastEmulatorOptions();
  options.engine.max_batch_size = 8;
  options.engine.kv_cache_tokens = 4096;
  options.http_threads = 8;
  options.drain_seconds = 10;
  return options;
}

// The `data:` payloads of an SSE body, in order.
std::vector<std::string> SseData(const std::string& body) {
  std::vector<std::string> data;
  size_t pos = 0;
  while ((pos = body.find("data: ", pos)) != std::string::npos) {
    const size_t end = body.find("\n\n", pos);
    data.push_back(body.substr(pos + 6, end - pos - 6));
    pos = end;
  }
  return data;
}

class EmulatorServerTest : public ::testing::Test {
 protected:
  void StartServer(const EmulatorOptions& options) {
    Result<std::unique_ptr<EmulatorServer>> server = EmulatorServer::Start(options);
    ASSERT_TRUE(server.has_value()) << server.error().ToString();
    server_ = std::move(*server);
    ASSERT_GT(server_->port(), 0);
    client_ = std::make_unique<httplib::Client>("127.0.0.1", server_->port());
    client_->set_read_timeout(10, 0);
  }
  void TearDown() override {
    client_.reset();
    if (server_) server_->Shutdown();
  }

  httplib::Result Post(const std::string& path, const json& body) {
    return client_->Post(path.c_str(), body.dump(), "application/json");
  }

  std::unique_ptr<EmulatorServer> server_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(EmulatorServerTest, HealthIsUnavailableUntilTheModelIsLoaded) {
  EmulatorOptions options = FastOptions();
  options.startup_seconds = 1.0;
  StartServer(options);
  httplib::Result loading = client_->Get("/health");
  ASSERT_TRUE(loading);
  EXPECT_EQ(loading->status, 503);
  httplib::Result models = client_->Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(models->status, 503);
  EXPECT_EQ(Post("/v1/completions", {{"prompt", "hi"}})->status, 503);

  int status = 0;
  WaitUntil(
      [&] {
        status = client_->Get("/health")->status;
        return status == 200;
      },
      std::chrono::seconds(10), std::chrono::milliseconds(50));
  EXPECT_EQ(status, 200);
}

TEST_F(EmulatorServerTest, ListsTheModel) {
  StartServer(FastOptions());
  httplib::Result res = client_->Get("/v1/models");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  json body = json::parse(res->body);
  EXPECT_EQ(body["object"], "list");
  ASSERT_EQ(body["data"].size(), 1u);
  EXPECT_EQ(body["data"][0]["id"], "test-model");
  // The model's context, not the 4096-token KV cache.
  EXPECT_EQ(body["data"][0]["max_model_len"], kDefaultMaxModelLen);
}

struct MaxModelLenCase {
  const char* name;
  EngineFlags flags;
  int64_t want_max_model_len;
  int64_t want_kv_cache_tokens;  // FastOptions' 4096 after the flags
};

class ListedMaxModelLenTest : public EmulatorServerTest,
                              public ::testing::WithParamInterface<MaxModelLenCase> {};

// The listed max_model_len follows --max-model-len (else the model's context) and never the
// KV cache, which the parallel sizes and memory utilization scale.
TEST_P(ListedMaxModelLenTest, IsTheFlagOrTheModelsContextNeverTheKvCache) {
  EmulatorOptions options = FastOptions();
  Result<EngineConfig> engine = ApplyEngineFlags(options.engine, GetParam().flags);
  ASSERT_TRUE(engine) << engine.error().ToString();
  ASSERT_EQ(engine->kv_cache_tokens, GetParam().want_kv_cache_tokens);
  options.engine = *engine;
  StartServer(options);
  httplib::Result res = client_->Get("/v1/models");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_EQ(json::parse(res->body)["data"][0]["max_model_len"], GetParam().want_max_model_len);
}

EngineFlags Flags(int32_t max_model_len, int32_t tp, double memory_utilization = 0.9) {
  EngineFlags flags;
  flags.timing = StepTiming::kLinear;
  flags.max_model_len = max_model_len;
  flags.tensor_parallel_size = tp;
  flags.gpu_memory_utilization = memory_utilization;
  return flags;
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ListedMaxModelLenTest,
    ::testing::Values(MaxModelLenCase{"NoFlag", Flags(0, 1), kDefaultMaxModelLen, 4096},
                    MaxModelLenCase{"NoFlagTp4", Flags(0, 4), kDefaultMaxModelLen, 16384},
                    MaxModelLenCase{"FlagBelowKv", Flags(2048, 1), 2048, 4096},
                    MaxModelLenCase{"FlagWithTp2", Flags(3000, 2), 3000, 8192},
                    MaxModelLenCase{"FlagAboveKv", Flags(32768, 1, 0.45), 32768, 2048}),
    [](const auto& info) { return std::string(info.param.name); });

// Without --max-model-len the model's context is enforced too, even when the KV cache could
// hold a longer request, so what GET /v1/models lists is what the server accepts.
TEST_F(EmulatorServerTest, RejectsRequestsLongerThanTheModelsContext) {
  EmulatorOptions options = FastOptions();
  options.engine.kv_cache_tokens = 2 * int64_t{kDefaultMaxModelLen};
  StartServer(options);
  httplib::Result res =
      Post("/v1/completions", {{"prompt_tokens", kDefaultMaxModelLen - 10}, {"max_tokens", 11}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_NE(json::parse(res->body)["error"]["message"].get<std::string>().find(
                fmt::format("maximum context length is {} tokens", kDefaultMaxModelLen)),
            std::string::npos)
      << res->body;
}

TEST_F(EmulatorServerTest, AnswersAWholeCompletion) {
  StartServer(FastOptions());
  httplib::Result res =
      Post("/v1/completions", {{"model", "test-model"}, {"prompt", "a b c d"}, {"max_tokens", 5}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json body = json::parse(res->body);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(body["usage"]["completion_tokens"], 5);
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(CountWords(body["choices"][0]["text"].get<std::string>()), 5);
}

TEST_F(EmulatorServerTest, StreamsOneEventPerTokenThenDone) {
  StartServer(FastOptions());
  httplib::Result res = Post("/v1/completions", {{"prompt", "hello world"},
                                                 {"max_tokens", 6},
                                                 {"stream", true},
                                                 {"stream_options", {{"include_usage", true}}}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  EXPECT_EQ(res->get_header_value("Content-Type"), "text/event-stream");
  std::vector<std::string> events = SseData(res->body);
  ASSERT_EQ(events.size(), 8u) << res->body;  // 6 tokens, usage, [DONE]
  for (int i = 0; i < 6; ++i) {
    json chunk = json::parse(events[i]);
    EXPECT_EQ(chunk["choices"][0]["text"], std::string(TokenText(i)));
    EXPECT_EQ(chunk["choices"][0]["finish_reason"].is_null(), i < 5) << i;
  }
  EXPECT_EQ(json::parse(events[6])["usage"]["completion_tokens"], 6);
  EXPECT_EQ(events[7], "[DONE]");
}

TEST_F(EmulatorServerTest, StreamsChatCompletions) {
  StartServer(FastOptions());
  httplib::Result res =
      Post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi there"}}}},
                                    {"max_tokens", 3},
                                    {"stream", true}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  std::vector<std::string> events = SseData(res->body);
  ASSERT_EQ(events.size(), 5u) << "the role, 3 tokens, [DONE]";
  EXPECT_EQ(json::parse(events[0])["object"], "chat.completion.chunk");
  // As vLLM: the role in its own first chunk, with empty content.
  EXPECT_EQ(json::parse(events[0])["choices"][0]["delta"],
            json({{"role", "assistant"}, {"content", ""}}));
  EXPECT_FALSE(json::parse(events[1])["choices"][0]["delta"].contains("role"));
  EXPECT_EQ(events[4], "[DONE]");
}

// A list of prompts is one choice each, n choices per prompt, each an engine sequence of its
// own; usage counts every prompt once and every choice's output.
TEST_F(EmulatorServerTest, AnswersEveryPromptAndEveryChoice) {
  StartServer(FastOptions());
  httplib::Result res =
      Post("/v1/completions", {{"prompt", {"a b", "c d e"}}, {"n", 2}, {"max_tokens", 3}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json body = json::parse(res->body);
  ASSERT_EQ(body["choices"].size(), 4u) << res->body;
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(body["choices"][c]["index"], c);
    EXPECT_EQ(CountWords(body["choices"][c]["text"].get<std::string>()), 3);
    EXPECT_EQ(body["choices"][c]["finish_reason"], "length");
  }
  EXPECT_EQ(body["usage"]["prompt_tokens"], 5);
  EXPECT_EQ(body["usage"]["completion_tokens"], 12);
  EXPECT_EQ(server_->Stats().generation_tokens_total, 12);
  EXPECT_EQ(server_->Stats().requests_finished_total, 4);
}

TEST_F(EmulatorServerTest, StreamsEveryChoiceWithItsIndexAndRole) {
  StartServer(FastOptions());
  httplib::Result res =
      Post("/v1/chat/completions", {{"messages", {{{"role", "user"}, {"content", "hi"}}}},
                                    {"n", 2},
                                    {"max_tokens", 4},
                                    {"stream", true},
                                    {"stream_options", {{"include_usage", true}}}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  std::vector<std::string> events = SseData(res->body);
  ASSERT_EQ(events.size(), 12u) << "2 x (role + 4 tokens), usage, [DONE]: " << res->body;
  std::vector<int> roles(2, 0), tokens(2, 0), finished(2, 0);
  for (size_t i = 0; i + 2 < events.size(); ++i) {
    json choice = json::parse(events[i])["choices"][0];
    const int index = choice["index"].get<int>();
    ASSERT_TRUE(index == 0 || index == 1) << events[i];
    if (choice["delta"].contains("role")) {
      EXPECT_EQ(tokens[index], 0) << "the role comes before the choice's first token";
      ++roles[index];
      continue;
    }
    ++tokens[index];
    if (!choice["finish_reason"].is_null()) {
      EXPECT_EQ(choice["finish_reason"], "length");
      EXPECT_EQ(tokens[index], 4);
      ++finished[index];
    }
  }
  EXPECT_EQ(roles, std::vector<int>({1, 1}));
  EXPECT_EQ(tokens, std::vector<int>({4, 4}));
  EXPECT_EQ(finished, std::vector<int>({1, 1}));
  EXPECT_EQ(json::parse(events[10])["usage"]["completion_tokens"], 8);
  EXPECT_EQ(events[11], "[DONE]");
}

struct OutputLengthCase {
  const char* name;
  json body;
  int32_t answer_tokens;  // EmulatorOptions::output_tokens
  int completion_tokens;
  const char* finish_reason;
};

void PrintTo(const OutputLengthCase& c, std::ostream* os) { *os << c.name; }

class OutputLengthTest : public EmulatorServerTest,
                         public ::testing::WithParamInterface<OutputLengthCase> {};

// An output runs to the limit or ends at the emulated answer ("stop"), as a real model's
// does at its end of sequence; ignore_eos runs to the limit; without max_tokens the limit is
// the context left after the prompt (vLLM's), not OpenAI's 16.
TEST_P(OutputLengthTest, EndsAtTheAnswerOrTheLimit) {
  const OutputLengthCase& c = GetParam();
  EmulatorOptions options = FastOptions();
  options.output_tokens = c.answer_tokens;
  options.engine.max_model_len = 40;
  StartServer(options);
  httplib::Result res = Post("/v1/completions", c.body);
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  json body = json::parse(res->body);
  EXPECT_EQ(body["usage"]["completion_tokens"], c.completion_tokens) << res->body;
  EXPECT_EQ(body["choices"][0]["finish_reason"], c.finish_reason) << res->body;
  Result<metrics::Exposition> parsed = metrics::ParsePrometheusText(client_->Get("/metrics")->body);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:request_success_total",
                                {{{"finished_reason", c.finish_reason}}}),
            1);
}

INSTANTIATE_TEST_SUITE_P(
    Emulator, OutputLengthTest,
    ::testing::Values(
        OutputLengthCase{"AnswerShorterThanLimit", {{"prompt", "a b"}, {"max_tokens", 20}}, 6, 6,
                         "stop"},
        OutputLengthCase{"LimitShorterThanAnswer", {{"prompt", "a b"}, {"max_tokens", 4}}, 6, 4,
                         "length"},
        OutputLengthCase{"IgnoreEos",
                         {{"prompt", "a b"}, {"max_tokens", 20}, {"ignore_eos", true}}, 6, 20,
                         "length"},
        OutputLengthCase{"NoAnswerLength", {{"prompt", "a b"}, {"max_tokens", 20}}, 0, 20,
                         "length"},
        OutputLengthCase{"NoLimitEndsAtTheAnswer", {{"prompt", "a b"}}, 30, 30, "stop"},
        OutputLengthCase{"NoLimitIsTheContextLeft", {{"prompt", "a b c d"}}, 100, 36, "length"},
        OutputLengthCase{"NoLimitIgnoringEos", {{"prompt", "a b c d"}, {"ignore_eos", true}}, 6,
                         36, "length"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST_F(EmulatorServerTest, RefusesAPromptThatLeavesNoRoomForOutput) {
  EmulatorOptions options = FastOptions();
  options.engine.max_model_len = 40;
  StartServer(options);
  httplib::Result res = Post("/v1/completions", {{"prompt_tokens", 40}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400);
  EXPECT_EQ(json::parse(res->body)["error"]["param"], "prompt") << res->body;
  // One prompt of a list past the context refuses the whole request, and nothing runs.
  res = Post("/v1/completions", {{"prompt", {"a", std::string(80, 'b') + " c"}}, {"max_tokens", 39}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  res = Post("/v1/completions",
             {{"prompt", {"a", "b"}}, {"n", 2}, {"max_tokens", 38}, {"prompt_tokens", 3}});
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 400) << res->body;
  EXPECT_EQ(server_->Stats().requests_finished_total, 0);
  EXPECT_EQ(server_->Stats().waiting + server_->Stats().running, 0);
}

TEST_F(EmulatorServerTest, AnswersVllmsSideEndpoints) {
  StartServer(FastOptions());  // startup_seconds 0: loaded at once
  httplib::Client& client = *client_;
  httplib::Result version = client.Get("/version");
  ASSERT_TRUE(version);
  EXPECT_EQ(version->status, 200);
  EXPECT_TRUE(json::parse(version->body)["version"].is_string());
  EXPECT_EQ(client.Get("/ping")->status, 200);
  EXPECT_EQ(client.Post("/ping", "", "text/plain")->status, 200);
  httplib::Result model = client.Get(("/v1/models/" + FastOptions().model_name).c_str());
  ASSERT_TRUE(model);
  ASSERT_EQ(model->status, 200) << model->body;
  EXPECT_EQ(json::parse(model->body)["id"], FastOptions().model_name);
  EXPECT_EQ(json::parse(model->body)["object"], "model");
  httplib::Result missing = client.Get("/v1/models/other");
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(json::parse(missing->body)["error"]["type"], "NotFoundError");
  httplib::Result tokens =
      client.Post("/tokenize", R"({"prompt": "one two three four"})", "application/json");
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->status, 200) << tokens->body;
  const json counted = json::parse(tokens->body);
  EXPECT_GT(counted["count"].get<int>(), 0);
  EXPECT_EQ(counted["tokens"].size(), counted["count"].get<size_t>());
  EXPECT_GT(counted["max_model_len"].get<int>(), 0);
  EXPECT_EQ(client.Post("/tokenize", "{}", "application/json")->status, 400);
}

// Issue 44: /v1/embeddings in OpenAI's shape (it was a 404), the same vector for the same
// input, 400 naming the field for a bad body, 404 for another model.
TEST_F(EmulatorServerTest, AnswersEmbeddings) {
  StartServer(FastOptions());
  httplib::Result res =
      Post("/v1/embeddings", {{"model", FastOptions().model_name}, {"input", {"one two", "x"}}});
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200) << res->body;
  const json body = json::parse(res->body);
  EXPECT_EQ(body["object"], "list");
  EXPECT_EQ(body["model"], FastOptions().model_name);
  ASSERT_EQ(body["data"].size(), 2u);
  EXPECT_EQ(body["data"][1]["index"], 1);
  EXPECT_EQ(body["data"][0]["embedding"].size(), static_cast<size_t>(kEmbeddingDimensions));
  EXPECT_EQ(body["usage"]["prompt_tokens"], 3);
  httplib::Result again = Post("/v1/embeddings", {{"input", "one two"}});
  ASSERT_TRUE(again);
  EXPECT_EQ(json::parse(again->body)["data"][0]["embedding"], body["data"][0]["embedding"]);
  httplib::Result bad = Post("/v1/embeddings", {{"input", {"a", 1}}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "input[1]");
  EXPECT_EQ(Post("/v1/embeddings", {{"model", "other"}, {"input", "a"}})->status, 404);
}

TEST_F(EmulatorServerTest, RejectsBadRequestsWithOpenAiErrors) {
  StartServer(FastOptions());
  httplib::Result bad = Post("/v1/completions", {{"prompt", "x"}, {"max_tokens", -3}});
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  EXPECT_EQ(json::parse(bad->body)["error"]["param"], "max_tokens");
  httplib::Result too_long =
      Post("/v1/completions", {{"prompt_tokens", 4000}, {"max_tokens", 100}});
  EXPECT_EQ(too_long->status, 400);
  httplib::Result other_model = Post("/v1/completions", {{"model", "gpt-9"}, {"prompt", "x"}});
  EXPECT_EQ(other_model->status, 404);
  EXPECT_EQ(client_->Get("/nope")->status, 404);
}

TEST_F(EmulatorServerTest, MetricsCountServedRequests) {
  StartServer(FastOptions());
  for (int i = 0; i < 3; ++i) {
    ASSERT_EQ(Post("/v1/completions", {{"prompt_tokens", 100}, {"max_tokens", 4}})->status, 200);
  }
  httplib::Result res = client_->Get("/metrics");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  Result<metrics::Exposition> parsed = metrics::ParsePrometheusText(res->body);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  const std::vector<metrics::LabelMatcher> model{{"model_name", "test-model"}};
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:request_success_total",
                                {{{"model_name", "test-model"}, {"finished_reason", "length"}}}),
            3);
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:prompt_tokens_total", model), 300);
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:generation_tokens_total", model), 12);
  EXPECT_EQ(*metrics::FindValue(*parsed, "vllm:num_requests_running", model), 0);
  EXPECT_EQ(metrics::FindHistogram(*parsed, "vllm:time_to_first_token_seconds", model)->count, 3);
  EXPECT_EQ(parsed->FindFamily("vllm:e2e_request_latency_seconds")->type,
            metrics::MetricType::kHistogram);
}

TEST_F(EmulatorServerTest, ShutdownLetsInFlightStreamsFinish) {
  StartServer(FastOptions());
  std::string body;
  std::thread request([&] {
    httplib::Client client("127.0.0.1", server_->port());
    json request_body{{"prompt", "x"}, {"max_tokens", 100}, {"stream", true}};
    httplib::Result res = client.Post("/v1/completions", request_body.dump(), "application/json");
    if (res) body = res->body;
  });
  WaitUntil([&] { return server_->Stats().running != 0; });
  server_->Shutdown();
  request.join();
  std::vector<std::string> events = SseData(body);
  ASSERT_EQ(events.size(), 101u);
  EXPECT_EQ(events.back(), "[DONE]");
  EXPECT_EQ(server_->Stats().requests_finished_total, 1);
}

TEST_F(EmulatorServerTest, ShutdownEndsStreamsThatOutliveTheDrainTime) {
  EmulatorOptions options = FastOptions();
  options.drain_seconds = 0.05;
  options.engine.kv_cache_tokens = 1'000'000;
  StartServer(options);
  std::string body;
  std::thread request([&] {
    httplib::Client client("127.0.0.1", server_->port());
    json request_body{{"prompt", "x"}, {"max_tokens", 500'000}, {"stream", true}};
    httplib::Result res = client.Post("/v1/completions", request_body.dump(), "application/json");
    if (res) body = res->body;
  });
  WaitUntil([&] { return server_->Stats().generation_tokens_total != 0; });
  server_->Shutdown();  // returns after ~50 ms instead of ~10 minutes
  request.join();
  EXPECT_EQ(body.find("[DONE]"), std::string::npos);
  EXPECT_EQ(server_->Stats().requests_finished_total, 0);
}

// vLLM aborts a request whose client went away; a non-streaming one has no write to fail,
// so the emulator looks at the connection while it generates. Before, it generated on for
// nobody (the gateway closes a gone client's replica connection to stop exactly that).
TEST_F(EmulatorServerTest, ANonStreamingRequestWhoseClientLeftIsCancelled) {
  EmulatorOptions options = FastOptions();
  options.engine.kv_cache_tokens = 1'000'000;
  StartServer(options);
  const std::string body = R"({"prompt": "hi", "max_tokens": 20000})";
  {
    testing::RawClient client(server_->port());
    ASSERT_TRUE(client.Send(
        fmt::format("POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    "Content-Length: {}\r\n\r\n{}",
                    body.size(), body)));
    WaitUntil([&] { return server_->Stats().generation_tokens_total != 0; });
    ASSERT_EQ(server_->Stats().running, 1);
  }  // the client hangs up (20,000 tokens take 20 s or more)
  WaitUntil([&] { return server_->Stats().running == 0; }, std::chrono::seconds(5));
  EXPECT_EQ(server_->Stats().running, 0) << "the engine generated on for a client that left";
  EXPECT_EQ(server_->Stats().requests_finished_total, 0);
}

// One streaming request whose stream outlasts any test run (a token per 100 ms step).
std::string EndlessStreamRequest() {
  const std::string body = R"({"prompt": "hi", "max_tokens": 100000, "stream": true})";
  return fmt::format(
      "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
      "Content-Length: {}\r\n\r\n{}",
      body.size(), body);
}

// vLLM's server is asynchronous: its probes answer while it streams to many clients. So must
// the emulator's, or the daemon restarts a replica that is merely busy (issue 21). The
// thread-per-connection server it had before ran out at 64 clients.
TEST_F(EmulatorServerTest, HealthAndMetricsAnswerWhileAThousandStreamsAreOpen) {
  EmulatorOptions options = FastOptions();
  options.http_threads = 1;
  options.engine.max_batch_size = 1024;
  options.engine.kv_cache_tokens = int64_t{1} << 30;  // every stream fits at once
  // 100 ms steps: a thousand events per step stay light enough for a sanitizer build.
  options.engine.decode_ms_base = 100;
  options.engine.decode_ms_per_seq = 0;
  options.drain_seconds = 0;
  StartServer(options);
  // Both ends of every stream live in this process: 2,000 descriptors and some.
  const rlim_t files = testing::RaiseOpenFiles(4096);
  // Where the hard limit is lower, as many streams as fit (still far past the 64 a thread
  // per connection allowed), said on stderr.
  const int kStreams = static_cast<int>(std::min<rlim_t>(1000, (files - 200) / 2));
  ASSERT_GE(kStreams, 200) << "raise the open-files limit (ulimit -n) to run this test";
  if (kStreams < 1000) {
    std::cerr << "open-files limit " << files << ": " << kStreams
              << " streams instead of 1,000\n";
  }
  const std::string request = EndlessStreamRequest();
  std::vector<std::unique_ptr<testing::RawClient>> streams;
  for (int i = 0; i < kStreams; ++i) {
    streams.push_back(std::make_unique<testing::RawClient>(server_->port()));
    ASSERT_TRUE(streams.back()->Send(request)) << "stream " << i;
  }
  int streaming = 0;
  for (auto& s : streams) {
    const std::string seen = s->ReadUntil("data: ", std::chrono::milliseconds(20000));
    streaming += seen.find("data: ") != std::string::npos ? 1 : 0;
  }
  EXPECT_EQ(streaming, kStreams) << "every stream is served at once";
  EXPECT_GE(server_->connections(), kStreams);
  // The bound is generous (a loaded CI machine); the benchmark measures the latency itself.
  client_->set_read_timeout(2, 0);
  for (int i = 0; i < 5; ++i) {
    httplib::Result health = client_->Get("/health");
    ASSERT_TRUE(health) << "probe " << i << " got no answer";
    EXPECT_EQ(health->status, 200);
    httplib::Result metrics = client_->Get("/metrics");
    ASSERT_TRUE(metrics);
    EXPECT_NE(metrics->body.find("vllm:num_requests_running"), std::string::npos);
  }
}

TEST_F(EmulatorServerTest, ReportsAPortInUse) {
  StartServer(FastOptions());
  EmulatorOptions options = FastOptions();
  options.port = server_->port();
  Result<std::unique_ptr<EmulatorServer>> second = EmulatorServer::Start(options);
  ASSERT_FALSE(second.has_value());
  EXPECT_EQ(second.error().code, ErrorCode::kUnavailable);
  EXPECT_EQ(second.error().field, "--port");
}

TEST(EmulatorOptionsTest, ValidationNamesTheFlag) {
  EmulatorOptions options;
  options.startup_seconds = -1;
  EXPECT_EQ(ValidateEmulatorOptions(options).error().field, "--startup-seconds");
  options = EmulatorOptions{};
  options.http_threads = 0;
  EXPECT_EQ(ValidateEmulatorOptions(options).error().field, "--http-threads");
  options = EmulatorOptions{};
  options.engine.max_batch_size = 0;
  EXPECT_EQ(ValidateEmulatorOptions(options).error().field, "--max-batch-size");
}

}  // namespace
}  // namespace gpuscale::emulator
