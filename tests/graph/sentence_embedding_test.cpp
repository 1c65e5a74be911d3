// Sentence embeddings (core/graph/sentence_embedding.h, `metatune model embed`): the folder's
// sentence-transformers modules read or refused by name, every pooling mode against a
// straightforward double-precision pooling written here, and the command end to end on a BERT
// folder with a WordPiece vocabulary against the float64 BERT forward pooled here.
#include "core/graph/sentence_embedding.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bert_checkpoint.h"
#include "cli_run.h"
#include "core/tokenizer/tokenizer.h"

namespace mt {
namespace {

using namespace graph_test;
namespace fs = std::filesystem;

// A folder removed at the end, with files written into it.
struct Folder {
  fs::path dir;
  explicit Folder(const std::string& tag)
      : dir(fs::temp_directory_path() / ("mt_st_" + tag + "_" + std::to_string(getpid()))) {
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Folder() { fs::remove_all(dir); }
  void write(const std::string& name, const std::string& text) const {
    fs::create_directories((dir / name).parent_path());
    std::ofstream(dir / name) << text;
  }
};

// What sentence-transformers writes for all-MiniLM-L6-v2 (dimension 16 here).
void write_sentence_transformers(
    const Folder& f, int64_t max_seq_length,
    const std::string& pooling = "\"pooling_mode_mean_tokens\": true") {
  f.write("modules.json", kSentenceModules);
  f.write("1_Pooling/config.json",
          "{\"word_embedding_dimension\": 16, \"pooling_mode_cls_token\": false, " + pooling + "}");
  f.write("sentence_bert_config.json",
          "{\"max_seq_length\": " + std::to_string(max_seq_length) + ", \"do_lower_case\": false}");
}

std::string read_error(const fs::path& dir) {
  try {
    SentenceEmbedding::read(dir.string());
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

TEST(SentenceEmbedding, ReadsTheModulesOfASentenceTransformersFolder) {
  Folder f("read");
  write_sentence_transformers(f, 256);
  SentenceEmbedding e = SentenceEmbedding::read(f.dir.string());
  EXPECT_TRUE(e.from_modules);
  EXPECT_EQ(e.poolings, std::vector<SentencePooling>{SentencePooling::Mean});
  EXPECT_TRUE(e.normalize);
  EXPECT_EQ(e.max_seq_length, 256);
  EXPECT_FALSE(e.lower_case);
  EXPECT_EQ(e.encoder_path, "");
  EXPECT_EQ(e.word_embedding_dimension, 16);
  EXPECT_EQ(e.describe(), "mean pooling, normalized, at most 256 tokens (modules.json)");
  EXPECT_NO_THROW(e.check_dimension(16));

  // Without Normalize, several modes (concatenated in sentence-transformers' order), the
  // encoder in a folder of its own as older releases saved it.
  f.write("modules.json", R"([
    {"path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
    {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])");
  f.write("1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true,
    "pooling_mode_cls_token": true, "pooling_mode_max_tokens": true})");
  f.write("0_Transformer/sentence_bert_config.json", R"({"do_lower_case": true})");
  e = SentenceEmbedding::read(f.dir.string());
  EXPECT_EQ(e.poolings, (std::vector<SentencePooling>{SentencePooling::Cls, SentencePooling::Max,
                                                      SentencePooling::Mean}));
  EXPECT_FALSE(e.normalize);
  EXPECT_TRUE(e.lower_case);
  EXPECT_EQ(e.encoder_path, "0_Transformer");
  EXPECT_EQ(e.dimension(16), 48);

  // The newer single-field form.
  f.write("1_Pooling/config.json", R"({"pooling_mode": "lasttoken"})");
  EXPECT_EQ(SentenceEmbedding::read(f.dir.string()).poolings,
            std::vector<SentencePooling>{SentencePooling::LastToken});
  f.write("1_Pooling/config.json", R"({"pooling_mode": "weightedmean"})");
  EXPECT_EQ(SentenceEmbedding::read(f.dir.string()).poolings,
            std::vector<SentencePooling>{SentencePooling::WeightedMean});
  // The position-weighted mean comes before the last token in the concatenation.
  f.write("1_Pooling/config.json", R"({"pooling_mode_lasttoken": true,
    "pooling_mode_weightedmean_tokens": true, "pooling_mode_mean_tokens": false})");
  EXPECT_EQ(
      SentenceEmbedding::read(f.dir.string()).poolings,
      (std::vector<SentencePooling>{SentencePooling::WeightedMean, SentencePooling::LastToken}));
}

TEST(SentenceEmbedding, APlainFolderIsMeanPooledAndNotNormalized) {
  Folder f("plain");
  SentenceEmbedding e = SentenceEmbedding::read(f.dir.string());
  EXPECT_FALSE(e.from_modules);
  EXPECT_EQ(e.poolings, std::vector<SentencePooling>{SentencePooling::Mean});
  EXPECT_FALSE(e.normalize);
  EXPECT_EQ(e.max_seq_length, 0);
}

TEST(SentenceEmbedding, BadFoldersAreRefusedNamingFileAndField) {
  Folder f("bad");
  auto refused = [&](const std::string& file, const std::string& text, const std::string& want) {
    write_sentence_transformers(f, 128);
    f.write(file, text);
    const std::string err = read_error(f.dir);
    EXPECT_NE(err.find((f.dir / file).string()), std::string::npos) << file << ": " << err;
    EXPECT_NE(err.find(want), std::string::npos) << file << ": " << err;
  };
  refused("modules.json", "[{\"type\": ", "not valid JSON");
  refused("modules.json", "{}", "not a list of modules");
  refused("modules.json", R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
    {"path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    {"path": "3_Dense", "type": "sentence_transformers.models.Dense"}])",
          "module 3 is sentence_transformers.models.Dense where nothing was expected");
  refused("modules.json", R"([{"path": "", "type": "sentence_transformers.models.Transformer"}])",
          "no Pooling module");
  refused("modules.json", R"([{"path": "", "type": "sentence_transformers.models.Transformer"},
    {"path": "../x", "type": "sentence_transformers.models.Pooling"}])",
          "path '../x' leaves the folder");
  refused("1_Pooling/config.json", R"({"pooling_mode_mean_tokens": false})",
          "no pooling mode is enabled");
  refused("1_Pooling/config.json", R"({"pooling_mode_mean_tokens": "yes"})",
          "pooling_mode_mean_tokens must be true or false");
  refused("1_Pooling/config.json", R"({"pooling_mode": "median"})",
          "pooling_mode 'median' is not supported");
  refused("sentence_bert_config.json", R"({"max_seq_length": -3})",
          "max_seq_length must be a positive integer");

  write_sentence_transformers(f, 128);
  SentenceEmbedding e = SentenceEmbedding::read(f.dir.string());
  try {
    e.check_dimension(384);
    ADD_FAILURE() << "a dimension of 16 taken for a model of 384";
  } catch (const std::invalid_argument& x) {
    EXPECT_NE(std::string(x.what()).find("word_embedding_dimension 16 is not the model's hidden "
                                         "size 384"),
              std::string::npos)
        << x.what();
  }
}

// Each mode over rows of different lengths (padding at the end), normalized and not, against
// pooling written out here in double.
TEST(SentenceEmbedding, EveryPoolingModeMatchesADoublePooling) {
  const int64_t B = 3, S = 5, H = 6;
  const std::vector<int64_t> lengths = {5, 3, 1};
  NDArray hidden(DType::f32(), {B, S, H}), mask(DType::f32(), {B, S});
  hidden.fill_random(7);
  mask.fill(0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < lengths[b]; ++s)
      mask.data_as<float>()[b * S + s] = 1;
  auto h = [&](int64_t b, int64_t s, int64_t c) {
    return double(hidden.data_as<float>()[(b * S + s) * H + c]);
  };
  auto reference = [&](SentencePooling p, int64_t b, int64_t c) {
    const int64_t n = lengths[b];
    double sum = 0, best = -1e300, weighted = 0, weights = 0;
    for (int64_t s = 0; s < n; ++s) {
      sum += h(b, s, c), best = std::max(best, h(b, s, c));
      weighted += double(s + 1) * h(b, s, c), weights += double(s + 1); // positions from 1
    }
    switch (p) {
    case SentencePooling::Cls:
      return h(b, 0, c);
    case SentencePooling::Max:
      return best;
    case SentencePooling::Mean:
      return sum / double(n);
    case SentencePooling::MeanSqrtLength:
      return sum / std::sqrt(double(n));
    case SentencePooling::WeightedMean:
      return weighted / weights;
    case SentencePooling::LastToken:
      return h(b, n - 1, c);
    }
    return 0.0;
  };
  const std::vector<SentencePooling> all = {
      SentencePooling::Cls,          SentencePooling::Max,
      SentencePooling::Mean,         SentencePooling::MeanSqrtLength,
      SentencePooling::WeightedMean, SentencePooling::LastToken};
  for (bool normalize : {false, true}) {
    SentenceEmbedding e;
    e.poolings = all;
    e.normalize = normalize;
    NDArray got = e.pool(hidden, mask);
    ASSERT_EQ(got.shape(), (std::vector<int64_t>{B, H * 6}));
    for (int64_t b = 0; b < B; ++b) {
      std::vector<double> want;
      for (SentencePooling p : all)
        for (int64_t c = 0; c < H; ++c)
          want.push_back(reference(p, b, c));
      double norm = 0;
      for (double x : want)
        norm += x * x;
      norm = normalize ? std::sqrt(norm) : 1.0;
      for (int64_t c = 0; c < H * 6; ++c)
        EXPECT_NEAR(got.data_as<float>()[b * H * 6 + c], want[c] / norm, 1e-6)
            << "row " << b << " value " << c << (normalize ? " normalized" : "");
    }
  }
  NDArray empty_row = mask;
  std::fill_n(empty_row.data_as<float>() + S, S, 0.0f);
  EXPECT_THROW(SentenceEmbedding().pool(hidden, empty_row), std::invalid_argument);
}

// `model embed` end to end: texts of different lengths in batches of 2 over two buckets (the
// odd one out of a bucket run alone), one cut at max_seq_length (its [SEP] kept), against each
// text's float64 forward alone.
// `model embed` of `texts` on the folder in batches of 2, buckets 4 and 7, untuned kernels; the
// embeddings saved to e.npy in the folder.
CliResult model_embed(const SentenceBert& c, const std::vector<std::string>& texts) {
  std::string args = "model embed --hf " + c.dir.string() + " --batch 2 --buckets 4,7 -q " +
                     "--implementations untuned --save-output " + (c.dir / "e.npy").string();
  for (const std::string& t : texts)
    args += " --text '" + t + "'";
  return metatune(args);
}

TEST(SentenceEmbedding, ModelEmbedMatchesTheFloat64ForwardPooled) {
  SentenceBert c;
  const std::vector<std::string> texts = {"the cat sat on the mat", "a dog",
                                          "the quick brown fox jumps over the lazy dog", "sky",
                                          "red house"};
  const tok::Tokenizer tokenizer = tok::Tokenizer::load(c.dir.string());
  std::vector<std::vector<int32_t>> ids;
  for (const std::string& t : texts) {
    std::vector<tok::TokenId> all = tokenizer.encode(t, true);
    if (all.size() > 7) { // [CLS], the first 5 of the text's own tokens, [SEP]
      all.erase(all.begin() + 6, all.end() - 1);
    }
    ids.emplace_back(all.begin(), all.end());
  }
  ASSERT_EQ(ids[2], (std::vector<int32_t>{2, 5, 15, 16, 17, 18, 3}));

  CliResult r = model_embed(c, texts);
  ASSERT_EQ(r.status, 0) << r.output;
  // Bucket 7: texts 0 and 2; bucket 4: texts 1 and 4, then 3 alone.
  EXPECT_NE(r.output.find("embedded 5 texts (25 tokens, 26 with padding, 3 runs of at most 2)"),
            std::string::npos)
      << r.output;
  std::vector<float> got = read_npy_floats((c.dir / "e.npy").string());
  ASSERT_EQ(got.size(), texts.size() * 16);
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<double> want = c.embedding(ids[i]);
    for (size_t k = 0; k < 16; ++k)
      EXPECT_NEAR(got[i * 16 + k], want[k], 1e-5) << "text " << i << " value " << k;
  }

