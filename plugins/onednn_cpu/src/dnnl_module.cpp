// Plan -> oneDNN primitives, and the module that runs them.
#include "dnnl_module.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

#include "recognize.hpp"
#include "select_mask.hpp"

namespace mt::onednn {

namespace {

using dt = dnnl::memory::data_type;
using dnnl::algorithm;
using dnnl::memory;

dnnl::engine& cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

memory::desc desc_of(const TensorRef& r) {
  return memory::desc(memory::dims(r.dims.begin(), r.dims.end()), dt::f32,
                      memory::dims(r.strides.begin(), r.strides.end()));
}

memory::desc any_of(const std::vector<int64_t>& dims) {
  return memory::desc(memory::dims(dims.begin(), dims.end()), dt::f32, memory::format_tag::any);
}

memory::dims to_dims(const std::vector<int64_t>& v) {
  return memory::dims(v.begin(), v.end());
}

// Matmul weights [.., K, N] laid out with K contiguous: each output column's K values together
// (a Hugging Face nn.Linear weight as stored, [N, K] row-major).
memory::desc k_contiguous(const std::vector<int64_t>& dims) {
  const size_t n = dims.size();
  std::vector<int64_t> swapped = dims; // [.., N, K], row-major
  std::swap(swapped[n - 2], swapped[n - 1]);
  std::vector<int64_t> strides = P::row_major_strides(swapped);
  std::swap(strides[n - 2], strides[n - 1]);
  return memory::desc(to_dims(dims), dt::f32, to_dims(strides));
}

// Row-major weight rows of a multiple of this many bytes are taken K-contiguous in products of
// at least this many rows (offer_packed).
constexpr int64_t kAliasedRowBytes = 2048;
constexpr int64_t kKContiguousFromRows = 64;

bool plain(const memory::desc& d) {
  return d.data.format_kind == dnnl_blocked && d.data.format_desc.blocking.inner_nblks == 0;
}

algorithm eltwise_alg(Alg a) {
  switch (a) {
  case Alg::Relu:
    return algorithm::eltwise_relu;
  case Alg::GeluErf:
    return algorithm::eltwise_gelu_erf;
  case Alg::GeluTanh:
    return algorithm::eltwise_gelu_tanh;
  case Alg::Logistic:
    return algorithm::eltwise_logistic;
  case Alg::Swish:
    return algorithm::eltwise_swish;
  case Alg::Tanh:
    return algorithm::eltwise_tanh;
  case Alg::Exp:
    return algorithm::eltwise_exp;
  case Alg::Log:
    return algorithm::eltwise_log;
  case Alg::Sqrt:
    return algorithm::eltwise_sqrt;
  case Alg::Abs:
    return algorithm::eltwise_abs;
  case Alg::Linear:
    return algorithm::eltwise_linear;
  default:
    throw sdk::Error(MT_ERROR_INTERNAL, "onednn.cpu: not an eltwise step");
  }
}

algorithm binary_alg(Alg a) {
  switch (a) {
  case Alg::Add:
    return algorithm::binary_add;
  case Alg::Sub:
    return algorithm::binary_sub;
  case Alg::Mul:
    return algorithm::binary_mul;
  case Alg::Div:
    return algorithm::binary_div;
  case Alg::Max:
    return algorithm::binary_max;
  case Alg::Min:
    return algorithm::binary_min;
  default:
    throw sdk::Error(MT_ERROR_INTERNAL, "onednn.cpu: not a binary step");
  }
}

// alpha for relu is its negative slope: 0; for swish x * sigmoid(alpha x): 1.
template <typename Op> float eltwise_alpha(const Op& p) {
  return p.alg == Alg::Relu     ? 0.f
         : p.alg == Alg::Linear ? p.alpha
         : p.alg == Alg::Swish  ? 1.f
                                : 0.f;
}
template <typename Op> float eltwise_beta(const Op& p) {
  return p.alg == Alg::Linear ? p.beta : 0.f;
}

} // namespace

struct DnnlModule::Impl {
  struct Slot {
    int param = -1; // >= 0: bound to that argument (from element `offset` on) on every call
    memory mem;
    int64_t offset = 0;
  };
  // A post-op as oneDNN takes it: a Select is two binary steps on tables in scratch slots.
  struct Flat {
    Alg alg = Alg::Relu;
    float alpha = 1, beta = 0;
    int src1 = -1; // binary: the slot of the second operand
  };
  struct Step {
    Step(dnnl::primitive p, std::unordered_map<int, int> a)
        : prim(std::move(p)), args(std::move(a)) {}
    dnnl::primitive prim;
    std::unordered_map<int, int> args;     // DNNL_ARG_* -> slot
    std::unordered_map<int, memory> bound; // the same, resolved once built
  };

