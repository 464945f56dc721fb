// `gpuscale render` end to end: the built binary renders three of the Corrino (OCI AI
// Blueprints) autoscaling recipes and two services of a daemon config; the output must equal
// the golden manifests in tests/fixtures/k8s/ exactly (UPDATE_GOLDEN=1 rewrites them) and
// every document must pass the Kubernetes and KEDA schemas (tools/k8s-validate, npm packages
// kubernetes-models and @kubernetes-models/keda). Skipped only when node is not installed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_test_util.h"

namespace {

namespace fs = std::filesystem;
using gpuscale::cli_test::kBinary;
using gpuscale::cli_test::ReadAll;
using gpuscale::cli_test::RunResult;

constexpr char kFixtures[] = GPUSCALE_SOURCE_DIR "/tests/fixtures/k8s";
constexpr char kValidatorDir[] = GPUSCALE_SOURCE_DIR "/tools/k8s-validate";

// The first executable `node` on PATH, else /usr/bin/node, else "".
std::string FindNode() {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path candidate = fs::path(dir) / "node";
    if (!dir.empty() && access(candidate.c_str(), X_OK) == 0) return candidate.string();
  }
  return access("/usr/bin/node", X_OK) == 0 ? "/usr/bin/node" : "";
}

class RenderCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = gpuscale::cli_test::MakeTempDir("gpuscale_render_");
    ASSERT_FALSE(dir_.empty());
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs `program args...`, stdout and stderr captured through files in the scratch dir.
  RunResult Run(const std::string& program, const std::vector<std::string>& args) {
    return gpuscale::cli_test::RunProgram(program, args, dir_);
  }

  // Renders with `args`, compares with (or, with UPDATE_GOLDEN=1, rewrites) the golden file,
  // and returns the path of a scratch copy for the validator.
  fs::path RenderGolden(const std::vector<std::string>& args, const std::string& golden) {
    RunResult r = Run(kBinary, args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const fs::path golden_path = fs::path(kFixtures) / golden;
    if (std::getenv("UPDATE_GOLDEN") != nullptr) {
      std::ofstream(golden_path) << r.out;
    } else {
      EXPECT_EQ(r.out, ReadAll(golden_path))
          << "rendered output differs from " << golden_path
          << " (rerun with UPDATE_GOLDEN=1 to accept the change)";
    }
    const fs::path copy = dir_ / golden;
    std::ofstream(copy) << r.out;
    return copy;
  }

  // Every document of `files` against the schemas; skips when node is missing.
  void Validate(const std::vector<fs::path>& files) {
    const std::string node = FindNode();
    if (node.empty()) GTEST_SKIP() << "node is not installed: schema validation skipped";
    ASSERT_TRUE(fs::exists(fs::path(kValidatorDir) / "node_modules" / "kubernetes-models"))
        << "the validator's packages are missing: run `npm ci --prefix tools/k8s-validate`";
    std::vector<std::string> args{std::string(kValidatorDir) + "/validate.mjs"};
    for (const fs::path& f : files) args.push_back(f.string());
    RunResult r = Run(node, args);
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  }

  fs::path dir_;
};

std::string Fixture(const std::string& name) { return std::string(kFixtures) + "/" + name; }

// The reference recipes carry no container args: the model comes from --model.
constexpr char kModel[] = "Qwen/Qwen2.5-7B-Instruct";

TEST_F(RenderCliTest, ReferenceRecipesMatchGoldenAndSchemas) {
  std::vector<fs::path> rendered;
  for (const std::string stem : {"h100_pod_autoscaling", "a10_node_autoscaling", "a10_advanced"}) {
    rendered.push_back(
        RenderGolden({"render", "--recipe", Fixture(stem + ".json"), "--model", kModel},
                     stem + ".yaml"));
  }
  rendered.push_back(RenderGolden(
      {"render", "--recipe", Fixture("a10_advanced.json"), "-o", "json", "--namespace", "llm",
       "--model", kModel},
      "a10_advanced.json.golden"));
  Validate(rendered);
}

TEST_F(RenderCliTest, ServicesMatchGoldenAndSchemas) {
  const std::string config = Fixture("gpuscale.yaml");
  std::vector<fs::path> rendered;
  // slo policy: only the external scaler can carry it to Kubernetes.
  rendered.push_back(RenderGolden({"render", "--service", "chat", "--config", config,
                                   "--scaler-address", "gpuscale.gpuscale-system.svc:9443"},
                                  "chat_external.yaml"));
  rendered.push_back(
      RenderGolden({"render", "--service", "embed", "--config", config, "--trigger", "prometheus"},
                   "embed_prometheus.yaml"));
  Validate(rendered);
}

TEST_F(RenderCliTest, ValidatorRejectsSchemaErrors) {
  const fs::path bad = dir_ / "bad.yaml";
  std::ofstream(bad) << ReadAll(fs::path(kFixtures) / "h100_pod_autoscaling.yaml")
                     << "---\napiVersion: keda.sh/v1alpha1\nkind: ScaledObject\nmetadata: "
                        "{name: x}\nspec:\n  scaleTargetRef: {name: x}\n  pollingInterval: "
                        "soon\n  triggers: [{type: prometheus, metadata: {query: q}}]\n";
  const std::string node = FindNode();
  if (node.empty()) GTEST_SKIP() << "node is not installed: schema validation skipped";
  RunResult r = Run(node, {std::string(kValidatorDir) + "/validate.mjs", bad.string()});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("pollingInterval"), std::string::npos) << r.err;
}

TEST_F(RenderCliTest, ErrorsNameTheFlagOrField) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const fs::path bad_recipe = dir_ / "bad.json";
  std::ofstream(bad_recipe) << R"({"recipe_pod_autoscaling_params": {"min_replicas": 1,
    "max_replicas": 4, "scaling_threshold": -1}})";
  const std::vector<Case> cases = {
      {{"render", "--recipe", bad_recipe.string()},
       "recipe_pod_autoscaling_params.scaling_threshold: must be > 0"},
      {{"render", "--service", "nope", "--config", Fixture("gpuscale.yaml")},
       "no service 'nope' in the config (services: chat, embed)"},
      {{"render", "--service", "chat", "--config", Fixture("gpuscale.yaml")}, "--scaler-address"},
      {{"render", "--service", "chat", "--config", Fixture("gpuscale.yaml"), "--trigger",
        "prometheus"},
       "'slo' policy family"},
      {{"render", "--recipe", Fixture("a10_advanced.json"), "--name", "Bad_Name", "--model",
        kModel},
       "DNS-1035"},
      {{"render", "--recipe", Fixture("a10_advanced.json")},
       "recipe_container_command_args: the recipe has no recipe_container_command_args, so its "
       "vLLM container would start without a model: pass --model <name>"},
  };
  for (const Case& c : cases) {
    RunResult r = Run(kBinary, c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[2] << ": " << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
}

}  // namespace
