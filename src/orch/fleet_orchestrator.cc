#include "orch/fleet_orchestrator.h"

#include <fmt/format.h>
#include <httplib.h>

#include <charconv>
#include <map>
#include <nlohmann/json.hpp>
#include <utility>

#include "net/http_client.h"

namespace gpuscale::orch {

using events::EventKind;

namespace {

using json = nlohmann::json;

httplib::Client Client(const std::string& host, int port, Seconds timeout) {
  httplib::Client client(host, port);
  const auto usec = static_cast<int64_t>(timeout.count() * 1e6);
  client.set_connection_timeout(usec / 1000000, usec % 1000000);
  client.set_read_timeout(usec / 1000000, usec % 1000000);
  client.set_write_timeout(usec / 1000000, usec % 1000000);
  return client;
}

// What went wrong with a control call, for a replica's last_error (and its events: the
// body's first 200 bytes, however much the fleet sent).
std::string Failure(const httplib::Result& res, std::string_view what) {
  if (!res) return fmt::format("the fleet did not answer {}: {}", what, httplib::to_string(res.error()));
  return fmt::format("the fleet answered {} with HTTP {}: {}", what, res->status,
                     std::string_view(res->body).substr(0, 200));
}

bool IsTcpPort(int64_t port) { return port >= 1 && port <= 65535; }

}  // namespace

Result<std::unique_ptr<FleetOrchestrator>> FleetOrchestrator::Create(FleetConfig config,
                                                                     SerialCalls::Mode calls) {
  if (config.service.empty()) return InvalidArgument("expected a service name", "service");
  constexpr std::string_view kScheme = "http://";
  std::string_view rest = config.url;
  const size_t colon = rest.rfind(':');
  int port = 0;
  if (rest.starts_with(kScheme) && colon > kScheme.size()) {
    const std::string_view digits = rest.substr(colon + 1);
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (ec != std::errc() || end != digits.data() + digits.size()) port = 0;
  }
  if (!IsTcpPort(port)) {
    return InvalidArgument(
        fmt::format("expected http://host:port of a `gpuscale fleet`, got '{}'", config.url),
        "fleet.url");
  }
  std::string host(rest.substr(kScheme.size(), colon - kScheme.size()));
  return std::unique_ptr<FleetOrchestrator>(
      new FleetOrchestrator(std::move(config), std::move(host), port, calls));
}

FleetOrchestrator::FleetOrchestrator(FleetConfig config, std::string host, int port,
                                     SerialCalls::Mode calls)
    : config_(std::move(config)),
      host_(std::move(host)),
      port_(port),
      book_(ReplicaBookConfig{config_.service, config_.drain_grace}),
      calls_(calls) {}

std::vector<scale::ReplicaStatus> FleetOrchestrator::ListReplicas() const {
  return book_.ListReplicas();
}

void FleetOrchestrator::Open(Record& r) {
  if (r.opening) return;
  r.opening = true;
  // The calls own copies of what they use (serial_calls.h): they may outlive this object.
  calls_.Post([this, id = r.id, host = host_, port = port_,
               timeout = config_.timeout]() -> SerialCalls::Apply {
    httplib::Client client = Client(host, port, timeout);
    const httplib::Result res =
        client.Post("/replicas", json{{"id", id}}.dump(), "application/json");
    const json body = res && res->status == 200
                          ? json::parse(res->body, nullptr, /*allow_exceptions=*/false)
                          : json();
    Result<int> given = Unavailable(Failure(res, "a new replica"));
    if (body.is_object() && body.contains("port") && body["port"].is_number_integer()) {
      const int64_t port = body["port"].get<int64_t>();
      given = IsTcpPort(port) ? Result<int>(static_cast<int>(port))
                              : Unavailable(fmt::format("the fleet gave replica {} port {}, "
                                                        "not one of 1..65535",
                                                        id, port));
    }
    return [this, id, given = std::move(given)](Seconds at) { ApplyOpen(id, given, at); };
  });
}

void FleetOrchestrator::ApplyOpen(const std::string& id, Result<int> port, Seconds now) {
  Record* r = book_.Find(id);  // Stop removes a replica from the book at once
  if (r == nullptr) return;    // stopped meanwhile: its DELETE was posted after this POST
  r->opening = false;
  if (!port) {
    // Said once per reason, not every retry.
    if (r->last_error != port.error().message) {
      book_.Emit(now, r->id, EventKind::kReplicaPending, port.error().message);
    }
    r->last_error = port.error().message;
    return;
  }
  r->port = *port;
  r->started_at = now;
  r->next_probe_at = now;
  r->last_error.clear();
  ReplicaBookBase::SetPhase(*r, scale::ReplicaPhase::kStarting, now);
  book_.Emit(now, r->id, EventKind::kReplicaStarted,
             fmt::format("on the fleet at {}:{}", host_, r->port));
}

Result<scale::ReplicaStatus> FleetOrchestrator::Start(Seconds now) {
  book_.Touch(now);
  GS_RETURN_IF_ERROR(book_.CheckRoom(book_.ActiveCount(), config_.max_replicas));
  Record r;
  r.id = book_.NextId();
  r.phase_since = now;
  Record& added = book_.Add(std::move(r));
  Open(added);
  return book_.StatusOf(added);
}

Status FleetOrchestrator::Place(const std::string& id, Seconds now) {
  GS_ASSIGN_OR_RETURN(Record* r, book_.GetPending(id, now));
  if (r->opening) return ResourceExhausted("waiting for the fleet's answer");
  Open(*r);  // the last attempt failed: r->last_error says why
  return Unavailable(r->last_error.empty() ? "the fleet gave no port yet" : r->last_error);
}

Status FleetOrchestrator::Drain(const std::string& id, Seconds now) { return book_.Drain(id, now); }

Status FleetOrchestrator::Resume(const std::string& id, Seconds now) {
  return book_.Resume(id, now);
}

Status FleetOrchestrator::Stop(const std::string& id, Seconds now) {
  GS_ASSIGN_OR_RETURN(Record* r, book_.BeginStop(id, now));
  if (r->port > 0 || r->opening) {
    calls_.Post([this, id = r->id, host = host_, port = port_,
                 timeout = config_.timeout]() -> SerialCalls::Apply {
      httplib::Client client = Client(host, port, timeout);
      const httplib::Result res = client.Delete("/replicas/" + id);
      // A failure leaves the fleet a port nobody uses; the replica is gone for the daemon
      // either way.
      std::string message = !res || (res->status != 204 && res->status != 404)
                                ? Failure(res, "the removal")
                                : "removed from the fleet";
      return [this, id, message = std::move(message)](Seconds at) {
        book_.Emit(at, id, EventKind::kReplicaStopped, message);
      };
    });
  }
  const std::string stopped = r->id;
  book_.RetainIf([&](const Record& x) { return x.id != stopped; });
  return OkStatus();
}

void FleetOrchestrator::Probe(Record& r) {
  r.probing = true;
  // net::HttpGet, as the local probe: one deadline for the whole exchange, so a replica
  // port that trickles its answer cannot hold the calls (httplib's are per read).
  net::HttpGetRequest probe;
  probe.host = host_;
  probe.port = r.port;
  probe.target = config_.readiness_path;
  probe.timeout = config_.timeout;
  calls_.Post([this, id = r.id, port = r.port, probe = std::move(probe)]() -> SerialCalls::Apply {
    const Result<net::HttpGetResponse> res = net::HttpGet(probe);
    const bool ready = res && res->status == 200;
    return [this, id, port, ready](Seconds at) {
      Record* r = book_.Find(id);  // not a stopping one
      if (r == nullptr) return;
      r->probing = false;
      if (!ready || r->port != port || r->phase != scale::ReplicaPhase::kStarting) return;
      ReplicaBookBase::SetPhase(*r, scale::ReplicaPhase::kReady, at);
      book_.Emit(at, r->id, EventKind::kReplicaReady,
                 ReadyMessage(*r, at, fmt::format("port {}", r->port)));
    };
  });
}

// Answers are applied before and after posting: a replica whose port came is probed in
// the same Poll, and an inline SerialCalls (tests) applies this Poll's probes in it too.
void FleetOrchestrator::Poll(Seconds now) {
  book_.Touch(now);
  calls_.ApplyDone(now);
  for (Record& r : book_.records()) {
    if (r.stopping || r.opening || r.probing) continue;
    if (r.phase == scale::ReplicaPhase::kPending) {
      Open(r);
      continue;
    }
    if (r.phase != scale::ReplicaPhase::kStarting || now < r.next_probe_at) continue;
    r.next_probe_at = now + Seconds{1};
    Probe(r);
  }
  calls_.ApplyDone(now);
}

AdoptionReport FleetOrchestrator::Adopt(const std::vector<ReplicaRecord>& records, Seconds now) {
  AdoptionReport report;
  std::map<std::string, int> listed;  // id -> port, as the fleet has them
  httplib::Client client = Client(host_, port_, config_.timeout);
  const httplib::Result res = client.Get("/replicas");
  const json body = res && res->status == 200
                        ? json::parse(res->body, nullptr, /*allow_exceptions=*/false)
                        : json();
  if (body.is_object() && body.contains("replicas") && body["replicas"].is_array()) {
    for (const json& r : body["replicas"]) {
      if (r.is_object() && r.value("id", json()).is_string() &&
          r.value("port", json()).is_number_integer() && IsTcpPort(r["port"].get<int64_t>())) {
        listed[r["id"].get<std::string>()] = static_cast<int>(r["port"].get<int64_t>());
      }
    }
  } else if (!records.empty()) {
    report.errors.push_back(Failure(res, "the replica list"));
  }
  for (const ReplicaRecord& record : records) {
    book_.ReserveId(record.id);
    const auto it = listed.find(record.id);
    if (record.stopping || it == listed.end() || it->second != record.port) {
      report.cleaned_up.push_back(record.id);
      continue;
    }
    Record r;
    ReplicaBookBase::Restore(r, record);
    ReplicaBookBase::SetPhase(r, scale::ReplicaPhase::kReady, now);
    book_.Add(std::move(r));
    book_.Emit(now, record.id, EventKind::kReplicaAdopted,
               fmt::format("still on the fleet at port {}", record.port));
    report.adopted.push_back(record.id);
  }
  return report;
}

Status FleetOrchestrator::ReportOutstanding(const std::string& id, int outstanding) {
  return book_.ReportOutstanding(id, outstanding);
}

bool FleetOrchestrator::HasProcesses() const { return calls_.pending() > 0; }

std::vector<ReplicaInfo> FleetOrchestrator::Replicas(Seconds now) const {
  std::vector<ReplicaInfo> out;
  for (const Record& r : book_.records()) {
    ReplicaInfo info = book_.InfoOf(r, now, /*running=*/r.port > 0, /*backoff=*/false);
    info.host = host_;
    out.push_back(std::move(info));
  }
  return out;
}

std::vector<ReplicaRecord> FleetOrchestrator::Records() const {
  std::vector<ReplicaRecord> out;
  for (const Record& r : book_.records()) {
    ReplicaRecord record = ReplicaBookBase::RecordOf(r);
    record.host = host_;
    record.engine_id = "fleet";
    out.push_back(std::move(record));
  }
  return out;
}

std::vector<OrchestratorEvent> FleetOrchestrator::TakeEvents() { return book_.TakeEvents(); }

scale::AdapterCapacity FleetOrchestrator::Capacity(Seconds /*now*/) const {
  scale::AdapterCapacity capacity;
  capacity.name = "fleet";
  capacity.max_worker_groups = config_.max_replicas;
  return capacity;
}

}  // namespace gpuscale::orch
