// Kernels of a plan as source text (kernel_writer.hpp).
#include "metatune/gpu_codegen/kernel_writer.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include "cross_thread_reduction.h"
#include "metatune/gpu_codegen/shared_layout.hpp"
#include "metatune/sdk/index_analysis.hpp"
#include "producer_warpgroup.h"
#include "shared_access.h"
#include "tensor_op.h"
#include "tma_copy.h"
#include "vector_copy.h"

namespace mt::gpu_codegen {

namespace {

// In the used-helpers set: the source uses f16 (the dialect's f16 prologue is emitted), tensor
// cores (their header).
constexpr const char* kF16 = "<f16>";
constexpr const char* kTensorCores = "<tensor cores>";
constexpr const char* kAsyncCopies = "<async copies>";
constexpr const char* kGroupMma = "<warpgroup mma>";
constexpr const char* kTma = "<tma>";
constexpr const char* kTmaProducer = "<tma producer>";
const std::string kTmaOfRank = "<tma of rank> ";           // + the rank
const std::string kAsyncCopyOf = "<async copy of bytes> "; // + the size

// Warp specialisation: the consumers' hardware barrier (0 is __syncthreads'); the most threads
// a block of warpgroups (tensor_op.h's kWarpgroupThreads) may have; the register file an SM
// gives a block, what the producer keeps a thread (CUTLASS's choice too) and the most a thread
// may hold.
constexpr int64_t kConsumerBarrier = 1;
constexpr int64_t kMaxSpecialisedThreads = 1024;
constexpr int64_t kRegisterFile = 65536;
constexpr int64_t kProducerRegisters = 40;
constexpr int64_t kMaxThreadRegisters = 256;

using P::ExprKind;
using P::StmtKind;

class KernelWriter {
public:
  KernelWriter(const KernelPlan& plan, const Kernel& kernel, const Dialect& d,
               std::set<std::string>& used_helpers)
      : plan_(plan), kernel_(kernel), d_(d), idx_(plan.index32 ? "int" : d.int64_type()),
        used_helpers_(used_helpers) {}

  std::string write() {
    // Names the source uses for itself: a buffer called "exp" (an elementwise op) must not
    // shadow the function.
    for (const char* n :
         {"exp",      "expf",     "log",     "logf",     "tanh",     "tanhf",    "erf",
          "erff",     "sqrt",     "sqrtf",   "rsqrt",    "rsqrtf",   "pow",      "powf",
          "fabs",     "fabsf",    "isnan",   "min",      "max",      "abs",      "barrier",
          "half",     "float",    "double",  "int",      "long",     "char",     "short",
          "uchar",    "ushort",   "uint",    "ulong",    "bool",     "kernel",   "global",
          "local",    "constant", "private", "restrict", "signed",   "unsigned", "void",
          "if",       "else",     "for",     "while",    "do",       "return",   "const",
          "static",   "inline",   "switch",  "case",     "default",  "break",    "continue",
          "sizeof",   "struct",   "union",   "enum",     "typedef",  "volatile", "register",
          "auto",     "extern",   "goto",    "new",      "delete",   "class",    "template",
          "this",     "true",     "false",   "NAN",      "INFINITY", "blockIdx", "threadIdx",
          "blockDim", "gridDim",  "warpSize"})
      taken_.insert(n);
    for (const auto& b : plan_.buffers)
      global_ids_.insert(b->id);
    P::visit_stmts(kernel_.body, [&](const P::Stmt& s) {
      if (s->kind == StmtKind::Allocate) {
        if (s->buffer->scope == "shared")
          shared_.push_back(s->buffer);
        else
          private_.insert(s->buffer->id);
      }
      return true;
    });
    for (const auto& v : kernel_.host_vars)
      scope_vars_.insert(v->var_id);
    P::visit_stmts(kernel_.body, [&](const P::Stmt& x) {
      bool is_block = false;
      int dim = 0;
      if (x->kind == StmtKind::For && x->for_kind == P::ForKind::ThreadBinding &&
          parse_thread_tag(x->thread_tag, &is_block, &dim) && !is_block)
        thread_vars_by_dim_[static_cast<size_t>(dim)].insert(x->loop_var->var_id);
      return true;
    });
    preregister_reductions();
    find_tensor_ops();
    find_tma();
    find_producer();
    Accesses pending;
    indent_ = 1;
    init_tma_barriers();
    if (producer_)
      warp_specialised(pending);
    else
      stmt(kernel_.body, pending, true);

    std::vector<KernelParam> params;
    for (size_t i = 0; i < plan_.buffers.size(); ++i) {
      const auto& b = plan_.buffers[i];
      params.push_back({d_.type_name(b->dtype), buffer_name(b), true, false});
    }
    for (const auto& v : kernel_.host_vars)
      params.push_back({d_.int64_type(), var_name(v), false, true});
    for (const auto& [id, map] : tensor_maps_)
      params.push_back({"", map.name, false, true, true});
    std::ostringstream os;
    const LaunchDims launch = launch_dims();
    os << d_.kernel_signature(kernel_.name, params, launch.block, gives_registers() ? 1 : 0)
       << "{\n";
    if (!producer_why_.empty()) os << "  // no producer warpgroup: " << producer_why_ << "\n";
    declare_shared(os);
    os << body_.str() << "}\n";
    return os.str();
  }

  // The launch: the plan's, with one more warpgroup along threadIdx.y where a producer
  // warpgroup issues the copies (after write()).
  LaunchDims launch_dims() const {
    LaunchDims d = kernel_.dims;
    if (producer_) d.block[1] += 1;
    return d;
  }
  // Bytes of dynamic shared memory the kernel's launch must give it (after write()).
  int64_t dynamic_shared_bytes() const { return dynamic_shared_bytes_; }
  // The tensor maps its TMA copies read, in parameter order (after write()).
  std::vector<TensorMapSpec> tensor_maps() const {
    std::vector<TensorMapSpec> out;
    for (const auto& [id, map] : tensor_maps_)
      out.push_back(map.spec);
    return out;
  }

private:
  // The shared arrays at kernel scope: the tiles, then the reductions' scratch.
  void declare_shared(std::ostream& os) {
    std::vector<SharedArray> arrays;
    for (const auto& b : shared_) {
      bool own = held_in_own_type(b);
      // The 128-byte swizzle permutes chunks by address bits, within 1024-byte atoms.
      const bool swizzled = core_matrix_layout(b) == CoreMatrixLayout::Swizzle128;
      arrays.push_back({own ? storage_type(b) : type_of(b->dtype), buffer_name(b),
                        b->num_elements(), held_bytes(b->dtype, own),
                        swizzled ? 1024 : kSharedAlignment});
    }
    for (const auto& [name, type, bytes] : scratch_)
      arrays.push_back({type, name, kernel_.dims.threads_per_block(), bytes});
    if (!tma_copies_.empty() && d_.has_tma())
      os << "  " << d_.tma_barriers(tma_bar_, tma_slots_) << "\n";
    if (producer_) os << "  " << d_.tma_barriers(empty_bar_, tma_slots_) << "\n";
    SharedLayout layout = layout_shared(arrays, d_.static_shared_limit());
    if (layout.dynamic) {
      std::string pool = fresh("mt_dynamic_shared");
      os << "  " << d_.dynamic_shared_pool(pool, layout.bytes, layout.alignment) << "\n";
      for (size_t i = 0; i < arrays.size(); ++i)
        os << "  "
           << d_.dynamic_shared_array(arrays[i].type, arrays[i].name, pool, layout.offsets[i])
           << "\n";
      dynamic_shared_bytes_ = layout.bytes;
      return;
    }
    for (size_t i = 0; i < arrays.size(); ++i) {
      bool fragment = i < shared_.size() && fragment_memory_.count(shared_[i]->id) > 0;
      // Declared one by one, an array needs no more than its accesses do, unless it asks.
      const int64_t asked = arrays[i].alignment > kSharedAlignment ? arrays[i].alignment : 0;
      os << "  "
         << (fragment ? d_.fragment_source_array(arrays[i].type, arrays[i].name, arrays[i].elements,
                                                 asked)
                      : d_.shared_array(arrays[i].type, arrays[i].name, arrays[i].elements))
         << "\n";
    }
  }
  // Bytes of an element of dtype t as a shared array holds it: f16/bf16 in float unless held in
  // their own type (`own_type`, held_in_own_type).
  int64_t held_bytes(P::DType t, bool own_type) const {
    if (is_half(t)) return own_type ? 2 : 4;
    if (t == P::DType::index()) return plan_.index32 ? 4 : 8;
    return t.kind == P::DTypeKind::Bool ? 1 : std::max<int64_t>(1, t.bits / 8);
  }

  // ---- names ---------------------------------------------------------------------------------
  static std::string sanitize(const std::string& s) {
    std::string out;
    for (char c : s)
      out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v_" + out;
    return out;
  }
  std::string unique(const std::string& base, int64_t id,
                     std::unordered_map<int64_t, std::string>& names) {
    auto it = names.find(id);
    if (it != names.end()) return it->second;
    std::string n = sanitize(base);
    if (taken_.count(n)) n += "_" + std::to_string(id);
    while (taken_.count(n))
      n += "_";
    taken_.insert(n);
    names[id] = n;
    return n;
  }
  std::string var_name(const P::Expr& v) { return unique(v->name, v->var_id, var_names_); }
  std::string buffer_name(const P::Buffer& b) { return unique(b->name, b->id, buffer_names_); }
  std::string fresh(const std::string& base) {
    std::string n = base + std::to_string(counter_++);
    taken_.insert(n);
    return n;
  }

  // ---- expressions ---------------------------------------------------------------------------
  std::string int_type(P::DType t) const {
    if (t == P::DType::index()) return idx_;
    return d_.type_name(t);
  }

  // The type a value of dtype t is computed and held in: f16 and bf16 in float (only device
  // memory stores them as such).
  std::string type_of(P::DType t) const {
    if (t.is_int() && t.bits == 64) return int_type(t);
    if (is_half(t)) return d_.type_name(P::DType::f32());
    return d_.type_name(t);
  }
  static bool is_half(P::DType t) { return t.is_float() && t.bits == 16; }
  // Where f16/bf16 are held as such (elsewhere in float, type_of): device memory, the shared
  // arrays tensor cores load from, and every shared array where the dialect says so.
  bool held_in_own_type(const P::Buffer& b) const {
    return global_ids_.count(b->id) > 0 || fragment_memory_.count(b->id) > 0 ||
           (b->scope == "shared" && d_.holds_half_in_shared());
  }
  std::string storage_type(const P::Buffer& b) const {
    if (!is_half(b->dtype)) return type_of(b->dtype);
    return b->scope == "shared" ? d_.shared_half_type(b->dtype) : d_.type_name(b->dtype);
  }

  // Element `index` of `b` as a value of type_of(dtype), and the statement writing `value` there
  // (without its semicolon): f16/bf16 converted where held in their own type.
  std::string read_element(const P::Buffer& b, const std::string& index) {
    std::string name = buffer_name(b);
    if (is_half(b->dtype) && held_in_own_type(b)) {
      if (b->dtype.kind == P::DTypeKind::BFloat) {
        used_helpers_.insert("mt_bf16_to_f32");
        return "mt_bf16_to_f32(" + name + "[" + index + "])";
      }
      used_helpers_.insert(kF16);
      return d_.load_f16(name, index, b->scope == "shared");
    }
    return name + "[" + index + "]";
  }
  std::string write_element(const P::Buffer& b, const std::string& index, std::string value) {
    std::string name = buffer_name(b);
    if (is_half(b->dtype) && held_in_own_type(b)) {
      if (b->dtype.kind == P::DTypeKind::BFloat) {
        used_helpers_.insert("mt_f32_to_bf16");
        return name + "[" + index + "] = mt_f32_to_bf16(" + value + ")";
      }
      used_helpers_.insert(kF16);
      return d_.store_f16(name, index, value, b->scope == "shared");
    }
    if (b->dtype.is_bool()) value = "(" + d_.type_name(b->dtype) + ")(" + value + ")";
    return name + "[" + index + "] = " + value;
  }

  // A result of dtype f16/bf16 rounded to it.
  std::string rounded(P::DType t, const std::string& x) {
    if (t.kind == P::DTypeKind::BFloat) {
      used_helpers_.insert("mt_round_bf16");
      return "mt_round_bf16(" + x + ")";
    }
    used_helpers_.insert(kF16);
    return d_.round_f16(x);
  }

  // Whether an integer expression is never negative (loop variables are not), so that floor
  // division and modulo by a positive constant can be C's.
  bool non_negative(const P::Expr& e) const {
    switch (e->kind) {
    case ExprKind::IntImm:
      return e->int_value >= 0;
    case ExprKind::Var: // loop variables, thread indices and host loop variables
      return true;
    case ExprKind::Add:
    case ExprKind::Mul:
    case ExprKind::Min:
    case ExprKind::Max:
      return non_negative(e->args[0]) && non_negative(e->args[1]);
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod:
      return non_negative(e->args[0]) && P::is_const_int(e->args[1]) && e->args[1]->int_value > 0;
    default:
      return false;
    }
  }

