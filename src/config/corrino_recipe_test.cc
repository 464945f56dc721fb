#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "config/policy_config.h"
#include "scale/metric_names.h"
#include "scale/node_plan.h"
#include "scale/target_policy.h"
#include "yaml/yaml_util.h"

namespace gpuscale::config {
namespace {

Result<PolicySpec> ParseRecipe(const std::string& json) {
  auto root = yaml::ParseYaml(json, "recipe.json");
  if (!root) return Unexpected<Error>(root.error());
  return ParseCorrinoRecipe(*root);
}

const scale::TargetPolicyConfig& TargetConfig(const PolicySpec& spec) {
  return dynamic_cast<const scale::TargetPolicy&>(*spec.policy).config();
}

std::string Example(const std::string& name) {
  return std::string(GPUSCALE_SOURCE_DIR) + "/examples/recipes/" + name;
}

// The Corrino (OCI AI Blueprints) autoscaling recipes' example "Recipe with 2 GPUs on an
// H100 Node": only min/max replicas given, so every advanced field takes the documented value.
TEST(CorrinoRecipeTest, MinimalRecipeGetsReferenceDefaults) {
  auto spec = LoadCorrinoRecipeFile(Example("h100_pod_autoscaling.json"));
  ASSERT_TRUE(spec) << spec.error().ToString();
  const scale::TargetPolicyConfig& c = TargetConfig(*spec);
  EXPECT_EQ(c.min_replicas, 1);
  EXPECT_EQ(c.max_replicas, 4);
  ASSERT_EQ(c.metrics.size(), 1u);
  const scale::TargetMetric& m = c.metrics[0];
  EXPECT_EQ(m.query, scale::metric_names::kE2eOver5sRatio);  // 5m default timespan
  EXPECT_EQ(m.name, m.query);
  EXPECT_EQ(m.type, scale::MetricTargetType::kValue);  // the default query is a ratio
  EXPECT_EQ(m.target, 0.5);                  // scaling_threshold
  EXPECT_EQ(c.cooldown_period_seconds, 60);  // scaling_cooldown
  EXPECT_EQ(c.polling_interval_seconds, 15);
  EXPECT_EQ(c.behavior.scale_down.stabilization_window_seconds, 180);
  EXPECT_EQ(c.behavior.scale_up.stabilization_window_seconds, 120);
  ASSERT_EQ(c.behavior.scale_down.policies.size(), 1u);
  EXPECT_EQ(c.behavior.scale_down.policies[0].type, scale::ScalingPolicyType::kPods);
  EXPECT_EQ(c.behavior.scale_down.policies[0].value, 1);
  EXPECT_EQ(c.behavior.scale_down.policies[0].period_seconds, 90);
  ASSERT_EQ(c.behavior.scale_up.policies.size(), 1u);
  EXPECT_EQ(c.behavior.scale_up.policies[0].period_seconds, 60);
  // No node autoscaling: the node pool stays at recipe_node_pool_size.
  ASSERT_TRUE(spec->node_plan);
  EXPECT_EQ(spec->node_plan->gpus_per_node, 8);
  EXPECT_EQ(spec->node_plan->gpus_per_replica, 2);
  EXPECT_EQ(spec->node_plan->min_nodes, 1);
  EXPECT_EQ(spec->node_plan->max_nodes, 1);
  EXPECT_EQ(scale::PlanNodes(4, *spec->node_plan).replicas_pending, 0);
}

// Corrino's example 3 puts the advanced fields in the node block; accepted there.
TEST(CorrinoRecipeTest, AdvancedFieldsFromEitherBlock) {
  auto spec = ParseRecipe(R"json({
    "recipe_node_shape": "VM.GPU.A10.2",
    "recipe_nvidia_gpu_count": 1,
    "recipe_node_autoscaling_params": {
      "min_nodes": 1, "max_nodes": 4, "collect_metrics_timespan": "2m",
      "scaling_threshold": 0.4, "scaling_cooldown": 30, "polling_interval": 10,
      "stabilization_window_down": 60, "scaling_period_down": 30,
      "stabilization_window_up": 30, "scaling_period_up": 15},
    "recipe_pod_autoscaling_params": {"min_replicas": 1, "max_replicas": 8,
                                      "scaling_threshold": 0.3}
  })json");
  ASSERT_TRUE(spec) << spec.error().ToString();
  const scale::TargetPolicyConfig& c = TargetConfig(*spec);
  EXPECT_EQ(c.metrics[0].target, 0.3);  // the pod block wins
  EXPECT_NE(c.metrics[0].query.find("[2m]"), std::string::npos) << c.metrics[0].query;
  EXPECT_EQ(c.cooldown_period_seconds, 30);
  EXPECT_EQ(c.polling_interval_seconds, 10);
  EXPECT_EQ(c.behavior.scale_down.stabilization_window_seconds, 60);
  EXPECT_EQ(c.behavior.scale_down.policies[0].period_seconds, 30);
  EXPECT_EQ(c.behavior.scale_up.stabilization_window_seconds, 30);
  EXPECT_EQ(c.behavior.scale_up.policies[0].period_seconds, 15);
}

TEST(CorrinoRecipeTest, CustomQueryAndIntegerTimespan) {
  auto spec = ParseRecipe(R"json({"recipe_pod_autoscaling_params": {
      "min_replicas": 0, "max_replicas": 3, "collect_metrics_timespan": 90,
      "query": "sum(vllm:num_requests_waiting)", "scaling_threshold": 8}})json");
  ASSERT_TRUE(spec) << spec.error().ToString();
  const scale::TargetPolicyConfig& c = TargetConfig(*spec);
  EXPECT_EQ(c.metrics[0].query, "sum(vllm:num_requests_waiting)");
  EXPECT_EQ(c.metrics[0].name, "sum(vllm:num_requests_waiting)");
  EXPECT_EQ(c.min_replicas, 0);
  EXPECT_FALSE(spec->node_plan);  // no shape and no node block: pods only
}

