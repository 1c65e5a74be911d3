// Every operator family onednn.cpu recognises, at small shapes of the workload library: the
// oneDNN module's output matches the reference interpreter, and describe() names the family
// and oneDNN's implementation of the last build.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "core/ir/parser.h"
#include "core/workload/library.h"
#include "onednn_test_util.h"

namespace mt::onednn_test {
namespace {

struct Case {
  const char* spec;
  const char* family; // what describe() must report after the build
};

class OnednnFamily : public ::testing::TestWithParam<Case> {};

TEST_P(OnednnFamily, OfferedAndMatchesInterpreter) {
  const Case& c = GetParam();
  Function f = make_workload(c.spec);
  std::string why;
  ASSERT_TRUE(offered(f, &why)) << c.spec << ": " << why;
  expect_matches_reference(f);
  std::string d = target().describe_device();
  EXPECT_NE(d.find(std::string("\"family\": \"") + c.family + "\""), std::string::npos) << d;
  EXPECT_NE(d.find("\"implementation\": \""), std::string::npos) << d;
  std::printf("  %s -> %s\n", c.spec, d.substr(d.find("\"last_build\"")).c_str());
}

const Case kCases[] = {
    {"matmul(M=32,N=24,K=16)", "matmul"},
    {"matmul(M=17,N=13,K=9)", "matmul"},
    {"batch_matmul(B=3,M=16,N=12,K=8)", "batch_matmul"},
    {"transpose_batch_matmul(B=2,S=12,H=2,D=8)", "batch_matmul"},
    {"dense(M=8,N=32,K=16)", "matmul"}, // bias + gelu(erf)
    {"dense(M=5,N=12,K=20,bias=0,act=relu)", "matmul"},
    {"dense(M=4,N=8,K=8,act=none)", "matmul"},
    {"conv1d(N=2,C=4,L=20,F=6,K=3,stride=2,padding=1)", "conv1d"},
    {"conv1d(N=1,C=6,L=17,F=4,K=3,stride=1,padding=2,dilation=2,groups=2)", "conv1d"},
    {"conv2d(N=1,C=4,H=10,W=10,F=8,KH=3,KW=3,stride=1,padding=1)", "conv2d"},
    {"conv2d(N=2,C=4,H=11,W=9,F=6,KH=3,KW=3,stride=2,padding=2,dilation=2,groups=2)", "conv2d"},
    {"conv2d(N=1,C=3,H=8,W=7,F=8,KH=3,KW=2,stride=1,padding=1,layout=NHWC,bias=1,relu=1)",
     "conv2d"},
    {"conv2d(N=1,C=6,H=9,W=9,F=4,KH=3,KW=3,stride=2,padding=0,groups=2,layout=NHWC)", "conv2d"},
    {"conv2d(N=1,C=4,H=6,W=6,F=4,KH=1,KW=1,stride=1,padding=0,bias=1)", "conv2d"},
    {"conv2d(N=1,C=1,H=8,W=8,F=2,KH=3,KW=3,stride=1,padding=1)", "conv2d"},
    {"depthwise_conv2d(N=1,C=8,H=12,W=12,KH=3,KW=3,stride=1,padding=1)", "conv2d"},
    {"depthwise_conv2d(N=1,C=3,H=9,W=10,KH=3,KW=3,stride=2,padding=1,multiplier=2,layout=NHWC,"
     "bias=1,relu=1)",
     "conv2d"},
    {"conv3d(N=1,C=3,D=4,H=6,W=6,F=4,KD=3,KH=3,KW=3,stride=1,padding=1)", "conv3d"},
    {"conv3d(N=1,C=2,D=5,H=7,W=6,F=2,KD=2,KH=3,KW=3,stride=2,padding=1)", "conv3d"},
    {"pool2d(N=1,C=3,H=9,W=9,K=3,stride=2,padding=1,kind=max)", "pool2d"},
    {"pool2d(N=2,C=2,H=8,W=7,K=2,stride=2,padding=1,kind=avg)", "pool2d"},
    {"pool2d(N=1,C=2,H=6,W=6,K=3,stride=1,padding=0,kind=max)", "pool2d"},
    {"softmax(M=8,N=33)", "softmax"},
    {"softmax(M=1,N=7)", "softmax"},
    {"layernorm(M=8,N=32)", "layernorm"},
    {"layernorm(M=3,N=17)", "layernorm"},
    {"norm(B=2,M=8,N=16)", "norm"},
    {"elementwise(M=8,N=16)", "binary"}, // add, mul, relu, tanh
    {"elementwise(M=5,N=7,ops=sub_sigmoid_exp_gelu_mul)", "binary"},
    {"elementwise(M=6,N=9,ops=tanh_add_sigmoid)", "eltwise"},
};

INSTANTIATE_TEST_SUITE_P(Workloads, OnednnFamily, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string n = std::to_string(info.index) + "_";
                           for (const char* p = info.param.spec; *p && *p != '('; ++p)
                             n += *p;
                           return n;
                         });

// GELU in its tanh form (not in the workload library): written as IR text.
TEST(OnednnFamilyText, DenseWithTanhGelu) {
  Function f = parse_function(R"(func dense(data: f32[6, 10], weight: f32[7, 10], out: f32[6, 7]) {
  buffer acc: f32[6, 7]
  for i in 6 {
    for j in 7 {
      for k in 10 {
        block acc(vi: S[6] = i, vj: S[7] = j, vk: R[10] = k) {
          init { acc[vi, vj] = 0f32 }
          acc[vi, vj] = acc[vi, vj] + data[vi, vk] * weight[vj, vk]
        }
      }
    }
  }
  for i in 6 {
    for j in 7 {
      block act(vi: S[6] = i, vj: S[7] = j) {
        out[vi, vj] = 0.5f32 * acc[vi, vj] * (1f32 + tanh(0.7978845608028654f32 * (acc[vi, vj] + 0.044715f32 * acc[vi, vj] * acc[vi, vj] * acc[vi, vj])))
      }
    }
  }
})");
  ASSERT_TRUE(offered(f));
  expect_matches_reference(f);
  EXPECT_NE(target().describe_device().find("gelu_tanh"), std::string::npos);
}

