// An application that embeds a compiled model: `embed_runtime DIR ID...` loads the artifact
// folder `metatune model compile --out DIR` wrote, runs the decoder on the token ids and
// prints the next token after the last one; on a generation artifact (`model compile
// --generation`), `embed_runtime DIR [-n N] ID...` generates N tokens greedily (default 16)
// against the key/value cache and prints them with the decode speed. It links only
// libmetatune_runtime (no LLVM, no metatune core or plugins): what an application shipping a
// tuned model needs.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "metatune/runtime/compiled_generator.h"
#include "metatune/runtime/compiled_model.h"

namespace {

int64_t parse_int(const char* s, const char* what) {
  char* end = nullptr;
  long v = std::strtol(s, &end, 10);
  if (!*s || *end) throw mt::rt::Error(std::string("not ") + what + ": " + s);
  return v;
}

int64_t argmax(const float* logits, int64_t vocab) {
  int64_t best = 0;
  for (int64_t v = 1; v < vocab; ++v)
    if (logits[v] > logits[best]) best = v;
  return best;
}

int next_token(const std::string& dir, const std::vector<int32_t>& ids) {
  mt::rt::CompiledModel model = mt::rt::CompiledModel::load(dir);
  std::vector<mt::rt::Tensor> out = model.run(ids);
  // Logits [batch, seq, vocab]: the first sequence's last position.
  const mt::rt::TensorInfo& info = out.at(0).info();
  if (info.dtype != "f32" || info.shape.size() != 3)
    throw mt::rt::Error("output 0 is " + info.to_string() + ", not f32 logits [batch, seq, vocab]");
  int64_t seq = info.shape[1], vocab = info.shape[2];
  const float* last = out[0].as<float>() + (seq - 1) * vocab;
  int64_t best = argmax(last, vocab);
  std::printf("%s: %zu kernels, %zu calls, %.2f MB arena\n", model.model().c_str(),
              model.num_kernels(), model.num_groups(), model.arena_bytes() / 1e6);
  std::printf("next token: %lld (logit %.6f)\n", static_cast<long long>(best), last[best]);
  return 0;
}

int generate(const std::string& dir, const std::vector<int32_t>& ids, int64_t new_tokens) {
  mt::rt::CompiledGenerator gen = mt::rt::CompiledGenerator::load(dir);
  std::printf("%s: %zu kernels, prompt buckets up to %lld, sequences up to %lld\n",
              gen.model().c_str(), gen.num_kernels(),
              static_cast<long long>(gen.prompt_buckets().back()),
              static_cast<long long>(gen.max_length()));
  using clock = std::chrono::steady_clock;
  const float* logits = gen.prefill(ids);
  std::vector<int64_t> out;
  const auto start = clock::now();
  for (int64_t i = 0; i < new_tokens; ++i) {
    out.push_back(argmax(logits, gen.vocab()));
    if (i + 1 == new_tokens || gen.length() + 1 >= gen.max_length()) break;
    logits = gen.step(static_cast<int32_t>(out.back()));
  }
  const double s = std::chrono::duration<double>(clock::now() - start).count();
  std::printf("tokens:");
  for (int64_t t : out)
    std::printf(" %lld", static_cast<long long>(t));
  std::printf("\n%zu tokens, %.1f tokens/s decoding\n", out.size(),
              out.size() > 1 && s > 0 ? static_cast<double>(out.size() - 1) / s : 0.0);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ARTIFACT_DIR [-n NEW_TOKENS] TOKEN_ID...\n", argv[0]);
    return 2;
  }
  try {
    const std::string dir = argv[1];
    int64_t new_tokens = 16;
    std::vector<int32_t> ids;
    for (int i = 2; i < argc; ++i) {
      if (std::string(argv[i]) == "-n" && i + 1 < argc)
        new_tokens = parse_int(argv[++i], "a count");
      else
        ids.push_back(static_cast<int32_t>(parse_int(argv[i], "a token id")));
    }
    if (std::filesystem::exists(dir + "/generation.json")) return generate(dir, ids, new_tokens);
    return next_token(dir, ids);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
