// mt::sdk::Schedule: the schedule language for plugins -- lookup, sampling instructions,
// primitives and block/loop analysis -- as C++ methods over the host API table. Every method
// throws sdk::Error (sdk::ScheduleError for an illegal primitive) on failure. Also the trace,
// random-engine and tune-context views that mutators and initialisation use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "metatune/sdk/error.hpp"
#include "metatune/sdk/handle.hpp"
#include "metatune/sdk/ir.hpp"

namespace mt::sdk {

struct BlockRV {
  int32_t id = -1;
  friend bool operator==(BlockRV a, BlockRV b) { return a.id == b.id; }
  friend bool operator!=(BlockRV a, BlockRV b) { return a.id != b.id; }
};
struct LoopRV {
  int32_t id = -1;
  static LoopRV root() { return {MT_LOOP_ROOT}; }
  static LoopRV inlined() { return {MT_LOOP_INLINED}; }
  bool is_root() const { return id == MT_LOOP_ROOT; }
  bool is_inlined() const { return id == MT_LOOP_INLINED; }
  friend bool operator==(LoopRV a, LoopRV b) { return a.id == b.id; }
  friend bool operator!=(LoopRV a, LoopRV b) { return a.id != b.id; }
};
struct ExprRV {
  int32_t id = -1;
};

// A split factor: a constant, a sampled value, or -1 (inferred from the others).
class Factor {
public:
  Factor(int64_t constant) : f_{0, {-1}, constant} {}
  Factor(int constant) : f_{0, {-1}, constant} {}
  Factor(ExprRV rv) : f_{1, {rv.id}, 0} {}
  const mt_factor& c() const { return f_; }

private:
  mt_factor f_;
};

struct IterVarInfo {
  IterKind kind = IterKind::Spatial;
  int64_t extent = 0;
  ExprRef var;
  ExprRef value; // binding: an expression of the enclosing loop variables
};

struct BufferAccess {
  BufferRef buffer;
  std::vector<std::vector<ExprRef>> indices; // one index tuple per load / store
};

// A recorded schedule program (for mutators).
class Trace {
public:
  Trace() = default;
  explicit Trace(handle<mt_trace> h) : h_(std::move(h)) {}
  static Trace borrow(const mt_trace* t) {
    return Trace(handle<mt_trace>::borrow(const_cast<mt_trace*>(t)));
  }
  mt_trace* get() const { return h_.get(); }
  explicit operator bool() const { return static_cast<bool>(h_); }

