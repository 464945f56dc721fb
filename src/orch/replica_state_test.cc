#include "orch/replica_state.h"

#include <gtest/gtest.h>

namespace gpuscale::orch {
namespace {

constexpr ReplicaState kAll[] = {ReplicaState::kPending,    ReplicaState::kStarting,
                                 ReplicaState::kReady,      ReplicaState::kDraining,
                                 ReplicaState::kRestarting, ReplicaState::kStopping};

// The wire strings (API JSON, store rows) stay what they were before the enum.
TEST(ReplicaStateTest, NamesAreTheWireStringsAndParseBack) {
  const char* names[] = {"pending", "starting", "ready", "draining", "restarting", "stopping"};
  for (size_t i = 0; i < std::size(kAll); ++i) {
    EXPECT_EQ(ReplicaStateName(kAll[i]), names[i]);
    Result<ReplicaState> parsed = ParseReplicaState(names[i]);
    ASSERT_TRUE(parsed) << names[i];
    EXPECT_EQ(*parsed, kAll[i]);
  }
}

TEST(ReplicaStateTest, AnUnknownNameIsAnErrorNamingTheFieldAndTheKnownNames) {
  Result<ReplicaState> parsed = ParseReplicaState("hibernating", "phase");
  ASSERT_FALSE(parsed);
  EXPECT_EQ(parsed.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(parsed.error().field, "phase");
  EXPECT_NE(parsed.error().message.find("'hibernating'"), std::string::npos);
  EXPECT_NE(parsed.error().message.find("restarting, stopping"), std::string::npos);
}

// A phase's state is named as the phase is (scale::ReplicaPhaseName), and maps back to it.
TEST(ReplicaStateTest, PhaseStatesAgreeWithThePhaseNames) {
  for (scale::ReplicaPhase phase : {scale::ReplicaPhase::kPending, scale::ReplicaPhase::kStarting,
                                    scale::ReplicaPhase::kReady, scale::ReplicaPhase::kDraining}) {
    EXPECT_EQ(ReplicaStateName(StateOfPhase(phase)), scale::ReplicaPhaseName(phase));
    EXPECT_EQ(PhaseOfState(StateOfPhase(phase)), phase);
  }
  EXPECT_EQ(PhaseOfState(ReplicaState::kRestarting), scale::ReplicaPhase::kStarting);
}

TEST(ReplicaStateTest, OnlyPendingAndReadyAreSettled) {
  for (ReplicaState s : kAll) {
    EXPECT_EQ(IsSettling(s), s != ReplicaState::kPending && s != ReplicaState::kReady)
        << ReplicaStateName(s);
  }
}

}  // namespace
}  // namespace gpuscale::orch
