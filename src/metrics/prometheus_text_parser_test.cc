#include "metrics/prometheus_text_parser.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/numbers.h"

namespace gpuscale::metrics {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ReadFixture(const std::string& name) {
  std::ifstream in(std::string(GPUSCALE_SOURCE_DIR) + "/src/metrics/testdata/" + name);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

struct ValidCase {
  std::string scenario;
  std::string text;
  std::string name;
  std::vector<Label> labels;
  double value;
  std::optional<int64_t> timestamp_ms;
};

class ValidSampleTest : public ::testing::TestWithParam<ValidCase> {};

TEST_P(ValidSampleTest, ParsesTheOneSample) {
  const ValidCase& c = GetParam();
  Result<Exposition> parsed = ParsePrometheusText(c.text);
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  ASSERT_EQ(parsed->SampleCount(), 1u);
  const Sample& sample = parsed->families.back().samples.at(0);
  EXPECT_EQ(sample.name, c.name);
  EXPECT_EQ(sample.labels, c.labels);
  if (std::isnan(c.value)) {
    EXPECT_TRUE(std::isnan(sample.value));
  } else {
    EXPECT_EQ(sample.value, c.value);
  }
  EXPECT_EQ(sample.timestamp_ms, c.timestamp_ms);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, ValidSampleTest,
    ::testing::Values(
        ValidCase{"NoLabels", "foo 1\n", "foo", {}, 1, std::nullopt},
        ValidCase{"EmptyLabelSet", "foo{} 2", "foo", {}, 2, std::nullopt},
        ValidCase{"ColonName",
                  "vllm:num_requests_running{model_name=\"m\"} 3",
                  "vllm:num_requests_running",
                  {{"model_name", "m"}},
                  3,
                  std::nullopt},
        ValidCase{"LabelEscapes",
                  R"(foo{path="C:\\dir\"x\"\nnext"} 1)",
                  "foo",
                  {{"path", "C:\\dir\"x\"\nnext"}},
                  1,
                  std::nullopt},
        ValidCase{"TrailingComma", "foo{a=\"1\",} 2", "foo", {{"a", "1"}}, 2, std::nullopt},
        ValidCase{"BlanksEverywhere",
                  "  foo { a = \"1\" ,\tb=\"2\" }   2.5 \t 1700000000000  ",
                  "foo",
                  {{"a", "1"}, {"b", "2"}},
                  2.5,
                  1700000000000},
        ValidCase{"SeparatorsInsideQuotes",
                  "foo{a=\"x}, y=\\\"z\\\"\"} 1",
                  "foo",
                  {{"a", "x}, y=\"z\""}},
                  1,
                  std::nullopt},
        ValidCase{
            "Utf8Value", "foo{model=\"模型\"} 1", "foo", {{"model", "模型"}}, 1, std::nullopt},
        ValidCase{"NaN", "foo NaN", "foo", {}, std::nan(""), std::nullopt},
        ValidCase{"PlusInf", "foo +Inf", "foo", {}, kInf, std::nullopt},
        ValidCase{"MinusInf", "foo -Inf", "foo", {}, -kInf, std::nullopt},
        ValidCase{"Exponent", "foo 1.234567e+06", "foo", {}, 1234567, std::nullopt},
        ValidCase{"NegativeFraction", "foo -0.5", "foo", {}, -0.5, std::nullopt},
        ValidCase{"LeadingPlus", "foo +1.5", "foo", {}, 1.5, std::nullopt},
        ValidCase{"NegativeTimestamp", "foo 1 -1000", "foo", {}, 1, -1000},
        ValidCase{"Crlf", "foo 4\r\n", "foo", {}, 4, std::nullopt},
        ValidCase{"CommentsAndBlankLines",
                  "# a comment\n\n   \n#\nfoo 5\n# HELPER x\n",
                  "foo",
                  {},
                  5,
                  std::nullopt}),
    [](const auto& info) { return info.param.scenario; });

