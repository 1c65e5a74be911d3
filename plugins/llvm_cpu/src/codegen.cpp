#include "codegen.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include <llvm/IR/Constants.h>
#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsX86.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Verifier.h>
#include <llvm/Support/raw_ostream.h>

#include "amx_tile.h"
#include "math_ir.h"
#include "metatune/llvm_cpu/compiler.hpp"
#include "metatune/sdk/expr_equal.hpp"
#include "metatune/sdk/index_analysis.hpp"
#include "transposed_copy.h"
#include "vector_legality.h"

namespace mt::llvm_cpu {

namespace P = mt::sdk::program;

std::string make_symbol(const std::string& name) {
  std::string s;
  for (char ch : name) {
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_';
    s += ok ? ch : '_';
  }
  if (s.empty()) s = "kernel";
  if (s[0] >= '0' && s[0] <= '9') s = "k_" + s;
  return s;
}

namespace {

// Widest vector emitted for one vectorized loop; longer loops run in chunks of this width.
constexpr unsigned kMaxLanes = 64;
// A varying `if` inside vector code gets an unmasked fast path (all lanes true) up to this
// nesting depth; deeper ones are only masked, to bound code growth.
constexpr int kMaxFastPathDepth = 2;
// Unrolled loops longer than this stay loops (with an unroll hint) to bound code size.
constexpr int64_t kMaxUnroll = 1024;
// An unrolled loop whose expansion would exceed this many operations (unroll_weight) stays a
// loop too, without a hint: the O3 pipeline on one such block takes tens of seconds (512
// guarded scalar GELUs, each erf an inline polynomial: 26 s; 128 of them, ~5k operations,
// still 2-4 s), while a micro-kernel of 512 vector multiply-adds (~3k operations) is what
// unrolling is for.
constexpr int64_t kMaxUnrolledWeight = 8192;
// What a math call (exp, erf, tanh, ...) weighs against one expression node: it becomes an
// inline polynomial of a few dozen instructions (math_ir.cpp).
constexpr int64_t kMathCallWeight = 32;
constexpr unsigned kLocalAlign = 64;
// How far ahead a streamed bf16 weight is prefetched (prefetch_ahead).
constexpr int64_t kBf16PrefetchBytes = 8192;

// An emitted value: a scalar, or a vector of the current vector width.
struct Val {
  llvm::Value* v = nullptr;
  bool vec = false;
};

struct BufferBinding {
  llvm::Value* ptr = nullptr;
  const P::BufferNode* node = nullptr;
};

// State of one LLVM function being filled (the kernel, or an outlined parallel body).
constexpr int64_t kAmxRowBytes = 64; // a tile row: 16 f32 or 32 bf16

// -fpmath=bf16 on a CPU with AMX-BF16: marked nests become tile products (amx_tile.h).
bool uses_amx(const CodegenConfig& cfg) {
  return cfg.bf16_products && cfg.target.has("amx-tile") && cfg.target.has("amx-bf16");
}

struct Frame {
  llvm::Function* fn = nullptr;
  llvm::Value* rt = nullptr;
  llvm::BasicBlock* error_block = nullptr; // kernel only: returns MT_LLVM_ERR_ALLOC
  std::map<int64_t, llvm::Value*> vars;
  std::map<int64_t, BufferBinding> buffers;
};

// State while emitting the body of a vectorized loop.
struct VecCtx {
  int64_t var_id = 0;
  unsigned width = 1;
  llvm::Value* base = nullptr; // i64: value of the vector variable in lane 0
  llvm::Value* mask = nullptr; // <width x i1>, null = all lanes active
  bool mask_nonempty = true;   // some lane of `mask` is known to be active
  int if_depth = 0;
};

std::string where(const P::Expr& e) {
  return "'" + P::to_string(e) + "'";
}

bool contains_load(const P::Expr& e) {
  bool found = false;
  P::post_order_visit(e, [&](const P::Expr& x) {
    if (x->kind == P::ExprKind::Load) found = true;
  });
  return found;
}

// Lanes of the narrowest vector unit the weights below assume (AVX2's f32): a vectorized loop
// of E lanes is ceil(E / 8) machine vectors per operation.
constexpr int64_t kMachineLanes = 8;
// What one lane of a gather or scatter weighs: without a fast gather (AVX2 on AMD until Zen 4,
// any masked access) the backend expands it lane by lane into an index extract, a scalar
// access, an insert and, when masked, a test and a branch. A padded convolution's pad block
// vectorized over 58 lanes under a 30-step unrolled row loop was 1,740 such lanes: 14 s of
// register allocation and scheduling for a kernel whose convolution is 48 FMAs.
constexpr int64_t kGatherLaneWeight = 8;

// The code `s` turns into once its unrolled loops are expanded, in operations: loads, stores,
// conditions, float arithmetic, math calls weighted (index arithmetic is left out: with the
// loop variables constant it mostly folds away). Inside a vectorized loop (`vec_var`, `lanes`)
// an operation weighs one per machine vector and a non-contiguous access one per lane.
// Saturates at kMaxUnrolledWeight + 1.
int64_t unroll_weight(const P::Stmt& s, int64_t vec_var = -1, int64_t lanes = 1) {
  constexpr int64_t kCap = kMaxUnrolledWeight + 1;
  if (!s) return 0;
  const int64_t pieces = (lanes + kMachineLanes - 1) / kMachineLanes;
  // A load or store along the lanes: contiguous (one vector access per piece) or not (a gather
  // or scatter).
  auto access = [&](const P::BufferNode& buf, const std::vector<P::Expr>& indices) -> int64_t {
    if (vec_var < 0) return 1;
    P::Expr flat = P::flat_index(buf, indices);
    if (!P::uses_var(flat, vec_var)) return 1;
    auto coef = P::affine_coefficient(flat, vec_var);
    return coef && *coef == 1 ? pieces : kGatherLaneWeight * lanes;
  };
  int64_t w = 0;
  auto add_expr = [&](const P::Expr& e) {
    if (!e) return;
    P::post_order_visit(e, [&](const P::Expr& x) {
      if (x->kind == P::ExprKind::Call)
        w += kMathCallWeight * pieces;
      else if (x->kind == P::ExprKind::Load)
        w += access(*x->buffer, x->args);
      else if (!x->args.empty() && x->dtype.is_float())
        w += pieces;
    });
  };
  switch (s->kind) {
  case P::StmtKind::Store:
    for (const P::Expr& i : s->indices)
      add_expr(i);
    add_expr(s->value);
    return std::min(w + access(*s->buffer, s->indices), kCap);
  case P::StmtKind::IfThenElse:
    add_expr(s->condition);
    w += unroll_weight(s->then_case, vec_var, lanes) + unroll_weight(s->else_case, vec_var, lanes);
    return std::min(w + 1, kCap);
  case P::StmtKind::Seq:
    for (const P::Stmt& c : s->stmts)
      w = std::min(w + unroll_weight(c, vec_var, lanes), kCap);
    return w;
  case P::StmtKind::Allocate:
    return unroll_weight(s->body, vec_var, lanes);
  case P::StmtKind::For: {
    // A vectorized loop inside another keeps the outer lanes (codegen runs it lane-wise for
    // them); an outermost one runs its own.
    bool vectorized = s->for_kind == P::ForKind::Vectorized && vec_var < 0;
    int64_t body =
        vectorized ? unroll_weight(s->body, s->loop_var->var_id, std::max<int64_t>(s->extent, 1))
                   : unroll_weight(s->body, vec_var, lanes);
    if (s->for_kind != P::ForKind::Unrolled) return std::min(body + 4, kCap);
    return s->extent > 0 && body > kCap / s->extent ? kCap : std::min(body * s->extent, kCap);
  }
  }
  return kCap;
}

class CodeGen {
public:
  CodeGen(llvm::Module& m, const CodegenConfig& cfg, const P::Program& p)
      : m_(m), ctx_(m.getContext()), b_(ctx_), cfg_(cfg), prog_(p) {
    llvm::FastMathFlags fmf;
    fmf.setAllowContract(true); // lets the backend fuse a*b+c into FMA
    b_.setFastMathFlags(fmf);
    i1_ = b_.getInt1Ty();
    i8_ = b_.getInt8Ty();
    i32_ = b_.getInt32Ty();
    i64_ = b_.getInt64Ty();
    ptr_ = b_.getPtrTy();
    fast_gather_ = cfg_.target.has("avx512f");
    amx_ = uses_amx(cfg_);
  }

  void run() {
    make_alias_scopes();
    auto* fty = llvm::FunctionType::get(i32_, {ptr_, ptr_}, false);
    auto* fn = llvm::Function::Create(fty, llvm::Function::ExternalLinkage, cfg_.symbol, m_);
    set_attributes(fn);
    fn->getArg(0)->setName("args");
    fn->getArg(1)->setName("rt");
    Frame frame;
    frame.fn = fn;
    frame.rt = fn->getArg(1);
    frame_ = &frame;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", fn));
    for (size_t i = 0; i < prog_.params.size(); ++i) {
      const auto& buf = prog_.params[i];
      llvm::Value* slot = b_.CreateConstInBoundsGEP1_64(ptr_, fn->getArg(0), i);
      auto* p = b_.CreateAlignedLoad(ptr_, slot, llvm::Align(8), buf->name);
      frame.buffers[buf->id] = {p, buf.get()};
      if (buf->dtype == P::DType::bf16()) bf16_params_.insert(buf->id);
    }
    if (amx_ && has_amx_product()) request_amx();
    stmt(prog_.body);
    b_.CreateRet(llvm::ConstantInt::get(i32_, MT_LLVM_OK));
    frame_ = nullptr;
  }

private:
  // ---- types ----------------------------------------------------------------------------------

  llvm::Type* compute_type(P::DType t) {
    switch (t.kind) {
    case P::DTypeKind::Bool:
      return i1_;
    case P::DTypeKind::Int:
    case P::DTypeKind::UInt:
      return b_.getIntNTy(t.bits);
    case P::DTypeKind::Float:
      if (t.bits == 64) return b_.getDoubleTy();
      if (t.bits == 32 || t.bits == 16) return b_.getFloatTy();
      break;
    case P::DTypeKind::BFloat:
      if (t.bits == 16) return b_.getFloatTy();
      break;
    }
    throw CodegenError("unsupported dtype " + P::to_string(t));
  }

  llvm::Type* mem_type(P::DType t) {
    if (t.is_bool()) return i8_;
    if (t.kind == P::DTypeKind::Float && t.bits == 16) return b_.getHalfTy();
    if (t.kind == P::DTypeKind::BFloat) return b_.getInt16Ty();
    return compute_type(t);
  }

  llvm::Type* vty(llvm::Type* scalar) { return llvm::FixedVectorType::get(scalar, vec_->width); }
  llvm::Type* ty(llvm::Type* scalar, bool vec) { return vec ? vty(scalar) : scalar; }

