// Slurm JSON documents captured from real Slurm 22.05.8 daemons (src/orch/testdata/slurm/,
// trimmed to the fields gpuscale reads), GRES strings and job/node states.
#include "orch/slurm_json.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace gpuscale::orch {
namespace {

std::string Testdata(const std::string& name) {
  std::ifstream in(std::string(GPUSCALE_SOURCE_DIR) + "/src/orch/testdata/slurm/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(SlurmJsonTest, ParsesSqueueJobsWithStatesReasonsAndHosts) {
  for (const char* file : {"squeue.json", "rest_jobs.json"}) {
    SCOPED_TRACE(file);
    Result<std::vector<SlurmJob>> jobs = ParseSlurmJobs(Testdata(file));
    ASSERT_TRUE(jobs) << jobs.error().ToString();
    ASSERT_GE(jobs->size(), 4u);
    const SlurmJob& running = (*jobs)[0];
    EXPECT_EQ(running.id, "1");
    EXPECT_EQ(running.name, "gpuscale.chat.chat-0");
    EXPECT_EQ(running.comment, "gpuscale service=chat replica=chat-0");
    EXPECT_EQ(running.state, "RUNNING");
    EXPECT_EQ(running.batch_host, "n1");
    EXPECT_EQ((*jobs)[1].state, "FAILED");
    EXPECT_EQ((*jobs)[1].reason, "BadConstraints");
    EXPECT_EQ((*jobs)[3].state, "PENDING");
    EXPECT_EQ((*jobs)[3].reason, "Resources");
    EXPECT_EQ((*jobs)[3].batch_host, "");
  }
}

TEST(SlurmJsonTest, ParsesNodesWithAddressesAndGres) {
  for (const char* file : {"sinfo.json", "rest_nodes.json"}) {
    SCOPED_TRACE(file);
    Result<std::vector<SlurmNode>> nodes = ParseSlurmNodes(Testdata(file));
    ASSERT_TRUE(nodes) << nodes.error().ToString();
    ASSERT_EQ(nodes->size(), 2u);
    EXPECT_EQ((*nodes)[0].name, "n1");
    EXPECT_EQ((*nodes)[0].address, "127.0.0.1");
    EXPECT_EQ((*nodes)[0].gres, "gpu:tesla:4");
    EXPECT_EQ((*nodes)[0].partitions, std::vector<std::string>{"gpu"});
    EXPECT_TRUE(SlurmNodeUsable((*nodes)[0]));
  }
  Result<std::vector<SlurmNode>> nodes = ParseSlurmNodes(Testdata("sinfo.json"));
  ASSERT_TRUE(nodes);
  EXPECT_EQ(CountGpus((*nodes)[0].gres_used, ""), 2);
  EXPECT_EQ(CountGpus((*nodes)[1].gres_used, "tesla"), 4);
}

TEST(SlurmJsonTest, ReadsSubmitAnswersAndErrors) {
  Result<std::string> id = ParseSlurmSubmit(Testdata("rest_submit.json"));
  ASSERT_TRUE(id) << id.error().ToString();
  EXPECT_EQ(*id, "5");
  const std::string refused = Testdata("rest_delete_unknown.json");
  EXPECT_NE(SlurmErrorsOf(refused).find("Invalid job id specified"), std::string::npos);
  Result<std::string> bad = ParseSlurmSubmit(refused);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidArgument);
}

TEST(SlurmJsonTest, SqueueWithTheControllerDownIsUnavailable) {
  // squeue --json exits 0 when slurmctld is down; only its "errors" array tells.
  Result<std::vector<SlurmJob>> jobs = ParseSlurmJobs(Testdata("squeue_controller_down.json"));
  ASSERT_FALSE(jobs);
  EXPECT_EQ(jobs.error().code, ErrorCode::kUnavailable);
  EXPECT_NE(jobs.error().message.find("Failed while looking for jobs"), std::string::npos);
}

TEST(SlurmJsonTest, ListingWithErrorsOrGarbageIsUnavailable) {
  for (const std::string& text :
       {std::string("not json"), std::string("{\"errors\": [{\"error\": \"Unable to contact slurm "
                                             "controller\"}], \"jobs\": []}"),
        std::string("{\"meta\": {}}")}) {
    Result<std::vector<SlurmJob>> jobs = ParseSlurmJobs(text);
    ASSERT_FALSE(jobs) << text;
    EXPECT_EQ(jobs.error().code, ErrorCode::kUnavailable) << text;
  }
}

TEST(SlurmJsonTest, CountsGpusInGresStrings) {
  struct Case {
    const char* gres;
    const char* type;
    int gpus;
  } cases[] = {
      {"gpu:tesla:4", "", 4},
      {"gpu:4", "", 4},
      {"gpu:4", "tesla", 0},
      {"gpu:tesla:2(IDX:0-1)", "tesla", 2},
      {"gpu:a100:2(S:0),gpu:v100:1(S:1)", "", 3},
      {"gpu:a100:2(S:0),gpu:v100:1(S:1)", "v100", 1},
      {"gpu:a100:2(IDX:0,3),mps:100", "", 2},
      {"gpu:0(IDX:N/A)", "", 0},
      {"mps:200", "", 0},
      {"", "", 0},
      {"gpu:tesla:x", "", 0},
      // Found by fuzz/slurm_json_fuzz: a sign was taken for a count.
      {"gpu:\v:-0066", "", 0},
      {"gpu:-2,gpu:3", "", 3},
      {"gpu:2147483647,gpu:2147483647", "", 2147483647},
  };
  for (const Case& c : cases) EXPECT_EQ(CountGpus(c.gres, c.type), c.gpus) << c.gres;
}

TEST(SlurmJsonTest, TellsAnUnreachableControllerFromARefusal) {
  EXPECT_TRUE(SlurmControllerUnreachable(
      "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect "
      "failure)"));
  EXPECT_FALSE(SlurmControllerUnreachable(
      "sbatch: error: Batch job submission failed: Requested node configuration is not "
      "available"));
}

TEST(SlurmJsonTest, ClassifiesJobAndNodeStates) {
  for (const char* active : {"PENDING", "RUNNING", "CONFIGURING", "SUSPENDED", "REQUEUED"}) {
    EXPECT_TRUE(SlurmJobActive(active)) << active;
  }
  for (const char* ended : {"COMPLETED", "COMPLETING", "CANCELLED", "FAILED", "TIMEOUT",
                            "NODE_FAIL", "PREEMPTED", "OUT_OF_MEMORY"}) {
    EXPECT_FALSE(SlurmJobActive(ended)) << ended;
  }
  SlurmNode node;
  node.state = "idle";
  EXPECT_TRUE(SlurmNodeUsable(node));
  node.state_flags = {"DRAIN"};
  EXPECT_FALSE(SlurmNodeUsable(node));
  node.state_flags.clear();
  node.state = "down";
  EXPECT_FALSE(SlurmNodeUsable(node));
}

TEST(SlurmJsonTest, SubmitBodyCarriesTheJobFields) {
  SlurmJobRequest r;
  r.name = "gpuscale.chat.chat-0";
  r.comment = "gpuscale service=chat replica=chat-0";
  r.gres = "gpu:tesla:2";
  r.partition = "gpu";
  r.time_limit_minutes = 60;
  r.output_path = "/state/logs/chat-0.log";
  r.working_dir = "/state";
  r.environment = {{"PATH", "/usr/bin"}};
  r.script = "#!/bin/sh\nexec 'x'\n";
  const std::string body = SlurmSubmitBody(r);
  for (const char* part :
       {"\"gres\":\"gpu:tesla:2\"", "\"name\":\"gpuscale.chat.chat-0\"", "\"time_limit\":60",
        "\"partition\":\"gpu\"", "\"environment\":{\"PATH\":\"/usr/bin\"}",
        "\"script\":\"#!/bin/sh\\nexec 'x'\\n\"", "\"standard_output\":\"/state/logs/chat-0.log\""}) {
    EXPECT_NE(body.find(part), std::string::npos) << part << " in " << body;
  }
  EXPECT_EQ(body.find("account"), std::string::npos);
}

}  // namespace
}  // namespace gpuscale::orch
