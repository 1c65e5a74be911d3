#include "core/workload/library.h"

#include <algorithm>
#include <cctype>
#include <sstream>
#include <stdexcept>

#include "core/support/check.h"
#include "core/workload/registry.h"

namespace mt {

using workload_detail::WorkloadDef;

namespace workload_detail {

ParamInfo int_param(std::string name, int64_t def, std::string doc, int64_t min, int64_t max) {
  ParamInfo p;
  p.name = std::move(name);
  p.kind = ParamKind::Int;
  p.default_value = std::to_string(def);
  p.doc = std::move(doc);
  p.min = min;
  p.max = max;
  return p;
}

ParamInfo string_param(std::string name, std::string def, std::string doc,
                       std::vector<std::string> choices) {
  ParamInfo p;
  p.name = std::move(name);
  p.kind = ParamKind::String;
  p.default_value = std::move(def);
  p.doc = std::move(doc);
  p.choices = std::move(choices);
  return p;
}

ParamInfo bool_param(std::string name, bool def, std::string doc) {
  return int_param(std::move(name), def ? 1 : 0, std::move(doc), 0, 1);
}

ParamInfo dtype_param() {
  return string_param("dtype", "f32", "element type", {"f32", "f64", "f16", "bf16"});
}

ParamInfo out_dtype_param() {
  ParamInfo p = string_param("out_dtype", "same",
                             "result type: the inputs' (same), or f32 with the products of f16 "
                             "or bf16 inputs summed in f32 (as tensor cores and cuBLAS do)",
                             {"same", "f32"});
  p.written_at_default = false;
  return p;
}

DType out_dtype(const WorkloadParams& p) {
  if (p.get_string("out_dtype") == "same") return p.dtype();
  if (p.dtype().bits > 32)
    workload_error(p, "out_dtype=f32 would narrow the " + std::string(to_string(p.dtype())) +
                          " inputs; it widens f16 and bf16 ones");
  return DType::f32();
}

void workload_error(const WorkloadParams& p, const std::string& msg) {
  throw std::invalid_argument("workload '" + p.workload() + "': " + msg);
}

} // namespace workload_detail

namespace {

using workload_detail::did_you_mean;

// Built on first use (no static constructors); the families register in a fixed order.
const std::vector<WorkloadDef>& registry() {
  static const std::vector<WorkloadDef> defs = [] {
    std::vector<WorkloadDef> d;
    workload_detail::add_gemm_workloads(&d);
    workload_detail::add_conv_workloads(&d);
    workload_detail::add_pool_workloads(&d);
    workload_detail::add_norm_workloads(&d);
    workload_detail::add_elementwise_workloads(&d);
    return d;
  }();
  return defs;
}

std::string join(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? sep : "") + v[i];
  return out;
}

const WorkloadDef& find_def(const std::string& name) {
  std::vector<std::string> names;
  for (const WorkloadDef& d : registry()) {
    if (d.info.name == name) return d;
    names.push_back(d.info.name);
  }
  throw std::invalid_argument("unknown workload '" + name + "'" + did_you_mean(name, names) +
                              "; known workloads: " + join(names));
}

bool is_ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool is_ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

class SpecParser {
public:
  explicit SpecParser(std::string_view s) : s_(s) {}