  llvm::Value* splat(llvm::Value* v) { return b_.CreateVectorSplat(vec_->width, v); }
  llvm::Value* as_vec(const Val& x) { return x.vec ? x.v : splat(x.v); }

  // ---- alias information: every buffer is its own scope ------------------------------------

  void make_alias_scopes() {
    std::vector<const P::BufferNode*> all;
    for (const auto& b : prog_.params)
      all.push_back(b.get());
    P::visit_stmts(prog_.body, [&](const P::Stmt& s) {
      if (s->kind == P::StmtKind::Allocate) all.push_back(s->buffer.get());
      return true;
    });
    llvm::MDBuilder md(ctx_);
    llvm::MDNode* domain = md.createAnonymousAliasScopeDomain(cfg_.symbol);
    std::map<int64_t, llvm::MDNode*> scope;
    for (const auto* b : all)
      if (!scope.count(b->id)) scope[b->id] = md.createAnonymousAliasScope(domain, b->name);
    for (const auto& [id, s] : scope) {
      std::vector<llvm::Metadata*> others;
      for (const auto& [id2, s2] : scope)
        if (id2 != id) others.push_back(s2);
      alias_[id] = {llvm::MDNode::get(ctx_, {s}), llvm::MDNode::get(ctx_, others)};
    }
  }

  llvm::Value* tag(llvm::Value* v, int64_t buffer_id) {
    auto* inst = llvm::dyn_cast<llvm::Instruction>(v);
    auto it = alias_.find(buffer_id);
    if (inst && it != alias_.end()) {
      inst->setMetadata(llvm::LLVMContext::MD_alias_scope, it->second.first);
      inst->setMetadata(llvm::LLVMContext::MD_noalias, it->second.second);
    }
    return v;
  }

  void set_attributes(llvm::Function* fn) {
    fn->addFnAttr("target-cpu", cfg_.target.cpu);
    std::string features = cfg_.target.feature_string();
    if (!features.empty()) fn->addFnAttr("target-features", features);
    std::string width = std::to_string(cfg_.target.vector_bits());
    fn->addFnAttr("prefer-vector-width", width);
    fn->addFnAttr("min-legal-vector-width", width);
    fn->addFnAttr(llvm::Attribute::NoUnwind);
  }

  // ---- memory conversions --------------------------------------------------------------------

  llvm::Value* mem_to_compute(llvm::Value* raw, P::DType t) {
    llvm::Type* rt = raw->getType();
    auto shape = [&](llvm::Type* s) -> llvm::Type* {
      if (auto* v = llvm::dyn_cast<llvm::FixedVectorType>(rt))
        return llvm::FixedVectorType::get(s, v->getNumElements());
      return s;
    };
    if (t.is_bool()) return b_.CreateICmpNE(raw, llvm::Constant::getNullValue(rt));
    if (t.kind == P::DTypeKind::Float && t.bits == 16)
      return b_.CreateFPExt(raw, shape(b_.getFloatTy()));
    if (t.kind == P::DTypeKind::BFloat) {
      llvm::Value* w = b_.CreateZExt(raw, shape(i32_));
      w = b_.CreateShl(w, llvm::ConstantInt::get(shape(i32_), 16));
      return b_.CreateBitCast(w, shape(b_.getFloatTy()));
    }
    return raw;
  }

  // f32 -> bf16 bits, rounding to nearest even; NaN stays a (quiet) NaN.
  llvm::Value* f32_to_bf16_bits(llvm::Value* v) {
    llvm::Type* ft = v->getType();
    auto shape = [&](llvm::Type* s) -> llvm::Type* {
      if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(ft))
        return llvm::FixedVectorType::get(s, vt->getNumElements());
      return s;
    };
    llvm::Type* it = shape(i32_);
    llvm::Value* bits = b_.CreateBitCast(v, it);
    llvm::Value* lsb = b_.CreateAnd(b_.CreateLShr(bits, llvm::ConstantInt::get(it, 16)),
                                    llvm::ConstantInt::get(it, 1));
    llvm::Value* rounded =
        b_.CreateAdd(bits, b_.CreateAdd(lsb, llvm::ConstantInt::get(it, 0x7fff)));
    llvm::Value* hi = b_.CreateTrunc(b_.CreateLShr(rounded, llvm::ConstantInt::get(it, 16)),
                                     shape(b_.getInt16Ty()));
    return b_.CreateSelect(b_.CreateFCmpUNO(v, v),
                           llvm::ConstantInt::get(shape(b_.getInt16Ty()), 0x7fc0), hi);
  }

  llvm::Value* compute_to_mem(llvm::Value* v, P::DType t) {
    llvm::Type* vt = v->getType();
    auto shape = [&](llvm::Type* s) -> llvm::Type* {
      if (auto* x = llvm::dyn_cast<llvm::FixedVectorType>(vt))
        return llvm::FixedVectorType::get(s, x->getNumElements());
      return s;
    };
    if (t.is_bool()) return b_.CreateZExt(v, shape(i8_));
    if (t.kind == P::DTypeKind::Float && t.bits == 16)
      return b_.CreateFPTrunc(v, shape(b_.getHalfTy()));
    if (t.kind == P::DTypeKind::BFloat) return f32_to_bf16_bits(v);
    return v;
  }

  // Rounds an f32 compute value to the precision of a 16-bit float dtype.
  llvm::Value* round_to(llvm::Value* v, P::DType t) {
    if (t.kind == P::DTypeKind::Float && t.bits == 16)
      return mem_to_compute(compute_to_mem(v, t), t);
    if (t.kind == P::DTypeKind::BFloat) return mem_to_compute(compute_to_mem(v, t), t);
    return v;
  }

  // ---- expressions ---------------------------------------------------------------------------

  Val expr(const P::Expr& e) {
    if (!e) throw CodegenError("null expression in program " + prog_.name);
    switch (e->kind) {
    case P::ExprKind::IntImm:
      return {llvm::ConstantInt::get(compute_type(e->dtype), static_cast<uint64_t>(e->int_value),
                                     e->dtype.kind == P::DTypeKind::Int),
              false};
    case P::ExprKind::FloatImm:
      return {llvm::ConstantFP::get(compute_type(e->dtype), e->float_value), false};
    case P::ExprKind::Var:
      return var(e);
    case P::ExprKind::Not: {
      Val a = expr(e->args[0]);
      return {b_.CreateNot(a.v), a.vec};
    }
    case P::ExprKind::Select:
      return select(e);
    case P::ExprKind::And:
    case P::ExprKind::Or:
      // Lazy like the reference: `i < n && A[i] > 0` must not load A[i] when i >= n.
      if (contains_load(e->args[1])) {
        bool is_and = e->kind == P::ExprKind::And;
        return select(P::make_select(e->args[0], is_and ? e->args[1] : P::bool_imm(true),
                                     is_and ? P::bool_imm(false) : e->args[1]));
      }
      return binary(e);
    case P::ExprKind::Cast:
      return cast(e);
    case P::ExprKind::Load:
      return load(e);
    case P::ExprKind::Call: {
      std::vector<Val> args;
      bool vec = false;
      for (const auto& a : e->args) {
        args.push_back(expr(a));
        vec = vec || args.back().vec;
      }
      std::vector<llvm::Value*> vals;
      for (auto& a : args)
        vals.push_back(vec ? as_vec(a) : a.v);
      try {
        return {round_to(emit_math(b_, e->fn, vals), e->dtype), vec};
      } catch (const std::invalid_argument& ex) {
        throw CodegenError(std::string(ex.what()) + " in " + where(e));
      }
    }
    default:
      return binary(e);
    }
  }

  Val var(const P::Expr& e) {
    if (vec_ && e->var_id == vec_->var_id) {
      std::vector<llvm::Constant*> lanes;
      for (unsigned i = 0; i < vec_->width; ++i)
        lanes.push_back(llvm::ConstantInt::get(i64_, i));
      return {b_.CreateAdd(splat(vec_->base), llvm::ConstantVector::get(lanes), "", false, true),
              true};
    }
    auto it = frame_->vars.find(e->var_id);
    if (it == frame_->vars.end())
      throw CodegenError("variable '" + e->name + "' (id " + std::to_string(e->var_id) +
                         ") is used outside a loop that defines it, in program " + prog_.name);
    return {it->second, false};
  }

  Val binary(const P::Expr& e) {
    P::ExprKind k = e->kind;
    P::DType ot = e->args[0]->dtype;
    if (k == P::ExprKind::FloorDiv || k == P::ExprKind::FloorMod ||
        (k == P::ExprKind::Div && ot.is_int()))
      return floor_div_mod(e);
    Val a = expr(e->args[0]);
    Val c = expr(e->args[1]);
    bool vec = a.vec || c.vec;
    llvm::Value* x = vec ? as_vec(a) : a.v;
    llvm::Value* y = vec ? as_vec(c) : c.v;
    if (ot.is_float()) {
      switch (k) {
      case P::ExprKind::Add:
        return {round_to(b_.CreateFAdd(x, y), ot), vec};
      case P::ExprKind::Sub:
        return {round_to(b_.CreateFSub(x, y), ot), vec};
      case P::ExprKind::Mul:
        return {round_to(b_.CreateFMul(x, y), ot), vec};
      case P::ExprKind::Div:
        if (vec && !c.vec) {
          // A division of a vector by one value (softmax's row sum, a norm) is a multiply by
          // its reciprocal, one scalar division per vector instead of a vdivps (several times
          // an FMA's cost): results differ by about an ulp, as oneDNN's do.
          llvm::Value* r = b_.CreateFDiv(llvm::ConstantFP::get(c.v->getType(), 1.0), c.v);
          return {round_to(b_.CreateFMul(x, splat(r)), ot), vec};
        }
        return {round_to(b_.CreateFDiv(x, y), ot), vec};
      // Same operand choice as std::min / std::max.
      case P::ExprKind::Min:
        return {b_.CreateSelect(b_.CreateFCmpOLT(y, x), y, x), vec};
      case P::ExprKind::Max:
        return {b_.CreateSelect(b_.CreateFCmpOLT(x, y), y, x), vec};
      case P::ExprKind::EQ:
        return {b_.CreateFCmpOEQ(x, y), vec};
      case P::ExprKind::NE:
        return {b_.CreateFCmpUNE(x, y), vec};
      case P::ExprKind::LT:
        return {b_.CreateFCmpOLT(x, y), vec};
      case P::ExprKind::LE:
        return {b_.CreateFCmpOLE(x, y), vec};
      case P::ExprKind::GT:
        return {b_.CreateFCmpOGT(x, y), vec};
      case P::ExprKind::GE:
        return {b_.CreateFCmpOGE(x, y), vec};
      default:
        break;
      }
    } else {
      bool is_signed = ot.kind == P::DTypeKind::Int;
      bool nsw = is_signed && ot.bits == 64; // index arithmetic never wraps
      switch (k) {
      case P::ExprKind::Add:
        return {b_.CreateAdd(x, y, "", false, nsw), vec};
      case P::ExprKind::Sub:
        return {b_.CreateSub(x, y, "", false, nsw), vec};
      case P::ExprKind::Mul:
        return {b_.CreateMul(x, y, "", false, nsw), vec};
      case P::ExprKind::Min:
        return {b_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smin : llvm::Intrinsic::umin,
                                         x, y),
                vec};
      case P::ExprKind::Max:
        return {b_.CreateBinaryIntrinsic(is_signed ? llvm::Intrinsic::smax : llvm::Intrinsic::umax,
                                         x, y),
                vec};
      case P::ExprKind::EQ:
        return {b_.CreateICmpEQ(x, y), vec};
      case P::ExprKind::NE:
        return {b_.CreateICmpNE(x, y), vec};
      case P::ExprKind::LT:
        return {is_signed ? b_.CreateICmpSLT(x, y) : b_.CreateICmpULT(x, y), vec};
      case P::ExprKind::LE:
        return {is_signed ? b_.CreateICmpSLE(x, y) : b_.CreateICmpULE(x, y), vec};
      case P::ExprKind::GT:
        return {is_signed ? b_.CreateICmpSGT(x, y) : b_.CreateICmpUGT(x, y), vec};
      case P::ExprKind::GE:
        return {is_signed ? b_.CreateICmpSGE(x, y) : b_.CreateICmpUGE(x, y), vec};
      case P::ExprKind::And:
        return {b_.CreateAnd(x, y), vec};
      case P::ExprKind::Or:
        return {b_.CreateOr(x, y), vec};
      default:
        break;
      }
    }
    throw CodegenError(std::string("operator '") + P::to_string(k) + "' is not defined for " +
                       P::to_string(ot) + " in " + where(e));
  }

