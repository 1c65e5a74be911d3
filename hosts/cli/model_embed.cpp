#include "hosts/cli/model_embed.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <numeric>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "core/database/database.h"
#include "core/graph/sentence_embedding.h"
#include "core/graph/sequence_buckets.h"
#include "core/tokenizer/python_lower.h"
#include "core/tokenizer/tokenizer.h"
#include "core/tuner/tune_log.h"
#include "hosts/cli/generation_flags.h"
#include "hosts/cli/model_execution.h"
#include "hosts/cli/model_source.h"
#include "hosts/cli/npy_file.h"
#include "hosts/cli/sentence_encoder.h"

namespace mt::cli {

namespace fs = std::filesystem;

namespace {

double since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// --text (repeatable), then --input's lines (empty ones skipped; "-": standard input), in order.
std::vector<std::string> texts_of(const ModelEmbedOptions& o) {
  std::vector<std::string> texts = o.texts;
  if (!o.input.empty()) {
    std::ifstream file;
    if (o.input != "-") {
      file.open(o.input);
      if (!file) throw std::invalid_argument("--input " + o.input + ": cannot be read");
    }
    std::istream& in = o.input == "-" ? std::cin : file;
    for (std::string line; std::getline(in, line);) {
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) texts.push_back(line);
    }
  }
  if (texts.empty())
    throw std::invalid_argument("nothing to embed: give --text TEXT (repeatable) or --input FILE "
                                "(one text a line)");
  return texts;
}

// Each text's ids with the tokenizer's special tokens, cut to `max_len` as Hugging Face's
// truncation does: the text's own tokens are cut, the special tokens around them stay.
class TextEncoder {
public:
  TextEncoder(const tok::Tokenizer& tokenizer, bool lower_case, int64_t max_len)
      : tokenizer_(tokenizer), lower_case_(lower_case), max_len_(max_len) {}

