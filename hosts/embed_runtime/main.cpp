// An application that embeds a compiled model: `embed_runtime DIR ID...` loads the artifact
// folder `metatune model compile --out DIR` wrote, runs the decoder on the token ids and
// prints the next token after the last one; on a generation artifact (`model compile
// --generation`), `embed_runtime DIR [-n N] ID...` generates N tokens greedily (default 16)
// against the key/value cache and prints them with the decode speed; on an embedding artifact
// (`model compile --embedding`), `embed_runtime DIR [-f FILE] [-r REPEATS] [-o OUT.npy]
// IDS...` embeds texts given as comma-separated token ids (an argument each, or a line each of
// FILE) and prints their embeddings' first values, cosine similarities and the time of a pass
// (median of REPEATS; -o writes the embeddings as .npy). It links only
// libmetatune_runtime (no LLVM, no metatune core or plugins): what an application shipping a
// tuned model needs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "metatune/runtime/compiled_embedder.h"
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

// "101,1037,102" (or space-separated) as a text's ids.
std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ',')) {
    std::istringstream words(item);
    for (std::string w; words >> w;)
      ids.push_back(static_cast<int32_t>(parse_int(w.c_str(), "a token id")));
  }
  return ids;
}

// A float32 .npy of `t` (version 1.0, C order).
void save_npy(const mt::rt::Tensor& t, const std::string& path) {
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int64_t d : t.info().shape)
    header += std::to_string(d) + ", ";
  header += "), }";
  header.append(63 - (10 + header.size()) % 64, ' ');
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  const unsigned short n = static_cast<unsigned short>(header.size());
  f.write("\x93NUMPY\x01\x00", 8);
  f.put(static_cast<char>(n & 0xff)).put(static_cast<char>(n >> 8));
  f << header;
  f.write(static_cast<const char*>(t.data()), static_cast<std::streamsize>(t.info().bytes()));
  if (!f) throw mt::rt::Error("cannot write " + path);
}

int embed(const std::string& dir, const std::vector<std::vector<int32_t>>& texts, int repeats,
          const std::string& out_path) {
  mt::rt::CompiledEmbedder e = mt::rt::CompiledEmbedder::load(dir);
  std::printf("%s: %zu kernels, %lld-dimensional embeddings, texts up to %lld tokens in batches "
              "of %lld\n",
              e.model().c_str(), e.num_kernels(), static_cast<long long>(e.dimension()),
              static_cast<long long>(e.max_length()), static_cast<long long>(e.batch()));
  mt::rt::Tensor v = e.embed(texts); // also the warm-up
  std::vector<double> passes;
  for (int r = 0; r < repeats; ++r) {
    const auto start = std::chrono::steady_clock::now();
    v = e.embed(texts);
    passes.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(passes.begin(), passes.end());
  const int64_t dim = e.dimension();
  const float* x = v.as<float>();
  for (size_t i = 0; i < texts.size() && i < 8; ++i) {
    std::printf("[%zu] %zu tokens:", i, texts[i].size());
    for (int64_t c = 0; c < std::min<int64_t>(dim, 4); ++c)
      std::printf(" %+.5f", x[static_cast<int64_t>(i) * dim + c]);
    std::printf(" ...\n");
  }
  const size_t n = std::min<size_t>(texts.size(), 8);
  for (size_t i = 0; i < n && n > 1; ++i) {
    std::printf("  [%zu]", i);
    for (size_t j = 0; j < n; ++j) {
      double ab = 0, aa = 0, bb = 0;
      for (int64_t c = 0; c < dim; ++c) {
        const double a = x[static_cast<int64_t>(i) * dim + c],
                     b = x[static_cast<int64_t>(j) * dim + c];
        ab += a * b, aa += a * a, bb += b * b;
      }
      std::printf(" %7.4f", ab / std::max(std::sqrt(aa * bb), 1e-30));
    }
    std::printf("\n");
  }
  std::printf("embedded %zu texts in %.2f ms (median of %d passes)\n", texts.size(),
              1e3 * passes[passes.size() / 2], repeats);
  if (!out_path.empty()) save_npy(v, out_path);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s ARTIFACT_DIR [-n NEW_TOKENS] TOKEN_ID...\n"
                 "       %s EMBEDDING_DIR [-f IDS_FILE] [-r REPEATS] [-o OUT.npy] ID,ID,...\n",
                 argv[0], argv[0]);
    return 2;
  }
  try {
    const std::string dir = argv[1];
    if (std::filesystem::exists(dir + "/embedding.json")) {
      std::vector<std::vector<int32_t>> texts;
      int repeats = 1;
      std::string out_path;
      for (int i = 2; i < argc; ++i) {
        const std::string a = argv[i];
        if (a == "-r" && i + 1 < argc) {
          repeats = static_cast<int>(parse_int(argv[++i], "a count"));
        } else if (a == "-o" && i + 1 < argc) {
          out_path = argv[++i];
        } else if (a == "-f" && i + 1 < argc) {
          std::ifstream in(argv[++i]);
          if (!in) throw mt::rt::Error(std::string("cannot read ") + argv[i]);
          for (std::string line; std::getline(in, line);)
            if (line.find_first_not_of(" \t\r") != std::string::npos)
              texts.push_back(parse_ids(line));
        } else {
          texts.push_back(parse_ids(a));
        }
      }
      if (texts.empty()) throw mt::rt::Error("no texts: give their ids, or -f FILE");
      return embed(dir, texts, std::max(1, repeats), out_path);
    }
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
