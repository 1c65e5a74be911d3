#include "core/schedule/trace.h"

#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "core/schedule/schedule.h"

namespace mt {

using json = nlohmann::json;

std::vector<size_t> Trace::sampling_indices() const {
  std::vector<size_t> out;
  for (size_t i = 0; i < insts_.size(); ++i)
    if (insts_[i].is_sampling()) out.push_back(i);
  return out;
}

Trace Trace::with_decision(size_t index, std::optional<std::vector<int64_t>> decision) const {
  Trace t = *this;
  if (index < t.insts_.size()) t.insts_[index].decision = std::move(decision);
  return t;
}

namespace {

// Instructions that only look things up or sample: dead when their outputs are unused.
bool is_pure(const std::string& kind) {
  return kind == "get_block" || kind == "get_loops" || kind == "get_child_blocks" ||
         kind == "get_producers" || kind == "get_consumers" || kind.rfind("sample_", 0) == 0;
}

} // namespace

Trace Trace::simplified() const {
  std::set<std::pair<int, int>> used; // (kind, id)
  std::vector<bool> keep(insts_.size(), false);
  for (size_t i = insts_.size(); i-- > 0;) {
    const Instruction& inst = insts_[i];
    bool k = !is_pure(inst.kind);
    for (auto& o : inst.outputs) k = k || used.count({static_cast<int>(o.kind), o.id});
    if (!k) continue;
    keep[i] = true;
    for (auto& in : inst.inputs)
      if (auto* r = std::get_if<RVRef>(&in)) used.insert({static_cast<int>(r->kind), r->id});
  }
  Trace t;
  for (size_t i = 0; i < insts_.size(); ++i)
    if (keep[i]) t.insts_.push_back(insts_[i]);
  return t;
}

// ---- replay --------------------------------------------------------------------------------

namespace {

struct Replayer {
  Schedule& sch;
  bool use_decisions;
  std::map<int, BlockRV> blocks;
  std::map<int, LoopRV> loops;
  std::map<int, ExprRV> exprs;
  size_t at = 0;
  const Instruction* inst = nullptr;

