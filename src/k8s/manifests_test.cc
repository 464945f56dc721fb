#include "k8s/manifests.h"

#include <gtest/gtest.h>

#include <string>

#include "k8s/document.h"

namespace gpuscale::k8s {
namespace {

ManifestSpec BasicSpec() {
  ManifestSpec spec;
  spec.workload.name = "chat";
  spec.workload.argv = {"vllm",         "serve", "m", "--port", "{port}", "--name={replica}",
                        "--gpus={gpus}"};
  spec.workload.command_is_program = true;
  spec.workload.gpus_per_replica = 2;
  spec.workload.container_port = 9000;
  spec.scaling.target.min_replicas = 1;
  spec.scaling.target.max_replicas = 4;
  scale::TargetMetric m;
  m.name = "q";
  m.query = "sum(vllm:num_requests_waiting)";
  m.target = 10;
  spec.scaling.target.metrics = {m};
  return spec;
}

std::string Render(const ManifestSpec& spec) {
  Result<std::vector<Value>> docs = RenderManifests(spec);
  EXPECT_TRUE(docs) << docs.error().ToString();
  return docs ? ToYamlDocuments(*docs) : std::string();
}

TEST(DocumentTest, QuotesStringsThatYamlWouldRetype) {
  Value v = Value::Of({{"port", 80},
                       {"port_text", "80"},
                       {"yes", "yes"},
                       {"empty", ""},
                       {"float", "0.5"},
                       {"plain", "vllm"},
                       {"flag", true}});
  EXPECT_EQ(ToYaml(v),
            "port: 80\nport_text: \"80\"\nyes: \"yes\"\nempty: \"\"\nfloat: \"0.5\"\n"
            "plain: vllm\nflag: true\n");
}

TEST(DocumentTest, JsonKeepsTypesAndEscapes) {
  Value v = Value::Of({{"a", Value::List{1, "x\"y", 0.25}}, {"b", Value::MakeMap()}});
  EXPECT_EQ(ToJson(v), "{\n  \"a\": [\n    1,\n    \"x\\\"y\",\n    0.25\n  ],\n  \"b\": {}\n}\n");
}

TEST(ManifestsTest, ExpandsPlaceholdersForThePod) {
  const std::string yaml = Render(BasicSpec());
  EXPECT_NE(yaml.find("- \"9000\""), std::string::npos) << yaml;          // {port}
  EXPECT_NE(yaml.find("--name=$(POD_NAME)"), std::string::npos) << yaml;  // {replica}
  EXPECT_NE(yaml.find("fieldPath: metadata.name"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("--gpus=0,1"), std::string::npos) << yaml;  // {gpus}
  EXPECT_NE(yaml.find("nvidia.com/gpu: 2"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("command:\n            - vllm"), std::string::npos) << yaml;
}

TEST(ManifestsTest, ExternalTriggerUsesPassThroughBehavior) {
  ManifestSpec spec = BasicSpec();
  spec.scaling.kind = TriggerKind::kExternal;
  spec.scaling.scaler_address = "gpuscale.ops:9443";
  spec.scaling.service = "chat";
  const std::string yaml = Render(spec);
  EXPECT_NE(yaml.find("type: external"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("scalerAddress: gpuscale.ops:9443"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("service: chat"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("cooldownPeriod: 0"), std::string::npos) << yaml;
  EXPECT_EQ(yaml.find("prometheus"), std::string::npos) << yaml;
}

TEST(ManifestsTest, RejectsWhatKubernetesWould) {
  struct Case {
    const char* what;
    void (*mutate)(ManifestSpec&);
    const char* field;
  };
  const Case cases[] = {
      {"underscore name", [](ManifestSpec& s) { s.workload.name = "my_chat"; }, "name"},
      {"port 0", [](ManifestSpec& s) { s.workload.container_port = 0; }, "container_port"},
      {"typo placeholder", [](ManifestSpec& s) { s.workload.argv.push_back("{prot}"); },
       "command[7]"},
      {"no query", [](ManifestSpec& s) { s.scaling.target.metrics[0].query.clear(); },
       "metrics[0].query"},
      {"utilization",
       [](ManifestSpec& s) {
         s.scaling.target.metrics[0].type = scale::MetricTargetType::kUtilization;
       },
       "metrics[0].type"},
      {"fractional window",
       [](ManifestSpec& s) {
         s.scaling.target.behavior.scale_up.stabilization_window_seconds = 1.5;
       },
       "behavior.scale_up.stabilization_window_seconds"},
      {"external without address", [](ManifestSpec& s) { s.scaling.kind = TriggerKind::kExternal; },
       "--scaler-address"},
  };
  for (const Case& c : cases) {
    ManifestSpec spec = BasicSpec();
    c.mutate(spec);
    Result<std::vector<Value>> docs = RenderManifests(spec);
    ASSERT_FALSE(docs) << c.what;
    EXPECT_EQ(docs.error().code, ErrorCode::kInvalidArgument) << c.what;
    EXPECT_EQ(docs.error().field, c.field) << c.what << ": " << docs.error().ToString();
  }
}

}  // namespace
}  // namespace gpuscale::k8s
