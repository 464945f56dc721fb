// `gpuscale policy eval` through cli::RunCli in-process: the JSON contract scripts rely on
// (exact keys per step), the table, carry-over of replicas between steps, and exit code 2
// with field + line for bad policy and input files.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "cli/command.h"
#include "cli_test_util.h"

namespace gpuscale::cli {
namespace {

namespace fs = std::filesystem;
using cli_test::RunResult;
using nlohmann::json;
using ::testing::HasSubstr;

const fs::path kExamples = fs::path(GPUSCALE_SOURCE_DIR) / "examples";

class PolicyEvalCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = cli_test::MakeTempDir("gpuscale_policy_eval_");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& text) {
    return cli_test::WriteFile(dir_, name, text).string();
  }

  static RunResult Run(const std::vector<std::string>& args) {
    return cli_test::RunInProcess(args);
  }

  // Runs eval with -o json and returns the parsed steps (asserting success).
  static json EvalJson(const std::string& policy, const std::string& input) {
    RunResult r = Run({"policy", "eval", "--policy", policy, "--input", input, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    json doc = json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_TRUE(doc.is_object()) << r.out;
    return doc.value("steps", json::array());
  }

  fs::path dir_;
};

std::set<std::string> Keys(const json& object) {
  std::set<std::string> keys;
  for (const auto& [key, value] : object.items()) keys.insert(key);
  return keys;
}

std::vector<int> Desired(const json& steps) {
  std::vector<int> desired;
  for (const json& s : steps) desired.push_back(s.at("desired").get<int>());
  return desired;
}

const char* const kRatioPolicy = "family: ratio\nmin_replicas: 1\nmax_replicas: 8\n";

TEST_F(PolicyEvalCliTest, JsonHasExactlyTheContractKeys) {
  const std::string policy = Write("ratio.yaml", kRatioPolicy);
  const std::string input = Write("in.json", R"({"replicas": 1, "steps": [
      {"t": 0, "tasks": {"queued": 20, "running": 4}},
      {"t": 15.5, "tasks": {"queued": 30, "running": 0}}]})");
  json steps = EvalJson(policy, input);
  ASSERT_EQ(steps.size(), 2u);
  for (const json& step : steps) {
    EXPECT_EQ(Keys(step), (std::set<std::string>{"t", "replicas", "desired", "reason"}));
    EXPECT_TRUE(step.at("reason").is_string());
  }
  EXPECT_EQ(steps[0].at("t"), 0);
  EXPECT_EQ(steps[1].at("t"), 15.5);
  EXPECT_EQ(steps[0].at("replicas"), 1);
  EXPECT_EQ(steps[0].at("desired"), 2);
  EXPECT_EQ(steps[1].at("replicas"), 2);  // carried over from the previous decision
  EXPECT_EQ(steps[1].at("desired"), 3);
  EXPECT_EQ(steps[0].at("reason"),
            "scale out 1 -> 2: 24 tasks on 1 worker = 24 tasks per worker > upper_task_ratio 10");
}

TEST_F(PolicyEvalCliTest, NodePlanAddsNodesAndPending) {
  const std::string policy =
      Write("p.yaml", std::string(kRatioPolicy) +
                          "node_plan: {gpus_per_replica: 4, gpus_per_node: 8, min_nodes: 0, "
                          "max_nodes: 1}\n");
  const std::string input = Write("in.json", R"({"replicas": 2, "steps": [
      {"t": 0, "tasks": {"queued": 40}}, {"t": 10, "tasks": {"queued": 40}}]})");
  json steps = EvalJson(policy, input);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(Keys(steps[0]),
            (std::set<std::string>{"t", "replicas", "desired", "reason", "nodes", "pending"}));
  EXPECT_EQ(steps[0].at("desired"), 3);
  EXPECT_EQ(steps[0].at("nodes"), 1);
  EXPECT_EQ(steps[0].at("pending"), 1);  // 2 replicas of 4 GPUs fit one 8-GPU node
  EXPECT_EQ(steps[1].at("desired"), 4);
  EXPECT_EQ(steps[1].at("pending"), 2);
}