  [[noreturn]] void fail(const std::string& why) const {
    throw TraceParseError("trace instruction " + std::to_string(at) + " (" + inst->kind +
                          "): " + why);
  }
  const RVRef& rv(size_t i, RVRef::Kind k) const {
    if (i >= inst->inputs.size()) fail("missing input " + std::to_string(i));
    auto* r = std::get_if<RVRef>(&inst->inputs[i]);
    if (!r || r->kind != k) fail("input " + std::to_string(i) + " has the wrong kind");
    return *r;
  }
  BlockRV block(size_t i) const {
    int id = rv(i, RVRef::Kind::Block).id;
    auto it = blocks.find(id);
    if (it == blocks.end()) fail("block b" + std::to_string(id) + " used before definition");
    return it->second;
  }
  LoopRV loop(size_t i) const {
    int id = rv(i, RVRef::Kind::Loop).id;
    if (id == -1) return LoopRV::root();
    if (id == -2) return LoopRV::inlined();
    auto it = loops.find(id);
    if (it == loops.end()) fail("loop l" + std::to_string(id) + " used before definition");
    return it->second;
  }
  ExprRV expr(size_t i) const {
    int id = rv(i, RVRef::Kind::Expr).id;
    auto it = exprs.find(id);
    if (it == exprs.end()) fail("value v" + std::to_string(id) + " used before definition");
    return it->second;
  }
  std::vector<LoopRV> all_loops() const {
    std::vector<LoopRV> out;
    for (size_t i = 0; i < inst->inputs.size(); ++i) out.push_back(loop(i));
    return out;
  }
  int64_t attr_int(size_t i) const {
    if (i >= inst->attrs.size() || !std::holds_alternative<int64_t>(inst->attrs[i]))
      fail("attribute " + std::to_string(i) + " must be an integer");
    return std::get<int64_t>(inst->attrs[i]);
  }
  const std::string& attr_str(size_t i) const {
    if (i >= inst->attrs.size() || !std::holds_alternative<std::string>(inst->attrs[i]))
      fail("attribute " + std::to_string(i) + " must be a string");
    return std::get<std::string>(inst->attrs[i]);
  }
  void expect_inputs(size_t n) const {
    if (inst->inputs.size() != n)
      fail("expected " + std::to_string(n) + " inputs, got " + std::to_string(inst->inputs.size()));
  }
  void expect_outputs(size_t n) const {
    if (inst->outputs.size() != n)
      fail("expected " + std::to_string(n) + " outputs, got " + std::to_string(inst->outputs.size()));
  }
  void bind_out(const std::vector<BlockRV>& v) {
    expect_outputs(v.size());
    for (size_t i = 0; i < v.size(); ++i) blocks[inst->outputs[i].id] = v[i];
  }
  void bind_out(const std::vector<LoopRV>& v) {
    expect_outputs(v.size());
    for (size_t i = 0; i < v.size(); ++i) loops[inst->outputs[i].id] = v[i];
  }
  void bind_out(const std::vector<ExprRV>& v) {
    expect_outputs(v.size());
    for (size_t i = 0; i < v.size(); ++i) exprs[inst->outputs[i].id] = v[i];
  }
  std::optional<int64_t> single_decision() const {
    if (!use_decisions || !inst->decision) return std::nullopt;
    if (inst->decision->size() != 1) fail("decision must be a single integer");
    return (*inst->decision)[0];
  }
  void check_output_kinds() const {
    static const std::map<std::string, RVRef::Kind> kinds = {
        {"get_block", RVRef::Kind::Block},     {"get_child_blocks", RVRef::Kind::Block},
        {"get_producers", RVRef::Kind::Block}, {"get_consumers", RVRef::Kind::Block},
        {"cache_read", RVRef::Kind::Block},    {"cache_write", RVRef::Kind::Block},
        {"decompose_reduction", RVRef::Kind::Block}, {"rfactor", RVRef::Kind::Block},
        {"get_loops", RVRef::Kind::Loop},      {"split", RVRef::Kind::Loop},
        {"fuse", RVRef::Kind::Loop},           {"sample_compute_location", RVRef::Kind::Loop},
        {"sample_perfect_tile", RVRef::Kind::Expr}, {"sample_categorical", RVRef::Kind::Expr}};
    auto it = kinds.find(inst->kind);
    for (auto& o : inst->outputs) {
      if (it == kinds.end() || o.kind != it->second) fail("output has the wrong kind");
      if (o.id < 0 && inst->kind != "sample_compute_location") fail("negative output id");
    }
  }

