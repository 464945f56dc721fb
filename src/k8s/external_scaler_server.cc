#include "k8s/external_scaler_server.h"

#include <fmt/format.h>
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "externalscaler.grpc.pb.h"

namespace gpuscale::k8s {
namespace {

grpc::StatusCode GrpcCode(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return grpc::StatusCode::INVALID_ARGUMENT;
    case ErrorCode::kNotFound:
      return grpc::StatusCode::NOT_FOUND;
    case ErrorCode::kFailedPrecondition:
      return grpc::StatusCode::FAILED_PRECONDITION;
    case ErrorCode::kResourceExhausted:
      return grpc::StatusCode::RESOURCE_EXHAUSTED;
    case ErrorCode::kUnavailable:
      return grpc::StatusCode::UNAVAILABLE;
    case ErrorCode::kDeadlineExceeded:
      return grpc::StatusCode::DEADLINE_EXCEEDED;
    case ErrorCode::kInternal:
      return grpc::StatusCode::INTERNAL;
  }
  return grpc::StatusCode::UNKNOWN;
}

grpc::Status ToGrpc(const Error& error) {
  return grpc::Status(GrpcCode(error.code), error.ToString());
}

// The RPC handlers. Stateless apart from the stop flag that ends open streams.
class ScalerService final : public externalscaler::ExternalScaler::Service {
 public:
  ScalerService(daemon::DaemonApi& api, Seconds poll_interval)
      : api_(api), poll_interval_(poll_interval) {}

  void ResetStop() {
    std::lock_guard lock(mu_);
    stopping_ = false;
  }

  void RequestStop() {
    std::lock_guard lock(mu_);
    stopping_ = true;
    stop_cv_.notify_all();
  }

  grpc::Status IsActive(grpc::ServerContext*, const externalscaler::ScaledObjectRef* ref,
                        externalscaler::IsActiveResponse* response) override {
    Result<int> desired = Desired(*ref);
    if (!desired) return ToGrpc(desired.error());
    response->set_result(*desired > 0);
    return grpc::Status::OK;
  }

  grpc::Status StreamIsActive(
      grpc::ServerContext* context, const externalscaler::ScaledObjectRef* ref,
      grpc::ServerWriter<externalscaler::IsActiveResponse>* writer) override {
    std::optional<bool> last;
    while (!context->IsCancelled()) {
      Result<int> desired = Desired(*ref);
      if (!desired) return ToGrpc(desired.error());  // KEDA reconnects and logs the message
      const bool active = *desired > 0;
      if (!last || *last != active) {
        externalscaler::IsActiveResponse response;
        response.set_result(active);
        if (!writer->Write(response)) return grpc::Status::OK;  // client went away
        last = active;
      }
      std::unique_lock lock(mu_);
      stop_cv_.wait_for(lock, std::chrono::duration<double>(poll_interval_.count()),
                        [this] { return stopping_; });
      if (stopping_) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "gpuscale is stopping");
    }
    return grpc::Status::CANCELLED;
  }

  grpc::Status GetMetricSpec(grpc::ServerContext*, const externalscaler::ScaledObjectRef* ref,
                             externalscaler::GetMetricSpecResponse* response) override {
    Result<std::string> service = ServiceName(*ref);
    if (!service) return ToGrpc(service.error());
    Result<int> desired = Desired(*ref);  // validates that the service exists
    if (!desired) return ToGrpc(desired.error());
    externalscaler::MetricSpec* spec = response->add_metricspecs();
    spec->set_metricname(ExternalScalerServer::MetricName(*service));
    spec->set_targetsize(1);
    spec->set_targetsizefloat(1.0);
    return grpc::Status::OK;
  }

