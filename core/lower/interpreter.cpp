#include "core/lower/interpreter.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "core/ir/printer.h"
#include "core/lower/lower.h"

namespace mt {

namespace {

// Run-time state of one execution: loop variable values by slot and the base address of every
// buffer by slot. Compiled closures only ever index these vectors.
struct Ctx {
  std::vector<int64_t> vars;
  std::vector<char*> bufs;
  std::vector<std::unique_ptr<void, void (*)(void*)>> storage;
};

using IFn = std::function<int64_t(Ctx&)>;
using FFn = std::function<double(Ctx&)>;
using SFn = std::function<void(Ctx&)>;

// The statement an expression belongs to, kept for error messages only.
struct Site {
  Stmt stmt;
  Expr expr; // the If condition when stmt is an If (printing the whole If would be too long)
};

struct VarSlots {
  std::vector<std::string> names;
  std::unordered_map<const ExprNode*, int> slot;
};

std::string describe(const Site& s) {
  if (s.stmt->kind == StmtKind::IfThenElse) return "if (" + print(s.expr) + ")";
  std::string text = print(s.stmt);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' '))
    text.pop_back();
  return text;
}

// "(i = 3, j = 4)": values of the loop variables the statement uses.
std::string var_values(const Site& s, const VarSlots& vars, const Ctx& c) {
  std::vector<Expr> roots;
  if (s.stmt->kind == StmtKind::Store) {
    auto* n = as<StoreNode>(s.stmt);
    roots = n->indices;
    roots.push_back(n->value);
  } else {
    roots.push_back(s.expr);
  }
  std::string out;
  std::unordered_set<const ExprNode*> seen;
  for (const Expr& r : roots)
    post_order_visit(r, [&](const Expr& x) {
      if (x->kind != ExprKind::Var || !seen.insert(x.get()).second) return;
      auto it = vars.slot.find(x.get());
      if (it == vars.slot.end()) return;
      out += (out.empty() ? "" : ", ") + x->name + " = " + std::to_string(c.vars[it->second]);
    });
  return out.empty() ? "" : " (" + out + ")";
}

