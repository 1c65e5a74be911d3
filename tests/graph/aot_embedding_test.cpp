// The embedding artifact end to end: `metatune model compile --embedding` writes a tiny
// sentence-transformers BERT folder's buckets; the runtime's CompiledEmbedder (runtime/, no
// LLVM, no core) gives each text's embedding as the float64 BERT forward of that text alone,
// mean-pooled and normalized (an independent path: no buckets, no batches, no padding), and as
// `model embed` with the same kernels; the example application prints the same; texts that fit
// no graph and broken folders fail naming the text, the file and the thing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "bert_checkpoint.h"
#include "cli_run.h"
#include "core/tokenizer/tokenizer.h"
#include "metatune/runtime/compiled_embedder.h"

namespace mt {
namespace {

namespace fs = std::filesystem;
using namespace graph_test;

// The folder compiled once for the suite: buckets 4 and 7 at batch 2 (and 1), untuned kernels.
class AotEmbedding : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    model_ = new SentenceBert("aot_embedding_model");
    out_ =
        new fs::path(fs::temp_directory_path() / ("mt_aot_embedding_" + std::to_string(getpid())));
    fs::remove_all(*out_);
    compile_ = new CliResult(metatune("model compile --embedding --hf " + model_->dir.string() +
                                      " --buckets 4,7 --batch 2 --implementations untuned --out " +
                                      out_->string()));
  }
  static void TearDownTestSuite() {
    fs::remove_all(*out_);
    delete compile_;
    delete out_;
    delete model_;
  }
  void SetUp() override { ASSERT_EQ(compile_->status, 0) << compile_->output; }

  static std::vector<int32_t> ids(const std::string& text) {
    const tok::Tokenizer t = tok::Tokenizer::load(model_->dir.string());
    std::vector<tok::TokenId> all = t.encode(text, true);
    return {all.begin(), all.end()};
  }

  static SentenceBert* model_;
  static fs::path* out_;
  static CliResult* compile_;
};

SentenceBert* AotEmbedding::model_ = nullptr;
fs::path* AotEmbedding::out_ = nullptr;
CliResult* AotEmbedding::compile_ = nullptr;

TEST_F(AotEmbedding, EmbeddingsMatchTheFloat64ForwardOfEachTextAlone) {
  rt::CompiledEmbedder e = rt::CompiledEmbedder::load(out_->string());
  EXPECT_EQ(e.dimension(), 16);
  EXPECT_EQ(e.max_length(), 7);
  EXPECT_EQ(e.batch(), 2);
  EXPECT_EQ(e.buckets(), (std::vector<int64_t>{4, 7}));
  EXPECT_EQ(e.pooling(), std::vector<std::string>{"mean"});
  EXPECT_TRUE(e.normalize());
  EXPECT_EQ(e.tokenizer(), out_->string() + "/vocab.txt");
  EXPECT_TRUE(fs::exists(e.tokenizer()));
  // Bucket 7: two texts (one batch); bucket 4: three (a batch, then one alone).
  const std::vector<std::vector<int32_t>> texts = {
      ids("the cat sat on mat"), ids("a dog"), ids("sky"), ids("the lazy fox"), ids("red house")};
  rt::Tensor v = e.embed(texts);
  ASSERT_EQ(v.info().shape, (std::vector<int64_t>{5, 16}));
  for (size_t i = 0; i < texts.size(); ++i) {
    const std::vector<double> want = model_->embedding(texts[i]);
    for (size_t k = 0; k < 16; ++k)
      EXPECT_NEAR(v.as<float>()[i * 16 + k], want[k], 1e-5) << "text " << i << " value " << k;
  }
  // One text alone is the same as among others (its own graph of batch 1 or a batch's row).
  rt::Tensor one = e.embed({texts[3]});
  for (size_t k = 0; k < 16; ++k)
    EXPECT_NEAR(one.as<float>()[k], v.as<float>()[3 * 16 + k], 1e-6);
}

// The same kernels in process: `model embed --implementations untuned` on the same texts.
TEST_F(AotEmbedding, MatchesModelEmbedWithTheSameKernels) {
  const std::string npy = (*out_ / "in_process.npy").string();
  CliResult r = metatune("model embed --hf " + model_->dir.string() +
                         " --buckets 4,7 --batch 2 --implementations untuned -q --save-output " +
                         npy + " --text 'the cat sat on mat' --text 'a dog' --text 'sky'");
  ASSERT_EQ(r.status, 0) << r.output;
  std::vector<float> want = read_npy_floats(npy);
  rt::CompiledEmbedder e = rt::CompiledEmbedder::load(out_->string());
  rt::Tensor v = e.embed({ids("the cat sat on mat"), ids("a dog"), ids("sky")});
  ASSERT_EQ(want.size(), 48u);
  for (size_t k = 0; k < want.size(); ++k)
    EXPECT_NEAR(v.as<float>()[k], want[k], 1e-6) << k;

  // The example application on the same ids: the first text's first value, written the same.
  std::string args = out_->string() + " -o " + (*out_ / "app.npy").string();
  for (const auto& t : {ids("the cat sat on mat"), ids("a dog"), ids("sky")}) {
    args += " ";
    for (size_t i = 0; i < t.size(); ++i)
      args += (i ? "," : "") + std::to_string(t[i]);
  }
  r = run_program(std::string(METATUNE_EMBED_RUNTIME) + " " + args);
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("embedded 3 texts in"), std::string::npos) << r.output;
  std::vector<float> app = read_npy_floats((*out_ / "app.npy").string());
  ASSERT_EQ(app.size(), 48u);
  for (size_t k = 0; k < app.size(); ++k)
    EXPECT_EQ(app[k], v.as<float>()[k]) << k;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const rt::Error& e) {
    return e.what();
  }
  return "";
}

