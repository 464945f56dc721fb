#include "api/services_list_json.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "api/json_views.h"

namespace gpuscale::api {
namespace {

// What SendJson writes for the same list: the body ServicesListBody must equal byte for byte.
std::string TreeBody(const std::vector<daemon::ServiceView>& services) {
  Json list = Json::array();
  for (const daemon::ServiceView& s : services) list.push_back(ServiceJson(s));
  return Json{{"services", std::move(list)}}.dump(2, ' ', false, Json::error_handler_t::replace) +
         "\n";
}

daemon::ServiceView Service(const std::string& name, const std::string& spec_yaml) {
  daemon::ServiceView v;
  v.config.name = name;
  v.config.min_replicas = 1;
  v.config.max_replicas = 4;
  v.spec_yaml = spec_yaml;
  v.policy_family = "target";
  v.created_at = Seconds{1700000000};
  return v;
}

TEST(ServicesListBodyTest, AnEmptyListIsTheTreesEmptyArray) {
  EXPECT_EQ(ServicesListBody({}), TreeBody({}));
}

TEST(ServicesListBodyTest, EqualsTheTreeBodyForEveryKindOfField) {
  daemon::ServiceView quiet = Service("quiet", "name: quiet\ncommand: [serve]\nenv: {}\n");
  daemon::ServiceView busy = Service(
      "busy",
      "name: busy\ncommand: [vllm, serve, '7']\nenv: {HF_HOME: /data}\npolicy:\n  family: "
      "target\n  target:\n    metrics: [{name: w, type: AverageValue, average_value: 5}]\n");
  busy.desired_replicas = 3;
  busy.manual_replicas = 3;
  busy.replicas = 2;
  busy.ready_replicas = 1;
  busy.pending_replicas = 1;
  busy.last_reason = "scale 2 -> 3: \"quoted\",\nnewline and bad UTF-8 \xff here";
  busy.last_details = {"w = 7 (average of 2 replicas)", "{not json}"};
  busy.last_decision_at = Seconds{1700000100.5};
  busy.metric_errors = {"replica r1: connection refused"};
  daemon::GatewayFigures gateway;
  gateway.requests_total = 12;
  gateway.request_rate = 0.4;
  busy.gateway = gateway;
  daemon::ServiceView unparsable = Service("odd", "{ this is: [not yaml");
  daemon::ServiceView no_spec = Service("empty", "");

  const std::vector<daemon::ServiceView> services = {quiet, busy, unparsable, no_spec};
  EXPECT_EQ(ServicesListBody(services), TreeBody(services));
  // Twice: the second time every spec comes from the cache.
  EXPECT_EQ(ServicesListBody(services), TreeBody(services));
  EXPECT_EQ(ServicesListBody({busy}), TreeBody({busy}));
}

}  // namespace
}  // namespace gpuscale::api
