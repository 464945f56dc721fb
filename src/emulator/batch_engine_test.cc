#include "emulator/batch_engine.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <vector>

#include "core/clock.h"
#include "emulator/engine_flags.h"
#include "sim/replica_model.h"

namespace gpuscale::emulator {
namespace {

// Round numbers so expected times can be written down: a step costs
// 10 ms + 1 ms per sequence + 100 ms per 1000 prompt tokens admitted in it.
EngineConfig TestConfig() {
  EngineConfig config;
  config.prefill_ms_per_1k_tokens = 100;
  config.decode_ms_base = 10;
  config.decode_ms_per_seq = 1;
  config.max_batch_size = 8;
  config.kv_cache_tokens = 100000;
  return config;
}

// Drives the engine step by step with a ManualClock and records when each request got
// each of its tokens.
class Recorder {
 public:
  explicit Recorder(BatchEngine& engine) : engine_(engine) {}

  RequestId Submit(int32_t prompt, int32_t max_tokens) {
    Result<RequestId> id = engine_.Submit(prompt, max_tokens, clock_.Now());
    EXPECT_TRUE(id.has_value()) << id.error().ToString();
    return *id;
  }

  // Steps until `t` (or until idle when t is omitted), recording token times.
  void RunUntil(Seconds t = Seconds{1e9}) {
    while (std::optional<Seconds> end = engine_.NextStepEnd()) {
      if (*end > t) break;
      clock_.Set(*end);
      engine_.Advance(clock_.Now());
      for (auto& [id, times] : token_times_) Record(id, times);
      max_running_ = std::max(max_running_, engine_.stats().running);
    }
    if (t.count() < 1e9) {
      clock_.Set(t);
      engine_.Advance(clock_.Now());
    }
  }

  void Track(RequestId id) { token_times_[id]; }
  const std::vector<double>& TokenTimes(RequestId id) { return token_times_.at(id); }
  int32_t max_running() const { return max_running_; }
  ManualClock& clock() { return clock_; }

 private:
  void Record(RequestId id, std::vector<double>& times) {
    const RequestProgress* p = engine_.Find(id);
    while (p && static_cast<int32_t>(times.size()) < p->tokens_generated) {
      times.push_back(clock_.Now().count());
    }
  }