struct MalformedCase {
  std::string scenario;
  std::string text;
  int line;
  std::string message;
};

class MalformedTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(MalformedTest, FailsWithLineNumberAndCause) {
  const MalformedCase& c = GetParam();
  Result<Exposition> parsed = ParsePrometheusText(c.text);
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(parsed.error().field, "line " + std::to_string(c.line));
  EXPECT_THAT(parsed.error().ToString(),
              HasSubstr("line " + std::to_string(c.line) + ": " + c.message));
}

TEST_P(MalformedTest, SkipModeCountsTheLineAndKeepsTheRest) {
  const MalformedCase& c = GetParam();
  Result<Exposition> parsed =
      ParsePrometheusText(c.text + "\ngood_metric 7\n", ParseOptions{.skip_bad_lines = true});
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_EQ(parsed->skipped_lines, 1);
  ASSERT_EQ(parsed->line_errors.size(), 1u);
  EXPECT_EQ(parsed->line_errors[0].field, "line " + std::to_string(c.line));
  const MetricFamily* good = parsed->FindFamily("good_metric");
  ASSERT_NE(good, nullptr);
  EXPECT_EQ(good->samples.at(0).value, 7);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, MalformedTest,
    ::testing::Values(
        MalformedCase{"MissingEquals", "# HELP foo ok\n# TYPE foo gauge\nfoo{model \"x\"} 1", 3,
                      "expected '=' after label name 'model'"},
        MalformedCase{"MissingValue", "foo", 1, "missing value for 'foo'"},
        MalformedCase{"MissingValueAfterLabels", "foo{a=\"1\"}", 1, "missing value for 'foo'"},
        MalformedCase{"BadValue", "ok 1\nfoo bar", 2, "invalid value 'bar'"},
        MalformedCase{"ValueOutOfRange", "foo 1e999", 1, "invalid value '1e999'"},
        MalformedCase{"DoubleSign", "foo +-1", 1, "invalid value '+-1'"},
        MalformedCase{"BadTimestamp", "foo 1 abc", 1, "invalid timestamp 'abc'"},
        MalformedCase{"FractionalTimestamp", "foo 1 1.5", 1, "invalid timestamp '1.5'"},
        MalformedCase{"TextAfterTimestamp", "foo 1 2 3", 1,
                      "unexpected text '3' after the timestamp of 'foo'"},
        MalformedCase{"UnterminatedValue", "foo{a=\"x} 1", 1, "unterminated value of label 'a'"},
        MalformedCase{"InvalidEscape", "foo{a=\"\\t\"} 1", 1, "invalid escape '\\t'"},
        MalformedCase{"UnquotedValue", "foo{a=x} 1", 1,
                      "expected '\"' to open the value of label 'a'"},
        MalformedCase{"BadLabelName", "foo{1a=\"x\"} 1", 1, "expected a label name or '}'"},
        MalformedCase{"MissingComma", "foo{a=\"1\" b=\"2\"} 1", 1,
                      "expected ',' or '}' after the value of label 'a'"},
        MalformedCase{"UnclosedLabelSet", "foo{a=\"1\"", 1,
                      "expected ',' or '}' after the value of label 'a'"},
        MalformedCase{"DuplicateLabel", "foo{a=\"1\",a=\"2\"} 1", 1, "duplicate label 'a'"},
        MalformedCase{"NameStartsWithDigit", "1foo 1", 1, "invalid metric name '1foo'"},
        MalformedCase{"NoName", "{a=\"1\"} 1", 1, "expected a metric name"},
        MalformedCase{"BadCharInName", "foo$ 1", 1, "unexpected character '$' after 'foo'"},
        MalformedCase{"NulByte", std::string("foo\0 1", 6), 1, "unexpected character '?'"},
        MalformedCase{"UnknownType", "# TYPE foo gauges", 1, "unknown metric type 'gauges'"},
        MalformedCase{"TypeWithoutType", "# TYPE foo", 1, "unknown metric type ''"},
        MalformedCase{"TextAfterType", "# TYPE foo gauge extra", 1, "unexpected text 'extra'"},
        MalformedCase{"BadTypeName", "# TYPE 1foo gauge", 1,
                      "expected a metric name after '# TYPE'"},
        MalformedCase{"HelpWithoutName", "# HELP", 1, "expected a metric name after '# HELP'"},
        MalformedCase{"SecondType", "# TYPE foo gauge\n# TYPE foo counter", 2,
                      "second TYPE line for 'foo'"},
        MalformedCase{"TypeAfterSamples", "foo 1\n# TYPE foo gauge", 2,
                      "TYPE line for 'foo' must come before its samples"},
        MalformedCase{"SecondHelp", "# HELP foo a\n# HELP foo b", 2, "second HELP line for 'foo'"},
        MalformedCase{"BucketWithoutLe", "# TYPE h histogram\nh_bucket 1", 2,
                      "histogram bucket 'h_bucket' has no 'le' label"},
        MalformedCase{"BucketWithBadLe", "# TYPE h histogram\r\nh_bucket{le=\"abc\"} 1", 2,
                      "invalid 'le' value 'abc' in 'h_bucket'"}),
    [](const auto& info) { return info.param.scenario; });