  std::vector<int32_t> operator()(std::string text, size_t index) const {
    if (lower_case_) {
      try {
        text = tok::python_lower(text); // as sentence-transformers does
      } catch (const std::invalid_argument& e) {
        throw std::invalid_argument("text " + std::to_string(index) + ": " + e.what());
      }
    }
    std::vector<tok::TokenId> all = tokenizer_.encode(text, true);
    if (static_cast<int64_t>(all.size()) > max_len_) {
      const std::vector<tok::TokenId> own = tokenizer_.encode(text, false);
      auto at = std::search(all.begin(), all.end(), own.begin(), own.end());
      if (own.empty() || at == all.end())
        throw std::invalid_argument("text " + std::to_string(index) +
                                    ": cannot tell its tokens from the special tokens to "
                                    "truncate it at " +
                                    std::to_string(max_len_));
      const size_t before = static_cast<size_t>(at - all.begin());
      const size_t after = all.size() - before - own.size();
      if (before + after >= static_cast<size_t>(max_len_))
        throw std::invalid_argument("a length of " + std::to_string(max_len_) +
                                    " leaves no room for a text's tokens");
      std::vector<tok::TokenId> cut(all.begin(), all.begin() + static_cast<long>(before));
      cut.insert(cut.end(), own.begin(),
                 own.begin() + static_cast<long>(max_len_ - before - after));
      cut.insert(cut.end(), all.end() - static_cast<long>(after), all.end());
      all = std::move(cut);
    }
    if (all.empty())
      throw std::invalid_argument("text " + std::to_string(index) + " has no tokens");
    return {all.begin(), all.end()};
  }

private:
  const tok::Tokenizer& tokenizer_;
  bool lower_case_;
  int64_t max_len_;
};

// The buckets the texts need: for each, the smallest power of two >= its length (at least
// 16), the longest allowed length where that is shorter.
std::vector<int64_t> default_buckets(const std::vector<std::vector<int32_t>>& ids,
                                     int64_t max_len) {
  std::vector<int64_t> out;
  for (const auto& t : ids) {
    int64_t b = 16;
    while (b < static_cast<int64_t>(t.size()))
      b *= 2;
    b = std::min(b, max_len);
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The texts in batches of one bucket each: longest first within a bucket, so that a batch's
// texts are of similar length. What is left of a bucket short of a whole batch runs text by
// text (a model of batch 1), not padded with texts that would be computed for nothing.
struct Batch {
  int64_t seq = 0;
  std::vector<size_t> texts; // indices into the inputs: `batch` of them, or 1
};

std::vector<Batch> batches_of(const std::vector<std::vector<int32_t>>& ids,
                              const BucketedModel& model, int64_t batch) {
  std::vector<size_t> order(ids.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return ids[a].size() > ids[b].size(); });
  std::vector<Batch> out;
  auto split_short = [&] {
    if (out.empty() || static_cast<int64_t>(out.back().texts.size()) == batch) return;
    Batch rest = std::move(out.back());
    out.pop_back();
    for (size_t t : rest.texts)
      out.push_back({rest.seq, {t}});
  };
  for (size_t i : order) {
    const int64_t seq = model.bucket_for(static_cast<int64_t>(ids[i].size())).seq;
    if (out.empty() || out.back().seq != seq ||
        static_cast<int64_t>(out.back().texts.size()) == batch) {
      if (!out.empty() && out.back().seq != seq) split_short();
      out.push_back({seq, {}});
    }
    out.back().texts.push_back(i);
  }
  split_short();
  return out;
}

// The buckets' models at the batch size and, where some texts run alone, at batch 1.
struct EmbedModels {
  BucketedModel* batched = nullptr;
  BucketedModel* single = nullptr;
  BucketedModel& for_rows(size_t rows) const { return rows == 1 && single ? *single : *batched; }
};

// One pass over every batch: the embeddings [texts, dim] in the inputs' order.
NDArray embed_all(const std::vector<std::vector<int32_t>>& ids, const std::vector<Batch>& batches,
                  const EmbedModels& models, const SentenceEmbedding& pipeline, int64_t hidden) {
  const int64_t dim = pipeline.dimension(hidden);
  NDArray out(DType::f32(), {static_cast<int64_t>(ids.size()), dim});
  for (const Batch& b : batches) {
    const auto rows = static_cast<int64_t>(b.texts.size());
    NDArray x(DType::i32(), {rows, b.seq}), mask(DType::f32(), {rows, b.seq});
    x.fill(0);
    mask.fill(0);
    for (int64_t r = 0; r < rows; ++r) {
      const std::vector<int32_t>& t = ids[b.texts[static_cast<size_t>(r)]];
      std::copy(t.begin(), t.end(), x.data_as<int32_t>() + r * b.seq);
      std::fill_n(mask.data_as<float>() + r * b.seq, t.size(), 1.0f);
    }
    NDArray pooled = pipeline.pool(models.for_rows(b.texts.size()).run(x, &mask).at(0), mask);
    for (int64_t r = 0; r < rows; ++r)
      std::copy_n(pooled.data_as<float>() + r * dim, dim,
                  out.data_as<float>() +
                      static_cast<int64_t>(b.texts[static_cast<size_t>(r)]) * dim);
  }
  return out;
}

std::string shortened(const std::string& text, size_t n = 48) {
  if (text.size() <= n) return text;
  size_t cut = n;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut; // UTF-8
  return text.substr(0, cut) + "...";
}

void print_embeddings(const std::vector<std::string>& texts,
                      const std::vector<std::vector<int32_t>>& ids, const NDArray& e) {
  const int64_t dim = e.shape()[1];
  for (size_t i = 0; i < texts.size(); ++i) {
    const float* v = e.data_as<float>() + static_cast<int64_t>(i) * dim;
    double sq = 0;
    for (int64_t c = 0; c < dim; ++c)
      sq += double(v[c]) * v[c];
    std::printf("[%zu] %zu tokens, |e| %.4f: ", i, ids[i].size(), std::sqrt(sq));
    for (int64_t c = 0; c < std::min<int64_t>(dim, 4); ++c)
      std::printf("%+.5f ", v[c]);
    std::printf("...  \"%s\"\n", shortened(texts[i]).c_str());
  }
  const size_t n = std::min<size_t>(texts.size(), 8);
  if (n < 2) return;
  std::printf("cosine similarity%s:\n", texts.size() > n ? " (the first 8 texts)" : "");
  for (size_t i = 0; i < n; ++i) {
    std::printf("  [%zu]", i);
    for (size_t j = 0; j < n; ++j) {
      const float *a = e.data_as<float>() + static_cast<int64_t>(i) * dim,
                  *b = e.data_as<float>() + static_cast<int64_t>(j) * dim;
      double ab = 0, aa = 0, bb = 0;
      for (int64_t c = 0; c < dim; ++c)
        ab += double(a[c]) * b[c], aa += double(a[c]) * a[c], bb += double(b[c]) * b[c];
      std::printf(" %7.4f", ab / std::max(std::sqrt(aa * bb), 1e-30));
    }
    std::printf("\n");
  }
}

} // namespace

void add_model_embed_options(CLI::App* cmd, ModelEmbedOptions& o) {
  cmd->add_option("--hf", o.hf,
                  "An encoder checkpoint folder (BERT family), as sentence-transformers saves it "
                  "(modules.json, 1_Pooling/) or a plain one (mean pooling)")
      ->required();
  cmd->add_option("--text", o.texts, "A text to embed (repeatable)");
  cmd->add_option("--input", o.input, "A file of texts to embed, one a line ('-': standard input)");
  cmd->add_option("--tokenizer", o.tokenizer,
                  "Folder with tokenizer.json or vocab.txt (default: the checkpoint's)");
  cmd->add_option("--batch", o.batch, "Texts run together, padded to one bucket")
      ->capture_default_str();
  cmd->add_option("--buckets", o.buckets,
                  "Sequence-length buckets, e.g. 32,64,128 (default: the powers of two from 16 "
                  "the texts need)")
      ->delimiter(',');
  cmd->add_option("--repeats", o.repeats,
                  "Timed passes over all the texts after the first (the median is reported)")
      ->capture_default_str();
  cmd->add_option("--save-output", o.save_output, "Write the embeddings [texts, dim] as .npy");
  cmd->add_option("--report-json", o.report_json,
                  "Write the texts' count, tokens, build and embedding times to this JSON file");
  cmd->add_option("--path", o.plugin_paths, "Plugin directory searched first (repeatable)");
  add_kernel_flags(cmd, o.db, o.implementations, o.target, o.libraries, o.fpmath);
  cmd->add_flag("-q,--quiet", o.quiet, "Print only the figures");
  cmd->add_option("--log-level", o.log_level, "trace, debug, info, warn, error or off");
}

int embed_texts(const ModelEmbedOptions& o) {
  configure_logging(o.log_level);
  if (o.batch < 1) throw std::invalid_argument("--batch must be >= 1");
  if (o.repeats < 1) throw std::invalid_argument("--repeats must be >= 1");
  const std::vector<std::string> texts = texts_of(o);
  ModelSourceOptions source;
  source.plugin_paths = o.plugin_paths;
  SentenceEncoder enc = load_sentence_encoder(o.hf, source);
  const SentenceEmbedding& pipeline = enc.pipeline;
  LoadedModel& m = enc.model;
  const int64_t hidden = enc.hidden, max_len = enc.max_length;

  const tok::Tokenizer tokenizer =
      tok::Tokenizer::load(o.tokenizer.empty() ? enc.dir : o.tokenizer);
  const TextEncoder encode(tokenizer, pipeline.lower_case, max_len);
  std::vector<std::vector<int32_t>> ids;
  int64_t tokens = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    ids.push_back(encode(texts[i], i));
    for (int32_t id : ids.back())
      if (id < 0 || id >= m.vocab)
        throw std::invalid_argument("text " + std::to_string(i) + ": token id " +
                                    std::to_string(id) + " is outside the model's vocabulary");
    tokens += static_cast<int64_t>(ids.back().size());
  }
  const std::vector<int64_t> buckets =
      o.buckets.empty() ? default_buckets(ids, max_len) : o.buckets;
  if (!o.quiet)
    std::fprintf(stderr, "%s (%s): %.1fM parameters; %s; %zu texts, %lld tokens; building buckets",
                 enc.dir.c_str(), m.name.c_str(), static_cast<double>(m.num_parameters()) / 1e6,
                 pipeline.describe().c_str(), texts.size(), static_cast<long long>(tokens));
  if (!o.quiet) {
    for (int64_t b : buckets)
      std::fprintf(stderr, " %lld", static_cast<long long>(b));
    std::fprintf(stderr, " at batch %lld...\n", static_cast<long long>(o.batch));
  }