  BatchEngine& engine_;
  ManualClock clock_;
  std::map<RequestId, std::vector<double>> token_times_;
  int32_t max_running_ = 0;
};

struct PrefillCase {
  int32_t prompt_tokens;
  double expected_ttft_seconds;
};

TEST(BatchEngineTest, PrefillTimeGrowsWithPromptTokens) {
  // One request alone: its first token comes at the end of its prefill step.
  const std::vector<PrefillCase> cases = {
      {100, 0.010 + 0.001 + 0.010}, {1000, 0.010 + 0.001 + 0.100}, {4000, 0.010 + 0.001 + 0.400}};
  for (const PrefillCase& c : cases) {
    BatchEngine engine(TestConfig());
    Recorder recorder(engine);
    const RequestId id = recorder.Submit(c.prompt_tokens, 4);
    recorder.Track(id);
    recorder.RunUntil();
    ASSERT_EQ(recorder.TokenTimes(id).size(), 4u) << c.prompt_tokens;
    EXPECT_NEAR(recorder.TokenTimes(id)[0], c.expected_ttft_seconds, 1e-9) << c.prompt_tokens;
    // Decode steps after the prefill do not depend on the prompt: 10 + 1 ms each.
    EXPECT_NEAR(recorder.TokenTimes(id)[1] - recorder.TokenTimes(id)[0], 0.011, 1e-9);
  }
}

// A decode replica of a disaggregated service receives the prompt's KV from a prefill
// replica: its first token costs one decode step (10 + 1 ms) whatever the prompt, and its
// prompt tokens are not counted as prefilled here (the prefill replica counted them).
TEST(BatchEngineTest, PrefilledPromptDecodesFromTheFirstStep) {
  for (int32_t prompt : {100, 4000}) {
    BatchEngine engine(TestConfig());
    ManualClock clock;
    Result<RequestId> id = engine.Submit(prompt, 3, clock.Now(), false, /*prefilled=*/true);
    ASSERT_TRUE(id.has_value()) << id.error().ToString();
    ASSERT_TRUE(engine.NextStepEnd().has_value());
    EXPECT_NEAR(engine.NextStepEnd()->count(), 0.011, 1e-9) << prompt;
    engine.Advance(Seconds{1});
    EXPECT_EQ(engine.Find(*id)->tokens_generated, 3) << prompt;
    EXPECT_EQ(engine.stats().prompt_tokens_total, 0) << prompt;
    EXPECT_EQ(engine.stats().generation_tokens_total, 3) << prompt;
    // Its KV reservation still holds the prompt while it decodes, and is freed at the end.
    EXPECT_EQ(engine.stats().kv_used_tokens, 0);
  }
}

TEST(BatchEngineTest, DecodeStepGrowsWithBatchSize) {
  const std::vector<std::pair<int, double>> cases = {{1, 0.011}, {4, 0.014}, {8, 0.018}};
  for (const auto& [batch, expected_step] : cases) {
    BatchEngine engine(TestConfig());
    Recorder recorder(engine);
    std::vector<RequestId> ids;
    for (int i = 0; i < batch; ++i) ids.push_back(recorder.Submit(10, 5));
    for (RequestId id : ids) recorder.Track(id);
    recorder.RunUntil();
    // The last request joins the batch in the second step at the latest; from its second
    // token on, every step holds exactly `batch` sequences.
    const std::vector<double>& times = recorder.TokenTimes(ids.back());
    ASSERT_EQ(times.size(), 5u);
    EXPECT_NEAR(times[2] - times[1], expected_step, 1e-9) << "batch " << batch;
  }
}

// vLLM's per-request intervals and counts. A (1000-token prompt, 3 tokens) runs alone in
// the first step (10 + 1 + 100 ms); B (1000 tokens, 2) waits for it, is scheduled at
// 0.111 s and prefilled in the second step (10 + 2 + 100 ms, A decodes alongside); one more
// 12 ms step finishes both at 0.235 s.
TEST(BatchEngineTest, RecordsVllmRequestIntervalsAndCounts) {
  BatchEngine engine(TestConfig());
  Recorder recorder(engine);
  recorder.Submit(1000, 3);
  recorder.Submit(1000, 2);
  recorder.RunUntil();
  const EngineStats& s = engine.stats();
  struct Case {
    const char* name;
    const metrics::BucketHistogram& histogram;
    int64_t count;
    double sum;
  };
  const std::vector<Case> cases = {
      {"e2e", s.e2e_seconds, 2, 0.235 + 0.235},
      {"queue", s.queue_seconds, 2, 0 + 0.111},
      {"prefill", s.prefill_seconds, 2, 0.111 + 0.112},
      {"decode", s.decode_seconds, 2, 0.124 + 0.012},
      {"inference", s.inference_seconds, 2, 0.235 + 0.124},
      {"ttft", s.ttft_seconds, 2, 0.111 + 0.223},
      {"inter-token gaps", s.inter_token_seconds, 3, 0.112 + 0.012 + 0.012},
      {"tpot per request", s.request_tpot_seconds, 2, 0.124 / 2 + 0.012},
      {"prompt tokens", s.prompt_tokens, 2, 2000},
      {"generation tokens", s.generation_tokens, 2, 5},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(c.histogram.count(), c.count) << c.name;
    EXPECT_NEAR(c.histogram.sum(), c.sum, 1e-9) << c.name;
  }
  EXPECT_EQ(s.prefix_cache_queries_total, 2000);
  EXPECT_EQ(s.prefix_cache_hits_total, 0);
  EXPECT_EQ(s.preemptions_total, 0);
}

TEST(BatchEngineTest, KvCacheFullMakesRequestsWait) {
  EngineConfig config = TestConfig();
  config.kv_cache_tokens = 100;  // two requests of 40 + 10 tokens fill it
  BatchEngine engine(config);
  Recorder recorder(engine);
  const RequestId a = recorder.Submit(40, 10);
  const RequestId b = recorder.Submit(40, 10);
  const RequestId c = recorder.Submit(40, 10);
  for (RequestId id : {a, b, c}) recorder.Track(id);
  recorder.RunUntil(Seconds{0.02});  // a admitted at 0, b at 0.0150

  EXPECT_EQ(engine.stats().running, 2);
  EXPECT_EQ(engine.stats().waiting, 1);
  EXPECT_DOUBLE_EQ(engine.stats().KvUsageRatio(), 1.0);
  EXPECT_EQ(engine.Find(c)->state, RequestState::kWaiting);

  recorder.RunUntil();
  ASSERT_EQ(recorder.TokenTimes(c).size(), 10u);
  // c got its first token only after a finished and freed its reservation.
  EXPECT_GT(recorder.TokenTimes(c)[0], engine.Find(a)->finished_at->count());
  EXPECT_DOUBLE_EQ(engine.stats().KvUsageRatio(), 0.0);
  EXPECT_EQ(engine.stats().requests_finished_total, 3);
}

TEST(BatchEngineTest, MaxBatchSizeIsNeverExceeded) {
  EngineConfig config = TestConfig();
  config.max_batch_size = 3;
  BatchEngine engine(config);
  Recorder recorder(engine);
  for (int i = 0; i < 10; ++i) recorder.Track(recorder.Submit(10, 3));
  recorder.RunUntil(Seconds{0.05});
  EXPECT_EQ(engine.stats().running, 3);
  EXPECT_EQ(engine.stats().waiting,
            7 - static_cast<int32_t>(engine.stats().requests_finished_total));
  recorder.RunUntil();
  EXPECT_EQ(recorder.max_running(), 3);
  EXPECT_EQ(engine.stats().requests_finished_total, 10);
  EXPECT_EQ(engine.stats().generation_tokens_total, 30);
  EXPECT_EQ(engine.stats().prompt_tokens_total, 100);
}

TEST(BatchEngineTest, HeadThatDoesNotFitBlocksSmallerRequestsBehindIt) {
  EngineConfig config = TestConfig();
  config.kv_cache_tokens = 100;
  BatchEngine engine(config);
  Recorder recorder(engine);
  recorder.Submit(50, 10);                        // 60 reserved
  const RequestId big = recorder.Submit(50, 10);  // needs 60: waits
  const RequestId small = recorder.Submit(5, 5);  // would fit, but FCFS keeps it behind
  recorder.RunUntil(Seconds{0.1});
  EXPECT_EQ(engine.Find(big)->state, RequestState::kWaiting);
  EXPECT_EQ(engine.Find(small)->state, RequestState::kWaiting);
}

TEST(BatchEngineTest, IdleEngineStartsAStepWhenARequestArrives) {
  BatchEngine engine(TestConfig());
  EXPECT_FALSE(engine.NextStepEnd().has_value());
  ManualClock clock(Seconds{5});
  ASSERT_TRUE(engine.Submit(1000, 1, clock.Now()).has_value());
  ASSERT_TRUE(engine.NextStepEnd().has_value());
  EXPECT_NEAR(engine.NextStepEnd()->count(), 5.111, 1e-9);
  clock.Advance(Seconds{1});
  engine.Advance(clock.Now());
  EXPECT_FALSE(engine.NextStepEnd().has_value());
  EXPECT_EQ(engine.stats().ttft_seconds.count(), 1);
  EXPECT_NEAR(engine.stats().e2e_seconds.sum(), 0.111, 1e-9);
}

TEST(BatchEngineTest, LateAdvanceGivesTheSameTimesAsStepByStep) {
  BatchEngine stepped(TestConfig());
  Recorder recorder(stepped);
  const RequestId id = recorder.Submit(300, 6);
  recorder.Track(id);
  recorder.RunUntil();

  BatchEngine jumped(TestConfig());
  ASSERT_TRUE(jumped.Submit(300, 6, Seconds{0}).has_value());
  jumped.Advance(Seconds{10});
  const RequestProgress* p = jumped.Find(1);
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(p->state, RequestState::kFinished);
  EXPECT_NEAR(p->first_token_at->count(), recorder.TokenTimes(id).front(), 1e-12);
  EXPECT_NEAR(p->finished_at->count(), recorder.TokenTimes(id).back(), 1e-12);
}

TEST(BatchEngineTest, CancelFreesTheKvReservation) {
  EngineConfig config = TestConfig();
  config.kv_cache_tokens = 100;
  BatchEngine engine(config);
  Recorder recorder(engine);
  const RequestId a = recorder.Submit(80, 20);
  const RequestId b = recorder.Submit(80, 20);
  recorder.RunUntil(Seconds{0.05});
  EXPECT_EQ(engine.Find(b)->state, RequestState::kWaiting);
  engine.Cancel(a, recorder.clock().Now());
  EXPECT_EQ(engine.Find(a)->state, RequestState::kCancelled);
  EXPECT_EQ(engine.stats().kv_used_tokens, 0);
  recorder.RunUntil(Seconds{0.2});
  EXPECT_EQ(engine.Find(b)->state, RequestState::kRunning);
  engine.Forget(b, recorder.clock().Now());
  EXPECT_EQ(engine.Find(b), nullptr);
  EXPECT_EQ(engine.ActiveRequests(), 0);
  EXPECT_EQ(engine.stats().requests_cancelled_total, 2);
}

TEST(BatchEngineTest, RejectsRequestsTheCacheCouldNeverHold) {
  EngineConfig config = TestConfig();
  config.kv_cache_tokens = 100;
  BatchEngine engine(config);
  Result<RequestId> too_big = engine.Submit(90, 11, Seconds{0});
  ASSERT_FALSE(too_big.has_value());
  EXPECT_EQ(too_big.error().field, "max_tokens");
  EXPECT_NE(too_big.error().message.find("KV cache of 100 tokens"), std::string::npos);
  EXPECT_EQ(engine.Submit(0, 1, Seconds{0}).error().field, "prompt_tokens");
  EXPECT_EQ(engine.Submit(1, 0, Seconds{0}).error().field, "max_tokens");
  EXPECT_TRUE(engine.Submit(90, 10, Seconds{0}).has_value());
}

TEST(BatchEngineTest, ValidationNamesTheFlag) {
  const std::vector<std::pair<void (*)(EngineConfig&), std::string>> cases = {
      {[](EngineConfig& c) { c.prefill_ms_per_1k_tokens = -1; }, "--prefill-ms-per-1k-tokens"},
      {[](EngineConfig& c) { c.decode_ms_base = std::nan(""); }, "--decode-ms-base"},
      {[](EngineConfig& c) { c.decode_ms_per_seq = -0.5; }, "--decode-ms-per-seq"},
      {[](EngineConfig& c) { c.decode_ms_base = c.decode_ms_per_seq = 0; }, "--decode-ms-base"},
      {[](EngineConfig& c) { c.max_batch_size = 0; }, "--max-batch-size"},
      {[](EngineConfig& c) { c.kv_cache_tokens = 1; }, "--kv-cache-tokens"},
  };
  EXPECT_TRUE(ValidateEngineConfig(EngineConfig{}).has_value());
  for (const auto& [mutate, flag] : cases) {
    EngineConfig config;
    mutate(config);
    Status status = ValidateEngineConfig(config);
    ASSERT_FALSE(status.has_value()) << flag;
    EXPECT_EQ(status.error().field, flag);
  }
}

// --timing calibrated (calibrated_timing.h): the simulator's model of llama-3-8b on one H100.
EngineConfig CalibratedConfig(int32_t tensor_parallel = 1) {
  EngineFlags flags;
  flags.timing = StepTiming::kCalibrated;
  flags.tensor_parallel_size = tensor_parallel;
  Result<EngineConfig> config = ApplyEngineFlags(EngineConfig{}, flags);
  EXPECT_TRUE(config.has_value()) << config.error().ToString();
  return *config;
}

std::unique_ptr<sim::ReplicaModel> SimModel(int tensor_parallel = 1) {
  Result<std::unique_ptr<sim::ReplicaModel>> model = sim::MakeReplicaModel(
      {.model = "llama-3-8b", .gpu = "h100", .tensor_parallel = tensor_parallel});
  EXPECT_TRUE(model.has_value()) << model.error().ToString();
  return std::move(*model);
}

// A prefill alone, a prompt prefilled while another request decodes, then two decodes: each
// step lasts what the simulator's model gives for the same batch, not the linear formula.
TEST(BatchEngineTest, CalibratedStepTakesTheSimulatorsModelTime) {
  const EngineConfig config = CalibratedConfig();
  const std::unique_ptr<sim::ReplicaModel> model = SimModel();
  BatchEngine engine(config);
  ASSERT_TRUE(engine.Submit(100, 5, Seconds{0}).has_value());
  const double prefill_s = model->PrefillSeconds(100);
  ASSERT_TRUE(engine.NextStepEnd().has_value());
  EXPECT_NEAR(engine.NextStepEnd()->count(), prefill_s, 1e-12);
  EXPECT_GT(std::abs(prefill_s - StepMilliseconds(config, 1, 100) / 1000), 1e-4);

  ASSERT_TRUE(engine.Submit(500, 5, Seconds{prefill_s / 2}).has_value());
  engine.Advance(Seconds{prefill_s});  // A has its first token: 101 tokens in KV
  const double mixed_s = model->MixedStepSeconds(sim::PrefillWork::Prompt(500), 1, 101);
  EXPECT_NEAR(engine.NextStepEnd()->count(), prefill_s + mixed_s, 1e-12);
  EXPECT_GT(std::abs(mixed_s - StepMilliseconds(config, 2, 500) / 1000), 1e-4);

  engine.Advance(*engine.NextStepEnd());  // A: 102 tokens, B: 501
  const double decode_s = model->DecodeStepSeconds(2, 102 + 501);
  EXPECT_NEAR(engine.NextStepEnd()->count(), prefill_s + mixed_s + decode_s, 1e-12);
  EXPECT_GT(std::abs(decode_s - StepMilliseconds(config, 2, 0) / 1000), 1e-4);
}

// Two prompts admitted into one chunked step pay their own attention, not that of one
// sequence of both (the simulator's PrefillWork); a long prompt's second chunk attends to its
// first.
TEST(BatchEngineTest, CalibratedPromptsInOneStepPayTheirOwnAttention) {
  const EngineConfig config = CalibratedConfig();
  ASSERT_EQ(config.max_num_batched_tokens, 8192);
  const std::unique_ptr<sim::ReplicaModel> model = SimModel();
  BatchEngine engine(config);
  // A short prompt's step runs while the two long ones arrive; the next step takes both,
  // beside its first decode (11 tokens in KV).
  ASSERT_TRUE(engine.Submit(10, 5, Seconds{0}).has_value());
  ASSERT_TRUE(engine.Submit(4000, 2, Seconds{0}).has_value());
  ASSERT_TRUE(engine.Submit(4000, 2, Seconds{0}).has_value());
  ASSERT_TRUE(engine.NextStepEnd().has_value());
  const double short_s = engine.NextStepEnd()->count();
  EXPECT_NEAR(short_s, model->PrefillSeconds(10), 1e-12);
  engine.Advance(Seconds{short_s});
  sim::PrefillWork two;
  two.AddChunk(0, 4000);
  two.AddChunk(0, 4000);
  const double step_s = engine.NextStepEnd()->count() - short_s;
  EXPECT_NEAR(step_s, model->MixedStepSeconds(two, 1, 11), 1e-9);
  EXPECT_LT(step_s, model->MixedStepSeconds(sim::PrefillWork::Prompt(8000), 1, 11) - 4e-3);

  BatchEngine long_prompt(config);
  ASSERT_TRUE(long_prompt.Submit(10000, 2, Seconds{0}).has_value());
  const double first_s = long_prompt.NextStepEnd()->count();
  EXPECT_NEAR(first_s, model->PrefillSeconds(8192), 1e-12);
  long_prompt.Advance(Seconds{first_s});
  sim::PrefillWork rest;
  rest.AddChunk(8192, 10000 - 8192);
  EXPECT_NEAR(long_prompt.NextStepEnd()->count(), first_s + model->MixedStepSeconds(rest, 0, 0),
              1e-12);
}

TEST(BatchEngineTest, CalibratedCapacitiesComeFromTheModel) {
  for (int tp : {1, 2}) {
    const EngineConfig config = CalibratedConfig(tp);
    const std::unique_ptr<sim::ReplicaModel> model = SimModel(tp);
    EXPECT_EQ(config.kv_cache_tokens, model->KvCacheTokens()) << tp;
    EXPECT_EQ(config.max_batch_size, model->MaxBatchSize()) << tp;
    EXPECT_EQ(config.max_num_batched_tokens, model->MaxBatchedTokens()) << tp;
    EXPECT_TRUE(config.chunked_prefill);
    EXPECT_EQ(BatchEngine(config).stats().kv_capacity_tokens, model->KvCacheTokens()) << tp;
  }
  // More memory per replica at tp 2: the engine admits what the model's cache holds.
  EXPECT_GT(CalibratedConfig(2).kv_cache_tokens, CalibratedConfig(1).kv_cache_tokens);
}

TEST(BatchEngineTest, CalibratedBatchLimitIsTheModels) {
  const EngineConfig config = CalibratedConfig();
  ASSERT_EQ(config.max_batch_size, 256);
  BatchEngine engine(config);
  for (int i = 0; i < 300; ++i) ASSERT_TRUE(engine.Submit(10, 50, Seconds{0}).has_value());
  Recorder recorder(engine);
  recorder.RunUntil();
  EXPECT_EQ(recorder.max_running(), 256);
  EXPECT_EQ(engine.stats().requests_finished_total, 300);
}

}  // namespace
}  // namespace gpuscale::emulator