  // A matmul step whose weights are a param, made again for weights in oneDNN's layout.
  struct Packable {
    size_t step = 0;   // the plain primitive's index in steps
    int slot = -1;     // the weights' user slot there
    TensorRef weights; // the plain primitive's view of them
    memory::desc layout;
    dnnl::matmul::primitive_desc pd;
    dnnl::primitive prim; // made on first use (oneDNN generates its code then)
    memory mem;           // the packed weights, bound to prim
    std::unordered_map<int, memory> bound;
    size_t offset = 0; // bytes into the param's packed copy
    // fpmath bf16: the weights are packed in bf16 and the primitive reads its input in bf16
    // too (oneDNN 2.6 multiplies bf16 by bf16 only), rounded into src_bf16 before each call.
    bool bf16 = false;
    memory src_bf16;
    dnnl::primitive src_round; // reorder of the plain input into src_bf16
  };

  std::vector<P::Buffer> params;
  bool fpmath_bf16 = false;
  std::vector<Packable> packable; // complete once built: packs_by_param points into it
  std::map<size_t, std::vector<Packable*>> packs_by_param;
  dnnl::stream stream{cpu_engine()};
  std::vector<Slot> slots;
  std::vector<Step> steps;
  // Run before the steps on each call (the tables of a mask read from the caller's tensors).
  std::vector<std::function<void(const std::vector<sdk::TensorView>&)>> prepare;
  std::string implementation;
  int reorders = 0, unfused = 0;
  int last_dst = -1; // the user slot the last built step's result is in

  int user(const TensorRef& r) {
    slots.push_back(
        {static_cast<int>(r.param), memory(desc_of(r), cpu_engine(), nullptr), r.offset});
    return static_cast<int>(slots.size() - 1);
  }
  int scratch(const memory::desc& md) {
    slots.push_back({-1, memory(md, cpu_engine()), 0});
    return static_cast<int>(slots.size() - 1);
  }

  // The post-ops with their second operands bound to slots (created once, shared by the fused
  // and the unfused form).
  // `full`: the dst dims, to give mask tables no broadcast.
  std::vector<Flat> flatten(const std::vector<PostOp>& ops,
                            const std::vector<int64_t>* full = nullptr) {
    std::vector<Flat> out;
    for (const PostOp& p : ops) {
      if (p.alg == Alg::Select) {
        select(p, full, &out);
      } else if (is_binary(p.alg)) {
        out.push_back({p.alg, 1, 0, user(p.src1)});
      } else {
        out.push_back({p.alg, p.alpha, p.beta, -1});
      }
    }
    return out;
  }
  void select(const PostOp& p, const std::vector<int64_t>* full, std::vector<Flat>* out) {
    auto mask = std::make_shared<SelectMask>(p, full);
    TensorRef table;
    table.dims = mask->dims();
    table.strides = P::row_major_strides(table.dims);
    memory::desc md = desc_of(table);
    int hi = scratch(md), lo = scratch(md);
    auto* h = static_cast<float*>(slots[hi].mem.get_data_handle());
    auto* l = static_cast<float*>(slots[lo].mem.get_data_handle());
    if (mask->constant())
      mask->fill(h, l, {});
    else
      prepare.push_back(
          [mask, h, l](const std::vector<sdk::TensorView>& args) { mask->fill(h, l, args); });
    out->push_back({Alg::Min, 1, 0, hi});
    out->push_back({Alg::Max, 1, 0, lo});
  }
  void reorder(int from, int to) {
    steps.push_back({dnnl::reorder(slots[from].mem, slots[to].mem),
                     {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}}});
    ++reorders;
  }
  // The slot a primitive reads `r` from, reordering into `want` when the layouts differ.
  int input(const TensorRef& r, const memory::desc& want) {
    int u = user(r);
    if (slots[u].mem.get_desc() == want) return u;
    int s = scratch(want);
    reorder(u, s);
    return s;
  }
  // The slot a primitive writes `r` through; *user_slot is the caller's tensor, and a reorder
  // into it is queued in *after when the layouts differ.
  int output(const TensorRef& r, const memory::desc& want, int* user_slot,
             std::vector<std::pair<int, int>>* after) {
    int u = user(r);
    *user_slot = u;
    if (slots[u].mem.get_desc() == want) return u;
    int s = scratch(want);
    after->push_back({s, u});
    return s;
  }

  dnnl::primitive_attr attr_for(const std::vector<Flat>& ops,
                                std::vector<std::pair<int, int>>* binary_args) {
    dnnl::post_ops po;
    for (size_t i = 0; i < ops.size(); ++i) {
      const Flat& p = ops[i];
      if (p.src1 >= 0) {
        po.append_binary(binary_alg(p.alg), slots[p.src1].mem.get_desc());
        binary_args->push_back({static_cast<int>(i), p.src1});
      } else {
        po.append_eltwise(1.f, eltwise_alg(p.alg), eltwise_alpha(p), eltwise_beta(p));
      }
    }
    dnnl::primitive_attr attr;
    attr.set_post_ops(po);
    return attr;
  }

