#include "hosts/cli/sentence_encoder.h"

#include <algorithm>
#include <stdexcept>

namespace mt::cli {

SentenceEncoder load_sentence_encoder(const std::string& folder, ModelSourceOptions source) {
  SentenceEncoder e;
  e.pipeline = SentenceEmbedding::read(folder);
  e.dir = e.pipeline.encoder_dir(folder);
  source.hf = e.dir;
  source.config.clear();
  source.seq = 1; // only described: the buckets' graphs are what runs
  source.buckets.clear();
  e.model = load_model(source);
  if (!e.model.encoder)
    throw std::invalid_argument(e.dir +
                                ": a sentence encoder must be an encoder (std.Encoder), "
                                "not " +
                                e.model.name);
  Config resolved = e.model.config;
  resolved.resolve();
  e.hidden = resolved.get<int64_t>("dim");
  e.pipeline.check_dimension(e.hidden);
  e.max_length = resolved.get<int64_t>("max_positions");
  if (e.pipeline.max_seq_length > 0)
    e.max_length = std::min(e.max_length, e.pipeline.max_seq_length);
  return e;
}

} // namespace mt::cli