  std::unique_ptr<Database> db = open_read_only(o.db);
  KernelPolicy policy = policy_of(o.implementations, db.get());
  KernelSelector selector(*m.host, selection(policy, o.target, o.libraries, db.get(), o.fpmath));
  auto t0 = std::chrono::steady_clock::now();
  BucketedModel batched(*m.host, m.config, buckets, o.batch, /*with_mask=*/true, selector,
                        m.params);
  const std::vector<Batch> batches = batches_of(ids, batched, o.batch);
  std::unique_ptr<BucketedModel> single;
  std::vector<int64_t> single_buckets; // the buckets some text runs alone in
  for (const Batch& b : batches)
    if (o.batch > 1 && b.texts.size() == 1 &&
        std::find(single_buckets.begin(), single_buckets.end(), b.seq) == single_buckets.end())
      single_buckets.push_back(b.seq);
  if (!single_buckets.empty())
    single = std::make_unique<BucketedModel>(*m.host, m.config, single_buckets, 1, true, selector,
                                             m.params);
  const EmbedModels models{&batched, single.get()};
  const double build_s = since(t0);
  int64_t padded = 0;
  for (const Batch& b : batches)
    padded += b.seq * static_cast<int64_t>(b.texts.size());

  NDArray e = embed_all(ids, batches, models, pipeline, hidden); // also the warm-up
  std::vector<double> passes;
  for (int r = 0; r < o.repeats; ++r) {
    t0 = std::chrono::steady_clock::now();
    e = embed_all(ids, batches, models, pipeline, hidden);
    passes.push_back(since(t0));
  }
  std::sort(passes.begin(), passes.end());
  const double pass = passes[passes.size() / 2];