  // Post-ops the main primitive did not take, as in-place primitives on the output.
  void append_unfused(const std::vector<Flat>& ops, int dst) {
    const memory::desc md = slots[dst].mem.get_desc();
    for (const Flat& p : ops) {
      if (p.src1 >= 0) {
        int s1 = p.src1;
        dnnl::binary::primitive_desc pd(
            dnnl::binary::desc(binary_alg(p.alg), md, slots[s1].mem.get_desc(), md), cpu_engine());
        steps.push_back(
            {dnnl::binary(pd), {{DNNL_ARG_SRC_0, dst}, {DNNL_ARG_SRC_1, s1}, {DNNL_ARG_DST, dst}}});
      } else {
        dnnl::eltwise_forward::primitive_desc pd(
            dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, eltwise_alg(p.alg), md,
                                        eltwise_alpha(p), eltwise_beta(p)),
            cpu_engine());
        steps.push_back({dnnl::eltwise_forward(pd), {{DNNL_ARG_SRC, dst}, {DNNL_ARG_DST, dst}}});
      }
      ++unfused;
    }
  }

  // Creates the primitive descriptor with the post-ops (bound to slots in *ops) fused if
  // oneDNN accepts them; `make` builds it from an attribute. oneDNN's optimised kernels take
  // few broadcasts of a binary post-op's operand (a causal mask, the same for every batch and
  // head, sends a batched matmul to the reference kernel): then the mask tables are made full
  // size, filled once (or per call, for a mask read from a tensor).
  template <typename PD, typename Make>
  PD with_post_ops(const std::vector<PostOp>& post_ops, const std::vector<int64_t>& dst_dims,
                   Make make, std::vector<Flat>* ops, std::vector<std::pair<int, int>>* binary_args,
                   bool* fused) {
    const size_t mark = prepare.size();
    *ops = flatten(post_ops);
    PD pd = fuse<PD>(*ops, make, binary_args, fused);
    auto reference = [](const PD& d) {
      return std::string(d.impl_info_str()).rfind("ref", 0) == 0;
    };
    bool broadcast_mask = std::any_of(post_ops.begin(), post_ops.end(), [&](const PostOp& p) {
      return p.alg == Alg::Select && SelectMask(p).dims() != dst_dims;
    });
    if (!reference(pd) || !broadcast_mask) return pd;
    std::vector<std::function<void(const std::vector<sdk::TensorView>&)>> first(
        prepare.begin() + static_cast<std::ptrdiff_t>(mark), prepare.end());
    prepare.resize(mark);
    std::vector<std::pair<int, int>> full_args;
    bool full_fused = false;
    std::vector<Flat> full_ops = flatten(post_ops, &dst_dims);
    PD full = fuse<PD>(full_ops, make, &full_args, &full_fused);
    if (!reference(full)) {
      *ops = full_ops;
      *binary_args = full_args;
      *fused = full_fused;
      return full;
    }
    prepare.resize(mark);
    prepare.insert(prepare.end(), first.begin(), first.end());
    return pd;
  }

  // oneDNN 2.6's JIT kernels give every eltwise post-op of one algorithm the first one's
  // alpha and beta (Gemma 2's soft-cap, x * 1/c, tanh, * c, came out as tanh(x/c) / c: the
  // second linear scaled by the first's 1/c). Such a chain runs as separate in-place steps.
  static bool repeats_an_eltwise(const std::vector<Flat>& ops) {
    for (size_t i = 0; i < ops.size(); ++i)
      for (size_t j = i + 1; j < ops.size(); ++j)
        if (ops[i].src1 < 0 && ops[j].src1 < 0 && ops[i].alg == ops[j].alg &&
            (eltwise_alpha(ops[i]) != eltwise_alpha(ops[j]) ||
             eltwise_beta(ops[i]) != eltwise_beta(ops[j])))
          return true;
    return false;
  }

  template <typename PD, typename Make>
  PD fuse(const std::vector<Flat>& ops, Make make, std::vector<std::pair<int, int>>* binary_args,
          bool* fused) {
    if (!ops.empty() && !repeats_an_eltwise(ops)) {
      try {
        dnnl::primitive_attr attr = attr_for(ops, binary_args);
        *fused = true;
        return make(attr);
      } catch (const dnnl::error&) {
        binary_args->clear();
      }
    }
    *fused = ops.empty();
    return make(dnnl::primitive_attr());
  }

  // Runs the main primitive `prim` with `args`, then the output reorders and unfused steps.
  void finish(dnnl::primitive prim, std::unordered_map<int, int> args,
              const std::vector<std::pair<int, int>>& binary_args, bool fused,
              const std::vector<Flat>& ops, int dst_user,
              const std::vector<std::pair<int, int>>& after, const char* impl) {
    for (auto [i, slot] : binary_args)
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(i) | DNNL_ARG_SRC_1] = slot;
    steps.push_back({prim, std::move(args)});
    for (auto [from, to] : after)
      reorder(from, to);
    if (!fused) append_unfused(ops, dst_user);
    std::string name = impl ? impl : "?";
    if (implementation.empty())
      implementation = name;
    else if (implementation.find(name) == std::string::npos)
      implementation += ", " + name;
  }

  // gelu_tanh(x) = x * sigmoid(2c (x + 0.044715 x^3)), c = sqrt(2/pi): 0.5 (1 + tanh(z)) is
  // sigmoid(2z). oneDNN 2.6's AVX2 tanh is slow: on GPT-2's [128, 3072] up-projection output
  // its gelu_tanh took 0.77 ms as an eltwise primitive against 0.25-0.27 for these steps, and
  // as the matmul's post-op 1.14-1.16x the time of the matmul and these steps
  // (bench/onednn_gelu_tanh, Zen 3). Two steps reading the slot `x` unchanged (so the fallback
  // for post-ops oneDNN does not fuse, in place, stays exact; `dst` may be `x`): a scratch gets the
  // sigmoid, then dst = x * it, with `tail` (the post-ops after the gelu) fused into that.
  void append_gelu_tanh(int x, int dst, const std::vector<PostOp>& tail) {
    const memory::desc md = slots[x].mem.get_desc(), dst_md = slots[dst].mem.get_desc();
    const float c2 = 2.f * static_cast<float>(std::sqrt(2.0 / 3.14159265358979323846));
    const int gate = scratch(md);
    // x * x, then 2c + 2c * 0.044715 x^2 (one linear step: oneDNN 2.6 gives a second linear
    // the first one's alpha and beta, see repeats_an_eltwise), * x, sigmoid.
    const std::vector<Flat> to_gate = {
        {Alg::Linear, 0.044715f * c2, c2, -1}, {Alg::Mul, 1, 0, x}, {Alg::Logistic, 1, 0, -1}};
    auto square = [&](const dnnl::primitive_attr& attr) {
      return dnnl::binary::primitive_desc(
          dnnl::binary::desc(algorithm::binary_mul, md, md, slots[gate].mem.get_desc()), attr,
          cpu_engine());
    };
    std::vector<std::pair<int, int>> bargs;
    bool fused = false;
    auto pd = fuse<dnnl::binary::primitive_desc>(to_gate, square, &bargs, &fused);
    finish(dnnl::binary(pd), {{DNNL_ARG_SRC_0, x}, {DNNL_ARG_SRC_1, x}, {DNNL_ARG_DST, gate}},
           bargs, fused, to_gate, gate, {}, pd.impl_info_str());
    auto times_gate = [&](const dnnl::primitive_attr& attr) {
      return dnnl::binary::primitive_desc(
          dnnl::binary::desc(algorithm::binary_mul, md, slots[gate].mem.get_desc(), dst_md), attr,
          cpu_engine());
    };
    std::vector<Flat> ops;
    bargs.clear();
    const memory::dims dims = dst_md.dims();
    auto out = with_post_ops<dnnl::binary::primitive_desc>(
        tail, std::vector<int64_t>(dims.begin(), dims.end()), times_gate, &ops, &bargs, &fused);
    finish(dnnl::binary(out), {{DNNL_ARG_SRC_0, x}, {DNNL_ARG_SRC_1, gate}, {DNNL_ARG_DST, dst}},
           bargs, fused, ops, dst, {}, out.impl_info_str());
  }

  void build_step(const MainOp& main, const std::vector<PostOp>& post_ops);
  void build(const Plan& plan);
  void offer_packed(const MatmulOp& m, const dnnl::matmul::primitive_desc& pd, size_t step);
  const std::vector<Packable*>& packs_of(size_t param);
  void bind(const std::vector<sdk::TensorView>& args);
};