  grpc::Status GetMetrics(grpc::ServerContext*, const externalscaler::GetMetricsRequest* request,
                          externalscaler::GetMetricsResponse* response) override {
    const externalscaler::ScaledObjectRef& ref = request->scaledobjectref();
    Result<std::string> service = ServiceName(ref);
    if (!service) return ToGrpc(service.error());
    Result<int> desired = Desired(ref);
    if (!desired) return ToGrpc(desired.error());
    externalscaler::MetricValue* value = response->add_metricvalues();
    // KEDA asks by the name GetMetricSpec gave; answer under the name asked for.
    value->set_metricname(request->metricname().empty() ? ExternalScalerServer::MetricName(*service)
                                                        : request->metricname());
    value->set_metricvalue(*desired);
    value->set_metricvaluefloat(static_cast<double>(*desired));
    return grpc::Status::OK;
  }

 private:
  static Result<std::string> ServiceName(const externalscaler::ScaledObjectRef& ref) {
    const auto& metadata = ref.scalermetadata();
    auto it = metadata.find("service");
    if (it == metadata.end() || it->second.empty()) {
      return InvalidArgument(
          fmt::format("ScaledObject {}/{}: the external trigger's metadata needs `service: "
                      "<gpuscale service name>`",
                      ref.namespace_(), ref.name()),
          "scalerMetadata.service");
    }
    return it->second;
  }

  Result<int> Desired(const externalscaler::ScaledObjectRef& ref) {
    GS_ASSIGN_OR_RETURN(std::string name, ServiceName(ref));
    Result<daemon::ServiceView> view = api_.GetService(name);
    if (view) return view->desired_replicas;
    if (view.error().code != ErrorCode::kNotFound) return Unexpected<Error>(view.error());
    std::string names;
    for (const daemon::ServiceView& s : api_.ListServices()) {
      names += (names.empty() ? "" : ", ") + s.config.name;
    }
    return NotFound(fmt::format("no gpuscale service '{}' (services: {})", name,
                                names.empty() ? "none" : names),
                    "scalerMetadata.service");
  }

  daemon::DaemonApi& api_;
  const Seconds poll_interval_;
  std::mutex mu_;  // guards stopping_
  std::condition_variable stop_cv_;
  bool stopping_ = false;
};

}  // namespace

struct ExternalScalerServer::Impl {
  Impl(daemon::DaemonApi& api, ExternalScalerOptions o)
      : options(std::move(o)), service(api, options.poll_interval) {}
  ExternalScalerOptions options;
  ScalerService service;
  std::unique_ptr<grpc::Server> server;
};

ExternalScalerServer::ExternalScalerServer(daemon::DaemonApi& api, ExternalScalerOptions options)
    : impl_(std::make_unique<Impl>(api, std::move(options))) {}

ExternalScalerServer::~ExternalScalerServer() { Stop(); }

std::string ExternalScalerServer::MetricName(const std::string& service) {
  return fmt::format("gpuscale-{}-desired-replicas", service);
}

Result<int> ExternalScalerServer::Start() {
  if (impl_->server) return FailedPrecondition("the KEDA external scaler is already running");
  const std::string address = fmt::format("{}:{}", impl_->options.host, impl_->options.port);
  int bound_port = 0;
  impl_->service.ResetStop();
  grpc::ServerBuilder builder;
  // gRPC sets SO_REUSEPORT by default, which would let a second gpuscale share the port
  // and receive half of KEDA's calls; a busy port must be an error instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &bound_port);
  builder.RegisterService(&impl_->service);
  impl_->server = builder.BuildAndStart();
  if (!impl_->server || bound_port == 0) {
    impl_->server.reset();
    return Unavailable(fmt::format("cannot listen on {} for the KEDA external scaler (address "
                                   "in use, or not a local address?)",
                                   address),
                       "--keda-scaler-listen");
  }
  return bound_port;
}

void ExternalScalerServer::Stop() {
  if (!impl_->server) return;
  impl_->service.RequestStop();  // ends StreamIsActive loops, so Shutdown does not wait on them
  impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
  impl_->server->Wait();
  impl_->server.reset();
}

}  // namespace gpuscale::k8s