TEST(PrometheusTextParserTest, GroupsHistogramSamplesUnderTheirFamily) {
  Result<Exposition> parsed = ParsePrometheusText(
      "# HELP lat Latency.\n# TYPE lat histogram\n"
      "lat_bucket{le=\"0.5\"} 1\nlat_bucket{le=\"+Inf\"} 3\nlat_sum 2.5\nlat_count 3\n"
      "# TYPE q summary\nq{quantile=\"0.5\"} 0.2\nq_sum 1\nq_count 4\n"
      "# TYPE reqs counter\nreqs_total 10\nlone 1\n");
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  ASSERT_EQ(parsed->families.size(), 4u);
  EXPECT_EQ(parsed->families[0].name, "lat");
  EXPECT_EQ(parsed->families[0].type, MetricType::kHistogram);
  EXPECT_EQ(parsed->families[0].help, "Latency.");
  EXPECT_EQ(parsed->families[0].samples.size(), 4u);
  EXPECT_EQ(parsed->families[1].type, MetricType::kSummary);
  EXPECT_EQ(parsed->families[1].samples.size(), 3u);
  EXPECT_EQ(parsed->families[2].type, MetricType::kCounter);
  EXPECT_EQ(parsed->families[2].samples.at(0).name, "reqs_total");
  EXPECT_EQ(parsed->families[3].name, "lone");
  EXPECT_EQ(parsed->families[3].type, MetricType::kUntyped);
}

TEST(PrometheusTextParserTest, ReturnsToAnEarlierFamilyWhenSamplesInterleave) {
  Result<Exposition> parsed =
      ParsePrometheusText("# TYPE a gauge\n# TYPE b gauge\na{x=\"1\"} 1\nb 2\na{x=\"2\"} 3\n");
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  ASSERT_EQ(parsed->families.size(), 2u);
  EXPECT_EQ(parsed->families[0].samples.size(), 2u);
  EXPECT_EQ(parsed->families[1].samples.size(), 1u);
}

TEST(PrometheusTextParserTest, TypeLineMakesItsFamilyCurrent) {
  // Without this, `h_bucket 2` would join histogram `h` (whose samples came just before) and
  // fail for lack of an `le` label, although it was declared as its own gauge.
  Result<Exposition> parsed =
      ParsePrometheusText("# TYPE h histogram\nh_sum 1\n# TYPE h_bucket gauge\nh_bucket 2\n");
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  ASSERT_EQ(parsed->families.size(), 2u);
  EXPECT_EQ(parsed->families[1].name, "h_bucket");
  EXPECT_EQ(parsed->families[1].samples.size(), 1u);
}