std::string list(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// ---- per-dtype value semantics ---------------------------------------------------------------

template <typename T> struct WrapTo {
  int64_t operator()(int64_t v) const { return static_cast<int64_t>(static_cast<T>(v)); }
};
struct WrapBool {
  int64_t operator()(int64_t v) const { return v != 0; }
};

template <typename F> auto with_int_wrap(DType t, F&& f) {
  if (t.is_bool()) return f(WrapBool{});
  bool u = t.kind == DTypeKind::UInt;
  switch (t.bits) {
  case 8:
    return u ? f(WrapTo<uint8_t>{}) : f(WrapTo<int8_t>{});
  case 16:
    return u ? f(WrapTo<uint16_t>{}) : f(WrapTo<int16_t>{});
  case 32:
    return u ? f(WrapTo<uint32_t>{}) : f(WrapTo<int32_t>{});
  case 64:
    return f(WrapTo<int64_t>{});
  }
  throw InterpreterError("interpreter: unsupported integer dtype " + to_string(t));
}

// Float formats: `T` is the type arithmetic is carried out in, `round` brings a result to
// the dtype. f16/bf16 compute in float and round once, which is exact for + - * / because
// float has more than twice their precision.
struct FmtF32 {
  using T = float;
  static double round(double v) { return static_cast<float>(v); }
};
struct FmtF64 {
  using T = double;
  static double round(double v) { return v; }
};
struct FmtF16 {
  using T = float;
  static double round(double v) { return round_to_dtype(v, DType::f16()); }
};
struct FmtBF16 {
  using T = float;
  static double round(double v) { return round_to_dtype(v, DType::bf16()); }
};

template <typename F> auto with_float_fmt(DType t, F&& f) {
  if (t.kind == DTypeKind::Float && t.bits == 32) return f(FmtF32{});
  if (t.kind == DTypeKind::Float && t.bits == 64) return f(FmtF64{});
  if (t.kind == DTypeKind::Float && t.bits == 16) return f(FmtF16{});
  if (t.kind == DTypeKind::BFloat && t.bits == 16) return f(FmtBF16{});
  throw InterpreterError("interpreter: unsupported float dtype " + to_string(t));
}

int64_t float_to_int(double v) {
  if (std::isnan(v)) return 0;
  v = std::trunc(v);
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

int64_t floordiv_i(int64_t a, int64_t b) {
  if (b == -1) return static_cast<int64_t>(0 - static_cast<uint64_t>(a)); // no INT64_MIN trap
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floormod_i(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

// Typed element access. Floats are read to double exactly, integers to int64.
template <typename C> double load_f(const char* p) {
  return static_cast<double>(*reinterpret_cast<const C*>(p));
}
double load_f16(const char* p) {
  return half_bits_to_double(*reinterpret_cast<const uint16_t*>(p));
}
double load_bf16(const char* p) {
  return bf16_bits_to_double(*reinterpret_cast<const uint16_t*>(p));
}
template <typename C> int64_t load_i(const char* p) {
  return static_cast<int64_t>(*reinterpret_cast<const C*>(p));
}
int64_t load_bool(const char* p) {
  return *reinterpret_cast<const uint8_t*>(p) != 0;
}

template <typename C> void store_f(char* p, double v) {
  *reinterpret_cast<C*>(p) = static_cast<C>(v);
}
void store_f16(char* p, double v) {
  *reinterpret_cast<uint16_t*>(p) = float_to_half_bits(v);
}
void store_bf16(char* p, double v) {
  *reinterpret_cast<uint16_t*>(p) = float_to_bf16_bits(v);
}
template <typename C> void store_i(char* p, int64_t v) {
  *reinterpret_cast<C*>(p) = static_cast<C>(v);
}
void store_bool(char* p, int64_t v) {
  *reinterpret_cast<uint8_t*>(p) = v != 0;
}

using LoadF = double (*)(const char*);
using LoadI = int64_t (*)(const char*);
using StoreF = void (*)(char*, double);
using StoreI = void (*)(char*, int64_t);

StoreF float_storer(DType t) {
  if (t.kind == DTypeKind::Float && t.bits == 32) return store_f<float>;
  if (t.kind == DTypeKind::Float && t.bits == 64) return store_f<double>;
  if (t.kind == DTypeKind::Float && t.bits == 16) return store_f16;
  if (t.kind == DTypeKind::BFloat && t.bits == 16) return store_bf16;
  throw InterpreterError("interpreter: unsupported float dtype " + to_string(t));
}

// Bytes that uninitialised storage is filled with: quiet NaN for floats so that reading an
// element no statement wrote poisons the result, 0x5A for integers.
std::vector<char> poison_pattern(const Buffer& b) {
  size_t n = static_cast<size_t>(b->num_elements()) * b->dtype.bytes();
  std::vector<char> bytes(n, 0x5A);
  if (b->dtype.is_float()) {
    StoreF st = float_storer(b->dtype);
    for (size_t off = 0; off < n; off += b->dtype.bytes())
      st(bytes.data() + off, std::numeric_limits<double>::quiet_NaN());
  }
  return bytes;
}

void* aligned_storage(size_t bytes) {
  size_t n = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, n ? n : 64);
  if (!p) throw std::bad_alloc();
  return p;
}

// The bounds-checked flat offset of one access. Affine indices (the common case) are evaluated
// from their terms directly; other indices call closures.
struct AccessOffset {
  static constexpr int kMaxTerms = 4;
  struct Dim {
    int nterms = 0; // affine: constant + sum of coeff[t] * vars[slot[t]]
    int slot[kMaxTerms] = {};
    int64_t coeff[kMaxTerms] = {};
    int64_t constant = 0;
    int fn = -1; // into `fns` when the index is not affine (or has too many terms)
    int64_t extent = 0, stride = 0;
  };
  std::vector<Dim> dims;
  std::vector<IFn> fns;
  std::function<void(Ctx&)> fail; // throws the out-of-bounds error

  int64_t operator()(Ctx& c) const {
    const int64_t* vars = c.vars.data();
    int64_t off = 0;
    for (const Dim& d : dims) {
      int64_t v;
      if (d.fn >= 0) {
        v = fns[d.fn](c);
      } else {
        v = d.constant;
        for (int t = 0; t < d.nterms; ++t)
          v += d.coeff[t] * vars[d.slot[t]];
      }
      if (static_cast<uint64_t>(v) >= static_cast<uint64_t>(d.extent)) fail(c);
      off += v * d.stride;
    }
    return off;
  }
};

template <LoadF LD> FFn float_load(AccessOffset off, int slot, int64_t size) {
  return [off = std::move(off), slot, size](Ctx& c) { return LD(c.bufs[slot] + off(c) * size); };
}
template <LoadI LD> IFn int_load(AccessOffset off, int slot, int64_t size) {
  return [off = std::move(off), slot, size](Ctx& c) { return LD(c.bufs[slot] + off(c) * size); };
}
template <StoreF ST> SFn float_store(AccessOffset off, int slot, int64_t size, FFn v) {
  return [off = std::move(off), slot, size, v](Ctx& c) {
    double x = v(c);
    ST(c.bufs[slot] + off(c) * size, x);
  };
}
template <StoreI ST> SFn int_store(AccessOffset off, int slot, int64_t size, IFn v) {
  return [off = std::move(off), slot, size, v](Ctx& c) {
    int64_t x = v(c);
    ST(c.bufs[slot] + off(c) * size, x);
  };
}

FFn make_float_load(DType t, AccessOffset off, int slot) {
  int64_t n = t.bytes();
  if (t.kind == DTypeKind::Float && t.bits == 32)
    return float_load<load_f<float>>(std::move(off), slot, n);
  if (t.kind == DTypeKind::Float && t.bits == 64)
    return float_load<load_f<double>>(std::move(off), slot, n);
  if (t.kind == DTypeKind::Float && t.bits == 16)
    return float_load<load_f16>(std::move(off), slot, n);
  if (t.kind == DTypeKind::BFloat && t.bits == 16)
    return float_load<load_bf16>(std::move(off), slot, n);
  throw InterpreterError("interpreter: unsupported float dtype " + to_string(t));
}
IFn make_int_load(DType t, AccessOffset off, int slot) {
  int64_t n = t.bytes();
  if (t.is_bool()) return int_load<load_bool>(std::move(off), slot, n);
  bool u = t.kind == DTypeKind::UInt;
  switch (t.bits) {
  case 8:
    return u ? int_load<load_i<uint8_t>>(std::move(off), slot, n)
             : int_load<load_i<int8_t>>(std::move(off), slot, n);
  case 16:
    return u ? int_load<load_i<uint16_t>>(std::move(off), slot, n)
             : int_load<load_i<int16_t>>(std::move(off), slot, n);
  case 32:
    return u ? int_load<load_i<uint32_t>>(std::move(off), slot, n)
             : int_load<load_i<int32_t>>(std::move(off), slot, n);
  case 64:
    return int_load<load_i<int64_t>>(std::move(off), slot, n);
  }
  throw InterpreterError("interpreter: unsupported integer dtype " + to_string(t));
}
SFn make_float_store(DType t, AccessOffset off, int slot, FFn v) {
  int64_t n = t.bytes();
  if (t.kind == DTypeKind::Float && t.bits == 32)
    return float_store<store_f<float>>(std::move(off), slot, n, v);
  if (t.kind == DTypeKind::Float && t.bits == 64)
    return float_store<store_f<double>>(std::move(off), slot, n, v);
  if (t.kind == DTypeKind::Float && t.bits == 16)
    return float_store<store_f16>(std::move(off), slot, n, v);
  if (t.kind == DTypeKind::BFloat && t.bits == 16)
    return float_store<store_bf16>(std::move(off), slot, n, v);
  throw InterpreterError("interpreter: unsupported float dtype " + to_string(t));
}
SFn make_int_store(DType t, AccessOffset off, int slot, IFn v) {
  int64_t n = t.bytes();
  if (t.is_bool()) return int_store<store_bool>(std::move(off), slot, n, v);
  switch (t.bits) {
  case 8:
    return int_store<store_i<uint8_t>>(std::move(off), slot, n, v);
  case 16:
    return int_store<store_i<uint16_t>>(std::move(off), slot, n, v);
  case 32:
    return int_store<store_i<uint32_t>>(std::move(off), slot, n, v);
  case 64:
    return int_store<store_i<uint64_t>>(std::move(off), slot, n, v);
  }
  throw InterpreterError("interpreter: unsupported integer dtype " + to_string(t));
}

struct BufSlot {
  Buffer buffer;
  std::vector<int64_t> strides;
};

struct Allocation {
  int buf_slot;
  std::vector<char> poison;
};

} // namespace

struct CompiledProgram::Impl {
  Function func;
  VarSlots vars;
  std::vector<BufSlot> bufs;
  std::unordered_map<const BufferNode*, int> buf_slot;
  std::deque<Allocation> allocations; // one per Allocate node (and per whole-call buffer)
  std::vector<int> whole_call;        // allocations live for the whole call
  std::deque<Site> sites;
  SFn body;

  // ---- compilation ---------------------------------------------------------------------------
  std::vector<bool> bound; // var slot currently inside its loop (compile time)
  std::vector<int> live;   // buffer slot has storage here: parameter or inside its Allocate

  int slot_of_buffer(const Buffer& b) {
    auto it = buf_slot.find(b.get());
    if (it != buf_slot.end()) return it->second;
    BufSlot s{b, std::vector<int64_t>(b->shape.size())};
    int64_t stride = 1;
    for (size_t d = b->shape.size(); d-- > 0;) {
      s.strides[d] = stride;
      stride *= b->shape[d];
    }
    bufs.push_back(std::move(s));
    live.push_back(0);
    int id = static_cast<int>(bufs.size()) - 1;
    buf_slot[b.get()] = id;
    return id;
  }

  int slot_of_var(const Expr& v) {
    auto it = vars.slot.find(v.get());
    if (it != vars.slot.end()) return it->second;
    int id = static_cast<int>(vars.names.size());
    vars.names.push_back(v->name);
    vars.slot[v.get()] = id;
    bound.push_back(false);
    return id;
  }

  [[noreturn]] void compile_error(const Site* site, const std::string& what) const {
    throw InterpreterError("interpret(" + func.name + "): " + what + " in statement `" +
                           describe(*site) + "`");
  }

  // Adds `scale * e` to an affine form over loop variable slots; false if `e` is not affine
  // (then the index is evaluated by closures instead).
  bool affine_terms(const Expr& e, int64_t scale, AccessOffset::Dim& dim,
                    std::vector<std::pair<int, int64_t>>& terms, const Site* site) {
    if (!(e->dtype == DType::i64())) return false;
    switch (e->kind) {
    case ExprKind::IntImm:
      dim.constant = int64_t(uint64_t(dim.constant) + uint64_t(scale) * uint64_t(e->int_value));
      return true;
    case ExprKind::Var: {
      int slot = slot_of_var(e);
      if (!bound[slot]) compile_error(site, "variable " + e->name + " is used outside of its loop");
      terms.emplace_back(slot, scale);
      return true;
    }
    case ExprKind::Add:
      return affine_terms(e->args[0], scale, dim, terms, site) &&
             affine_terms(e->args[1], scale, dim, terms, site);
    case ExprKind::Sub:
      return affine_terms(e->args[0], scale, dim, terms, site) &&
             affine_terms(e->args[1], int64_t(0 - uint64_t(scale)), dim, terms, site);
    case ExprKind::Mul: {
      int64_t k;
      if (is_const_int(e->args[1], &k))
        return affine_terms(e->args[0], int64_t(uint64_t(scale) * uint64_t(k)), dim, terms, site);
      if (is_const_int(e->args[0], &k))
        return affine_terms(e->args[1], int64_t(uint64_t(scale) * uint64_t(k)), dim, terms, site);
      return false;
    }
    default:
      return false;
    }
  }

  // Flat element offset of an access, bounds-checked per dimension.
  AccessOffset compile_offset(const Buffer& b, const std::vector<Expr>& indices, const Site* site,
                              const char* access) {
    int slot = slot_of_buffer(b);
    if (!live[slot])
      compile_error(site, std::string(access) + " of buffer " + b->name +
                              ", which is neither a parameter nor allocated here");
    if (indices.size() != b->shape.size())
      compile_error(site, std::string(access) + " of " + b->name + " with " +
                              std::to_string(indices.size()) + " indices for rank " +
                              std::to_string(b->shape.size()));
    AccessOffset off;
    std::vector<IFn> all; // every index as a closure, to report the values on failure
    for (size_t d = 0; d < indices.size(); ++d) {
      const Expr& i = indices[d];
      if (!i->dtype.is_int()) compile_error(site, "non-integer index of " + b->name);
      AccessOffset::Dim dim;
      dim.extent = b->shape[d];
      dim.stride = bufs[slot].strides[d];
      std::vector<std::pair<int, int64_t>> terms;
      all.push_back(compile_int(i, site));
      if (affine_terms(i, 1, dim, terms, site) && terms.size() <= AccessOffset::kMaxTerms) {
        for (const auto& [var, coeff] : terms) {
          dim.slot[dim.nterms] = var;
          dim.coeff[dim.nterms++] = coeff;
        }
      } else {
        dim.constant = 0;
        dim.fn = static_cast<int>(off.fns.size());
        off.fns.push_back(all.back());
      }
      off.dims.push_back(dim);
    }
    std::vector<int64_t> shape = b->shape;
    const VarSlots* var_slots = &vars;
    std::string fname = func.name;
    off.fail = [all, shape, site, var_slots, access, fname, b](Ctx& c) {
      std::vector<int64_t> values;
      for (const IFn& f : all)
        values.push_back(f(c));
      throw InterpreterError("interpret(" + fname + "): out-of-bounds " + access + " of buffer " +
                             b->name + ": indices " + list(values) + " outside shape " +
                             list(shape) + " in statement `" + describe(*site) + "`" +
                             var_values(*site, *var_slots, c));
    };
    return off;
  }

  FFn compile_float(const Expr& e, const Site* site) {
    if (!e) compile_error(site, "null expression");
    if (!e->dtype.is_float())
      compile_error(site, "expected a float expression, got " + to_string(e->dtype) + " `" +
                              print(e) + "`");
    DType t = e->dtype;
    switch (e->kind) {
    case ExprKind::FloatImm:
    case ExprKind::IntImm: {
      double v = e->kind == ExprKind::FloatImm ? e->float_value : double(e->int_value);
      v = round_to_dtype(v, t);
      return [v](Ctx&) { return v; };
    }
    case ExprKind::Load: {
      AccessOffset off = compile_offset(e->buffer, e->args, site, "load");
      return make_float_load(t, std::move(off), buf_slot.at(e->buffer.get()));
    }
    case ExprKind::Add:
      return float_binary(e, site, [](auto a, auto b) { return a + b; });
    case ExprKind::Sub:
      return float_binary(e, site, [](auto a, auto b) { return a - b; });
    case ExprKind::Mul:
      return float_binary(e, site, [](auto a, auto b) { return a * b; });
    case ExprKind::Div:
      return float_binary(e, site, [](auto a, auto b) { return a / b; });
    case ExprKind::Min:
    case ExprKind::Max: {
      FFn a = compile_float(e->args[0], site), b = compile_float(e->args[1], site);
      // NaN propagates so that a read of uninitialised (NaN-filled) data is never hidden.
      if (e->kind == ExprKind::Min)
        return [a, b](Ctx& c) {
          double x = a(c), y = b(c);
          return std::isnan(x) || std::isnan(y) ? std::numeric_limits<double>::quiet_NaN()
                                                : (y < x ? y : x);
        };
      return [a, b](Ctx& c) {
        double x = a(c), y = b(c);
        return std::isnan(x) || std::isnan(y) ? std::numeric_limits<double>::quiet_NaN()
                                              : (y > x ? y : x);
      };
    }
    case ExprKind::Select: {
      IFn cond = compile_int(e->args[0], site);
      FFn a = compile_float(e->args[1], site), b = compile_float(e->args[2], site);
      return [cond, a, b](Ctx& c) { return cond(c) ? a(c) : b(c); };
    }
    case ExprKind::Cast: {
      const Expr& v = e->args[0];
      if (v->dtype.is_float()) {
        FFn a = compile_float(v, site);
        return with_float_fmt(t, [&](auto fmt) -> FFn {
          using Fmt = decltype(fmt);
          return [a](Ctx& c) { return Fmt::round(a(c)); };
        });
      }
      IFn a = compile_int(v, site);
      if (t == DType::f32()) return [a](Ctx& c) { return double(static_cast<float>(a(c))); };
      return with_float_fmt(t, [&](auto fmt) -> FFn {
        using Fmt = decltype(fmt);
        return [a](Ctx& c) { return Fmt::round(static_cast<double>(a(c))); };
      });
    }
    case ExprKind::Call:
      return float_call(e, site);
    default:
      break;
    }
    compile_error(site, std::string("cannot evaluate '") + to_string(e->kind) + "' as " +
                            to_string(t) + " in `" + print(e) + "`");
  }

  template <typename Op> FFn float_binary(const Expr& e, const Site* site, Op op) {
    FFn a = compile_float(e->args[0], site), b = compile_float(e->args[1], site);
    if (!(e->args[0]->dtype == e->dtype) || !(e->args[1]->dtype == e->dtype))
      compile_error(site, "operand types differ from result type in `" + print(e) + "`");
    return with_float_fmt(e->dtype, [&](auto fmt) -> FFn {
      using Fmt = decltype(fmt);
      using T = typename Fmt::T;
      return [a, b, op](Ctx& c) {
        return Fmt::round(static_cast<double>(op(static_cast<T>(a(c)), static_cast<T>(b(c)))));
      };
    });
  }

  FFn float_call(const Expr& e, const Site* site) {
    std::vector<FFn> args;
    for (const Expr& a : e->args)
      args.push_back(compile_float(a, site));
    MathFn fn = e->fn;
    return with_float_fmt(e->dtype, [&](auto fmt) -> FFn {
      using Fmt = decltype(fmt);
      using T = typename Fmt::T;
      FFn a = args.at(0);
      switch (fn) {
      case MathFn::Exp:
        return [a](Ctx& c) { return Fmt::round(std::exp(T(a(c)))); };
      case MathFn::Log:
        return [a](Ctx& c) { return Fmt::round(std::log(T(a(c)))); };
      case MathFn::Tanh:
        return [a](Ctx& c) { return Fmt::round(std::tanh(T(a(c)))); };
      case MathFn::Erf:
        return [a](Ctx& c) { return Fmt::round(std::erf(T(a(c)))); };
      case MathFn::Sqrt:
        return [a](Ctx& c) { return Fmt::round(std::sqrt(T(a(c)))); };
      case MathFn::Rsqrt:
        return [a](Ctx& c) { return Fmt::round(T(1) / std::sqrt(T(a(c)))); };
      case MathFn::Abs:
        return [a](Ctx& c) { return Fmt::round(std::fabs(T(a(c)))); };
      case MathFn::Sigmoid:
        return [a](Ctx& c) { return Fmt::round(T(1) / (T(1) + std::exp(-T(a(c))))); };
      case MathFn::Pow: {
        FFn b = args.at(1);
        return [a, b](Ctx& c) { return Fmt::round(std::pow(T(a(c)), T(b(c)))); };
      }
      }
      compile_error(site, "unknown math function");
    });
  }

  IFn compile_int(const Expr& e, const Site* site) {
    if (!e) compile_error(site, "null expression");
    DType t = e->dtype;
    if (!t.is_int() && !t.is_bool())
      compile_error(site,
                    "expected an integer expression, got " + to_string(t) + " `" + print(e) + "`");
    switch (e->kind) {
    case ExprKind::IntImm: {
      int64_t v = wrap_to_dtype(e->int_value, t);
      return [v](Ctx&) { return v; };
    }
    case ExprKind::FloatImm: {
      int64_t v = wrap_to_dtype(float_to_int(e->float_value), t);
      return [v](Ctx&) { return v; };
    }
    case ExprKind::Var: {
      int slot = slot_of_var(e);
      if (!bound[slot]) compile_error(site, "variable " + e->name + " is used outside of its loop");
      return [slot](Ctx& c) { return c.vars[slot]; };
    }
    case ExprKind::Load: {
      AccessOffset off = compile_offset(e->buffer, e->args, site, "load");
      return make_int_load(t, std::move(off), buf_slot.at(e->buffer.get()));
    }
    case ExprKind::Add:
      return int_binary(e, site,
                        [](int64_t a, int64_t b) { return int64_t(uint64_t(a) + uint64_t(b)); });
    case ExprKind::Sub:
      return int_binary(e, site,
                        [](int64_t a, int64_t b) { return int64_t(uint64_t(a) - uint64_t(b)); });
    case ExprKind::Mul:
      return int_binary(e, site,
                        [](int64_t a, int64_t b) { return int64_t(uint64_t(a) * uint64_t(b)); });
    case ExprKind::Min:
      return int_binary(e, site, [](int64_t a, int64_t b) { return b < a ? b : a; });
    case ExprKind::Max:
      return int_binary(e, site, [](int64_t a, int64_t b) { return b > a ? b : a; });
    case ExprKind::Div:
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod:
      return int_division(e, site);
    case ExprKind::EQ:
    case ExprKind::NE:
    case ExprKind::LT:
    case ExprKind::LE:
    case ExprKind::GT:
    case ExprKind::GE:
      return comparison(e, site);
    case ExprKind::And: {
      IFn a = compile_int(e->args[0], site), b = compile_int(e->args[1], site);
      return [a, b](Ctx& c) -> int64_t { return a(c) && b(c); };
    }
    case ExprKind::Or: {
      IFn a = compile_int(e->args[0], site), b = compile_int(e->args[1], site);
      return [a, b](Ctx& c) -> int64_t { return a(c) || b(c); };
    }
    case ExprKind::Not: {
      IFn a = compile_int(e->args[0], site);
      return [a](Ctx& c) -> int64_t { return !a(c); };
    }
    case ExprKind::Select: {
      IFn cond = compile_int(e->args[0], site);
      IFn a = compile_int(e->args[1], site), b = compile_int(e->args[2], site);
      return [cond, a, b](Ctx& c) { return cond(c) ? a(c) : b(c); };
    }
    case ExprKind::Cast: {
      const Expr& v = e->args[0];
      if (v->dtype.is_float()) {
        FFn a = compile_float(v, site);
        if (t.is_bool()) return [a](Ctx& c) -> int64_t { return a(c) != 0; };
        return with_int_wrap(t, [&](auto wrap) -> IFn {
          return [a, wrap](Ctx& c) { return wrap(float_to_int(a(c))); };
        });
      }
      IFn a = compile_int(v, site);
      return with_int_wrap(
          t, [&](auto wrap) -> IFn { return [a, wrap](Ctx& c) { return wrap(a(c)); }; });
    }
    case ExprKind::Call:
      if (e->fn == MathFn::Abs) {
        IFn a = compile_int(e->args[0], site);
        return with_int_wrap(t, [&](auto wrap) -> IFn {
          return [a, wrap](Ctx& c) {
            int64_t v = a(c);
            return wrap(v < 0 ? int64_t(0 - uint64_t(v)) : v);
          };
        });
      }
      compile_error(site, std::string("math function ") + to_string(e->fn) + " on integer type " +
                              to_string(t));
    default:
      break;
    }
    compile_error(site, std::string("cannot evaluate '") + to_string(e->kind) + "' as " +
                            to_string(t) + " in `" + print(e) + "`");
  }

  template <typename Op> IFn int_binary(const Expr& e, const Site* site, Op op) {
    IFn a = compile_int(e->args[0], site), b = compile_int(e->args[1], site);
    return with_int_wrap(e->dtype, [&](auto wrap) -> IFn {
      return [a, b, op, wrap](Ctx& c) { return wrap(op(a(c), b(c))); };
    });
  }

  IFn int_division(const Expr& e, const Site* site) {
    IFn a = compile_int(e->args[0], site), b = compile_int(e->args[1], site);
    bool mod = e->kind == ExprKind::FloorMod;
    const VarSlots* var_slots = &vars;
    std::string fname = func.name, text = print(e);
    auto fail = [site, var_slots, fname, text](Ctx& c) {
      throw InterpreterError("interpret(" + fname + "): division by zero in `" + text +
                             "` in statement `" + describe(*site) + "`" +
                             var_values(*site, *var_slots, c));
    };
    return with_int_wrap(e->dtype, [&](auto wrap) -> IFn {
      if (mod)
        return [a, b, wrap, fail](Ctx& c) {
          int64_t x = a(c), y = b(c);
          if (y == 0) fail(c);
          return wrap(floormod_i(x, y));
        };
      return [a, b, wrap, fail](Ctx& c) {
        int64_t x = a(c), y = b(c);
        if (y == 0) fail(c);
        return wrap(floordiv_i(x, y));
      };
    });
  }

  template <typename V, typename Fn> static IFn compare_with(ExprKind k, Fn a, Fn b) {
    switch (k) {
    case ExprKind::EQ:
      return [a, b](Ctx& c) -> int64_t { return V(a(c)) == V(b(c)); };
    case ExprKind::NE:
      return [a, b](Ctx& c) -> int64_t { return V(a(c)) != V(b(c)); };
    case ExprKind::LT:
      return [a, b](Ctx& c) -> int64_t { return V(a(c)) < V(b(c)); };
    case ExprKind::LE:
      return [a, b](Ctx& c) -> int64_t { return V(a(c)) <= V(b(c)); };
    case ExprKind::GT:
      return [a, b](Ctx& c) -> int64_t { return V(a(c)) > V(b(c)); };
    default:
      return [a, b](Ctx& c) -> int64_t { return V(a(c)) >= V(b(c)); };
    }
  }

  IFn comparison(const Expr& e, const Site* site) {
    if (e->args[0]->dtype.is_float())
      return compare_with<double>(e->kind, compile_float(e->args[0], site),
                                  compile_float(e->args[1], site));
    return compare_with<int64_t>(e->kind, compile_int(e->args[0], site),
                                 compile_int(e->args[1], site));
  }

  SFn compile_stmt(const Stmt& s) {
    if (!s) return [](Ctx&) {};
    switch (s->kind) {
    case StmtKind::For: {
      auto* f = as<ForNode>(s);
      if (!is_var(f->loop_var))
        throw InterpreterError("interpret(" + func.name + "): loop without a variable");
      int slot = slot_of_var(f->loop_var);
      if (bound[slot])
        throw InterpreterError("interpret(" + func.name + "): loop variable " + f->loop_var->name +
                               " is bound twice by nested loops");
      bound[slot] = true;
      SFn body = compile_stmt(f->body);
      bound[slot] = false;
      int64_t ext = f->extent;
      return [slot, ext, body](Ctx& c) {
        for (int64_t i = 0; i < ext; ++i) {
          c.vars[slot] = i;
          body(c);
        }
      };
    }
    case StmtKind::Seq: {
      std::vector<SFn> items;
      for (const Stmt& c : as<SeqNode>(s)->stmts)
        items.push_back(compile_stmt(c));
      return [items](Ctx& c) {
        for (const SFn& f : items)
          f(c);
      };
    }
    case StmtKind::IfThenElse: {
      auto* n = as<IfThenElseNode>(s);
      sites.push_back({s, n->condition});
      IFn cond = compile_int(n->condition, &sites.back());
      SFn t = compile_stmt(n->then_case);
      if (!n->else_case)
        return [cond, t](Ctx& c) {
          if (cond(c)) t(c);
        };
      SFn f = compile_stmt(n->else_case);
      return [cond, t, f](Ctx& c) {
        if (cond(c))
          t(c);
        else
          f(c);
      };
    }
    case StmtKind::Store:
      return compile_store(s);
    case StmtKind::Allocate: {
      auto* a = as<AllocateNode>(s);
      int slot = slot_of_buffer(a->buffer);
      int id = static_cast<int>(allocations.size());
      allocations.push_back({slot, poison_pattern(a->buffer)});
      ++live[slot];
      SFn body = compile_stmt(a->body);
      --live[slot];
      const std::vector<char>* poison = &allocations[id].poison;
      return [slot, id, body, poison](Ctx& c) {
        char* p = static_cast<char*>(c.storage[id].get());
        std::memcpy(p, poison->data(), poison->size());
        char* saved = c.bufs[slot];
        c.bufs[slot] = p;
        body(c);
        c.bufs[slot] = saved;
      };
    }
    case StmtKind::BlockRealize:
      throw InterpreterError("interpret(" + func.name + "): block found in a lowered program");
    }
    throw InterpreterError("interpret(" + func.name + "): unknown statement kind");
  }

  SFn compile_store(const Stmt& s) {
    auto* n = as<StoreNode>(s);
    sites.push_back({s, Expr()});
    const Site* site = &sites.back();
    DType t = n->buffer->dtype;
    // The value first: the access check of the store comes after it, as in execution.
    if (t.is_float()) {
      FFn v;
      if (n->value->dtype.is_float()) {
        v = compile_float(n->value, site);
      } else {
        IFn i = compile_int(n->value, site);
        v = [i](Ctx& c) { return static_cast<double>(i(c)); };
      }
      AccessOffset off = compile_offset(n->buffer, n->indices, site, "store");
      return make_float_store(t, std::move(off), buf_slot.at(n->buffer.get()), std::move(v));
    }
    IFn v;
    if (n->value->dtype.is_float()) {
      FFn f = compile_float(n->value, site);
      if (t.is_bool())
        v = [f](Ctx& c) -> int64_t { return f(c) != 0; };
      else
        v = [f](Ctx& c) { return float_to_int(f(c)); };
    } else {
      v = compile_int(n->value, site);
    }
    AccessOffset off = compile_offset(n->buffer, n->indices, site, "store");
    return make_int_store(t, std::move(off), buf_slot.at(n->buffer.get()), std::move(v));
  }
};

CompiledProgram::CompiledProgram(const Function& f) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.func = f.lowered ? f : lower(f);
  for (const Buffer& p : m.func.params) {
    if (m.buf_slot.count(p.get()))
      throw std::invalid_argument("interpret(" + f.name + "): parameter " + p->name +
                                  " listed twice");
    m.live[m.slot_of_buffer(p)] = 1;
  }
  // Intermediates the body does not allocate itself live for the whole call.
  std::unordered_set<const BufferNode*> allocated;
  visit_stmts(m.func.body, [&](const Stmt& s) {
    if (s->kind == StmtKind::Allocate) allocated.insert(as<AllocateNode>(s)->buffer.get());
    return true;
  });
  for (const Buffer& b : m.func.buffers) {
    if (allocated.count(b.get()) || m.buf_slot.count(b.get())) continue;
    int slot = m.slot_of_buffer(b);
    m.live[slot] = 1;
    m.whole_call.push_back(static_cast<int>(m.allocations.size()));
    m.allocations.push_back({slot, poison_pattern(b)});
  }
  m.body = m.compile_stmt(m.func.body);
}

CompiledProgram::~CompiledProgram() = default;
CompiledProgram::CompiledProgram(CompiledProgram&&) noexcept = default;
CompiledProgram& CompiledProgram::operator=(CompiledProgram&&) noexcept = default;

void CompiledProgram::run(const std::vector<NDArray*>& args) const {
  const Impl& m = *impl_;
  const Function& f = m.func;
  std::string where = "interpret(" + f.name + "): ";
  if (args.size() != f.params.size()) {
    std::string names;
    for (const Buffer& p : f.params)
      names += (names.empty() ? "" : ", ") + p->name;
    throw std::invalid_argument(where + "expected " + std::to_string(f.params.size()) +
                                " arguments (" + names + "), got " + std::to_string(args.size()));
  }
  Ctx c;
  c.vars.assign(m.vars.names.size(), 0);
  c.bufs.assign(m.bufs.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) {
    const Buffer& p = f.params[i];
    std::string arg = "argument " + std::to_string(i) + " (" + p->name + ")";
    if (!args[i] || (args[i]->empty() && p->num_elements() > 0))
      throw std::invalid_argument(where + arg + " is null");
    if (!(args[i]->dtype() == p->dtype))
      throw std::invalid_argument(where + arg + " has dtype " + to_string(args[i]->dtype()) +
                                  ", expected " + to_string(p->dtype));
    if (args[i]->shape() != p->shape)
      throw std::invalid_argument(where + arg + " has shape " + list(args[i]->shape()) +
                                  ", expected " + list(p->shape));
    c.bufs[m.buf_slot.at(p.get())] = static_cast<char*>(args[i]->data());
  }
  for (const Allocation& a : m.allocations)
    c.storage.emplace_back(aligned_storage(a.poison.size()), std::free);
  for (int id : m.whole_call) {
    const Allocation& a = m.allocations[id];
    std::memcpy(c.storage[id].get(), a.poison.data(), a.poison.size());
    c.bufs[a.buf_slot] = static_cast<char*>(c.storage[id].get());
  }
  m.body(c);
}

void interpret(const Function& f, const std::vector<NDArray*>& args) {
  CompiledProgram(f).run(args);
}

} // namespace mt
