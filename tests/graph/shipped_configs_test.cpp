// The shipped model configs (configs/*.json) load against the standard layers' schemas,
// validate, instantiate, and have the parameter counts Hugging Face reports for the same
// models (GPT2Model: 124,439,808; BertModel without its pooler: 109,482,240 - 590,592), and
// the Llama-style decoder its own count.
#include "core/graph/layer_registry.h"
#include "core/model/config_json.h"
#include "graph_test_util.h"

namespace mt {
namespace {

using namespace graph_test;

int64_t parameter_count(const std::string& file, int inputs) {
  ConfigRegistry reg = layer_config_registry(host());
  Config c = load_config_file(reg, std::string(METATUNE_SOURCE_DIR) + "/configs/" + file);
  c.validate();
  std::vector<te::Tensor> in = {te::placeholder({1, 4}, DType::i32(), "ids")};
  if (inputs == 2) in.push_back(te::placeholder({1, 4}, DType::f32(), "mask"));
  ModelGraph g = instantiate_model(host(), c, in);
  int64_t n = 0;
  for (const ModelParam& p : g.params) {
    int64_t k = 1;
    for (int64_t d : p.shape)
      k *= d;
    n += k;
  }
  return n;
}

TEST(ShippedConfigs, Gpt2SmallHasGpt2sParameterCount) {
  EXPECT_EQ(parameter_count("gpt2-small.json", 1), 124439808);
}

TEST(ShippedConfigs, BertBaseHasBertsParameterCount) {
  EXPECT_EQ(parameter_count("bert-base.json", 2), 109482240 - 590592);
}

// 12 layers of q [768, 768], k and v [256, 768] (4 of 12 heads), o, gate and up [2048, 768],
// down, two norms; embeddings, an untied head [32000, 768] and the final norm: the ~125M
// Llama-style decoder of bench/llama.
TEST(ShippedConfigs, LlamaSmallHasItsParameterCount) {
  const int64_t layer = 768 * 768 * 2 + 256 * 768 * 2 + 2048 * 768 * 3 + 768 * 2;
  EXPECT_EQ(parameter_count("llama-small.json", 1), 12 * layer + 32000 * 768 * 2 + 768);
}

} // namespace
} // namespace mt