  // The same texts one a line on standard input (`--input -`), an empty line skipped.
  {
    std::ofstream lines(c.dir / "texts.txt");
    for (const std::string& t : texts)
      lines << t << "\n\n";
  }
  const std::string from_stdin = (c.dir / "stdin.npy").string();
  r = metatune("model embed --hf " + c.dir.string() +
               " --batch 2 --buckets 4,7 -q --implementations untuned --input - --save-output " +
               from_stdin + " < " + (c.dir / "texts.txt").string());
  ASSERT_EQ(r.status, 0) << r.output;
  EXPECT_EQ(read_npy_floats(from_stdin), got);

  // Bad input is named: no texts, an input file that cannot be read.
  r = metatune("model embed --hf " + c.dir.string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("nothing to embed"), std::string::npos) << r.output;
  r = metatune("model embed --hf " + c.dir.string() + " --input " + (c.dir / "none.txt").string());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.output.find("none.txt: cannot be read"), std::string::npos) << r.output;
}

// A Dense module after the pooling (LaBSE's, distiluse's form): `model embed` gives the float64
// forward mean-pooled, through tanh(W v + b) of the module's own weights, then normalized.
TEST(SentenceEmbedding, ModelEmbedAppliesADenseModule) {
  SentenceBert c("sentence_bert_dense");
  c.add_dense(12);
  SentenceEmbedding e = SentenceEmbedding::read(c.dir.string());
  ASSERT_EQ(e.dense.size(), 1u);
  EXPECT_EQ(e.dense[0].activation, "tanh");
  EXPECT_EQ(e.dimension(16), 12);
  EXPECT_TRUE(e.normalize);
  EXPECT_NE(e.describe().find("Dense 16 -> 12 tanh, normalized"), std::string::npos)
      << e.describe();

  const tok::Tokenizer tokenizer = tok::Tokenizer::load(c.dir.string());
  const std::vector<std::string> texts = {"the cat sat on", "a dog", "sky"}; // none cut at 7
  CliResult r = model_embed(c, texts);
  ASSERT_EQ(r.status, 0) << r.output;
  std::vector<float> got = read_npy_floats((c.dir / "e.npy").string());
  ASSERT_EQ(got.size(), texts.size() * 12);
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<tok::TokenId> t = tokenizer.encode(texts[i], true);
    std::vector<double> want = c.embedding(std::vector<int32_t>(t.begin(), t.end()));
    ASSERT_EQ(want.size(), 12u);
    for (size_t k = 0; k < 12; ++k)
      EXPECT_NEAR(got[i * 12 + k], want[k], 1e-5) << "text " << i << " value " << k;
  }
}

