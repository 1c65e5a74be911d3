// Direct convolutions (1-3 spatial dims, any layout, groups, depthwise, stride, dilation, a
// separate pad stage) and pooling windows (max / average), each with its elementwise tail
// (matmul-like contractions: recognize_matmul.cpp).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <unordered_set>

#include "recognize.hpp"

namespace mt::onednn::detail {

namespace {

struct Access {
  std::vector<int64_t> vars; // per dim: the var, or -1 for a constant 0 on an extent-1 dim
};

// Indices that are each a plain loop var or a constant 0 on an extent-1 dim.
Access plain_access(const P::Expr& load) {
  Access a;
  for (size_t d = 0; d < load->args.size(); ++d) {
    int64_t v = 0;
    if (is_var(load->args[d], &v))
      a.vars.push_back(v);
    else if (is_int(load->args[d], 0) && load->buffer->shape[d] == 1)
      a.vars.push_back(-1);
    else
      reject("an operand index that is not a plain loop variable");
  }
  return a;
}

bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

int out_pos(const Stage& s, int64_t var) {
  for (size_t d = 0; d < s.out_vars.size(); ++d)
    if (s.out_vars[d] == var) return static_cast<int>(d);
  return -1;
}

} // namespace

namespace {

struct ConvMatch {
  Plan plan;
};

// How the data's channel index depends on the output channel f and the channel reduction rc:
// sets groups and the channels per group.
void channel_expr(const Stage& m, const P::Expr& e, int64_t f, std::optional<int64_t>* rc,
                  int64_t* groups, int64_t* fg, int64_t* cg) {
  const int64_t F = m.extent_of(f);
  int64_t v = 0;
  auto f_term = [&](const P::Expr& t, int64_t* per_group) {
    int64_t w = 0;
    if (is_var(t, &w) && w == f) {
      *per_group = 1;
      return true;
    }
    if (t->kind == P::ExprKind::FloorDiv && is_var(t->args[0], &w) && w == f &&
        t->args[1]->kind == P::ExprKind::IntImm && t->args[1]->int_value > 0) {
      *per_group = t->args[1]->int_value;
      return true;
    }
    return false;
  };
  if (is_int(e, 0)) { // one input channel
    *groups = 1;
    *cg = 1;
    *fg = F;
    return;
  }
  if (is_var(e, &v) && m.is_reduce_var(v)) {
    *rc = v;
    *groups = 1;
    *cg = m.extent_of(v);
    *fg = F;
    return;
  }
  if (f_term(e, fg)) { // depthwise, with a channel multiplier fg
    *cg = 1;
    *groups = F / *fg;
    return;
  }
  if (e->kind == P::ExprKind::Add) {
    for (int side = 0; side < 2; ++side) {
      const P::Expr& r = e->args[side];
      const P::Expr& g = e->args[1 - side];
      if (!is_var(r, &v) || !m.is_reduce_var(v)) continue;
      if (g->kind == P::ExprKind::Mul && g->args[1]->kind == P::ExprKind::IntImm &&
          f_term(g->args[0], fg) && g->args[1]->int_value == m.extent_of(v)) {
        *rc = v;
        *cg = m.extent_of(v);
        *groups = F / *fg;
        return;
      }
    }
  }
  reject("a data channel index that is not a (grouped) channel expression");
}

// The data's dimensions in a convolution: the batch (a plain output var), the channel, and the
// spatial ones (o * stride + r * dilation, o an output var and r a kernel var).
struct ConvDims {
  struct Spatial {
    int dim;
    int64_t o, r, stride, dilation;
  };
  int dn = -1, dc = -1;
  std::vector<Spatial> spatial;