// GeGLU (Gemma's MLP): the tanh GELU of the gate's product times the up projection. The
// plugin computes that GELU as x * sigmoid(2c (x + 0.044715 x^3)) in two binary steps after
// the matmul (oneDNN 2.6's own gelu_tanh is slow on AVX2), the product with `up` fused into
// the second; K = 256 spreads the products over about +-15, into the GELU's tails.
TEST(OnednnFamilyText, MatmulWithTanhGeluThenAProduct) {
  Function f = parse_function(
      R"(func geglu(data: f32[8, 256], weight: f32[48, 256], up: f32[8, 48], out: f32[8, 48]) {
  buffer acc: f32[8, 48]
  for i in 8 {
    for j in 48 {
      for k in 256 {
        block acc(vi: S[8] = i, vj: S[48] = j, vk: R[256] = k) {
          init { acc[vi, vj] = 0f32 }
          acc[vi, vj] = acc[vi, vj] + data[vi, vk] * weight[vj, vk]
        }
      }
    }
  }
  for i in 8 {
    for j in 48 {
      block act(vi: S[8] = i, vj: S[48] = j) {
        out[vi, vj] = 0.5f32 * acc[vi, vj] * (1f32 + tanh(0.7978845608028654f32 * (acc[vi, vj] + 0.044715f32 * acc[vi, vj] * acc[vi, vj] * acc[vi, vj]))) * up[vi, vj]
      }
    }
  }
})");
  ASSERT_TRUE(offered(f));
  expect_matches_reference(f);
  // The products do reach the tails (where a wrong sign or a lost x would show).
  std::vector<NDArray> args = make_args(f);
  interpret(f, ptrs(args));
  double lo = 0, hi = 0;
  for (size_t i = 0; i < 8 * 48; ++i) {
    const double up = static_cast<const float*>(args[2].data())[i];
    if (std::fabs(up) < 0.1) continue;
    const double gelu = static_cast<const float*>(args[3].data())[i] / up;
    lo = std::min(lo, gelu);
    hi = std::max(hi, gelu);
  }
  EXPECT_GT(hi, 6.0);
  EXPECT_LT(lo, -0.1);
}

