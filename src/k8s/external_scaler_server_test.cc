// The KEDA external scaler over a fake daemon, called with a real gRPC client generated
// from the same proto KEDA uses (proto/externalscaler.proto), on 127.0.0.1.
#include "k8s/external_scaler_server.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "externalscaler.grpc.pb.h"
#include "testing/fake_scaler_daemon.h"

namespace gpuscale::k8s {
namespace {

class ExternalScalerServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    daemon_.SetDesired("chat", 3);
    daemon_.SetDesired("idle", 0);
    server_ = std::make_unique<ExternalScalerServer>(
        daemon_, ExternalScalerOptions{"127.0.0.1", 0, Seconds{0.02}});
    Result<int> port = server_->Start();
    ASSERT_TRUE(port) << port.error().ToString();
    ASSERT_GT(*port, 0);
    channel_ = grpc::CreateChannel(fmt_address(*port), grpc::InsecureChannelCredentials());
    stub_ = externalscaler::ExternalScaler::NewStub(channel_);
  }
  void TearDown() override { server_->Stop(); }

  static std::string fmt_address(int port) { return "127.0.0.1:" + std::to_string(port); }

  static externalscaler::ScaledObjectRef Ref(const std::string& service) {
    externalscaler::ScaledObjectRef ref;
    ref.set_name("chat-so");
    ref.set_namespace_("default");
    if (!service.empty()) (*ref.mutable_scalermetadata())["service"] = service;
    return ref;
  }

  static void Deadline(grpc::ClientContext& context, int seconds = 10) {
    context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
  }

  FakeScalerDaemon daemon_;
  std::unique_ptr<ExternalScalerServer> server_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<externalscaler::ExternalScaler::Stub> stub_;
};

TEST_F(ExternalScalerServerTest, IsActiveFollowsDesiredReplicas) {
  for (const auto& [service, expected] : {std::pair{"chat", true}, std::pair{"idle", false}}) {
    grpc::ClientContext context;
    Deadline(context);
    externalscaler::IsActiveResponse response;
    grpc::Status status = stub_->IsActive(&context, Ref(service), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.result(), expected) << service;
  }
}

TEST_F(ExternalScalerServerTest, MetricSpecTargetsOneReplicaPerUnit) {
  grpc::ClientContext context;
  Deadline(context);
  externalscaler::GetMetricSpecResponse response;
  grpc::Status status = stub_->GetMetricSpec(&context, Ref("chat"), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.metricspecs_size(), 1);
  EXPECT_EQ(response.metricspecs(0).metricname(), "gpuscale-chat-desired-replicas");
  EXPECT_EQ(response.metricspecs(0).targetsize(), 1);
  EXPECT_EQ(response.metricspecs(0).targetsizefloat(), 1.0);
}

// HPA AverageValue: desired = ceil(metric / target) = ceil(3 / 1) = the daemon's 3.
TEST_F(ExternalScalerServerTest, MetricsServeTheDecidedCount) {
  daemon_.SetDesired("chat", 5);
  grpc::ClientContext context;
  Deadline(context);
  externalscaler::GetMetricsRequest request;
  *request.mutable_scaledobjectref() = Ref("chat");
  request.set_metricname("s0-gpuscale-chat-desired-replicas");
  externalscaler::GetMetricsResponse response;
  grpc::Status status = stub_->GetMetrics(&context, request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(response.metricvalues_size(), 1);
  EXPECT_EQ(response.metricvalues(0).metricname(), "s0-gpuscale-chat-desired-replicas");
  EXPECT_EQ(response.metricvalues(0).metricvalue(), 5);
  EXPECT_EQ(response.metricvalues(0).metricvaluefloat(), 5.0);
}

TEST_F(ExternalScalerServerTest, MissingServiceMetadataIsInvalidArgument) {
  grpc::ClientContext context;
  Deadline(context);
  externalscaler::IsActiveResponse response;
  grpc::Status status = stub_->IsActive(&context, Ref(""), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(status.error_message().find("service"), std::string::npos) << status.error_message();
}

TEST_F(ExternalScalerServerTest, UnknownServiceIsNotFoundAndListsServices) {
  grpc::ClientContext context;
  Deadline(context);
  externalscaler::GetMetricsRequest request;
  *request.mutable_scaledobjectref() = Ref("nope");
  externalscaler::GetMetricsResponse response;
  grpc::Status status = stub_->GetMetrics(&context, request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(status.error_message().find("'nope'"), std::string::npos) << status.error_message();
  EXPECT_NE(status.error_message().find("chat, idle"), std::string::npos) << status.error_message();
}

TEST_F(ExternalScalerServerTest, DaemonFailureIsUnavailable) {
  daemon_.SetFailure(Unavailable("state not loaded yet"));
  grpc::ClientContext context;
  Deadline(context);
  externalscaler::GetMetricSpecResponse response;
  grpc::Status status = stub_->GetMetricSpec(&context, Ref("chat"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_NE(status.error_message().find("state not loaded"), std::string::npos);
}

TEST_F(ExternalScalerServerTest, StreamIsActivePushesChanges) {
  grpc::ClientContext context;
  Deadline(context, 20);
  auto reader = stub_->StreamIsActive(&context, Ref("chat"));
  externalscaler::IsActiveResponse response;
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_TRUE(response.result());  // the current state first
  daemon_.SetDesired("chat", 0);
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_FALSE(response.result());
  daemon_.SetDesired("chat", 2);
  ASSERT_TRUE(reader->Read(&response));
  EXPECT_TRUE(response.result());
  context.TryCancel();
  while (reader->Read(&response)) {
  }
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::CANCELLED);
}

TEST_F(ExternalScalerServerTest, StopEndsOpenStreams) {
  grpc::ClientContext context;
  Deadline(context, 20);
  auto reader = stub_->StreamIsActive(&context, Ref("chat"));
  externalscaler::IsActiveResponse response;
  ASSERT_TRUE(reader->Read(&response));
  server_->Stop();  // returns only once the stream handler has finished
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_FALSE(reader->Finish().ok());
}

TEST_F(ExternalScalerServerTest, StreamForUnknownServiceFails) {
  grpc::ClientContext context;
  Deadline(context);
  auto reader = stub_->StreamIsActive(&context, Ref("nope"));
  externalscaler::IsActiveResponse response;
  EXPECT_FALSE(reader->Read(&response));
  EXPECT_EQ(reader->Finish().error_code(), grpc::StatusCode::NOT_FOUND);
}

TEST(ExternalScalerServerStartTest, SecondStartFailsAndBusyPortIsUnavailable) {
  FakeScalerDaemon daemon;
  ExternalScalerServer first(daemon, ExternalScalerOptions{});
  Result<int> port = first.Start();
  ASSERT_TRUE(port) << port.error().ToString();
  Result<int> again = first.Start();
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, ErrorCode::kFailedPrecondition);
  ExternalScalerServer second(daemon, ExternalScalerOptions{"127.0.0.1", *port, Seconds{1}});
  Result<int> busy = second.Start();
  ASSERT_FALSE(busy);
  EXPECT_EQ(busy.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(busy.error().message.find(std::to_string(*port)), std::string::npos);
}

}  // namespace
}  // namespace gpuscale::k8s