  size_t size() const { return api().trace_num_instructions(get()); }
  std::string kind(size_t i) const {
    mt_str s{};
    check(api().trace_instruction_kind(get(), i, &s));
    return to_string(s);
  }
  std::optional<std::vector<int64_t>> decision(size_t i) const {
    size_t n = 0;
    mt_status st = api().trace_decision(get(), i, nullptr, 0, &n);
    if (st == MT_ERROR_NOT_FOUND) return std::nullopt;
    check(st);
    std::vector<int64_t> d(n);
    check(api().trace_decision(get(), i, d.data(), d.size(), &n));
    return d;
  }
  size_t num_attrs(size_t i) const {
    size_t n = 0;
    check(api().trace_num_attrs(get(), i, &n));
    return n;
  }
  int64_t attr_int(size_t i, size_t j) const {
    int64_t v = 0;
    check(api().trace_attr_int(get(), i, j, &v));
    return v;
  }
  // ABI 1.4 (check has_attr_accessors() first; an older host has only to_json for these).
  bool has_attr_accessors() const {
    return MT_HAS_FIELD(&api(), mt_host_api, trace_num_inputs) && api().trace_num_inputs;
  }
  std::vector<int64_t> attr_ints(size_t i, size_t j) const {
    size_t n = 0;
    check(api().trace_attr_ints(get(), i, j, nullptr, 0, &n));
    std::vector<int64_t> v(n);
    check(api().trace_attr_ints(get(), i, j, v.data(), v.size(), &n));
    return v;
  }
  std::string attr_str(size_t i, size_t j) const {
    mt_str s{};
    check(api().trace_attr_str(get(), i, j, &s));
    return to_string(s);
  }
  size_t num_inputs(size_t i) const {
    size_t n = 0;
    check(api().trace_num_inputs(get(), i, &n));
    return n;
  }
  Trace with_decision(size_t i, const std::vector<int64_t>& decision) const {
    mt_trace* out = nullptr;
    check(api().trace_with_decision(get(), i, decision.data(), decision.size(), &out));
    return Trace(handle<mt_trace>::adopt(out));
  }
  std::string to_json() const {
    mt_str s{};
    check(api().trace_to_json(get(), &s));
    return to_string(s);
  }

private:
  handle<mt_trace> h_;
};

// The host's deterministic random engine for the current call.
class Rng {
public:
  explicit Rng(mt_rng* r) : r_(r) {}
  int64_t uniform_int(int64_t lo, int64_t hi) { // [lo, hi)
    int64_t v = 0;
    check(api().rng_uniform_int(r_, lo, hi, &v));
    return v;
  }
  double uniform_real() {
    double v = 0;
    check(api().rng_uniform_real(r_, &v));
    return v;
  }
  mt_rng* get() const { return r_; }

private:
  mt_rng* r_;
};

// Attributes of the target a component is initialised for.
class TuneContext {
public:
  explicit TuneContext(const mt_tune_context* c) : c_(c) {}
  std::optional<int64_t> get_int(std::string_view key) const {
    int64_t v = 0;
    mt_status st = api().context_get_int(c_, to_mt_str(key), &v);
    if (st == MT_ERROR_NOT_FOUND) return std::nullopt;
    check(st);
    return v;
  }
  std::optional<std::string> get_string(std::string_view key) const {
    mt_str v{};
    mt_status st = api().context_get_str(c_, to_mt_str(key), &v);
    if (st == MT_ERROR_NOT_FOUND) return std::nullopt;
    check(st);
    return to_string(v);
  }

private:
  const mt_tune_context* c_;
};

// The per-store feature matrix of a schedule (ABI 1.1; docs/features.md): `rows` stores,
// `cols` floats each, row-major. Borrowed from the host: valid until the schedule changes or
// its last reference goes; copy what must outlive that.
struct FeatureMatrixView {
  const float* data = nullptr;
  size_t rows = 0;
  size_t cols = 0;
  const float* row(size_t r) const { return data + r * cols; }
  float at(size_t r, size_t c) const { return data[r * cols + c]; }
};

class Schedule {
public:
  Schedule() = default;
  explicit Schedule(handle<mt_schedule> h) : h_(std::move(h)) {}
  // A new reference to a schedule the host lent to a callback.
  static Schedule borrow(mt_schedule* s) { return Schedule(handle<mt_schedule>::borrow(s)); }
  mt_schedule* get() const { return h_.get(); }
  explicit operator bool() const { return static_cast<bool>(h_); }
  friend bool operator==(const Schedule& a, const Schedule& b) { return a.get() == b.get(); }

  // An independent copy (a fork of the design space).
  Schedule copy() const {
    mt_schedule* out = nullptr;
    check(api().schedule_copy(get(), &out));
    return Schedule(handle<mt_schedule>::adopt(out));
  }
  Program program() const {
    mt_program* out = nullptr;
    check(api().schedule_get_program(get(), &out));
    return Program(handle<mt_program>::adopt(out));
  }
  Program lower() const {
    mt_program* out = nullptr;
    check(api().schedule_lower(get(), &out));
    return Program(handle<mt_program>::adopt(out));
  }
  Trace trace() const {
    mt_trace* out = nullptr;
    check(api().schedule_get_trace(get(), &out));
    return Trace(handle<mt_trace>::adopt(out));
  }
  // Per-store features of the current function, computed (and cached) by the host.
  FeatureMatrixView features() const {
    if (!MT_HAS_FIELD(&api(), mt_host_api, schedule_features) || !api().schedule_features)
      throw Error(MT_ERROR_UNSUPPORTED, "schedule features need a host with plugin ABI 1.1");
    FeatureMatrixView m;
    check(api().schedule_features(get(), &m.data, &m.rows, &m.cols));
    return m;
  }