// The tanh GELU as a kernel of its own (the two binary steps from the input to the output),
// and after a scale, which makes it a post-op of the linear eltwise: inputs over +-8.
TEST(OnednnFamilyText, TanhGeluAloneAndAfterAScale) {
  const std::string gelu = "0.5f32 * y[vi, vj] * (1f32 + tanh(0.7978845608028654f32 * (y[vi, vj] "
                           "+ 0.044715f32 * y[vi, vj] * y[vi, vj] * y[vi, vj])))";
  Function alone = parse_function(R"(func gelu(y: f32[6, 40], out: f32[6, 40]) {
  for i in 6 {
    for j in 40 {
      block act(vi: S[6] = i, vj: S[40] = j) {
        out[vi, vj] = )" + gelu + R"(
      }
    }
  }
})");
  Function scaled = parse_function(R"(func gelu(x: f32[6, 40], out: f32[6, 40]) {
  buffer y: f32[6, 40]
  for i in 6 {
    for j in 40 {
      block scale(vi: S[6] = i, vj: S[40] = j) {
        y[vi, vj] = x[vi, vj] * 8f32
      }
    }
  }
  for i in 6 {
    for j in 40 {
      block act(vi: S[6] = i, vj: S[40] = j) {
        out[vi, vj] = )" + gelu + R"(
      }
    }
  }
})");
  for (const Function* f : {&alone, &scaled}) {
    std::string why;
    ASSERT_TRUE(offered(*f, &why)) << why;
    expect_matches_reference(*f);
  }
}

// A soft-cap (Gemma 2's logits: c * tanh(x / c)) after a matmul: two linear post-ops around a
// tanh. oneDNN 2.6's JIT kernels apply the first one's scale to both when they are fused, so
// the plugin runs such a chain unfused; the values against the interpreter (shapes the JIT
// matmul takes).
TEST(OnednnFamilyText, SoftCappedMatmulKeepsEachScale) {
  Function f =
      parse_function(R"(func capped(data: f32[16, 64], weight: f32[64, 64], out: f32[16, 64]) {
  buffer acc: f32[16, 64]
  for i in 16 {
    for j in 64 {
      for k in 64 {
        block acc(vi: S[16] = i, vj: S[64] = j, vk: R[64] = k) {
          init { acc[vi, vj] = 0f32 }
          acc[vi, vj] = acc[vi, vj] + data[vi, vk] * weight[vj, vk]
        }
      }
    }
  }
  for i in 16 {
    for j in 64 {
      block cap(vi: S[16] = i, vj: S[64] = j) {
        out[vi, vj] = tanh(acc[vi, vj] * 0.2f32) * 5f32
      }
    }
  }
})");
  ASSERT_TRUE(offered(f));
  expect_matches_reference(f);
}

TEST(OnednnModule, TimesAndRejectsWrongArguments) {
  Function f = make_workload("matmul(M=16,N=16,K=16)");
  std::unique_ptr<PluginModule> m = target().build(f);
  std::vector<NDArray> args = make_args(f);
  std::vector<double> t = m->time(ptrs(args), 3, 0.001);
  ASSERT_EQ(t.size(), 3u);
  for (double s : t)
    EXPECT_GT(s, 0);
  std::vector<NDArray> wrong = {NDArray(DType::f32(), {16, 16})};
  EXPECT_THROW(m->run(ptrs(wrong)), PluginError);
}

} // namespace
} // namespace mt::onednn_test
