// The trace, random-number and tune-context parts of the host API table (what mutators and
// component initialisation need).
#include "core/plugin/host_api.h"
#include "core/plugin/host_handles.h"

namespace mt::plugin_detail {

namespace {

const Trace& trace(const mt_trace* t) {
  return require(t, "trace")->trace;
}

const Instruction& instruction(const mt_trace* t, size_t i) {
  const Trace& tr = trace(t);
  if (i >= tr.size())
    throw ApiError(MT_ERROR_OUT_OF_RANGE,
                   "instruction " + std::to_string(i) + " of " + std::to_string(tr.size()));
  return tr.instructions()[i];
}

void trace_retain(mt_trace* t) {
  if (t) t->refs.fetch_add(1, std::memory_order_relaxed);
}
void trace_release(mt_trace* t) {
  if (t && t->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) delete t;
}
size_t trace_num_instructions(const mt_trace* t) {
  return t ? t->trace.size() : 0;
}

mt_status trace_instruction_kind(const mt_trace* t, size_t i, mt_str* out) {
  return guard("trace_instruction_kind", [&] {
    require(out, "out");
    *out = str(instruction(t, i).kind);
  });
}

mt_status trace_decision(const mt_trace* t, size_t i, int64_t* out, size_t capacity,
                         size_t* count) {
  return guard("trace_decision", [&] {
    const Instruction& inst = instruction(t, i);
    if (!inst.decision)
      throw ApiError(MT_ERROR_NOT_FOUND,
                     "instruction " + std::to_string(i) + " (" + inst.kind + ") has no decision");
    fill_array(*inst.decision, out, capacity, count, [](int64_t v) { return v; });
  });
}

mt_status trace_num_attrs(const mt_trace* t, size_t i, size_t* out) {
  return guard("trace_num_attrs", [&] {
    require(out, "out");
    *out = instruction(t, i).attrs.size();
  });
}

mt_status trace_attr_int(const mt_trace* t, size_t i, size_t j, int64_t* out) {
  return guard("trace_attr_int", [&] {
    require(out, "out");
    const Instruction& inst = instruction(t, i);
    if (j >= inst.attrs.size())
      throw ApiError(MT_ERROR_OUT_OF_RANGE, "attribute " + std::to_string(j) + " of " +
                                                std::to_string(inst.attrs.size()) + " of " +
                                                inst.kind);
    const auto* v = std::get_if<int64_t>(&inst.attrs[j]);
    if (!v)
      throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                     "attribute " + std::to_string(j) + " of " + inst.kind + " is not an integer");
    *out = *v;
  });
}

// Attribute j of instruction i, range-checked with a clear message.
const InstAttr& attribute(const mt_trace* t, size_t i, size_t j) {
  const Instruction& inst = instruction(t, i);
  if (j >= inst.attrs.size())
    throw ApiError(MT_ERROR_OUT_OF_RANGE, "attribute " + std::to_string(j) + " of " +
                                              std::to_string(inst.attrs.size()) + " of " +
                                              inst.kind);
  return inst.attrs[j];
}

mt_status trace_attr_ints(const mt_trace* t, size_t i, size_t j, int64_t* out, size_t capacity,
                          size_t* count) {
  return guard("trace_attr_ints", [&] {
    const auto* v = std::get_if<std::vector<int64_t>>(&attribute(t, i, j));
    if (!v)
      throw ApiError(MT_ERROR_INVALID_ARGUMENT, "attribute " + std::to_string(j) + " of " +
                                                    instruction(t, i).kind +
                                                    " is not an integer list");
    fill_array(*v, out, capacity, count, [](int64_t x) { return x; });
  });
}

mt_status trace_attr_str(const mt_trace* t, size_t i, size_t j, mt_str* out) {
  return guard("trace_attr_str", [&] {
    require(out, "out");
    const auto* v = std::get_if<std::string>(&attribute(t, i, j));
    if (!v)
      throw ApiError(MT_ERROR_INVALID_ARGUMENT, "attribute " + std::to_string(j) + " of " +
                                                    instruction(t, i).kind + " is not a string");
    *out = str(*v);
  });
}

mt_status trace_num_inputs(const mt_trace* t, size_t i, size_t* out) {
  return guard("trace_num_inputs", [&] {
    require(out, "out");
    *out = instruction(t, i).inputs.size();
  });
}

mt_status trace_with_decision(const mt_trace* t, size_t i, const int64_t* decision, size_t n,
                              mt_trace** out) {
  return guard("trace_with_decision", [&] {
    require(out, "out");
    instruction(t, i); // range check with a clear message
    std::optional<std::vector<int64_t>> d;
    if (decision) d.emplace(decision, decision + n);
    *out = new mt_trace_s(trace(t).with_decision(i, d));
  });
}

mt_status trace_to_json(const mt_trace* t, mt_str* out) {
  return guard("trace_to_json", [&] {
    require(out, "out");
    t->json = trace(t).to_json();
    *out = str(t->json);
  });
}

// ---- random numbers ----

mt_status rng_uniform_int(mt_rng* rng, int64_t lo, int64_t hi, int64_t* out) {
  return guard("rng_uniform_int", [&] {
    require(out, "out");
    require(require(rng, "rng")->rng, "rng engine");
    if (lo >= hi)
      throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                     "empty range [" + std::to_string(lo) + ", " + std::to_string(hi) + ")");
    *out = rng->rng->uniform_int(lo, hi);
  });
}

