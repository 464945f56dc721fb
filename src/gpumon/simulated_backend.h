// SimulatedBackend: GPUs described by an inventory file (YAML or JSON, format in
// examples/inventory.yaml) or, without a file, the built-in 4 x H100 80GB default.
//
// The file is re-read whenever its content changes (compared by hash on every Query, so even
// same-size rewrites within one mtime tick are seen): tests and demos edit the file while a
// process runs to change GPU state. A change that does not parse makes Query fail with the
// parser's message; the next good write recovers.
//
// Thread-safety: like every GpuBackend, one caller at a time (the Monitor serializes calls).
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "gpu/gpu_info.h"
#include "gpumon/inventory.h"

namespace gpuscale::gpu {

class SimulatedBackend final : public GpuBackend {
 public:
  // The default inventory, no file.
  SimulatedBackend();

  // Reads and validates `path` once so that a bad file fails at start-up.
  // Errors: kNotFound when the file cannot be read, kInvalidArgument from the parser.
  static Result<std::unique_ptr<SimulatedBackend>> FromFile(std::string path);

  std::string_view Name() const override { return "simulated"; }
  Result<GpuSnapshot> Query(Seconds now) override;

  // How many times the file was (re-)parsed; lets tests see that a change was picked up.
  int reload_count() const { return reload_count_; }

 private:
  explicit SimulatedBackend(std::string path);
  Status ReloadIfChanged();

  std::string path_;                    // empty: default inventory
  std::optional<size_t> content_hash_;  // hash of the text last parsed
  Inventory inventory_;
  int reload_count_ = 0;
};

}  // namespace gpuscale::gpu
