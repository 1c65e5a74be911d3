#include "trace_view.hpp"

#include "metatune/sdk/error.hpp"

namespace mt::std_rules {

using nlohmann::json;

std::optional<std::vector<int64_t>> TraceInst::attr_ints(size_t i) const {
  if (i >= attrs.size() || !attrs[i].is_array()) return std::nullopt;
  std::vector<int64_t> out;
  for (const json& e : attrs[i]) {
    if (!e.is_number_integer()) return std::nullopt;
    out.push_back(e.get<int64_t>());
  }
  return out;
}

std::optional<int64_t> TraceInst::attr_int(size_t i) const {
  if (i >= attrs.size() || !attrs[i].is_number_integer()) return std::nullopt;
  return attrs[i].get<int64_t>();
}

std::optional<std::string> TraceInst::attr_string(size_t i) const {
  if (i >= attrs.size() || !attrs[i].is_string()) return std::nullopt;
  return attrs[i].get<std::string>();
}

std::optional<std::string> TraceInst::input_var(size_t i) const {
  if (i >= inputs.size() || !inputs[i].is_string()) return std::nullopt;
  return inputs[i].get<std::string>();
}

TraceView::TraceView(const sdk::Trace& trace) {
  json j;
  try {
    j = json::parse(trace.to_json());
  } catch (const json::exception& e) {
    throw sdk::Error(std::string("std_rules: the host's trace JSON does not parse: ") + e.what());
  }
  if (!j.is_array() || j.size() != 2 || !j[0].is_array() || !j[1].is_array())
    throw sdk::Error("std_rules: unexpected trace JSON layout (want [instructions, decisions])");
  for (const json& ji : j[0]) {
    if (!ji.is_array() || ji.size() != 4 || !ji[0].is_string())
      throw sdk::Error("std_rules: unexpected instruction layout in the trace JSON");
    TraceInst in;
    in.kind = ji[0].get<std::string>();
    in.inputs = ji[1];
    in.attrs = ji[2];
    for (const json& o : ji[3]) {
      std::string name = o.is_string() ? o.get<std::string>() : std::string();
      if (!name.empty() && name != "root" && name != "inline") defs_[name] = insts_.size();
      in.outputs.push_back(std::move(name));
    }
    insts_.push_back(std::move(in));
  }
  for (const json& d : j[1]) {
    if (!d.is_array() || d.size() != 2 || !d[0].is_number_unsigned()) continue;
    size_t i = d[0].get<size_t>();
    if (i >= insts_.size()) continue;
    std::vector<int64_t> v;
    if (d[1].is_number_integer())
      v.push_back(d[1].get<int64_t>());
    else if (d[1].is_array())
      for (const json& e : d[1])
        if (e.is_number_integer()) v.push_back(e.get<int64_t>());
    insts_[i].decision = std::move(v);
  }
}

std::optional<size_t> TraceView::defining(const std::string& var) const {
  auto it = defs_.find(var);
  if (it == defs_.end()) return std::nullopt;
  return it->second;
}

std::vector<size_t> TraceView::users(const std::string& var) const {
  std::vector<size_t> out;
  for (size_t i = 0; i < insts_.size(); ++i)
    for (const json& x : insts_[i].inputs)
      if (x.is_string() && x.get<std::string>() == var) {
        out.push_back(i);
        break;
      }
  return out;
}

} // namespace mt::std_rules