  WorkloadSpec parse() {
    WorkloadSpec spec;
    skip_ws();
    spec.name = ident("a workload name");
    skip_ws();
    if (at_end()) return spec;
    expect('(', "'(' or the end of the spec");
    skip_ws();
    if (peek() == ')') {
      ++pos_;
    } else {
      for (;;) {
        skip_ws();
        std::string key = ident("a parameter name");
        skip_ws();
        expect('=', "'=' after parameter '" + key + "'");
        skip_ws();
        std::string value = value_token(key);
        spec.args.emplace_back(std::move(key), std::move(value));
        skip_ws();
        if (peek() == ',') {
          ++pos_;
          continue;
        }
        expect(')', "',' or ')'");
        break;
      }
    }
    skip_ws();
    if (!at_end()) error("unexpected text after ')'");
    return spec;
  }

private:
  bool at_end() const { return pos_ >= s_.size(); }
  char peek() const { return at_end() ? '\0' : s_[pos_]; }
  void skip_ws() {
    while (!at_end() && std::isspace(static_cast<unsigned char>(s_[pos_])))
      ++pos_;
  }
  [[noreturn]] void error(const std::string& msg) const {
    std::string found = at_end() ? "end of spec" : "'" + std::string(1, s_[pos_]) + "'";
    throw std::invalid_argument("workload spec '" + std::string(s_) + "': syntax error at column " +
                                std::to_string(pos_ + 1) + ": " + msg + " (found " + found + ")");
  }
  void expect(char c, const std::string& what) {
    if (peek() != c) error("expected " + what);
    ++pos_;
  }
  std::string ident(const std::string& what) {
    if (!is_ident_start(peek())) error("expected " + what);
    size_t b = pos_;
    while (!at_end() && is_ident_char(s_[pos_]))
      ++pos_;
    return std::string(s_.substr(b, pos_ - b));
  }
  std::string value_token(const std::string& key) {
    size_t b = pos_;
    if (peek() == '-' || peek() == '+') {
      ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(peek())))
        error("expected digits in the value of '" + key + "'");
    }
    if (!is_ident_char(peek())) error("expected a value for parameter '" + key + "'");
    while (!at_end() && is_ident_char(s_[pos_]))
      ++pos_;
    return std::string(s_.substr(b, pos_ - b));
  }

  std::string_view s_;
  size_t pos_ = 0;
};

bool parse_int(const std::string& s, int64_t* out) {
  size_t i = (s[0] == '-' || s[0] == '+') ? 1 : 0;
  if (i == s.size() || s.size() - i > 18) return false; // 18 digits cannot overflow int64
  for (size_t k = i; k < s.size(); ++k) {
    if (!std::isdigit(static_cast<unsigned char>(s[k]))) return false;
  }
  *out = std::stoll(s);
  return true;
}

ParamValue convert(const WorkloadInfo& w, const ParamInfo& p, const std::string& text) {
  auto bad = [&](const std::string& why) -> std::invalid_argument {
    return std::invalid_argument("workload '" + w.name + "': parameter '" + p.name + "' " + why);
  };
  if (p.kind == ParamKind::Int) {
    int64_t v = 0;
    if (!parse_int(text, &v)) throw bad("expects an integer, got '" + text + "'");
    if (v < p.min || v > p.max) {
      std::string range = p.max == INT64_MAX
                              ? ">= " + std::to_string(p.min)
                              : "in [" + std::to_string(p.min) + ", " + std::to_string(p.max) + "]";
      throw bad("must be " + range + ", got " + text);
    }
    return v;
  }
  if (!is_ident_start(text[0])) throw bad("expects a name, got '" + text + "'");
  if (!p.choices.empty() && std::find(p.choices.begin(), p.choices.end(), text) == p.choices.end())
    throw bad("must be one of " + join(p.choices) + ", got '" + text + "'" +
              did_you_mean(text, p.choices));
  return text;
}

std::string value_text(const ParamValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  return std::get<std::string>(v);
}

std::string canonical(const WorkloadInfo& info, const WorkloadParams& params) {
  std::string out = info.name + "(";
  for (size_t i = 0; i < info.params.size(); ++i) {
    const ParamInfo& p = info.params[i];
    std::string value = value_text(params.values().at(p.name));
    if (!p.written_at_default && value == p.default_value) continue;
    out += (out.back() == '(' ? "" : ",") + p.name + "=" + value;
  }
  return out + ")";
}

} // namespace

int64_t WorkloadParams::get_int(const std::string& name) const {
  auto it = values_.find(name);
  // The parameters were filled in from the workload's own declaration: asking for another one
  // is a mistake in the workload's generator.
  MT_ICHECK(it != values_.end() && std::holds_alternative<int64_t>(it->second), "workload '",
            workload_, "' asks for integer parameter '", name, "', which it does not declare");
  return std::get<int64_t>(it->second);
}

