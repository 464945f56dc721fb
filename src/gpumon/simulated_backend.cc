#include "gpumon/simulated_backend.h"

#include <fmt/format.h>

#include <fstream>
#include <functional>
#include <sstream>
#include <utility>

namespace gpuscale::gpu {

SimulatedBackend::SimulatedBackend() : inventory_(DefaultInventory()) {}

SimulatedBackend::SimulatedBackend(std::string path) : path_(std::move(path)) {}

Result<std::unique_ptr<SimulatedBackend>> SimulatedBackend::FromFile(std::string path) {
  std::unique_ptr<SimulatedBackend> backend(new SimulatedBackend(std::move(path)));
  GS_RETURN_IF_ERROR(backend->ReloadIfChanged());
  return backend;
}

Status SimulatedBackend::ReloadIfChanged() {
  if (path_.empty()) return OkStatus();
  std::ifstream in(path_, std::ios::binary);
  if (!in) {
    return NotFound(fmt::format("cannot read inventory file '{}' (check --inventory)", path_),
                    "--inventory");
  }
  std::ostringstream text;
  text << in.rdbuf();
  const std::string content = text.str();
  const size_t hash = std::hash<std::string>{}(content);
  if (content_hash_ && *content_hash_ == hash) return OkStatus();
  GS_ASSIGN_OR_RETURN(Inventory inventory, ParseInventory(content, path_));
  inventory_ = std::move(inventory);
  content_hash_ = hash;
  ++reload_count_;
  return OkStatus();
}

Result<GpuSnapshot> SimulatedBackend::Query(Seconds now) {
  GS_RETURN_IF_ERROR(ReloadIfChanged());
  GpuSnapshot snapshot;
  snapshot.backend = "simulated";
  snapshot.taken_at = now;
  snapshot.gpus = inventory_.gpus;
  snapshot.topology = inventory_.topology;
  return snapshot;
}

}  // namespace gpuscale::gpu
