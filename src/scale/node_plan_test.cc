#include "scale/node_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace gpuscale::scale {
namespace {

struct NodePlanCase {
  const char* name;
  int desired;
  NodePlanConfig config;
  int nodes;
  int placed;
  int pending;
  std::vector<std::string> warning_parts;  // substrings, one per expected warning
};

TEST(NodePlanTest, PackingPendingAndWarnings) {
  const std::vector<NodePlanCase> cases = {
      // The Corrino (OCI AI Blueprints) autoscaling recipes: 1-GPU replicas on
      // VM.GPU.A10.2; the third replica needs a new node.
      {"A10: two replicas fit one node", 2, {1, 2, 1, 4}, 1, 2, 0, {}},
      {"A10: third replica adds a node", 3, {1, 2, 1, 4}, 2, 3, 0, {}},
      {"A10: 8 replicas on 4 nodes", 8, {1, 2, 1, 4}, 4, 8, 0, {}},
      // Corrino: 2-GPU replicas on BM.GPU.H100.8, 4 per node, 2 nodes -> 8 replicas.
      {"H100: 8 replicas on 2 nodes", 8, {2, 8, 1, 2}, 2, 8, 0, {}},
      {"H100: max_nodes 1 leaves 4 pending",
       8,
       {2, 8, 1, 1},
       1,
       4,
       4,
       {"4 replica(s) stay pending: max_nodes 1 holds only 4"}},
      {"min_nodes kept with no replicas", 0, {1, 2, 1, 4}, 1, 0, 0, {}},
      {"zero min_nodes and no replicas", 0, {2, 8, 0, 3}, 0, 0, 0, {}},
      {"3 GPUs per 8-GPU node idles 2",
       5,
       {3, 8, 0, 4},
       3,
       5,
       0,
       {"gpus_per_replica 3 does not divide gpus_per_node 8: 2 GPU(s) per node stay idle"}},
      {"replica spanning two nodes", 2, {16, 8, 0, 4}, 4, 2, 0, {}},
      {"replica spanning nodes with idle GPUs",
       2,
       {12, 8, 0, 3},
       2,
       1,
       1,
       {"4 GPU(s) per replica stay idle", "1 replica(s) stay pending"}},
  };
  for (const NodePlanCase& c : cases) {
    const NodePlan plan = PlanNodes(c.desired, c.config);
    EXPECT_EQ(plan.nodes, c.nodes) << c.name;
    EXPECT_EQ(plan.replicas_placed, c.placed) << c.name;
    EXPECT_EQ(plan.replicas_pending, c.pending) << c.name;
    ASSERT_EQ(plan.warnings.size(), c.warning_parts.size()) << c.name;
    for (size_t i = 0; i < c.warning_parts.size(); ++i) {
      EXPECT_NE(plan.warnings[i].find(c.warning_parts[i]), std::string::npos)
          << c.name << ": " << plan.warnings[i];
    }
  }
}

TEST(NodePlanTest, InvalidInputsAreSanitized) {
  const NodePlan plan = PlanNodes(-3, NodePlanConfig{0, 0, -1, -5});
  EXPECT_EQ(plan.nodes, 0);
  EXPECT_EQ(plan.replicas_placed, 0);
  EXPECT_EQ(plan.replicas_pending, 0);
}

}  // namespace
}  // namespace gpuscale::scale
