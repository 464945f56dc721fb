// Calibration tables embedded in the replica model, derived once from data/perf so that the
// model does no file I/O at run time. calibration_test.cc re-reads those CSVs and checks the
// model against them, so a change here that drifts from the data fails a test.
//
// How the numbers were derived (a short Python script over the CSVs; reproducible by hand):
//
// Vidur (vidur_h100_l2_7b_mlp.csv, Llama-2-7B on H100, tp = num_tensor_parallel_workers):
//   per row, linear_ms = 32 layers * (sum of the `.median` columns of input_layernorm,
//   attn_pre_proj, attn_rope, attn_post_proj, post_attention_layernorm, mlp_up_proj, mlp_act,
//   mlp_down_proj, add) + emb.median. At each knot n the table holds the median of linear_ms
//   over the rows with num_tokens within +-15 % of n (the profile is noisy: tile quantization
//   makes e.g. 96 tokens slower than 128), then a running maximum so that time never falls as
//   tokens grow. Attention, all-reduce, LM head and step overhead are not in these profiles;
//   the model adds them analytically (replica_model.cc).
//
// Splitwise/SageServe (splitwise_sageserve_perf_model.csv, model llama2-70b, hardware
// h100-80gb / a100-80gb, the power-capped variant ignored), medians over repeated runs:
//   prefill: prompt_time at batch_size 1, token_size 128, per prompt_size (running maximum).
//   decode:  token_time at prompt_size 512, token_size 128, per batch_size, minus the KV read
//            term the model adds back (kv_bytes/token / tp / (HBM * 0.8) * batch * 575.5 mean
//            context); at batch 1 the median over all batch-1 rows (the prompt_size and
//            token_size sweeps, each corrected the same way) since context barely matters
//            there. Running maximum over batch. tp 2 at batch 64 is left out: in the data its
//            prompt_time drops ~10x below batch 32 and token_time falls too, which only a
//            different (truncated or failed) run explains.
#include <array>

#include "sim/replica_model_calibrated.h"

namespace gpuscale::sim {
namespace {

// Knots (tokens in the step) of the Vidur-derived linear-layer tables.
constexpr std::array<double, 14> kVidurKnots = {1,   32,  64,   128,  192,  256,  384,
                                                512, 768, 1024, 1536, 2048, 3072, 4096};

struct VidurRow {
  int tp;
  std::array<double, 14> ms;  // at kVidurKnots
};

constexpr std::array<VidurRow, 4> kVidurLlama2_7bH100 = {{
    {1,
     {5.602, 5.795, 5.908, 6.406, 7.431, 9.193, 11.596, 12.558, 19.493, 20.972, 33.422, 40.231,
      64.807, 79.971}},
    {2,
     {3.202, 3.299, 3.508, 3.750, 4.648, 4.648, 6.380, 7.215, 10.454, 11.932, 19.019, 22.231,
      33.652, 41.571}},
    {4,
     {2.034, 2.227, 2.276, 2.486, 2.824, 3.017, 3.916, 4.526, 5.892, 7.548, 10.571, 13.174, 19.474,
      23.478}},
    {8,
     {1.314, 1.539, 1.668, 1.894, 2.087, 2.201, 2.923, 3.088, 4.372, 4.797, 6.474, 8.631, 12.449,
      15.628}},
}};

struct MsPoint {
  double x;
  double ms;
};

struct SplitwiseRow {
  std::string_view gpu;
  int tp;
  std::array<MsPoint, 7> prefill;  // prompt tokens -> prompt_time ms
  std::array<MsPoint, 7> decode;   // batch -> token_time ms without KV reads; x = 0 unused
};

constexpr std::array<SplitwiseRow, 6> kSplitwiseLlama2_70b = {{
    {"h100",
     2,
     {{{128, 48.3},
       {256, 51.8},
       {512, 83.8},
       {1024, 158.0},
       {2048, 310.3},
       {4096, 642.7},
       {8192, 1339.8}}},
     {{{1, 37.23}, {2, 37.32}, {4, 39.84}, {8, 40.12}, {16, 41.41}, {32, 51.17}, {0, 0}}}},
    {"h100",
     4,
     {{{128, 49.1},
       {256, 51.0},
       {512, 59.6},
       {1024, 105.6},
       {2048, 200.7},
       {4096, 463.5},
       {8192, 953.6}}},
     {{{1, 29.41}, {2, 29.95}, {4, 29.95}, {8, 31.30}, {16, 32.56}, {32, 36.32}, {64, 51.23}}}},
    {"h100",
     8,
     {{{128, 58.2},
       {256, 58.2},
       {512, 58.2},
       {1024, 77.9},
       {2048, 136.8},
       {4096, 390.3},
       {8192, 844.9}}},
     {{{1, 30.65}, {2, 30.65}, {4, 31.75}, {8, 32.43}, {16, 34.03}, {32, 38.34}, {64, 49.60}}}},
    {"a100",
     2,
     {{{128, 81.1},
       {256, 112.9},
       {512, 196.9},
       {1024, 377.1},
       {2048, 688.1},
       {4096, 1485.3},
       {8192, 2990.2}}},
     {{{1, 56.49}, {2, 59.81}, {4, 60.29}, {8, 61.23}, {16, 64.54}, {32, 70.34}, {0, 0}}}},
    {"a100",
     4,
     {{{128, 63.7},
       {256, 78.6},
       {512, 127.0},
       {1024, 227.1},
       {2048, 403.3},
       {4096, 965.2},
       {8192, 2278.5}}},
     {{{1, 44.47}, {2, 44.95}, {4, 44.97}, {8, 45.57}, {16, 48.06}, {32, 51.42}, {64, 71.10}}}},
    {"a100",
     8,
     {{{128, 65.3},
       {256, 66.8},
       {512, 94.3},
       {1024, 154.5},
       {2048, 274.2},
       {4096, 661.2},
       {8192, 1549.8}}},
     {{{1, 44.97}, {2, 44.97}, {4, 45.73}, {8, 46.35}, {16, 50.20}, {32, 52.55}, {64, 70.68}}}},
}};

// Milliseconds to seconds, stopping at the x = 0 terminator of a short table.
template <size_t N>
std::vector<PerfPoint> ToSeconds(const std::array<MsPoint, N>& points) {
  std::vector<PerfPoint> out;
  for (const MsPoint& p : points) {
    if (p.x <= 0) break;
    out.push_back({p.x, p.ms * 1e-3});
  }
  return out;
}

}  // namespace

std::vector<PerfPoint> VidurLlama2_7bLinearTable(int tensor_parallel) {
  std::vector<PerfPoint> out;
  for (const VidurRow& row : kVidurLlama2_7bH100) {
    if (row.tp != tensor_parallel) continue;
    for (size_t i = 0; i < kVidurKnots.size(); ++i)
      out.push_back({kVidurKnots[i], row.ms[i] * 1e-3});
  }
  return out;
}

std::optional<SplitwiseTables> SplitwiseLlama2_70bTables(std::string_view gpu,
                                                         int tensor_parallel) {
  for (const SplitwiseRow& row : kSplitwiseLlama2_70b) {
    if (row.gpu == gpu && row.tp == tensor_parallel) {
      return SplitwiseTables{ToSeconds(row.prefill), ToSeconds(row.decode)};
    }
  }
  return std::nullopt;
}

}  // namespace gpuscale::sim