  std::string helper(const std::string& base, P::DType t) {
    std::string suffix = t.is_float()                       ? (t.bits == 64 ? "f64" : "f32")
                         : t.kind == P::DTypeKind::UInt     ? "u" + std::to_string(t.bits)
                         : (t.bits == 64 && !plan_.index32) ? "i64"
                         : t.bits == 64                     ? "i32"
                         : t.bits == 1                      ? "i32"
                                                            : "i" + std::to_string(t.bits);
    std::string name = "mt_" + base + "_" + suffix;
    used_helpers_.insert(name);
    return name;
  }

  std::string float_literal(double v, P::DType t) {
    if (std::isnan(v)) return d_.nan(t);
    if (std::isinf(v)) return d_.infinity(t, v < 0);
    char buf[64];
    std::snprintf(buf, sizeof buf, t.bits == 64 ? "%.17g" : "%.9g", v);
    std::string s = buf;
    if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
    return t.bits == 64 ? s : s + "f";
  }

  std::string flat_index(const P::Buffer& b, const std::vector<P::Expr>& indices) {
    std::string flat = row_major_index(b, indices);
    auto e = expanded_.find(b->id);
    if (e == expanded_.end()) return flat;
    return flat + " + " + var_name(vt_->var) + " * " + std::to_string(e->second);
  }

  // The layout of a shared array wgmma reads (tensor_op.h); nullopt for every other array.
  std::optional<CoreMatrixLayout> core_matrix_layout(const P::Buffer& b) const {
    auto it = core_matrix_.find(b->id);
    if (it == core_matrix_.end()) return std::nullopt;
    return it->second;
  }

  std::string row_major_index(const P::Buffer& b, const std::vector<P::Expr>& indices) {
    if (auto layout = core_matrix_layout(b)) {
      if (*layout == CoreMatrixLayout::Swizzle128) return swizzled_index(b, indices);
      return bare(core_matrix_offset(*b, indices, *layout));
    }
    std::string out;
    int64_t stride = 1;
    for (size_t i = indices.size(); i-- > 0;) {
      int64_t c;
      std::string term;
      if (P::is_const_int(indices[i], &c)) {
        term = std::to_string(c * stride);
      } else {
        // expr() parenthesises every compound expression itself.
        term = expr(indices[i]);
        if (stride != 1) term += " * " + std::to_string(stride);
      }
      out = out.empty() ? term : term + " + " + out;
      stride *= b->shape[i];
    }
    return out.empty() ? "0" : out;
  }

  // tensor_op.h's Swizzle128 offset written with the exclusive or itself: the same value as
  // core_matrix_offset's, whose xor is spelled in sums and remainders for the vector-copy
  // analysis, in a form the compilers fold into a few instructions. The row and column are
  // indices of the buffer, never negative, so C's division and remainder are the floor ones.
  std::string swizzled_index(const P::Buffer& b, const std::vector<P::Expr>& indices) {
    const size_t nd = indices.size();
    const int64_t R = b->shape[nd - 2], C = b->shape[nd - 1];
    const int64_t line = 128 / b->dtype.bytes();
    const std::string r = expr(indices[nd - 2]), c = expr(indices[nd - 1]);
    const std::string l = std::to_string(line);
    std::string out = "(" + c + " / " + l + ") * " + std::to_string(R * line) + " + (" + r +
                      " / 8) * " + std::to_string(8 * line) + " + (" + r + " % 8) * " + l +
                      " + (((" + c + " % " + l + ") / 8) ^ (" + r + " % 8)) * 8 + " + c + " % 8";
    if (nd == 2) return out;
    std::string outer = expr(indices[0]);
    for (size_t d = 1; d + 2 < nd; ++d)
      outer = "(" + outer + ") * " + std::to_string(b->shape[d]) + " + " + expr(indices[d]);
    return "(" + outer + ") * " + std::to_string(R * C) + " + " + out;
  }

  // An expression where nothing binds tighter around it (a condition, a right-hand side):
  // without the outermost parentheses, which compilers warn about in `if ((a == b))`.
  std::string bare(const P::Expr& e) {
    std::string s = expr(e);
    if (s.size() < 2 || s.front() != '(' || s.back() != ')') return s;
    int depth = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
      if (depth == 0 && i + 1 < s.size()) return s; // "(a) * (b)"
    }
    return s.substr(1, s.size() - 2);
  }

  std::string expr(const P::Expr& e) {
    std::string x = expr_in_float(e);
    if (!is_half(e->dtype)) return x;
    switch (e->kind) {
    case ExprKind::Add:
    case ExprKind::Sub:
    case ExprKind::Mul:
    case ExprKind::Div:
    case ExprKind::Call:
    case ExprKind::Cast:
    case ExprKind::FloatImm:
      return rounded(e->dtype, x);
    default: // loads are exact; min, max and select pick an operand
      return x;
    }
  }

  std::string expr_in_float(const P::Expr& e) {
    const P::DType t = e->dtype;
    auto a = [&](size_t i) { return expr(e->args[i]); };
    switch (e->kind) {
    case ExprKind::IntImm:
      if (t.is_bool()) return e->int_value ? "1" : "0";
      if (t == P::DType::index()) return std::to_string(e->int_value);
      return "((" + d_.type_name(t) + ")" + std::to_string(e->int_value) + ")";
    case ExprKind::FloatImm:
      return float_literal(e->float_value, t);
    case ExprKind::Var:
      return var_name(e);
    case ExprKind::Add:
      return "(" + a(0) + " + " + a(1) + ")";
    case ExprKind::Sub:
      return "(" + a(0) + " - " + a(1) + ")";
    case ExprKind::Mul:
      return "(" + a(0) + " * " + a(1) + ")";
    case ExprKind::Div:
      if (t.is_float()) return "(" + a(0) + " / " + a(1) + ")";
      [[fallthrough]];
    case ExprKind::FloorDiv:
      if (non_negative(e)) return "(" + a(0) + " / " + a(1) + ")";
      return helper("floordiv", t) + "(" + a(0) + ", " + a(1) + ")";
    case ExprKind::FloorMod:
      if (non_negative(e)) return "(" + a(0) + " % " + a(1) + ")";
      return helper("floormod", t) + "(" + a(0) + ", " + a(1) + ")";
    case ExprKind::Min:
      return helper("min", t) + "(" + a(0) + ", " + a(1) + ")";
    case ExprKind::Max:
      return helper("max", t) + "(" + a(0) + ", " + a(1) + ")";
    case ExprKind::EQ:
      return "(" + a(0) + " == " + a(1) + ")";
    case ExprKind::NE:
      return "(" + a(0) + " != " + a(1) + ")";
    case ExprKind::LT:
      return "(" + a(0) + " < " + a(1) + ")";
    case ExprKind::LE:
      return "(" + a(0) + " <= " + a(1) + ")";
    case ExprKind::GT:
      return "(" + a(0) + " > " + a(1) + ")";
    case ExprKind::GE:
      return "(" + a(0) + " >= " + a(1) + ")";
    case ExprKind::And:
      return "(" + a(0) + " && " + a(1) + ")";
    case ExprKind::Or:
      return "(" + a(0) + " || " + a(1) + ")";
    case ExprKind::Not:
      return "(!" + a(0) + ")";
    case ExprKind::Select:
      return "(" + a(0) + " ? " + a(1) + " : " + a(2) + ")";
    case ExprKind::Cast:
      if (t.is_bool()) return "(" + a(0) + " != 0)";
      return "((" + type_of(t) + ")" + a(0) + ")";
    case ExprKind::Load:
      return read_element(e->buffer, flat_index(e->buffer, e->args));
    case ExprKind::Call: {
      if (!t.is_float()) {
        if (e->fn == P::MathFn::Abs) return helper("abs", t) + "(" + a(0) + ")";
        throw UnsupportedError(std::string("math function ") + P::to_string(e->fn) +
                               " on integers");
      }
      std::vector<std::string> args;
      for (size_t i = 0; i < e->args.size(); ++i)
        args.push_back(a(i));
      return d_.math(e->fn, t, args);
    }
    }
    throw UnsupportedError(std::string("expression kind ") + P::to_string(e->kind));
  }

  std::string combine(ExprKind k, P::DType t, const std::string& x, const std::string& y) {
    if (k == ExprKind::Add)
      return is_half(t) ? rounded(t, x + " + " + y) : "(" + x + " + " + y + ")";
    return helper(k == ExprKind::Max ? "max" : "min", t) + "(" + x + ", " + y + ")";
  }

  std::string identity(ExprKind k, P::DType t) {
    if (k == ExprKind::Add) return t.is_float() ? float_literal(0.0, t) : "0";
    bool neg = k == ExprKind::Max;
    if (t.is_float()) return d_.infinity(t, neg);
    int bits = t.bits == 64 && plan_.index32 && t == P::DType::index() ? 32 : t.bits;
    std::string ty = type_of(t);
    if (t.kind == P::DTypeKind::UInt)
      return neg ? "((" + ty + ")0)" : "((" + ty + ")~((" + ty + ")0))";
    if (bits >= 64)
      return neg ? "((" + ty + ")(-9223372036854775807 - 1))" : "((" + ty + ")9223372036854775807)";
    int64_t hi = (int64_t{1} << (bits - 1)) - 1;
    return neg ? "((" + ty + ")(" + std::to_string(-hi) + " - 1))"
               : "((" + ty + ")" + std::to_string(hi) + ")";
  }

  // ---- statements ----------------------------------------------------------------------------
  void line(const std::string& s) {
    body_ << std::string(static_cast<size_t>(indent_) * 2, ' ') << s << "\n";
  }

  bool visible(const P::Buffer& b) const { return !private_.count(b->id); }

  static bool uses_var_anywhere(const P::Stmt& s, int64_t var_id) {
    bool used = false;
    auto check = [&](const P::Expr& e) {
      used = used || (static_cast<bool>(e) && P::uses_var(e, var_id));
    };
    P::visit_stmts(s, [&](const P::Stmt& x) {
      for (const auto& i : x->indices)
        check(i);
      check(x->value);
      check(x->condition);
      return !used;
    });
    return used;
  }

  // The stores that cross-thread reductions turn into register arithmetic, known before any
  // barrier is placed (they touch no memory, so they hand nothing between threads).
  void preregister_reductions() {
    std::function<void(const P::Stmt&, std::unordered_set<std::string>)> walk =
        [&](const P::Stmt& x, std::unordered_set<std::string> tags) {
          if (!x) return;
          if (x->kind == StmtKind::For) {
            bool is_block = false;
            int dim = 0;
            if (x->for_kind == P::ForKind::ThreadBinding &&
                parse_thread_tag(x->thread_tag, &is_block, &dim) && !is_block &&
                !tags.count(x->thread_tag) && kernel_.dims.block[dim] > 1) {
              try {
                // Every enclosing variable counts as outside: what is refused is said again,
                // with the reason, when the loop is written.
                std::unordered_set<int64_t> all_outside;
                P::visit_stmts(kernel_.body, [&](const P::Stmt& y) {
                  if (y->kind == StmtKind::For) all_outside.insert(y->loop_var->var_id);
                  return true;
                });
                for (const auto& v : kernel_.host_vars)
                  all_outside.insert(v->var_id);
                if (auto xr = find_shared_target_stores(x, false, private_, all_outside)) {
                  in_registers_.insert(xr->update.get());
                  for (const auto& init : xr->inits)
                    in_registers_.insert(init.get());
                }
              } catch (const UnsupportedError&) {
              }
              tags.insert(x->thread_tag);
            }
            walk(x->body, tags);
            return;
          }
          for (const auto& c : x->kind == StmtKind::Seq ? x->stmts : std::vector<P::Stmt>{})
            walk(c, tags);
          if (x->kind == StmtKind::IfThenElse) {
            walk(x->then_case, tags);
            walk(x->else_case, tags);
          }
          if (x->kind == StmtKind::Allocate) walk(x->body, tags);
        };
    walk(kernel_.body, {});
  }

  // Whether an index uses a variable of every thread dimension the block has (more than one
  // thread along it): only then is the same index the same thread.
  bool tells_threads_apart(const std::vector<P::Expr>& indices) const {
    // A tensor-core operation's access is the warp's: its 32 lanes are one agent, in order,
    // so threadIdx.x need not tell them apart (every lane of the emulation writes the same).
    bool warp_op = false;
    for (const auto& i : indices)
      warp_op = warp_op || uses_any(i, tensor_nest_vars_);
    for (int d = 0; d < 3; ++d) {
      if (kernel_.dims.block[d] <= 1 || (d == 0 && warp_op)) continue;
      bool uses = false;
      for (const auto& i : indices)
        uses = uses || uses_any(i, thread_vars_by_dim_[static_cast<size_t>(d)]);
      if (!uses) return false;
    }
    return true;
  }

