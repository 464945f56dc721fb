#include "workload/bench_options.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace gpuscale::loadgen {
namespace {

TEST(BenchOptionsTest, ValidationNamesTheFlag) {
  const std::vector<std::pair<void (*)(BenchOptions&), std::string>> cases = {
      {[](BenchOptions& o) { o.url = "localhost:8000"; }, "--url"},
      {[](BenchOptions& o) { o.concurrency = 0; }, "--concurrency"},
      {[](BenchOptions& o) { o.duration_seconds = 0; }, "--duration"},
      {[](BenchOptions& o) { o.drain_timeout_seconds = -1; }, "--drain-timeout"},
      {[](BenchOptions& o) { o.client.read_timeout_seconds = 0; }, "--request-timeout"},
      {[](BenchOptions& o) { o.workload.input.mean_tokens = 0; }, "--input-tokens"},
  };
  for (const auto& [mutate, flag] : cases) {
    BenchOptions options;
    options.url = "http://127.0.0.1:1";
    ASSERT_TRUE(ValidateBenchOptions(options).has_value());
    mutate(options);
    Status status = ValidateBenchOptions(options);
    ASSERT_FALSE(status.has_value()) << flag;
    EXPECT_EQ(status.error().field, flag);
  }
}

}  // namespace
}  // namespace gpuscale::loadgen
