// Stages: the lowered loop program of one workload seen as a list of "stages", one per loop
// nest that stores to one buffer (an unscheduled block after lowering). A stage records its
// loops, the store's indices and value and, for a reduction nest (`if r == 0 {init}` then
// `out = out OP rhs`), the reduction kind, identity and operand. Recognisers match operators
// on these stages; nothing here looks at buffer or loop names.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "metatune/sdk/expr_equal.hpp"
#include "metatune/sdk/index_analysis.hpp"
#include "metatune/sdk/program.hpp"

namespace mt::onednn {

namespace P = mt::sdk::program;

// Raised while matching: the program is not (this) oneDNN operator, and why.
struct NotRecognised {
  std::string why;
};
[[noreturn]] inline void reject(std::string why) {
  throw NotRecognised{std::move(why)};
}

enum class Reduce { None, Sum, Max, Min };

struct Loop {
  int64_t var = 0; // var id
  int64_t extent = 0;
};

struct Stage {
  std::vector<Loop> loops; // outermost first
  P::Buffer out;
  std::vector<P::Expr> out_idx;
  // Per out dimension: the loop var stored along it, or -1 for a constant-0 index of an
  // extent-1 dimension.
  std::vector<int64_t> out_vars;
  Reduce reduce = Reduce::None;
  double init = 0;         // identity stored by the init statement (reductions)
  P::Expr value;           // elementwise: the stored value; reduction: the combined operand
  std::vector<Loop> rvars; // loops whose var is not an output index (reduction loops)

  int64_t extent_of(int64_t var) const;
  bool is_reduce_var(int64_t var) const;
};

// Part of the main result: per output position, where it starts and how far it reaches.
struct Window {
  std::vector<int64_t> offset, extent;
};

struct StageProgram {
  const P::Program* program = nullptr;
  std::vector<Stage> stages;
  std::unordered_map<int64_t, size_t> param_index; // buffer id -> param position
  std::unordered_set<int64_t> intermediates;       // buffer ids allocated by the body
  size_t output_param = 0;                         // the one param the program writes
  // One output of a program that writes several slices of one result (split_outputs): the
  // stages before the last compute the result, restricted to `window`; the last copies it out.
  std::optional<Window> window;
  std::vector<size_t> outputs; // every param the program writes (extract_stages)

  bool is_param(const P::Buffer& b) const { return param_index.count(b->id) != 0; }
  size_t param_of(const P::Buffer& b) const;
  // The stage writing buffer `b`, or -1.
  int producer(const P::Buffer& b) const;
  // Number of loads of `b` over all stages.
  int num_reads(const P::Buffer& b) const;
};

// Splits a lowered program into stages; rejects what is not a sequence of simple loop nests
// over f32 buffers, each buffer written once. With several output parameters, `stages` and
// `output_param` describe none of them: split_outputs gives one program per output.
StageProgram extract_stages(const P::Program& program);

// A program whose last stages each copy one slice of the same intermediate result into an
// output of their own (a fused QKV projection writing q, k and v) as one windowed program per
// output, in parameter order; rejects any other program with several outputs.
std::vector<StageProgram> split_outputs(const StageProgram& sp);

// ---- expression helpers ------------------------------------------------------------------------

// (Structural equality, affine forms and strides: metatune/sdk/expr_equal.hpp and
// index_analysis.hpp.)
bool is_var(const P::Expr& e, int64_t* var = nullptr);
bool is_int(const P::Expr& e, int64_t value);
bool float_value(const P::Expr& e, double* v); // a float (or int) immediate
bool is_load_of(const P::Expr& e, const P::Buffer& b);

} // namespace mt::onednn
