// A Trace is the program a schedule ran: its instructions (kind, inputs, attributes, outputs)
// and the decisions of its sampling instructions. It serialises to JSON, replays onto the
// original function (with its decisions, one decision changed, or re-sampling), and can be
// simplified by dropping instructions whose results are never used.
//
// JSON form: [[[kind, [inputs], [attrs], [outputs]], ...], [[inst_index, decision], ...]]
// with random variables named positionally by their first definition: "b0" (block),
// "l1" (loop), "v2" (integer). Loop inputs may also be the special "root" / "inline".
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace mt {

class Schedule;

class TraceParseError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// A reference to a random variable of the schedule that recorded the instruction.
struct RVRef {
  enum class Kind : uint8_t { Block, Loop, Expr };
  Kind kind = Kind::Block;
  int id = -1; // -1 root loop, -2 inlined (Loop only)
  friend bool operator==(const RVRef&, const RVRef&) = default;
};

// An instruction input: a random variable, an integer constant, or none.
using InstInput = std::variant<std::monostate, RVRef, int64_t>;
using InstAttr =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;

struct Instruction {
  std::string kind; // "split", "sample_perfect_tile", ...
  std::vector<InstInput> inputs;
  std::vector<InstAttr> attrs;
  std::vector<RVRef> outputs;
  // Sampling instructions: the decision taken (tile factors; or a single chosen index).
  std::optional<std::vector<int64_t>> decision;

  bool is_sampling() const { return kind.rfind("sample_", 0) == 0; }
};

class Trace {
public:
  const std::vector<Instruction>& instructions() const { return insts_; }
  size_t size() const { return insts_.size(); }
  void append(Instruction inst) { insts_.push_back(std::move(inst)); }
  void clear() { insts_.clear(); }

  // Indices of the sampling instructions (the decisions a mutator can change).
  std::vector<size_t> sampling_indices() const;
  // A copy with the decision of instruction `index` replaced (or removed if nullopt).
  Trace with_decision(size_t index, std::optional<std::vector<int64_t>> decision) const;
  // Drops instructions whose outputs are never used by an instruction with effects.
  Trace simplified() const;

  // Re-runs the instructions on `sch` (a fresh schedule of the original function). With
  // `use_decisions`, sampling instructions take their recorded decisions; otherwise they
  // re-sample from the schedule's rng. Throws ScheduleError if an instruction is illegal,
  // TraceParseError if the trace is inconsistent (bad kind, arity, undefined variable).
  void apply_to(Schedule& sch, bool use_decisions = true) const;

  std::string to_json() const;
  static Trace from_json(std::string_view text);

private:
  std::vector<Instruction> insts_;
};

} // namespace mt