// The matmul's primitive again with the weights' layout left to oneDNN; kept when that layout
// differs from the plain one and nothing else changes.
void DnnlModule::Impl::offer_packed(const MatmulOp& m, const dnnl::matmul::primitive_desc& pd,
                                    size_t step) {
  auto w = steps[step].args.find(DNNL_ARG_WEIGHTS);
  if (w == steps[step].args.end() || slots[static_cast<size_t>(w->second)].param < 0) return;
  auto reference = [](const dnnl::matmul::primitive_desc& d) {
    return std::string(d.impl_info_str()).rfind("ref", 0) == 0;
  };
  auto make = [&](const memory::desc& src, const memory::desc& weights) {
    auto d = m.bias ? dnnl::matmul::desc(src, weights, desc_of(*m.bias), desc_of(m.dst))
                    : dnnl::matmul::desc(src, weights, desc_of(m.dst));
    return dnnl::matmul::primitive_desc(d, pd.get_primitive_attr(), cpu_engine());
  };
  Packable p;
  p.step = step;
  p.slot = w->second;
  p.weights = m.weights;
  if (fpmath_bf16) {
    try {
      TensorRef dense = m.src;
      dense.strides = P::row_major_strides(dense.dims);
      memory::desc src(to_dims(dense.dims), dt::bf16, to_dims(dense.strides));
      dnnl::matmul::primitive_desc bpd =
          make(src, memory::desc(to_dims(m.weights.dims), dt::bf16, memory::format_tag::any));
      if (!reference(bpd) && bpd.dst_desc() == pd.dst_desc()) {
        p.layout = bpd.weights_desc();
        p.pd = bpd;
        p.bf16 = true;
        packable.push_back(std::move(p));
        return;
      }
    } catch (const dnnl::error&) {
      // no bf16 matmul for it: packed in f32 below, if at all
    }
  }
  try {
    dnnl::matmul::primitive_desc ppd = make(desc_of(m.src), any_of(m.weights.dims));
    // Where oneDNN has no blocked layout of its own (2.6's gemm:jit on AVX2 picks row-major
    // [K, N]), a row-major row would be a multiple of 2 KB and the product has 64 rows or
    // more, K-contiguous weights instead: there that gemm ran 1.24 to 1.92x slower on
    // row-major weights (512 to 3072 columns: the up-projections of MiniLM, BERT, GPT-2 and
    // Llama; Zen 3, bench/onednn_weight_layout); on other widths it was as fast or faster
    // row-major, and under 64 rows MiniLM ran slower with its up-projection K-contiguous
    // (3.8-4.5 against 3.3-3.7 ms at 16 tokens).
    int64_t rows = 1;
    for (size_t i = 0; i + 1 < m.src.dims.size(); ++i)
      rows *= m.src.dims[i];
    if (plain(ppd.weights_desc()) && m.weights.dims.size() >= 2 &&
        m.weights.dims.back() * 4 % kAliasedRowBytes == 0 && rows >= kKContiguousFromRows)
      ppd = make(desc_of(m.src), k_contiguous(m.weights.dims));
    if (ppd.weights_desc() == desc_of(m.weights) || ppd.src_desc() != pd.src_desc() ||
        ppd.dst_desc() != pd.dst_desc() || reference(ppd))
      return;
    p.layout = ppd.weights_desc();
    p.pd = ppd;
    packable.push_back(std::move(p));
  } catch (const dnnl::error&) {
    // oneDNN has no other layout for it: the weights stay as given
  }
}

