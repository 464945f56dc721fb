#include "scale/fixed_elastic_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace gpuscale::scale {
namespace {

using ::testing::HasSubstr;

const AdapterCapacity kPrimary{"on-prem", 1, 2, {}};
const AdapterCapacity kSecondary{"cloud", 3, 1, {}};

ScalingInput ElasticInput(int tasks, std::vector<WorkerGroup> groups,
                          std::vector<AdapterCapacity> adapters = {kPrimary, kSecondary}) {
  ScalingInput input;
  input.current_replicas = static_cast<int>(groups.size());
  input.ready_replicas = input.current_replicas;
  input.tasks = {{{}, tasks, 0}};
  input.groups = std::move(groups);
  input.adapters = std::move(adapters);
  return input;
}

WorkerGroup Primary() { return {"p", "on-prem", {}, 2}; }
WorkerGroup Secondary(std::string id) { return {std::move(id), "cloud", {}, 1}; }

FixedElasticPolicy MakeElasticPolicy(int min_replicas = 1, int max_replicas = 4) {
  return FixedElasticPolicy(FixedElasticPolicyConfig{min_replicas, max_replicas, 10, 1});
}

std::vector<std::string> DescribeElastic(const std::vector<GroupAction>& actions) {
  std::vector<std::string> out;
  for (const GroupAction& a : actions) {
    out.push_back(a.kind == GroupAction::Kind::kStart ? "start " + a.adapter
                                                      : "shutdown " + a.group_id);
  }
  return out;
}

struct ElasticCase {
  const char* name;
  ScalingInput input;
  int expected_groups;
  std::vector<std::string> expected_actions;
};

// Scaler's fixed_elastic scaling policy: the primary runs one fixed group; the secondary
// absorbs bursts.
TEST(FixedElasticPolicyTest, PrimaryFixedSecondaryElastic) {
  std::vector<ElasticCase> cases;
  cases.push_back({"fresh start: the primary group", ElasticInput(0, {}), 1, {"start on-prem"}});
  cases.push_back({"demand within primary capacity holds", ElasticInput(15, {Primary()}), 1, {}});
  cases.push_back({"demand beyond the primary bursts to secondary",
                   ElasticInput(25, {Primary()}),
                   2,
                   {"start cloud"}});
  cases.push_back({"idle: shut down the last secondary",
                   ElasticInput(0, {Primary(), Secondary("s1"), Secondary("s2")}),
                   2,
                   {"shutdown s2"}});
  cases.push_back({"idle with only the primary: hold", ElasticInput(0, {Primary()}), 1, {}});
  cases.push_back(
      {"secondary at its max_worker_groups holds",
       ElasticInput(100, {Primary(), Secondary("s1"), Secondary("s2"), Secondary("s3")}),
       4,
       {}});
  for (ElasticCase& c : cases) {
    SCOPED_TRACE(c.name);
    FixedElasticPolicy policy = MakeElasticPolicy(1, 6);
    Decision d = policy.Evaluate(c.input);
    EXPECT_EQ(d.desired_replicas, c.expected_groups) << d.reason;
    EXPECT_EQ(DescribeElastic(d.actions), c.expected_actions) << d.reason;
  }
}

TEST(FixedElasticPolicyTest, StartsPrimaryOnlyOnce) {
  FixedElasticPolicy policy = MakeElasticPolicy(0, 4);
  EXPECT_EQ(DescribeElastic(policy.Evaluate(ElasticInput(0, {})).actions),
            std::vector<std::string>{"start on-prem"});
  EXPECT_TRUE(policy.Evaluate(ElasticInput(0, {Primary()})).actions.empty());
  // The primary group went away: restarting it is the orchestrator's job, not a new start.
  Decision gone = policy.Evaluate(ElasticInput(0, {}));
  EXPECT_TRUE(gone.actions.empty()) << gone.reason;
}

TEST(FixedElasticPolicyTest, NeverShutsDownThePrimary) {
  FixedElasticPolicy policy = MakeElasticPolicy(0, 1);
  Decision d = policy.Evaluate(ElasticInput(0, {Primary(), Secondary("s1")}));
  EXPECT_EQ(DescribeElastic(d.actions), std::vector<std::string>{"shutdown s1"});
  Decision alone = policy.Evaluate(ElasticInput(0, {Primary()}));
  EXPECT_TRUE(alone.actions.empty());
  EXPECT_EQ(alone.desired_replicas, 1);
}

TEST(FixedElasticPolicyTest, NeverScalesInOnMissingData) {
  FixedElasticPolicy policy = MakeElasticPolicy();
  ScalingInput input = ElasticInput(0, {Primary(), Secondary("s1")});
  input.metrics_error = true;
  Decision d = policy.Evaluate(input);
  EXPECT_EQ(d.desired_replicas, 2);
  EXPECT_THAT(d.reason, HasSubstr("incomplete"));
}

TEST(FixedElasticPolicyTest, DoesNotScaleInIntoAnImmediateScaleOut) {
  FixedElasticPolicy policy(FixedElasticPolicyConfig{1, 6, 2, 1.5});
  // 4 / 3 < 1.5 and 4 / 2 = 2 is not above 2: the secondary may go.
  Decision d = policy.Evaluate(ElasticInput(4, {Primary(), Secondary("s1")}));
  EXPECT_EQ(DescribeElastic(d.actions), std::vector<std::string>{"shutdown s1"});
  FixedElasticPolicy tight(FixedElasticPolicyConfig{1, 6, 1.9, 1.5});
  Decision held = tight.Evaluate(ElasticInput(4, {Primary(), Secondary("s1")}));
  EXPECT_TRUE(held.actions.empty());
  EXPECT_THAT(held.reason, HasSubstr("removing a secondary group would give 2"));
}

TEST(FixedElasticPolicyTest, ImplicitAdaptersWhenNoneReported) {
  FixedElasticPolicy policy = MakeElasticPolicy(1, 4);
  Decision first = policy.Evaluate(ElasticInput(50, {}, {}));
  EXPECT_EQ(DescribeElastic(first.actions),
            (std::vector<std::string>{"start primary", "start secondary"}));
  EXPECT_EQ(first.desired_replicas, 2);
  EXPECT_THAT(first.reason, HasSubstr("start the primary group on 'primary'"));
}

TEST(FixedElasticPolicyTest, FillsToMinWithSecondaryGroups) {
  FixedElasticPolicy policy = MakeElasticPolicy(3, 4);
  Decision d = policy.Evaluate(ElasticInput(0, {Primary()}));
  EXPECT_EQ(d.desired_replicas, 3);
  EXPECT_EQ(DescribeElastic(d.actions), (std::vector<std::string>{"start cloud", "start cloud"}));
}

}  // namespace
}  // namespace gpuscale::scale