  Accesses accesses(const P::Stmt& s) {
    auto it = access_cache_.find(s.get());
    if (it != access_cache_.end()) return it->second;
    Accesses a = accesses_of(
        s, [this](const P::Buffer& b) { return visible(b); },
        [this](const std::vector<P::Expr>& indices) { return tells_threads_apart(indices); },
        [this](const P::Stmt& st) { return in_registers_.count(st.get()) > 0; });
    // A cross-thread reduction's result is written by one thread for all of them.
    P::visit_stmts(s, [&](const P::Stmt& x) {
      if (x->kind == StmtKind::For && x->for_kind == P::ForKind::ThreadBinding) {
        auto r = xthread_targets_.find(x.get());
        if (r != xthread_targets_.end()) a.writes[r->second].insert(kAnyThreadKey);
      }
      return true;
    });
    access_cache_[s.get()] = a;
    return a;
  }

  // `fence_after`: the wgmma fence follows the barrier (else the caller writes it later).
  void barrier(Accesses& pending, bool uniform, const std::string& why, bool fence_after = true) {
    if (!uniform)
      throw UnsupportedError("threads hand data to each other (" + why +
                             ") under divergent control flow, where no barrier can be placed");
    group_mma_quiesce();
    // The consumers alone: the producer warpgroup never reaches their barriers.
    line(in_consumer_ ? d_.named_barrier(kConsumerBarrier, kernel_.dims.threads_per_block())
                      : d_.barrier());
    if (fence_after) group_mma_fence();
    pending = Accesses{};
  }

  // Every path from the accumulator's fill to a product crosses a barrier, a pipelined loop's
  // fetch or the fence written at the product itself: one fence per k-tile, not one per
  // product. Written right before the products' nest: ptxas injects a warpgroup.arrive of its
  // own (note C7519) when other code lies between the fence and the products.
  void group_mma_fence() {
    if (!group_ops_ || !d_.has_tensor_cores()) return;
    line(d_.group_mma_fence());
    group_fenced_ = true;
  }

  void commit_group_mmas() {
    if (!group_uncommitted_) return;
    line(d_.group_mma_commit());
    group_uncommitted_ = false;
  }

  // Before a barrier in a kernel with warpgroup MMAs: this thread's wgmmas, which read shared
  // memory asynchronously, are done (the tiles may be overwritten after the barrier), and its
  // ordinary and cp.async writes to shared memory are made visible to the asynchronous proxy
  // that the next wgmmas read through.
  void group_mma_quiesce() {
    if (!group_ops_ || !d_.has_tensor_cores()) return;
    commit_group_mmas();
    line(d_.group_mma_wait(group_wait_depth_));
    // Where TMA writes every tile wgmma reads, both are the asynchronous proxy's, ordered by
    // the mbarriers: no thread's own write needs making visible to it.
    if (!tma_writes_every_operand_) line(d_.async_proxy_fence());
  }

  std::string describe(const P::Stmt& s) {
    std::string t = P::to_string(s);
    size_t nl = t.find('\n');
    return nl == std::string::npos ? t : t.substr(0, nl);
  }

  void seq(const std::vector<P::Stmt>& items, Accesses& pending, bool uniform) {
    for (const auto& c : items) {
      Accesses a = accesses(c);
      if (conflicts(pending, a)) barrier(pending, uniform, "before `" + describe(c) + "`");
      stmt(c, pending, uniform);
    }
  }

  void stmt(const P::Stmt& s, Accesses& pending, bool uniform) {
    if (!s) return;
    // Under a vthread loop: what does not depend on the virtual thread is written once, a
    // container of both kinds is opened once, and the rest runs in a loop over the virtual
    // threads at the innermost place it can (see vthread_loop).
    if (vt_ && !in_vloop_ && depends_on_vthread(s) && !opens_once(s)) {
      in_vloop_ = true;
      // Kept alive: the access cache is keyed by node address. Unrolled where the virtual
      // threads' arrays fit in registers (vthread_loop).
      synthetic_.push_back(P::make_for(vt_->var, vt_->extent, s,
                                       vt_->unrolled ? P::ForKind::Unrolled : P::ForKind::Serial));
      serial_loop(synthetic_.back(), pending, uniform);
      in_vloop_ = false;
      return;
    }
    switch (s->kind) {
    case StmtKind::Seq:
      seq(s->stmts, pending, uniform);
      return;
    case StmtKind::Store:
      store(s, pending);
      return;
    case StmtKind::IfThenElse: {
      bool stays = uniform && !depends_on_thread(s->condition);
      line("if (" + bare(s->condition) + ") {");
      Accesses inner = stays ? pending : Accesses{};
      ++indent_;
      stmt(s->then_case, inner, stays);
      --indent_;
      if (s->else_case) {
        line("} else {");
        Accesses other = stays ? pending : Accesses{};
        ++indent_;
        stmt(s->else_case, other, stays);
        --indent_;
        inner.merge(other);
      }
      line("}");
      if (stays)
        pending = inner;
      else
        pending.merge(accesses(s));
      return;
    }
    case StmtKind::Allocate: {
      const P::Buffer& b = s->buffer;
      if (b->scope == "shared") {
        stmt(s->body, pending, uniform);
        return;
      }
      if (is_fragment_scope(b->scope) && d_.has_tensor_cores()) {
        fragments(s, pending, uniform);
        return;
      }
      if (b->size_bytes() > 64 * 1024)
        throw UnsupportedError("a per-thread array of " + std::to_string(b->size_bytes()) +
                               " bytes ('" + b->name + "', scope " + b->scope + ")");
      check_private_to_threads(s);
      // Allocated under a vthread loop but opened once: one copy per virtual thread.
      int64_t copies = 1;
      if (vt_ && !in_vloop_ && vt_->inner_allocs.count(b->id)) {
        copies = vt_->extent;
        expanded_[b->id] = b->num_elements();
      }
      line("{");
      ++indent_;
      line(type_of(b->dtype) + " " + buffer_name(b) + "[" +
           std::to_string(b->num_elements() * copies) + "];");
      stmt(s->body, pending, uniform);
      --indent_;
      line("}");
      return;
    }
    case StmtKind::For:
      if (s->annotations.count(P::kTensorIntrinsicAnnotation)) {
        tensor_op(s, pending, uniform);
        return;
      }
      if (auto tma = tma_copies_.find(s.get()); tma != tma_copies_.end()) {
        tma_copy(s, tma->second, pending);
        return;
      }
      // The producer warpgroup fetches the prologue's tiles.
      if (in_consumer_ && s.get() == producer_->prologue) return;
      if (s->annotations.count(P::kSoftwarePipelineAsyncCopy) && !in_async_) {
        in_async_ = true;
        stmt_for(s, pending, uniform);
        in_async_ = false;
        return;
      }
      stmt_for(s, pending, uniform);
      return;
    }
  }

  void stmt_for(const P::Stmt& s, Accesses& pending, bool uniform) {
    if (s->for_kind == P::ForKind::ThreadBinding && s->thread_tag.rfind("vthread", 0) == 0 &&
        !vt_ && s->extent > 1) {
      vthread_loop(s, pending, uniform);
      return;
    }
    if (s->for_kind == P::ForKind::ThreadBinding && s->thread_tag.rfind("vthread", 0) != 0)
      thread_loop(s, pending, uniform);
    else
      serial_loop(s, pending, uniform);
  }

  bool depends_on_thread(const P::Expr& e) const {
    bool r = false;
    P::post_order_visit(e, [&](const P::Expr& x) {
      if (x->kind == ExprKind::Var && thread_vars_.count(x->var_id)) r = true;
      if (x->kind == ExprKind::Load) r = true; // data may differ between threads
    });
    return r;
  }

  // A vectorised loop that copies consecutive elements (vector_copy.h) as one wide move, where
  // the dialect has them and both arrays hold the elements in their own type.
  bool vector_copy(const P::Stmt& loop, Accesses& pending) {
    auto vc = match_vector_copy(loop, [this](const P::Buffer& b, const std::vector<P::Expr>& i) {
      auto layout = core_matrix_layout(b);
      return layout ? core_matrix_offset(*b, i, *layout) : P::flat_index(*b, i);
    });
    if (!vc || active_xr_ || in_tensor_op_) return false;
    const P::Buffer& dst = vc->store->buffer;
    const P::Buffer& src = vc->store->value->buffer;
    for (const P::Buffer& b : {dst, src}) {
      if (!visible(b) || expanded_.count(b->id)) return false;
      // f16 and bf16 held in float (type_of, not held_in_own_type): not a plain copy.
      if (is_half(b->dtype) && !held_in_own_type(b)) return false;
    }
    std::string to = "&" + buffer_name(dst) + "[" + flat_index(dst, vc->store->indices) + "]";
    std::string from = "&" + buffer_name(src) + "[" + flat_index(src, vc->store->value->args) + "]";
    // A pipelined fetch from device memory into a shared tile: issued, not waited for (the
    // pipelined loop waits for it before its barrier).
    std::string move;
    if (in_async_ && dst->scope == "shared" && global_ids_.count(src->id)) {
      move = d_.async_copy(vc->bytes, to, from);
      if (!move.empty()) used_helpers_.insert(kAsyncCopyOf + std::to_string(vc->bytes));
    }
    if (move.empty())
      move = d_.vector_move(vc->bytes, to, dst->scope == "shared", from, src->scope == "shared");
    if (move.empty()) return false;
    check_runs_once_per_element(vc->store);
    line("{");
    ++indent_;
    line("const " + idx_ + " " + var_name(loop->loop_var) + " = 0; // " +
         std::to_string(vc->lanes) + " lanes in one move");
    line(move + ";");
    --indent_;
    line("}");
    pending.merge(accesses(loop));
    return true;
  }

  void serial_loop(const P::Stmt& s, Accesses& pending, bool uniform) {
    if (s->for_kind == P::ForKind::Vectorized && vector_copy(s, pending)) return;
    if (uniform && reduces_across_threads_inside(s)) {
      thread_loop(s->body, pending, uniform, s);
      return;
    }
    std::string v = var_name(s->loop_var);
    scope_vars_.insert(s->loop_var->var_id);
    const bool prologue = s->annotations.count(P::kSoftwarePipelinePrologue) > 0;
    const int64_t stages = pipeline_stages(s);
    if (s->extent == 1) {
      line("{");
      ++indent_;
      line("const " + idx_ + " " + v + " = 0;");
      stmt(s->body, pending, uniform);
      if (prologue) async_line(d_.async_commit());
      --indent_;
      line("}");
      return;
    }
    if (s->for_kind == P::ForKind::Unrolled || s->annotations.count(P::kUnrollHintAnnotation))
      line(d_.unroll_pragma());
    line("for (" + idx_ + " " + v + " = 0; " + v + " < " + std::to_string(s->extent) + "; ++" + v +
         ") {");
    ++indent_;
    Accesses body = accesses(s->body);
    // The next iteration overwrites what this one read, or reads what it wrote: a barrier at
    // the top of every iteration (at the top rather than the bottom: PoCL 3.1 fails an
    // assertion on a barrier right before the back edge of an unrolled nest). A pipelined
    // loop always has one: its fetch ahead refills the slot the previous iteration read.
    bool carried = conflicts(body, body) || stages > 1;
    if (carried && !uniform)
      throw UnsupportedError("the iterations of `" + v +
                             "` hand data to each other's threads "
                             "under divergent control flow, where no barrier can be placed");
    Accesses inner = pending;
    // Spare slots (software_pipeline.h): the warpgroup products of the last `spare` iterations
    // (one commit group each) may still be reading their slots at this loop's barriers.
    const int64_t outer_depth = group_wait_depth_;
    if (stages > 1 && group_ops_) group_wait_depth_ = spare_slots(s);
    if (stages > 1) {
      pipelined_body(s->body, stages, inner, uniform, v);
    } else {
      if (carried) barrier(inner, uniform, "between iterations of `" + v + "`");
      stmt(s->body, inner, uniform);
    }
    // The products issued in an iteration form one group, which the next iteration's barrier
    // waits for (or leaves running, with spare slots).
    if (carried) commit_group_mmas();
    group_wait_depth_ = outer_depth;
    if (prologue) async_line(d_.async_commit());
    --indent_;
    line("}");
    if (carried) {
      pending = body;
    } else {
      pending.merge(inner);
      pending.merge(body);
    }
  }

  static int64_t spare_slots(const P::Stmt& loop) {
    auto it = loop->annotations.find(P::kSoftwarePipelineSpareSlots);
    if (it == loop->annotations.end()) return 0;
    const auto* n = std::get_if<int64_t>(&it->second);
    return n ? *n : 0;
  }
  // The stages of a loop that lowering pipelined (core's software_pipeline.h), 0 if it is not.
  static int64_t pipeline_stages(const P::Stmt& loop) {
    auto it = loop->annotations.find(P::kSoftwarePipelineStages);
    if (it == loop->annotations.end()) return 0;
    const auto* n = std::get_if<int64_t>(&it->second);
    return n ? *n : 0;
  }