mt_status rng_uniform_real(mt_rng* rng, double* out) {
  return guard("rng_uniform_real", [&] {
    require(out, "out");
    require(require(rng, "rng")->rng, "rng engine");
    *out = rng->rng->uniform_real();
  });
}

// ---- tune context ----

const AnnValue& context_value(const mt_tune_context* ctx, mt_str key) {
  require(ctx, "context");
  auto it = ctx->attrs.find(std::string(view(key)));
  if (it == ctx->attrs.end())
    throw ApiError(MT_ERROR_NOT_FOUND,
                   "the tune context has no attribute '" + std::string(view(key)) + "'");
  return it->second;
}

mt_status context_get_int(const mt_tune_context* ctx, mt_str key, int64_t* out) {
  return guard("context_get_int", [&] {
    require(out, "out");
    const auto* v = std::get_if<int64_t>(&context_value(ctx, key));
    if (!v)
      throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                     "attribute '" + std::string(view(key)) + "' is a string");
    *out = *v;
  });
}

mt_status context_get_str(const mt_tune_context* ctx, mt_str key, mt_str* out) {
  return guard("context_get_str", [&] {
    require(out, "out");
    const auto* v = std::get_if<std::string>(&context_value(ctx, key));
    if (!v)
      throw ApiError(MT_ERROR_INVALID_ARGUMENT,
                     "attribute '" + std::string(view(key)) + "' is an integer");
    *out = str(*v);
  });
}

} // namespace

void fill_trace_api(mt_host_api& t) {
  t.trace_retain = trace_retain;
  t.trace_release = trace_release;
  t.trace_num_instructions = trace_num_instructions;
  t.trace_instruction_kind = trace_instruction_kind;
  t.trace_decision = trace_decision;
  t.trace_num_attrs = trace_num_attrs;
  t.trace_attr_int = trace_attr_int;
  t.trace_with_decision = trace_with_decision;
  t.trace_to_json = trace_to_json;
  t.trace_attr_ints = trace_attr_ints;
  t.trace_attr_str = trace_attr_str;
  t.trace_num_inputs = trace_num_inputs;
  t.rng_uniform_int = rng_uniform_int;
  t.rng_uniform_real = rng_uniform_real;
  t.context_get_int = context_get_int;
  t.context_get_str = context_get_str;
}

} // namespace mt::plugin_detail