  if (!o.quiet) print_embeddings(texts, ids, e);
  std::printf("embedded %zu texts (%lld tokens, %lld with padding, %zu runs of at most %lld) in "
              "%.2f ms: %.1f texts/s (median of %d passes; %s kernels; buckets built in %.1f s)\n",
              texts.size(), static_cast<long long>(tokens), static_cast<long long>(padded),
              batches.size(), static_cast<long long>(o.batch), 1e3 * pass,
              static_cast<double>(texts.size()) / pass, o.repeats, to_string(policy), build_s);
  if (!o.save_output.empty()) {
    save_npy(e, o.save_output);
    std::printf("embeddings %s written to %s\n", e.shape_string().c_str(), o.save_output.c_str());
  }
  if (!o.report_json.empty()) {
    nlohmann::json j = {{"texts", texts.size()},
                        {"tokens", tokens},
                        {"padded_tokens", padded},
                        {"batch", o.batch},
                        {"buckets", buckets},
                        {"dimension", e.shape()[1]},
                        {"pipeline", pipeline.describe()},
                        {"embed_ms", 1e3 * pass},
                        {"build_ms", 1e3 * build_s},
                        {"texts_per_second", static_cast<double>(texts.size()) / pass},
                        {"implementations", to_string(policy)}};
    std::ofstream(o.report_json) << j.dump(2) << "\n";
  }
  return 0;
}

} // namespace mt::cli