// The packable matmuls reading `param` as their weights, each with its offset into the packed
// copy; empty where the param is read by anything else too. Found once per param (run_packed
// asks on every call).
const std::vector<DnnlModule::Impl::Packable*>& DnnlModule::Impl::packs_of(size_t param) {
  auto known = packs_by_param.find(param);
  if (known != packs_by_param.end()) return known->second;
  std::vector<Packable*> out;
  size_t users = 0;
  for (const Slot& s : slots)
    users += s.param == static_cast<int>(param);
  size_t bytes = 0;
  for (Packable& p : packable) {
    if (slots[static_cast<size_t>(p.slot)].param != static_cast<int>(param)) continue;
    p.offset = bytes;
    bytes += (p.layout.get_size() + 63) / 64 * 64;
    out.push_back(&p);
  }
  if (out.size() != users) out.clear();
  return packs_by_param.emplace(param, std::move(out)).first->second;
}

void DnnlModule::Impl::bind(const std::vector<sdk::TensorView>& args) {
  if (args.size() != params.size())
    throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "onednn.cpu: " + std::to_string(args.size()) +
                                                    " arguments for " +
                                                    std::to_string(params.size()) + " parameters");
  for (size_t i = 0; i < args.size(); ++i)
    if (!(args[i].dtype == params[i]->dtype) || args[i].shape != params[i]->shape)
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "onednn.cpu: argument " + std::to_string(i) +
                                                      " ('" + params[i]->name +
                                                      "') has the wrong dtype or shape");
  for (auto& s : slots)
    if (s.param >= 0) s.mem.set_data_handle(static_cast<float*>(args[s.param].data) + s.offset);
}

