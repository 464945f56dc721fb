#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "serve_config/daemon_config.h"

namespace gpuscale::daemon {
namespace {

using ::testing::HasSubstr;

constexpr char kService[] = R"(
name: chat
command: [vllm, serve, m, --port, "{port}"]
max_replicas: 6
)";

Result<ServiceConfig> Parse(const std::string& extra) {
  return ParseServiceConfigText(std::string(kService) + extra, "test");
}

std::string ErrorOf(const Result<ServiceConfig>& r) { return r ? "ok" : r.error().ToString(); }

TEST(DaemonConfigVariantsTest, ReadsVariantsAndWritesThemBack) {
  auto s = Parse(
      "variants:\n"
      "  - {name: h100, gpu_type: H100-80GB, gpus_per_replica: 2, capacity: 2.5}\n"
      "  - {name: a100-spot, gpu_type: A100-80GB, spot: true, preemption_notice_seconds: 30}\n");
  ASSERT_TRUE(s) << ErrorOf(s);
  ASSERT_EQ(s->variants.size(), 2u);
  EXPECT_EQ(s->variants[0], (VariantConfig{"h100", "H100-80GB", 2, 2.5, false, Seconds{120}}));
  EXPECT_EQ(s->variants[1], (VariantConfig{"a100-spot", "A100-80GB", 1, 1.0, true, Seconds{30}}));
  EXPECT_EQ(s->gpus_per_replica, 2);  // the first variant's
  auto back = ParseServiceConfigText(ServiceConfigToYaml(*s), "back");
  ASSERT_TRUE(back) << ErrorOf(back) << "\n" << ServiceConfigToYaml(*s);
  EXPECT_EQ(*back, *s);
}

// Each mistake names its field: the checks shared with the simulator's reader and the
// daemon's own.
TEST(DaemonConfigVariantsTest, ErrorsNameTheField) {
  const struct {
    std::string yaml;
    std::string error;
  } cases[] = {
      {"variants: []\n", "variants: expected a non-empty list"},
      {"variants:\n  - {name: a, gpu_type: A100-80GB, price_per_gpu_hour: 2}\n",
       "variants[0].price_per_gpu_hour: unknown field"},
      {"variants:\n  - {name: a, gpu_type: \"A 100\"}\n",
       "variants[0].gpu_type: expected a GPU type key"},
      {"variants:\n  - {name: a}\n", "variants[0].gpu_type"},
      {"variants:\n  - {name: a, gpu_type: A100-80GB, gpus_per_replica: 0}\n",
       "variants[0].gpus_per_replica: must be >= 1"},
      {"variants:\n  - {name: a, gpu_type: A100-80GB, preemption_notice_seconds: 5}\n",
       "variants[0].preemption_notice_seconds: only a spot variant"},
      {"variants:\n  - {name: a, gpu_type: A100-80GB}\n  - {name: a, gpu_type: H100-80GB}\n",
       "variants[1].name: duplicate variant name 'a'"},
      {"variants:\n  - {name: A_1, gpu_type: A100-80GB}\n", "variants[0].name: expected 1-32"},
      {"variants:\n  - {name: a, gpu_type: A100-80GB, capacity: 0}\n",
       "variants[0].capacity: must be in (0, 1e6]"},
      {"gpus_per_replica: 2\nvariants:\n  - {name: a, gpu_type: A100-80GB}\n",
       "gpus_per_replica: give gpus_per_replica per variant"},
      {"gpu_type: A100-80GB\nvariants:\n  - {name: a, gpu_type: A100-80GB}\n",
       "gpu_type: give gpu_type per variant"},
      {"engine: fleet\nfleet: {url: \"http://127.0.0.1:1\"}\ngpus_per_replica: 0\n"
       "variants:\n  - {name: a, gpu_type: A100-80GB}\n",
       "variants: places the replicas of a local"},
  };
  for (const auto& c : cases) {
    EXPECT_THAT(ErrorOf(Parse(c.yaml)), HasSubstr(c.error)) << c.yaml;
  }
}

}  // namespace
}  // namespace gpuscale::daemon
