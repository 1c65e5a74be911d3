#include "math_ir.h"

#include <cmath>
#include <initializer_list>
#include <limits>

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

namespace mt::llvm_cpu {

namespace P = mt::sdk::program;

namespace {

class MathEmitter {
public:
  MathEmitter(llvm::IRBuilder<>& b, llvm::Type* t) : b_(b), t_(t) {
    llvm::Type* elem = t->getScalarType();
    int bits = static_cast<int>(elem->getPrimitiveSizeInBits());
    it_ = llvm::IntegerType::get(t->getContext(), bits);
    if (auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t))
      it_ = llvm::FixedVectorType::get(it_, vt->getNumElements());
  }

  llvm::Value* c(double v) { return llvm::ConstantFP::get(t_, v); }
  llvm::Value* ci(int64_t v) { return llvm::ConstantInt::get(it_, static_cast<uint64_t>(v), true); }
  llvm::Value* add(llvm::Value* a, llvm::Value* x) { return b_.CreateFAdd(a, x); }
  llvm::Value* sub(llvm::Value* a, llvm::Value* x) { return b_.CreateFSub(a, x); }
  llvm::Value* mul(llvm::Value* a, llvm::Value* x) { return b_.CreateFMul(a, x); }
  llvm::Value* fma(llvm::Value* a, llvm::Value* x, llvm::Value* y) {
    return b_.CreateIntrinsic(llvm::Intrinsic::fmuladd, {t_}, {a, x, y});
  }
  // Horner evaluation, highest coefficient first.
  llvm::Value* poly(llvm::Value* x, std::initializer_list<double> coeffs) {
    llvm::Value* acc = nullptr;
    for (double k : coeffs)
      acc = acc ? fma(acc, x, c(k)) : c(k);
    return acc;
  }
  llvm::Value* unary(llvm::Intrinsic::ID id, llvm::Value* x) {
    return b_.CreateUnaryIntrinsic(id, x);
  }
  llvm::Value* lt(llvm::Value* a, llvm::Value* x) { return b_.CreateFCmpOLT(a, x); }
  llvm::Value* gt(llvm::Value* a, llvm::Value* x) { return b_.CreateFCmpOGT(a, x); }
  llvm::Value* sel(llvm::Value* cnd, llvm::Value* a, llvm::Value* x) {
    return b_.CreateSelect(cnd, a, x);
  }
  llvm::Value* as_int(llvm::Value* x) { return b_.CreateBitCast(x, it_); }
  llvm::Value* as_float(llvm::Value* x) { return b_.CreateBitCast(x, t_); }
  llvm::Value* isnan(llvm::Value* x) { return b_.CreateFCmpUNO(x, x); }
  // 2^n for an integer-valued float n in [-150, 128], as two exact power-of-two factors so
  // that neither exponent field overflows.
  llvm::Value* scale_by_pow2(llvm::Value* y, llvm::Value* n) {
    llvm::Value* ni = b_.CreateFPToSI(n, it_);
    llvm::Value* n1 = b_.CreateAShr(ni, ci(1));
    llvm::Value* n2 = b_.CreateSub(ni, n1);
    auto pow2 = [&](llvm::Value* e) {
      return as_float(b_.CreateShl(b_.CreateAdd(e, ci(127)), ci(23)));
    };
    return mul(mul(y, pow2(n1)), pow2(n2));
  }

  // Cody-Waite reduction x = n ln2 + r, |r| <= ln2/2, then a degree-7 polynomial for e^r.
  llvm::Value* exp(llvm::Value* x) {
    const double hi = 88.72283935546875, lo = -103.97207641601562;
    llvm::Value* xc = b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, c(hi));
    // Below `lo` the result is 0 (the select at the end), and clamped there the scaling would
    // make a denormal, each a microcode assist on x86: half of a causal softmax's row is
    // masked (-inf), and its exp ran 7x slower for it. Those lanes compute e^0 instead.
    xc = sel(lt(x, c(lo)), c(0.0), xc);
    llvm::Value* n = unary(llvm::Intrinsic::floor, fma(xc, c(1.44269504088896341), c(0.5)));
    llvm::Value* r = fma(n, c(-0.693359375), xc);
    r = fma(n, c(2.12194440e-4), r);
    llvm::Value* z = mul(r, r);
    llvm::Value* p = poly(r, {1.9875691500E-4, 1.3981999507E-3, 8.3334519073E-3, 4.1665795894E-2,
                              1.6666665459E-1, 5.0000001201E-1});
    llvm::Value* y = add(fma(p, z, r), c(1.0));
    y = scale_by_pow2(y, n);
    y = sel(gt(x, c(hi)), c(std::numeric_limits<double>::infinity()), y);
    y = sel(lt(x, c(lo)), c(0.0), y);
    return sel(isnan(x), x, y);
  }