  Val floor_div_mod(const P::Expr& e) {
    P::DType t = e->dtype;
    bool mod = e->kind == P::ExprKind::FloorMod;
    Val a = expr(e->args[0]);
    Val c = expr(e->args[1]);
    bool vec = a.vec || c.vec;
    llvm::Value* x = vec ? as_vec(a) : a.v;
    llvm::Value* y = vec ? as_vec(c) : c.v;
    if (t.kind == P::DTypeKind::UInt || t.is_bool())
      return {mod ? b_.CreateURem(x, y) : b_.CreateUDiv(x, y), vec};
    int64_t k = 0;
    bool const_pos = P::is_const_int(e->args[1], &k) && k > 0;
    if (const_pos && P::bound_of(e->args[0], bounds_).non_negative())
      return {mod ? b_.CreateURem(x, y) : b_.CreateUDiv(x, y), vec};
    llvm::Value* q = b_.CreateSDiv(x, y);
    llvm::Value* r = b_.CreateSRem(x, y);
    llvm::Value* zero = llvm::Constant::getNullValue(x->getType());
    // Truncated division rounds toward zero; floor differs when the remainder is non-zero and
    // has the opposite sign of the divisor.
    llvm::Value* adjust = const_pos ? b_.CreateICmpSLT(r, zero)
                                    : b_.CreateAnd(b_.CreateICmpNE(r, zero),
                                                   b_.CreateICmpSLT(b_.CreateXor(r, y), zero));
    if (mod) return {b_.CreateSelect(adjust, b_.CreateAdd(r, y), r), vec};
    return {b_.CreateSub(q, b_.CreateZExt(adjust, q->getType())), vec};
  }