  bool has_kernel_var(int64_t v) const {
    return std::any_of(spatial.begin(), spatial.end(), [&](const Spatial& s) { return s.r == v; });
  }
  bool is_spatial_dim(int d) const {
    return std::any_of(spatial.begin(), spatial.end(),
                       [&](const Spatial& s) { return s.dim == d; });
  }
};

// The buffer the convolution reads: the data parameter, or the parameter a pad stage pads.
P::Buffer conv_source(const StageProgram& sp, const std::optional<PadInfo>& pad, const P::Expr& D) {
  if (!pad) {
    if (!sp.is_param(D->buffer)) reject("the data is not a parameter");
    return D->buffer;
  }
  if (D->buffer->id != pad->stage->out->id) reject("the pad stage does not feed the data");
  if (sp.num_reads(D->buffer) != 1) reject("the padded data is read more than once");
  if (pad->fill != 0) reject("padding with a nonzero value");
  return pad->source;
}

// The weights' one output dimension's var (the output channel f).
int64_t output_channel(const Stage& m, const Access& w) {
  std::vector<int64_t> fs;
  for (int64_t v : w.vars)
    if (v >= 0 && out_pos(m, v) >= 0) fs.push_back(v);
  if (fs.size() != 1) reject("the weights do not have exactly one output dimension");
  return fs[0];
}

ConvDims classify_data_dims(const Stage& m, const P::Expr& D, const Access& w, int64_t f) {
  ConvDims dims;
  for (size_t d = 0; d < D->args.size(); ++d) {
    const P::Expr& e = D->args[d];
    int64_t v = 0;
    if (is_var(e, &v) && v != f && out_pos(m, v) >= 0) {
      if (dims.dn >= 0) reject("more than one batch dimension");
      dims.dn = static_cast<int>(d);
      continue;
    }
    auto a = P::affine(e);
    int64_t o = -1, r = -1, s = 0, dil = 1;
    bool ok = a && a->constant == 0 && !a->coef.empty();
    if (ok) {
      for (auto [var, c] : a->coef) {
        if (var != f && out_pos(m, var) >= 0 && o < 0 && c > 0) {
          o = var;
          s = c;
        } else if (m.is_reduce_var(var) && contains(w.vars, var) && r < 0 && c > 0) {
          r = var;
          dil = c;
        } else {
          ok = false;
        }
      }
    }
    if (ok && o >= 0 && (r >= 0 || a->coef.size() == 1)) {
      dims.spatial.push_back({static_cast<int>(d), o, r, s, dil});
      continue;
    }
    if (dims.dc >= 0) reject("more than one channel dimension in the data");
    dims.dc = static_cast<int>(d);
  }
  if (dims.dc < 0) reject("no channel dimension in the data");
  if (dims.spatial.empty() || dims.spatial.size() > 3) reject("not 1 to 3 spatial dimensions");
  return dims;
}

// Every reduction var is the channel or a kernel dim; every weight dim is f, rc or a kernel
// dim; the channel reduction indexes the weights.
void check_conv_vars(const Stage& m, const P::Expr& W, const Access& w, int64_t f,
                     std::optional<int64_t> rc, const ConvDims& dims) {
  for (const Loop& r : m.rvars) {
    bool used = (rc && *rc == r.var) || dims.has_kernel_var(r.var);
    if (!used && r.extent != 1) reject("a reduction variable that is not a channel or kernel");
  }
  for (size_t d = 0; d < w.vars.size(); ++d) {
    int64_t v = w.vars[d];
    bool known = v == f || (rc && v == *rc) || dims.has_kernel_var(v);
    if (!known && W->buffer->shape[d] != 1) reject("a weight dim that is not f, rc or kernel");
  }
  if (rc && !contains(w.vars, *rc)) reject("the channel reduction does not index the weights");
}

Plan conv_with(const StageProgram& sp, const std::optional<PadInfo>& pad, size_t mi,
               const P::Expr& D, const P::Expr& W) {
  const Stage& m = sp.stages[mi];
  if (!sp.is_param(W->buffer)) reject("the weights are not a parameter");
  const P::Buffer source = conv_source(sp, pad, D);
  const Access w = plain_access(W);
  const int64_t f = output_channel(m, w);
  const ConvDims dims = classify_data_dims(m, D, w, f);
  const int dn = dims.dn, dc = dims.dc;
  std::optional<int64_t> rc;
  int64_t groups = 1, fg = 1, cg = 1;
  channel_expr(m, D->args[dc], f, &rc, &groups, &fg, &cg);
  const int64_t F = m.extent_of(f);
  if (groups < 1 || groups * fg != F || source->shape[dc] != groups * cg)
    reject("inconsistent group sizes");
  check_conv_vars(m, W, w, f, rc, dims);

  std::vector<int64_t> wstr = P::row_major_strides(W->buffer->shape);
  auto wdim = [&](int64_t var) -> int {
    for (size_t d = 0; d < w.vars.size(); ++d)
      if (w.vars[d] == var) return static_cast<int>(d);
    return -1;
  };
  ConvOp op;
  op.groups = groups;
  const int64_t sf = wstr[wdim(f)];
  const int64_t sc = rc ? wstr[wdim(*rc)] : 1;
  if (groups > 1) {
    op.weights.dims = {groups, fg, cg};
    op.weights.strides = {fg * sf, sf, sc};
  } else {
    op.weights.dims = {F, cg};
    op.weights.strides = {sf, sc};
  }
  op.weights.param = sp.param_of(W->buffer);
  std::vector<int64_t> sstr = P::row_major_strides(source->shape);
  op.src.param = sp.param_of(source);
  op.src.dims = {dn < 0 ? 1 : source->shape[dn], source->shape[dc]};
  op.src.strides = {dn < 0 ? 0 : sstr[dn], sstr[dc]};
  std::vector<int> logical = {dn < 0 ? -1 : out_pos(m, D->args[dn]->var_id), out_pos(m, f)};
  if (pad &&
      (pad->before[dc] || pad->after[dc] || (dn >= 0 && (pad->before[dn] || pad->after[dn]))))
    reject("padding on the batch or channel dimension");
  for (size_t d = 0; d < source->shape.size(); ++d) {
    bool known = static_cast<int>(d) == dn || static_cast<int>(d) == dc ||
                 dims.is_spatial_dim(static_cast<int>(d));
    if (!known && source->shape[d] != 1) reject("a data dim that is not batch/channel/spatial");
  }
  for (const ConvDims::Spatial& s : dims.spatial) {
    const int64_t H = source->shape[s.dim];
    const int64_t K = s.r >= 0 ? m.extent_of(s.r) : 1;
    const int64_t O = m.extent_of(s.o);
    const int64_t pl = pad ? pad->before[s.dim] : 0, pr = pad ? pad->after[s.dim] : 0;
    const int64_t span = (K - 1) * s.dilation + 1;
    if (H + pl + pr < span || (H + pl + pr - span) / s.stride + 1 != O)
      reject("output size inconsistent with the window");
    op.src.dims.push_back(H);
    op.src.strides.push_back(sstr[s.dim]);
    op.weights.dims.push_back(K);
    op.weights.strides.push_back(s.r >= 0 ? wstr[wdim(s.r)] : 1);
    op.strides.push_back(s.stride);
    op.dilates.push_back(s.dilation - 1);
    op.pad_l.push_back(pl);
    op.pad_r.push_back(pr);
    logical.push_back(out_pos(m, s.o));
  }
  fix_unit_strides(&op.src);
  fix_unit_strides(&op.weights);
  op.dst = output_view(sp, logical);
  Plan plan;
  plan.post_ops = match_tail(sp, mi + 1, logical);
  op.bias = take_bias(&plan.post_ops, 1, /*keep_rank=*/false);
  const bool depthwise = cg == 1 && groups > 1;
  plan.family = "conv" + std::to_string(dims.spatial.size()) + "d";
  plan.detail = "src " + dims_string(op.src.dims) + " weights " + dims_string(op.weights.dims) +
                (depthwise    ? " depthwise"
                 : groups > 1 ? " groups=" + std::to_string(groups)
                              : "") +
                " stride " + dims_string(op.strides) + " dilation-1 " + dims_string(op.dilates) +
                " pad " + dims_string(op.pad_l) + dims_string(op.pad_r) +
                (op.bias ? " +bias" : "") + post_op_names(plan.post_ops);
  plan.op = op;
  return plan;
}

} // namespace

Plan try_conv(const StageProgram& sp) {
  std::optional<PadInfo> pad;
  size_t mi = 0;
  if (sp.stages.size() > 1 && (pad = match_pad(sp, sp.stages[0]))) mi = 1;
  const Stage& m = sp.stages[mi];
  if (m.reduce != Reduce::Sum || m.init != 0) reject("the main step is not a sum reduction");
  auto [l1, l2] = product(m);
  std::string why;
  for (int order = 0; order < 2; ++order) {
    try {
      return order == 0 ? conv_with(sp, pad, mi, l1, l2) : conv_with(sp, pad, mi, l2, l1);
    } catch (const NotRecognised& e) {
      why += (why.empty() ? "" : " / ") + e.why;
    }
  }
  reject(why);
}

Plan try_pool(const StageProgram& sp) {
  std::optional<PadInfo> pad;
  size_t mi = 0;
  if (sp.stages.size() > 1 && (pad = match_pad(sp, sp.stages[0]))) mi = 1;
  const Stage& m = sp.stages[mi];
  const bool is_max = m.reduce == Reduce::Max && m.init <= -FLT_MAX;
  const bool is_sum = m.reduce == Reduce::Sum && m.init == 0;
  if (!is_max && !is_sum) reject("the main step is not a max or sum reduction");
  const P::Expr& D = m.value;
  if (D->kind != P::ExprKind::Load) reject("the reduction operand is not one tensor");
  P::Buffer source = D->buffer;
  if (pad) {
    if (D->buffer->id != pad->stage->out->id || sp.num_reads(D->buffer) != 1)
      reject("the pad stage does not feed the window alone");
    if (is_max ? pad->fill > -FLT_MAX : pad->fill != 0)
      reject("a pad value that is not the reduction's identity");
    source = pad->source;
  } else if (!sp.is_param(source)) {
    reject("the window reads an intermediate");
  }
  std::vector<int> plain;
  PoolOp op;
  op.max = is_max;
  std::vector<int64_t> sstr = P::row_major_strides(source->shape);
  op.src.param = sp.param_of(source);
  std::vector<int> logical;
  struct Win {
    int dim;
    int64_t o, r, stride;
  };
  std::vector<Win> wins;
  for (size_t d = 0; d < D->args.size(); ++d) {
    int64_t v = 0;
    if (is_var(D->args[d], &v) && out_pos(m, v) >= 0) {
      plain.push_back(static_cast<int>(d));
      logical.push_back(out_pos(m, v));
      continue;
    }
    auto a = P::affine(D->args[d]);
    int64_t o = -1, r = -1, s = 0;
    if (!a || a->constant != 0) reject("a window index that is not o*stride + r");
    for (auto [var, c] : a->coef) {
      if (out_pos(m, var) >= 0 && o < 0)
        o = var, s = c;
      else if (m.is_reduce_var(var) && c == 1 && r < 0)
        r = var;
      else
        reject("a window index that is not o*stride + r (dilated or skewed)");
    }
    if (o < 0 || r < 0 || s <= 0) reject("a window index that is not o*stride + r");
    wins.push_back({static_cast<int>(d), o, r, s});
  }
  if (plain.size() != 2 || wins.empty() || wins.size() > 3)
    reject("not [batch, channel] plus 1 to 3 window dims");
  if (m.rvars.size() != wins.size()) reject("a reduction var outside the window");
  for (int d : plain) {
    op.src.dims.push_back(source->shape[d]);
    op.src.strides.push_back(sstr[d]);
    if (pad && (pad->before[d] || pad->after[d])) reject("padding on batch or channel");
  }
  int64_t window = 1;
  for (const Win& w : wins) {
    const int64_t H = source->shape[w.dim], K = m.extent_of(w.r), O = m.extent_of(w.o);
    const int64_t pl = pad ? pad->before[w.dim] : 0, pr = pad ? pad->after[w.dim] : 0;
    if (H + pl + pr < K || (H + pl + pr - K) / w.stride + 1 != O)
      reject("output size inconsistent with the window");
    if (pl >= K || pr >= K) reject("a window entirely in the padding");
    op.src.dims.push_back(H);
    op.src.strides.push_back(sstr[w.dim]);
    op.kernel.push_back(K);
    op.strides.push_back(w.stride);
    op.pad_l.push_back(pl);
    op.pad_r.push_back(pr);
    logical.push_back(out_pos(m, w.o));
    window *= K;
  }
  fix_unit_strides(&op.src);
  op.dst = output_view(sp, logical);
  Plan plan;
  plan.post_ops = match_tail(sp, mi + 1, logical);
  if (is_sum) {
    // sum = average * window; fold into a following scale when there is one.
    float scale = static_cast<float>(window);
    if (!plan.post_ops.empty() && plan.post_ops[0].alg == Alg::Linear &&
        plan.post_ops[0].beta == 0) {
      scale *= plan.post_ops[0].alpha;
      plan.post_ops.erase(plan.post_ops.begin());
    }
    if (std::fabs(scale - 1.0f) > 1e-6f)
      plan.post_ops.insert(plan.post_ops.begin(), eltwise_step(Alg::Linear, scale));
  }
  plan.family = "pool" + std::to_string(wins.size()) + "d";
  plan.detail = std::string(is_max ? "max" : "avg") + " src " + dims_string(op.src.dims) +
                " kernel " + dims_string(op.kernel) + " stride " + dims_string(op.strides) +
                " pad " + dims_string(op.pad_l) + dims_string(op.pad_r) +
                post_op_names(plan.post_ops);
  plan.op = op;
  return plan;
}

} // namespace mt::onednn::detail