  // ---- lookup ----
  BlockRV get_block(std::string_view name) {
    mt_block_rv b{};
    check(api().get_block(get(), to_mt_str(name), &b));
    return {b.id};
  }
  std::vector<LoopRV> get_loops(BlockRV block) {
    return list<mt_loop_rv, LoopRV>([&](mt_loop_rv* out, size_t cap, size_t* n) {
      return api().get_loops(get(), {block.id}, out, cap, n);
    });
  }
  std::vector<BlockRV> get_child_blocks(LoopRV loop) {
    return list<mt_block_rv, BlockRV>([&](mt_block_rv* out, size_t cap, size_t* n) {
      return api().get_child_blocks(get(), {loop.id}, out, cap, n);
    });
  }
  std::vector<BlockRV> all_blocks() { return get_child_blocks(LoopRV::root()); }
  std::vector<BlockRV> get_producers(BlockRV block) {
    return list<mt_block_rv, BlockRV>([&](mt_block_rv* out, size_t cap, size_t* n) {
      return api().get_producers(get(), {block.id}, out, cap, n);
    });
  }
  std::vector<BlockRV> get_consumers(BlockRV block) {
    return list<mt_block_rv, BlockRV>([&](mt_block_rv* out, size_t cap, size_t* n) {
      return api().get_consumers(get(), {block.id}, out, cap, n);
    });
  }

  // ---- sampling ----
  std::vector<ExprRV>
  sample_perfect_tile(LoopRV loop, int n, int max_innermost_factor,
                      const std::optional<std::vector<int64_t>>& decision = {}) {
    std::vector<mt_expr_rv> out(static_cast<size_t>(n > 0 ? n : 0));
    check(api().sample_perfect_tile(get(), {loop.id}, n, max_innermost_factor,
                                    decision ? decision->data() : nullptr, out.data()));
    std::vector<ExprRV> rvs;
    for (auto r : out)
      rvs.push_back({r.id});
    return rvs;
  }
  ExprRV sample_categorical(const std::vector<int64_t>& candidates,
                            const std::vector<double>& probs,
                            std::optional<int64_t> decision = {}) {
    if (candidates.size() != probs.size())
      throw Error(MT_ERROR_INVALID_ARGUMENT, "sample_categorical: one probability per candidate");
    mt_expr_rv out{};
    check(api().sample_categorical(get(), candidates.data(), probs.data(), candidates.size(),
                                   decision ? &*decision : nullptr, &out));
    return {out.id};
  }
  LoopRV sample_compute_location(BlockRV block, std::optional<int64_t> decision = {}) {
    mt_loop_rv out{};
    check(api().sample_compute_location(get(), {block.id}, decision ? &*decision : nullptr, &out));
    return {out.id};
  }

  // ---- loop transformations ----
  std::vector<LoopRV> split(LoopRV loop, const std::vector<Factor>& factors) {
    std::vector<mt_factor> fs;
    for (const Factor& f : factors)
      fs.push_back(f.c());
    std::vector<mt_loop_rv> out(fs.size());
    check(api().split(get(), {loop.id}, fs.data(), fs.size(), out.data()));
    std::vector<LoopRV> loops;
    for (auto l : out)
      loops.push_back({l.id});
    return loops;
  }
  LoopRV fuse(const std::vector<LoopRV>& loops) {
    std::vector<mt_loop_rv> ls = c_loops(loops);
    mt_loop_rv out{};
    check(api().fuse(get(), ls.data(), ls.size(), &out));
    return {out.id};
  }
  void reorder(const std::vector<LoopRV>& order) {
    std::vector<mt_loop_rv> ls = c_loops(order);
    check(api().reorder(get(), ls.data(), ls.size()));
  }
  void parallel(LoopRV loop) { check(api().parallel(get(), {loop.id})); }
  void vectorize(LoopRV loop) { check(api().vectorize(get(), {loop.id})); }
  void unroll(LoopRV loop) { check(api().unroll(get(), {loop.id})); }
  void bind(LoopRV loop, std::string_view thread_axis) {
    check(api().bind(get(), {loop.id}, to_mt_str(thread_axis)));
  }
  void annotate(LoopRV loop, std::string_view key, const AnnValue& value) {
    check(api().annotate_loop(get(), {loop.id}, to_mt_str(key), c_ann(value)));
  }
  void annotate(BlockRV block, std::string_view key, const AnnValue& value) {
    check(api().annotate_block(get(), {block.id}, to_mt_str(key), c_ann(value)));
  }
  void unannotate(LoopRV loop, std::string_view key) {
    check(api().unannotate_loop(get(), {loop.id}, to_mt_str(key)));
  }
  void unannotate(BlockRV block, std::string_view key) {
    check(api().unannotate_block(get(), {block.id}, to_mt_str(key)));
  }