TEST_F(PolicyEvalCliTest, StepOverridesReplicasAndReadyReplicas) {
  const std::string policy =
      Write("rules.yaml",
            "family: rules\nmin_replicas: 1\nmax_replicas: 10\nrules:\n"
            "  - {name: down, metric: q, comparator: LESS_THAN, threshold: 1, step_size: -1}\n");
  const std::string input = Write("in.json", R"({"replicas": 4, "steps": [
      {"t": 0, "metrics": {"q": [0, 0, 0, 0]}},
      {"t": 1, "metrics": {"q": [0, 0]}},
      {"t": 2, "metrics": {"q": [0, 0]}, "ready_replicas": 2},
      {"t": 3, "replicas": 6, "metrics": {"q": 0}},
      {"t": 4, "metrics": {"q": "NaN"}}]})");
  json steps = EvalJson(policy, input);
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(Desired(steps), (std::vector<int>{3, 3, 2, 5, 5}));
  EXPECT_THAT(steps[1].at("reason").get<std::string>(), HasSubstr("only 2 of 3 ready replicas"));
  EXPECT_EQ(steps[3].at("replicas"), 6);
  EXPECT_THAT(steps[4].at("reason").get<std::string>(), HasSubstr("NaN or negative"));
}

TEST_F(PolicyEvalCliTest, MetricsErrorHoldsScaleIn) {
  const std::string policy = Write("ratio.yaml", kRatioPolicy);
  const std::string input = Write("in.json", R"({"replicas": 3, "steps": [
      {"t": 0, "tasks": {"queued": 0}, "metrics_error": true},
      {"t": 5}]})");
  EXPECT_EQ(Desired(EvalJson(policy, input)), (std::vector<int>{3, 2}));
}

TEST_F(PolicyEvalCliTest, GroupFamiliesCarryGroupsBetweenSteps) {
  const std::string policy = Write("cap.yaml",
                                   "family: capability\nmin_replicas: 0\n"
                                   "max_replicas: 4\n");
  const std::string input = Write("in.json", R"({"replicas": 0,
      "adapters": [{"name": "gpu-pool", "max_worker_groups": 4, "capabilities": ["gpu"]}],
      "steps": [
        {"t": 0, "tasks": [{"capabilities": ["gpu"], "queued": 9}]},
        {"t": 1, "tasks": [{"capabilities": ["gpu"], "queued": 9}]},
        {"t": 2, "tasks": [{"capabilities": ["gpu"], "queued": 9}]},
        {"t": 3}]})");
  json steps = EvalJson(policy, input);
  ASSERT_EQ(steps.size(), 4u);
  EXPECT_EQ(Desired(steps), (std::vector<int>{1, 2, 2, 1}));
  EXPECT_EQ(steps[1].at("replicas"), 1);
  EXPECT_THAT(steps[3].at("reason").get<std::string>(), HasSubstr("shut down group 'gpu-pool-2'"));
}

TEST_F(PolicyEvalCliTest, EveryExampleRuns) {
  for (const std::string family : {"rules", "ratio", "capability", "fixed_elastic"}) {
    SCOPED_TRACE(family);
    json steps = EvalJson((kExamples / "policies" / (family + ".yaml")).string(),
                          (kExamples / "policies" / (family + "_input.json")).string());
    EXPECT_GE(steps.size(), 4u);
  }
}

TEST_F(PolicyEvalCliTest, TablePrintsOneRowPerStep) {
  RunResult r = Run({"policy", "eval", "--policy", (kExamples / "policies/rules.yaml").string(),
                     "--input", (kExamples / "policies/rules_input.json").string()});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> lines;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 8u);  // header + 7 steps
  EXPECT_THAT(lines[0], HasSubstr("REPLICAS"));
  EXPECT_THAT(lines[0], HasSubstr("NODES"));
  EXPECT_THAT(lines[1], HasSubstr("scale out 2 -> 3"));
}