void DnnlModule::Impl::build_step(const MainOp& main, const std::vector<PostOp>& post_ops) {
  auto gelu = std::find_if(post_ops.begin(), post_ops.end(),
                           [](const PostOp& p) { return p.alg == Alg::GeluTanh; });
  if (gelu != post_ops.end()) {
    build_step(main, {post_ops.begin(), gelu});
    append_gelu_tanh(last_dst, last_dst, {gelu + 1, post_ops.end()});
    return;
  }
  using pk = dnnl::prop_kind;
  std::vector<std::pair<int, int>> bargs, after;
  bool fused = false;
  int dst_user = -1;
  std::vector<Flat> ops;
  if (const auto* m = std::get_if<MatmulOp>(&main)) {
    auto make = [&](const dnnl::primitive_attr& attr) {
      auto d = m->bias ? dnnl::matmul::desc(desc_of(m->src), desc_of(m->weights), desc_of(*m->bias),
                                            desc_of(m->dst))
                       : dnnl::matmul::desc(desc_of(m->src), desc_of(m->weights), desc_of(m->dst));
      return dnnl::matmul::primitive_desc(d, attr, cpu_engine());
    };
    auto pd = with_post_ops<dnnl::matmul::primitive_desc>(post_ops, m->dst.dims, make, &ops, &bargs,
                                                          &fused);
    std::unordered_map<int, int> args = {{DNNL_ARG_SRC, input(m->src, pd.src_desc())},
                                         {DNNL_ARG_WEIGHTS, input(m->weights, pd.weights_desc())}};
    if (m->bias) args[DNNL_ARG_BIAS] = input(*m->bias, pd.bias_desc());
    args[DNNL_ARG_DST] = output(m->dst, pd.dst_desc(), &dst_user, &after);
    const size_t step = steps.size();
    finish(dnnl::matmul(pd), args, bargs, fused, ops, dst_user, after, pd.impl_info_str());
    offer_packed(*m, pd, step);
  } else if (const auto* c = std::get_if<ConvOp>(&main)) {
    auto make = [&](const dnnl::primitive_attr& attr) {
      memory::desc src = any_of(c->src.dims), w = any_of(c->weights.dims),
                   dst = any_of(c->dst.dims);
      auto d = c->bias ? dnnl::convolution_forward::desc(
                             pk::forward_inference, algorithm::convolution_direct, src, w,
                             desc_of(*c->bias), dst, to_dims(c->strides), to_dims(c->dilates),
                             to_dims(c->pad_l), to_dims(c->pad_r))
                       : dnnl::convolution_forward::desc(pk::forward_inference,
                                                         algorithm::convolution_direct, src, w, dst,
                                                         to_dims(c->strides), to_dims(c->dilates),
                                                         to_dims(c->pad_l), to_dims(c->pad_r));
      return dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
    };
    auto pd = with_post_ops<dnnl::convolution_forward::primitive_desc>(post_ops, c->dst.dims, make,
                                                                       &ops, &bargs, &fused);
    std::unordered_map<int, int> args = {{DNNL_ARG_SRC, input(c->src, pd.src_desc())},
                                         {DNNL_ARG_WEIGHTS, input(c->weights, pd.weights_desc())}};
    if (c->bias) args[DNNL_ARG_BIAS] = input(*c->bias, pd.bias_desc());
    args[DNNL_ARG_DST] = output(c->dst, pd.dst_desc(), &dst_user, &after);
    finish(dnnl::convolution_forward(pd), args, bargs, fused, ops, dst_user, after,
           pd.impl_info_str());
  } else if (const auto* p = std::get_if<PoolOp>(&main)) {
    auto make = [&](const dnnl::primitive_attr& attr) {
      dnnl::pooling_forward::desc d(pk::forward_inference,
                                    p->max ? algorithm::pooling_max
                                           : algorithm::pooling_avg_include_padding,
                                    desc_of(p->src), any_of(p->dst.dims), to_dims(p->strides),
                                    to_dims(p->kernel), to_dims(p->pad_l), to_dims(p->pad_r));
      return dnnl::pooling_forward::primitive_desc(d, attr, cpu_engine());
    };
    auto pd = with_post_ops<dnnl::pooling_forward::primitive_desc>(post_ops, p->dst.dims, make,
                                                                   &ops, &bargs, &fused);
    std::unordered_map<int, int> args = {{DNNL_ARG_SRC, input(p->src, pd.src_desc())}};
    args[DNNL_ARG_DST] = output(p->dst, pd.dst_desc(), &dst_user, &after);
    if (pd.workspace_desc().get_size() > 0) args[DNNL_ARG_WORKSPACE] = scratch(pd.workspace_desc());
    finish(dnnl::pooling_forward(pd), args, bargs, fused, ops, dst_user, after, pd.impl_info_str());
  } else if (const auto* s = std::get_if<SoftmaxOp>(&main)) {
    dnnl::softmax_forward::primitive_desc pd(
        dnnl::softmax_forward::desc(pk::forward_inference, desc_of(s->src), s->axis), cpu_engine());
    std::unordered_map<int, int> args = {{DNNL_ARG_SRC, input(s->src, pd.src_desc())}};
    args[DNNL_ARG_DST] = output(s->dst, pd.dst_desc(), &dst_user, &after);
    ops = flatten(post_ops);
    finish(dnnl::softmax_forward(pd), args, bargs, ops.empty(), ops, dst_user, after,
           pd.impl_info_str());
  } else if (const auto* l = std::get_if<LayerNormOp>(&main)) {
    dnnl::normalization_flags flags = dnnl::normalization_flags::none;
    if (l->scale) flags = flags | dnnl::normalization_flags::use_scale;
    if (l->shift) flags = flags | dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::primitive_desc pd(
        dnnl::layer_normalization_forward::desc(pk::forward_inference, desc_of(l->src), l->eps,
                                                flags),
        cpu_engine());
    std::unordered_map<int, int> args = {{DNNL_ARG_SRC, input(l->src, pd.src_desc())}};
    if (l->scale) args[DNNL_ARG_SCALE] = user(*l->scale);
    if (l->shift) args[DNNL_ARG_SHIFT] = user(*l->shift);
    if (pd.mean_desc().get_size() > 0) args[DNNL_ARG_MEAN] = scratch(pd.mean_desc());
    if (pd.variance_desc().get_size() > 0) args[DNNL_ARG_VARIANCE] = scratch(pd.variance_desc());
    args[DNNL_ARG_DST] = output(l->dst, pd.dst_desc(), &dst_user, &after);
    ops = flatten(post_ops);
    finish(dnnl::layer_normalization_forward(pd), args, bargs, ops.empty(), ops, dst_user, after,
           pd.impl_info_str());
  } else if (const auto* r = std::get_if<ReductionOp>(&main)) {
    static const algorithm kAlg[] = {algorithm::reduction_sum, algorithm::reduction_max,
                                     algorithm::reduction_min, algorithm::reduction_norm_lp_sum,
                                     algorithm::reduction_norm_lp_power_p_sum};
    auto make = [&](const dnnl::primitive_attr& attr) {
      dnnl::reduction::desc d(kAlg[r->kind], desc_of(r->src), desc_of(r->dst), r->p, 0.f);
      return dnnl::reduction::primitive_desc(d, attr, cpu_engine());
    };
    auto pd = with_post_ops<dnnl::reduction::primitive_desc>(post_ops, r->dst.dims, make, &ops,
                                                             &bargs, &fused);
    std::unordered_map<int, int> args = {{DNNL_ARG_SRC, input(r->src, pd.src_desc())}};
    args[DNNL_ARG_DST] = output(r->dst, pd.dst_desc(), &dst_user, &after);
    finish(dnnl::reduction(pd), args, bargs, fused, ops, dst_user, after, pd.impl_info_str());
  } else if (const auto* e = std::get_if<EltwiseOp>(&main); e && e->op.alg == Alg::GeluTanh) {
    const int x = user(e->src);
    dst_user = user(e->dst);
    append_gelu_tanh(x, dst_user, post_ops);
  } else if (const auto* e = std::get_if<EltwiseOp>(&main)) {
    auto make = [&](const dnnl::primitive_attr& attr) {
      dnnl::eltwise_forward::desc d(pk::forward_inference, eltwise_alg(e->op.alg), desc_of(e->src),
                                    eltwise_alpha(e->op), eltwise_beta(e->op));
      return dnnl::eltwise_forward::primitive_desc(d, attr, cpu_engine());
    };
    auto pd = with_post_ops<dnnl::eltwise_forward::primitive_desc>(post_ops, e->dst.dims, make,
                                                                   &ops, &bargs, &fused);
    std::unordered_map<int, int> args = {{DNNL_ARG_SRC, input(e->src, pd.src_desc())}};
    args[DNNL_ARG_DST] = output(e->dst, pd.dst_desc(), &dst_user, &after);
    finish(dnnl::eltwise_forward(pd), args, bargs, fused, ops, dst_user, after, pd.impl_info_str());
  } else if (const auto* b = std::get_if<BinaryOp>(&main)) {
    auto make = [&](const dnnl::primitive_attr& attr) {
      dnnl::binary::desc d(binary_alg(b->alg), desc_of(b->src0), desc_of(b->src1), desc_of(b->dst));
      return dnnl::binary::primitive_desc(d, attr, cpu_engine());
    };
    auto pd = with_post_ops<dnnl::binary::primitive_desc>(post_ops, b->dst.dims, make, &ops, &bargs,
                                                          &fused);
    std::unordered_map<int, int> args = {{DNNL_ARG_SRC_0, input(b->src0, pd.src0_desc())},
                                         {DNNL_ARG_SRC_1, input(b->src1, pd.src1_desc())}};
    args[DNNL_ARG_DST] = output(b->dst, pd.dst_desc(), &dst_user, &after);
    finish(dnnl::binary(pd), args, bargs, fused, ops, dst_user, after, pd.impl_info_str());
  }
  last_dst = dst_user;
}