const std::string& WorkloadParams::get_string(const std::string& name) const {
  auto it = values_.find(name);
  MT_ICHECK(it != values_.end() && std::holds_alternative<std::string>(it->second), "workload '",
            workload_, "' asks for string parameter '", name, "', which it does not declare");
  return std::get<std::string>(it->second);
}

DType WorkloadParams::dtype() const {
  const std::string& s = get_string("dtype");
  auto t = parse_dtype(s);
  if (!t) throw std::invalid_argument("workload '" + workload_ + "': bad dtype '" + s + "'");
  return *t;
}

WorkloadSpec parse_workload_spec(std::string_view spec) {
  return SpecParser(spec).parse();
}

WorkloadParams resolve_workload_spec(std::string_view text) {
  WorkloadSpec spec = parse_workload_spec(text);
  const WorkloadInfo& info = find_def(spec.name).info;
  std::vector<std::string> names;
  for (const ParamInfo& p : info.params)
    names.push_back(p.name);
  std::map<std::string, ParamValue> values;
  for (const auto& arg : spec.args) {
    const std::string& key = arg.first;
    const std::string& text_value = arg.second;
    auto it = std::find_if(info.params.begin(), info.params.end(),
                           [&](const ParamInfo& p) { return p.name == key; });
    if (it == info.params.end())
      throw std::invalid_argument("workload '" + info.name + "': unknown parameter '" + key + "'" +
                                  did_you_mean(key, names) + "; parameters: " + join(names));
    if (values.count(key))
      throw std::invalid_argument("workload '" + info.name + "': parameter '" + key +
                                  "' given twice");
    values.emplace(key, convert(info, *it, text_value));
  }
  for (const ParamInfo& p : info.params) {
    if (!values.count(p.name)) values.emplace(p.name, convert(info, p, p.default_value));
  }
  return WorkloadParams(info.name, std::move(values));
}

std::string canonical_workload_spec(std::string_view spec) {
  WorkloadParams params = resolve_workload_spec(spec);
  return canonical(find_def(params.workload()).info, params);
}

Function make_workload(std::string_view spec) {
  WorkloadParams params = resolve_workload_spec(spec);
  Function f = find_def(params.workload()).build(params);
  f.name = params.workload();
  return f;
}

std::vector<WorkloadInfo> list_workloads() {
  std::vector<WorkloadInfo> out;
  for (const WorkloadDef& d : registry())
    out.push_back(d.info);
  return out;
}

const WorkloadInfo& workload_info(const std::string& name) {
  return find_def(name).info;
}

std::vector<std::string> test_workload_specs() {
  std::vector<std::string> out;
  for (const WorkloadDef& d : registry()) {
    for (const std::string& s : d.test_specs)
      out.push_back(s);
  }
  return out;
}

std::string workloads_markdown() {
  std::ostringstream os;
  for (const WorkloadDef& d : registry()) {
    const WorkloadInfo& w = d.info;
    os << "### " << w.name << "\n\n" << w.doc << "\n\n";
    os << "| parameter | type | default | description |\n|---|---|---|---|\n";
    for (const ParamInfo& p : w.params) {
      std::string type;
      if (p.kind == ParamKind::Int) {
        type = p.min == 0 && p.max == 1 ? "0/1"
               : p.max == INT64_MAX     ? "int >= " + std::to_string(p.min)
                                    : "int " + std::to_string(p.min) + ".." + std::to_string(p.max);
      } else {
        type = p.choices.empty() ? "name" : join(p.choices, " \\| ");
      }
      os << "| `" << p.name << "` | " << type << " | `" << p.default_value << "` | " << p.doc
         << " |\n";
    }
    os << "\nDefault: `" << canonical(w, resolve_workload_spec(w.name)) << "`\n\nTest specs:";
    for (const std::string& s : d.test_specs)
      os << " `" << s << "`";
    os << "\n\n";
  }
  return os.str();
}

} // namespace mt
