// The schedule language: random variables (blocks, loops, integers) over a function that is
// rewritten functionally by primitives, with every call recorded in a Trace. A primitive
// first checks legality and throws ScheduleError without changing anything if it fails.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include "core/ir/function.h"
#include "core/schedule/random.h"

namespace mt {

class Trace;

class ScheduleError : public std::runtime_error {
public:
  ScheduleError(std::string primitive, std::string subject, std::string reason);
  const std::string& primitive() const { return primitive_; }
  const std::string& subject() const { return subject_; } // the block or loop concerned
  const std::string& reason() const { return reason_; }

private:
  std::string primitive_, subject_, reason_;
};

// Random variables: indices into the schedule's symbol table.
struct BlockRV {
  int id = -1;
};
struct LoopRV {
  int id = -1;
  // Special compute locations returned by sample_compute_location.
  static LoopRV root() { return {-1}; }
  static LoopRV inlined() { return {-2}; }
  bool is_root() const { return id == -1; }
  bool is_inlined() const { return id == -2; }
};
struct ExprRV {
  int id = -1;
};
// A split factor: a constant, a sampled value, or -1 ("infer from the others").
using Factor = std::variant<int64_t, ExprRV>;

class Schedule {
public:
  explicit Schedule(Function func, uint64_t seed = 1);
  ~Schedule();
  Schedule(const Schedule&) = delete;
  Schedule& operator=(const Schedule&) = delete;
  Schedule(Schedule&&) noexcept;
  Schedule& operator=(Schedule&&) noexcept;
  // An independent copy (same function, trace, symbol table; RNG forked deterministically).
  std::unique_ptr<Schedule> copy() const;

  const Function& func() const { return func_; }
  const Trace& trace() const { return *trace_; }
  Trace& mutable_trace() { return *trace_; }
  RandomEngine& rng() { return rng_; }

  // ---- lookup / analysis ----
  BlockRV get_block(const std::string& name);
  std::vector<LoopRV> get_loops(BlockRV block);
  std::vector<BlockRV> get_child_blocks(LoopRV loop); // root(): all blocks in order
  std::vector<BlockRV> get_producers(BlockRV block);
  std::vector<BlockRV> get_consumers(BlockRV block);
  std::vector<BlockRV> all_blocks(); // in program order

  // ---- sampling (decision given = replay; absent = sample from rng) ----
  std::vector<ExprRV> sample_perfect_tile(LoopRV loop, int n, int max_innermost_factor,
                                          std::optional<std::vector<int64_t>> decision = {});
  ExprRV sample_categorical(const std::vector<int64_t>& candidates,
                            const std::vector<double>& probs,
                            std::optional<int64_t> decision = {}); // decision = chosen index
  LoopRV sample_compute_location(BlockRV block, std::optional<int64_t> decision = {});

  // ---- loop transformations ----
  std::vector<LoopRV> split(LoopRV loop, const std::vector<Factor>& factors);
  LoopRV fuse(const std::vector<LoopRV>& loops);
  void reorder(const std::vector<LoopRV>& order);
  void parallel(LoopRV loop);
  void vectorize(LoopRV loop);
  void unroll(LoopRV loop);
  void bind(LoopRV loop, const std::string& thread_axis);
  void annotate(LoopRV loop, const std::string& key, const AnnValue& value);
  void annotate(BlockRV block, const std::string& key, const AnnValue& value);
  // Annotation whose value is a sampled integer (e.g. an unroll depth).
  void annotate(LoopRV loop, const std::string& key, ExprRV value);
  void annotate(BlockRV block, const std::string& key, ExprRV value);
  void unannotate(LoopRV loop, const std::string& key);
  void unannotate(BlockRV block, const std::string& key);

  // ---- compute location ----
  void compute_at(BlockRV block, LoopRV loop);
  void reverse_compute_at(BlockRV block, LoopRV loop);
  void compute_inline(BlockRV block);
  void reverse_compute_inline(BlockRV block);

  // ---- buffers / reductions ----
  BlockRV cache_read(BlockRV block, int read_buffer_index, const std::string& scope);
  BlockRV cache_write(BlockRV block, int write_buffer_index, const std::string& scope);
  void set_scope(BlockRV block, int write_buffer_index, const std::string& scope);
  BlockRV decompose_reduction(BlockRV block, LoopRV loop);
  BlockRV rfactor(LoopRV loop, int factor_axis);
  void storage_align(BlockRV block, int write_buffer_index, int axis, int factor, int offset);
  // Permutes the dimensions of an intermediate buffer the block writes: dimension d of the new
  // layout is dimension permutation[d] of the old one, and every access follows. Used to pack
  // a staged operand so that the vectorized axis is contiguous (dense weight[N, K] staged as
  // [K, N]). Function arguments keep the caller's layout (refused).
  void transform_layout(BlockRV block, int write_buffer_index,
                        const std::vector<int64_t>& permutation);

  // ---- values of random variables ----
  int64_t get(ExprRV v) const;
  const Block& get(BlockRV b) const;   // current block node
  const ForNode& get(LoopRV l) const;  // current loop node
  std::string name_of(BlockRV b) const;
  // Whether a random variable still refers to something in the current function.
  bool valid(BlockRV b) const;
  bool valid(LoopRV l) const;

  // Implementation detail shared by the primitive implementation files (schedule_impl.h).
  struct Impl;

private:
  friend class Trace;
  Function func_;
  RandomEngine rng_;
  std::unique_ptr<Trace> trace_;
  std::unique_ptr<Impl> impl_;
};

} // namespace mt