TEST(PrometheusTextParserTest, UnescapesHelpText) {
  Result<Exposition> parsed = ParsePrometheusText("# HELP foo Line one\\nback\\\\slash \\q\n");
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  ASSERT_EQ(parsed->families.size(), 1u);
  EXPECT_EQ(parsed->families[0].help, "Line one\nback\\slash \\q");
}

TEST(PrometheusTextParserTest, SkipModeKeepsOnlyTheFirstErrors) {
  std::string text;
  for (int i = 0; i < 20; ++i) text += "bad{ 1\nok_" + std::to_string(i) + " 1\n";
  Result<Exposition> parsed =
      ParsePrometheusText(text, ParseOptions{.skip_bad_lines = true, .max_kept_errors = 3});
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_EQ(parsed->skipped_lines, 20);
  ASSERT_EQ(parsed->line_errors.size(), 3u);
  EXPECT_EQ(parsed->line_errors[2].field, "line 5");
  EXPECT_EQ(parsed->SampleCount(), 20u);
}

TEST(PrometheusTextParserTest, EmptyInputHasNoFamilies) {
  Result<Exposition> parsed = ParsePrometheusText("");
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->families.empty());
}

TEST(PrometheusTextParserTest, ErrorMessagesQuoteBinaryInputSafely) {
  Result<Exposition> parsed = ParsePrometheusText("foo \x01\xff" + std::string(100, 'x'));
  ASSERT_FALSE(parsed);
  const std::string message = parsed.error().message;
  EXPECT_THAT(message, HasSubstr("'??xxx"));
  EXPECT_THAT(message, HasSubstr("...'"));
  EXPECT_LT(message.size(), 120u);
}

TEST(PrometheusTextParserTest, ParsesRealisticVllmExposition) {
  const std::string text = ReadFixture("vllm_metrics.txt");
  ASSERT_FALSE(text.empty()) << "fixture missing";
  Result<Exposition> parsed = ParsePrometheusText(text);
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  const MetricFamily* e2e = parsed->FindFamily("vllm:e2e_request_latency_seconds");
  ASSERT_NE(e2e, nullptr);
  EXPECT_EQ(e2e->type, MetricType::kHistogram);
  EXPECT_EQ(e2e->samples.size(), 22u + 2u);  // 21 bounds + +Inf, _count, _sum
  const MetricFamily* ttft = parsed->FindFamily("vllm:time_to_first_token_seconds");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->samples.size(), 23u + 2u);
  const MetricFamily* tokens = parsed->FindFamily("vllm:prompt_tokens_total");
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->type, MetricType::kCounter);
  EXPECT_EQ(tokens->samples.at(0).value, 1234567);
  const MetricFamily* info = parsed->FindFamily("vllm:cache_config_info");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(*info->samples.at(0).FindLabel("num_gpu_blocks"), "27153");
  const MetricFamily* gc = parsed->FindFamily("python_gc_objects_collected_total");
  ASSERT_NE(gc, nullptr);
  EXPECT_THAT(gc->samples, ::testing::SizeIs(3));
  EXPECT_EQ(parsed->families.size(), 22u);
}