TEST(SentenceEmbedding, BadDenseModulesAreRefusedNamingTheFile) {
  SentenceBert c("sentence_bert_bad_dense");
  c.add_dense(12);
  const fs::path cfg = c.dir / "2_Dense" / "config.json";
  auto config = [&](const std::string& text) { std::ofstream(cfg) << text; };
  config(R"({"in_features": 16, "out_features": 12, "activation_function": "my.Swish"})");
  EXPECT_NE(read_error(c.dir).find("activation_function 'my.Swish' is not supported"),
            std::string::npos)
      << read_error(c.dir);
  config(R"({"in_features": 16, "out_features": 0})");
  EXPECT_NE(read_error(c.dir).find("config.json: out_features must be a positive integer"),
            std::string::npos)
      << read_error(c.dir);
  // Sizes the weights do not have.
  config(R"({"in_features": 16, "out_features": 10})");
  EXPECT_NE(read_error(c.dir).find("linear.weight is not [10, 16]"), std::string::npos)
      << read_error(c.dir);
  // The pooled vector's size is the model's: checked with it.
  config(R"({"in_features": 16, "out_features": 12})");
  SentenceEmbedding e = SentenceEmbedding::read(c.dir.string());
  EXPECT_THROW(e.check_dimension(8), std::invalid_argument);
  // Pickled weights are not read.
  fs::rename(c.dir / "2_Dense" / "model.safetensors", c.dir / "2_Dense" / "pytorch_model.bin");
  EXPECT_NE(read_error(c.dir).find("pytorch_model.bin: a pickled PyTorch file"), std::string::npos)
      << read_error(c.dir);
  // A Dense module before the pooling.
  std::ofstream(c.dir / "modules.json") << R"([
    {"path": "", "type": "sentence_transformers.models.Transformer"},
    {"path": "2_Dense", "type": "sentence_transformers.models.Dense"}])";
  EXPECT_NE(read_error(c.dir).find("where Pooling was expected"), std::string::npos)
      << read_error(c.dir);
}

} // namespace
} // namespace mt