TEST_F(AotEmbedding, TextsThatFitNoGraphAndBrokenFoldersAreNamed) {
  rt::CompiledEmbedder e = rt::CompiledEmbedder::load(out_->string());
  EXPECT_NE(error_of([&] {
              e.embed({{2, 5, 6, 7, 8, 9, 10, 3}});
            }).find("text 0: 8 tokens, more than the 7 the model takes"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              e.embed({{2, 5, 3}, {2, 31, 3}});
            }).find("text 1: token id 31 is outside the vocabulary [0, 31)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { e.embed({{}}); }).find("text 0 has no tokens"), std::string::npos);

  // A copy of the folder with embedding.json edited.
  const fs::path broken = *out_ / "broken";
  fs::create_directories(broken);
  for (const char* f : {"kernels.so", "weights.safetensors"})
    fs::copy_file(*out_ / f, broken / f, fs::copy_options::overwrite_existing);
  std::ifstream in(*out_ / "embedding.json");
  const nlohmann::json good = nlohmann::json::parse(in);
  auto refused = [&](const std::function<void(nlohmann::json&)>& edit, const std::string& want) {
    nlohmann::json j = good;
    edit(j);
    std::ofstream(broken / "embedding.json") << j.dump();
    const std::string err = error_of([&] { rt::CompiledEmbedder::load(broken.string()); });
    EXPECT_NE(err.find((broken / "embedding.json").string()), std::string::npos) << err;
    EXPECT_NE(err.find(want), std::string::npos) << err;
  };
  refused([](nlohmann::json& j) { j["format"] = "metatune-model"; },
          "not a metatune embedding artifact");
  refused([](nlohmann::json& j) { j["pooling"] = {"median"}; },
          "pooling 'median' is not one this runtime knows");
  refused([](nlohmann::json& j) { j["hidden"] = 8; }, "output 0 must be the hidden state f32[");
  refused([](nlohmann::json& j) { j["max_length"] = 5; }, "7 tokens, longer than max_length 5");
  refused(
      [](nlohmann::json& j) {
        nlohmann::json kept = nlohmann::json::array();
        for (const auto& g : j["graphs"])
          if (g["name"] != "embed@1x4") kept.push_back(g);
        j["graphs"] = kept;
      },
      "bucket 4 has no graph of batch 1");
  refused([](nlohmann::json& j) { j.erase("vocab"); }, "vocab");
}

// `model compile --embedding` refuses what it cannot write, by name.
// A folder with a Dense module: the artifact carries its weights (dense.safetensors) and the
// runtime applies it as the float64 reference does (mean pooling, tanh(W v + b), normalized).
TEST(AotEmbeddingCompile, CarriesADenseModule) {
  SentenceBert model("aot_embedding_dense");
  model.add_dense(12);
  const fs::path out =
      fs::temp_directory_path() / ("mt_aot_embedding_dense_" + std::to_string(getpid()));
  fs::remove_all(out);
  CliResult r = metatune("model compile --embedding --hf " + model.dir.string() +
                         " --buckets 7 --implementations untuned --out " + out.string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_TRUE(fs::exists(out / "dense.safetensors"));
  rt::CompiledEmbedder e = rt::CompiledEmbedder::load(out.string());
  EXPECT_EQ(e.dimension(), 12);
  const tok::Tokenizer t = tok::Tokenizer::load(model.dir.string());
  std::vector<std::vector<int32_t>> texts;
  for (const char* text : {"the cat sat on", "a dog"}) {
    std::vector<tok::TokenId> ids = t.encode(text, true);
    texts.emplace_back(ids.begin(), ids.end());
  }
  rt::Tensor got = e.embed(texts);
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<double> want = model.embedding(texts[i]);
    for (size_t k = 0; k < 12; ++k)
      EXPECT_NEAR(got.as<float>()[i * 12 + k], want[k], 1e-5) << "text " << i << " value " << k;
  }
  // A Dense module whose sizes do not follow the pooling is named at load.
  nlohmann::json j = nlohmann::json::parse(std::ifstream(out / "embedding.json"));
  j["dense"][0]["in"] = 8;
  std::ofstream(out / "embedding.json") << j.dump();
  try {
    rt::CompiledEmbedder::load(out.string());
    ADD_FAILURE() << "loaded a Dense module of the wrong size";
  } catch (const rt::Error& e) {
    EXPECT_NE(std::string(e.what()).find("Dense module 0 takes 8 floats"), std::string::npos)
        << e.what();
  }
  fs::remove_all(out);
}

TEST(AotEmbeddingCompile, RefusesWhatItCannotWrite) {
  SentenceBert model("aot_embedding_refused");
  const std::string out = (model.dir / "out").string();
  CliResult r = metatune("model compile --embedding --hf " + model.dir.string() +
                         " --buckets 4,9 --out " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--buckets: 9 is longer than the 7 tokens a text may have"),
            std::string::npos)
      << r.output;
  r = metatune("model compile --embedding --generation --hf " + model.dir.string() + " --out " +
               out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--generation and --embedding exclude each other"), std::string::npos)
      << r.output;
  r = metatune("model compile --embedding --implementations library --hf " + model.dir.string() +
               " --out " + out);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("--embedding exports the tuning target's kernels"), std::string::npos)
      << r.output;
  EXPECT_FALSE(fs::exists(out + "/embedding.json"));
}

} // namespace
} // namespace mt
