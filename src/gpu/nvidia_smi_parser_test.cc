#include "gpu/nvidia_smi_parser.h"

#include <gtest/gtest.h>

#include <string>

namespace gpuscale::gpu {
namespace {

TEST(NvidiaSmiParserTest, ParsesFullLines) {
  const std::string text =
      "0, GPU-aaaa, NVIDIA H100 80GB HBM3, 81559, 1024, 80535, 37, 41, 123.45\n"
      "1, GPU-bbbb, NVIDIA H100 80GB HBM3, 81559, 0, 81559, 0, 33, 70.10\n";
  Result<std::vector<GpuInfo>> gpus = ParseNvidiaSmiCsv(text);
  ASSERT_TRUE(gpus) << gpus.error().ToString();
  ASSERT_EQ(gpus->size(), 2u);
  const GpuInfo& g = (*gpus)[0];
  EXPECT_EQ(g.index, 0);
  EXPECT_EQ(g.uuid, "GPU-aaaa");
  EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(g.memory_total_mb, 81559);
  EXPECT_EQ(g.memory_used_mb, 1024);
  EXPECT_EQ(g.memory_free_mb, 80535);
  EXPECT_EQ(g.utilization_percent, 37.0);
  EXPECT_EQ(g.temperature_c, 41.0);
  EXPECT_DOUBLE_EQ(*g.power_draw_w, 123.45);
  EXPECT_EQ((*gpus)[1].index, 1);
}

TEST(NvidiaSmiParserTest, EmptyOutputIsZeroGpus) {
  for (const char* text : {"", "\n", "  \n\r\n"}) {
    Result<std::vector<GpuInfo>> gpus = ParseNvidiaSmiCsv(text);
    ASSERT_TRUE(gpus) << text;
    EXPECT_TRUE(gpus->empty());
  }
}

// Each absent marker must become nullopt, never 0.
TEST(NvidiaSmiParserTest, AbsentMarkersBecomeNullopt) {
  for (const char* marker : {"[N/A]", "[Not Supported]", "[Unknown Error]", "N/A", ""}) {
    const std::string text = std::string("0, GPU-a, Tesla T4, 15360, ") + marker + ", " + marker +
                             ", " + marker + ", " + marker + ", " + marker + "\n";
    Result<std::vector<GpuInfo>> gpus = ParseNvidiaSmiCsv(text);
    ASSERT_TRUE(gpus) << marker << ": " << gpus.error().ToString();
    const GpuInfo& g = gpus->at(0);
    EXPECT_EQ(g.memory_total_mb, 15360) << marker;
    EXPECT_FALSE(g.memory_used_mb) << marker;
    EXPECT_FALSE(g.memory_free_mb) << marker;
    EXPECT_FALSE(g.utilization_percent) << marker;
    EXPECT_FALSE(g.temperature_c) << marker;
    EXPECT_FALSE(g.power_draw_w) << marker;
  }
}

TEST(NvidiaSmiParserTest, ToleratesTrailingSpacesAndCarriageReturns) {
  Result<std::vector<GpuInfo>> gpus =
      ParseNvidiaSmiCsv("0, GPU-a , Tesla T4  , 15360 , 5 , 15355 , 3 , 40 , 27.5   \r\n");
  ASSERT_TRUE(gpus) << gpus.error().ToString();
  EXPECT_EQ(gpus->at(0).uuid, "GPU-a");
  EXPECT_EQ(gpus->at(0).name, "Tesla T4");
  EXPECT_DOUBLE_EQ(*gpus->at(0).power_draw_w, 27.5);
}

TEST(NvidiaSmiParserTest, MissingTrailingColumnsAreAbsent) {
  Result<std::vector<GpuInfo>> gpus = ParseNvidiaSmiCsv("3, GPU-c, Tesla V100, 16384, 100\n");
  ASSERT_TRUE(gpus) << gpus.error().ToString();
  const GpuInfo& g = gpus->at(0);
  EXPECT_EQ(g.index, 3);
  EXPECT_EQ(g.memory_used_mb, 100);
  EXPECT_FALSE(g.memory_free_mb);
  EXPECT_FALSE(g.power_draw_w);
}

TEST(NvidiaSmiParserTest, SortsByIndex) {
  Result<std::vector<GpuInfo>> gpus =
      ParseNvidiaSmiCsv("1, GPU-b, X, 1, 0, 1, 0, 0, 0\n0, GPU-a, X, 1, 0, 1, 0, 0, 0\n");
  ASSERT_TRUE(gpus);
  EXPECT_EQ(gpus->at(0).uuid, "GPU-a");
  EXPECT_EQ(gpus->at(1).uuid, "GPU-b");
}

struct MalformedCase {
  const char* name;
  const char* text;
  const char* field;        // expected Error::field
  const char* message_has;  // expected substring of the message
};

class NvidiaSmiMalformedTest : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(NvidiaSmiMalformedTest, RejectsWithLineAndColumn) {
  const MalformedCase& c = GetParam();
  Result<std::vector<GpuInfo>> gpus = ParseNvidiaSmiCsv(c.text);
  ASSERT_FALSE(gpus) << c.name;
  EXPECT_EQ(gpus.error().code, ErrorCode::kInvalidArgument);
  EXPECT_EQ(gpus.error().field, c.field) << gpus.error().ToString();
  EXPECT_NE(gpus.error().message.find(c.message_has), std::string::npos) << gpus.error().ToString();
}

constexpr char kGood[] = "0, GPU-a, X, 100, 10, 90, 5, 40, 50\n";

INSTANTIATE_TEST_SUITE_P(
    Cases, NvidiaSmiMalformedTest,
    ::testing::Values(
        MalformedCase{"TooManyColumns", "0, GPU-a, X, 1, 2, 3, 4, 5, 6, 7\n", "line 1",
                      "expected 9 comma-separated columns"},
        MalformedCase{"TooFewColumns", "0, GPU-a\n", "line 1", "got 2"},
        MalformedCase{"GarbageNumber", "0, GPU-a, X, lots, 10, 90, 5, 40, 50\n", "line 1",
                      "column memory.total: expected a number, got 'lots'"},
        MalformedCase{"NumberWithSuffix", "0, GPU-a, X, 100 MiB, 10, 90, 5, 40, 50\n", "line 1",
                      "column memory.total"},
        MalformedCase{"GarbageOnSecondLine",
                      "0, GPU-a, X, 100, 10, 90, 5, 40, 50\n1, GPU-b, X, 100, 10, 90, 5, hot, 50\n",
                      "line 2", "column temperature.gpu"},
        MalformedCase{"LineNumbersCountBlankLines", "\n\n0, GPU-a, X, 1, 0, 1, abc, 0, 0\n",
                      "line 3", "column utilization.gpu"},
        MalformedCase{"NonIntegerIndex", "zero, GPU-a, X, 100, 10, 90, 5, 40, 50\n", "line 1",
                      "column index"},
        MalformedCase{"NegativeIndex", "-1, GPU-a, X, 100, 10, 90, 5, 40, 50\n", "line 1",
                      "column index"},
        MalformedCase{"MissingUuid", "0, [N/A], X, 100, 10, 90, 5, 40, 50\n", "line 1", "uuid"},
        MalformedCase{"UtilizationOver100", "0, GPU-a, X, 100, 10, 90, 150, 40, 50\n", "line 1",
                      "outside 0..100"},
        MalformedCase{"NegativeMemory", "0, GPU-a, X, -100, 10, 90, 5, 40, 50\n", "line 1",
                      "out of range"},
        MalformedCase{"NotANumberText", "0, GPU-a, X, nan, 10, 90, 5, 40, 50\n", "line 1",
                      "memory.total"},
        MalformedCase{"DuplicateIndex",
                      "0, GPU-a, X, 1, 0, 1, 0, 0, 0\n0, GPU-b, X, 1, 0, 1, 0, 0, 0\n", "line 2",
                      "duplicate GPU index 0"},
        MalformedCase{"HeaderLineNotRequested",
                      "index, uuid, name, memory.total [MiB], memory.used [MiB], memory.free "
                      "[MiB], utilization.gpu [%], temperature.gpu, power.draw [W]\n",
                      "line 1", "column index"}),
    [](const ::testing::TestParamInfo<MalformedCase>& info) { return info.param.name; });

TEST(NvidiaSmiParserTest, GoodFixtureParses) { EXPECT_TRUE(ParseNvidiaSmiCsv(kGood)); }

TEST(NvidiaSmiAppsParserTest, AttachesProcessesByUuid) {
  Result<std::vector<GpuInfo>> gpus = ParseNvidiaSmiCsv(
      "0, GPU-a, X, 100, 10, 90, 5, 40, 50\n1, GPU-b, X, 100, 10, 90, 5, 40, 50\n");
  ASSERT_TRUE(gpus);
  Result<std::vector<NvidiaSmiApp>> apps = ParseNvidiaSmiAppsCsv(
      "GPU-b, 77, 512, python3\nGPU-b, 78, [N/A], [N/A]\nGPU-zzz, 79, 1, ghost\n");
  ASSERT_TRUE(apps) << apps.error().ToString();
  AttachProcesses(*apps, *gpus);
  EXPECT_TRUE(gpus->at(0).processes.empty());
  ASSERT_EQ(gpus->at(1).processes.size(), 2u);
  EXPECT_EQ(gpus->at(1).processes[0].pid, 77);
  EXPECT_EQ(gpus->at(1).processes[0].used_memory_mb, 512);
  EXPECT_EQ(gpus->at(1).processes[0].name, "python3");
  EXPECT_FALSE(gpus->at(1).processes[1].used_memory_mb);
}

TEST(NvidiaSmiAppsParserTest, RejectsWrongColumnCount) {
  Result<std::vector<NvidiaSmiApp>> apps = ParseNvidiaSmiAppsCsv("GPU-b, 77\n");
  ASSERT_FALSE(apps);
  EXPECT_EQ(apps.error().field, "line 1");
}

}  // namespace
}  // namespace gpuscale::gpu