  void run(const Instruction& in) {
    inst = &in;
    check_output_kinds();
    const std::string& k = in.kind;
    if (k == "get_block") {
      expect_inputs(0);
      bind_out(std::vector<BlockRV>{sch.get_block(attr_str(0))});
    } else if (k == "get_loops") {
      expect_inputs(1);
      bind_out(sch.get_loops(block(0)));
    } else if (k == "get_child_blocks") {
      expect_inputs(1);
      bind_out(sch.get_child_blocks(loop(0)));
    } else if (k == "get_producers") {
      expect_inputs(1);
      bind_out(sch.get_producers(block(0)));
    } else if (k == "get_consumers") {
      expect_inputs(1);
      bind_out(sch.get_consumers(block(0)));
    } else if (k == "sample_perfect_tile") {
      expect_inputs(1);
      std::optional<std::vector<int64_t>> d;
      if (use_decisions && in.decision) d = *in.decision;
      int64_t n = attr_int(0), inner = attr_int(1);
      if (n < 1 || n > 64) fail("tile count out of range");
      bind_out(sch.sample_perfect_tile(loop(0), static_cast<int>(n), static_cast<int>(inner), d));
    } else if (k == "sample_categorical") {
      expect_inputs(0);
      if (in.attrs.size() != 2 || !std::holds_alternative<std::vector<int64_t>>(in.attrs[0]) ||
          !std::holds_alternative<std::vector<double>>(in.attrs[1]))
        fail("attributes must be [candidates, probabilities]");
      bind_out(std::vector<ExprRV>{sch.sample_categorical(std::get<std::vector<int64_t>>(in.attrs[0]),
                                                          std::get<std::vector<double>>(in.attrs[1]),
                                                          single_decision())});
    } else if (k == "sample_compute_location") {
      expect_inputs(1);
      expect_outputs(1);
      LoopRV l = sch.sample_compute_location(block(0), single_decision());
      loops[in.outputs[0].id] = l;
    } else if (k == "split") {
      if (in.inputs.size() < 3) fail("split needs a loop and at least two factors");
      std::vector<Factor> f;
      for (size_t i = 1; i < in.inputs.size(); ++i) {
        if (auto* c = std::get_if<int64_t>(&in.inputs[i])) f.push_back(*c);
        else f.push_back(expr(i));
      }
      bind_out(sch.split(loop(0), f));
    } else if (k == "fuse") {
      if (in.inputs.empty()) fail("fuse needs loops");
      bind_out(std::vector<LoopRV>{sch.fuse(all_loops())});
    } else if (k == "reorder") {
      sch.reorder(all_loops());
    } else if (k == "parallel" || k == "vectorize" || k == "unroll") {
      expect_inputs(1);
      if (k == "parallel") sch.parallel(loop(0));
      else if (k == "vectorize") sch.vectorize(loop(0));
      else sch.unroll(loop(0));
    } else if (k == "bind") {
      expect_inputs(1);
      sch.bind(loop(0), attr_str(0));
    } else if (k == "annotate" || k == "unannotate") {
      if (in.inputs.empty()) fail("missing target");
      auto* target = std::get_if<RVRef>(&in.inputs[0]);
      if (!target) fail("target must be a block or loop");
      const std::string& key = attr_str(0);
      bool is_block = target->kind == RVRef::Kind::Block;
      if (k == "unannotate") {
        expect_inputs(1);
        if (is_block) sch.unannotate(block(0), key);
        else sch.unannotate(loop(0), key);
      } else {
        expect_inputs(2);
        if (std::holds_alternative<RVRef>(in.inputs[1])) {
          ExprRV v = expr(1);
          if (is_block) sch.annotate(block(0), key, v);
          else sch.annotate(loop(0), key, v);
        } else {
          if (in.attrs.size() != 2) fail("annotate needs [key, value]");
          AnnValue v;
          if (auto* i = std::get_if<int64_t>(&in.attrs[1])) v = *i;
          else v = attr_str(1);
          if (is_block) sch.annotate(block(0), key, v);
          else sch.annotate(loop(0), key, v);
        }
      }
    } else if (k == "compute_at" || k == "reverse_compute_at") {
      expect_inputs(2);
      if (k == "compute_at") sch.compute_at(block(0), loop(1));
      else sch.reverse_compute_at(block(0), loop(1));
    } else if (k == "compute_inline" || k == "reverse_compute_inline") {
      expect_inputs(1);
      if (k == "compute_inline") sch.compute_inline(block(0));
      else sch.reverse_compute_inline(block(0));
    } else if (k == "cache_read" || k == "cache_write") {
      expect_inputs(1);
      int idx = static_cast<int>(attr_int(0));
      BlockRV b = k == "cache_read" ? sch.cache_read(block(0), idx, attr_str(1))
                                    : sch.cache_write(block(0), idx, attr_str(1));
      bind_out(std::vector<BlockRV>{b});
    } else if (k == "set_scope") {
      expect_inputs(1);
      sch.set_scope(block(0), static_cast<int>(attr_int(0)), attr_str(1));
    } else if (k == "decompose_reduction") {
      expect_inputs(2);
      bind_out(std::vector<BlockRV>{sch.decompose_reduction(block(0), loop(1))});
    } else if (k == "rfactor") {
      expect_inputs(1);
      bind_out(std::vector<BlockRV>{sch.rfactor(loop(0), static_cast<int>(attr_int(0)))});
    } else if (k == "transform_layout") {
      expect_inputs(1);
      if (in.attrs.size() != 2 || !std::holds_alternative<std::vector<int64_t>>(in.attrs[1]))
        fail("attributes must be [write_buffer_index, permutation]");
      sch.transform_layout(block(0), static_cast<int>(attr_int(0)),
                           std::get<std::vector<int64_t>>(in.attrs[1]));
    } else if (k == "storage_align") {
      expect_inputs(1);
      sch.storage_align(block(0), static_cast<int>(attr_int(0)), static_cast<int>(attr_int(1)),
                        static_cast<int>(attr_int(2)), static_cast<int>(attr_int(3)));
    } else {
      fail("unknown instruction kind");
    }
  }
};

} // namespace

void Trace::apply_to(Schedule& sch, bool use_decisions) const {
  Replayer r{sch, use_decisions, {}, {}, {}, 0, nullptr};
  for (size_t i = 0; i < insts_.size(); ++i) {
    r.at = i;
    r.run(insts_[i]);
  }
}

// ---- JSON ------------------------------------------------------------------------------------

namespace {

char prefix(RVRef::Kind k) { return k == RVRef::Kind::Block ? 'b' : k == RVRef::Kind::Loop ? 'l' : 'v'; }

} // namespace

std::string Trace::to_json() const {
  // Positional names: each output gets the next number in order of definition.
  std::map<std::pair<int, int>, std::string> names;
  int counter = 0;
  auto name_of = [&](const RVRef& r) -> std::string {
    if (r.kind == RVRef::Kind::Loop && r.id == -1) return "root";
    if (r.kind == RVRef::Kind::Loop && r.id == -2) return "inline";
    auto it = names.find({static_cast<int>(r.kind), r.id});
    if (it != names.end()) return it->second;
    return std::string(1, prefix(r.kind)) + "?" + std::to_string(r.id);
  };
  json insts = json::array(), decisions = json::array();
  for (size_t i = 0; i < insts_.size(); ++i) {
    const Instruction& in = insts_[i];
    json inputs = json::array(), attrs = json::array(), outputs = json::array();
    for (auto& x : in.inputs) {
      if (std::holds_alternative<std::monostate>(x)) inputs.push_back(nullptr);
      else if (auto* r = std::get_if<RVRef>(&x)) inputs.push_back(name_of(*r));
      else inputs.push_back(std::get<int64_t>(x));
    }
    for (auto& a : in.attrs)
      std::visit([&](const auto& v) { attrs.push_back(v); }, a);
    for (auto& o : in.outputs) {
      if (o.kind == RVRef::Kind::Loop && o.id < 0) {
        outputs.push_back(name_of(o));
        continue;
      }
      std::string n = std::string(1, prefix(o.kind)) + std::to_string(counter++);
      names[{static_cast<int>(o.kind), o.id}] = n;
      outputs.push_back(n);
    }
    insts.push_back(json::array({in.kind, inputs, attrs, outputs}));
    if (in.decision) {
      json d = in.kind == "sample_perfect_tile" ? json(*in.decision) : json((*in.decision)[0]);
      decisions.push_back(json::array({i, d}));
    }
  }
  return json::array({insts, decisions}).dump();
}

Trace Trace::from_json(std::string_view text) {
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw TraceParseError(std::string("trace JSON: ") + e.what());
  }
  auto bad = [](const std::string& where, const std::string& why) {
    throw TraceParseError("trace JSON at " + where + ": " + why);
  };
  if (!j.is_array() || j.size() != 2 || !j[0].is_array() || !j[1].is_array())
    bad("top level", "expected [instructions, decisions]");
  Trace t;
  std::map<std::string, RVRef> defined;
  int counter = 0;
  for (size_t i = 0; i < j[0].size(); ++i) {
    const json& ji = j[0][i];
    std::string where = "instruction " + std::to_string(i);
    if (!ji.is_array() || ji.size() != 4 || !ji[0].is_string() || !ji[1].is_array() ||
        !ji[2].is_array() || !ji[3].is_array())
      bad(where, "expected [kind, inputs, attrs, outputs]");
    Instruction in;
    in.kind = ji[0].get<std::string>();
    for (size_t k = 0; k < ji[1].size(); ++k) {
      const json& x = ji[1][k];
      if (x.is_null()) in.inputs.push_back(std::monostate{});
      else if (x.is_number_integer()) in.inputs.push_back(x.get<int64_t>());
      else if (x.is_string()) {
        std::string n = x.get<std::string>();
        if (n == "root") in.inputs.push_back(RVRef{RVRef::Kind::Loop, -1});
        else if (n == "inline") in.inputs.push_back(RVRef{RVRef::Kind::Loop, -2});
        else {
          auto it = defined.find(n);
          if (it == defined.end()) bad(where + " input " + std::to_string(k), "'" + n + "' is not defined");
          in.inputs.push_back(it->second);
        }
      } else {
        bad(where + " input " + std::to_string(k), "must be a variable name, integer or null");
      }
    }
    for (size_t k = 0; k < ji[2].size(); ++k) {
      const json& a = ji[2][k];
      std::string aw = where + " attr " + std::to_string(k);
      if (a.is_number_integer()) in.attrs.push_back(a.get<int64_t>());
      else if (a.is_number()) in.attrs.push_back(a.get<double>());
      else if (a.is_string()) in.attrs.push_back(a.get<std::string>());
      else if (a.is_array()) {
        bool all_int = true;
        for (auto& e : a) {
          if (!e.is_number()) bad(aw, "arrays must hold numbers");
          all_int = all_int && e.is_number_integer();
        }
        if (all_int && !a.empty() && in.kind != "sample_categorical") in.attrs.push_back(a.get<std::vector<int64_t>>());
        else if (all_int && k == 0) in.attrs.push_back(a.get<std::vector<int64_t>>());
        else in.attrs.push_back(a.get<std::vector<double>>());
      } else {
        bad(aw, "unsupported attribute type");
      }
    }
    for (size_t k = 0; k < ji[3].size(); ++k) {
      const json& o = ji[3][k];
      if (!o.is_string()) bad(where + " output " + std::to_string(k), "must be a variable name");
      std::string n = o.get<std::string>();
      RVRef r;
      if (n == "root") r = {RVRef::Kind::Loop, -1};
      else if (n == "inline") r = {RVRef::Kind::Loop, -2};
      else {
        if (n.size() < 2 || (n[0] != 'b' && n[0] != 'l' && n[0] != 'v'))
          bad(where + " output " + std::to_string(k), "'" + n + "' is not a variable name (b*, l*, v*)");
        if (defined.count(n)) bad(where + " output " + std::to_string(k), "'" + n + "' is defined twice");
        r.kind = n[0] == 'b' ? RVRef::Kind::Block : n[0] == 'l' ? RVRef::Kind::Loop : RVRef::Kind::Expr;
        r.id = counter++;
        defined[n] = r;
      }
      in.outputs.push_back(r);
    }
    t.insts_.push_back(std::move(in));
  }
  for (size_t i = 0; i < j[1].size(); ++i) {
    const json& d = j[1][i];
    std::string where = "decision " + std::to_string(i);
    if (!d.is_array() || d.size() != 2 || !d[0].is_number_unsigned())
      bad(where, "expected [instruction_index, decision]");
    size_t idx = d[0].get<size_t>();
    if (idx >= t.insts_.size()) bad(where, "instruction index out of range");
    if (!t.insts_[idx].is_sampling()) bad(where, "instruction " + std::to_string(idx) + " is not a sampling instruction");
    if (d[1].is_number_integer()) t.insts_[idx].decision = std::vector<int64_t>{d[1].get<int64_t>()};
    else if (d[1].is_array()) {
      std::vector<int64_t> v;
      for (auto& e : d[1]) {
        if (!e.is_number_integer()) bad(where, "decision values must be integers");
        v.push_back(e.get<int64_t>());
      }
      t.insts_[idx].decision = v;
    } else {
      bad(where, "decision must be an integer or a list of integers");
    }
  }
  return t;
}

} // namespace mt
