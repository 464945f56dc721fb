// The generated job script really passes awkward arguments through /bin/sh unchanged.
#include "orch/slurm_job_script.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gpumon/process_runner.h"

namespace gpuscale::orch {
namespace {

// Runs `script` with /bin/sh and SLURM_JOB_GPUS set; returns stdout without the header line.
std::string RunScript(const std::string& script) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("gpuscale_script_" + std::to_string(getpid())))
          .string();
  {
    std::ofstream out(path);
    out << script;
  }
  Result<gpu::ProcessOutput> out =
      gpu::RunProcess({"env", "SLURM_JOB_GPUS=2,3", "/bin/sh", path}, Seconds{10});
  std::filesystem::remove(path);
  if (!out) return "error: " + out.error().ToString();
  std::string text = out->stdout_text;
  return text.substr(text.find('\n') + 1);
}

TEST(SlurmJobScriptTest, QuotesArgumentsWithSpacesQuotesAndDollars) {
  const std::vector<std::string> argv_template = {
      "printf", "[%s]\\n", "a b", "it's", "\"double\"", "$HOME", "`id`", "x;y", "{port}",
      "--name={replica}", "--gpus={gpus}!", ""};
  Result<SlurmJobScript> script = BuildSlurmJobScript(
      argv_template, 20001, "chat-3", {{"GREETING", "hello $USER 'x'"}});
  ASSERT_TRUE(script) << script.error().ToString();
  EXPECT_EQ(RunScript(script->text),
            "[a b]\n[it's]\n[\"double\"]\n[$HOME]\n[`id`]\n[x;y]\n[20001]\n[--name=chat-3]\n"
            "[--gpus=2,3!]\n[]\n");
  EXPECT_EQ(script->argv[9], "--name=chat-3");
  EXPECT_EQ(script->argv[10], "--gpus=$SLURM_JOB_GPUS!");
}

TEST(SlurmJobScriptTest, ExportsTheEnvironmentLiterally) {
  Result<SlurmJobScript> script = BuildSlurmJobScript(
      {"sh", "-c", "printf '%s\\n' \"$GREETING\""}, 1, "r-0", {{"GREETING", "hi $USER 'q' \"d\""}});
  ASSERT_TRUE(script) << script.error().ToString();
  EXPECT_EQ(RunScript(script->text), "hi $USER 'q' \"d\"\n");
}

TEST(SlurmJobScriptTest, RejectsUnknownPlaceholders) {
  Result<SlurmJobScript> script = BuildSlurmJobScript({"x", "{prot}"}, 1, "r-0", {});
  ASSERT_FALSE(script);
  EXPECT_EQ(script.error().field, "command[1]");
}

TEST(SlurmJobScriptTest, ShellQuoteWrapsSingleQuotes) {
  EXPECT_EQ(ShellQuote("it's"), "'it'\\''s'");
  EXPECT_EQ(ShellQuote(""), "''");
}

}  // namespace
}  // namespace gpuscale::orch
