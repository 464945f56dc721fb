// Node plan: how many GPU nodes the desired replicas need (the node autoscaling advice of
// the Corrino (OCI AI Blueprints) autoscaling recipes). Replicas are packed whole per node:
// floor(gpus_per_node / gpus_per_replica) replicas fit on one node; replicas beyond
// max_nodes' capacity stay pending. Pure.
#pragma once

#include <string>
#include <vector>

namespace gpuscale::scale {

struct NodePlanConfig {
  int gpus_per_replica = 1;
  int gpus_per_node = 8;
  int min_nodes = 0;
  int max_nodes = 1;
};

struct NodePlan {
  int nodes = 0;             // nodes to provision, within [min_nodes, max_nodes]
  int replicas_placed = 0;   // replicas that fit on those nodes
  int replicas_pending = 0;  // desired replicas that do not fit under max_nodes
  std::vector<std::string> warnings;  // e.g. gpus_per_replica does not divide gpus_per_node
};

NodePlan PlanNodes(int desired_replicas, const NodePlanConfig& config);

}  // namespace gpuscale::scale
