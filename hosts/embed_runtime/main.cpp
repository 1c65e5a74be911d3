// An application that embeds a compiled model: `embed_runtime DIR ID...` loads the artifact
// folder `metatune model compile --out DIR` wrote, runs the decoder on the token ids and
// prints the next token after the last one. It links only libmetatune_runtime (no LLVM, no
// metatune core or plugins): what an application shipping a tuned model needs.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "metatune/runtime/compiled_model.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s ARTIFACT_DIR TOKEN_ID...\n", argv[0]);
    return 2;
  }
  try {
    mt::rt::CompiledModel model = mt::rt::CompiledModel::load(argv[1]);
    std::vector<int32_t> ids;
    for (int i = 2; i < argc; ++i) {
      char* end = nullptr;
      long v = std::strtol(argv[i], &end, 10);
      if (!*argv[i] || *end) throw mt::rt::Error(std::string("not a token id: ") + argv[i]);
      ids.push_back(static_cast<int32_t>(v));
    }
    std::vector<mt::rt::Tensor> out = model.run(ids);
    // Logits [batch, seq, vocab]: the first sequence's last position.
    const mt::rt::TensorInfo& info = out.at(0).info();
    if (info.dtype != "f32" || info.shape.size() != 3)
      throw mt::rt::Error("output 0 is " + info.to_string() +
                          ", not f32 logits [batch, seq, vocab]");
    int64_t seq = info.shape[1], vocab = info.shape[2];
    const float* last = out[0].as<float>() + (seq - 1) * vocab;
    int64_t best = 0;
    for (int64_t v = 1; v < vocab; ++v)
      if (last[v] > last[best]) best = v;
    std::printf("%s: %zu kernels, %zu calls, %.2f MB arena\n", model.model().c_str(),
                model.num_kernels(), model.num_groups(), model.arena_bytes() / 1e6);
    std::printf("next token: %lld (logit %.6f)\n", static_cast<long long>(best), last[best]);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
