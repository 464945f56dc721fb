#include "daemon/start_failure.h"

#include <gtest/gtest.h>

namespace gpuscale::daemon {
namespace {

using scale::ReplicaPhase;

orch::ReplicaInfo Replica(std::string id, ReplicaPhase phase, orch::ReplicaState state,
                          std::string start_error = "", int pid = 0) {
  orch::ReplicaInfo r;
  r.id = std::move(id);
  r.phase = phase;
  r.state = state;
  r.start_error = std::move(start_error);
  r.pid = pid;
  return r;
}

const std::string kNotInstalled = "cannot start 'vllm': No such file or directory";

TEST(StartFailureTest, FailsWhileNoReplicaIsReadyAndOneCannotStart) {
  const orch::ReplicaInfo failing =
      Replica("chat-0", ReplicaPhase::kStarting, orch::ReplicaState::kRestarting, kNotInstalled);
  EXPECT_EQ(StartFailureOf({failing}), kNotInstalled);
  EXPECT_EQ(StartFailureOf(
                {Replica("chat-1", ReplicaPhase::kPending, orch::ReplicaState::kPending), failing}),
            kNotInstalled);
  // A ready replica serves: the service is not failing, whatever another one does.
  EXPECT_EQ(StartFailureOf({failing, Replica("chat-1", ReplicaPhase::kReady,
                                             orch::ReplicaState::kReady, "", 42)}),
            "");
  EXPECT_EQ(StartFailureOf({Replica("chat-0", ReplicaPhase::kStarting,
                                    orch::ReplicaState::kStarting, "", 42)}),
            "");
  EXPECT_EQ(StartFailureOf({}), "");
}

// The log hears of a failure once, again when its message changes, and once when a replica
// runs again; not every tick, nor when the failing replica merely went away (held at zero).
TEST(StartFailureTest, LogsOncePerDistinctErrorAndOnRecovery) {
  StartFailure failure;
  const std::vector<orch::ReplicaInfo> failing = {
      Replica("chat-0", ReplicaPhase::kStarting, orch::ReplicaState::kRestarting, kNotInstalled)};
  std::optional<std::string> line = failure.Observe("chat", failing);
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find("service 'chat' cannot start replicas: " + kNotInstalled), std::string::npos)
      << *line;
  EXPECT_EQ(failure.failure(), kNotInstalled);
  EXPECT_FALSE(failure.Observe("chat", failing).has_value());
  EXPECT_FALSE(failure.Observe("chat", {}).has_value()) << "no replica is no recovery";
  EXPECT_EQ(failure.failure(), "");
  EXPECT_FALSE(failure.Observe("chat", failing).has_value()) << "the same error again";
  const std::string denied = "cannot start 'vllm': Permission denied";
  line = failure.Observe("chat", {Replica("chat-1", ReplicaPhase::kStarting,
                                          orch::ReplicaState::kRestarting, denied)});
  ASSERT_TRUE(line.has_value());
  EXPECT_NE(line->find(denied), std::string::npos) << *line;
  line = failure.Observe(
      "chat", {Replica("chat-1", ReplicaPhase::kStarting, orch::ReplicaState::kStarting, "", 7)});
  ASSERT_TRUE(line.has_value());
  EXPECT_EQ(*line, "service 'chat' starts replicas again");
  EXPECT_EQ(failure.failure(), "");
  EXPECT_FALSE(failure
                   .Observe("chat", {Replica("chat-1", ReplicaPhase::kReady,
                                             orch::ReplicaState::kReady, "", 7)})
                   .has_value());
}

}  // namespace
}  // namespace gpuscale::daemon