void DnnlModule::Impl::build(const Plan& plan) {
  build_step(plan.op, plan.post_ops);
  for (const PlanStep& step : plan.more)
    build_step(step.op, step.post_ops);
  // Memory objects are shared handles: binding them once lets run() only swap data pointers.
  for (Step& step : steps)
    for (auto [arg, slot] : step.args)
      step.bound.emplace(arg, slots[slot].mem);
  if (!plan.more.empty())
    implementation += " (" + std::to_string(plan.more.size() + 1) + " primitives)";
  if (reorders) implementation += " +" + std::to_string(reorders) + " reorders";
  if (unfused) implementation += " +" + std::to_string(unfused) + " unfused post-ops";
  // What runs when the weights come packed (the model's case), where that is another kernel.
  if (!packable.empty() && packable.front().pd.impl_info_str() != implementation)
    implementation += std::string("; weights packed") + (packable.front().bf16 ? " in bf16" : "") +
                      ": " + packable.front().pd.impl_info_str();
}

DnnlModule::DnnlModule(const Plan& plan, std::vector<P::Buffer> params,
                       const ModuleOptions& options)
    : impl_(std::make_unique<Impl>()) {
  impl_->params = std::move(params);
  impl_->fpmath_bf16 = options.fpmath_bf16;
  try {
    impl_->build(plan);
  } catch (const dnnl::error& e) {
    throw sdk::Error(MT_ERROR_UNSUPPORTED, "onednn.cpu: oneDNN refused the " + plan.family + " (" +
                                               plan.detail + "): " + e.what());
  }
}

DnnlModule::~DnnlModule() = default;

const std::string& DnnlModule::implementation() const {
  return impl_->implementation;
}

void DnnlModule::run(const std::vector<sdk::TensorView>& args) {
  run_packed(args, {});
}

namespace {

// What a packed copy holds, for sharing: each matmul's view of the param and the layout.
std::string layout_key(const TensorRef& r, const memory::desc& md) {
  using detail::dims_string;
  const dnnl_memory_desc_t& d = md.data;
  std::string k = "view " + dims_string(r.dims) + "/" + dims_string(r.strides) + "+" +
                  std::to_string(r.offset) + " as ";
  if (d.format_kind != dnnl_blocked) return ""; // opaque: not shared
  const auto& b = d.format_desc.blocking;
  k += std::string(d.data_type == dnnl_bf16 ? "bf16" : "f32") + " dims " +
       dims_string({d.dims, d.dims + d.ndims}) + " padded " +
       dims_string({d.padded_dims, d.padded_dims + d.ndims}) + " strides " +
       dims_string({b.strides, b.strides + d.ndims}) + " blocks " +
       dims_string({b.inner_blks, b.inner_blks + b.inner_nblks}) + " of " +
       dims_string({b.inner_idxs, b.inner_idxs + b.inner_nblks}) + " extra " +
       std::to_string(d.extra.flags) + " offset " + std::to_string(d.offset0);
  return k;
}

} // namespace