// vLLM 0.12 (v1 engine): every family carries an engine label, and prometheus_client adds a
// `_created` gauge family after each counter and histogram.
TEST(PrometheusTextParserTest, ParsesVllm012Exposition) {
  const std::string text = ReadFixture("vllm_0_12_metrics.txt");
  ASSERT_FALSE(text.empty()) << "fixture missing";
  Result<Exposition> parsed = ParsePrometheusText(text);  // strict: no line may be skipped
  ASSERT_TRUE(parsed) << parsed.error().ToString();
  EXPECT_EQ(parsed->families.size(), 56u);
  const std::vector<std::pair<std::string, MetricType>> families = {
      {"vllm:kv_cache_usage_perc", MetricType::kGauge},
      {"vllm:request_success_total", MetricType::kCounter},
      {"vllm:request_success_created", MetricType::kGauge},
      {"vllm:inter_token_latency_seconds", MetricType::kHistogram},
      {"vllm:request_time_per_output_token_seconds", MetricType::kHistogram},
      {"vllm:request_prompt_tokens", MetricType::kHistogram},
  };
  for (const auto& [name, type] : families) {
    const MetricFamily* family = parsed->FindFamily(name);
    ASSERT_NE(family, nullptr) << name;
    EXPECT_EQ(family->type, type) << name;
    for (const Sample& sample : family->samples) {
      ASSERT_NE(sample.FindLabel("engine"), nullptr) << sample.name;
      EXPECT_EQ(*sample.FindLabel("engine"), "0");
    }
  }
  EXPECT_EQ(parsed->FindFamily("vllm:request_success_total")->samples.size(), 4u);
  EXPECT_EQ(parsed->FindFamily("vllm:gpu_cache_usage_perc"), nullptr);
  EXPECT_EQ(parsed->FindFamily("vllm:time_per_output_token_seconds"), nullptr);
  // 1-2-5 token buckets up to max_model_len 8192: 12 bounds, +Inf, _count, _sum.
  EXPECT_EQ(parsed->FindFamily("vllm:request_prompt_tokens")->samples.size(), 15u);
}

// A reader that needs a few families gets exactly those, as a full parse has them, and the
// lines of the others are passed over unchecked (a broken one costs nothing).
TEST(PrometheusTextParserTest, OnlyFamiliesKeepsTheListedOnesWhole) {
  const std::string text =
      "# HELP waiting Requests waiting.\n# TYPE waiting gauge\nwaiting{m=\"a\"} 3\n"
      "# TYPE lat histogram\nlat_bucket{le=\"1\"} 2\nlat_bucket{le=\"+Inf\"} 5\n"
      "lat_sum 7\nlat_count 5\n"
      "# TYPE other gauge\nother{broken 1\n"
      "# TYPE done counter\ndone_total 9\ndone_created 1.7e9\n";
  const std::set<std::string, std::less<>> wanted = {"waiting", "lat", "done"};
  ParseOptions options;
  options.only_families = &wanted;
  Result<Exposition> parsed = ParsePrometheusText(text, options);
  ASSERT_TRUE(parsed.has_value()) << parsed.error().ToString();
  // done_created is a family of its own, as in a full parse (a counter's samples are _total).
  ASSERT_EQ(parsed->families.size(), 4u);
  EXPECT_NE(parsed->FindFamily("done_created"), nullptr);
  EXPECT_EQ(parsed->FindFamily("waiting")->help, "Requests waiting.");
  EXPECT_EQ(parsed->FindFamily("waiting")->samples[0].value, 3);
  EXPECT_EQ(parsed->FindFamily("lat")->type, MetricType::kHistogram);
  EXPECT_EQ(parsed->FindFamily("lat")->samples.size(), 4u);
  EXPECT_EQ(parsed->FindFamily("done")->samples.size(), 1u);
  EXPECT_EQ(parsed->FindFamily("other"), nullptr);
  EXPECT_EQ(parsed->skipped_lines, 0);
  // Without the filter the broken line fails the parse.
  EXPECT_FALSE(ParsePrometheusText(text).has_value());
}

TEST(PrometheusValueTest, AcceptsTheFormatsSpecialValues) {
  EXPECT_TRUE(std::isnan(*ParsePrometheusValue("NaN")));
  EXPECT_EQ(*ParsePrometheusValue("+Inf"), kInf);
  EXPECT_EQ(*ParsePrometheusValue("-Inf"), -kInf);
  EXPECT_EQ(*ParsePrometheusValue("+inf"), kInf);  // Go's ParseFloat is case-insensitive
  EXPECT_EQ(*ParsePrometheusValue("0.3"), 0.3);
  EXPECT_FALSE(ParsePrometheusValue(""));
  EXPECT_FALSE(ParsePrometheusValue("+"));
  EXPECT_FALSE(ParsePrometheusValue("1.0x"));
  EXPECT_FALSE(ParsePrometheusValue("0x10"));
}

}  // namespace
}  // namespace gpuscale::metrics