TEST_F(PolicyEvalCliTest, ContradictoryRulesWarnOnStderr) {
  const std::string policy =
      Write("rules.yaml",
            "family: rules\nmax_replicas: 4\nrules:\n"
            "  - {name: out, metric: q, comparator: GREATER_THAN, threshold: 5, step_size: 1}\n"
            "  - {name: in, metric: q, comparator: LESS_THAN, threshold: 8, step_size: -1}\n");
  const std::string input = Write("in.json", R"({"replicas": 2, "steps": [{"t": 0}, {"t": 1}]})");
  RunResult r = Run({"policy", "eval", "--policy", policy, "--input", input, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: rules 'out'"));
  EXPECT_THAT(r.err, HasSubstr("both hold when 5 < q < 8"));
  EXPECT_EQ(r.err.find("warning"), r.err.rfind("warning"));  // once, not once per step
}

TEST_F(PolicyEvalCliTest, RecipeDrivesATargetPolicyWithNodes) {
  const std::string input = Write("in.json", R"({"replicas": 1, "steps": [{"t": 0}]})");
  RunResult r =
      Run({"policy", "eval", "--recipe", (kExamples / "recipes/a10_node_autoscaling.json").string(),
           "--input", input, "-o", "json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json steps = json::parse(r.out).at("steps");
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_TRUE(steps[0].contains("nodes"));
  EXPECT_TRUE(steps[0].contains("pending"));
}

struct BadCase {
  const char* name;
  std::string policy;
  std::string input;
  std::string expected_err;
};

TEST_F(PolicyEvalCliTest, BadFilesExitTwoNamingFieldAndLine) {
  const std::string ok_input = R"({"replicas": 1, "steps": [{"t": 0}]})";
  const std::vector<BadCase> cases = {
      {"bad comparator",
       "family: rules\nmax_replicas: 3\nrules:\n  - metric: q\n    comparator: ABOVE\n"
       "    threshold: 1\n    step_size: 1\n",
       ok_input,
       "error: rules[0].comparator: expected one of LESS_THAN, LESS_THAN_OR_EQUAL, "
       "GREATER_THAN, GREATER_THAN_OR_EQUAL, got 'ABOVE' (line 5)\n"},
      {"min above max", "family: ratio\nmin_replicas: 5\nmax_replicas: 2\n", ok_input,
       "error: max_replicas: must be >= min_replicas (5), got 2 (line 3)\n"},
      {"unknown family", "family: magic\nmax_replicas: 2\n", ok_input,
       "error: family: unknown policy family 'magic'; expected one of rules, ratio, capability, "
       "fixed_elastic, target, kpa, slo, disagg (line 1)\n"},
      {"input t not a number", kRatioPolicy,
       "{\"replicas\": 1,\n \"steps\": [\n  {\"t\": 0},\n  {\"t\": \"later\"}]}",
       "error: steps[1].t: expected a number, got 'later' (line 4)\n"},
      {"input time goes back", kRatioPolicy,
       "{\"replicas\": 1,\n \"steps\": [\n  {\"t\": 5},\n  {\"t\": 1}]}",
       "error: steps[1].t: must not go back in time (previous step is at 5) (line 4)\n"},
      {"input metric not a number", kRatioPolicy,
       "{\"replicas\": 1, \"steps\": [\n {\"t\": 0, \"metrics\": {\"q\": [1, \"x\"]}}]}",
       "error: steps[0].metrics.q[1]: expected a number or a list of numbers, one per replica "
       "(line 2)\n"},
      {"input unknown step key", kRatioPolicy,
       "{\"replicas\": 1, \"steps\": [\n {\"t\": 0, \"replica\": 3}]}",
       "error: steps[0].replica: unknown field; accepted fields: t, metrics, replicas, "
       "ready_replicas, tasks, metrics_error, groups, adapters (line 2)\n"},
      {"input negative task count", kRatioPolicy,
       "{\"replicas\": 1, \"steps\": [\n {\"t\": 0,\n  \"tasks\": {\"queued\": -2}}]}",
       "error: steps[0].tasks.queued: must be >= 0 (line 3)\n"},
      {"input without steps", kRatioPolicy, "{\"replicas\": 1}",
       "error: steps: expected a non-empty list of steps (line 1)\n"},
      {"input without replicas", kRatioPolicy, "{\"steps\": [{\"t\": 0}]}",
       "error: replicas: required field is missing (line 1)\n"},
      {"adapter without max groups", kRatioPolicy,
       "{\"replicas\": 1,\n \"adapters\": [{\"name\": \"a\"}], \"steps\": [{\"t\": 0}]}",
       "error: adapters[0].max_worker_groups: required field is missing (line 2)\n"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string policy = Write("bad.yaml", c.policy);
    const std::string input = Write("bad.json", c.input);
    RunResult r = Run({"policy", "eval", "--policy", policy, "--input", input, "-o", "json"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.err, c.expected_err);
    EXPECT_EQ(r.out, "");
  }
}

TEST_F(PolicyEvalCliTest, UsageErrorsExitTwo) {
  const std::string policy = Write("ratio.yaml", kRatioPolicy);
  const std::string input = Write("in.json", R"({"replicas": 1, "steps": [{"t": 0}]})");
  EXPECT_EQ(Run({"policy", "eval", "--input", input}).exit_code, 2);
  EXPECT_EQ(Run({"policy", "eval", "--policy", policy}).exit_code, 2);
  EXPECT_EQ(
      Run({"policy", "eval", "--policy", policy, "--recipe", policy, "--input", input}).exit_code,
      2);
  RunResult missing = Run({"policy", "eval", "--policy", "/nonexistent.yaml", "--input", input});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_THAT(missing.err, HasSubstr("/nonexistent.yaml"));
  EXPECT_EQ(Run({"policy", "eval", "--policy", policy, "--input", input, "-o", "xml"}).exit_code,
            2);
}

}  // namespace
}  // namespace gpuscale::cli