  // ---- compute location ----
  void compute_at(BlockRV block, LoopRV loop) {
    check(api().compute_at(get(), {block.id}, {loop.id}));
  }
  void reverse_compute_at(BlockRV block, LoopRV loop) {
    check(api().reverse_compute_at(get(), {block.id}, {loop.id}));
  }
  void compute_inline(BlockRV block) { check(api().compute_inline(get(), {block.id})); }
  void reverse_compute_inline(BlockRV block) {
    check(api().reverse_compute_inline(get(), {block.id}));
  }

  // ---- buffers and reductions ----
  BlockRV cache_read(BlockRV block, int read_buffer_index, std::string_view scope) {
    mt_block_rv out{};
    check(api().cache_read(get(), {block.id}, read_buffer_index, to_mt_str(scope), &out));
    return {out.id};
  }
  BlockRV cache_write(BlockRV block, int write_buffer_index, std::string_view scope) {
    mt_block_rv out{};
    check(api().cache_write(get(), {block.id}, write_buffer_index, to_mt_str(scope), &out));
    return {out.id};
  }
  void set_scope(BlockRV block, int write_buffer_index, std::string_view scope) {
    check(api().set_scope(get(), {block.id}, write_buffer_index, to_mt_str(scope)));
  }
  BlockRV decompose_reduction(BlockRV block, LoopRV loop) {
    mt_block_rv out{};
    check(api().decompose_reduction(get(), {block.id}, {loop.id}, &out));
    return {out.id};
  }
  BlockRV rfactor(LoopRV loop, int factor_axis) {
    mt_block_rv out{};
    check(api().rfactor(get(), {loop.id}, factor_axis, &out));
    return {out.id};
  }
  void storage_align(BlockRV block, int write_buffer_index, int axis, int factor, int offset) {
    check(api().storage_align(get(), {block.id}, write_buffer_index, axis, factor, offset));
  }
  // Host ABI 1.2: permute the dimensions of an intermediate buffer (see the host API).
  bool can_transform_layout() const {
    return MT_HAS_FIELD(&api(), mt_host_api, transform_layout) && api().transform_layout;
  }
  void transform_layout(BlockRV block, int write_buffer_index,
                        const std::vector<int64_t>& permutation) {
    if (!can_transform_layout())
      throw Error(MT_ERROR_UNSUPPORTED, "transform_layout needs a host with plugin ABI 1.2");
    check(api().transform_layout(get(), {block.id}, write_buffer_index, permutation.data(),
                                 permutation.size()));
  }

  // ---- values of random variables ----
  int64_t get(ExprRV v) const {
    int64_t out = 0;
    check(api().get_int(get(), {v.id}, &out));
    return out;
  }
  std::string name_of(BlockRV block) const {
    mt_str s{};
    check(api().block_name(get(), {block.id}, &s));
    return to_string(s);
  }
  bool valid(BlockRV block) const { return api().block_is_valid(get(), {block.id}) != 0; }
  bool valid(LoopRV loop) const { return api().loop_is_valid(get(), {loop.id}) != 0; }

  // ---- block analysis ----
  std::vector<IterVarInfo> iter_vars(BlockRV block) const {
    size_t n = 0;
    check(api().block_num_iter_vars(get(), {block.id}, &n));
    std::vector<IterVarInfo> out;
    for (size_t i = 0; i < n; ++i) {
      mt_iter_var_info info{};
      info.struct_size = sizeof info;
      info.struct_version = 1;
      check(api().block_iter_var(get(), {block.id}, i, &info));
      out.push_back(
          {static_cast<IterKind>(info.kind), info.extent, ExprRef(info.var), ExprRef(info.value)});
    }
    return out;
  }
  std::vector<BufferAccess> reads(BlockRV block) const { return accesses(block, false); }
  std::vector<BufferAccess> writes(BlockRV block) const { return accesses(block, true); }
  bool is_reduction(BlockRV block) const {
    int32_t r = 0;
    check(api().block_is_reduction(get(), {block.id}, &r));
    return r != 0;
  }
  Annotations annotations(BlockRV block) const {
    size_t n = 0;
    check(api().block_num_annotations(get(), {block.id}, &n));
    Annotations out;
    for (size_t i = 0; i < n; ++i) {
      mt_str key{};
      mt_ann_value value{};
      check(api().block_annotation(get(), {block.id}, i, &key, &value));
      out.emplace(to_string(key), from_c(value));
    }
    return out;
  }
  // The block's body and init (null if none), for walking with StmtRef.
  std::pair<StmtRef, StmtRef> block_body(BlockRV block) const {
    const mt_stmt* body = nullptr;
    const mt_stmt* init = nullptr;
    check(api().block_body(get(), {block.id}, &body, &init));
    return {StmtRef(body), StmtRef(init)};
  }

