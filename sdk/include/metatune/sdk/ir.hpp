// Read-only C++ views of the host's IR through the API table, libclang style: ExprRef,
// StmtRef and BufferRef are borrowed cursors (valid as long as the Program or Schedule they
// came from), Program owns a reference to a function. Element types and kinds reuse the
// enums of program.hpp; all are made from the ABI's lists, so their values are the ABI's.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "metatune/sdk/error.hpp"
#include "metatune/sdk/handle.hpp"
#include "metatune/sdk/program.hpp"

namespace mt::sdk {

using DType = program::DType;
using DTypeKind = program::DTypeKind;
using ExprKind = program::ExprKind;
using ForKind = program::ForKind;
using MathFn = program::MathFn;
using AnnValue = std::variant<int64_t, std::string>;
using Annotations = std::map<std::string, AnnValue>;

// Members and values from MT_STMT_KINDS and MT_ITER_KINDS (plugin_api/ir_vocabulary.h).
enum class StmtKind : int32_t { MT_STMT_KINDS(MT_VOCAB_ENUMERATOR) };
enum class IterKind : int32_t { MT_ITER_KINDS(MT_VOCAB_ENUMERATOR) };

inline DType from_c(mt_dtype d) {
  DType t;
  if (!program::from_dtype_code(d.code, &t.kind))
    throw Error(MT_ERROR_INVALID_ARGUMENT, "unknown dtype code " + std::to_string(d.code));
  t.bits = d.bits;
  return t;
}

inline mt_dtype to_c(DType t) {
  mt_dtype d{};
  d.code = static_cast<uint8_t>(program::to_dtype_code(t.kind));
  d.bits = t.bits;
  d.lanes = 1;
  return d;
}

inline AnnValue from_c(const mt_ann_value& v) {
  if (v.kind == MT_ANN_INT) return v.int_value;
  return to_string(v.str_value);
}

class BufferRef {
public:
  BufferRef() = default;
  explicit BufferRef(const mt_buffer* b) : b_(b) {}
  const mt_buffer* get() const { return b_; }
  explicit operator bool() const { return b_ != nullptr; }
  friend bool operator==(BufferRef a, BufferRef b) { return a.b_ == b.b_; }
  friend bool operator!=(BufferRef a, BufferRef b) { return a.b_ != b.b_; }

  std::string name() const { return to_string(api().buffer_name(b_)); }
  DType dtype() const { return from_c(api().buffer_dtype(b_)); }
  std::vector<int64_t> shape() const {
    std::vector<int64_t> s(api().buffer_ndim(b_));
    for (size_t i = 0; i < s.size(); ++i)
      s[i] = api().buffer_shape(b_, i);
    return s;
  }
  size_t ndim() const { return api().buffer_ndim(b_); }
  std::string scope() const { return to_string(api().buffer_scope(b_)); }

private:
  const mt_buffer* b_ = nullptr;
};

// An expression node. Variables are identified by node: compare ExprRefs, not names.
class ExprRef {
public:
  ExprRef() = default;
  explicit ExprRef(const mt_expr* e) : e_(e) {}
  const mt_expr* get() const { return e_; }
  explicit operator bool() const { return e_ != nullptr; }
  friend bool operator==(ExprRef a, ExprRef b) { return a.e_ == b.e_; }
  friend bool operator!=(ExprRef a, ExprRef b) { return a.e_ != b.e_; }

  ExprKind kind() const { return static_cast<ExprKind>(api().expr_kind(e_)); }
  DType dtype() const { return from_c(api().expr_dtype(e_)); }
  int64_t int_value() const { return api().expr_int_value(e_); }
  double float_value() const { return api().expr_float_value(e_); }
  std::string var_name() const { return to_string(api().expr_var_name(e_)); }
  MathFn call_fn() const { return static_cast<MathFn>(api().expr_call_fn(e_)); }
  BufferRef load_buffer() const { return BufferRef(api().expr_load_buffer(e_)); }
  size_t num_args() const { return api().expr_num_args(e_); }
  ExprRef arg(size_t i) const { return ExprRef(api().expr_arg(e_, i)); }
  std::vector<ExprRef> args() const {
    std::vector<ExprRef> out;
    for (size_t i = 0, n = num_args(); i < n; ++i)
      out.push_back(arg(i));
    return out;
  }
  // Whether `var` occurs anywhere in this expression.
  bool uses(ExprRef var) const {
    if (*this == var) return true;
    for (size_t i = 0, n = num_args(); i < n; ++i)
      if (arg(i).uses(var)) return true;
    return false;
  }

private:
  const mt_expr* e_ = nullptr;
};

namespace detail {
inline Annotations read_annotations(size_t n,
                                    mt_status (*get)(size_t, mt_str*, mt_ann_value*, const void*),
                                    const void* ctx) {
  Annotations out;
  for (size_t i = 0; i < n; ++i) {
    mt_str key{};
    mt_ann_value value{};
    check(get(i, &key, &value, ctx));
    out.emplace(to_string(key), from_c(value));
  }
  return out;
}
} // namespace detail

class StmtRef {
public:
  StmtRef() = default;
  explicit StmtRef(const mt_stmt* s) : s_(s) {}
  const mt_stmt* get() const { return s_; }
  explicit operator bool() const { return s_ != nullptr; }
  friend bool operator==(StmtRef a, StmtRef b) { return a.s_ == b.s_; }
  friend bool operator!=(StmtRef a, StmtRef b) { return a.s_ != b.s_; }