  void async_line(const std::string& text) {
    if (text.empty()) return;
    used_helpers_.insert(kAsyncCopies);
    line(text + ";");
  }

  // A pipelined loop's body, with one barrier an iteration (CUTLASS's multistage order): the
  // wait until this iteration's tile -- fetched S-1 iterations ago, or by the prologue -- has
  // landed (at most the newest S-2 groups still in flight), the barrier that makes it every
  // thread's and that every thread passes only once done with the previous iteration's reads;
  // then the fetch ahead (statement 0, its copies issued asynchronously where the dialect can,
  // committed as one group), which overwrites the slot those reads used (software_pipeline.h:
  // iteration k fetches into slot k - 1 - spare), and the reads of this iteration's slot, which
  // the fetch does not touch -- so its writes are not among the accesses the reads are checked
  // against. The barrier also covers whatever else the iterations hand each other: it
  // separates every statement of one iteration from every statement of the next.
  void pipelined_body(const P::Stmt& body, int64_t stages, Accesses& pending, bool uniform,
                      const std::string& var) {
    std::vector<P::Stmt> items =
        body->kind == StmtKind::Seq ? body->stmts : std::vector<P::Stmt>{body};
    if (in_consumer_) {
      consumer_body(items, pending, var);
      return;
    }
    async_line(d_.async_wait(stages - 2));
    if (!tma_copies_.empty() && d_.has_tma()) {
      // This iteration's tile is the (var / slots)-th its slot's barrier counts.
      const std::string slots = std::to_string(tma_slots_);
      line(d_.tma_wait("&" + tma_bar_ + "[" + var + " % " + slots + "]",
                       "(unsigned)((" + var + " / " + slots + ") % 2)") +
           ";");
    }
    barrier(pending, uniform, "between iterations of pipelined `" + var + "`", false);
    group_fenced_ = false;
    Accesses fetch;
    stmt(items[0], fetch, uniform);
    async_line(d_.async_commit());
    if (!tma_copies_.empty() && group_ops_ && d_.has_tensor_cores()) accumulator_fences();
    group_mma_fence();
    seq(std::vector<P::Stmt>(items.begin() + 1, items.end()), pending, uniform);
  }

  // A vthread loop, as TVM injects virtual threads: the virtual threads are independent like
  // threads, so their statements may interleave. What does not use the virtual thread -- the
  // cooperative fetch of a shared tile, which MultiLevelTiling places inside the vthread loop
  // and whose region covers every virtual thread -- runs once instead of once per virtual
  // thread (with one barrier), and per-thread arrays allocated under the loop get one copy per
  // virtual thread. A serial loop would be correct too, only slower; the interpreter runs the
  // loop serially, so the tests compare the two.
  void vthread_loop(const P::Stmt& s, Accesses& pending, bool uniform) {
    vt_ = VThread{s->loop_var, s->extent, {}, false};
    int64_t words = 0; // 32-bit registers the per-thread arrays take, all virtual threads
    P::visit_stmts(s->body, [&](const P::Stmt& x) {
      // Shared arrays are the block's, at kernel scope, covering every virtual thread.
      if (x->kind == StmtKind::Allocate && x->buffer->scope != "shared") {
        vt_->inner_allocs.insert(x->buffer->id);
        words += x->buffer->num_elements() * std::max<int64_t>(1, x->buffer->dtype.bits / 32);
      }
      return true;
    });
    // The loops over the virtual threads are unrolled, as TVM injects virtual threads by
    // copying the statements, where their arrays fit in half the 255 registers a thread may
    // have: indexed by constants they stay in registers. As loops, nvcc kept a 64-float
    // accumulator in local memory: 16 of its loads and 24 stores among 512 FMAs of the 4096^3
    // f32 matmul's inner loop, none once unrolled. Larger arrays live in local memory either
    // way, and unrolled they spilled far more (586 loads among 2048 FMAs).
    vt_->unrolled = words * s->extent <= kVThreadRegisterWords;
    scope_vars_.insert(s->loop_var->var_id);
    if (!injectable(s->body)) {
      vt_.reset();
      vdepends_.clear();
      serial_loop(s, pending, uniform); // correct, only slower
      return;
    }
    stmt(s->body, pending, uniform);
    vt_.reset();
    vdepends_.clear();
    for (auto it = expanded_.begin(); it != expanded_.end();)
      it = expanded_.erase(it);
  }

  // Whether the virtual threads of the loop being injected may interleave: a statement that does
  // not use them runs once, so it must write what it would write every time (not read what it
  // writes); one that does must keep its result apart per virtual thread (in an array of its
  // own, or at an index that uses the virtual thread), or another would overwrite it between
  // its write and its read.
  bool injectable(const P::Stmt& body) {
    std::unordered_set<int64_t> v{vt_->var->var_id};
    bool ok = true;
    P::visit_stmts(body, [&](const P::Stmt& x) {
      if (x->kind != StmtKind::Store) return ok;
      if (!depends_on_vthread(x)) {
        if (reads_buffer(x->value, x->buffer->id)) ok = false;
        return ok;
      }
      if (vt_->inner_allocs.count(x->buffer->id)) return ok;
      bool indexed = false;
      for (const auto& i : x->indices)
        indexed = indexed || uses_any(i, v);
      if (!indexed) ok = false;
      return ok;
    });
    return ok;
  }

  // Whether `s` uses the virtual thread: its variable, or an array allocated under the loop.
  bool depends_on_vthread(const P::Stmt& s) {
    auto it = vdepends_.find(s.get());
    if (it != vdepends_.end()) return it->second;
    bool d = false;
    auto expr_uses = [&](const P::Expr& e) {
      P::post_order_visit(e, [&](const P::Expr& x) {
        if (x->kind == ExprKind::Var && x->var_id == vt_->var->var_id) d = true;
        if (x->kind == ExprKind::Load && vt_->inner_allocs.count(x->buffer->id)) d = true;
      });
    };
    P::visit_stmts(s, [&](const P::Stmt& x) {
      if (x->kind == StmtKind::Store) {
        if (vt_->inner_allocs.count(x->buffer->id)) d = true;
        for (const auto& i : x->indices)
          expr_uses(i);
        expr_uses(x->value);
      } else if (x->kind == StmtKind::IfThenElse) {
        expr_uses(x->condition);
      }
      return !d;
    });
    vdepends_[s.get()] = d;
    return d;
  }

  // A statement written once under a vthread loop although parts of it use the virtual
  // thread: a sequence, a loop or an allocation holding some statement that does not (those
  // parts then run once; the others loop over the virtual threads inside).
  bool opens_once(const P::Stmt& s) {
    if (s->kind == StmtKind::Store) return false;
    if (s->kind == StmtKind::IfThenElse) return false;
    if (s->kind == StmtKind::For && s->for_kind == P::ForKind::ThreadBinding &&
        s->thread_tag.rfind("vthread", 0) == 0)
      return false;
    bool independent = false;
    P::visit_stmts(s, [&](const P::Stmt& x) {
      if (x->kind == StmtKind::Store && !depends_on_vthread(x)) independent = true;
      return !independent;
    });
    return independent;
  }

  // A serial loop (the reduction's outer part, as CrossThreadReduction splits it) whose whole
  // body is a loop reducing across threads into an element the serial loop does not choose:
  // every thread then accumulates its share over all the serial iterations and the block
  // combines once, instead of once per iteration (same result: the combiner is associative).
  bool reduces_across_threads_inside(const P::Stmt& serial) {
    const P::Stmt& t = serial->body;
    if (!t || t->kind != StmtKind::For || t->for_kind != P::ForKind::ThreadBinding) return false;
    bool is_block = false;
    int dim = 0;
    if (!parse_thread_tag(t->thread_tag, &is_block, &dim) || is_block ||
        active_tags_.count(t->thread_tag) || kernel_.dims.block[dim] <= 1)
      return false;
    std::unordered_set<int64_t> outside = scope_vars_;
    std::optional<CrossThreadReduction> xr;
    try {
      xr = find_shared_target_stores(t, false, private_, outside);
    } catch (const UnsupportedError&) {
      return false; // said again, with the reason, when the loop is written as it is
    }
    if (!xr) return false;
    std::unordered_set<int64_t> serial_var{serial->loop_var->var_id};
    for (const auto& i : xr->update->indices)
      if (uses_any(i, serial_var)) return false;
    return !xr->init_value || !uses_any(xr->init_value, serial_var);
  }

  // `around`: a serial loop to run inside the thread scope, around the body (see above).
  void thread_loop(const P::Stmt& s, Accesses& pending, bool uniform,
                   const P::Stmt& around = nullptr) {
    bool is_block = false;
    int dim = 0;
    parse_thread_tag(s->thread_tag, &is_block, &dim);
    int64_t launched = is_block ? kernel_.dims.grid[dim] : kernel_.dims.block[dim];
    bool outermost = !active_tags_.count(s->thread_tag);
    if (!outermost) {
      // A loop nested under one of the same tag shares its index: right only when it covers
      // no more than the outer one and does not depend on the outer one's variable (the
      // cooperative fetch under the compute's threadIdx.x loop).
      auto [outer_var, outer_extent] = active_tags_.at(s->thread_tag);
      if (s->extent > outer_extent || uses_var_anywhere(s->body, outer_var))
        throw UnsupportedError("a loop bound to '" + s->thread_tag +
                               "' nested under another (extent " + std::to_string(s->extent) +
                               " under " + std::to_string(outer_extent) +
                               ") that uses the outer one's variable or outgrows it");
    }
    std::optional<CrossThreadReduction> xr;
    if (outermost && launched > 1)
      xr = find_shared_target_stores(s, is_block, private_, scope_vars_);

    std::string v = var_name(s->loop_var);
    line("{");
    ++indent_;
    // A dimension launched once has index 0: said as a constant, so that what it indexes
    // folds (a warpgroup's accumulator registers must be indexed by constants).
    line("const " + idx_ + " " + v + " = " +
         (launched == 1
              ? std::string("0")
              : "(" + idx_ + ")" + (is_block ? d_.block_index(dim) : d_.thread_index(dim))) +
         ";");
    if (!is_block) thread_vars_.insert(s->loop_var->var_id);
    scope_vars_.insert(s->loop_var->var_id);
    bool inserted =
        active_tags_.emplace(s->thread_tag, std::make_pair(s->loop_var->var_id, s->extent)).second;
    if (xr) {
      in_registers_.insert(xr->update.get());
      for (const auto& init : xr->inits)
        in_registers_.insert(init.get());
      access_cache_.clear();
      if (active_xr_)
        throw UnsupportedError("a reduction across '" + s->thread_tag +
                               "' inside a reduction across other threads");
      if (!uniform)
        throw UnsupportedError("a reduction across " + s->thread_tag +
                               " under divergent control flow");
      xr->red = fresh("mt_red");
      xr->flags = fresh("mt_redflags");
      const P::Buffer& target = buffer_of(xr->update);
      line(type_of(target->dtype) + " " + xr->red + " = " + identity(xr->combiner, target->dtype) +
           ";");
      line("int " + xr->flags + " = 0;");
      active_xr_ = &*xr;
    }
    bool guard = s->extent < launched;
    bool inner_uniform = uniform && !(guard && !is_block);
    if (guard) {
      line("if (" + v + " < " + std::to_string(s->extent) + ") {");
      ++indent_;
    }
    Accesses inner = guard && !inner_uniform ? Accesses{} : pending;
    if (around) {
      std::string u = var_name(around->loop_var);
      scope_vars_.insert(around->loop_var->var_id);
      if (around->for_kind == P::ForKind::Unrolled ||
          around->annotations.count(P::kUnrollHintAnnotation))
        line(d_.unroll_pragma());
      line("for (" + idx_ + " " + u + " = 0; " + u + " < " + std::to_string(around->extent) +
           "; ++" + u + ") {");
      ++indent_;
      // Each thread only adds to its own partial here: nothing is handed between threads.
      Accesses none;
      stmt(s->body, none, false);
      --indent_;
      line("}");
    } else {
      stmt(s->body, inner, inner_uniform);
    }
    if (guard) {
      --indent_;
      line("}");
    }
    if (xr) {
      active_xr_ = nullptr;
      reduction_epilogue(*xr, v, dim);
      xthread_targets_[s.get()] = xr->buffer_id;
      access_cache_.clear();
      inner = Accesses{};
      inner.writes[xr->buffer_id].insert(kAnyThreadKey);
    }
    if (inserted) active_tags_.erase(s->thread_tag);
    --indent_;
    line("}");
    if (guard && !inner_uniform)
      pending.merge(accesses(s));
    else
      pending = inner;
  }

  const P::Buffer& buffer_of(const P::Stmt& store) { return store->buffer; }

