#include "trace_view.hpp"

#include <nlohmann/json.hpp>

#include "metatune/sdk/error.hpp"

namespace mt::std_rules {

using nlohmann::json;

// The JSON form, parsed.
struct TraceView::Parsed {
  struct Inst {
    std::string kind;
    json inputs = json::array(); // variable names, integers or null
    json attrs = json::array();
    std::vector<std::string> outputs; // variable names ("" where an output is not one)
    std::optional<std::vector<int64_t>> decision;
  };
  std::vector<Inst> insts;
  std::map<std::string, size_t> defs;

  explicit Parsed(const sdk::Trace& trace);
};

TraceView::Parsed::Parsed(const sdk::Trace& trace) {
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
    Inst in;
    in.kind = ji[0].get<std::string>();
    in.inputs = ji[1];
    in.attrs = ji[2];
    for (const json& o : ji[3]) {
      std::string name = o.is_string() ? o.get<std::string>() : std::string();
      if (!name.empty() && name != "root" && name != "inline") defs[name] = insts.size();
      in.outputs.push_back(name);
    }
    insts.push_back(std::move(in));
  }
  for (const json& d : j[1]) {
    if (!d.is_array() || d.size() != 2 || !d[0].is_number_unsigned()) continue;
    size_t i = d[0].get<size_t>();
    if (i >= insts.size()) continue;
    std::vector<int64_t> v;
    if (d[1].is_number_integer())
      v.push_back(d[1].get<int64_t>());
    else if (d[1].is_array())
      for (const json& e : d[1])
        if (e.is_number_integer()) v.push_back(e.get<int64_t>());
    insts[i].decision = std::move(v);
  }
}

TraceView::TraceView(const sdk::Trace& trace)
    : trace_(trace), accessors_(trace.has_attr_accessors()), size_(trace.size()) {
  if (!accessors_) {
    parsed_ = std::make_unique<Parsed>(trace_);
    size_ = parsed_->insts.size();
  }
}

TraceView::~TraceView() = default;
TraceView::TraceView(TraceView&&) noexcept = default;
TraceView& TraceView::operator=(TraceView&&) noexcept = default;

const TraceView::Parsed& TraceView::parsed() const {
  if (!parsed_) parsed_ = std::make_unique<Parsed>(trace_);
  return *parsed_;
}

// The accessors below return a status instead of throwing where the JSON form would simply
// not have the value (wrong type, out of range): lookups probe instructions freely.

std::string_view TraceView::kind(size_t i) const {
  if (!accessors_) return i < size_ ? std::string_view(parsed_->insts[i].kind) : std::string_view();
  mt_str s{};
  if (sdk::api().trace_instruction_kind(trace_.get(), i, &s) != MT_OK) return {};
  return {s.data, s.size};
}

std::optional<std::vector<int64_t>> TraceView::decision(size_t i) const {
  if (!accessors_) return i < size_ ? parsed_->insts[i].decision : std::nullopt;
  if (i >= size_) return std::nullopt;
  return trace_.decision(i);
}

std::optional<std::vector<int64_t>> TraceView::attr_ints(size_t i, size_t j) const {
  if (!accessors_) {
    if (i >= size_) return std::nullopt;
    const json& attrs = parsed_->insts[i].attrs;
    if (j >= attrs.size() || !attrs[j].is_array()) return std::nullopt;
    std::vector<int64_t> out;
    for (const json& e : attrs[j]) {
      if (!e.is_number_integer()) return std::nullopt;
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  size_t n = 0;
  if (sdk::api().trace_attr_ints(trace_.get(), i, j, nullptr, 0, &n) != MT_OK) return std::nullopt;
  std::vector<int64_t> v(n);
  if (sdk::api().trace_attr_ints(trace_.get(), i, j, v.data(), v.size(), &n) != MT_OK)
    return std::nullopt;
  return v;
}

std::optional<int64_t> TraceView::attr_int(size_t i, size_t j) const {
  if (!accessors_) {
    if (i >= size_) return std::nullopt;
    const json& attrs = parsed_->insts[i].attrs;
    if (j >= attrs.size() || !attrs[j].is_number_integer()) return std::nullopt;
    return attrs[j].get<int64_t>();
  }
  int64_t v = 0;
  if (sdk::api().trace_attr_int(trace_.get(), i, j, &v) != MT_OK) return std::nullopt;
  return v;
}

std::optional<std::string> TraceView::attr_string(size_t i, size_t j) const {
  if (!accessors_) {
    if (i >= size_) return std::nullopt;
    const json& attrs = parsed_->insts[i].attrs;
    if (j >= attrs.size() || !attrs[j].is_string()) return std::nullopt;
    return attrs[j].get<std::string>();
  }
  mt_str s{};
  if (sdk::api().trace_attr_str(trace_.get(), i, j, &s) != MT_OK) return std::nullopt;
  return std::string(s.data, s.size);
}

size_t TraceView::num_inputs(size_t i) const {
  if (!accessors_) return i < size_ ? parsed_->insts[i].inputs.size() : 0;
  size_t n = 0;
  if (sdk::api().trace_num_inputs(trace_.get(), i, &n) != MT_OK) return 0;
  return n;
}

size_t TraceView::num_attrs(size_t i) const {
  if (!accessors_) return i < size_ ? parsed_->insts[i].attrs.size() : 0;
  size_t n = 0;
  if (sdk::api().trace_num_attrs(trace_.get(), i, &n) != MT_OK) return 0;
  return n;
}

std::optional<std::string> TraceView::input_var(size_t i, size_t j) const {
  const Parsed& p = parsed();
  if (i >= p.insts.size()) return std::nullopt;
  const json& inputs = p.insts[i].inputs;
  if (j >= inputs.size() || !inputs[j].is_string()) return std::nullopt;
  return inputs[j].get<std::string>();
}

std::optional<size_t> TraceView::defining(const std::string& var) const {
  const Parsed& p = parsed();
  auto it = p.defs.find(var);
  if (it == p.defs.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> TraceView::output_vars(size_t i) const {
  const Parsed& p = parsed();
  return i < p.insts.size() ? p.insts[i].outputs : std::vector<std::string>{};
}

std::vector<size_t> TraceView::users(const std::string& var) const {
  const Parsed& p = parsed();
  std::vector<size_t> out;
  for (size_t i = 0; i < p.insts.size(); ++i)
    for (const json& x : p.insts[i].inputs)
      if (x.is_string() && x.get<std::string>() == var) {
        out.push_back(i);
        break;
      }
  return out;
}

} // namespace mt::std_rules