  StmtKind kind() const { return static_cast<StmtKind>(api().stmt_kind(s_)); }
  std::vector<StmtRef> children() const {
    std::vector<StmtRef> out;
    for (size_t i = 0, n = api().stmt_num_children(s_); i < n; ++i)
      out.emplace_back(api().stmt_child(s_, i));
    return out;
  }

  // For
  ExprRef loop_var() const { return ExprRef(api().for_loop_var(s_)); }
  int64_t extent() const { return api().for_extent(s_); }
  ForKind for_kind() const { return static_cast<ForKind>(api().for_kind(s_)); }
  std::string thread_tag() const { return to_string(api().for_thread_tag(s_)); }
  Annotations annotations() const {
    return detail::read_annotations(
        api().for_num_annotations(s_),
        [](size_t i, mt_str* k, mt_ann_value* v, const void* ctx) {
          return api().for_annotation(static_cast<const mt_stmt*>(ctx), i, k, v);
        },
        s_);
  }
  // For / Allocate
  StmtRef body() const {
    return StmtRef(kind() == StmtKind::For ? api().for_body(s_) : api().allocate_body(s_));
  }
  // Store / Allocate
  BufferRef buffer() const {
    return BufferRef(kind() == StmtKind::Store ? api().store_buffer(s_)
                                               : api().allocate_buffer(s_));
  }
  // Store
  std::vector<ExprRef> indices() const {
    std::vector<ExprRef> out;
    for (size_t i = 0, n = api().store_num_indices(s_); i < n; ++i)
      out.emplace_back(api().store_index(s_, i));
    return out;
  }
  ExprRef value() const { return ExprRef(api().store_value(s_)); }
  // IfThenElse
  ExprRef condition() const { return ExprRef(api().if_condition(s_)); }
  StmtRef then_case() const { return StmtRef(api().if_then(s_)); }
  StmtRef else_case() const { return StmtRef(api().if_else(s_)); }
  // BlockRealize
  std::string block_name() const { return to_string(api().block_realize_name(s_)); }
  std::vector<ExprRef> iter_values() const {
    std::vector<ExprRef> out;
    for (size_t i = 0, n = api().block_realize_num_iter_values(s_); i < n; ++i)
      out.emplace_back(api().block_realize_iter_value(s_, i));
    return out;
  }
  ExprRef predicate() const { return ExprRef(api().block_realize_predicate(s_)); }
  StmtRef block_body() const { return StmtRef(api().block_realize_body(s_)); }
  StmtRef block_init() const { return StmtRef(api().block_realize_init(s_)); }

  // Pre-order walk; `f` returns false to skip a node's children.
  template <typename F> void visit(F&& f) const {
    if (!s_ || !f(*this)) return;
    for (const StmtRef& c : children())
      c.visit(f);
  }

private:
  const mt_stmt* s_ = nullptr;
};

// A function owned by the plugin (one reference): scheduled or lowered.
class Program {
public:
  Program() = default;
  explicit Program(handle<mt_program> h) : h_(std::move(h)) {}
  static Program borrow(const mt_program* p) {
    return Program(handle<mt_program>::borrow(const_cast<mt_program*>(p)));
  }
  mt_program* get() const { return h_.get(); }
  explicit operator bool() const { return static_cast<bool>(h_); }

  std::string name() const { return to_string(api().program_name(get())); }
  bool lowered() const { return api().program_is_lowered(get()) != 0; }
  // The lowered program with its loops partitioned around guards (host ABI 1.2; see
  // program_partition_loops). Against an older host: this program, unchanged.
  Program with_loops_partitioned() const {
    if (!MT_HAS_FIELD(&api(), mt_host_api, program_partition_loops) ||
        !api().program_partition_loops)
      return *this;
    mt_program* out = nullptr;
    check(api().program_partition_loops(get(), &out));
    return Program(handle<mt_program>::adopt(out));
  }
  std::vector<BufferRef> params() const {
    std::vector<BufferRef> out;
    for (size_t i = 0, n = api().program_num_params(get()); i < n; ++i)
      out.emplace_back(api().program_param(get(), i));
    return out;
  }
  std::vector<BufferRef> buffers() const {
    std::vector<BufferRef> out;
    for (size_t i = 0, n = api().program_num_buffers(get()); i < n; ++i)
      out.emplace_back(api().program_buffer(get(), i));
    return out;
  }
  StmtRef body() const { return StmtRef(api().program_body(get())); }

private:
  handle<mt_program> h_;
};

} // namespace mt::sdk