  Val cast(const P::Expr& e) {
    P::DType to = e->dtype, from = e->args[0]->dtype;
    Val a = expr(e->args[0]);
    llvm::Value* v = a.v;
    llvm::Type* dst = ty(compute_type(to), a.vec);
    if (to.is_bool()) {
      if (from.is_float())
        return {b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType())), a.vec};
      return {b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType())), a.vec};
    }
    if (to.is_int()) {
      if (from.is_bool()) return {b_.CreateZExt(v, dst), a.vec};
      if (from.is_int()) return {b_.CreateIntCast(v, dst, from.kind == P::DTypeKind::Int), a.vec};
      return {to.kind == P::DTypeKind::Int ? b_.CreateFPToSI(v, dst) : b_.CreateFPToUI(v, dst),
              a.vec};
    }
    llvm::Value* out;
    if (from.is_bool())
      out = b_.CreateUIToFP(v, dst);
    else if (from.is_int())
      out = from.kind == P::DTypeKind::Int ? b_.CreateSIToFP(v, dst) : b_.CreateUIToFP(v, dst);
    else
      out = b_.CreateFPCast(v, dst);
    return {round_to(out, to), a.vec};
  }

  Val select(const P::Expr& e) {
    Val c = expr(e->args[0]);
    bool guarded = contains_load(e->args[1]) || contains_load(e->args[2]);
    if (!guarded) {
      Val t = expr(e->args[1]), f = expr(e->args[2]);
      bool vec = c.vec || t.vec || f.vec;
      if (!vec) return {b_.CreateSelect(c.v, t.v, f.v), false};
      return {b_.CreateSelect(c.v, as_vec(t), as_vec(f)), true};
    }
    if (!c.vec) {
      // Only the chosen side may be evaluated: it can hold a load that is out of bounds
      // otherwise (padding).
      llvm::Function* fn = frame_->fn;
      auto* then_bb = llvm::BasicBlock::Create(ctx_, "sel.t", fn);
      auto* else_bb = llvm::BasicBlock::Create(ctx_, "sel.f", fn);
      auto* join = llvm::BasicBlock::Create(ctx_, "sel.join", fn);
      b_.CreateCondBr(c.v, then_bb, else_bb);
      b_.SetInsertPoint(then_bb);
      Val t = expr(e->args[1]);
      auto* then_end = b_.GetInsertBlock();
      b_.SetInsertPoint(else_bb);
      Val f = expr(e->args[2]);
      auto* else_end = b_.GetInsertBlock();
      bool vec = t.vec || f.vec;
      b_.SetInsertPoint(then_end);
      llvm::Value* tv = vec ? as_vec(t) : t.v;
      b_.CreateBr(join);
      b_.SetInsertPoint(else_end);
      llvm::Value* fv = vec ? as_vec(f) : f.v;
      b_.CreateBr(join);
      b_.SetInsertPoint(join);
      auto* phi = b_.CreatePHI(tv->getType(), 2);
      phi->addIncoming(tv, then_end);
      phi->addIncoming(fv, else_end);
      return {phi, vec};
    }
    // Varying condition: each side runs under its own lane mask.
    llvm::Value* outer = vec_->mask;
    llvm::Value* mt = outer ? b_.CreateAnd(outer, c.v) : c.v;
    llvm::Value* mf = outer ? b_.CreateAnd(outer, b_.CreateNot(c.v)) : b_.CreateNot(c.v);
    Val t = with_mask(mt, false, [&] { return expr(e->args[1]); });
    Val f = with_mask(mf, false, [&] { return expr(e->args[2]); });
    return {b_.CreateSelect(c.v, as_vec(t), as_vec(f)), true};
  }

  template <typename F> auto with_mask(llvm::Value* mask, bool nonempty, F&& f) -> decltype(f()) {
    VecCtx saved = *vec_;
    vec_->mask = mask;
    vec_->mask_nonempty = nonempty;
    struct Restore {
      VecCtx* ctx;
      VecCtx saved;
      ~Restore() { *ctx = saved; }
    } restore{vec_, saved};
    return f();
  }

  // Evaluates an expression as a scalar with the vector variable bound to lane 0.
  llvm::Value* scalar_at_lane0(const P::Expr& e) {
    VecCtx* saved = vec_;
    int64_t id = saved->var_id;
    auto old = frame_->vars.find(id);
    bool had = old != frame_->vars.end();
    llvm::Value* prev = had ? old->second : nullptr;
    frame_->vars[id] = saved->base;
    vec_ = nullptr;
    llvm::Value* v = expr(e).v;
    vec_ = saved;
    if (had)
      frame_->vars[id] = prev;
    else
      frame_->vars.erase(id);
    return v;
  }

  const BufferBinding& binding(const P::Buffer& buf, const char* what) {
    auto it = frame_->buffers.find(buf->id);
    if (it == frame_->buffers.end())
      throw CodegenError(std::string(what) + " of buffer '" + buf->name +
                         "', which is neither a parameter nor allocated here, in program " +
                         prog_.name);
    return it->second;
  }

  llvm::Align elem_align(P::DType t) {
    return llvm::Align(static_cast<uint64_t>(std::max(1, t.bytes())));
  }

  // Runs `f` only if some lane of the current mask is active (when that is not known), so that
  // a scalar access made on behalf of the active lanes cannot fault when none is. Returns the
  // value of `f`, or poison when skipped.
  llvm::Value* guard_nonempty(llvm::Type* result, const std::function<llvm::Value*()>& f) {
    if (!vec_ || !vec_->mask || vec_->mask_nonempty) return f();
    llvm::Function* fn = frame_->fn;
    auto* run = llvm::BasicBlock::Create(ctx_, "any", fn);
    auto* join = llvm::BasicBlock::Create(ctx_, "any.join", fn);
    auto* from = b_.GetInsertBlock();
    b_.CreateCondBr(b_.CreateOrReduce(vec_->mask), run, join);
    b_.SetInsertPoint(run);
    llvm::Value* v = f();
    auto* run_end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    if (!result) return nullptr;
    auto* phi = b_.CreatePHI(result, 2);
    phi->addIncoming(v, run_end);
    phi->addIncoming(llvm::PoisonValue::get(result), from);
    return phi;
  }

  Val load(const P::Expr& e) {
    const BufferBinding& bb = binding(e->buffer, "load");
    P::DType t = e->buffer->dtype;
    llvm::Type* mt = mem_type(t);
    P::Expr flat = P::flat_index(*e->buffer, e->args);
    int64_t id = e->buffer->id;
    if (!vec_ || !P::uses_var(flat, vec_->var_id)) {
      llvm::Value* idx = vec_ ? scalar_at_lane0(flat) : expr(flat).v;
      llvm::Value* raw = guard_nonempty(mt, [&]() -> llvm::Value* {
        llvm::Value* p = b_.CreateInBoundsGEP(mt, bb.ptr, idx);
        return tag(b_.CreateAlignedLoad(mt, p, elem_align(t)), id);
      });
      return {mem_to_compute(raw, t), false};
    }
    auto coef = P::affine_coefficient(flat, vec_->var_id);
    llvm::Type* vt = vty(mt);
    llvm::Value* raw;
    if (coef && *coef == 1) {
      llvm::Value* p = b_.CreateInBoundsGEP(mt, bb.ptr, scalar_at_lane0(flat));
      if (!vec_->mask && bf16_params_.count(id)) prefetch_ahead(p);
      if (vec_->mask)
        raw = b_.CreateMaskedLoad(vt, p, elem_align(t), vec_->mask, llvm::PoisonValue::get(vt));
      else
        raw = b_.CreateAlignedLoad(vt, p, elem_align(t));
    } else if (llvm::Value* v = clamped_contiguous_load(*e, vt, elem_align(t), bb.ptr)) {
      raw = v;
    } else if (coef && !vec_->mask && !fast_gather_) {
      raw = strided_load(flat, *coef, vt, elem_align(t), bb.ptr);
    } else {
      raw = gather(flat, vt, elem_align(t), bb.ptr);
    }
    tag(raw, id);
    return {mem_to_compute(raw, t), true};
  }

  // A weight handed over in bf16 (-fpmath=bf16) is streamed by a decode step's matrix-vector
  // products at a memory bandwidth the hardware prefetcher alone did not reach: every vector
  // load of it also prefetches the bytes kBf16PrefetchBytes further on (bench/llama/README.md
  // has the decode figures; f32 weights gained nothing from it and are left alone).
  void prefetch_ahead(llvm::Value* p) {
    llvm::Value* ahead = b_.CreateGEP(i8_, p, b_.getInt64(kBf16PrefetchBytes));
    b_.CreateIntrinsic(llvm::Intrinsic::prefetch, {ptr_},
                       {ahead, b_.getInt32(0), b_.getInt32(3), b_.getInt32(1)});
  }

  llvm::Value* gather(const P::Expr& flat, llvm::Type* vt, llvm::Align align, llvm::Value* base) {
    llvm::Value* idx = expr(flat).v; // <W x i64>
    llvm::Value* ptrs = b_.CreateInBoundsGEP(vec_elem_type(vt), base, idx);
    return b_.CreateMaskedGather(vt, ptrs, align, vec_->mask, llvm::PoisonValue::get(vt));
  }
  // A load along the lanes with a constant stride other than 1, on a target without a fast
  // gather: one scalar load per lane at lane 0's address plus lane x stride, inserted into
  // the vector. The backend expands a gather the same way, but from a vector of 64-bit
  // addresses that it computes and then takes apart lane by lane (vpaddq, vpextrq, vmovq per
  // element). Such loads are the transposing copies: a convolution's write-back (NHWC
  // accumulators to an NCHW output; perf put a fifth of the ResNet stem's samples there) and
  // packed operands (TBG's key: its best kernel went from 58 to 66 GFLOPS).
  llvm::Value* strided_load(const P::Expr& flat, int64_t stride, llvm::Type* vt, llvm::Align align,
                            llvm::Value* base) {
    llvm::Type* et = vec_elem_type(vt);
    llvm::Value* p0 = b_.CreateInBoundsGEP(et, base, scalar_at_lane0(flat));
    llvm::Value* v = llvm::PoisonValue::get(vt);
    for (unsigned i = 0; i < vec_->width; ++i) {
      llvm::Value* p = b_.CreateInBoundsGEP(et, p0, b_.getInt64(static_cast<int64_t>(i) * stride));
      v = b_.CreateInsertElement(v, b_.CreateAlignedLoad(et, p, align), b_.getInt64(i));
    }
    return v;
  }
  static llvm::Type* vec_elem_type(llvm::Type* vt) {
    return llvm::cast<llvm::VectorType>(vt)->getElementType();
  }

  // A clamp of one index dimension: min(max(e, lo), hi) or max(min(e, hi), lo), constants.
  struct Clamp {
    P::Expr e;
    int64_t lo, hi;
    int64_t step = 0; // e's coefficient along the lanes
  };
  static std::optional<Clamp> as_clamp(const P::Expr& x) {
    auto imm = [](const P::Expr& v) { return v->kind == P::ExprKind::IntImm; };
    if (x->args.size() != 2 || !imm(x->args[1])) return std::nullopt;
    const P::Expr& in = x->args[0];
    if (in->args.size() != 2 || !imm(in->args[1])) return std::nullopt;
    if (x->kind == P::ExprKind::Min && in->kind == P::ExprKind::Max)
      return Clamp{in->args[0], in->args[1]->int_value, x->args[1]->int_value};
    if (x->kind == P::ExprKind::Max && in->kind == P::ExprKind::Min)
      return Clamp{in->args[0], x->args[1]->int_value, in->args[1]->int_value};
    return std::nullopt;
  }

  // A padded input read as data[min(max(x - 3, 0), 223)] under a select that keeps only the
  // in-bounds lanes (a pad block, or one inlined into a convolution): the clamp makes the
  // index non-affine, hence a gather, although inside the interior -- almost every vector --
  // it is the identity. When the unclamped index runs contiguously along the lanes and every
  // clamped dimension grows with them, the lanes are in bounds exactly when lane 0 is above
  // each lower bound and the last lane below each upper bound: then one contiguous (masked)
  // load reads what the gather would, else the gather runs. nullptr when no clamp applies.
  llvm::Value* clamped_contiguous_load(const P::ExprNode& e, llvm::Type* vt, llvm::Align align,
                                       llvm::Value* base) {
    std::vector<Clamp> clamps;
    std::vector<P::Expr> unclamped;
    // Whether an in-range vector may be loaded whole, inactive lanes too (their values are
    // dropped by the select): every clamp lies inside its dimension and the other dimensions
    // are the same in every lane (checked in bounds below through an active lane).
    bool whole = true;
    for (size_t d = 0; d < e.args.size(); ++d) {
      const P::Expr& a = e.args[d];
      std::optional<Clamp> c = as_clamp(a);
      if (c && c->lo <= c->hi) {
        auto coef = P::affine_coefficient(c->e, vec_->var_id);
        if (!coef || *coef < 0) return nullptr;
        c->step = *coef;
        clamps.push_back(*c);
        unclamped.push_back(c->e);
        whole = whole && c->lo >= 0 && d < e.buffer->shape.size() && c->hi < e.buffer->shape[d];
      } else {
        unclamped.push_back(a);
        whole = whole && !P::uses_var(a, vec_->var_id);
      }
    }
    if (clamps.empty()) return nullptr;
    P::Expr flat_u = P::flat_index(*e.buffer, unclamped);
    auto coef = P::affine_coefficient(flat_u, vec_->var_id);
    if (!coef || *coef != 1) return nullptr;
    llvm::Value* in_range = b_.getTrue();
    for (const Clamp& c : clamps) {
      llvm::Value* first = scalar_at_lane0(c.e);
      llvm::Value* last = b_.CreateAdd(
          first,
          llvm::ConstantInt::get(first->getType(), c.step * static_cast<int64_t>(vec_->width - 1)));
      in_range = b_.CreateAnd(
          in_range,
          b_.CreateAnd(b_.CreateICmpSGE(first, llvm::ConstantInt::get(first->getType(), c.lo)),
                       b_.CreateICmpSLE(last, llvm::ConstantInt::get(first->getType(), c.hi))));
    }
    // An all-inactive mask takes the gather, which touches nothing.
    if (whole && vec_->mask && !vec_->mask_nonempty)
      in_range = b_.CreateAnd(in_range, b_.CreateOrReduce(vec_->mask));
    llvm::Function* fn = frame_->fn;
    auto* fast = llvm::BasicBlock::Create(ctx_, "clamp.inside", fn);
    auto* slow = llvm::BasicBlock::Create(ctx_, "clamp.edge", fn);
    auto* join = llvm::BasicBlock::Create(ctx_, "clamp.join", fn);
    b_.CreateCondBr(in_range, fast, slow);
    b_.SetInsertPoint(fast);
    llvm::Value* p = b_.CreateInBoundsGEP(vec_elem_type(vt), base, scalar_at_lane0(flat_u));
    llvm::Value* v_fast = nullptr;
    if (vec_->mask && !whole)
      v_fast = b_.CreateMaskedLoad(vt, p, align, vec_->mask, llvm::PoisonValue::get(vt));
    else
      v_fast = b_.CreateAlignedLoad(vt, p, align);
    auto* fast_end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(slow);
    llvm::Value* v_slow = gather(P::flat_index(*e.buffer, e.args), vt, align, base);
    auto* slow_end = b_.GetInsertBlock();
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
    auto* phi = b_.CreatePHI(vt, 2);
    phi->addIncoming(v_fast, fast_end);
    phi->addIncoming(v_slow, slow_end);
    return phi;
  }

  // ---- statements ----------------------------------------------------------------------------

  void stmt(const P::Stmt& s) {
    if (!s) return;
    switch (s->kind) {
    case P::StmtKind::Seq:
      for (const auto& x : s->stmts)
        stmt(x);
      return;
    case P::StmtKind::Store:
      return store(*s);
    case P::StmtKind::IfThenElse:
      return if_then_else(*s);
    case P::StmtKind::Allocate:
      return allocate(*s);
    case P::StmtKind::For:
      return for_loop(*s);
    }
  }

  // A float reduction's update, B[i] = B[i] + e or max(B[i], e): its combining operation may
  // be reassociated, so that LLVM's loop vectorizer keeps partial results in vector lanes when
  // the reduction loop is innermost (softmax's and layernorm's row sums and maxima; oneDNN and
  // BLAS sum in another order than the sequential one likewise). Only that operation: e keeps
  // its own order.
  static bool is_reduction_update(const P::StmtNode& s) {
    const P::Expr& v = s.value;
    if (!v || !(v->kind == P::ExprKind::Add || v->kind == P::ExprKind::Max) ||
        !v->dtype.is_float() || v->args.size() != 2)
      return false;
    const P::Expr& acc = v->args[0];
    return acc->kind == P::ExprKind::Load && acc->buffer->id == s.buffer->id &&
           P::exprs_equal(acc->args, s.indices);
  }
  Val reduction_update(const P::StmtNode& s) {
    Val a = expr(s.value->args[0]);
    Val c = expr(s.value->args[1]);
    bool vec = a.vec || c.vec;
    llvm::Value* x = vec ? as_vec(a) : a.v;
    llvm::Value* y = vec ? as_vec(c) : c.v;
    llvm::IRBuilderBase::FastMathFlagGuard keep(b_);
    llvm::FastMathFlags fmf = b_.getFastMathFlags();
    fmf.setAllowReassoc(true);
    if (s.value->kind == P::ExprKind::Max) {
      // max(acc, e) as select(acc < e, e, acc) ignores a NaN e and keeps a NaN acc; from a
      // non-NaN start (a max reduction starts at -inf) that is maxnum's answer. LLVM
      // vectorises a maxnum reduction only under nnan and nsz: a NaN in the row then gives an
      // unspecified maximum (vmaxps's operand order) where the sequential loop skipped it --
      // as oneDNN's own kernels do; what follows a max (softmax's exp(x - max)) is NaN for
      // that row either way.
      fmf.setNoNaNs(true);
      fmf.setNoSignedZeros(true);
      b_.setFastMathFlags(fmf);
      return {b_.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, y), vec};
    }
    b_.setFastMathFlags(fmf);
    return {round_to(b_.CreateFAdd(x, y), s.value->args[0]->dtype), vec};
  }

  void store(const P::StmtNode& s) {
    check_store_dtype(s);
    store_value(s, is_reduction_update(s) ? reduction_update(s) : expr(s.value));
  }

  void check_store_dtype(const P::StmtNode& s) {
    if (!(s.value->dtype == s.buffer->dtype))
      throw CodegenError("store of a " + P::to_string(s.value->dtype) + " value into " +
                         P::to_string(s.buffer->dtype) + " buffer '" + s.buffer->name +
                         "' in program " + prog_.name);
  }

  // Store `val` (s's value, already computed) where s stores.
  void store_value(const P::StmtNode& s, const Val& val) {
    const BufferBinding& bb = binding(s.buffer, "store");
    P::DType t = s.buffer->dtype;
    llvm::Type* mt = mem_type(t);
    P::Expr flat = P::flat_index(*s.buffer, s.indices);
    int64_t id = s.buffer->id;
    if (!vec_ || !P::uses_var(flat, vec_->var_id)) {
      llvm::Value* idx = vec_ ? scalar_at_lane0(flat) : expr(flat).v;
      guard_nonempty(nullptr, [&]() -> llvm::Value* {
        llvm::Value* v = val.v;
        if (val.vec) {
          // The serial loop leaves the value of the last active lane.
          llvm::Value* lane = llvm::ConstantInt::get(i32_, vec_->width - 1);
          if (vec_->mask) {
            llvm::Type* bits_ty = b_.getIntNTy(vec_->width);
            llvm::Value* bits = b_.CreateBitCast(vec_->mask, bits_ty);
            llvm::Value* lz = b_.CreateBinaryIntrinsic(llvm::Intrinsic::ctlz, bits, b_.getFalse());
            lane = b_.CreateSub(llvm::ConstantInt::get(bits_ty, vec_->width - 1), lz);
          }
          v = b_.CreateExtractElement(v, lane);
        }
        llvm::Value* p = b_.CreateInBoundsGEP(mt, bb.ptr, idx);
        tag(b_.CreateAlignedStore(compute_to_mem(v, t), p, elem_align(t)), id);
        return nullptr;
      });
      return;
    }
    llvm::Value* v = compute_to_mem(as_vec(val), t);
    auto coef = P::affine_coefficient(flat, vec_->var_id);
    if (coef && *coef == 1) {
      llvm::Value* p = b_.CreateInBoundsGEP(mt, bb.ptr, scalar_at_lane0(flat));
      if (vec_->mask)
        tag(b_.CreateMaskedStore(v, p, elem_align(t), vec_->mask), id);
      else
        tag(b_.CreateAlignedStore(v, p, elem_align(t)), id);
      return;
    }
    llvm::Value* ptrs = b_.CreateInBoundsGEP(mt, bb.ptr, expr(flat).v);
    tag(b_.CreateMaskedScatter(v, ptrs, elem_align(t), vec_->mask), id);
  }

  void if_then_else(const P::StmtNode& s) {
    Val c = expr(s.condition);
    llvm::Function* fn = frame_->fn;
    if (!c.vec) {
      auto* then_bb = llvm::BasicBlock::Create(ctx_, "then", fn);
      auto* else_bb = s.else_case ? llvm::BasicBlock::Create(ctx_, "else", fn) : nullptr;
      auto* join = llvm::BasicBlock::Create(ctx_, "endif", fn);
      b_.CreateCondBr(c.v, then_bb, else_bb ? else_bb : join);
      b_.SetInsertPoint(then_bb);
      stmt(s.then_case);
      b_.CreateBr(join);
      if (else_bb) {
        b_.SetInsertPoint(else_bb);
        stmt(s.else_case);
        b_.CreateBr(join);
      }
      b_.SetInsertPoint(join);
      return;
    }
    llvm::Value* outer = vec_->mask;
    llvm::Value* mt = outer ? b_.CreateAnd(outer, c.v) : c.v;
    masked_branch(mt, s.then_case);
    if (s.else_case) {
      llvm::Value* nc = b_.CreateNot(c.v);
      masked_branch(outer ? b_.CreateAnd(outer, nc) : nc, s.else_case);
    }
  }

  // Runs `body` for the lanes in `mask`: unmasked when all lanes are active (the common case
  // of a boundary guard), masked when only some are, not at all when none is.
  void masked_branch(llvm::Value* mask, const P::Stmt& body) {
    llvm::Function* fn = frame_->fn;
    auto* join = llvm::BasicBlock::Create(ctx_, "vif.end", fn);
    ++vec_->if_depth;
    if (vec_->if_depth <= kMaxFastPathDepth && !vec_->mask) {
      auto* full = llvm::BasicBlock::Create(ctx_, "vif.all", fn);
      auto* partial = llvm::BasicBlock::Create(ctx_, "vif.some", fn);
      b_.CreateCondBr(b_.CreateAndReduce(mask), full, partial);
      b_.SetInsertPoint(full);
      stmt(body);
      b_.CreateBr(join);
      b_.SetInsertPoint(partial);
    }
    auto* some = llvm::BasicBlock::Create(ctx_, "vif.masked", fn);
    b_.CreateCondBr(b_.CreateOrReduce(mask), some, join);
    b_.SetInsertPoint(some);
    with_mask(mask, true, [&] {
      stmt(body);
      return 0;
    });
    b_.CreateBr(join);
    --vec_->if_depth;
    b_.SetInsertPoint(join);
  }

  // Stack storage is allocated once in the function's entry block (so that a loop around the
  // Allocate does not grow the stack); big buffers come from the heap per execution.
  void allocate(const P::StmtNode& s) {
    const P::BufferNode& buf = *s.buffer;
    int64_t bytes = buf.num_elements() * std::max(1, buf.dtype.bytes());
    if (bytes <= 0) bytes = 1;
    llvm::Value* p;
    bool heap = bytes > cfg_.max_stack_alloc_bytes;
    if (!heap) {
      llvm::BasicBlock& entry = frame_->fn->getEntryBlock();
      llvm::IRBuilder<> eb(&entry, entry.begin());
      auto* a = eb.CreateAlloca(llvm::ArrayType::get(i8_, static_cast<uint64_t>(bytes)), nullptr,
                                buf.name);
      a->setAlignment(llvm::Align(kLocalAlign));
      p = a;
    } else {
      int64_t rounded = (bytes + kLocalAlign - 1) / kLocalAlign * kLocalAlign;
      llvm::FunctionCallee alloc = m_.getOrInsertFunction(
          "aligned_alloc", llvm::FunctionType::get(ptr_, {i64_, i64_}, false));
      p = b_.CreateCall(alloc, {b_.getInt64(kLocalAlign), b_.getInt64(rounded)}, buf.name);
      if (frame_->error_block || frame_->fn->getName() == cfg_.symbol) {
        if (!frame_->error_block) {
          frame_->error_block = llvm::BasicBlock::Create(ctx_, "alloc.fail", frame_->fn);
          llvm::IRBuilder<> eb(frame_->error_block);
          eb.CreateRet(llvm::ConstantInt::get(i32_, MT_LLVM_ERR_ALLOC));
        }
        auto* ok = llvm::BasicBlock::Create(ctx_, "alloc.ok", frame_->fn);
        b_.CreateCondBr(b_.CreateIsNull(p), frame_->error_block, ok);
        b_.SetInsertPoint(ok);
      }
    }
    frame_->buffers[buf.id] = {p, &buf};
    stmt(s.body);
    frame_->buffers.erase(buf.id);
    if (heap) {
      llvm::FunctionCallee fr =
          m_.getOrInsertFunction("free", llvm::FunctionType::get(b_.getVoidTy(), {ptr_}, false));
      b_.CreateCall(fr, {p});
    }
  }

  void for_loop(const P::StmtNode& s) {
    if (s.extent <= 0) return;
    int64_t id = s.loop_var->var_id;
    bounds_[id] = {0, s.extent - 1};
    if (horizontal_sum(s) || transposed_copy(s) || amx_block(s) || amx_product(s) || pair_copy(s)) {
      bounds_.erase(id);
      return;
    }
    switch (s.for_kind) {
    case P::ForKind::Vectorized:
      if (!vec_) {
        vector_loop(s);
        break;
      }
      serial_loop(s, nullptr); // the outer vectorized loop already uses the lanes
      break;
    case P::ForKind::Unrolled:
      unrolled_loop(s);
      break;
    case P::ForKind::Parallel:
      if (!vec_) {
        parallel_loop(s);
        break;
      }
      serial_loop(s, nullptr);
      break;
    case P::ForKind::Serial:
      // Lowering's automatic unrolling by hint: LLVM's loop unroller expands it.
      serial_loop(s, s.annotations.count(P::kUnrollHintAnnotation)
                         ? loop_hint("llvm.loop.unroll.full")
                         : nullptr);
      break;
    case P::ForKind::ThreadBinding:
      serial_loop(s, nullptr);
      break;
    }
    bounds_.erase(id);
  }

  // A short serial loop that only adds its terms into one float location,
  //   for k in E: B[idx] = B[idx] + e(k)     (idx without k; E a power of two, 4 to kMaxLanes)
  // -- the combination of vector-lane partial sums, VectorRFactor's out[i, j] = sum over the
  // lanes of acc[i, j, lane] -- becomes e over all k as one vector and a reassociated vector
  // reduction, which LLVM lowers to a tree of shuffles and adds. Left to the loop, LLVM kept
  // the sequential chain of E dependent scalar adds per location (the update is reassociable,
  // but LLVM vectorises such a loop only where its cost model sees a gain), and a dense(M=128)
  // register tile of 8 x 3 outputs spent a quarter of its time there.
  bool horizontal_sum(const P::StmtNode& s) {
    if (vec_ || (s.for_kind != P::ForKind::Serial && s.for_kind != P::ForKind::Unrolled) ||
        s.extent < 4 || s.extent > static_cast<int64_t>(kMaxLanes) ||
        (s.extent & (s.extent - 1)) != 0)
      return false;
    const P::StmtNode* st = s.body.get();
    while (st && st->kind == P::StmtKind::Seq && st->stmts.size() == 1)
      st = st->stmts[0].get();
    if (!st || st->kind != P::StmtKind::Store || !is_reduction_update(*st) ||
        st->value->kind != P::ExprKind::Add || !(st->buffer->dtype == P::DType::f32()))
      return false;
    const int64_t k = s.loop_var->var_id;
    P::Expr flat = P::flat_index(*st->buffer, st->indices);
    if (P::uses_var(flat, k)) return false;
    // The term must not read what the loop writes (it would see the partial sums).
    bool reads_target = false;
    P::post_order_visit(st->value->args[1], [&](const P::Expr& x) {
      reads_target =
          reads_target || (x->kind == P::ExprKind::Load && x->buffer->id == st->buffer->id);
    });
    if (reads_target) return false;
    const BufferBinding& bb = binding(st->buffer, "store");
    llvm::Type* mt = mem_type(st->buffer->dtype);
    llvm::Value* at = b_.CreateInBoundsGEP(mt, bb.ptr, expr(flat).v);
    VecCtx ctx;
    ctx.var_id = k;
    ctx.width = static_cast<unsigned>(s.extent);
    ctx.base = b_.getInt64(0);
    vec_ = &ctx;
    llvm::Value* terms = as_vec(expr(st->value->args[1]));
    vec_ = nullptr;
    llvm::Value* start = b_.CreateAlignedLoad(mt, at, elem_align(st->buffer->dtype));
    tag(start, st->buffer->id);
    llvm::IRBuilderBase::FastMathFlagGuard keep(b_);
    llvm::FastMathFlags fmf = b_.getFastMathFlags();
    fmf.setAllowReassoc(true);
    b_.setFastMathFlags(fmf);
    llvm::Value* sum = b_.CreateFAddReduce(start, terms);
    tag(b_.CreateAlignedStore(sum, at, elem_align(st->buffer->dtype)), st->buffer->id);
    return true;
  }

  // A copy that transposes (transposed_copy.h), in blocks of B x B elements, B the lanes of
  // one machine vector of f32: for each block, B vectors loaded contiguously along the outer
  // variable a (one per value of the vectorized v), transposed in registers, stored
  // contiguously along v. Measured on the dense layer's weight packing: README (operator
  // suite, AVX-512).
  bool transposed_copy(const P::StmtNode& s) {
    const int64_t block = cfg_.target.vector_bits() / 32;
    if (vec_ || block < 4) return false;
    const std::optional<TransposedCopy> tc = match_transposed_copy(s, block);
    if (!tc) return false;
    const P::StmtNode& inner = *tc->inner;
    check_store_dtype(*tc->store);
    const unsigned lanes = static_cast<unsigned>(block);
    bounds_[tc->inner_var] = {0, inner.extent - 1};
    auto at = [&](llvm::Value* base, unsigned k) {
      return b_.CreateAdd(base, b_.getInt64(k), "", true, true);
    };
    auto with_vector = [&](int64_t var, llvm::Value* base, const std::function<void()>& f) {
      VecCtx ctx;
      ctx.var_id = var;
      ctx.width = lanes;
      ctx.base = base;
      vec_ = &ctx;
      f();
      vec_ = nullptr;
    };
    counted_loop(
        s.extent / block, s.loop_var->name + ".tr",
        [&](llvm::Value* ia) {
          llvm::Value* a0 = b_.CreateMul(ia, b_.getInt64(block), "", true, true);
          counted_loop(
              inner.extent / block, inner.loop_var->name + ".tr",
              [&](llvm::Value* iv) {
                llvm::Value* v0 = b_.CreateMul(iv, b_.getInt64(block), "", true, true);
                std::vector<llvm::Value*> rows(lanes);
                for (unsigned r = 0; r < lanes; ++r) {
                  frame_->vars[tc->inner_var] = at(v0, r);
                  with_vector(tc->outer_var, a0, [&] { rows[r] = as_vec(expr(tc->store->value)); });
                }
                frame_->vars.erase(tc->inner_var);
                transpose_in_registers(rows);
                for (unsigned c = 0; c < lanes; ++c) {
                  frame_->vars[tc->outer_var] = at(a0, c);
                  with_vector(tc->inner_var, v0, [&] {
                    store_value(*tc->store, Val{rows[c], true});
                  });
                }
                frame_->vars.erase(tc->outer_var);
              },
              nullptr);
        },
        nullptr);
    bounds_.erase(tc->inner_var);
    return true;
  }

  // ---- AMX tile products (amx_tile.h) ---------------------------------------------------------

  bool has_amx_product() const {
    bool found = false;
    P::visit_stmts(prog_.body, [&](const P::Stmt& s) {
      found = found || (is_amx_marked(*s) && match_amx_tile(*s));
      return !found;
    });
    return found;
  }

  // Linux hands out AMX's tile state only to a process that asked for it (arch_prctl
  // ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); without that the first tile instruction is
  // SIGILL. The kernel asks once per module, at entry, so that an ahead-of-time library needs
  // no help from its host, and fails with MT_LLVM_ERR_UNSUPPORTED where the system refuses.
  void request_amx() {
    constexpr int64_t kSysArchPrctl = 158, kReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    auto* state = new llvm::GlobalVariable(m_, i32_, false, llvm::GlobalValue::InternalLinkage,
                                           llvm::ConstantInt::get(i32_, 0), "mt.amx.state");
    llvm::Function* fn = frame_->fn;
    auto* ask = llvm::BasicBlock::Create(ctx_, "amx.ask", fn);
    auto* refused = llvm::BasicBlock::Create(ctx_, "amx.refused", fn);
    auto* ready = llvm::BasicBlock::Create(ctx_, "amx.ready", fn);
    llvm::LoadInst* now = b_.CreateAlignedLoad(i32_, state, llvm::Align(4));
    now->setAtomic(llvm::AtomicOrdering::Monotonic);
    b_.CreateCondBr(b_.CreateICmpEQ(now, b_.getInt32(1)), ready, ask);
    b_.SetInsertPoint(ask);
    llvm::FunctionCallee syscall =
        m_.getOrInsertFunction("syscall", llvm::FunctionType::get(i64_, {i64_}, true));
    llvm::Value* rc =
        b_.CreateCall(syscall, {b_.getInt64(kSysArchPrctl), b_.getInt64(kReqXcompPerm),
                                b_.getInt64(kXfeatureXtiledata)});
    llvm::Value* ok = b_.CreateICmpEQ(rc, b_.getInt64(0));
    llvm::StoreInst* keep = b_.CreateAlignedStore(
        b_.CreateSelect(ok, b_.getInt32(1), b_.getInt32(2)), state, llvm::Align(4));
    keep->setAtomic(llvm::AtomicOrdering::Monotonic);
    b_.CreateCondBr(ok, ready, refused);
    b_.SetInsertPoint(refused);
    b_.CreateRet(llvm::ConstantInt::get(i32_, MT_LLVM_ERR_UNSUPPORTED));
    b_.SetInsertPoint(ready);
  }

  // A block of tile products over k0 (match_amx_block): the accumulators loaded before the
  // loop, carried through it in tile registers, stored after it.
  bool amx_block(const P::StmtNode& s) {
    if (vec_ || !amx_) return false;
    const std::optional<AmxBlock> blk = match_amx_block(s);
    if (!blk) return false;
    const AmxTile& t = blk->tile;
    const int64_t k0 = s.loop_var->var_id;
    bounds_[k0] = {0, s.extent - 1};
    if (blk->rows_var >= 0) bounds_[blk->rows_var] = {0, blk->rows - 1};
    if (blk->cols_var >= 0) bounds_[blk->cols_var] = {0, blk->cols - 1};
    for (int64_t v : {t.i_var, t.j_var, t.k_var})
      bounds_[v] = {0, (v == t.i_var ? t.m : v == t.j_var ? t.n : t.k) - 1};
    auto i16 = [&](int64_t v) { return b_.getInt16(static_cast<uint16_t>(v)); };
    llvm::Value *rows = i16(t.m), *c_bytes = i16(t.n * 4), *a_bytes = i16(t.k * 2);
    auto bind = [&](int64_t var, int64_t value) {
      if (var >= 0) frame_->vars[var] = b_.getInt64(value);
    };
    auto unbind = [&](int64_t var) {
      if (var >= 0) frame_->vars.erase(var);
    };
    const P::StmtNode& st = *t.store;
    const BufferBinding& cb = binding(st.buffer, "store");
    const P::Expr c_flat = P::flat_index(*st.buffer, st.indices);
    llvm::Value* c_stride = b_.getInt64(t.c_row_stride * 4);
    const size_t n = static_cast<size_t>(blk->rows * blk->cols);
    std::vector<llvm::Value*> c_ptr(n), acc(n);
    frame_->vars[k0] = b_.getInt64(0);
    for (int64_t r = 0; r < blk->rows; ++r)
      for (int64_t c = 0; c < blk->cols; ++c) {
        bind(blk->rows_var, r);
        bind(blk->cols_var, c);
        const size_t x = static_cast<size_t>(r * blk->cols + c);
        c_ptr[x] = b_.CreateInBoundsGEP(b_.getFloatTy(), cb.ptr, at_tile_origin(c_flat, t));
        acc[x] = b_.CreateIntrinsic(llvm::Intrinsic::x86_tileloadd64_internal, {},
                                    {rows, c_bytes, c_ptr[x], c_stride});
      }
    llvm::Function* fn = frame_->fn;
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, "amx.k", fn);
    auto* exit = llvm::BasicBlock::Create(ctx_, "amx.k.end", fn);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* iv = b_.CreatePHI(i64_, 2, "amx.k0");
    iv->addIncoming(b_.getInt64(0), pre);
    std::vector<llvm::PHINode*> carried(n);
    for (size_t x = 0; x < n; ++x) {
      carried[x] = b_.CreatePHI(acc[x]->getType(), 2, "amx.acc");
      carried[x]->addIncoming(acc[x], pre);
    }
    frame_->vars[k0] = iv;
    std::vector<llvm::Value*> a(static_cast<size_t>(blk->rows)), bt(static_cast<size_t>(blk->cols));
    for (int64_t r = 0; r < blk->rows; ++r) {
      bind(blk->rows_var, r);
      a[static_cast<size_t>(r)] = b_.CreateIntrinsic(
          llvm::Intrinsic::x86_tileloadd64_internal, {},
          {rows, a_bytes, tile_origin(t.a.load, t), b_.getInt64(t.a.row_stride * 2)});
    }
    unbind(blk->rows_var);
    for (int64_t c = 0; c < blk->cols; ++c) {
      bind(blk->cols_var, c);
      bt[static_cast<size_t>(c)] = b_.CreateIntrinsic(
          llvm::Intrinsic::x86_tileloadd64_internal, {},
          {i16(t.k / 2), c_bytes, tile_origin(t.b.load, t), b_.getInt64(t.b.pair_row_stride * 2)});
    }
    unbind(blk->cols_var);
    std::vector<llvm::Value*> sum(n);
    for (int64_t r = 0; r < blk->rows; ++r)
      for (int64_t c = 0; c < blk->cols; ++c) {
        const size_t x = static_cast<size_t>(r * blk->cols + c);
        sum[x] = b_.CreateIntrinsic(llvm::Intrinsic::x86_tdpbf16ps_internal, {},
                                    {rows, c_bytes, a_bytes, carried[x], a[static_cast<size_t>(r)],
                                     bt[static_cast<size_t>(c)]});
      }
    llvm::Value* next = b_.CreateAdd(iv, b_.getInt64(1), "amx.k0.next", true, true);
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    b_.CreateCondBr(b_.CreateICmpSLT(next, b_.getInt64(s.extent)), head, exit);
    iv->addIncoming(next, latch);
    for (size_t x = 0; x < n; ++x)
      carried[x]->addIncoming(sum[x], latch);
    b_.SetInsertPoint(exit);
    for (size_t x = 0; x < n; ++x)
      b_.CreateIntrinsic(llvm::Intrinsic::x86_tilestored64_internal, {},
                         {rows, c_bytes, c_ptr[x], c_stride, sum[x]});
    frame_->vars.erase(k0);
    for (int64_t v : {k0, blk->rows_var, blk->cols_var, t.i_var, t.j_var, t.k_var})
      bounds_.erase(v);
    return true;
  }

  // A marked nest as one tdpbf16ps: C's tile loaded, A's and B's loaded where they are laid
  // out for it or converted into stack tiles, multiplied, C stored back.
  bool amx_product(const P::StmtNode& s) {
    if (vec_ || !amx_ || !is_amx_marked(s)) return false;
    const std::optional<AmxTile> t = match_amx_tile(s);
    if (!t) return false;
    for (int64_t v : {t->i_var, t->j_var, t->k_var})
      bounds_[v] = {0, (v == t->i_var ? t->m : v == t->j_var ? t->n : t->k) - 1};
    llvm::Value* a_ptr = nullptr;
    llvm::Value* a_stride = nullptr;
    llvm::Value* b_ptr = nullptr;
    llvm::Value* b_stride = nullptr;
    if (t->a.direct) {
      a_ptr = tile_origin(t->a.load, *t);
      a_stride = b_.getInt64(t->a.row_stride * 2);
    } else {
      a_ptr = a_tile_on_stack(*t);
      a_stride = b_.getInt64(kAmxRowBytes);
    }
    if (t->b.direct) {
      b_ptr = tile_origin(t->b.load, *t);
      b_stride = b_.getInt64(t->b.pair_row_stride * 2);
    } else {
      b_ptr = b_tile_on_stack(*t);
      b_stride = b_.getInt64(kAmxRowBytes);
    }
    const P::StmtNode& st = *t->store;
    const BufferBinding& cb = binding(st.buffer, "store");
    llvm::Value* c_ptr = b_.CreateInBoundsGEP(
        b_.getFloatTy(), cb.ptr, at_tile_origin(P::flat_index(*st.buffer, st.indices), *t));
    llvm::Value* c_stride = b_.getInt64(t->c_row_stride * 4);
    auto i16 = [&](int64_t v) { return b_.getInt16(static_cast<uint16_t>(v)); };
    llvm::Value *rows = i16(t->m), *c_bytes = i16(t->n * 4), *a_bytes = i16(t->k * 2);
    llvm::Value* c = b_.CreateIntrinsic(llvm::Intrinsic::x86_tileloadd64_internal, {},
                                        {rows, c_bytes, c_ptr, c_stride});
    llvm::Value* a = b_.CreateIntrinsic(llvm::Intrinsic::x86_tileloadd64_internal, {},
                                        {rows, a_bytes, a_ptr, a_stride});
    llvm::Value* b = b_.CreateIntrinsic(llvm::Intrinsic::x86_tileloadd64_internal, {},
                                        {i16(t->k / 2), c_bytes, b_ptr, b_stride});
    llvm::Value* sum = b_.CreateIntrinsic(llvm::Intrinsic::x86_tdpbf16ps_internal, {},
                                          {rows, c_bytes, a_bytes, c, a, b});
    b_.CreateIntrinsic(llvm::Intrinsic::x86_tilestored64_internal, {},
                       {rows, c_bytes, c_ptr, c_stride, sum});
    for (int64_t v : {t->i_var, t->j_var, t->k_var})
      bounds_.erase(v);
    return true;
  }

  // A copy into a panel in pairs (match_pair_copy), written a whole pair row (64 bytes: 16
  // pairs) at a time.
  bool pair_copy(const P::StmtNode& s) {
    if (vec_ || !amx_) return false;
    const std::optional<PairCopy> pc = match_pair_copy(s);
    if (!pc) return false;
    const P::StmtNode& st = *pc->store;
    const BufferBinding& bb = binding(st.buffer, "store");
    const P::Expr flat = P::flat_index(*st.buffer, st.indices);
    bounds_[pc->row_var] = {0, pc->rows - 1};
    for (const auto& [v, e] : pc->col_loops)
      bounds_[v] = {0, e - 1};
    const int64_t w = kAmxMaxCols;
    const int64_t inner = pc->col_loops.back().first;
    auto times = [&](llvm::Value* i, int64_t n) {
      return b_.CreateMul(i, b_.getInt64(n), "", true, true);
    };
    auto plus = [&](llvm::Value* a, int64_t n) {
      return b_.CreateAdd(a, b_.getInt64(n), "", true, true);
    };
    // c's loop variables for column c (a mixed-radix split of it).
    auto bind_cols = [&](llvm::Value* c) {
      for (auto it = pc->col_loops.rbegin(); it != pc->col_loops.rend(); ++it) {
        const int64_t e = it->second;
        frame_->vars[it->first] =
            std::next(it) == pc->col_loops.rend() ? c : b_.CreateURem(c, b_.getInt64(e));
        c = b_.CreateUDiv(c, b_.getInt64(e));
      }
    };
    auto unbind = [&] {
      frame_->vars.erase(pc->row_var);
      for (const auto& [v, e] : pc->col_loops)
        frame_->vars.erase(v);
    };
    // The address of pair (r // 2, c) for r even.
    auto pair_at = [&](llvm::Value* r, llvm::Value* c) {
      frame_->vars[pc->row_var] = r;
      bind_cols(c);
      llvm::Value* p = b_.CreateInBoundsGEP(b_.getInt16Ty(), bb.ptr, expr(flat).v);
      unbind();
      return p;
    };
    if (!pc->along_rows) {
      std::vector<int> zip;
      for (int j = 0; j < static_cast<int>(w); ++j) {
        zip.push_back(j);
        zip.push_back(j + static_cast<int>(w));
      }
      counted_loop(
          pc->rows / 2, "pairs",
          [&](llvm::Value* p) {
            llvm::Value* r0 = times(p, 2);
            counted_loop(
                pc->cols / w, "pairs.cols",
                [&](llvm::Value* cb) {
                  llvm::Value* c0 = times(cb, w);
                  bind_cols(c0);
                  llvm::Value* base = frame_->vars[inner];
                  frame_->vars.erase(inner);
                  frame_->vars[pc->row_var] = r0;
                  llvm::Value* even = bf16_row(st.value, inner, w, base);
                  frame_->vars[pc->row_var] = plus(r0, 1);
                  llvm::Value* odd = bf16_row(st.value, inner, w, base);
                  unbind();
                  tag(b_.CreateAlignedStore(b_.CreateShuffleVector(even, odd, zip), pair_at(r0, c0),
                                            llvm::Align(2)),
                      st.buffer->id);
                },
                nullptr);
          },
          nullptr);
    } else {
      const int64_t depth = kAmxMaxDepth;
      llvm::Type* pairs = llvm::FixedVectorType::get(i32_, static_cast<unsigned>(w));
      counted_loop(
          pc->rows / depth, "pairs",
          [&](llvm::Value* rb) {
            llvm::Value* r0 = times(rb, depth);
            counted_loop(
                pc->cols / w, "pairs.cols",
                [&](llvm::Value* cb) {
                  llvm::Value* c0 = times(cb, w);
                  std::vector<llvm::Value*> cols(static_cast<size_t>(w));
                  for (int64_t c = 0; c < w; ++c) {
                    bind_cols(plus(c0, c));
                    cols[static_cast<size_t>(c)] =
                        b_.CreateBitCast(bf16_row(st.value, pc->row_var, depth, r0), pairs);
                  }
                  unbind();
                  transpose_in_registers(cols);
                  for (int64_t p = 0; p < w; ++p)
                    tag(b_.CreateAlignedStore(cols[static_cast<size_t>(p)],
                                              pair_at(plus(r0, 2 * p), c0), llvm::Align(2)),
                        st.buffer->id);
                },
                nullptr);
          },
          nullptr);
    }
    bounds_.erase(pc->row_var);
    for (const auto& [v, e] : pc->col_loops)
      bounds_.erase(v);
    return true;
  }

  // `flat` with the tile's three variables at 0.
  llvm::Value* at_tile_origin(const P::Expr& flat, const AmxTile& t) {
    for (int64_t v : {t.i_var, t.j_var, t.k_var})
      frame_->vars[v] = b_.getInt64(0);
    llvm::Value* at = expr(flat).v;
    for (int64_t v : {t.i_var, t.j_var, t.k_var})
      frame_->vars.erase(v);
    return at;
  }

  llvm::Value* tile_origin(const P::Expr& load, const AmxTile& t) {
    const BufferBinding& bb = binding(load->buffer, "load");
    return b_.CreateInBoundsGEP(b_.getInt16Ty(), bb.ptr,
                                at_tile_origin(P::flat_index(*load->buffer, load->args), t));
  }

  llvm::Value* stack_tile(const char* name) {
    llvm::BasicBlock& entry = frame_->fn->getEntryBlock();
    llvm::IRBuilder<> eb(&entry, entry.begin());
    auto* a = eb.CreateAlloca(llvm::ArrayType::get(i8_, kAmxMaxRows * kAmxRowBytes), nullptr, name);
    a->setAlignment(llvm::Align(kLocalAlign));
    return a;
  }

  // `value` over `var` (base .. base + width - 1) as one vector of bf16 bits, other variables as
  // bound.
  llvm::Value* bf16_row(const P::Expr& value, int64_t var, int64_t width,
                        llvm::Value* base = nullptr) {
    VecCtx ctx;
    ctx.var_id = var;
    ctx.width = static_cast<unsigned>(width);
    ctx.base = base ? base : b_.getInt64(0);
    vec_ = &ctx;
    llvm::Value* v = as_vec(expr(value));
    vec_ = nullptr;
    return f32_to_bf16_bits(v);
  }

  // A's rows, each of k bf16 values.
  llvm::Value* a_tile_on_stack(const AmxTile& t) {
    llvm::Value* tile = stack_tile("amx.a.stack");
    for (int64_t r = 0; r < t.m; ++r) {
      frame_->vars[t.i_var] = b_.getInt64(r);
      llvm::Value* row = bf16_row(t.a.value, t.k_var, t.k);
      b_.CreateAlignedStore(row, b_.CreateConstInBoundsGEP1_64(i8_, tile, r * kAmxRowBytes),
                            llvm::Align(2));
    }
    frame_->vars.erase(t.i_var);
    return tile;
  }

  // B's rows 2p and 2p + 1 interleaved into row p: (B[2p, j], B[2p + 1, j]) for each j.
  llvm::Value* b_tile_on_stack(const AmxTile& t) {
    llvm::Value* tile = stack_tile("amx.b.stack");
    std::vector<int> zip;
    for (int j = 0; j < static_cast<int>(t.n); ++j) {
      zip.push_back(j);
      zip.push_back(j + static_cast<int>(t.n));
    }
    for (int64_t p = 0; p < t.k / 2; ++p) {
      frame_->vars[t.k_var] = b_.getInt64(2 * p);
      llvm::Value* even = bf16_row(t.b.value, t.j_var, t.n);
      frame_->vars[t.k_var] = b_.getInt64(2 * p + 1);
      llvm::Value* odd = bf16_row(t.b.value, t.j_var, t.n);
      b_.CreateAlignedStore(b_.CreateShuffleVector(even, odd, zip),
                            b_.CreateConstInBoundsGEP1_64(i8_, tile, p * kAmxRowBytes),
                            llvm::Align(2));
    }
    frame_->vars.erase(t.k_var);
    return tile;
  }

  // rows[r][l] becomes rows[l][r] (B vectors of B lanes, B a power of two): stage b exchanges
  // bit b of the row with bit b of the lane, pairing rows r and r + 2^b by two-source shuffles.
  void transpose_in_registers(std::vector<llvm::Value*>& rows) {
    const unsigned n = static_cast<unsigned>(rows.size());
    for (unsigned step = 1; step < n; step *= 2) {
      std::vector<int> lo_mask(n), hi_mask(n);
      for (unsigned l = 0; l < n; ++l) {
        const bool high = (l & step) != 0;
        lo_mask[l] = static_cast<int>(high ? n + l - step : l);
        hi_mask[l] = static_cast<int>(high ? n + l : l + step);
      }
      for (unsigned r = 0; r < n; ++r) {
        if (r & step) continue;
        llvm::Value* lo = rows[r];
        llvm::Value* hi = rows[r + step];
        rows[r] = b_.CreateShuffleVector(lo, hi, lo_mask, "transpose");
        rows[r + step] = b_.CreateShuffleVector(lo, hi, hi_mask, "transpose");
      }
    }
  }

  // for (i = 0; i < extent; ++i) body(i), in rotated form (extent >= 1 is known).
  void counted_loop(int64_t extent, const std::string& name,
                    const std::function<void(llvm::Value*)>& body, llvm::MDNode* loop_md) {
    llvm::Function* fn = frame_->fn;
    auto* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(ctx_, name + ".body", fn);
    auto* exit = llvm::BasicBlock::Create(ctx_, name + ".end", fn);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    auto* i = b_.CreatePHI(i64_, 2, name);
    i->addIncoming(b_.getInt64(0), pre);
    body(i);
    llvm::Value* next = b_.CreateAdd(i, b_.getInt64(1), name + ".next", true, true);
    auto* latch = b_.GetInsertBlock();
    auto* br = b_.CreateCondBr(b_.CreateICmpSLT(next, b_.getInt64(extent)), head, exit);
    if (loop_md) br->setMetadata(llvm::LLVMContext::MD_loop, loop_md);
    i->addIncoming(next, latch);
    b_.SetInsertPoint(exit);
  }

  void bind_and_emit(const P::StmtNode& s, llvm::Value* i) {
    int64_t id = s.loop_var->var_id;
    frame_->vars[id] = i;
    stmt(s.body);
    frame_->vars.erase(id);
  }

  void serial_loop(const P::StmtNode& s, llvm::MDNode* md) {
    if (s.extent == 1) return bind_and_emit(s, b_.getInt64(0));
    counted_loop(
        s.extent, s.loop_var->name, [&](llvm::Value* i) { bind_and_emit(s, i); }, md);
  }

  llvm::MDNode* loop_hint(const char* name) {
    llvm::Metadata* hint = llvm::MDNode::get(ctx_, {llvm::MDString::get(ctx_, name)});
    auto temp = llvm::MDNode::getTemporary(ctx_, {});
    llvm::MDNode* md = llvm::MDNode::get(ctx_, {temp.get(), hint});
    md->replaceOperandWith(0, md);
    return md;
  }

  void unrolled_loop(const P::StmtNode& s) {
    if (s.extent > kMaxUnroll) return serial_loop(s, loop_hint("llvm.loop.unroll.full"));
    int64_t body = unroll_weight(s.body);
    if (body > 0 && s.extent > kMaxUnrolledWeight / body) return serial_loop(s, nullptr);
    for (int64_t k = 0; k < s.extent; ++k)
      bind_and_emit(s, b_.getInt64(k));
  }

  void vector_loop(const P::StmtNode& s) {
    VectorPlan plan = plan_vector_loop(s);
    if (!plan.vectorize) return serial_loop(s, nullptr);
    unsigned width = static_cast<unsigned>(std::min<int64_t>(s.extent, kMaxLanes));
    int64_t chunks = s.extent / width;
    unsigned tail = static_cast<unsigned>(s.extent % width);
    auto body = [&](llvm::Value* base, unsigned w) {
      VecCtx ctx;
      ctx.var_id = s.loop_var->var_id;
      ctx.width = w;
      ctx.base = base;
      vec_ = &ctx;
      stmt(s.body);
      vec_ = nullptr;
    };
    if (chunks == 1)
      body(b_.getInt64(0), width);
    else
      counted_loop(
          chunks, s.loop_var->name + ".chunk",
          [&](llvm::Value* c) { body(b_.CreateMul(c, b_.getInt64(width), "", true, true), width); },
          nullptr);
    if (tail) body(b_.getInt64(chunks * width), tail);
  }

  // The body becomes `void body(int64_t i, void* closure)`; the closure holds the runtime
  // pointer and every buffer pointer and loop variable visible here.
  void parallel_loop(const P::StmtNode& s) {
    std::vector<llvm::Type*> fields{ptr_};
    std::vector<std::pair<int64_t, BufferBinding>> bufs(frame_->buffers.begin(),
                                                        frame_->buffers.end());
    std::vector<std::pair<int64_t, llvm::Value*>> vars(frame_->vars.begin(), frame_->vars.end());
    for (size_t k = 0; k < bufs.size(); ++k)
      fields.push_back(ptr_);
    for (size_t k = 0; k < vars.size(); ++k)
      fields.push_back(i64_);
    auto* closure_ty = llvm::StructType::get(ctx_, fields);

    auto* task_ty = llvm::FunctionType::get(b_.getVoidTy(), {i64_, ptr_}, false);
    auto* task = llvm::Function::Create(task_ty, llvm::Function::InternalLinkage,
                                        cfg_.symbol + "_par" + std::to_string(++n_outlined_), m_);
    set_attributes(task);

    // Caller side: fill the closure and dispatch.
    llvm::BasicBlock& entry = frame_->fn->getEntryBlock();
    llvm::IRBuilder<> eb(&entry, entry.begin());
    auto* closure = eb.CreateAlloca(closure_ty, nullptr, "closure");
    unsigned f = 0;
    b_.CreateStore(frame_->rt, b_.CreateStructGEP(closure_ty, closure, f++));
    for (auto& [id, bb] : bufs)
      b_.CreateStore(bb.ptr, b_.CreateStructGEP(closure_ty, closure, f++));
    for (auto& [id, v] : vars)
      b_.CreateStore(v, b_.CreateStructGEP(closure_ty, closure, f++));
    dispatch(task, closure, s.extent);

    // Callee side.
    auto saved_ip = b_.saveIP();
    Frame* outer = frame_;
    Frame inner;
    inner.fn = task;
    frame_ = &inner;
    b_.SetInsertPoint(llvm::BasicBlock::Create(ctx_, "entry", task));
    llvm::Value* env = task->getArg(1);
    f = 0;
    inner.rt = b_.CreateLoad(ptr_, b_.CreateStructGEP(closure_ty, env, f++), "rt");
    for (auto& [id, bb] : bufs)
      inner.buffers[id] = {b_.CreateLoad(ptr_, b_.CreateStructGEP(closure_ty, env, f++)), bb.node};
    for (auto& [id, v] : vars)
      inner.vars[id] = b_.CreateLoad(i64_, b_.CreateStructGEP(closure_ty, env, f++));
    bind_and_emit(s, task->getArg(0));
    b_.CreateRetVoid();
    frame_ = outer;
    b_.restoreIP(saved_ip);
  }

  // rt ? rt->parallel_for(rt->self, task, closure, n) : for (i < n) task(i, closure)
  void dispatch(llvm::Function* task, llvm::Value* closure, int64_t n) {
    llvm::Function* fn = frame_->fn;
    auto* with_rt = llvm::BasicBlock::Create(ctx_, "par.rt", fn);
    auto* serial = llvm::BasicBlock::Create(ctx_, "par.serial", fn);
    auto* join = llvm::BasicBlock::Create(ctx_, "par.end", fn);
    b_.CreateCondBr(b_.CreateIsNull(frame_->rt), serial, with_rt);
    b_.SetInsertPoint(with_rt);
    llvm::Value* self = b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(i8_, frame_->rt, 8));
    llvm::Value* pf = b_.CreateLoad(ptr_, b_.CreateConstInBoundsGEP1_64(i8_, frame_->rt, 16));
    auto* pf_ty = llvm::FunctionType::get(b_.getVoidTy(), {ptr_, ptr_, ptr_, i64_}, false);
    b_.CreateCall(pf_ty, pf, {self, task, closure, b_.getInt64(n)});
    b_.CreateBr(join);
    b_.SetInsertPoint(serial);
    counted_loop(
        n, "par.i",
        [&](llvm::Value* i) {
          b_.CreateCall(task, {i, closure});
        },
        nullptr);
    b_.CreateBr(join);
    b_.SetInsertPoint(join);
  }

  llvm::Module& m_;
  llvm::LLVMContext& ctx_;
  llvm::IRBuilder<> b_;
  const CodegenConfig& cfg_;
  bool fast_gather_ = false; // AVX-512 targets: a hardware gather beats scalar loads
  bool amx_ = false; // -fpmath=bf16 on a CPU with AMX-BF16: marked nests become tile products
  std::set<int64_t> bf16_params_; // params in bf16: weights streamed from memory (prefetch_ahead)
  const P::Program& prog_;
  llvm::Type *i1_, *i8_, *i32_, *i64_, *ptr_;
  Frame* frame_ = nullptr;
  VecCtx* vec_ = nullptr;
  P::BoundMap bounds_;
  std::map<int64_t, std::pair<llvm::MDNode*, llvm::MDNode*>> alias_;
  int n_outlined_ = 0;
};

} // namespace

std::unique_ptr<llvm::Module> generate_module(const P::Program& p, llvm::LLVMContext& ctx,
                                              const CodegenConfig& cfg) {
  if (!p.body) throw CodegenError("program '" + p.name + "' has no body");
  auto m = std::make_unique<llvm::Module>(cfg.symbol, ctx);
  m->setTargetTriple(cfg.target.triple);
  if (uses_amx(cfg)) {
    const P::Program q = with_amx_operands(p);
    CodeGen(*m, cfg, q).run();
  } else {
    CodeGen(*m, cfg, p).run();
  }
  std::string err;
  llvm::raw_string_ostream os(err);
  if (llvm::verifyModule(*m, &os))
    throw CodegenError("generated LLVM IR for '" + p.name + "' is invalid: " + os.str());
  return m;
}

} // namespace mt::llvm_cpu