  // x = m 2^e with m in [sqrt(1/2), sqrt(2)), then log(1+f) by a polynomial in f = m - 1.
  llvm::Value* log(llvm::Value* x) {
    // Denormals: scale into the normal range first.
    llvm::Value* tiny = lt(x, c(1.17549435e-38));
    llvm::Value* xs = sel(tiny, mul(x, c(8388608.0)), x); // 2^23
    llvm::Value* bits = as_int(xs);
    llvm::Value* e = b_.CreateSub(b_.CreateAnd(b_.CreateLShr(bits, ci(23)), ci(0xff)), ci(126));
    e = b_.CreateSub(e, b_.CreateSelect(tiny, ci(23), ci(0)));
    llvm::Value* m = as_float(b_.CreateOr(b_.CreateAnd(bits, ci(0x807fffff)), ci(0x3f000000)));
    llvm::Value* small = lt(m, c(0.707106781186547524));
    llvm::Value* fe = b_.CreateSIToFP(b_.CreateSub(e, b_.CreateZExt(small, it_)), t_);
    llvm::Value* f = sub(add(m, sel(small, m, c(0.0))), c(1.0));
    llvm::Value* z = mul(f, f);
    llvm::Value* p = poly(f, {7.0376836292E-2, -1.1514610310E-1, 1.1676998740E-1, -1.2420140846E-1,
                              1.4249322787E-1, -1.6668057665E-1, 2.0000714765E-1, -2.4999993993E-1,
                              3.3333331174E-1});
    llvm::Value* y = mul(mul(p, f), z);
    y = fma(fe, c(-2.12194440e-4), y);
    y = fma(z, c(-0.5), y);
    llvm::Value* r = add(f, y);
    r = fma(fe, c(0.693359375), r);
    const double inf = std::numeric_limits<double>::infinity();
    r = sel(b_.CreateFCmpOEQ(x, c(inf)), c(inf), r);
    r = sel(b_.CreateFCmpOEQ(x, c(0.0)), c(-inf), r);
    r = sel(b_.CreateFCmpULT(x, c(0.0)), c(std::numeric_limits<double>::quiet_NaN()), r);
    return r;
  }

  llvm::Value* tanh(llvm::Value* x) {
    llvm::Value* a = unary(llvm::Intrinsic::fabs, x);
    llvm::Value* z = mul(x, x);
    llvm::Value* p = poly(z, {-5.70498872745E-3, 2.06390887954E-2, -5.37397155531E-2,
                              1.33314422036E-1, -3.33332819422E-1});
    llvm::Value* small = fma(mul(p, z), x, x);
    llvm::Value* e = exp(add(a, a));
    llvm::Value* large = sub(c(1.0), b_.CreateFDiv(c(2.0), add(e, c(1.0))));
    large = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, large, x);
    return sel(lt(a, c(0.625)), small, large);
  }

  // |x| < 1: x P(x^2), P interpolating erf(sqrt t)/sqrt t at Chebyshev nodes of [0, 1]
  // (fitted for this file; error 1.3e-9 before f32 rounding). |x| >= 1: Abramowitz & Stegun
  // 7.1.26, absolute error <= 1.5e-7, i.e. relative <= 1.8e-7 there since erf(1) = 0.84.
  llvm::Value* erf(llvm::Value* x) {
    llvm::Value* a = unary(llvm::Intrinsic::fabs, x);
    llvm::Value* z = mul(x, x);
    llvm::Value* p = poly(z, {7.875875050430342e-05, -0.0008016864283299621, 0.0051890874229765785,
                              -0.02685421201037881, 0.11283594715154313, -0.3761262666671985,
                              1.1283791658483509});
    llvm::Value* small = mul(x, p);
    llvm::Value* t = b_.CreateFDiv(c(1.0), fma(a, c(0.3275911), c(1.0)));
    llvm::Value* q =
        mul(poly(t, {1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592}), t);
    // exp(-x^2) of an |x| past 9.3 is a denormal, and making one costs a microcode assist
    // (~100 cycles) on x86: a GELU over a dense layer's outputs, many of them that large, ran
    // at a third of its speed. At x^2 = 80 the term is 1.8e-35 and erf is 1 in f32 either way.
    llvm::Value* large = sub(
        c(1.0),
        mul(q, exp(b_.CreateFNeg(b_.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, z, c(80.0))))));
    large = b_.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, large, x);
    return sel(lt(a, c(1.0)), small, large);
  }

  llvm::Value* sigmoid(llvm::Value* x) {
    return b_.CreateFDiv(c(1.0), add(c(1.0), exp(b_.CreateFNeg(x))));
  }