std::optional<sdk::Module::PackedLayout> DnnlModule::packed_layout(size_t param) {
  if (param >= impl_->params.size()) return std::nullopt;
  const std::vector<Impl::Packable*>& packs = impl_->packs_of(param);
  if (packs.empty()) return std::nullopt;
  PackedLayout out;
  for (Impl::Packable* p : packs) {
    std::string k = layout_key(p->weights, p->layout);
    if (k.empty()) k = "module " + std::to_string(reinterpret_cast<uintptr_t>(this));
    out.key += (out.key.empty() ? "onednn " : "; ") + k;
    out.bytes = p->offset + (p->layout.get_size() + 63) / 64 * 64;
    if (!p->prim) {
      try {
        p->prim = dnnl::matmul(p->pd);
      } catch (const dnnl::error& e) {
        throw sdk::Error(MT_ERROR_UNKNOWN, std::string("onednn.cpu: ") + e.what());
      }
      p->mem = memory(p->layout, cpu_engine(), nullptr);
      p->bound = impl_->steps[p->step].bound;
      p->bound.insert_or_assign(DNNL_ARG_WEIGHTS, p->mem);
      if (p->bf16) {
        try {
          p->src_bf16 = memory(p->pd.src_desc(), cpu_engine());
          p->src_round = dnnl::reorder(p->bound.at(DNNL_ARG_SRC), p->src_bf16);
        } catch (const dnnl::error& e) {
          throw sdk::Error(MT_ERROR_UNKNOWN, std::string("onednn.cpu: ") + e.what());
        }
        p->bound.insert_or_assign(DNNL_ARG_SRC, p->src_bf16);
      }
    }
  }
  return out;
}

void DnnlModule::pack(size_t param, const void* src, void* dst) {
  const std::vector<Impl::Packable*>& packs = impl_->packs_of(param);
  if (packs.empty())
    throw sdk::Error(MT_ERROR_UNSUPPORTED,
                     "onednn.cpu: param " + std::to_string(param) + " is not taken packed");
  try {
    for (Impl::Packable* p : packs) {
      const Impl::Slot& s = impl_->slots[static_cast<size_t>(p->slot)];
      memory from(s.mem.get_desc(), cpu_engine(),
                  const_cast<float*>(static_cast<const float*>(src)) + s.offset);
      memory to(p->layout, cpu_engine(), static_cast<char*>(dst) + p->offset);
      dnnl::reorder(from, to).execute(impl_->stream, from, to);
    }
    impl_->stream.wait();
  } catch (const dnnl::error& e) {
    throw sdk::Error(MT_ERROR_UNKNOWN, std::string("onednn.cpu: packing failed: ") + e.what());
  }
}

void DnnlModule::run_packed(const std::vector<sdk::TensorView>& args,
                            const std::vector<uint8_t>& packed) {
  impl_->bind(args);
  // step index -> the packed primitive to run instead
  std::unordered_map<size_t, Impl::Packable*> instead;
  for (size_t i = 0; i < packed.size() && i < args.size(); ++i) {
    if (!packed[i]) continue;
    const std::vector<Impl::Packable*>& packs = impl_->packs_of(i);
    if (packs.empty() || !packs.front()->prim)
      throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "onednn.cpu: argument " + std::to_string(i) +
                                                      " ('" + impl_->params[i]->name +
                                                      "') given packed, but not packed_layout'ed");
    for (Impl::Packable* p : packs) {
      p->mem.set_data_handle(static_cast<char*>(args[i].data) + p->offset);
      instead[p->step] = p;
    }
  }
  for (auto& f : impl_->prepare)
    f(args);
  try {
    for (size_t s = 0; s < impl_->steps.size(); ++s) {
      auto p = instead.find(s);
      if (p != instead.end()) {
        Impl::Packable& k = *p->second;
        if (k.src_round)
          k.src_round.execute(
              impl_->stream,
              {{DNNL_ARG_FROM, impl_->steps[s].bound.at(DNNL_ARG_SRC)}, {DNNL_ARG_TO, k.src_bf16}});
        k.prim.execute(impl_->stream, k.bound);
      } else
        impl_->steps[s].prim.execute(impl_->stream, impl_->steps[s].bound);
    }
    impl_->stream.wait();
  } catch (const dnnl::error& e) {
    throw sdk::Error(MT_ERROR_UNKNOWN, std::string("onednn.cpu: execution failed: ") + e.what());
  }
}

std::unique_ptr<DnnlModule> make_dnnl_module(const Plan& plan, std::vector<P::Buffer> params,
                                             const ModuleOptions& options) {
  return std::make_unique<DnnlModule>(plan, std::move(params), options);
}

} // namespace mt::onednn
