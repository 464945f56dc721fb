#include "metrics/prometheus_response.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <ostream>
#include <string>

namespace gpuscale::metrics {
namespace {

using ::testing::HasSubstr;

struct ParseCase {
  const char* name;
  const char* body;
  std::optional<double> value;  // expected value, when the parse succeeds
  ErrorCode code;               // expected error code otherwise
  const char* message;          // substring of the error's ToString()
};

constexpr ErrorCode kOk = ErrorCode::kInternal;  // unused when `value` is set

const ParseCase kParseCases[] = {
    {"Scalar", R"({"status":"success","data":{"resultType":"scalar","result":[1700000000.1,"3"]}})",
     3.0, kOk, ""},
    {"VectorOneSample",
     R"({"status":"success","data":{"resultType":"vector","result":[
         {"metric":{"job":"vllm"},"value":[1700000000.123,"12.5"]}]}})",
     12.5, kOk, ""},
    {"VectorNoSamples", R"({"status":"success","data":{"resultType":"vector","result":[]}})",
     std::nullopt, ErrorCode::kNotFound, "query returned no samples"},
    {"VectorTwoSamples",
     R"({"status":"success","data":{"resultType":"vector","result":[
         {"metric":{"pod":"a"},"value":[1,"1"]},{"metric":{"pod":"b"},"value":[1,"2"]}]}})",
     std::nullopt, ErrorCode::kInvalidArgument,
     "query returned 2 samples, expected one; "
     "aggregate it, e.g. sum(...)"},
    {"Exponent", R"({"status":"success","data":{"resultType":"scalar","result":[1,"1e3"]}})",
     1000.0, kOk, ""},
    {"Matrix",
     R"({"status":"success","data":{"resultType":"matrix","result":[
         {"metric":{},"values":[[1,"1"],[2,"2"]]}]}})",
     std::nullopt, ErrorCode::kInvalidArgument, "query: query returned a matrix"},
    {"String", R"({"status":"success","data":{"resultType":"string","result":[1,"abc"]}})",
     std::nullopt, ErrorCode::kInvalidArgument, "query returned a string"},
    {"ErrorStatus", R"({"status":"error","errorType":"bad_data","error":"parse error at char 4"})",
     std::nullopt, ErrorCode::kUnavailable, "bad_data: parse error at char 4"},
    {"MalformedJson", R"({"status":"success","data":)", std::nullopt, ErrorCode::kInvalidArgument,
     "not valid JSON"},
    {"Empty", "", std::nullopt, ErrorCode::kInvalidArgument, "not valid JSON"},
    {"NotAnObject", "[1,2]", std::nullopt, ErrorCode::kInvalidArgument, "status"},
    {"StatusNumber", R"({"status":1})", std::nullopt, ErrorCode::kInvalidArgument, "status"},
    {"DataMissing", R"({"status":"success"})", std::nullopt, ErrorCode::kInvalidArgument,
     "data: unexpected Prometheus API response"},
    {"ResultTypeNumber", R"({"status":"success","data":{"resultType":3,"result":[]}})",
     std::nullopt, ErrorCode::kInvalidArgument, "data.resultType"},
    {"ResultMissing", R"({"status":"success","data":{"resultType":"vector"}})", std::nullopt,
     ErrorCode::kInvalidArgument, "data.result"},
    {"VectorNotList", R"({"status":"success","data":{"resultType":"vector","result":{}}})",
     std::nullopt, ErrorCode::kInvalidArgument, "data.result"},
    {"ValueNumberNotString",
     R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,3]}]}})",
     std::nullopt, ErrorCode::kInvalidArgument, "data.result[0].value"},
    {"ValueMissing",
     R"({"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}})",
     std::nullopt, ErrorCode::kInvalidArgument, "data.result[0]"},
    {"ValueNotNumberText",
     R"({"status":"success","data":{"resultType":"scalar","result":[1,"seven"]}})", std::nullopt,
     ErrorCode::kInvalidArgument, "data.result"},
    {"ScalarShortPair", R"({"status":"success","data":{"resultType":"scalar","result":[1]}})",
     std::nullopt, ErrorCode::kInvalidArgument, "data.result"},
    {"SampleNotObject", R"({"status":"success","data":{"resultType":"vector","result":["x"]}})",
     std::nullopt, ErrorCode::kInvalidArgument, "data.result[0]"},
};

void PrintTo(const ParseCase& c, std::ostream* os) { *os << c.name; }

class ParseQueryResponseTest : public ::testing::TestWithParam<ParseCase> {};

TEST_P(ParseQueryResponseTest, ReducesOrExplains) {
  const ParseCase& c = GetParam();
  Result<double> got = ParsePrometheusQueryResponse(c.body);
  if (c.value) {
    ASSERT_TRUE(got) << got.error().ToString();
    EXPECT_DOUBLE_EQ(*got, *c.value);
  } else {
    ASSERT_FALSE(got) << "value " << *got;
    EXPECT_EQ(got.error().code, c.code) << got.error().ToString();
    EXPECT_THAT(got.error().ToString(), HasSubstr(c.message));
  }
}

INSTANTIATE_TEST_SUITE_P(Bodies, ParseQueryResponseTest, ::testing::ValuesIn(kParseCases),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(ParseQueryResponseTest, NanAndInfinityAreReturnedAsTheyAre) {
  auto nan = ParsePrometheusQueryResponse(
      R"({"status":"success","data":{"resultType":"vector","result":[{"value":[1,"NaN"]}]}})");
  ASSERT_TRUE(nan);
  EXPECT_TRUE(std::isnan(*nan));
  auto inf = ParsePrometheusQueryResponse(
      R"({"status":"success","data":{"resultType":"scalar","result":[1,"+Inf"]}})");
  ASSERT_TRUE(inf);
  EXPECT_TRUE(std::isinf(*inf) && *inf > 0);
  auto minus = ParsePrometheusQueryResponse(
      R"({"status":"success","data":{"resultType":"scalar","result":[1,"-Inf"]}})");
  ASSERT_TRUE(minus);
  EXPECT_TRUE(std::isinf(*minus) && *minus < 0);
}

TEST(PrometheusServerErrorTest, NamesTheErrorTypeOrQuotesABodyThatIsNotJson) {
  EXPECT_EQ(PrometheusServerError(R"({"status":"error","errorType":"bad_data","error":"x"})"),
            "bad_data: x");
  EXPECT_EQ(PrometheusServerError(R"({"status":"error","error":"busy"})"), "busy");
  EXPECT_EQ(PrometheusServerError(R"({"status":"error"})"), "no error message");
  EXPECT_EQ(PrometheusServerError("<html>502 Bad Gateway</html>"), "<html>502 Bad Gateway</html>");
  EXPECT_EQ(PrometheusServerError(std::string(300, 'x')).size(), 200u);
}

}  // namespace
}  // namespace gpuscale::metrics
