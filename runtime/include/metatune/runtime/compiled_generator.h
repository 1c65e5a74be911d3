// Text generation from an ahead-of-time artifact: the folder `metatune model compile
// --generation --out DIR` writes (kernels.so, generation.json, weights.safetensors) holds a
// decoder's prefill for each prompt bucket and its decode step for each key/value cache
// capacity, sharing one kernel library and the weights; this runs them with the cache, with
// neither LLVM nor metatune's core or plugins in the process:
//
//   mt::rt::CompiledGenerator g = mt::rt::CompiledGenerator::load("llama-gen");
//   const float* logits = g.prefill({1, 450, 4996});   // the logits after the prompt
//   logits = g.step(next);                              // after one more token
//
// A prompt is padded to the smallest bucket that holds it (invisible to a causal decoder) and
// each step runs the decode graph of the smallest capacity above the sequence; the cache moves
// into the next capacity's buffer when it fills. Where the artifact has extend builds (a chunk
// of tokens against the cache), a prompt longer than the largest bucket is prefilled in chunks
// and a conversation's next prompt computes only what follows the prefix it shares with the
// sequence held (prefill_reusing). Batch 1. Errors throw mt::rt::Error naming the
// file, the graph and the thing (as CompiledModel's), and a prompt or sequence that fits no
// graph names the lengths the artifact has.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "metatune/runtime/compiled_model.h"

namespace mt::rt {

class CompiledGenerator {
public:
  static CompiledGenerator load(const std::string& dir, const LoadOptions& options = {});
  CompiledGenerator(CompiledGenerator&&) noexcept;
  CompiledGenerator& operator=(CompiledGenerator&&) noexcept;
  ~CompiledGenerator();

  // Starts a sequence with `prompt` (>= 1 token, at most the largest prompt bucket, shorter
  // than max_length()); the logits after its last token: vocab() floats, valid until the next
  // call.
  const float* prefill(const std::vector<int32_t>& prompt);
  // Appends `token` at position length(); the logits after it.
  const float* step(int32_t token);
  // Appends `tokens` (>= 1) at positions length() onward in chunks of extend_chunk() tokens
  // (each padded to it); the logits after the last. Starts a sequence when none is held.
  const float* extend(const std::vector<int32_t>& tokens);
  // Keeps the first `length` positions of the sequence held.
  void truncate(int64_t length);
  // Starts a sequence with `prompt`, keeping the positions of the longest prefix it shares with
  // the sequence held (all but its last token at most) and extending with the rest: the logits
  // prefill(prompt) gives, computing only the new tokens. Without extend builds, prefill().
  const float* prefill_reusing(const std::vector<int32_t>& prompt);
  int64_t last_reused() const;                // positions the last prefill_reusing() kept
  const std::vector<int32_t>& tokens() const; // the sequence held
  int64_t extend_chunk() const;               // tokens an extend build takes; 0: none

  int64_t length() const;     // tokens in the cache
  int64_t vocab() const;      // logits per position
  int64_t max_length() const; // the longest sequence: the largest capacity, or the model's
  const std::string& model() const;
  const std::vector<int64_t>& prompt_buckets() const;
  const std::vector<int64_t>& capacities() const;
  size_t num_kernels() const; // distinct kernels in kernels.so, shared by every graph

  struct State; // opaque: the implementation's

private:
  explicit CompiledGenerator(std::unique_ptr<State> state);
  std::unique_ptr<State> s_;
};

} // namespace mt::rt
