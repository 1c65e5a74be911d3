// A parsed view of a trace (its JSON form, the only place the ABI exposes instruction inputs
// and attributes), for mutators and postprocessors that must find which sampling instruction
// decides what: [[[kind, inputs, attrs, outputs], ...], [[index, decision], ...]].
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "metatune/sdk/schedule.hpp"

namespace mt::std_rules {

struct TraceInst {
  std::string kind;
  nlohmann::json inputs = nlohmann::json::array(); // variable names, integers or null
  nlohmann::json attrs = nlohmann::json::array();
  std::vector<std::string> outputs;
  std::optional<std::vector<int64_t>> decision;

  // Attribute i as an integer list / integer / string, if it is one.
  std::optional<std::vector<int64_t>> attr_ints(size_t i) const;
  std::optional<int64_t> attr_int(size_t i) const;
  std::optional<std::string> attr_string(size_t i) const;
  // Input i as a variable name, if it is one.
  std::optional<std::string> input_var(size_t i) const;
};

class TraceView {
public:
  explicit TraceView(const sdk::Trace& trace);

  size_t size() const { return insts_.size(); }
  const TraceInst& operator[](size_t i) const { return insts_[i]; }
  // The instruction defining a variable ("v7"), or nullopt.
  std::optional<size_t> defining(const std::string& var) const;
  // Instructions that take the variable as an input, in order.
  std::vector<size_t> users(const std::string& var) const;

private:
  std::vector<TraceInst> insts_;
  std::map<std::string, size_t> defs_;
};

} // namespace mt::std_rules