  // A per-thread array allocated outside the loops bound to some thread dimension but used
  // inside them: in the serial program one array that all those threads share, on a GPU one per
  // thread. Right only where each thread touches what it wrote itself (a reduction's target,
  // a thread-invariant index); refused where threads would read each other's elements.
  void check_private_to_threads(const P::Stmt& alloc) {
    static const char* tags[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
    const int64_t id = alloc->buffer->id;
    for (int d = 0; d < 3; ++d) {
      if (kernel_.dims.block[d] <= 1 || active_tags_.count(tags[d])) continue;
      // Under a loop of that dimension, is the array indexed by it?
      bool handoff = false;
      std::function<void(const P::Stmt&, bool)> walk = [&](const P::Stmt& x, bool under) {
        if (!x || handoff) return;
        if (x->kind == StmtKind::For) {
          bool bound = x->for_kind == P::ForKind::ThreadBinding && x->thread_tag == tags[d];
          walk(x->body, under || bound);
          return;
        }
        auto indexed_by_thread = [&](const std::vector<P::Expr>& indices) {
          for (const auto& i : indices)
            if (uses_any(i, thread_vars_by_dim_[static_cast<size_t>(d)])) return true;
          return false;
        };
        auto loads = [&](const P::Expr& e) {
          if (e)
            P::post_order_visit(e, [&](const P::Expr& l) {
              if (l->kind == ExprKind::Load && l->buffer->id == id && under &&
                  indexed_by_thread(l->args))
                handoff = true;
            });
        };
        if (x->kind == StmtKind::Store) {
          if (x->buffer->id == id && under && indexed_by_thread(x->indices)) handoff = true;
          for (const auto& i : x->indices)
            loads(i);
          loads(x->value);
        } else if (x->kind == StmtKind::IfThenElse) {
          loads(x->condition);
        }
        switch (x->kind) {
        case StmtKind::Seq:
          for (const auto& c : x->stmts)
            walk(c, under);
          break;
        case StmtKind::IfThenElse:
          walk(x->then_case, under);
          walk(x->else_case, under);
          break;
        case StmtKind::Allocate:
          walk(x->body, under);
          break;
        default:
          break;
        }
      };
      walk(alloc->body, false);
      if (handoff)
        throw UnsupportedError("the per-thread array '" + alloc->buffer->name +
                               "' is allocated outside the loops bound to " + tags[d] +
                               " and indexed by them: its threads would share it");
    }
  }

  // A store outside every loop of some thread dimension of the block runs in each of its
  // threads, where the serial program runs it once: harmless when they all write the same value
  // (it reads neither its own buffer nor a thread's private array), wrong otherwise.
  void check_runs_once_per_element(const P::Stmt& s) {
    // A warp-wide operation emulated: every lane computes the whole tile into its own copy of
    // the fragment, and the lanes store the same values.
    if (in_tensor_op_) return;
    static const char* tags[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
    for (int d = 0; d < 3; ++d) {
      if (kernel_.dims.block[d] <= 1 || active_tags_.count(tags[d])) continue;
      bool reads_private = false;
      P::post_order_visit(s->value, [&](const P::Expr& x) {
        if (x->kind == ExprKind::Load && private_.count(x->buffer->id)) reads_private = true;
      });
      if (reads_buffer(s->value, s->buffer->id) || reads_private)
        throw UnsupportedError("`" + describe(s) + "` is outside every loop bound to " + tags[d] +
                               ": each of its " + std::to_string(kernel_.dims.block[d]) +
                               " threads would run it");
    }
  }

  void store(const P::Stmt& s, Accesses& pending) {
    if (active_xr_) {
      if (s == active_xr_->update) {
        auto u = reduction_update(s);
        line(active_xr_->red + " = " +
             combine(active_xr_->combiner, s->buffer->dtype, active_xr_->red, expr(u->operand)) +
             ";");
        line(active_xr_->flags + " |= 2;");
        return;
      }
      for (const auto& init : active_xr_->inits)
        if (s == init) {
          line(active_xr_->flags + " |= 1;");
          return;
        }
    }
    check_runs_once_per_element(s);
    if (const std::string src = half_copy_source(s); !src.empty())
      line(buffer_name(s->buffer) + "[" + flat_index(s->buffer, s->indices) + "] = " + src + ";");
    else
      line(write_element(s->buffer, flat_index(s->buffer, s->indices), bare(s->value)) + ";");
    pending.merge(accesses(s));
  }

  // A store that copies an f16/bf16 element between two arrays holding it in the same type:
  // the element itself, not a round trip through float (which costs two conversions per
  // element in a cooperative fetch one lane wide). Empty when the store is anything else.
  std::string half_copy_source(const P::Stmt& s) {
    const P::Expr& v = s->value;
    if (v->kind != ExprKind::Load || !is_half(s->buffer->dtype) ||
        v->buffer->dtype != s->buffer->dtype || !d_.assigns_half(s->buffer->dtype) ||
        !held_in_own_type(s->buffer) || !held_in_own_type(v->buffer) ||
        storage_type(s->buffer) != storage_type(v->buffer))
      return {};
    return buffer_name(v->buffer) + "[" + flat_index(v->buffer, v->args) + "]";
  }

  // The accumulators' registers pinned where they are (CUTLASS's warpgroup_fence_operand):
  // after a TMA issue, a branch of one thread, ptxas otherwise moves them across the fence and
  // injects a warpgroup.arrive of its own (note C7519).
  void accumulator_fences() {
    for (const auto& [id, info] : frag_info_) {
      if (info.unit != TensorUnit::Warpgroup || info.role != FragmentRole::Accumulator) continue;
      for (const TensorOp& op : tensor_ops_) {
        if (op.kind != TensorOpKind::Mma || op.frag.buffer->id != id) continue;
        const std::string r = fresh("mt_r");
        line(d_.unroll_pragma());
        line("for (int " + r + " = 0; " + r + " < " + std::to_string(info.count * info.cols / 2) +
             "; ++" + r + ") " + d_.register_fence(buffer_name(op.frag.buffer) + "[" + r + "]"));
        break;
      }
    }
  }

  // ---- TMA copies (tma_copy.h)
  // ------------------------------------------------------------------- The pipelined fetches of
  // the swizzled wgmma operands whose operation asks for TMA, each recognised as a box copy, or
  // none at all: every fetch of such a buffer must be one, and the kernel's one pipeline must run
  // once (under no serial loop), because the barriers' phases count its tiles from the start of the
  // kernel. Otherwise the fetches stay the threads' own copies, which is the same program.
  void find_tma() {
    std::set<int64_t> wanted;
    for (const TensorOp& op : tensor_ops_)
      if (op.kind == TensorOpKind::Mma && op.tma)
        for (const Tile* t : {&op.a, &op.b})
          if (core_matrix_layout(t->buffer) == CoreMatrixLayout::Swizzle128)
            wanted.insert(t->buffer->id);
    if (wanted.empty()) return;
    std::map<int64_t, std::vector<std::pair<const P::StmtNode*, TmaCopy>>> copies;
    std::set<int64_t> refused;
    bool nested = false;
    int pipelines = 0;
    std::function<void(const P::Stmt&, int)> walk = [&](const P::Stmt& x, int serial) {
      if (!x) return;
      if (x->kind == StmtKind::For) {
        const bool pipeline = x->annotations.count(P::kSoftwarePipelineStages) ||
                              x->annotations.count(P::kSoftwarePipelinePrologue);
        if (pipeline && serial > 0) nested = true;
        if (x->annotations.count(P::kSoftwarePipelineStages)) ++pipelines;
        if (x->annotations.count(P::kSoftwarePipelineAsyncCopy)) {
          P::Stmt store;
          P::visit_stmts(x, [&](const P::Stmt& y) {
            if (!store && y->kind == StmtKind::Store) store = y;
            return !store;
          });
          if (store && wanted.count(store->buffer->id)) {
            std::string why;
            if (auto c = match_tma_copy(x, &why))
              copies[store->buffer->id].emplace_back(x.get(), std::move(*c));
            else
              refused.insert(store->buffer->id);
          }
          return;
        }
        const bool counts = !pipeline && x->for_kind != P::ForKind::ThreadBinding && x->extent > 1;
        walk(x->body, serial + (counts ? 1 : 0));
        return;
      }
      for (const auto& c : x->stmts)
        walk(c, serial);
      walk(x->then_case, serial);
      walk(x->else_case, serial);
      if (x->kind == StmtKind::Allocate) walk(x->body, serial);
    };
    walk(kernel_.body, 0);
    // One pipeline a kernel: the barriers' phases and arrivals are its own.
    if (nested || pipelines != 1) return;
    int64_t slots = 0;
    for (const auto& [id, list] : copies) {
      // One fetch in the prologue, one in the pipelined loop.
      if (refused.count(id) || list.size() != 2) return;
      for (const auto& [node, c] : list) {
        if (slots && slots != c.shared->shape[0]) return;
        slots = c.shared->shape[0];
      }
    }
    std::map<int64_t, TensorMap> maps;
    for (const auto& [id, list] : copies)
      for (const auto& [node, c] : list) {
        TensorMap m = tensor_map(c);
        auto [it, fresh_map] = maps.emplace(c.global->id, m);
        if (!fresh_map && (it->second.spec.box != m.spec.box)) return;
      }
    for (auto& [id, list] : copies)
      for (auto& [node, c] : list)
        tma_copies_.emplace(node, std::move(c));
    tma_slots_ = slots;
    tma_arrivals_ = static_cast<int64_t>(copies.size());
    tma_writes_every_operand_ = d_.has_tma();
    for (const auto& [id, layout] : core_matrix_)
      tma_writes_every_operand_ = tma_writes_every_operand_ && copies.count(id) > 0;
    tma_bar_ = fresh("mt_tma_bar");
    if (copies.empty()) return;
    if (d_.has_tma()) {
      tensor_maps_ = std::move(maps);
      used_helpers_.insert(kTma);
      for (const auto& [id, map] : tensor_maps_)
        used_helpers_.insert(kTmaOfRank + std::to_string(map.spec.dims.size()));
    }
  }

  // ---- warp specialisation (producer_warpgroup.h)
  // ------------------------------------------------------------------- Asked for by an
  // operation, done where every operand tile is a TMA copy, the block is whole warpgroups along
  // threadIdx.y (x = 128) with room for one more, and the pipeline's shape allows it (the
  // plan); otherwise the kernel stays the block's own copies and says why in a comment.
  void find_producer() {
    bool asked = false;
    for (const TensorOp& op : tensor_ops_)
      asked = asked || (op.kind == TensorOpKind::Mma && op.producer);
    if (!asked || !d_.has_tma()) return;
    const int64_t* b = kernel_.dims.block;
    if (tma_copies_.empty() || !tma_writes_every_operand_) {
      producer_why_ = "not every operand tile is a TMA copy";
      return;
    }
    if (b[0] != kWarpgroupThreads || b[2] != 1 ||
        (b[1] + 1) * kWarpgroupThreads > kMaxSpecialisedThreads) {
      producer_why_ = "the block is not warpgroups along threadIdx.y with room for one more";
      return;
    }
    std::string why;
    auto plan = plan_producer(
        kernel_.body,
        [&](const P::StmtNode* n) -> const TmaCopy* {
          auto it = tma_copies_.find(n);
          return it == tma_copies_.end() ? nullptr : &it->second;
        },
        &why);
    if (plan && plan->stages + plan->spare != tma_slots_) why = "the slots are not the stages'";
    if (!plan || !why.empty()) {
      producer_why_ = why;
      return;
    }
    producer_ = plan;
    empty_bar_ = fresh("mt_tma_empty");
    used_helpers_.insert(kTmaProducer);
  }

  // The kernel as two roles: the producer warpgroup (threadIdx.y one past the schedule's)
  // gives its registers to the consumers where three or more warpgroups share the register
  // file, and its first thread issues every copy in tile order, each into a slot the consumers
  // have handed back; the consumers run the schedule without the copies.
  void warp_specialised(Accesses& pending) {
    const int64_t consumers = kernel_.dims.block[1];
    const bool give = gives_registers();
    line("if (" + d_.thread_index(1) + " == " + std::to_string(consumers) + ") { // producer");
    ++indent_;
    if (give) line(d_.set_max_registers(false, kProducerRegisters));
    line("if (" + d_.thread_index(0) + " == 0) {");
    ++indent_;
    in_producer_ = true;
    producer_stmt(kernel_.body);
    in_producer_ = false;
    --indent_;
    line("}");
    --indent_;
    line("} else { // consumers");
    ++indent_;
    if (give) {
      // What the producer gave back, shared among the consumers, in steps of 8.
      const int64_t regs = (kRegisterFile - kWarpgroupThreads * kProducerRegisters) /
                           (consumers * kWarpgroupThreads) / 8 * 8;
      line(d_.set_max_registers(true, std::min<int64_t>(regs, kMaxThreadRegisters)));
    }
    in_consumer_ = true;
    stmt(kernel_.body, pending, true);
    in_consumer_ = false;
    --indent_;
    line("}");
  }

  // Three warpgroups or more share the register file (at most 168 registers a thread): the
  // producer gives its registers to the consumers.
  bool gives_registers() const { return producer_ && kernel_.dims.block[1] + 1 >= 3; }

  bool contains_tma(const P::Stmt& s) const {
    bool found = false;
    P::visit_stmts(s, [&](const P::Stmt& x) {
      found = found || tma_copies_.count(x.get()) > 0;
      return !found;
    });
    return found;
  }

  // The producer's part of `s`: the statements on the way to the copies (their shape is
  // producer_warpgroup.h's plan), the thread indices taken as 0.
  void producer_stmt(const P::Stmt& s) {
    if (!s || !contains_tma(s)) return;
    if (auto tma = tma_copies_.find(s.get()); tma != tma_copies_.end()) {
      Accesses none;
      tma_copy(s, tma->second, none);
      return;
    }
    switch (s->kind) {
    case StmtKind::Seq:
      for (const auto& c : s->stmts)
        producer_stmt(c);
      return;
    case StmtKind::Allocate:
      producer_stmt(s->body);
      return;
    case StmtKind::IfThenElse:
      line("if (" + bare(s->condition) + ") {");
      ++indent_;
      producer_stmt(s->then_case);
      --indent_;
      if (s->else_case) {
        line("} else {");
        ++indent_;
        producer_stmt(s->else_case);
        --indent_;
      }
      line("}");
      return;
    case StmtKind::For:
      producer_loop(s);
      return;
    default:
      throw UnsupportedError("the producer warpgroup reached a statement the plan excludes");
    }
  }

  // Whether the producer's part of `s` reads variable `var`.
  bool producer_reads(const P::Stmt& s, int64_t var) const {
    if (!s || !contains_tma(s)) return false;
    if (tma_copies_.count(s.get())) return uses_var_anywhere(s, var);
    if (s->kind == StmtKind::IfThenElse && P::uses_var(s->condition, var)) return true;
    for (const auto& c : s->stmts)
      if (producer_reads(c, var)) return true;
    return producer_reads(s->then_case, var) || producer_reads(s->else_case, var) ||
           producer_reads(s->body, var);
  }

  void producer_loop(const P::Stmt& s) {
    const std::string v = var_name(s->loop_var);
    scope_vars_.insert(s->loop_var->var_id);
    line("{");
    ++indent_;
    bool is_block = false;
    int dim = 0;
    const bool bound = s->for_kind == P::ForKind::ThreadBinding &&
                       parse_thread_tag(s->thread_tag, &is_block, &dim);
    const bool looped = !bound && s->extent > 1;
    // NVRTC warns of a variable never read: the consumers' thread indices mostly are not here.
    // (The pipelined loop's variable numbers the tiles of the wait written below.)
    const bool used =
        s.get() == producer_->pipeline || producer_reads(s->body, s->loop_var->var_id);
    bool guard = false;
    if (bound && is_block) {
      const int64_t launched = kernel_.dims.grid[dim];
      // The consumers of a block past the loop's end skip it: so must its producer.
      guard = s->extent < launched;
      if (used || guard)
        line("const " + idx_ + " " + v + " = " +
             (launched == 1 ? std::string("0") : "(" + idx_ + ")" + d_.block_index(dim)) + ";");
      if (guard) {
        line("if (" + v + " < " + std::to_string(s->extent) + ") {");
        ++indent_;
      }
    } else if (!looped) {
      if (used) line("const " + idx_ + " " + v + " = 0;");
    } else {
      line("for (" + idx_ + " " + v + " = 0; " + v + " < " + std::to_string(s->extent) + "; ++" +
           v + ") {");
      ++indent_;
    }
    if (s.get() == producer_->pipeline) {
      // Iteration k fetches tile k + S - 1 into its slot (software_pipeline.h): the consumers
      // handed that slot back after the tile `slots` before it (the wait passes at once on a
      // slot's first use, whose earlier phase counts as complete).
      const int64_t ahead = producer_->stages - 1;
      const std::string tile = "(" + v + " + " + std::to_string(ahead) + ")";
      const std::string slots = std::to_string(tma_slots_);
      line("if (" + v + " < " + std::to_string(s->extent - ahead) + ") " +
           d_.tma_producer_wait("&" + empty_bar_ + "[" + tile + " % " + slots + "]",
                                "(unsigned)(((" + tile + " / " + slots + ") % 2) ^ 1)") +
           ";");
    }
    producer_stmt(s->body);
    if (guard || looped) {
      --indent_;
      line("}");
    }
    --indent_;
    line("}");
  }

  // A consumer's pipelined iteration: wait for the tile, multiply, and hand back the slot of
  // the products now complete (those of `spare` iterations ago stay in flight).
  void consumer_body(const std::vector<P::Stmt>& items, Accesses& pending, const std::string& var) {
    const std::string slots = std::to_string(tma_slots_);
    line(d_.tma_wait("&" + tma_bar_ + "[" + var + " % " + slots + "]",
                     "(unsigned)((" + var + " / " + slots + ") % 2)") +
         ";");
    // The consumers read nothing in shared memory but the tiles the mbarriers order.
    pending = Accesses{};
    group_fenced_ = false;
    if (group_ops_ && d_.has_tensor_cores()) accumulator_fences();
    group_mma_fence();
    seq(std::vector<P::Stmt>(items.begin() + 1, items.end()), pending, true);
    commit_group_mmas();
    const int64_t spare = producer_->spare;
    line(d_.group_mma_wait(spare));
    // One thread a warpgroup: a wgmma group is the warpgroup's, complete for all of its threads
    // once the wait returns in one (CUTLASS's consumer release signals likewise), and one
    // arrival costs an atomic where 128 would cost 128.
    const std::string done = spare ? "(" + var + " - " + std::to_string(spare) + ")" : var;
    const std::string first = d_.thread_index(0) + " == 0";
    line("if (" + (spare ? var + " >= " + std::to_string(spare) + " && " : std::string()) + first +
         ") " + d_.tma_release("&" + empty_bar_ + "[" + done + " % " + slots + "]") + ";");
  }

  struct TensorMap {
    std::string name;
    TensorMapSpec spec;
  };

  TensorMap tensor_map(const TmaCopy& c) {
    TensorMap m;
    m.name = "mt_tmap_" + buffer_name(c.global);
    const P::BufferNode& g = *c.global;
    for (size_t i = 0; i < plan_.buffers.size(); ++i)
      if (plan_.buffers[i]->id == g.id) m.spec.buffer = i;
    m.spec.bf16 = g.dtype.kind == P::DTypeKind::BFloat;
    const size_t rank = g.shape.size();
    uint64_t stride = static_cast<uint64_t>(g.dtype.bits / 8);
    for (size_t k = 0; k < rank; ++k) {
      const size_t d = rank - 1 - k; // innermost first
      m.spec.dims.push_back(static_cast<uint64_t>(g.shape[d]));
      if (k) m.spec.strides_bytes.push_back(stride);
      stride *= static_cast<uint64_t>(g.shape[d]);
      m.spec.box.push_back(k == 0                             ? uint32_t{kTmaBoxCols}
                           : static_cast<int>(d) == c.row_dim ? static_cast<uint32_t>(c.rows)
                                                              : 1u);
    }
    return m;
  }

  // The barriers' initialisation, once at the kernel's start by one thread, before any thread
  // waits on them or a copy counts on them.
  void init_tma_barriers() {
    if (tma_copies_.empty() || !d_.has_tma()) return;
    const std::string leader = leader_condition();
    if (!leader.empty()) line("if (" + leader + ") {");
    ++indent_;
    for (int64_t i = 0; i < tma_slots_; ++i)
      line(d_.tma_barrier_init("&" + tma_bar_ + "[" + std::to_string(i) + "]", tma_arrivals_) +
           ";");
    // Each consumer warpgroup hands each slot back (warp specialisation).
    if (producer_)
      for (int64_t i = 0; i < tma_slots_; ++i)
        line(d_.tma_barrier_init("&" + empty_bar_ + "[" + std::to_string(i) + "]",
                                 kernel_.dims.block[1]) +
             ";");
    line(d_.tma_barrier_init_fence() + ";");
    --indent_;
    if (!leader.empty()) line("}");
    line(d_.barrier());
  }

  // Thread (0, 0, 0) of the block.
  std::string leader_condition() const {
    std::string out;
    for (int d = 0; d < 3; ++d)
      if (kernel_.dims.block[d] > 1)
        out += (out.empty() ? "" : " && ") + d_.thread_index(d) + " == 0";
    return out;
  }

  // A fetch nest as its TMA box copies: issued by one thread, each box's coordinates and
  // shared-memory start the nest's indices at the box's first element. A dialect without TMA
  // gets the same boxes copied by every thread of the block, element (r, c) of a box to where
  // TMA's 128-byte swizzle puts it -- written here from that definition, apart from the layout
  // wgmma reads (tensor_op.h), so that PoCL checks the two against each other and the
  // boxes against the nest.
  void tma_copy(const P::Stmt& loop, const TmaCopy& c, Accesses& pending) {
    const bool hw = d_.has_tma();
    line(std::string("{ // ") + (hw ? "TMA" : "TMA emulated") + ": " + buffer_name(c.global) +
         " -> " + buffer_name(c.shared) + ", " + std::to_string(c.boxes.size()) + " box(es) of " +
         std::to_string(c.rows) + " x " + std::to_string(kTmaBoxCols));
    ++indent_;
    const std::string leader = leader_condition();
    // The producer warpgroup runs its copies in one thread already.
    const bool guarded = hw && !leader.empty() && !in_producer_;
    if (guarded) {
      line("if (" + leader + ") {");
      ++indent_;
    }
    for (size_t j = 0; j < c.boxes.size(); ++j) {
      line("{");
      ++indent_;
      // The nest's variables at the box's first element: its indices are then the box's.
      for (const auto& v : c.vars)
        line("const " + idx_ + " " + var_name(v) + " = " +
             std::to_string(c.boxes[j].first.at(v->var_id)) + ";");
      if (hw)
        issue_tma_box(c, j == 0);
      else
        emulate_tma_box(c);
      --indent_;
      line("}");
    }
    if (guarded) {
      --indent_;
      line("}");
    }
    --indent_;
    line("}");
    pending.merge(accesses(loop));
  }

  // One box's copy, counted on the slot's barrier; the first box of a fetch also expects the
  // whole fetch's bytes there (with this thread's arrival).
  void issue_tma_box(const TmaCopy& c, bool expect) {
    const std::vector<P::Expr>& gi = c.store->value->args;
    const std::string bar = "&" + tma_bar_ + "[" + bare(c.store->indices[0]) + "]";
    if (expect) line(d_.tma_expect(bar, c.bytes()) + ";");
    std::vector<std::string> coords;
    for (size_t k = gi.size(); k-- > 0;) // innermost first
      coords.push_back("(int)(" + bare(gi[k]) + ")");
    line(d_.tma_load("&" + buffer_name(c.shared) + "[" + flat_index(c.shared, c.store->indices) +
                         "]",
                     tensor_maps_.at(c.global->id).name, coords, bar) +
         ";");
  }

  // One box copied by every thread of the block, element (r, c) from G[origin + (r, c)] to
  // the box's start + r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8: TMA's 128-byte swizzle.
  void emulate_tma_box(const TmaCopy& c) {
    const std::vector<P::Expr>& gi = c.store->value->args;
    const size_t rank = gi.size();
    std::string tid;
    int64_t below = 1;
    for (int d = 0; d < 3; ++d) {
      if (kernel_.dims.block[d] <= 1) continue;
      tid += (tid.empty() ? "" : " + ") + std::string("(") + idx_ + ")" + d_.thread_index(d) +
             (below > 1 ? " * " + std::to_string(below) : "");
      below *= kernel_.dims.block[d];
    }
    if (tid.empty()) tid = "0";
    const std::string e = fresh("mt_e"), r = fresh("mt_r"), col = fresh("mt_c");
    const std::string cols = std::to_string(kTmaBoxCols);
    line("for (" + idx_ + " " + e + " = " + tid + "; " + e + " < " +
         std::to_string(c.rows * kTmaBoxCols) + "; " + e +
         " += " + std::to_string(kernel_.dims.threads_per_block()) + ") {");
    ++indent_;
    line("const " + idx_ + " " + r + " = " + e + " / " + cols + ", " + col + " = " + e + " % " +
         cols + ";");
    std::string g;
    int64_t stride = 1;
    for (size_t d = rank; d-- > 0;) {
      const std::string step = d == rank - 1                      ? " + " + col
                               : static_cast<int>(d) == c.row_dim ? " + " + r
                                                                  : std::string();
      g = "(" + expr(gi[d]) + step + ")" + (stride > 1 ? " * " + std::to_string(stride) : "") +
          (g.empty() ? "" : " + ") + g;
      stride *= c.global->shape[d];
    }
    const std::string s = "(" + flat_index(c.shared, c.store->indices) + ") + " + r + " * " + cols +
                          " + (((" + col + " / 8) ^ (" + r + " % 8)) * 8) + " + col + " % 8";
    line(write_element(c.shared, s, read_element(c.global, g)) + ";");
    --indent_;
    line("}");
  }

  // ---- tensor cores (tensor_op.h) --------------------------------------------------------------
  // Every marked nest of the kernel recognised up front (the fragments' declarations need
  // their roles and layouts), with what the hardware requires of the kernel checked whether
  // or not the dialect has tensor cores: the emulation accepts exactly the programs the
  // instructions would run.
  void find_tensor_ops() {
    std::vector<P::Stmt> loops;
    std::unordered_set<const P::StmtNode*> inside;
    P::visit_stmts(kernel_.body, [&](const P::Stmt& x) {
      if (x->kind == StmtKind::For && x->annotations.count(P::kTensorIntrinsicAnnotation)) {
        loops.push_back(x);
        P::visit_stmts(x, [&](const P::Stmt& y) {
          inside.insert(y.get());
          return true;
        });
        return false;
      }
      return true;
    });
    for (const auto& l : loops) {
      tensor_ops_.push_back(match_tensor_op(l));
      P::visit_stmts(l, [&](const P::Stmt& y) {
        if (y->kind == StmtKind::For) tensor_nest_vars_.insert(y->loop_var->var_id);
        return true;
      });
    }
    frag_info_ = fragment_infos(tensor_ops_);
    for (size_t i = 0; i < loops.size(); ++i)
      op_of_loop_[loops[i].get()] = i;
    // A fragment is opaque to the threads that hold it: only the operations touch it.
    auto loads_fragment = [](const P::Expr& e) {
      bool found = false;
      if (e)
        P::post_order_visit(e, [&](const P::Expr& x) {
          if (x->kind == ExprKind::Load && is_fragment_scope(x->buffer->scope)) found = true;
        });
      return found;
    };
    P::visit_stmts(kernel_.body, [&](const P::Stmt& x) {
      bool touches = loads_fragment(x->condition) || loads_fragment(x->value);
      for (const auto& i : x->indices)
        touches = touches || loads_fragment(i);
      if (x->kind == StmtKind::Store && is_fragment_scope(x->buffer->scope)) touches = true;
      if (touches && !inside.count(x.get()))
        throw UnsupportedError("`" + describe(x) +
                               "` touches a tensor-core fragment outside the fragment operations");
      return true;
    });
    if (tensor_ops_.empty()) return;
    for (const TensorOp& op : tensor_ops_)
      group_ops_ = group_ops_ || op.unit == TensorUnit::Warpgroup;
    const int64_t lanes = group_ops_ ? kWarpgroupThreads : 32;
    for (const TensorOp& op : tensor_ops_)
      if ((op.unit == TensorUnit::Warpgroup) != group_ops_)
        throw UnsupportedError("a kernel with both warp (wmma) and warpgroup (wgmma) operations");
    if (kernel_.dims.block[0] != lanes)
      throw UnsupportedError(std::string(group_ops_ ? "warpgroup operations need one warpgroup "
                                                      "along threadIdx.x (128 threads), not "
                                                    : "tensor-core operations need one warp "
                                                      "along threadIdx.x (32 threads), not ") +
                             std::to_string(kernel_.dims.block[0]));
    core_matrix_ = core_matrix_operands(tensor_ops_);
    if (d_.has_tensor_cores())
      for (const auto& [id, layout] : core_matrix_)
        fragment_memory_.insert(id);
    for (const TensorOp& op : tensor_ops_) {
      if (!op.mem.buffer) continue;
      const P::Buffer& m = op.mem.buffer;
      if (!global_ids_.count(m->id) && m->scope != "shared")
        throw UnsupportedError("a tensor-core fragment loaded from or stored to '" + m->name +
                               "' (scope " + m->scope + "), not device or shared memory");
      if (!memory_tile_aligned(op.mem))
        throw UnsupportedError("a tensor-core tile of '" + m->name +
                               "' that is not aligned to 16 elements");
      if (d_.has_tensor_cores() && m->scope == "shared") fragment_memory_.insert(m->id);
    }
  }

  // The fragments of an Allocate, declared as the dialect's fragment array.
  void fragments(const P::Stmt& alloc, Accesses& pending, bool uniform) {
    const P::Buffer& b = alloc->buffer;
    auto info = frag_info_.find(b->id);
    if (info == frag_info_.end())
      throw UnsupportedError("the fragment '" + b->name + "' is not used by any operation");
    if (vt_) throw UnsupportedError("tensor-core fragments under a vthread loop");
    line("{");
    ++indent_;
    if (info->second.unit == TensorUnit::Warpgroup)
      line(d_.group_accumulator_array(buffer_name(b), info->second.count * info->second.cols / 2));
    else
      line(d_.fragment_array(info->second.role, b->dtype, info->second.col_major, buffer_name(b),
                             info->second.count));
    stmt(alloc->body, pending, uniform);
    --indent_;
    line("}");
  }

  void tensor_op(const P::Stmt& loop, Accesses& pending, bool uniform) {
    const TensorOp& op = tensor_ops_.at(op_of_loop_.at(loop.get()));
    // The warp's 32 lanes execute the operation together, with the same operands.
    if (!uniform || active_tags_.count("threadIdx.x") || vt_ || active_xr_)
      throw UnsupportedError(op.name +
                             " under thread-dependent control flow, inside a loop "
                             "bound to threadIdx.x, a vthread or a cross-thread reduction: "
                             "a warp must execute it together");
    if (!d_.has_tensor_cores()) {
      in_tensor_op_ = true;
      serial_loop(loop, pending, uniform);
      in_tensor_op_ = false;
      return;
    }
    used_helpers_.insert(kTensorCores);
    used_helpers_.insert(kF16);
    if (op.unit == TensorUnit::Warpgroup) {
      group_op(op);
      pending.merge(accesses(loop));
      return;
    }
    auto frag = [&](const Tile& t) {
      return buffer_name(t.buffer) + "[" + bare(fragment_index(t)) + "]";
    };
    auto pointer = [&](const Tile& t) {
      return "&" + buffer_name(t.buffer) + "[" + row_major_index(t.buffer, t.base) + "]";
    };
    switch (op.kind) {
    case TensorOpKind::Fill:
      line(d_.fill_fragment(frag(op.frag), float_literal(op.fill, P::DType::f32())));
      break;
    case TensorOpKind::LoadA:
    case TensorOpKind::LoadB:
      line(d_.load_fragment(frag(op.frag), pointer(op.mem), op.frag.buffer->dtype,
                            memory_layout(op.mem).ld));
      break;
    case TensorOpKind::Mma:
      line(d_.mma(frag(op.frag), frag(op.a), frag(op.b)));
      break;
    case TensorOpKind::Store: {
      MemoryLayout l = memory_layout(op.mem);
      line(d_.store_fragment(pointer(op.mem), frag(op.frag), l.ld, l.col_major));
      break;
    }
    }
    pending.merge(accesses(loop));
  }

  // A warpgroup operation (wgmma, sm_90a). Each thread of the warpgroup holds cols / 2 floats
  // of a 64 x cols accumulator tile: warp w rows 16w to 16w + 15; per 8 columns j, values
  // (row, 2 columns) and (row + 8, the same 2) with row = 16w + lane / 4, columns 8j + 2 (lane
  // % 4) -- mma.sync's m16n8 accumulator, four warps high.
  void group_op(const TensorOp& op) {
    used_helpers_.insert(kGroupMma);
    const int64_t per_tile = op.cols / 2;
    // The accumulator tile's first register, a constant once the tiles' loops are unrolled.
    auto first_register = [&](const Tile& t) {
      return "(" + bare(group_tile_index(t, op.cols)) + ") * " + std::to_string(per_tile);
    };
    const std::string acc = buffer_name(op.frag.buffer);
    switch (op.kind) {
    case TensorOpKind::Fill: {
      std::string r = fresh("mt_r");
      line(d_.unroll_pragma());
      line("for (int " + r + " = 0; " + r + " < " + std::to_string(per_tile) + "; ++" + r + ") " +
           acc + "[" + first_register(op.frag) + " + " + r +
           "] = " + float_literal(op.fill, P::DType::f32()) + ";");
      group_fenced_ = false;
      break;
    }
    case TensorOpKind::Mma: {
      auto descriptor = [&](const Tile& t, bool is_a, bool* transposed) {
        GroupOperand g = group_operand(t, is_a, core_matrix_.at(t.buffer->id));
        *transposed = !g.k_major;
        return d_.group_mma_descriptor("&" + buffer_name(t.buffer) + "[" +
                                           row_major_index(t.buffer, t.base) + "]",
                                       g.lbo_bytes, g.sbo_bytes, g.swizzle128);
      };
      bool trans_a = false, trans_b = false;
      std::string da = descriptor(op.a, true, &trans_a), db = descriptor(op.b, false, &trans_b);
      if (!group_fenced_) line(d_.group_mma_fence());
      group_fenced_ = true;
      line(d_.group_mma(acc, first_register(op.frag), op.cols, da, db, trans_a, trans_b,
                        op.a.buffer->dtype));
      group_uncommitted_ = true;
      break;
    }
    case TensorOpKind::Store: {
      commit_group_mmas();
      line(d_.group_mma_wait(0) + " // the accumulator is read next");
      group_fenced_ = false;
      {
        std::string r = fresh("mt_r");
        line(d_.unroll_pragma());
        line("for (int " + r + " = 0; " + r + " < " + std::to_string(per_tile) + "; ++" + r + ") " +
             d_.register_fence(acc + "[" + first_register(op.frag) + " + " + r + "]"));
      }
      MemoryLayout l = memory_layout(op.mem);
      const std::string base = "&" + buffer_name(op.mem.buffer) + "[" +
                               row_major_index(op.mem.buffer, op.mem.base) + "]";
      std::string p = fresh("mt_c"), w = fresh("mt_w"), ln = fresh("mt_l"), j = fresh("mt_j");
      std::string row = fresh("mt_row"), col = fresh("mt_col");
      line("{");
      ++indent_;
      line(d_.type_name(op.mem.buffer->dtype) + "* " + p + " = " + base + ";");
      line("const int " + w + " = (int)" + d_.thread_index(0) + " / 32, " + ln + " = (int)" +
           d_.thread_index(0) + " % 32;");
      line(d_.unroll_pragma());
      line("for (int " + j + " = 0; " + j + " < " + std::to_string(op.cols / 8) + "; ++" + j +
           ") {");
      ++indent_;
      line("const int " + row + " = 16 * " + w + " + " + ln + " / 4, " + col + " = 8 * " + j +
           " + (" + ln + " % 4) * 2;");
      const std::string ld = std::to_string(l.ld);
      auto at = [&](const std::string& r, const std::string& c) {
        return l.col_major ? p + "[(" + r + ") + (" + c + ") * " + ld + "]"
                           : p + "[(" + r + ") * " + ld + " + (" + c + ")]";
      };
      const std::string reg = acc + "[" + first_register(op.frag) + " + 4 * " + j + " + ";
      // A thread's two neighbouring columns as one 8-byte store where they are 8-byte aligned:
      // an f32 row-major tile starting at a multiple of 16 elements, with rows of whole 16
      // bytes (memory_tile_aligned), and an even column.
      const std::string pair0 =
          !l.col_major && memory_tile_aligned(op.mem) && op.mem.buffer->dtype == P::DType::f32()
              ? d_.f32_pair_store("&" + at(row, col), reg + "0]", reg + "1]")
              : std::string();
      if (!pair0.empty()) {
        line(pair0 + ";");
        line(d_.f32_pair_store("&" + at(row + " + 8", col), reg + "2]", reg + "3]") + ";");
      } else {
        line(at(row, col) + " = " + reg + "0];");
        line(at(row, col + " + 1") + " = " + reg + "1];");
        line(at(row + " + 8", col) + " = " + reg + "2];");
        line(at(row + " + 8", col + " + 1") + " = " + reg + "3];");
      }
      --indent_;
      line("}");
      --indent_;
      line("}");
      break;
    }
    default:
      throw UnsupportedError(op.name + ": not a warpgroup operation");
    }
  }

  // Which 64 x cols tile of a warpgroup accumulator `t` starts, in the buffer's row-major grid
  // of such tiles.
  P::Expr group_tile_index(const Tile& t, int64_t cols) {
    const auto& shape = t.buffer->shape;
    P::Expr flat = P::int_imm(0);
    for (size_t d = 0; d < shape.size(); ++d) {
      const bool rows = static_cast<int>(d) == t.row_dim,
                 columns = static_cast<int>(d) == t.col_dim;
      const int64_t unit = rows ? kGroupRows : columns ? cols : 1;
      if (shape[d] % unit != 0)
        throw UnsupportedError("the accumulator '" + t.buffer->name + "' is not a grid of 64 x " +
                               std::to_string(cols) + " tiles");
      flat = flat * P::int_imm(shape[d] / unit) +
             (unit == 1 ? t.base[d] : t.base[d] / P::int_imm(unit));
    }
    return flat;
  }

  void reduction_epilogue(const CrossThreadReduction& xr, const std::string& t, int dim) {
    static const char* tags[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
    for (int d = 0; d < 3; ++d)
      if (d != dim && kernel_.dims.block[d] > 1 && !active_tags_.count(tags[d]))
        throw UnsupportedError(std::string("a reduction across ") + tags[dim] +
                               " in a block that also has threads along " + tags[d] +
                               " outside it (each of them would apply the result)");
    if (expanded_.count(xr.buffer_id))
      throw UnsupportedError("a reduction across threads into an array of virtual threads");
    const P::Stmt& st = xr.update;
    const P::DType dt = st->buffer->dtype;
    std::string vals = fresh("mt_red_shared"), flags = fresh("mt_redflags_shared");
    scratch_.emplace_back(vals, type_of(dt), held_bytes(dt, false));
    scratch_.emplace_back(flags, "int", 4);
    const int64_t* b = kernel_.dims.block;
    std::string flat = "(" + d_.thread_index(0) + " + " + std::to_string(b[0]) + " * (" +
                       d_.thread_index(1) + " + " + std::to_string(b[1]) + " * " +
                       d_.thread_index(2) + "))";
    int64_t stride = dim == 0 ? 1 : dim == 1 ? b[0] : b[0] * b[1];
    int64_t n = b[dim], p2 = 1;
    while (p2 < n)
      p2 *= 2;
    std::string me = fresh("mt_lane"), base = fresh("mt_base");
    line("const int " + me + " = (int)" + flat + ";");
    line("const int " + base + " = " + me + " - (int)" + t + " * " + std::to_string(stride) + ";");
    line(d_.barrier());
    line(vals + "[" + me + "] = " + xr.red + ";");
    line(flags + "[" + me + "] = " + xr.flags + ";");
    line(d_.barrier());
    std::string s = fresh("mt_s");
    line("for (int " + s + " = " + std::to_string(p2 / 2) + "; " + s + " > 0; " + s + " >>= 1) {");
    ++indent_;
    line("if (" + t + " < " + s + " && " + t + " + " + s + " < " + std::to_string(n) + ") {");
    ++indent_;
    std::string other = me + " + " + s + " * " + std::to_string(stride);
    line(vals + "[" + me +
         "] = " + combine(xr.combiner, dt, vals + "[" + me + "]", vals + "[" + other + "]") + ";");
    line(flags + "[" + me + "] |= " + flags + "[" + other + "];");
    --indent_;
    line("}");
    line(d_.barrier());
    --indent_;
    line("}");
    std::string index = flat_index(st->buffer, st->indices);
    line(xr.broadcast ? "{" : "if (" + t + " == 0) {");
    ++indent_;
    if (static_cast<bool>(xr.init_value))
      line("if (" + flags + "[" + base + "] & 1) " +
           write_element(st->buffer, index, bare(xr.init_value)) + ";");
    line("if (" + flags + "[" + base + "] & 2) " +
         write_element(
             st->buffer, index,
             combine(xr.combiner, dt, read_element(st->buffer, index), vals + "[" + base + "]")) +
         ";");
    --indent_;
    line("}");
  }

  const KernelPlan& plan_;
  const Kernel& kernel_;
  const Dialect& d_;
  std::string idx_;
  std::set<std::string>& used_helpers_;
  std::ostringstream body_;
  int indent_ = 0;
  int counter_ = 0;
  std::unordered_map<int64_t, std::string> var_names_, buffer_names_;
  std::unordered_set<std::string> taken_;
  std::unordered_set<int64_t> global_ids_, private_, thread_vars_, scope_vars_;
  std::vector<P::Buffer> shared_;
  std::vector<std::tuple<std::string, std::string, int64_t>> scratch_; // name, type, bytes
  int64_t dynamic_shared_bytes_ = 0;
  // Thread tags whose loop encloses the current statement: the outermost loop's variable id and
  // extent.
  std::map<std::string, std::pair<int64_t, int64_t>> active_tags_;
  std::array<std::unordered_set<int64_t>, 3> thread_vars_by_dim_;
  std::unordered_map<const P::StmtNode*, Accesses> access_cache_;
  std::unordered_map<const P::StmtNode*, int64_t> xthread_targets_;
  std::unordered_set<const P::StmtNode*> in_registers_;
  CrossThreadReduction* active_xr_ = nullptr;
  struct VThread {
    P::Expr var;
    int64_t extent = 1;
    std::unordered_set<int64_t> inner_allocs;
    bool unrolled = false; // the loops over the virtual threads (vthread_loop)
  };
  static constexpr int64_t kVThreadRegisterWords = 128;
  std::optional<VThread> vt_;
  bool in_vloop_ = false;
  std::vector<P::Stmt> synthetic_;
  std::unordered_map<const P::StmtNode*, bool> vdepends_;
  std::unordered_map<int64_t, int64_t> expanded_; // buffer id -> elements per virtual thread
  std::vector<TensorOp> tensor_ops_;
  std::unordered_map<const P::StmtNode*, size_t> op_of_loop_;
  std::map<int64_t, FragmentInfo> frag_info_;
  std::unordered_set<int64_t> fragment_memory_;  // shared arrays fragments are loaded from
  std::unordered_set<int64_t> tensor_nest_vars_; // loop variables of the operations' nests
  bool group_ops_ = false;                       // the operations are a warpgroup's (wgmma)
  // Products (commit groups) that may stay in flight at a barrier: those of the spare slots'
  // iterations of the pipelined loop being written, 0 elsewhere.
  int64_t group_wait_depth_ = 0;
  bool group_uncommitted_ = false; // products written since the last commit
  bool group_fenced_ = false;      // a wgmma.fence since the accumulator was last touched
  std::map<int64_t, CoreMatrixLayout> core_matrix_; // shared arrays wgmma reads, their layouts

  std::unordered_map<const P::StmtNode*, TmaCopy> tma_copies_; // fetch nests copied by TMA
  int64_t tma_slots_ = 0, tma_arrivals_ = 0;       // the pipeline's slots; TMA copies a fetch
  std::string tma_bar_;                            // the slots' mbarriers
  bool tma_writes_every_operand_ = false;          // no thread writes a tile wgmma reads
  std::optional<ProducerPlan> producer_;           // warp specialisation (producer_warpgroup.h)
  std::string producer_why_;                       // why it was asked for and not done
  std::string empty_bar_;                          // the slots' "consumers are done" mbarriers
  bool in_producer_ = false, in_consumer_ = false; // writing that role's code
  std::map<int64_t, TensorMap> tensor_maps_;       // global buffer id -> its kernel parameter

  bool in_tensor_op_ = false;
  bool in_async_ = false; // under a fetch that lowering marked for asynchronous copies
};

// Helpers a kernel may call, spelled for the dialect, by name (only those used are emitted:
// NVRTC warns about an unused static function).
std::map<std::string, std::string> helpers(const Dialect& d, bool index32) {
  const std::string q = d.helper_qualifier() + " ";
  std::map<std::string, std::string> out;
  auto ints = [&](const std::string& suffix, const std::string& t) {
    auto fn = [&](const std::string& base, const std::string& params, const std::string& body) {
      std::string name = "mt_" + base + "_" + suffix;
      out[name] = q + t + " " + name + "(" + params + ") { " + body + " }\n";
    };
    std::string ab = t + " a, " + t + " b";
    fn("floordiv", ab, t + " q = a / b; return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;");
    fn("floormod", ab, t + " r = a % b; return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;");
    fn("min", ab, "return b < a ? b : a;");
    fn("max", ab, "return b > a ? b : a;");
    fn("abs", t + " a", "return a < 0 ? -a : a;");
  };
  // Unsigned: C's division and remainder are already floor ones.
  auto uints = [&](const std::string& suffix, const std::string& t) {
    auto fn = [&](const std::string& base, const std::string& params, const std::string& body) {
      std::string name = "mt_" + base + "_" + suffix;
      out[name] = q + t + " " + name + "(" + params + ") { " + body + " }\n";
    };
    std::string ab = t + " a, " + t + " b";
    fn("floordiv", ab, "return a / b;");
    fn("floormod", ab, "return a % b;");
    fn("min", ab, "return b < a ? b : a;");
    fn("max", ab, "return b > a ? b : a;");
    fn("abs", t + " a", "return a;");
  };
  for (int bits : {8, 16, 32, 64})
    uints("u" + std::to_string(bits),
          d.type_name(P::DType{P::DTypeKind::UInt, static_cast<uint8_t>(bits)}));
  ints("i8", d.type_name(P::DType::i8()));
  ints("i16", d.type_name(P::DType::i16()));
  ints("i32", d.type_name(P::DType::i32()));
  if (!index32) ints("i64", d.int64_type());
  for (auto [suffix, t] : {std::pair{"f32", P::DType::f32()}, std::pair{"f64", P::DType::f64()}}) {
    std::string ty = d.type_name(t);
    // NaN propagates, as in the reference interpreter: a read of unwritten (NaN) memory shows.
    for (auto [base, op] : {std::pair{"min", "<"}, std::pair{"max", ">"}}) {
      std::string name = std::string("mt_") + base + "_" + suffix;
      out[name] = q + ty + " " + name + "(" + ty + " a, " + ty + " b) { return (" + d.is_nan("a") +
                  " || " + d.is_nan("b") + ") ? " + d.nan(t) + " : (b " + op + " a ? b : a); }\n";
    }
  }
  // bf16 is the upper half of a float: conversions by bits, rounding to nearest even.
  std::string u16 = d.type_name(P::DType{P::DTypeKind::UInt, 16});
  std::string u32 = d.type_name(P::DType{P::DTypeKind::UInt, 32});
  std::string f32 = d.type_name(P::DType::f32());
  out["mt_bf16_to_f32"] = q + f32 + " mt_bf16_to_f32(" + u16 + " b) { return " +
                          d.bits_float("((" + u32 + ")b) << 16") + "; }\n";
  out["mt_f32_to_bf16"] =
      q + u16 + " mt_f32_to_bf16(" + f32 + " f) { " + u32 + " u = " + d.float_bits("f") +
      "; if ((u & 0x7fffffffu) > 0x7f800000u) return (" + u16 +
      ")((u >> 16) | 0x40u); u += 0x7fffu + ((u >> 16) & 1u); return (" + u16 + ")(u >> 16); }\n";
  out["mt_round_bf16"] =
      q + f32 + " mt_round_bf16(" + f32 + " f) { return mt_bf16_to_f32(mt_f32_to_bf16(f)); }\n";
  return out;
}

} // namespace

GpuSource write_kernels(const KernelPlan& plan, const Dialect& dialect) {
  GpuSource out;
  std::set<std::string> used;
  std::ostringstream kernels;
  for (const Kernel& k : plan.kernels) {
    KernelWriter writer(plan, k, dialect, used);
    kernels << writer.write() << "\n";
    out.kernel_names.push_back(k.name);
    out.dynamic_shared_bytes.push_back(writer.dynamic_shared_bytes());
    out.tensor_maps.push_back(writer.tensor_maps());
    out.launch_dims.push_back(writer.launch_dims());
  }
  std::ostringstream os;
  os << dialect.prologue();
  if (used.count(kF16)) os << dialect.f16_prologue();
  if (used.count(kTensorCores)) os << dialect.tensor_core_prologue();
  if (used.count(kGroupMma)) os << dialect.group_mma_prologue();
  if (used.count(kTma)) {
    std::vector<int64_t> ranks;
    for (int64_t rank = 2; rank <= 5; ++rank)
      if (used.count(kTmaOfRank + std::to_string(rank))) ranks.push_back(rank);
    os << dialect.tma_prologue(ranks);
    if (used.count(kTmaProducer)) os << dialect.tma_producer_prologue();
  }
  if (used.count(kAsyncCopies)) {
    std::vector<int64_t> sizes;
    for (int64_t bytes : {4, 8, 16})
      if (used.count(kAsyncCopyOf + std::to_string(bytes))) sizes.push_back(bytes);
    os << dialect.async_copy_prologue(sizes);
  }
  if (used.count("mt_round_bf16")) used.insert({"mt_bf16_to_f32", "mt_f32_to_bf16"});
  std::map<std::string, std::string> all = helpers(dialect, plan.index32);
  // Conversions first: mt_round_bf16 calls them.
  for (const char* first : {"mt_bf16_to_f32", "mt_f32_to_bf16"})
    if (used.count(first)) os << all.at(first);
  for (const std::string& name : used)
    if (all.count(name) && name != "mt_bf16_to_f32" && name != "mt_f32_to_bf16") os << all.at(name);
  os << "\n" << kernels.str();
  out.code = os.str();
  return out;
}

} // namespace mt::gpu_codegen

namespace mt::gpu_codegen {

void maybe_dump_source(const std::string& name, const std::string& code, const std::string& ext) {
  const char* dir = std::getenv("METATUNE_DUMP_GPU_SOURCE");
  if (!dir || !*dir) return;
  std::string path = std::string(dir) + "/" + name + "." + ext;
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fwrite(code.data(), 1, code.size(), f);
    std::fclose(f);
  }
}

} // namespace mt::gpu_codegen
