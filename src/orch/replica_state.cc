#include "orch/replica_state.h"

#include <fmt/format.h>

#include <optional>
#include <string>
#include <utility>

#include "core/name_table.h"

namespace gpuscale::orch {
namespace {

constexpr std::pair<ReplicaState, std::string_view> kNames[] = {
    {ReplicaState::kPending, "pending"},       {ReplicaState::kStarting, "starting"},
    {ReplicaState::kReady, "ready"},           {ReplicaState::kDraining, "draining"},
    {ReplicaState::kRestarting, "restarting"}, {ReplicaState::kStopping, "stopping"},
};

}  // namespace

std::string_view ReplicaStateName(ReplicaState state) {
  return NameIn<ReplicaState>(kNames, state);
}

Result<ReplicaState> ParseReplicaState(std::string_view name, std::string_view field) {
  if (std::optional<ReplicaState> state = ValueIn<ReplicaState>(kNames, name)) return *state;
  return InvalidArgument(fmt::format("unknown replica state '{}' (expected one of {})", name,
                                     NamesIn<ReplicaState>(kNames)),
                         std::string(field));
}

ReplicaState StateOfPhase(scale::ReplicaPhase phase) {
  switch (phase) {
    case scale::ReplicaPhase::kPending:
      return ReplicaState::kPending;
    case scale::ReplicaPhase::kStarting:
      return ReplicaState::kStarting;
    case scale::ReplicaPhase::kReady:
      return ReplicaState::kReady;
    case scale::ReplicaPhase::kDraining:
      return ReplicaState::kDraining;
  }
  return ReplicaState::kPending;
}

scale::ReplicaPhase PhaseOfState(ReplicaState state) {
  switch (state) {
    case ReplicaState::kStarting:
    case ReplicaState::kRestarting:
      return scale::ReplicaPhase::kStarting;
    case ReplicaState::kReady:
      return scale::ReplicaPhase::kReady;
    case ReplicaState::kDraining:
      return scale::ReplicaPhase::kDraining;
    case ReplicaState::kPending:
    case ReplicaState::kStopping:
      return scale::ReplicaPhase::kPending;
  }
  return scale::ReplicaPhase::kPending;
}

bool IsSettling(ReplicaState state) {
  return state == ReplicaState::kStarting || state == ReplicaState::kRestarting ||
         state == ReplicaState::kDraining || state == ReplicaState::kStopping;
}

}  // namespace gpuscale::orch
