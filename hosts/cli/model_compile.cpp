// The `model compile` subcommand (see model_compile.h).
#include "hosts/cli/model_compile.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include "core/database/database.h"
#include "core/graph/embedding_artifact.h"
#include "core/graph/generation_artifact.h"
#include "core/graph/generator.h"
#include "core/graph/kernel_selection.h"
#include "core/graph/model_artifact.h"
#include "core/graph/sentence_embedding.h"
#include "core/graph/sequence_buckets.h"
#include "core/plugin/plugin_components.h"
#include "core/tuner/tune_log.h"
#include "hosts/cli/generation_flags.h"
#include "hosts/cli/model_execution.h"
#include "hosts/cli/sentence_encoder.h"

namespace mt::cli {

namespace {

// Every task's kernel for the policy, where the policy chose a library (oneDNN) the tuning
// target's own kernel instead -- tuned where the database has a record, else untuned: only
// the tuning target exports kernel libraries. Says so per task.
std::vector<TaskKernel> exportable_kernels(const LoadedModel& m, const ModelCompileOptions& o,
                                           const KernelSelector& selector, const Database* db) {
  std::vector<TaskKernel> kernels = select_kernels(selector, m.tasks);
  std::unique_ptr<KernelSelector> own;
  for (size_t t = 0; t < kernels.size(); ++t) {
    if (!kernels[t].library) continue;
    if (!own)
      own = std::make_unique<KernelSelector>(
          *m.host, selection(db ? KernelPolicy::Tuned : KernelPolicy::Untuned, o.target,
                             o.libraries, db, o.fpmath));
    std::string chosen = kernels[t].label();
    kernels[t] = own->select(m.tasks[t]);
    std::printf("%s: %s was chosen, but only %s exports kernel libraries: %s instead\n",
                m.tasks[t].name.c_str(), chosen.c_str(), own->target().component.c_str(),
                kernels[t].label().c_str());
  }
  return kernels;
}

size_t tuned_count(const std::vector<std::pair<GraphTask, TaskKernel>>& kernels) {
  size_t n = 0;
  for (const auto& [task, kernel] : kernels)
    n += kernel.tuned;
  return n;
}

// --generation: every prefill bucket and decode capacity compiled by a Generator whose kernels
// are the tuning target's only (tuned where the database has a record, else untuned).
int compile_generation_artifact(const ModelCompileOptions& o, KernelPolicy policy,
                                const Database* db) {
  if (policy == KernelPolicy::Library)
    throw std::invalid_argument("--generation exports the tuning target's kernels: "
                                "--implementations library has none (untuned, tuned or best)");
  LoadedModel m = load_decoder(o.source);
  if (!o.quiet) std::printf("%s\n", m.describe().c_str());
  std::fflush(stdout);
  // No library: a library's kernels cannot be exported (best is then tuned or untuned).
  KernelSelector selector(*m.host, selection(policy, o.target, {}, db, o.fpmath));
  Generator gen(*m.host, m.config, selector, m.params,
                GenerationShape{o.prompt_buckets, o.capacities, m.max_positions});
  const int64_t chunk = o.extend_chunk >= 0
                            ? o.extend_chunk
                            : *std::min_element(o.prompt_buckets.begin(), o.prompt_buckets.end());
  gen.compile_all(chunk);
  GenerationArtifactSource a;
  a.model = m.name;
  a.generator = &gen;
  a.params = &m.params;
  a.target = selector.target().target.get();
  ModelArtifactSummary s = write_generation_artifact(a, o.out);
  const size_t tuned = tuned_count(gen.kernels());
  std::printf("wrote %s: kernels.so (%zu kernels by %s: %zu tuned, %zu untuned), "
              "generation.json (%zu prefills, %zu decode steps, %zu extends of %lld tokens, %zu "
              "groups, arenas up to %.2f MB; sequences up to %lld), weights.safetensors (%.2f "
              "MB)\n",
              o.out.c_str(), s.kernels, a.target->info().name.c_str(), tuned,
              gen.kernels().size() - tuned, gen.prefill_graphs().size(), gen.decode_graphs().size(),
              gen.extend_graphs().size(), static_cast<long long>(chunk), s.groups,
              s.arena_bytes / 1e6, static_cast<long long>(gen.max_length()), s.weight_bytes / 1e6);
  return 0;
}

// --embedding: a sentence encoder's buckets at --batch (and at batch 1) compiled with the tuning
// target's kernels only, with the folder's pooling (sentence_embedding.h).
int compile_embedding_artifact(const ModelCompileOptions& o, KernelPolicy policy,
                               const Database* db) {
  if (policy == KernelPolicy::Library)
    throw std::invalid_argument("--embedding exports the tuning target's kernels: "
                                "--implementations library has none (untuned, tuned or best)");
  if (o.source.hf.empty())
    throw std::invalid_argument("--embedding needs the encoder's folder: --hf DIR");
  SentenceEncoder enc = load_sentence_encoder(o.source.hf, o.source);
  const SentenceEmbedding& pipeline = enc.pipeline;
  LoadedModel& m = enc.model;
  const int64_t hidden = enc.hidden, max_len = enc.max_length;
  std::vector<int64_t> buckets = o.source.buckets;
  if (buckets.empty()) { // the powers of two from 16, the last one the longest text
    for (int64_t b = 16; b < max_len; b *= 2)
      buckets.push_back(b);
    buckets.push_back(max_len);
  }
  for (int64_t b : buckets)
    if (b > max_len)
      throw std::invalid_argument("--buckets: " + std::to_string(b) + " is longer than the " +
                                  std::to_string(max_len) + " tokens a text may have");
  std::printf("%s (%s): %.1fM parameters; %s; buckets", enc.dir.c_str(), m.name.c_str(),
              static_cast<double>(m.num_parameters()) / 1e6, pipeline.describe().c_str());
  for (int64_t b : buckets)
    std::printf(" %lld", static_cast<long long>(b));
  std::printf(" at batch %lld%s\n", static_cast<long long>(m.batch), m.batch > 1 ? " and 1" : "");
  std::fflush(stdout);
  KernelSelector selector(*m.host, selection(policy, o.target, {}, db, o.fpmath));
  BucketedModel batched(*m.host, m.config, buckets, m.batch, true, selector, m.params);
  std::unique_ptr<BucketedModel> single;
  if (m.batch > 1)
    single =
        std::make_unique<BucketedModel>(*m.host, m.config, buckets, 1, true, selector, m.params);
  EmbeddingArtifactSource a;
  a.model = m.name;
  a.pipeline = &pipeline;
  a.batched = &batched;
  a.single = single.get();
  a.batch = m.batch;
  a.vocab = m.vocab;
  a.hidden = hidden;
  a.max_length = max_len;
  a.params = &m.params;
  a.target = selector.target().target.get();
  a.tokenizer_dir = o.source.tokenizer.empty() ? enc.dir : o.source.tokenizer;
  ModelArtifactSummary s = write_embedding_artifact(a, o.out);
  size_t tuned = 0, graphs = 0;
  for (const BucketedModel* model : {&batched, single.get()}) {
    if (!model) continue;
    for (const SequenceBucket& b : model->buckets()) {
      ++graphs;
      for (const TaskKernel& k : b.kernels)
        tuned += k.tuned;
    }
  }
  std::printf("wrote %s: kernels.so (%zu kernels by %s), embedding.json (%zu graphs, %zu groups, "
              "%zu tuned kernel choices; arenas up to %.2f MB), weights.safetensors (%.2f MB)\n",
              o.out.c_str(), s.kernels, a.target->info().name.c_str(), graphs, s.groups, tuned,
              s.arena_bytes / 1e6, s.weight_bytes / 1e6);
  return 0;
}

} // namespace

void add_model_compile_options(CLI::App* cmd, ModelCompileOptions& o) {
  add_model_source_options(cmd, o.source);
  cmd->add_option("--out", o.out, "The artifact folder to write")->required();
  cmd->add_option("--db", o.db, "Tuning database with the model's tuned records");
  cmd->add_option("--implementations", o.implementations,
                  "untuned, tuned, library or best (default: best with --db, else untuned); "
                  "library kernels are replaced by the tuning target's");
  cmd->add_option("--target", o.target, "The tuning target")->capture_default_str();
  cmd->add_option("--library", o.libraries, "Library targets (repeatable)")->capture_default_str();
  add_fpmath_option(cmd, o.fpmath,
                    "f32, or bf16: the kernels as `model run --fpmath bf16` chooses and builds "
                    "them (the tuning target's with -fpmath=bf16: products in bf16, AMX where the "
                    "CPU has it); the artifact's weights stay f32");
  cmd->add_flag("--generation", o.generation,
                "A decoder's generation artifact (generation.json: a prefill per prompt bucket, "
                "a decode step per cache capacity) for runtime's CompiledGenerator");
  cmd->add_flag("--embedding", o.embedding,
                "A sentence encoder's embedding artifact (embedding.json: the --hf folder's "
                "pooling, a graph per --buckets length at --batch and at 1) for runtime's "
                "CompiledEmbedder");
  cmd->add_option("--prompt-buckets", o.prompt_buckets,
                  "--generation: the prompt lengths compiled (a prompt is padded to the smallest "
                  "that holds it)")
      ->delimiter(',')
      ->capture_default_str();
  add_capacities_flag(cmd, o.capacities);
  cmd->add_option("--extend-chunk", o.extend_chunk,
                  "--generation: tokens of the extend builds, one per capacity (a prompt longer "
                  "than the largest bucket, a conversation's next turn against the cache); "
                  "default the smallest prompt bucket, 0: none");
  cmd->add_flag("-q,--quiet", o.quiet, "Print only the summary");
  cmd->add_option("--log-level", o.log_level, "trace, debug, info, warn, error or off");
}

int compile_model_artifact(const ModelCompileOptions& o) {
  configure_logging(o.log_level);
  std::unique_ptr<Database> db = open_read_only(o.db);
  KernelPolicy policy = o.implementations.empty()
                            ? (db ? KernelPolicy::Best : KernelPolicy::Untuned)
                            : parse_kernel_policy(o.implementations);
  if (o.generation && o.embedding)
    throw std::invalid_argument("--generation and --embedding exclude each other");
  if (o.generation) return compile_generation_artifact(o, policy, db.get());
  if (o.embedding) return compile_embedding_artifact(o, policy, db.get());
  LoadedModel m = load_model(o.source);
  if (!o.quiet) std::printf("%s\n", m.describe().c_str());
  std::fflush(stdout);
  KernelSelector selector(*m.host, selection(policy, o.target, o.libraries, db.get(), o.fpmath));
  std::vector<TaskKernel> kernels = exportable_kernels(m, o, selector, db.get());
  ModelArtifactSource src;
  src.model = m.name;
  src.graph = &m.graph;
  src.groups = &m.groups;
  src.tasks = &m.tasks;
  src.kernels = &kernels;
  src.params = &m.params;
  src.target = selector.target().target.get();
  ModelArtifactSummary s = write_model_artifact(src, o.out);
  size_t tuned = 0;
  for (const TaskKernel& k : kernels)
    tuned += k.tuned;
  std::printf("wrote %s: kernels.so (%zu kernels by %s: %zu tuned, %zu untuned), model.json "
              "(%zu groups, %.2f MB arena), weights.safetensors (%.2f MB)\n",
              o.out.c_str(), s.kernels, src.target->info().name.c_str(), tuned, s.kernels - tuned,
              s.groups, s.arena_bytes / 1e6, s.weight_bytes / 1e6);
  return 0;
}

} // namespace mt::cli
