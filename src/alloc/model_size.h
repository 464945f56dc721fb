// Model size facts used by requirement estimation: the parameter count a model's name
// announces ("Llama-3.1-70B" -> 70e9) and the bytes one weight takes in a given precision.
//
// Name parsing, in order:
//   1. Only the last path component counts ("meta-llama/Llama-3.1-70B-Instruct").
//   2. The name is cut into tokens at '-', '_', ':' and spaces; a size token is
//      <number><unit> with unit B/b (1e9) or M/m (1e6): "70B", "1.5B", "500M", "125m".
//      Active-parameter tokens ("A3B" in "Qwen3-30B-A3B") start with a letter and are
//      ignored, so the total (30B) wins.
//   3. Mixture-of-experts tokens <experts>x<size><unit> ("8x7B") share attention and
//      embeddings between experts, so the total is not experts*size:
//         total = size * ((1 - f) + experts * f),  f = 0.81 (the expert FFN share)
//      f is fitted to Mixtral-8x7B (46.7e9 published; this gives 46.69e9) and gives
//      146.7e9 for Mixtral-8x22B (141e9 published, +4%: errs on the safe side).
//   4. A billions token beats a millions token, because "M" also denotes context length
//      ("Qwen2.5-7B-Instruct-1M" is 7e9); among equals, the first one wins.
//
// Thread-safety: pure functions.
#pragma once

#include <optional>
#include <string_view>

namespace gpuscale::alloc {

// Parameter count announced by the model name, or nullopt when it names no size.
std::optional<double> ParamCountFromModelName(std::string_view model);

// Bytes per weight for a precision name (case-insensitive):
//   fp32/float32/float: 4; bf16/bfloat16/fp16/float16/half/auto: 2;
//   fp8/float8/int8/w8a8 (and fp8_e4m3, fp8_e5m2, ...): 1;
//   int4/awq/gptq/w4a16/nf4/bitsandbytes (and *_marlin variants): 0.5.
// nullopt for an unknown name (the caller reports the field).
std::optional<double> BytesPerParameter(std::string_view dtype);

// The accepted precision names, for error messages.
std::string_view KnownDtypesText();

}  // namespace gpuscale::alloc