  // ---- loop analysis ----
  int64_t extent(LoopRV loop) const {
    int64_t v = 0;
    check(api().loop_extent(get(), {loop.id}, &v));
    return v;
  }
  ForKind kind(LoopRV loop) const {
    mt_for_kind k = 0;
    check(api().loop_kind(get(), {loop.id}, &k));
    return static_cast<ForKind>(k);
  }
  std::string thread_tag(LoopRV loop) const {
    mt_str s{};
    check(api().loop_thread_tag(get(), {loop.id}, &s));
    return to_string(s);
  }
  ExprRef loop_var(LoopRV loop) const {
    const mt_expr* v = nullptr;
    check(api().loop_var(get(), {loop.id}, &v));
    return ExprRef(v);
  }
  Annotations annotations(LoopRV loop) const {
    size_t n = 0;
    check(api().loop_num_annotations(get(), {loop.id}, &n));
    Annotations out;
    for (size_t i = 0; i < n; ++i) {
      mt_str key{};
      mt_ann_value value{};
      check(api().loop_annotation(get(), {loop.id}, i, &key, &value));
      out.emplace(to_string(key), from_c(value));
    }
    return out;
  }

private:
  // Calls a (out, capacity, count) function, again with a bigger array if needed (the host
  // answers the second call from the first lookup, which it records once).
  template <typename C, typename T, typename F> static std::vector<T> list(F&& call) {
    std::vector<C> raw(16);
    size_t n = 0;
    mt_status st = call(raw.data(), raw.size(), &n);
    if (st == MT_ERROR_BUFFER_TOO_SMALL) {
      raw.resize(n);
      st = call(raw.data(), raw.size(), &n);
    }
    check(st);
    raw.resize(n);
    std::vector<T> out;
    for (const C& c : raw)
      out.push_back(T{c.id});
    return out;
  }
  static std::vector<mt_loop_rv> c_loops(const std::vector<LoopRV>& loops) {
    std::vector<mt_loop_rv> ls;
    for (LoopRV l : loops)
      ls.push_back({l.id});
    return ls;
  }
  static mt_ann_value c_ann(const AnnValue& v) {
    mt_ann_value a{};
    if (const auto* i = std::get_if<int64_t>(&v)) {
      a.kind = MT_ANN_INT;
      a.int_value = *i;
    } else {
      a.kind = MT_ANN_STRING;
      a.str_value = to_mt_str(std::get<std::string>(v));
    }
    return a;
  }
  std::vector<BufferAccess> accesses(BlockRV block, bool writes) const {
    size_t n = 0;
    check(writes ? api().block_num_writes(get(), {block.id}, &n)
                 : api().block_num_reads(get(), {block.id}, &n));
    std::vector<BufferAccess> out;
    for (size_t i = 0; i < n; ++i) {
      mt_buffer_access a{};
      a.struct_size = sizeof a;
      a.struct_version = 1;
      check(writes ? api().block_write(get(), {block.id}, i, &a)
                   : api().block_read(get(), {block.id}, i, &a));
      BufferAccess acc;
      acc.buffer = BufferRef(a.buffer);
      for (size_t k = 0; k < a.num_accesses; ++k) {
        std::vector<ExprRef> tuple;
        for (size_t d = 0; d < a.ndim; ++d)
          tuple.emplace_back(a.indices[k * a.ndim + d]);
        acc.indices.push_back(std::move(tuple));
      }
      out.push_back(std::move(acc));
    }
    return out;
  }

  handle<mt_schedule> h_;
};

} // namespace mt::sdk
