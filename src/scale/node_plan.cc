#include "scale/node_plan.h"

#include <fmt/format.h>

#include <algorithm>

namespace gpuscale::scale {
namespace {

// Nodes one replica occupies and replicas one node holds. A replica larger than a node
// spans ceil(gpus_per_replica / gpus_per_node) whole nodes (nothing else fits beside it).
struct Packing {
  int replicas_per_node = 1;
  int nodes_per_replica = 1;
};

Packing PackingFor(int gpus_per_replica, int gpus_per_node) {
  if (gpus_per_replica <= gpus_per_node) return {gpus_per_node / gpus_per_replica, 1};
  return {1, (gpus_per_replica + gpus_per_node - 1) / gpus_per_node};
}

int NodesFor(int replicas, const Packing& p) {
  if (p.nodes_per_replica > 1) return replicas * p.nodes_per_replica;
  return (replicas + p.replicas_per_node - 1) / p.replicas_per_node;
}

int ReplicasOn(int nodes, const Packing& p) {
  if (p.nodes_per_replica > 1) return nodes / p.nodes_per_replica;
  return nodes * p.replicas_per_node;
}

}  // namespace

NodePlan PlanNodes(int desired_replicas, const NodePlanConfig& config) {
  NodePlan plan;
  const int gpus_per_replica = std::max(1, config.gpus_per_replica);
  const int gpus_per_node = std::max(1, config.gpus_per_node);
  const int min_nodes = std::max(0, config.min_nodes);
  const int max_nodes = std::max(min_nodes, config.max_nodes);
  const int desired = std::max(0, desired_replicas);
  const Packing packing = PackingFor(gpus_per_replica, gpus_per_node);
  // The advice of the Corrino (OCI AI Blueprints) autoscaling recipes: GPUs per replica
  // should divide the node's GPUs evenly, or the remainder of every node stays idle.
  const int idle_gpus = gpus_per_replica <= gpus_per_node
                            ? gpus_per_node % gpus_per_replica
                            : packing.nodes_per_replica * gpus_per_node - gpus_per_replica;
  if (idle_gpus > 0) {
    plan.warnings.push_back(fmt::format(
        "gpus_per_replica {} does not divide gpus_per_node {}: {} GPU(s) per {} stay idle; "
        "choose a replica size that divides the node's GPUs",
        gpus_per_replica, gpus_per_node, idle_gpus,
        packing.nodes_per_replica > 1 ? "replica" : "node"));
  }
  const int needed = NodesFor(desired, packing);
  // Capped by max_nodes, provision only nodes that can hold a whole replica.
  plan.nodes = needed <= max_nodes
                   ? std::max(needed, min_nodes)
                   : std::max(min_nodes, NodesFor(ReplicasOn(max_nodes, packing), packing));
  plan.replicas_placed = std::min(desired, ReplicasOn(plan.nodes, packing));
  plan.replicas_pending = desired - plan.replicas_placed;
  if (plan.replicas_pending > 0) {
    plan.warnings.push_back(fmt::format(
        "{} replica(s) stay pending: max_nodes {} holds only {} replica(s) of {} GPU(s)",
        plan.replicas_pending, max_nodes, ReplicasOn(max_nodes, packing), gpus_per_replica));
  }
  return plan;
}

}  // namespace gpuscale::scale
