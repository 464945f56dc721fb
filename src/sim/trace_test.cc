#include "sim/trace.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

namespace gpuscale::sim {
namespace {

std::string ReadDataFile(const std::string& relative) {
  std::ifstream in(std::string(GPUSCALE_DATA_DIR) + "/" + relative, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

Trace MustParse(std::string_view text, TraceReadOptions options = {}) {
  auto trace = ParseTrace(text, options);
  EXPECT_TRUE(trace.has_value()) << trace.error().ToString();
  return trace.has_value() ? *trace : Trace{};
}

bool IsSortedFromZero(const Trace& trace) {
  return !trace.requests.empty() && trace.requests.front().arrival_s == 0 &&
         std::is_sorted(trace.requests.begin(), trace.requests.end(),
                        [](const TraceRequest& a, const TraceRequest& b) {
                          return a.arrival_s < b.arrival_s;
                        });
}

double MeanRate(const Trace& trace) {
  return static_cast<double>(trace.requests.size()) / trace.requests.back().arrival_s;
}

// Counts and rates from data/README.md.
struct RealTraceCase {
  const char* file;
  const char* format;
  size_t requests;
  double rate_per_s;
  double mean_input_tokens_min;
};

class RealTraceTest : public ::testing::TestWithParam<RealTraceCase> {};

TEST_P(RealTraceTest, ParsesEveryRowWithReadmeRate) {
  const RealTraceCase& c = GetParam();
  const std::string text = ReadDataFile(std::string("traces/") + c.file);
  ASSERT_FALSE(text.empty()) << "cannot read " << c.file;
  const Trace trace = MustParse(text);
  EXPECT_EQ(trace.format, c.format);
  EXPECT_EQ(trace.requests.size(), c.requests);
  EXPECT_EQ(trace.skipped_rows, 0);
  EXPECT_TRUE(IsSortedFromZero(trace));
  EXPECT_NEAR(MeanRate(trace), c.rate_per_s, 0.15 * c.rate_per_s);
  double input_sum = 0;
  for (const TraceRequest& r : trace.requests) input_sum += r.input_tokens;
  EXPECT_GT(input_sum / static_cast<double>(trace.requests.size()), c.mean_input_tokens_min);
}

INSTANTIATE_TEST_SUITE_P(SharedData, RealTraceTest,
                         ::testing::Values(RealTraceCase{"AzureLLMInferenceTrace_conv.csv",
                                                         "azure_csv", 19366, 5.5, 1000},
                                           RealTraceCase{"AzureLLMInferenceTrace_code.csv",
                                                         "azure_csv", 8819, 2.6, 1500},
                                           RealTraceCase{"mooncake_conversation_trace.jsonl",
                                                         "mooncake_jsonl", 12031, 3.4, 10000}));

TEST(TraceParseTest, AzureFirstAndLastRowsMatchTheFile) {
  const Trace trace = MustParse(ReadDataFile("traces/AzureLLMInferenceTrace_conv.csv"));
  ASSERT_EQ(trace.requests.size(), 19366u);
  EXPECT_EQ(trace.requests.front().input_tokens, 374);
  EXPECT_EQ(trace.requests.front().output_tokens, 44);
  // 18:15:46.6805900 -> 19:14:08.4025270, last row "...,197,183" without a final newline.
  EXPECT_NEAR(trace.requests.back().arrival_s, 3501.721937, 1e-6);
  EXPECT_EQ(trace.requests.back().input_tokens, 197);
  EXPECT_EQ(trace.requests.back().output_tokens, 183);
}

TEST(TraceParseTest, AzureTimestampsKeepSubMicrosecondGapsAcrossYearEnd) {
  const Trace trace = MustParse(
      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
      "2023-12-31 23:59:59.9999999,10,1\n"
      "2024-01-01 00:00:00.0000000,20,2\n"
      "2024-03-01 00:00:00.0000000,30,3");
  ASSERT_EQ(trace.requests.size(), 3u);
  EXPECT_NEAR(trace.requests[1].arrival_s, 1e-7, 1e-12);
  // 2024 is a leap year: Jan 31 + Feb 29 days after New Year.
  EXPECT_NEAR(trace.requests[2].arrival_s, 60 * 86400.0 + 1e-7, 1e-6);
}

TEST(TraceParseTest, PlainCsvIsSortedAndRebasedToFirstArrival) {
  const Trace trace = MustParse(
      "arrival_s,input_tokens,output_tokens\r\n"
      "12.5,100,10\r\n"
      "\r\n"
      "10,200,20\r\n"
      "11,300,30\r\n");
  EXPECT_EQ(trace.format, "plain_csv");
  ASSERT_EQ(trace.requests.size(), 3u);
  EXPECT_EQ(trace.requests[0].input_tokens, 200);
  EXPECT_DOUBLE_EQ(trace.requests[1].arrival_s, 1.0);
  EXPECT_DOUBLE_EQ(trace.requests[2].arrival_s, 2.5);
  EXPECT_EQ(trace.requests[2].output_tokens, 10);
}

TEST(TraceParseTest, CsvColumnsAreFoundByNameInAnyOrder) {
  const Trace trace = MustParse(
      "output_tokens,note,arrival_s,input_tokens\n"
      "7,hello,0.5,70\n"
      "8,world,1.5,80");
  ASSERT_EQ(trace.requests.size(), 2u);
  EXPECT_EQ(trace.requests[1].input_tokens, 80);
  EXPECT_EQ(trace.requests[1].output_tokens, 8);
  EXPECT_DOUBLE_EQ(trace.requests[1].arrival_s, 1.0);
}

TEST(TraceParseTest, PlainJsonlIgnoresExtraKeysAndNestedValues) {
  const Trace trace = MustParse(
      "{\"arrival_s\": 2, \"input_tokens\": 5, \"output_tokens\": 6, \"tag\": \"a,}\"}\n"
      "{\"meta\": {\"x\": [1, [2, \"]\"]]}, \"output_tokens\": 3, \"input_tokens\": 4, "
      "\"arrival_s\": 1.5e0}\n");
  EXPECT_EQ(trace.format, "plain_jsonl");
  ASSERT_EQ(trace.requests.size(), 2u);
  EXPECT_EQ(trace.requests[0].input_tokens, 4);
  EXPECT_EQ(trace.requests[0].output_tokens, 3);
  EXPECT_DOUBLE_EQ(trace.requests[1].arrival_s, 0.5);
}

TEST(TraceParseTest, PriorityAndTenantColumnsAreReadInEveryNamedFormat) {
  const Trace csv = MustParse(
      "tenant,arrival_s,input_tokens,output_tokens,priority\n"
      "acme,0,10,1,critical\nbeta,1,10,1,\nacme,2,10,1,sheddable\n");
  ASSERT_EQ(csv.requests.size(), 3u);
  EXPECT_EQ(csv.tenants, (std::vector<std::string>{"", "acme", "beta"}));
  EXPECT_EQ(csv.requests[0].priority, route::Priority::kCritical);
  EXPECT_EQ(csv.requests[1].priority, std::nullopt);  // empty: the door's default
  EXPECT_EQ(csv.requests[2].priority, route::Priority::kSheddable);
  EXPECT_EQ(csv.requests[0].tenant, 1u);
  EXPECT_EQ(csv.requests[1].tenant, 2u);
  EXPECT_EQ(csv.requests[2].tenant, 1u);
  const Trace mooncake = MustParse(
      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, \"hash_ids\": [7, 8], "
      "\"tenant\": \"acme\", \"priority\": \"standard\"}\n"
      "{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, \"tenant\": 42}\n");
  ASSERT_EQ(mooncake.requests.size(), 2u);
  EXPECT_EQ(mooncake.tenants, (std::vector<std::string>{"", "acme", "42"}));
  EXPECT_EQ(mooncake.requests[0].priority, route::Priority::kStandard);
  EXPECT_EQ(mooncake.requests[0].hash_count, 2u);
  EXPECT_EQ(mooncake.requests[1].tenant, 2u);
  const Trace plain = MustParse("{\"arrival_s\": 0, \"input_tokens\": 1, \"output_tokens\": 1}\n");
  ASSERT_EQ(plain.requests.size(), 1u);
  EXPECT_EQ(plain.requests[0].tenant, 0u);
  EXPECT_EQ(plain.requests[0].priority, std::nullopt);
  // Rate scaling keeps every copy's class.
  const Trace scaled = TransformTrace(csv, {.rate_scale = 3});
  EXPECT_EQ(scaled.tenants, csv.tenants);
  EXPECT_EQ(std::count_if(scaled.requests.begin(), scaled.requests.end(),
                          [](const TraceRequest& r) {
                            return r.priority == route::Priority::kCritical && r.tenant == 1;
                          }),
            3);
}

TEST(TraceParseTest, MooncakeTimestampsAreMilliseconds) {
  const Trace trace = MustParse(
      "{\"timestamp\": 1000, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}\n"
      "{\"timestamp\": 3500, \"input_length\": 20, \"output_length\": 2, \"hash_ids\": []}");
  EXPECT_EQ(trace.format, "mooncake_jsonl");
  ASSERT_EQ(trace.requests.size(), 2u);
  EXPECT_DOUBLE_EQ(trace.requests[1].arrival_s, 2.5);
}

TEST(TraceParseTest, MooncakeKeepsBlockHashesPerRequest) {
  const Trace trace = MustParse(
      "{\"timestamp\": 2000, \"input_length\": 1025, \"output_length\": 1, "
      "\"hash_ids\": [0, 7, 18446744073709551615]}\n"
      "{\"timestamp\": 1000, \"input_length\": 10, \"output_length\": 1, \"hash_ids\": [0]}\n"
      "{\"timestamp\": 3000, \"input_length\": 10, \"output_length\": 1}");
  EXPECT_EQ(trace.hash_block_tokens, 512);
  ASSERT_EQ(trace.requests.size(), 3u);
  // Sorting by arrival moves the rows; each keeps its own hashes.
  EXPECT_EQ(std::vector<uint64_t>(trace.HashIds(trace.requests[0]).begin(),
                                  trace.HashIds(trace.requests[0]).end()),
            std::vector<uint64_t>{0});
  EXPECT_EQ(std::vector<uint64_t>(trace.HashIds(trace.requests[1]).begin(),
                                  trace.HashIds(trace.requests[1]).end()),
            (std::vector<uint64_t>{0, 7, 18446744073709551615ull}));
  EXPECT_TRUE(trace.HashIds(trace.requests[2]).empty());
  EXPECT_EQ(trace.hash_ids.size(), 4u);
  // A copy made by rate scaling keeps them.
  const Trace doubled = TransformTrace(trace, TraceTransform{.rate_scale = 2});
  ASSERT_EQ(doubled.requests.size(), 6u);
  size_t hashes = 0;
  for (const TraceRequest& r : doubled.requests) hashes += doubled.HashIds(r).size();
  EXPECT_EQ(hashes, 8u);
}

TEST(TraceParseTest, OtherFormatsHaveNoBlockHashes) {
  const Trace trace = MustParse(
      "{\"arrival_s\": 0, \"input_tokens\": 5, \"output_tokens\": 1, "
      "\"hash_ids\": [1, 2]}");
  EXPECT_EQ(trace.hash_block_tokens, 0);
  EXPECT_TRUE(trace.hash_ids.empty());
  EXPECT_TRUE(trace.HashIds(trace.requests.at(0)).empty());
}

TEST(TraceParseTest, HashBlockTokensOptionSetsTheBlockSize) {
  TraceReadOptions options;
  options.hash_block_tokens = 16;
  const Trace trace = MustParse(
      "{\"timestamp\": 0, \"input_length\": 32, \"output_length\": 1, \"hash_ids\": [1, 2]}",
      options);
  EXPECT_EQ(trace.hash_block_tokens, 16);
  options.hash_block_tokens = 32;  // 32 tokens fill one block of 32: two hashes are one too many
  EXPECT_FALSE(ParseTrace("{\"timestamp\": 0, \"input_length\": 32, \"output_length\": 1, "
                          "\"hash_ids\": [1, 2]}",
                          options)
                   .has_value());
}

// The shipped trace: every request carries one hash per 512-token block, partial last
// block included.
TEST(TraceParseTest, MooncakeTraceHasAHashPerBlock) {
  const Trace trace = MustParse(ReadDataFile("traces/mooncake_conversation_trace.jsonl"));
  ASSERT_EQ(trace.requests.size(), 12031u);
  for (const TraceRequest& r : trace.requests) {
    ASSERT_EQ(r.hash_count, static_cast<uint32_t>((r.input_tokens + 511) / 512));
  }
}

TEST(TraceParseTest, HeaderOnlyGivesAnEmptyTrace) {
  const Trace trace = MustParse("TIMESTAMP,ContextTokens,GeneratedTokens\n");
  EXPECT_TRUE(trace.requests.empty());
  EXPECT_EQ(trace.format, "azure_csv");
}

struct MalformedCase {
  const char* name;
  const char* text;
  TraceFormat format;
  const char* error;  // Error::ToString()
};

class MalformedTraceTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedTraceTest, FailsNamingLineAndColumn) {
  const MalformedCase& c = GetParam();
  auto trace = ParseTrace(c.text, TraceReadOptions{c.format, false});
  ASSERT_FALSE(trace.has_value());
  EXPECT_EQ(trace.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(trace.error().ToString(), c.error);
}

constexpr char kAzureHeader[] = "TIMESTAMP,ContextTokens,GeneratedTokens\n";
constexpr char kAzureRow[] = "2023-11-16 18:15:46.6805900,374,44\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedTraceTest,
    ::testing::Values(
        MalformedCase{"NotANumber",
                      "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                      "2023-11-16 18:15:46.6805900,374,44\n"
                      "2023-11-16 18:15:47.0000000,x,44\n",
                      TraceFormat::kAuto,
                      "line 3: ContextTokens: expected a non-negative integer, got 'x'"},
        MalformedCase{"UnknownPriorityCsv",
                      "arrival_s,input_tokens,output_tokens,priority\n0,1,1,critical\n"
                      "1,2,3,urgent\n",
                      TraceFormat::kAuto,
                      "line 3: priority: expected critical, standard or sheddable, got 'urgent'"},
        MalformedCase{"UnknownPriorityMooncake",
                      "{\"timestamp\": 0, \"input_length\": 1, \"output_length\": 1, "
                      "\"priority\": \"Critical\"}\n",
                      TraceFormat::kAuto,
                      "line 1: priority: expected critical, standard or sheddable, got "
                      "'Critical'"},
        MalformedCase{"Negative", "arrival_s,input_tokens,output_tokens\n1,2,-3\n",
                      TraceFormat::kAuto,
                      "line 2: output_tokens: expected a non-negative integer, got '-3'"},
        MalformedCase{"Overflow", "arrival_s,input_tokens,output_tokens\n1,9999999999,3\n",
                      TraceFormat::kAuto,
                      "line 2: input_tokens: expected a non-negative integer, got '9999999999'"},
        MalformedCase{"BadTimestamp",
                      "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-13-16 18:15:46.6,1,1",
                      TraceFormat::kAuto,
                      "line 2: TIMESTAMP: expected 'YYYY-MM-DD HH:MM:SS.fffffff', got "
                      "'2023-13-16 18:15:46.6'"},
        MalformedCase{"MissingField",
                      "TIMESTAMP,ContextTokens,GeneratedTokens\n\n2023-11-16 18:15:46.6,1\n",
                      TraceFormat::kAuto, "line 3: expected 3 comma-separated fields, got 2"},
        MalformedCase{"NegativeArrival", "arrival_s,input_tokens,output_tokens\n-1,2,3\n",
                      TraceFormat::kAuto,
                      "line 2: arrival_s: expected a non-negative number, got '-1'"},
        MalformedCase{"JsonMissingKey",
                      "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n"
                      "{\"timestamp\": 1, \"input_length\": 5}\n",
                      TraceFormat::kAuto, "line 2: missing key \"output_length\""},
        MalformedCase{"JsonTruncated",
                      "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n"
                      "{\"timestamp\": 1, \"input_length\": 5, \"hash_ids\": [1, 2\n",
                      TraceFormat::kAuto, "line 2: malformed JSON: bad value for key \"hash_ids\""},
        MalformedCase{"HashIdsNotIntegers",
                      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, "
                      "\"hash_ids\": [0, -1]}",
                      TraceFormat::kAuto,
                      "line 1: hash_ids: element 1: expected a non-negative integer below 2^64, "
                      "got '-1'"},
        MalformedCase{"HashIdsNotAnArray",
                      "{\"timestamp\": 0, \"input_length\": 600, \"output_length\": 1, "
                      "\"hash_ids\": 3}",
                      TraceFormat::kAuto,
                      "line 1: hash_ids: expected an array of block hashes, got '3'"},
        MalformedCase{"HashIdsMoreThanBlocks",
                      "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 1, "
                      "\"hash_ids\": []}\n"
                      "{\"timestamp\": 0, \"input_length\": 513, \"output_length\": 1, "
                      "\"hash_ids\": [0, 1, 2]}",
                      TraceFormat::kAuto,
                      "line 2: hash_ids: 3 block hashes, but input_length = 513 fills at most 2 "
                      "blocks of 512 tokens"},
        MalformedCase{
            "JsonBadCount", "{\"arrival_s\": 0, \"input_tokens\": 1.5, \"output_tokens\": 1}",
            TraceFormat::kAuto, "line 1: input_tokens: expected a non-negative integer, got '1.5'"},
        MalformedCase{"UnknownHeader", "time,in,out\n1,2,3\n", TraceFormat::kAuto,
                      "line 1: cannot detect the trace format from 'time,in,out': expected an "
                      "Azure CSV header (TIMESTAMP,ContextTokens,GeneratedTokens), a plain CSV "
                      "header (arrival_s,input_tokens,output_tokens), or JSON lines with "
                      "timestamp/input_length/output_length (Mooncake) or "
                      "arrival_s/input_tokens/output_tokens"},
        MalformedCase{"ExplicitFormatMismatch",
                      "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6,1,1",
                      TraceFormat::kPlainCsv,
                      "line 1: header lacks column 'arrival_s': expected "
                      "arrival_s,input_tokens,output_tokens, got "
                      "'TIMESTAMP,ContextTokens,GeneratedTokens'"},
        MalformedCase{"Empty", "\n \r\n", TraceFormat::kAuto,
                      "line 1: trace is empty: expected a header line or one JSON object per "
                      "line"}),
    [](const ::testing::TestParamInfo<MalformedCase>& info) { return info.param.name; });

TEST(TraceParseTest, SkipsAndCountsBadRowsWhenAsked) {
  const std::string text = std::string(kAzureHeader) + kAzureRow +
                           "2023-11-16 18:15:47.0000000,x,44\n" + "garbage\n" + kAzureRow +
                           "2023-11-16 18:15:48.0000000,10,20";
  auto strict = ParseTrace(text, {});
  ASSERT_FALSE(strict.has_value());
  EXPECT_EQ(strict.error().field, "line 3");
  const Trace trace = MustParse(text, TraceReadOptions{TraceFormat::kAuto, true});
  EXPECT_EQ(trace.skipped_rows, 2);
  EXPECT_EQ(trace.first_skipped_row,
            "line 3: ContextTokens: expected a non-negative integer, got 'x'");
  ASSERT_EQ(trace.requests.size(), 3u);
  EXPECT_NEAR(trace.requests[2].arrival_s, 1.3194100, 1e-9);
}

TEST(TraceStatsTest, SummarizesWhatIsReplayed) {
  EXPECT_EQ(SummarizeTrace(Trace{}).requests, 0);
  EXPECT_EQ(SummarizeTrace(Trace{}).mean_input_tokens, 0);
  Trace one;
  one.requests = {{0, 100, 10}};
  EXPECT_EQ(SummarizeTrace(one).rate_per_s, 0);  // one instant has no rate
  EXPECT_EQ(SummarizeTrace(one).mean_output_tokens, 10);
  Trace three;
  three.requests = {{0, 100, 10}, {1, 200, 20}, {4, 600, 60}};
  const TraceStats stats = SummarizeTrace(three);
  EXPECT_EQ(stats.requests, 3);
  EXPECT_DOUBLE_EQ(stats.span_s, 4);
  EXPECT_DOUBLE_EQ(stats.rate_per_s, 0.75);
  EXPECT_DOUBLE_EQ(stats.mean_input_tokens, 300);
  EXPECT_DOUBLE_EQ(stats.mean_output_tokens, 30);
}

TEST(TraceFormatTest, NamesRoundTrip) {
  for (TraceFormat f : {TraceFormat::kAuto, TraceFormat::kAzureCsv, TraceFormat::kMooncakeJsonl,
                        TraceFormat::kPlainCsv, TraceFormat::kPlainJsonl}) {
    auto parsed = ParseTraceFormat(TraceFormatName(f));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, f);
  }
  auto bad = ParseTraceFormat("parquet");
  ASSERT_FALSE(bad.has_value());
  EXPECT_EQ(bad.error().field, "format");
}

// ---- rate scaling and time compression ----

Trace ConvTrace() { return MustParse(ReadDataFile("traces/AzureLLMInferenceTrace_conv.csv")); }

TEST(TraceTransformTest, RateTimesTwentyGivesTwentyTimesTheRequests) {
  const Trace base = ConvTrace();
  const Trace scaled = TransformTrace(base, {.rate_scale = 20, .time_compress = 1, .seed = 7});
  EXPECT_EQ(scaled.requests.size(), 20 * base.requests.size());
  EXPECT_TRUE(IsSortedFromZero(scaled));
  EXPECT_NEAR(MeanRate(scaled), 20 * MeanRate(base), 0.02 * 20 * MeanRate(base));
  EXPECT_EQ(scaled.format, "azure_csv");
}

TEST(TraceTransformTest, FractionalRatesAreMetInExpectation) {
  const Trace base = ConvTrace();
  const double n = static_cast<double>(base.requests.size());
  for (double rate : {0.5, 2.5}) {
    const Trace scaled = TransformTrace(base, {.rate_scale = rate, .time_compress = 1, .seed = 3});
    // Binomial spread: sigma <= sqrt(n)/2 ~ 70 requests; allow ~5 sigma.
    EXPECT_NEAR(static_cast<double>(scaled.requests.size()), rate * n, 350) << rate;
    EXPECT_TRUE(IsSortedFromZero(scaled)) << rate;
  }
}

TEST(TraceTransformTest, SameSeedSameTraceOtherSeedDiffers) {
  const Trace base = ConvTrace();
  const TraceTransform t{.rate_scale = 3.3, .time_compress = 1, .seed = 42};
  const Trace a = TransformTrace(base, t);
  const Trace b = TransformTrace(base, t);
  ASSERT_EQ(a.requests.size(), b.requests.size());
  bool same = true;
  for (size_t i = 0; i < a.requests.size(); ++i) {
    same = same && a.requests[i].arrival_s == b.requests[i].arrival_s &&
           a.requests[i].input_tokens == b.requests[i].input_tokens;
  }
  EXPECT_TRUE(same);
  const Trace c = TransformTrace(base, {.rate_scale = 3.3, .time_compress = 1, .seed = 43});
  EXPECT_TRUE(c.requests.size() != a.requests.size() ||
              c.requests[1].arrival_s != a.requests[1].arrival_s);
}

TEST(TraceTransformTest, SubSamplingKeepsOriginalRequests) {
  const Trace base = MustParse("arrival_s,input_tokens,output_tokens\n0,1,1\n1,2,2\n2,3,3\n3,4,4");
  const Trace half = TransformTrace(base, {.rate_scale = 0.5, .time_compress = 1, .seed = 9});
  for (const TraceRequest& r : half.requests) {
    // Each kept request's tokens identify it; its time relative to the first kept is integral.
    EXPECT_DOUBLE_EQ(r.arrival_s, std::round(r.arrival_s));
  }
  EXPECT_LE(half.requests.size(), 4u);
}

TEST(TraceTransformTest, TimeCompressionDividesArrivals) {
  const Trace base = ConvTrace();
  const Trace fast = TransformTrace(base, {.rate_scale = 1, .time_compress = 4, .seed = 1});
  ASSERT_EQ(fast.requests.size(), base.requests.size());
  EXPECT_DOUBLE_EQ(fast.requests.back().arrival_s, base.requests.back().arrival_s / 4);
  EXPECT_EQ(fast.requests[100].input_tokens, base.requests[100].input_tokens);
  EXPECT_NEAR(MeanRate(fast), 4 * MeanRate(base), 1e-9);
}

// Variance over mean of the request counts in consecutive windows around their local mean (the
// centred average of the 31 windows around each; 5 minutes at 10 s), so that the hour's trend,
// which every scaling multiplies, does not count as noise. 1 for a Poisson process.
double LocalDispersionIndex(const Trace& trace, double window_s) {
  std::vector<double> counts(static_cast<size_t>(trace.requests.back().arrival_s / window_s), 0);
  for (const TraceRequest& r : trace.requests) {
    const auto i = static_cast<size_t>(r.arrival_s / window_s);
    if (i < counts.size()) counts[i] += 1;
  }
  const size_t half = 15;
  double squares = 0, total = 0;
  for (size_t i = half; i + half < counts.size(); ++i) {
    double local = 0;
    for (size_t j = i - half; j <= i + half; ++j) local += counts[j] / (2 * half + 1);
    squares += (counts[i] - local) * (counts[i] - local);
    total += counts[i];
  }
  return squares / total;  // (squares / n) / (total / n)
}

double LargestWindowCount(const Trace& trace, double window_s) {
  std::vector<double> counts(static_cast<size_t>(trace.requests.back().arrival_s / window_s) + 1);
  for (const TraceRequest& r : trace.requests) counts[static_cast<size_t>(r.arrival_s / window_s)]++;
  return *std::max_element(counts.begin(), counts.end());
}

// The conv trace is close to Poisson at 10 s (local index 1.3). Independent streams keep that
// (fluctuations add like independent sources); replicating every request inside its gap
// multiplies the variance by rate^2, so the index grows by the rate.
TEST(TraceTransformTest, StreamsAddFluctuationsLikeIndependentSourcesReplicateMultipliesThem) {
  const Trace base = ConvTrace();
  const Trace streams = TransformTrace(base, {.rate_scale = 20, .seed = 1});
  const Trace replicate =
      TransformTrace(base, {.rate_scale = 20, .seed = 1, .mode = RateScaleMode::kReplicate});
  const double d_base = LocalDispersionIndex(base, 10);
  EXPECT_LT(LocalDispersionIndex(streams, 10), 2 * d_base);
  EXPECT_GT(LocalDispersionIndex(replicate, 10), 10 * d_base);
  // The hour's shape (5-minute counts) is kept by both, within the smoothing of the shifts.
  for (const Trace* scaled : {&streams, &replicate}) {
    EXPECT_NEAR(LargestWindowCount(*scaled, 300), 20 * LargestWindowCount(base, 300),
                0.12 * 20 * LargestWindowCount(base, 300));
  }
}

// The code trace's largest 10 s burst (327 requests) becomes 40 x 327 when replicated; as 40
// independent streams the bursts land at different moments.
TEST(TraceTransformTest, StreamsDoNotStackTheBurstsOfTheCopies) {
  const Trace base = MustParse(ReadDataFile("traces/AzureLLMInferenceTrace_code.csv"));
  const double burst = LargestWindowCount(base, 10);
  const Trace streams = TransformTrace(base, {.rate_scale = 40, .seed = 1});
  const Trace replicate =
      TransformTrace(base, {.rate_scale = 40, .seed = 1, .mode = RateScaleMode::kReplicate});
  EXPECT_GT(LargestWindowCount(replicate, 10), 30 * burst);
  EXPECT_LT(LargestWindowCount(streams, 10), 10 * burst);
  EXPECT_EQ(streams.requests.size(), 40 * base.requests.size());
}

// Each copy is the whole trace moved by one offset within the shift, wrapped into the span
// (here 10 s: arrivals 0..9 plus one mean gap); copy 0 is the trace itself.
TEST(TraceTransformTest, EachStreamIsTheTraceShiftedByOneOffsetWithinTheBound) {
  std::string csv = "arrival_s,input_tokens,output_tokens\n";
  for (int i = 0; i < 10; ++i) csv += fmt::format("{},{},1\n", i, 100 + i);
  const Trace base = MustParse(csv);
  const Trace out = TransformTrace(base, {.rate_scale = 3, .seed = 5, .stream_shift_seconds = 2});
  ASSERT_EQ(out.requests.size(), 30u);
  std::map<int64_t, int> per_request;
  std::set<int64_t> offsets_ms;
  for (const TraceRequest& r : out.requests) {
    const int64_t i = r.input_tokens - 100;
    per_request[i]++;
    double offset = std::fmod(r.arrival_s - static_cast<double>(i) + 15, 10) - 5;  // in [-5, 5)
    EXPECT_LE(std::abs(offset), 2.0 + 1e-9) << i;
    offsets_ms.insert(std::llround(offset * 1000));
  }
  for (const auto& [i, copies] : per_request) EXPECT_EQ(copies, 3) << i;
  EXPECT_EQ(offsets_ms.size(), 3u);  // 0 and one offset per further copy
  EXPECT_TRUE(offsets_ms.contains(0));
}

TEST(TraceTransformTest, RateModeNamesRoundTrip) {
  for (RateScaleMode mode : {RateScaleMode::kStreams, RateScaleMode::kReplicate}) {
    auto parsed = ParseRateScaleMode(RateScaleModeName(mode));
    ASSERT_TRUE(parsed.has_value());
    EXPECT_EQ(*parsed, mode);
  }
  auto bad = ParseRateScaleMode("poisson");
  ASSERT_FALSE(bad.has_value());
  EXPECT_NE(bad.error().message.find("streams or replicate"), std::string::npos);
}

TEST(TraceTransformTest, ValidationNamesTheBadField) {
  EXPECT_TRUE(ValidateTraceTransform({}).has_value());
  auto rate = ValidateTraceTransform({.rate_scale = 0, .time_compress = 1, .seed = 1});
  ASSERT_FALSE(rate.has_value());
  EXPECT_EQ(rate.error().field, "rate_scale");
  auto compress = ValidateTraceTransform({.rate_scale = 1, .time_compress = -2, .seed = 1});
  ASSERT_FALSE(compress.has_value());
  EXPECT_EQ(compress.error().field, "time_compress");
  auto shift = ValidateTraceTransform({.rate_scale = 2, .stream_shift_seconds = 0});
  ASSERT_FALSE(shift.has_value());
  EXPECT_EQ(shift.error().field, "stream_shift_seconds");
}

}  // namespace
}  // namespace gpuscale::sim