// Corrino's node + pod examples: A10 (2 GPUs) with 1-GPU replicas, up to 4 nodes.
TEST(CorrinoRecipeTest, NodePlanFromRecipe) {
  auto spec = LoadCorrinoRecipeFile(Example("a10_node_autoscaling.json"));
  ASSERT_TRUE(spec) << spec.error().ToString();
  ASSERT_TRUE(spec->node_plan);
  const scale::NodePlanConfig& p = *spec->node_plan;
  EXPECT_EQ(p.gpus_per_node, 2);
  EXPECT_EQ(p.gpus_per_replica, 1);
  EXPECT_EQ(p.min_nodes, 1);
  EXPECT_EQ(p.max_nodes, 4);
  EXPECT_EQ(scale::PlanNodes(1, p).nodes, 1);
  EXPECT_EQ(scale::PlanNodes(3, p).nodes, 2);  // "a third replica needs a new node"
  EXPECT_EQ(scale::PlanNodes(8, p).nodes, 4);
}

// With the defaults (threshold 0.5, 120 s up-window, +1 pod per 60 s) a slow-request share
// of 0.6 asks for ceil(0.6 / 0.5) = 2 replicas, granted once the window agrees.
TEST(CorrinoRecipeTest, DefaultsDelayScaleUpByTheUpWindow) {
  auto spec = LoadCorrinoRecipeFile(Example("h100_pod_autoscaling.json"));
  ASSERT_TRUE(spec) << spec.error().ToString();
  const std::string metric(scale::metric_names::kE2eOver5sRatio);
  int current = 1;
  for (double now = 0; now <= 120; now += 15) {
    scale::ScalingInput in;
    in.now = Seconds{now};
    in.current_replicas = current;
    in.ready_replicas = current;
    in.metrics[metric].service_value = 0.6;
    current = spec->policy->Evaluate(in).desired_replicas;
    if (now < 120) {
      ASSERT_EQ(current, 1) << "t=" << now;
    }
  }
  EXPECT_EQ(current, 2);
}

// The HPA's two formulas on the default ratio query (share of requests slower than 5 s) at
// 0.8 against a 0.4 threshold, 3 replicas running, max 10: Value gives ceil(3 x 0.8 / 0.4)
// = 6; AverageValue (what Corrino renders) gives ceil(0.8 / 0.4) = 2 whatever the load, and
// never more than ceil(1 / 0.4) = 3.
TEST(CorrinoRecipeTest, RatioQueriesUseValueSoTheCountFollowsTheLoad) {
  const auto desired = [](const std::string& type_field) {
    const std::string json =
        "{\"recipe_pod_autoscaling_params\": {\"min_replicas\": 1, \"max_replicas\": 10,\n"
        "\"scaling_threshold\": 0.4, \"stabilization_window_up\": 0,\n"
        "\"stabilization_window_down\": 0" + type_field + "}}";
    auto spec = ParseCorrinoRecipe(YAML::Load(json));
    EXPECT_TRUE(spec) << spec.error().ToString();
    if (!spec) return -1;
    scale::ScalingInput in;
    in.now = Seconds{0};
    in.current_replicas = 3;
    in.ready_replicas = 3;
    const auto& m = TargetConfig(*spec).metrics[0];
    in.metrics[m.name].service_value = 0.8;
    return spec->policy->Evaluate(in).desired_replicas;
  };
  // Rate-limited to +1 pod per period by the recipe's scale-up policy: compare the proposals.
  EXPECT_GT(desired(""), 3) << "Value: the ratio's excess grows the service";
  EXPECT_EQ(desired(", \"scaling_metric_type\": \"AverageValue\""), 2)
      << "AverageValue: ceil(0.8 / 0.4) = 2, a scale-down under overload";
  EXPECT_FALSE(ParseCorrinoRecipe(YAML::Load(
      "{\"recipe_pod_autoscaling_params\": {\"max_replicas\": 2, \"scaling_metric_type\": "
      "\"Utilization\"}}")));
}

