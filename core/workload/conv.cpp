// Convolution workloads: conv1d/conv2d/conv3d (C1D, C2D, C3D, with groups GRP, depthwise
// DEP, dilation DIL, bias + relu CBR), conv2d_transpose (T2D) and capsule conv2d (CAP).
// Padding is always its own block (so that schedules can inline it or not).
#include "core/workload/registry.h"
#include "core/workload/te.h"

namespace mt::workload_detail {

namespace {

using namespace mt::te;

struct ConvConfig {
  std::string name; // the convolution block
  bool channels_last = false;
  int64_t N = 1, C = 1, F = 1, groups = 1;
  std::vector<int64_t> in, kernel; // spatial sizes, outermost first
  int64_t stride = 1, padding = 0, dilation = 1;
  bool bias = false, relu = false;
};

std::vector<std::string> spatial_names(size_t nd, const std::string& prefix) {
  static const char* const kNames[] = {"z", "y", "x"};
  std::vector<std::string> out;
  for (size_t d = 3 - nd; d < 3; ++d)
    out.push_back(prefix + kNames[d]);
  return out;
}

// e * c without the multiplication by 1 (keeps unit-stride index expressions plain).
Expr scaled(const Expr& e, int64_t c) {
  return c == 1 ? e : e * c;
}

int64_t conv_out_size(const WorkloadParams& p, int64_t in, int64_t k, int64_t stride, int64_t pad,
                      int64_t dilation) {
  int64_t span = dilation * (k - 1) + 1;
  if (in + 2 * pad < span)
    workload_error(p, "kernel span " + std::to_string(span) + " exceeds the padded input " +
                          std::to_string(in + 2 * pad));
  return (in + 2 * pad - span) / stride + 1;
}

// Appends the optional bias_add and relu blocks that follow a convolution whose output
// channel is dimension `fdim`.
Tensor bias_relu(Tensor out, size_t fdim, bool with_bias, bool relu, DType t, int64_t F,
                 const std::vector<std::string>& axis_names, std::vector<Tensor>* inputs) {
  std::vector<int64_t> shape = out.shape();
  if (with_bias) {
    Tensor bias = placeholder({F}, t, "bias");
    inputs->push_back(bias);
    Tensor prev = out;
    out = compute(
        shape, [&](const std::vector<Expr>& v) { return prev(v) + bias(v[fdim]); }, "bias_add",
        axis_names);
  }
  if (relu) {
    Tensor prev = out;
    out = compute(
        shape, [&](const std::vector<Expr>& v) { return max(prev(v), 0.0); }, "relu", axis_names);
  }
  return out;
}

Function build_conv(const WorkloadParams& p, const ConvConfig& c) {
  const size_t nd = c.in.size();
  const DType t = p.dtype();
  if (c.C % c.groups != 0 || c.F % c.groups != 0)
    workload_error(p, "groups=" + std::to_string(c.groups) + " must divide both C=" +
                          std::to_string(c.C) + " and F=" + std::to_string(c.F));
  const int64_t Cg = c.C / c.groups, Fg = c.F / c.groups;
  std::vector<int64_t> out_sp(nd);
  for (size_t d = 0; d < nd; ++d)
    out_sp[d] = conv_out_size(p, c.in[d], c.kernel[d], c.stride, c.padding, c.dilation);

  // Layout: channels first = [N, C, spatial...] / weight [F, C/g, k...];
  // channels last = [N, spatial..., C] / weight [k..., C/g, F].
  auto with_channel = [&](int64_t lead, int64_t ch, const std::vector<int64_t>& sp) {
    std::vector<int64_t> s = {lead};
    if (!c.channels_last) s.push_back(ch);
    s.insert(s.end(), sp.begin(), sp.end());
    if (c.channels_last) s.push_back(ch);
    return s;
  };
  Tensor data = placeholder(with_channel(c.N, c.C, c.in), t, "data");
  std::vector<int64_t> wshape;
  if (c.channels_last) {
    wshape = c.kernel;
    wshape.push_back(Cg);
    wshape.push_back(c.F);
  } else {
    wshape = {c.F, Cg};
    wshape.insert(wshape.end(), c.kernel.begin(), c.kernel.end());
  }
  Tensor weight = placeholder(wshape, t, "weight");

  const size_t fdim = c.channels_last ? nd + 1 : 1;
  std::vector<std::string> axis_names = {"n"};
  std::vector<std::string> sp_names = spatial_names(nd, "");
  if (!c.channels_last) axis_names.push_back("f");
  axis_names.insert(axis_names.end(), sp_names.begin(), sp_names.end());
  if (c.channels_last) axis_names.push_back("f");
  // The pad block iterates input channels: same names with "c" for "f".
  std::vector<std::string> pad_names = axis_names;
  pad_names[fdim] = "c";

  Tensor src = data;
  if (c.padding > 0) {
    std::vector<int64_t> pads = with_channel(0, 0, std::vector<int64_t>(nd, c.padding));
    src = pad(data, pads, pads, 0.0, "pad", pad_names);
  }

  std::vector<Var> rk;
  std::vector<std::string> rnames = spatial_names(nd, "r");
  for (size_t d = 0; d < nd; ++d)
    rk.push_back(reduce_axis(c.kernel[d], rnames[d]));
  // A depthwise-style conv (one input channel per group) has no channel reduction.
  std::optional<Var> rc;
  if (Cg > 1) rc = reduce_axis(Cg, "rc");
  // Reduction order follows the layout so that the innermost reduction is contiguous.
  std::vector<Var> raxes;
  if (rc && !c.channels_last) raxes.push_back(*rc);
  raxes.insert(raxes.end(), rk.begin(), rk.end());
  if (rc && c.channels_last) raxes.push_back(*rc);

  Tensor out = compute(
      with_channel(c.N, c.F, out_sp),
      [&](const std::vector<Expr>& v) {
        Expr f = v[fdim];
        Expr group = c.groups == 1 ? Expr(0) : Fg == 1 ? f : floordiv(f, Fg);
        Expr rc_or_0 = rc ? Expr(*rc) : Expr(0);
        Expr ch = c.groups == 1 ? rc_or_0 : rc ? group * Cg + *rc : group;
        std::vector<Expr> pos(nd);
        for (size_t d = 0; d < nd; ++d) {
          Expr o = v[c.channels_last ? 1 + d : 2 + d];
          pos[d] = scaled(o, c.stride) + scaled(rk[d], c.dilation);
        }
        std::vector<Expr> di = {v[0]};
        if (!c.channels_last) di.push_back(ch);
        di.insert(di.end(), pos.begin(), pos.end());
        if (c.channels_last) di.push_back(ch);
        std::vector<Expr> wi;
        if (c.channels_last) {
          wi.assign(rk.begin(), rk.end());
          wi.push_back(rc_or_0);
          wi.push_back(f);
        } else {
          wi = {f, rc_or_0};
          wi.insert(wi.end(), rk.begin(), rk.end());
        }
        return sum(src(di) * weight(wi), raxes);
      },
      c.name, axis_names);

  std::vector<Tensor> inputs = {data, weight};
  out = bias_relu(out, fdim, c.bias, c.relu, t, c.F, axis_names, &inputs);
  return build(c.name, inputs, {out});
}

ConvConfig conv_common(const WorkloadParams& p, std::string name, size_t nd) {
  ConvConfig c;
  c.name = std::move(name);
  c.N = p.get_int("N");
  c.C = p.get_int("C");
  c.stride = p.get_int("stride");
  c.padding = p.get_int("padding");
  c.dilation = p.get_int("dilation");
  static const char* const kIn[] = {"D", "H", "W"};
  static const char* const kK[] = {"KD", "KH", "KW"};
  for (size_t d = 3 - nd; d < 3; ++d) {
    c.in.push_back(p.get_int(nd == 1 ? "L" : kIn[d]));
    c.kernel.push_back(p.get_int(nd == 1 ? "K" : kK[d]));
  }
  return c;
}

Function build_conv1d(const WorkloadParams& p) {
  ConvConfig c = conv_common(p, "conv1d", 1);
  c.F = p.get_int("F");
  c.groups = p.get_int("groups");
  return build_conv(p, c);
}

Function build_conv2d(const WorkloadParams& p) {
  ConvConfig c = conv_common(p, "conv2d", 2);
  c.F = p.get_int("F");
  c.groups = p.get_int("groups");
  c.channels_last = p.get_string("layout") == "NHWC";
  c.bias = p.get_bool("bias");
  c.relu = p.get_bool("relu");
  return build_conv(p, c);
}

Function build_depthwise_conv2d(const WorkloadParams& p) {
  ConvConfig c = conv_common(p, "depthwise_conv2d", 2);
  c.groups = c.C;
  c.F = c.C * p.get_int("multiplier");
  c.channels_last = p.get_string("layout") == "NHWC";
  c.bias = p.get_bool("bias");
  c.relu = p.get_bool("relu");
  return build_conv(p, c);
}

Function build_conv3d(const WorkloadParams& p) {
  ConvConfig c = conv_common(p, "conv3d", 3);
  c.F = p.get_int("F");
  c.groups = p.get_int("groups");
  return build_conv(p, c);
}

// Transposed convolution as a direct convolution over the input dilated by `stride` (zeros
// in between) and padded by kernel-1-padding, with the kernel flipped and its channel roles
// swapped. Dilation and padding form one "dilate_pad" block.
Function build_conv2d_transpose(const WorkloadParams& p) {
  const int64_t N = p.get_int("N"), C = p.get_int("C"), H = p.get_int("H"), W = p.get_int("W");
  const int64_t F = p.get_int("F"), KH = p.get_int("KH"), KW = p.get_int("KW");
  const int64_t s = p.get_int("stride"), pd = p.get_int("padding");
  const int64_t op = p.get_int("output_padding");
  const DType t = p.dtype();
  if (pd > KH - 1 || pd > KW - 1)
    workload_error(p, "padding=" + std::to_string(pd) + " must be < the kernel size");
  if (op >= s)
    workload_error(p, "output_padding=" + std::to_string(op) +
                          " must be < stride=" + std::to_string(s));
  const int64_t in[2] = {H, W}, k[2] = {KH, KW};
  int64_t before[2], after[2], padded[2], out_sp[2];
  for (int d = 0; d < 2; ++d) {
    before[d] = k[d] - 1 - pd;
    after[d] = k[d] - 1 - pd + op;
    padded[d] = (in[d] - 1) * s + 1 + before[d] + after[d];
    out_sp[d] = padded[d] - k[d] + 1;
  }
  Tensor data = placeholder({N, C, H, W}, t, "data");
  Tensor weight = placeholder({C, F, KH, KW}, t, "weight");

  Tensor src = data;
  if (s == 1) {
    if (before[0] + after[0] + before[1] + after[1] > 0)
      src = pad(data, {0, 0, before[0], before[1]}, {0, 0, after[0], after[1]}, 0.0, "pad",
                {"n", "c", "y", "x"});
  } else {
    src = compute({N, C, padded[0], padded[1]},
                  [&](const std::vector<Expr>& v) {
                    Expr cond;
                    std::vector<Expr> idx = {v[0], v[1]};
                    for (int d = 0; d < 2; ++d) {
                      const int64_t last = (in[d] - 1) * s; // position of the last input element
                      Expr pos = v[2 + d] - before[d];
                      std::vector<Expr> conds;
                      if (before[d] > 0) conds.push_back(pos >= 0);
                      if (after[d] > 0) conds.push_back(pos <= last);
                      conds.push_back(eq(floormod(pos, s), 0));
                      for (const Expr& e : conds)
                        cond = cond ? (cond && e) : e;
                      Expr clamped = pos;
                      if (before[d] > 0) clamped = max(clamped, 0);
                      if (after[d] > 0) clamped = min(clamped, last);
                      idx.push_back(floordiv(clamped, s));
                    }
                    return make_select(cond, data(idx), Expr(0.0));
                  },
                  "dilate_pad", {"n", "c", "y", "x"});
  }
  Var rc = reduce_axis(C, "rc"), ry = reduce_axis(KH, "ry"), rx = reduce_axis(KW, "rx");
  Tensor out = compute({N, F, out_sp[0], out_sp[1]},
                       [&](const std::vector<Expr>& v) {
                         return sum(src(v[0], rc, v[2] + ry, v[3] + rx) *
                                        weight(rc, v[1], (KH - 1) - ry, (KW - 1) - rx),
                                    {rc, ry, rx});
                       },
                       "conv2d_transpose", {"n", "f", "y", "x"});
  return build("conv2d_transpose", {data, weight}, {out});
}

// Capsule convolution: every pixel holds a cap x cap pose matrix per channel, and the kernel
// multiplies pose matrices (the reduction runs over the kernel window, the inner matrix
// dimension and the input channels).
Function build_capsule_conv2d(const WorkloadParams& p) {
  const int64_t N = p.get_int("N"), H = p.get_int("H"), W = p.get_int("W");
  const int64_t C = p.get_int("C"), F = p.get_int("F"), K = p.get_int("K");
  const int64_t s = p.get_int("stride"), pd = p.get_int("padding"), cap = p.get_int("cap");
  const DType t = p.dtype();
  const int64_t OH = conv_out_size(p, H, K, s, pd, 1), OW = conv_out_size(p, W, K, s, pd, 1);
  Tensor data = placeholder({N, H, W, cap, cap, C}, t, "data");
  Tensor weight = placeholder({K, K, cap, cap, C, F}, t, "weight");
  Tensor src = data;
  if (pd > 0)
    src = pad(data, {0, pd, pd}, {0, pd, pd}, 0.0, "pad", {"n", "y", "x", "ci", "ck", "c"});
  Var ry = reduce_axis(K, "ry"), rx = reduce_axis(K, "rx"), rk = reduce_axis(cap, "rk"),
      rc = reduce_axis(C, "rc");
  Tensor out =
      compute({N, OH, OW, cap, cap, F},
              [&](const std::vector<Expr>& v) {
                return sum(src(v[0], scaled(v[1], s) + ry, scaled(v[2], s) + rx, v[3], rk, rc) *
                               weight(ry, rx, rk, v[4], rc, v[5]),
                           {ry, rx, rk, rc});
              },
              "capsule_conv2d", {"n", "y", "x", "ci", "cj", "f"});
  return build("capsule_conv2d", {data, weight}, {out});
}

std::vector<ParamInfo> conv_params(size_t nd, int64_t Nv, int64_t Cv, std::vector<int64_t> sp,
                                   int64_t Fv, int64_t Kv, int64_t stride, int64_t padding) {
  std::vector<ParamInfo> ps = {int_param("N", Nv, "batch size"),
                               int_param("C", Cv, "input channels")};
  static const char* const kIn[] = {"D", "H", "W"};
  static const char* const kK[] = {"KD", "KH", "KW"};
  static const char* const kDoc[] = {"depth", "height", "width"};
  for (size_t d = 0; d < nd; ++d) {
    size_t a = 3 - nd + d;
    ps.push_back(nd == 1 ? int_param("L", sp[d], "input length")
                         : int_param(kIn[a], sp[d], std::string("input ") + kDoc[a]));
  }
  if (Fv > 0) ps.push_back(int_param("F", Fv, "output channels (filters)"));
  for (size_t d = 0; d < nd; ++d) {
    size_t a = 3 - nd + d;
    ps.push_back(nd == 1 ? int_param("K", Kv, "kernel length")
                         : int_param(kK[a], Kv, std::string("kernel ") + kDoc[a]));
  }
  ps.push_back(int_param("stride", stride, "stride in every spatial dimension"));
  ps.push_back(int_param("padding", padding,
                         "zero padding on both sides of every spatial "
                         "dimension (a separate pad block)",
                         0));
  ps.push_back(int_param("dilation", 1, "kernel dilation"));
  return ps;
}

} // namespace

void add_conv_workloads(std::vector<WorkloadDef>* defs) {
  {
    std::vector<ParamInfo> ps = conv_params(1, 1, 64, {256}, 128, 3, 2, 1);
    ps.push_back(int_param("groups", 1, "channel groups (must divide C and F)"));
    ps.push_back(dtype_param());
    defs->push_back({{"conv1d",
                      "C1D: conv1d[N,F,OL] from data[N,C,L] and weight[F,C/groups,K]; args: "
                      "data, weight, conv1d",
                      ps},
                     build_conv1d,
                     {"conv1d(N=2,C=4,L=20,F=6,K=3,stride=2,padding=1)",
                      "conv1d(N=1,C=6,L=17,F=4,K=3,stride=1,padding=2,dilation=2,groups=2)"}});
  }
  {
    std::vector<ParamInfo> ps = conv_params(2, 1, 3, {224, 224}, 64, 7, 2, 3);
    ps.push_back(int_param("groups", 1, "channel groups (GRP; groups=C=F is depthwise)"));
    ps.push_back(string_param("layout", "NCHW",
                              "NCHW: data[N,C,H,W], weight[F,C/groups,KH,KW]; NHWC: "
                              "data[N,H,W,C], weight[KH,KW,C/groups,F]",
                              {"NCHW", "NHWC"}));
    ps.push_back(bool_param("bias", false, "add a bias[F] block (CBR with relu=1)"));
    ps.push_back(bool_param("relu", false, "add a relu block"));
    ps.push_back(dtype_param());
    defs->push_back(
        {{"conv2d",
          "C2D/GRP/DIL/CBR: 2-D convolution with a separate pad block and optional bias_add and "
          "relu blocks; args: data, weight, [bias], result",
          ps},
         build_conv2d,
         {"conv2d(N=1,C=4,H=10,W=10,F=8,KH=3,KW=3,stride=1,padding=1)",
          "conv2d(N=2,C=4,H=11,W=9,F=6,KH=3,KW=3,stride=2,padding=2,dilation=2,groups=2)",
          "conv2d(N=1,C=3,H=8,W=7,F=8,KH=3,KW=2,stride=1,padding=1,layout=NHWC,bias=1,relu=1)",
          "conv2d(N=1,C=6,H=9,W=9,F=4,KH=3,KW=3,stride=2,padding=0,groups=2,layout=NHWC)",
          "conv2d(N=1,C=4,H=6,W=6,F=4,KH=1,KW=1,stride=1,padding=0,bias=1)"}});
  }
  {
    std::vector<ParamInfo> ps = conv_params(2, 1, 32, {112, 112}, 0, 3, 1, 1);
    ps.push_back(int_param("multiplier", 1, "output channels per input channel"));
    ps.push_back(string_param("layout", "NCHW",
                              "NCHW: weight[C*multiplier,1,KH,KW]; NHWC: "
                              "weight[KH,KW,1,C*multiplier]",
                              {"NCHW", "NHWC"}));
    ps.push_back(bool_param("bias", false, "add a bias block"));
    ps.push_back(bool_param("relu", false, "add a relu block"));
    ps.push_back(dtype_param());
    defs->push_back({{"depthwise_conv2d",
                      "DEP: conv2d with groups=C and F=C*multiplier; args: data, weight, "
                      "[bias], result",
                      ps},
                     build_depthwise_conv2d,
                     {"depthwise_conv2d(N=1,C=8,H=12,W=12,KH=3,KW=3,stride=1,padding=1)",
                      "depthwise_conv2d(N=1,C=3,H=9,W=10,KH=3,KW=3,stride=2,padding=1,"
                      "multiplier=2,layout=NHWC,bias=1,relu=1)"}});
  }
  {
    std::vector<ParamInfo> ps = conv_params(3, 1, 3, {16, 224, 224}, 64, 7, 2, 3);
    ps.push_back(int_param("groups", 1, "channel groups"));
    ps.push_back(dtype_param());
    defs->push_back(
        {{"conv3d",
          "C3D: conv3d[N,F,OD,OH,OW] from data[N,C,D,H,W] and weight[F,C/groups,KD,KH,KW]; "
          "args: data, weight, conv3d",
          ps},
         build_conv3d,
         {"conv3d(N=1,C=3,D=4,H=6,W=6,F=4,KD=3,KH=3,KW=3,stride=1,padding=1)",
          "conv3d(N=1,C=2,D=5,H=7,W=6,F=2,KD=2,KH=3,KW=3,stride=2,padding=1)"}});
  }
  defs->push_back(
      {{"conv2d_transpose",
        "T2D: transposed conv2d, data[N,C,H,W] and weight[C,F,KH,KW] to [N,F,OH,OW] with "
        "OH=(H-1)*stride-2*padding+KH+output_padding; args: data, weight, conv2d_transpose",
        {int_param("N", 1, "batch size"), int_param("C", 512, "input channels"),
         int_param("H", 4, "input height"), int_param("W", 4, "input width"),
         int_param("F", 256, "output channels"), int_param("KH", 4, "kernel height"),
         int_param("KW", 4, "kernel width"), int_param("stride", 2, "stride"),
         int_param("padding", 1, "padding removed from each side of the output", 0),
         int_param("output_padding", 0, "extra rows/columns at the end of the output", 0),
         dtype_param()}},
       build_conv2d_transpose,
       {"conv2d_transpose(N=1,C=4,H=5,W=5,F=3,KH=4,KW=4,stride=2,padding=1)",
        "conv2d_transpose(N=2,C=3,H=4,W=3,F=2,KH=3,KW=3,stride=3,padding=0,output_padding=2)",
        "conv2d_transpose(N=1,C=2,H=5,W=4,F=3,KH=3,KW=3,stride=1,padding=1)"}});
  defs->push_back(
      {{"capsule_conv2d",
        "CAP: conv2d over cap x cap pose matrices, data[N,H,W,cap,cap,C] and "
        "weight[K,K,cap,cap,C,F]; args: data, weight, capsule_conv2d",
        {int_param("N", 1, "batch size"), int_param("H", 16, "input height"),
         int_param("W", 16, "input width"), int_param("C", 32, "input capsule channels"),
         int_param("F", 32, "output capsule channels"), int_param("K", 3, "kernel size"),
         int_param("stride", 2, "stride"), int_param("padding", 1, "zero padding", 0),
         int_param("cap", 4, "pose matrix size"), dtype_param()}},
       build_capsule_conv2d,
       {"capsule_conv2d(N=1,H=6,W=6,C=3,F=4,K=3,stride=2,padding=1,cap=2)"}});
}

} // namespace mt::workload_detail