private:
  llvm::IRBuilder<>& b_;
  llvm::Type* t_;
  llvm::Type* it_;
};

// Calls a scalar libm function on every lane.
llvm::Value* libm_lanes(llvm::IRBuilder<>& b, const char* name,
                        const std::vector<llvm::Value*>& args) {
  llvm::Type* t = args[0]->getType();
  llvm::Type* elem = t->getScalarType();
  llvm::Module* m = b.GetInsertBlock()->getModule();
  std::vector<llvm::Type*> params(args.size(), elem);
  llvm::FunctionCallee callee =
      m->getOrInsertFunction(name, llvm::FunctionType::get(elem, params, false));
  if (auto* f = llvm::dyn_cast<llvm::Function>(callee.getCallee())) f->setDoesNotThrow();
  auto* vt = llvm::dyn_cast<llvm::FixedVectorType>(t);
  if (!vt) return b.CreateCall(callee, args);
  llvm::Value* out = llvm::PoisonValue::get(t);
  for (unsigned i = 0; i < vt->getNumElements(); ++i) {
    std::vector<llvm::Value*> lane;
    for (auto* a : args)
      lane.push_back(b.CreateExtractElement(a, i));
    out = b.CreateInsertElement(out, b.CreateCall(callee, lane), i);
  }
  return out;
}

} // namespace

llvm::Value* emit_math(llvm::IRBuilder<>& b, P::MathFn fn, const std::vector<llvm::Value*>& args) {
  llvm::Type* t = args[0]->getType();
  bool is_f32 = t->getScalarType()->isFloatTy();
  bool is_f64 = t->getScalarType()->isDoubleTy();
  if (!is_f32 && !is_f64)
    throw std::invalid_argument(std::string("math function ") + P::to_string(fn) +
                                " needs a float argument");
  MathEmitter e(b, t);
  switch (fn) {
  case P::MathFn::Sqrt:
    return b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, args[0]);
  case P::MathFn::Rsqrt:
    return b.CreateFDiv(llvm::ConstantFP::get(t, 1.0),
                        b.CreateUnaryIntrinsic(llvm::Intrinsic::sqrt, args[0]));
  case P::MathFn::Abs:
    return b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, args[0]);
  case P::MathFn::Pow:
    return libm_lanes(b, is_f32 ? "powf" : "pow", args);
  case P::MathFn::Exp:
    return is_f32 ? e.exp(args[0]) : libm_lanes(b, "exp", args);
  case P::MathFn::Log:
    return is_f32 ? e.log(args[0]) : libm_lanes(b, "log", args);
  case P::MathFn::Tanh:
    return is_f32 ? e.tanh(args[0]) : libm_lanes(b, "tanh", args);
  case P::MathFn::Erf:
    return is_f32 ? e.erf(args[0]) : libm_lanes(b, "erf", args);
  case P::MathFn::Sigmoid:
    if (is_f32) return e.sigmoid(args[0]);
    return b.CreateFDiv(
        llvm::ConstantFP::get(t, 1.0),
        b.CreateFAdd(llvm::ConstantFP::get(t, 1.0), libm_lanes(b, "exp", {b.CreateFNeg(args[0])})));
  }
  throw std::invalid_argument("unknown math function");
}

} // namespace mt::llvm_cpu