TEST(CorrinoRecipeTest, AllExampleRecipesParse) {
  for (const char* name :
       {"h100_pod_autoscaling.json", "a10_node_autoscaling.json", "a10_advanced.json"}) {
    auto spec = LoadCorrinoRecipeFile(Example(name));
    EXPECT_TRUE(spec) << name << ": " << spec.error().ToString();
  }
}

struct ErrorCase {
  const char* name;
  const char* json;
  const char* want;
};

TEST(CorrinoRecipeTest, ErrorsNameFieldAndLine) {
  const std::vector<ErrorCase> cases = {
      {"min above max",
       "{\"recipe_pod_autoscaling_params\": {\n\"min_replicas\": 5,\n"
       "\"max_replicas\": 2}}",
       "recipe_pod_autoscaling_params.max_replicas: must be >= min_replicas (5) and >= 1, got 2 "
       "(line 3)"},
      {"max missing", "{\"recipe_pod_autoscaling_params\": {\n\"min_replicas\": 1}}",
       "recipe_pod_autoscaling_params.max_replicas: required field is missing (line 1)"},
      {"unknown pod field",
       "{\"recipe_pod_autoscaling_params\": {\"max_replicas\": 2,\n"
       "\"scaling_treshold\": 0.5}}",
       "recipe_pod_autoscaling_params.scaling_treshold: unknown field; accepted fields: "
       "min_replicas, max_replicas, collect_metrics_timespan, scaling_threshold, "
       "scaling_cooldown, polling_interval, stabilization_window_down, scaling_period_down, "
       "stabilization_window_up, scaling_period_up, query, scaling_metric_type (line 2)"},
      {"bad timespan",
       "{\"recipe_pod_autoscaling_params\": {\"max_replicas\": 2,\n"
       "\"collect_metrics_timespan\": \"five minutes\"}}",
       "recipe_pod_autoscaling_params.collect_metrics_timespan: expected a duration such as 5m "
       "or 90s, got 'five minutes' (line 2)"},
      {"zero threshold",
       "{\"recipe_pod_autoscaling_params\": {\"max_replicas\": 2,\n"
       "\"scaling_threshold\": 0}}",
       "recipe_pod_autoscaling_params.scaling_threshold: must be > 0, got 0 (line 2)"},
      {"period out of range",
       "{\"recipe_pod_autoscaling_params\": {\"max_replicas\": 2,\n"
       "\"scaling_period_up\": 0}}",
       "recipe_pod_autoscaling_params.scaling_period_up: must be between 1 and 1800 seconds, "
       "got 0 (line 2)"},
      {"node block without shape",
       "{\"recipe_pod_autoscaling_params\": {\"max_replicas\": 2},\n"
       "\"recipe_node_autoscaling_params\": {\"max_nodes\": 2}}",
       "recipe_node_shape: needed to plan nodes: expected an OCI GPU shape ending in its GPU "
       "count, such as BM.GPU.H100.8, got '' (line 1)"},
      {"replica larger than node",
       "{\"recipe_node_shape\": \"VM.GPU.A10.2\",\n"
       "\"recipe_nvidia_gpu_count\": 4,\n"
       "\"recipe_pod_autoscaling_params\": {\"max_replicas\": 2}}",
       "recipe_nvidia_gpu_count: must be between 1 and the 2 GPUs of a VM.GPU.A10.2 node, got 4 "
       "(line 2)"},
      {"min nodes above max",
       "{\"recipe_node_shape\": \"BM.GPU.H100.8\",\n"
       "\"recipe_pod_autoscaling_params\": {\"max_replicas\": 2},\n"
       "\"recipe_node_autoscaling_params\": {\"min_nodes\": 3,\n"
       "\"max_nodes\": 2}}",
       "recipe_node_autoscaling_params.max_nodes: must be >= min_nodes (3) and >= 1, got 2 "
       "(line 4)"},
      {"no pod block", "{\"recipe_node_shape\": \"BM.GPU.H100.8\"}",
       "recipe_pod_autoscaling_params: required to autoscale: add at least {\"min_replicas\": "
       "1, \"max_replicas\": 4} (line 1)"},
      {"not an object", "[1, 2]", "<root>: expected a recipe JSON object (line 1)"},
  };
  for (const ErrorCase& c : cases) {
    auto spec = ParseRecipe(c.json);
    ASSERT_FALSE(spec) << c.name;
    EXPECT_EQ(spec.error().code, ErrorCode::kInvalidArgument) << c.name;
    EXPECT_EQ(spec.error().ToString(), c.want) << c.name;
  }
}

TEST(CorrinoRecipeTest, MissingFileIsNotFound) {
  auto spec = LoadCorrinoRecipeFile("/nonexistent/recipe.json");
  ASSERT_FALSE(spec);
  EXPECT_EQ(spec.error().code, ErrorCode::kNotFound);
}

}  // namespace
}  // namespace gpuscale::config
