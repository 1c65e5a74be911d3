// A read-only view of a trace for mutators and postprocessors that must find which sampling
// instruction decides what: instruction kinds, decisions and attributes through the host's
// accessors (ABI 1.3), and -- only when asked for -- inputs and outputs by variable name, parsed
// from the trace's JSON form ([[[kind, inputs, attrs, outputs], ...], [[index, decision], ...]]).
// The JSON form costs as much as replaying a few primitives, and the postprocessors run on
// every sample, so the common lookups stay off it. With a host older than 1.3 everything
// comes from the JSON form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metatune/sdk/schedule.hpp"

namespace mt::std_rules {

class TraceView {
public:
  // Keeps a reference to `trace`.
  explicit TraceView(const sdk::Trace& trace);
  ~TraceView();
  TraceView(TraceView&&) noexcept;
  TraceView& operator=(TraceView&&) noexcept;

  size_t size() const { return size_; }
  // The instruction's kind ("split", "sample_categorical"); valid while the view lives.
  std::string_view kind(size_t i) const;
  std::optional<std::vector<int64_t>> decision(size_t i) const;
  // Attribute j of instruction i as an integer list / integer / string, if it is one.
  std::optional<std::vector<int64_t>> attr_ints(size_t i, size_t j) const;
  std::optional<int64_t> attr_int(size_t i, size_t j) const;
  std::optional<std::string> attr_string(size_t i, size_t j) const;
  size_t num_inputs(size_t i) const;
  size_t num_attrs(size_t i) const;

  // From the JSON form (parsed on the first call of any of these):
  // input j of instruction i as a variable name ("l7"), if it is one;
  std::optional<std::string> input_var(size_t i, size_t j) const;
  // the instruction defining a variable, or nullopt;
  std::optional<size_t> defining(const std::string& var) const;
  // the instructions that take the variable as an input, in order;
  std::vector<size_t> users(const std::string& var) const;
  // the names of instruction i's outputs, in order ("" where an output is not a variable).
  std::vector<std::string> output_vars(size_t i) const;

private:
  struct Parsed;
  const Parsed& parsed() const;

  sdk::Trace trace_;
  bool accessors_ = false; // the host has the ABI 1.3 accessors
  size_t size_ = 0;
  mutable std::unique_ptr<Parsed> parsed_;
};

} // namespace mt::std_rules
