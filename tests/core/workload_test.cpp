// Tests for tensor expressions (core/workload/te.h) and the workload library
// (core/workload/library.h): spec parsing and errors, the block structure that `build`
// produces, and numerical results of every test spec against naive C++ references written
// here independently of the tensor-expression definitions (checked both with a small block
// walker in this file and with the reference interpreter).
#include "core/workload/library.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/lower/interpreter.h"
#include "core/runtime/ndarray.h"
#include "core/workload/te.h"

namespace mt {
namespace {

// ---- helpers ----------------------------------------------------------------------------------

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "<no std::invalid_argument>";
}

std::vector<const BlockRealizeNode*> realizes(const Function& f) {
  std::vector<const BlockRealizeNode*> out;
  visit_stmts(f.body, [&](const Stmt& s) {
    if (s->kind == StmtKind::BlockRealize) out.push_back(as<BlockRealizeNode>(s));
    return true;
  });
  return out;
}

std::vector<std::string> block_names(const Function& f) {
  std::vector<std::string> out;
  for (const auto* r : realizes(f))
    out.push_back(r->block->name);
  return out;
}

std::string iter_kinds(const Block& b) {
  std::string s;
  for (const IterVar& iv : b.iter_vars)
    s += to_string(iv.kind);
  return s;
}

std::vector<int64_t> iter_extents(const Block& b) {
  std::vector<int64_t> out;
  for (const IterVar& iv : b.iter_vars)
    out.push_back(iv.extent);
  return out;
}

const Block& block_named(const Function& f, const std::string& name) {
  for (const auto* r : realizes(f)) {
    if (r->block->name == name) return *r->block;
  }
  throw std::runtime_error("no block " + name);
}

std::vector<std::string> param_names(const Function& f) {
  std::vector<std::string> out;
  for (const Buffer& b : f.params)
    out.push_back(b->name);
  return out;
}

// ---- spec parsing -----------------------------------------------------------------------------

TEST(WorkloadSpec, ParsesNameAndArguments) {
  WorkloadSpec s = parse_workload_spec("  matmul ( M = 4, N=5 ,K=-6, dtype=f64 ) ");
  EXPECT_EQ(s.name, "matmul");
  ASSERT_EQ(s.args.size(), 4u);
  EXPECT_EQ(s.args[0], (std::pair<std::string, std::string>("M", "4")));
  EXPECT_EQ(s.args[2], (std::pair<std::string, std::string>("K", "-6")));
  EXPECT_EQ(s.args[3], (std::pair<std::string, std::string>("dtype", "f64")));
  EXPECT_TRUE(parse_workload_spec("softmax").args.empty());
  EXPECT_TRUE(parse_workload_spec("softmax()").args.empty());
}

TEST(WorkloadSpec, SyntaxErrorsNameTheColumn) {
  struct Case {
    const char* spec;
    int column;
  };
  const Case cases[] = {
      {"matmul(M=4,,N=5)", 12}, // missing parameter name
      {"matmul(M=4", 11},       // unterminated
      {"matmul M=4", 8},        // '(' expected
      {"matmul(M=)", 10},       // missing value
      {"1matmul", 1},           // bad name
      {"matmul(M=4)x", 12},     // trailing text
      {"matmul(M 4)", 10},      // '=' expected
      {"matmul(M=-x)", 11},     // sign without digits
      {"", 1},
  };
  for (const Case& c : cases) {
    std::string msg = error_of([&] { parse_workload_spec(c.spec); });
    EXPECT_NE(msg.find("syntax error at column " + std::to_string(c.column) + ":"),
              std::string::npos)
        << c.spec << " -> " << msg;
  }
}

TEST(WorkloadSpec, CanonicalFormFillsDefaultsInDeclarationOrder) {
  EXPECT_EQ(canonical_workload_spec("matmul(K=8)"), "matmul(M=1024,N=1024,K=8,dtype=f32)");
  EXPECT_EQ(canonical_workload_spec("matmul(dtype=f64, N=3,M=2)"),
            "matmul(M=2,N=3,K=1024,dtype=f64)");
  // The canonical form is a fixed point.
  for (const std::string& spec : test_workload_specs()) {
    std::string c = canonical_workload_spec(spec);
    EXPECT_EQ(canonical_workload_spec(c), c);
  }
}

TEST(WorkloadSpec, UnknownNamesSuggestTheClosest) {
  std::string msg = error_of([] { make_workload("matmull(M=2)"); });
  EXPECT_NE(msg.find("unknown workload 'matmull'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'matmul'"), std::string::npos) << msg;

  msg = error_of([] { make_workload("matmul(k=2)"); });
  EXPECT_NE(msg.find("unknown parameter 'k'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("did you mean 'K'"), std::string::npos) << msg;

  msg = error_of([] { make_workload("conv2d(strid=2)"); });
  EXPECT_NE(msg.find("did you mean 'stride'"), std::string::npos) << msg;

  // Far from everything: no suggestion, but the list of parameters.
  msg = error_of([] { make_workload("matmul(zzzzzz=2)"); });
  EXPECT_EQ(msg.find("did you mean"), std::string::npos) << msg;
  EXPECT_NE(msg.find("parameters: M, N, K, dtype"), std::string::npos) << msg;
}

TEST(WorkloadSpec, BadValuesAreRejected) {
  struct Case {
    const char* spec;
    const char* expect;
  };
  const Case cases[] = {
      {"matmul(M=0)", "'M' must be >= 1, got 0"},
      {"matmul(M=abc)", "'M' expects an integer, got 'abc'"},
      {"matmul(M=99999999999999999999)", "expects an integer"},
      {"matmul(M=1,M=2)", "'M' given twice"},
      {"conv2d(layout=NCWH)", "did you mean 'NCHW'"},
      {"conv2d(layout=3)", "expects a name"},
      {"conv2d(bias=2)", "'bias' must be in [0, 1], got 2"},
      {"conv2d(padding=-1)", "'padding' must be >= 0"},
      {"matmul(dtype=i8)", "must be one of f32, f64, f16, bf16"},
      {"dense(act=gelu2)", "did you mean 'gelu'"},
      // Constraints between parameters are checked by the builders.
      {"conv2d(C=3,F=4,groups=2)", "groups=2 must divide both C=3 and F=4"},
      {"conv2d(H=2,W=2,KH=7,KW=7,padding=0)", "exceeds the padded input"},
      {"conv2d_transpose(stride=2,output_padding=2)", "output_padding=2 must be < stride=2"},
      {"elementwise(ops=add_reul)", "did you mean 'relu'"},
      {"pool2d(K=2,padding=2)", "padding=2 must be < K=2"},
  };
  for (const Case& c : cases) {
    std::string msg = error_of([&] { make_workload(c.spec); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.spec << " -> " << msg;
  }
}

TEST(WorkloadLibrary, ListsTheBenchmarkOperators) {
  std::set<std::string> names;
  for (const WorkloadInfo& w : list_workloads()) {
    EXPECT_TRUE(names.insert(w.name).second) << "duplicate " << w.name;
    EXPECT_FALSE(w.doc.empty()) << w.name;
    std::set<std::string> pnames;
    for (const ParamInfo& p : w.params) {
      EXPECT_TRUE(pnames.insert(p.name).second) << w.name << "." << p.name;
      EXPECT_FALSE(p.doc.empty()) << w.name << "." << p.name;
    }
    EXPECT_EQ(&workload_info(w.name), &workload_info(w.name));
  }
  for (const char* n :
       {"matmul", "batch_matmul", "transpose_batch_matmul", "dense", "conv1d", "conv2d",
        "depthwise_conv2d", "conv3d", "conv2d_transpose", "capsule_conv2d", "pool2d", "softmax",
        "layernorm", "rmsnorm", "norm", "elementwise"})
    EXPECT_TRUE(names.count(n)) << n;
}

TEST(WorkloadLibrary, EveryWorkloadBuildsWithDefaultsAndHasTestSpecs) {
  std::set<std::string> tested;
  for (const std::string& spec : test_workload_specs())
    tested.insert(parse_workload_spec(spec).name);
  for (const WorkloadInfo& w : list_workloads()) {
    Function f = make_workload(w.name);
    EXPECT_EQ(f.name, w.name);
    EXPECT_FALSE(realizes(f).empty()) << w.name;
    EXPECT_TRUE(tested.count(w.name)) << "no test spec for " << w.name;
    // Every block name and buffer name is unique.
    std::set<std::string> seen;
    for (const std::string& b : block_names(f))
      EXPECT_TRUE(seen.insert(b).second) << b;
    seen.clear();
    for (const Buffer& b : f.params)
      EXPECT_TRUE(seen.insert(b->name).second) << b->name;
    for (const Buffer& b : f.buffers)
      EXPECT_TRUE(seen.insert(b->name).second) << b->name;
  }
}

TEST(WorkloadLibrary, MarkdownDocumentsEveryParameter) {
  std::string md = workloads_markdown();
  for (const WorkloadInfo& w : list_workloads()) {
    EXPECT_NE(md.find("### " + w.name + "\n"), std::string::npos) << w.name;
    for (const ParamInfo& p : w.params)
      EXPECT_NE(md.find("`" + p.name + "`"), std::string::npos);
  }
}

// docs/workloads.md embeds workloads_markdown() verbatim, so the two cannot drift apart.
TEST(WorkloadLibrary, DocsAreUpToDate) {
  std::string path = __FILE__;
  path = path.substr(0, path.rfind("tests/core/")) + "docs/workloads.md";
  std::ifstream in(path);
  if (!in) GTEST_SKIP() << "no " << path;
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  EXPECT_NE(doc.find(workloads_markdown()), std::string::npos)
      << path << " is stale: regenerate its reference section from workloads_markdown()";
  // Every spec quoted in the docs builds.
  int specs = 0;
  for (size_t b = doc.find('`'); b != std::string::npos; b = doc.find('`', b + 1)) {
    size_t e = doc.find('`', b + 1);
    if (e == std::string::npos) break;
    std::string tok = doc.substr(b + 1, e - b - 1);
    b = e;
    size_t paren = tok.find('(');
    if (paren == std::string::npos || paren == 0 || tok.back() != ')') continue;
    bool is_workload = false; // not an API call such as `make_workload(spec)`
    for (const WorkloadInfo& w : list_workloads())
      is_workload |= tok.substr(0, paren) == w.name;
    if (!is_workload) continue;
    ++specs;
    EXPECT_NO_THROW(make_workload(tok)) << tok;
  }
  EXPECT_GT(specs, 30);
}

// ---- structure --------------------------------------------------------------------------------

TEST(WorkloadStructure, MatmulIsOneReductionBlockUnderThreeLoops) {
  Function f = make_workload("matmul(M=6,N=5,K=4)");
  EXPECT_EQ(param_names(f), (std::vector<std::string>{"A", "B", "matmul"}));
  EXPECT_EQ(f.params[0]->shape, (std::vector<int64_t>{6, 4}));
  EXPECT_EQ(f.params[1]->shape, (std::vector<int64_t>{4, 5}));
  EXPECT_EQ(f.params[2]->shape, (std::vector<int64_t>{6, 5}));
  EXPECT_TRUE(f.buffers.empty());
  EXPECT_FALSE(f.lowered);

  // for i, for j, for k, block.
  std::vector<const ForNode*> loops;
  Stmt s = f.body;
  while (s->kind == StmtKind::For) {
    loops.push_back(as<ForNode>(s));
    s = as<ForNode>(s)->body;
  }
  ASSERT_EQ(loops.size(), 3u);
  ASSERT_EQ(s->kind, StmtKind::BlockRealize);
  const auto* br = as<BlockRealizeNode>(s);
  const Block& b = *br->block;
  EXPECT_EQ(b.name, "matmul");
  EXPECT_EQ(iter_kinds(b), "SSR");
  EXPECT_EQ(iter_extents(b), (std::vector<int64_t>{6, 5, 4}));
  EXPECT_FALSE(br->predicate);
  const char* names[] = {"i", "j", "k"};
  for (int d = 0; d < 3; ++d) {
    EXPECT_EQ(loops[d]->loop_var->name, names[d]);
    EXPECT_EQ(b.iter_vars[d].var->name, names[d]);
    EXPECT_EQ(loops[d]->extent, b.iter_vars[d].extent);
    EXPECT_EQ(loops[d]->for_kind, ForKind::Serial);
    EXPECT_TRUE(br->iter_values[d].same_as(loops[d]->loop_var));
    EXPECT_FALSE(loops[d]->loop_var.same_as(b.iter_vars[d].var));
  }
  // init: C[i, j] = 0; body: C[i, j] = C[i, j] + A[i, k] * B[k, j].
  ASSERT_TRUE(b.init);
  ASSERT_EQ(b.init->kind, StmtKind::Store);
  const auto* init = as<StoreNode>(b.init);
  EXPECT_EQ(init->buffer, f.params[2]);
  EXPECT_EQ(init->value->kind, ExprKind::FloatImm);
  EXPECT_EQ(init->value->float_value, 0.0);
  ASSERT_EQ(b.body->kind, StmtKind::Store);
  const auto* body = as<StoreNode>(b.body);
  EXPECT_EQ(body->buffer, f.params[2]);
  EXPECT_TRUE(body->indices[0].same_as(b.iter_vars[0].var));
  EXPECT_TRUE(body->indices[1].same_as(b.iter_vars[1].var));
  ASSERT_EQ(body->value->kind, ExprKind::Add);
  const Expr& acc = body->value->args[0];
  ASSERT_EQ(acc->kind, ExprKind::Load);
  EXPECT_EQ(acc->buffer, f.params[2]);
  const Expr& prod = body->value->args[1];
  ASSERT_EQ(prod->kind, ExprKind::Mul);
  ASSERT_EQ(prod->args[0]->kind, ExprKind::Load);
  EXPECT_EQ(prod->args[0]->buffer, f.params[0]);
  EXPECT_TRUE(prod->args[0]->args[1].same_as(b.iter_vars[2].var));
  EXPECT_EQ(prod->args[1]->buffer, f.params[1]);
  EXPECT_TRUE(prod->args[1]->args[0].same_as(b.iter_vars[2].var));
  EXPECT_EQ(f.output_mask(), (std::vector<bool>{false, false, true}));
}

TEST(WorkloadStructure, ConvHasSeparatePadBiasAndReluBlocks) {
  Function f = make_workload(
      "conv2d(N=2,C=4,H=9,W=8,F=6,KH=3,KW=3,stride=2,padding=1,groups=2,bias=1,relu=1)");
  EXPECT_EQ(block_names(f), (std::vector<std::string>{"pad", "conv2d", "bias_add", "relu"}));
  EXPECT_EQ(param_names(f), (std::vector<std::string>{"data", "weight", "bias", "relu"}));
  EXPECT_EQ(f.params[0]->shape, (std::vector<int64_t>{2, 4, 9, 8}));
  EXPECT_EQ(f.params[1]->shape, (std::vector<int64_t>{6, 2, 3, 3}));
  EXPECT_EQ(f.params[2]->shape, (std::vector<int64_t>{6}));
  EXPECT_EQ(f.params[3]->shape, (std::vector<int64_t>{2, 6, 5, 4}));
  ASSERT_EQ(f.buffers.size(), 3u);
  EXPECT_EQ(f.buffers[0]->name, "pad");
  EXPECT_EQ(f.buffers[0]->shape, (std::vector<int64_t>{2, 4, 11, 10}));
  const Block& conv = block_named(f, "conv2d");
  EXPECT_EQ(iter_kinds(conv), "SSSSRRR");
  EXPECT_EQ(iter_extents(conv), (std::vector<int64_t>{2, 6, 5, 4, 2, 3, 3}));
  EXPECT_EQ(iter_kinds(block_named(f, "pad")), "SSSS");
  EXPECT_FALSE(block_named(f, "pad").init);
  EXPECT_EQ(iter_kinds(block_named(f, "relu")), "SSSS");

  // No padding: no pad block; depthwise: no channel reduction.
  Function g = make_workload("depthwise_conv2d(C=8,H=10,W=10,padding=0)");
  EXPECT_EQ(block_names(g), (std::vector<std::string>{"depthwise_conv2d"}));
  EXPECT_EQ(iter_kinds(block_named(g, "depthwise_conv2d")), "SSSSRR");

  Function h = make_workload("conv2d(layout=NHWC,C=3,F=8,H=16,W=16,KH=3,KW=3,padding=1)");
  EXPECT_EQ(h.params[0]->shape, (std::vector<int64_t>{1, 16, 16, 3}));
  EXPECT_EQ(h.params[1]->shape, (std::vector<int64_t>{3, 3, 3, 8}));
  EXPECT_EQ(h.params[2]->shape, (std::vector<int64_t>{1, 8, 8, 8}));
  std::vector<std::string> names;
  for (const IterVar& iv : block_named(h, "conv2d").iter_vars)
    names.push_back(iv.var->name);
  EXPECT_EQ(names, (std::vector<std::string>{"n", "y", "x", "f", "ry", "rx", "rc"}));
}

TEST(WorkloadStructure, SoftmaxIsFourBlocks) {
  Function f = make_workload("softmax(M=4,N=10)");
  EXPECT_EQ(block_names(f), (std::vector<std::string>{"softmax_maxelem", "softmax_exp",
                                                      "softmax_expsum", "softmax_norm"}));
  EXPECT_EQ(iter_kinds(block_named(f, "softmax_maxelem")), "SR");
  EXPECT_EQ(iter_kinds(block_named(f, "softmax_exp")), "SS");
  EXPECT_EQ(iter_kinds(block_named(f, "softmax_expsum")), "SR");
  EXPECT_EQ(iter_kinds(block_named(f, "softmax_norm")), "SS");
  EXPECT_EQ(f.buffers.size(), 3u);
  // The max reduction starts from the lowest value of the type.
  const auto* init = as<StoreNode>(block_named(f, "softmax_maxelem").init);
  EXPECT_EQ(init->value->float_value, -std::numeric_limits<double>::infinity());
  ASSERT_EQ(f.body->kind, StmtKind::Seq);
  EXPECT_EQ(as<SeqNode>(f.body)->stmts.size(), 4u);
}

// ---- tensor expressions -----------------------------------------------------------------------

TEST(WorkloadTe, DuplicateNamesAreMadeUnique) {
  using namespace te;
  Tensor x = placeholder({4}, DType::f32(), "t");
  Tensor a = compute(
      {4}, [&](const std::vector<Expr>& i) { return x(i) + 1.0; }, "t");
  Tensor b = compute(
      {4}, [&](const std::vector<Expr>& i) { return a(i) * 2.0; }, "t");
  Function f = build("f", {x}, {b});
  EXPECT_EQ(param_names(f), (std::vector<std::string>{"t", "t_1"}));
  ASSERT_EQ(f.buffers.size(), 1u);
  EXPECT_EQ(f.buffers[0]->name, "t_2");
  EXPECT_EQ(block_names(f), (std::vector<std::string>{"t_2", "t_1"}));
  // The renamed intermediate is what the second block reads.
  const auto* st = as<StoreNode>(block_named(f, "t_1").body);
  EXPECT_EQ(st->value->args[0]->buffer, f.buffers[0]);
}

TEST(WorkloadTe, SharedReduceAxisGivesDistinctBlockVars) {
  using namespace te;
  Tensor x = placeholder({3, 5}, DType::f32(), "x");
  Var k = reduce_axis(5, "k");
  Tensor s = compute(
      {3}, [&](const std::vector<Expr>& i) { return sum(x(i[0], k), {k}); }, "s");
  Tensor m = compute(
      {3}, [&](const std::vector<Expr>& i) { return min_reduce(x(i[0], k) * s(i[0]), {k}); }, "m");
  Function f = build("f", {x}, {m});
  const Block& bs = block_named(f, "s");
  const Block& bm = block_named(f, "m");
  EXPECT_FALSE(bs.iter_vars[1].var.same_as(bm.iter_vars[1].var));
  EXPECT_EQ(bs.iter_vars[1].var->name, "k");
  EXPECT_EQ(as<StoreNode>(bm.init)->value->float_value, std::numeric_limits<double>::infinity());
  // Building twice shares nothing mutable and gives fresh variables again.
  Function g = build("g", {x}, {m});
  EXPECT_FALSE(block_named(g, "m").iter_vars[0].var.same_as(bm.iter_vars[0].var));
}

TEST(WorkloadTe, NameCollisionBetweenAxesIsResolved) {
  using namespace te;
  Tensor x = placeholder({2, 3, 4}, DType::f32(), "x");
  Var k = reduce_axis(4, "k"); // the default third spatial axis is also "k"
  Tensor y = compute(
      {2, 3, 1}, [&](const std::vector<Expr>& i) { return sum(x(i[0], i[1], k), {k}); }, "y");
  Function f = build("f", {x}, {y});
  const Block& b = block_named(f, "y");
  EXPECT_EQ(b.iter_vars[2].var->name, "k");
  EXPECT_EQ(b.iter_vars[3].var->name, "k_1");
}

TEST(WorkloadTe, ErrorsNameTheTensor) {
  using namespace te;
  Tensor x = placeholder({4}, DType::f32(), "x");
  Tensor hidden = placeholder({4}, DType::f32(), "hidden");
  Tensor y = compute(
      {4}, [&](const std::vector<Expr>& i) { return x(i) + hidden(i); }, "y");
  EXPECT_NE(error_of([&] {
              build("f", {x}, {y});
            }).find("tensor 'hidden' is read but is not one of the inputs"),
            std::string::npos);
  EXPECT_NE(error_of([&] { build("f", {y}, {y}); }).find("is a compute"), std::string::npos);
  EXPECT_NE(error_of([&] { build("f", {x}, {x}); }).find("is a placeholder"), std::string::npos);
  EXPECT_NE(error_of([&] { x(0, 1); }).find("tensor 'x' of rank 1 accessed with 2 indices"),
            std::string::npos);
  Expr stray = make_var("stray");
  EXPECT_NE(error_of([&] {
              compute(
                  {4}, [&](const std::vector<Expr>& i) { return x(i[0] + stray); }, "z");
            }).find("compute 'z': uses variable 'stray'"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              compute(
                  {4}, [&](const std::vector<Expr>&) { return make_load(x.buffer(), {0}); }, "w");
            }).find("not a tensor accessed inside"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              placeholder({3, 0}, DType::f32(), "p");
            }).find("dimension 1"),
            std::string::npos);
  EXPECT_NE(error_of([&] { reduce_axis(0, "r"); }).find("reduce_axis 'r'"), std::string::npos);
}

TEST(WorkloadTe, PadClampsAndSelects) {
  using namespace te;
  Tensor x = placeholder({3, 4}, DType::f64(), "x");
  Tensor p = pad(x, {1}, {2}, 7, "p");
  EXPECT_EQ(p.shape(), (std::vector<int64_t>{6, 4}));
  Function f = build("f", {x}, {p});
  const auto* st = as<StoreNode>(block_named(f, "p").body);
  ASSERT_EQ(st->value->kind, ExprKind::Select);
  EXPECT_EQ(st->value->dtype, DType::f64());
  EXPECT_EQ(st->value->args[2]->kind, ExprKind::FloatImm);
  EXPECT_EQ(st->value->args[2]->float_value, 7.0);
  // The unpadded dimension is read as is.
  const Expr& load = st->value->args[1];
  EXPECT_TRUE(load->args[1].same_as(block_named(f, "p").iter_vars[1].var));
}

// ---- numerics ---------------------------------------------------------------------------------

using Arrays = std::map<std::string, std::vector<double>>;

// Evaluates a (not lowered) Function by walking its loops and blocks directly: block iter vars
// bound from iter_values, init run when every reduction iter var is 0. Doubles throughout.
class BlockWalker {
public:
  int64_t block_runs = 0;

  void run(const Function& f, Arrays* arrays) {
    for (const Buffer& b : f.params)
      mem_[b.get()] = &arrays->at(b->name);
    std::vector<std::vector<double>> scratch(f.buffers.size());
    for (size_t i = 0; i < f.buffers.size(); ++i) {
      scratch[i].assign(f.buffers[i]->num_elements(), std::nan(""));
      mem_[f.buffers[i].get()] = &scratch[i];
    }
    exec(f.body);
  }

private:
  int64_t flat(const Buffer& b, const std::vector<Expr>& idx) {
    int64_t off = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      auto i = static_cast<int64_t>(eval(idx[d]));
      if (i < 0 || i >= b->shape[d]) throw std::runtime_error("out of bounds access to " + b->name);
      off = off * b->shape[d] + i;
    }
    return off;
  }

  double eval(const Expr& e) {
    const auto& a = e->args;
    switch (e->kind) {
    case ExprKind::IntImm:
      return static_cast<double>(e->int_value);
    case ExprKind::FloatImm:
      return e->float_value;
    case ExprKind::Var:
      return env_.at(e.get());
    case ExprKind::Add:
      return eval(a[0]) + eval(a[1]);
    case ExprKind::Sub:
      return eval(a[0]) - eval(a[1]);
    case ExprKind::Mul:
      return eval(a[0]) * eval(a[1]);
    case ExprKind::Div:
      return eval(a[0]) / eval(a[1]);
    case ExprKind::FloorDiv:
      return std::floor(eval(a[0]) / eval(a[1]));
    case ExprKind::FloorMod: {
      double x = eval(a[0]), y = eval(a[1]);
      return x - std::floor(x / y) * y;
    }
    case ExprKind::Min:
      return std::min(eval(a[0]), eval(a[1]));
    case ExprKind::Max:
      return std::max(eval(a[0]), eval(a[1]));
    case ExprKind::EQ:
      return eval(a[0]) == eval(a[1]);
    case ExprKind::NE:
      return eval(a[0]) != eval(a[1]);
    case ExprKind::LT:
      return eval(a[0]) < eval(a[1]);
    case ExprKind::LE:
      return eval(a[0]) <= eval(a[1]);
    case ExprKind::GT:
      return eval(a[0]) > eval(a[1]);
    case ExprKind::GE:
      return eval(a[0]) >= eval(a[1]);
    case ExprKind::And:
      return eval(a[0]) != 0 && eval(a[1]) != 0;
    case ExprKind::Or:
      return eval(a[0]) != 0 || eval(a[1]) != 0;
    case ExprKind::Not:
      return eval(a[0]) == 0;
    // Eager on purpose: padded loads must be in bounds whichever branch is taken.
    case ExprKind::Select: {
      double c = eval(a[0]), t = eval(a[1]), f = eval(a[2]);
      return c != 0 ? t : f;
    }
    case ExprKind::Cast:
      return e->dtype.is_float() ? eval(a[0]) : std::trunc(eval(a[0]));
    case ExprKind::Load:
      return (*mem_.at(e->buffer.get()))[flat(e->buffer, a)];
    case ExprKind::Call: {
      double x = eval(a[0]);
      switch (e->fn) {
      case MathFn::Exp:
        return std::exp(x);
      case MathFn::Log:
        return std::log(x);
      case MathFn::Tanh:
        return std::tanh(x);
      case MathFn::Erf:
        return std::erf(x);
      case MathFn::Sqrt:
        return std::sqrt(x);
      case MathFn::Rsqrt:
        return 1.0 / std::sqrt(x);
      case MathFn::Pow:
        return std::pow(x, eval(a[1]));
      case MathFn::Abs:
        return std::fabs(x);
      case MathFn::Sigmoid:
        return 1.0 / (1.0 + std::exp(-x));
      }
      break;
    }
    }
    throw std::runtime_error("cannot evaluate expression");
  }

  void exec(const Stmt& s) {
    switch (s->kind) {
    case StmtKind::For: {
      const auto* f = as<ForNode>(s);
      for (int64_t i = 0; i < f->extent; ++i) {
        env_[f->loop_var.get()] = static_cast<double>(i);
        exec(f->body);
      }
      return;
    }
    case StmtKind::Seq:
      for (const Stmt& c : as<SeqNode>(s)->stmts)
        exec(c);
      return;
    case StmtKind::Store: {
      const auto* st = as<StoreNode>(s);
      double v = eval(st->value);
      (*mem_.at(st->buffer.get()))[flat(st->buffer, st->indices)] = v;
      return;
    }
    case StmtKind::IfThenElse: {
      const auto* n = as<IfThenElseNode>(s);
      if (eval(n->condition) != 0)
        exec(n->then_case);
      else if (n->else_case)
        exec(n->else_case);
      return;
    }
    case StmtKind::BlockRealize: {
      const auto* br = as<BlockRealizeNode>(s);
      const Block& b = *br->block;
      if (static_cast<bool>(br->predicate) && eval(br->predicate) == 0) return;
      bool first = true;
      for (size_t i = 0; i < b.iter_vars.size(); ++i) {
        double v = eval(br->iter_values[i]);
        if (v < 0 || v >= static_cast<double>(b.iter_vars[i].extent))
          throw std::runtime_error("iter var out of its domain in block " + b.name);
        env_[b.iter_vars[i].var.get()] = v;
        if (b.iter_vars[i].kind == IterKind::Reduce && v != 0) first = false;
      }
      if (b.init && first) exec(b.init);
      exec(b.body);
      ++block_runs;
      return;
    }
    case StmtKind::Allocate:
      exec(as<AllocateNode>(s)->body);
      return;
    }
  }

  std::unordered_map<const BufferNode*, std::vector<double>*> mem_;
  std::unordered_map<const ExprNode*, double> env_;
};

// ---- naive references, written from the operator definitions -------------------------------

int64_t conv_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) {
  return (in + 2 * p - d * (k - 1) - 1) / s + 1;
}

std::vector<double> ref_matmul(const WorkloadParams& p, Arrays& a) {
  int64_t M = p.get_int("M"), N = p.get_int("N"), K = p.get_int("K");
  std::vector<double> c(M * N, 0.0);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j)
      for (int64_t k = 0; k < K; ++k)
        c[i * N + j] += a["A"][i * K + k] * a["B"][k * N + j];
  return c;
}

std::vector<double> ref_batch_matmul(const WorkloadParams& p, Arrays& a) {
  int64_t B = p.get_int("B"), M = p.get_int("M"), N = p.get_int("N"), K = p.get_int("K");
  std::vector<double> c(B * M * N, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j)
        for (int64_t k = 0; k < K; ++k)
          c[(b * M + i) * N + j] += a["A"][(b * M + i) * K + k] * a["B"][(b * K + k) * N + j];
  return c;
}

std::vector<double> ref_tbg(const WorkloadParams& p, Arrays& a) {
  int64_t B = p.get_int("B"), S = p.get_int("S"), H = p.get_int("H"), D = p.get_int("D");
  auto q_at = [&](const char* t, int64_t b, int64_t s, int64_t h, int64_t d) {
    return a[t][((b * S + s) * H + h) * D + d];
  };
  std::vector<double> out(B * H * S * S, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i)
        for (int64_t j = 0; j < S; ++j)
          for (int64_t d = 0; d < D; ++d)
            out[((b * H + h) * S + i) * S + j] +=
                q_at("query", b, i, h, d) * q_at("key", b, j, h, d);
  return out;
}

double gelu(double x) {
  return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
}

std::vector<double> ref_dense(const WorkloadParams& p, Arrays& a) {
  int64_t M = p.get_int("M"), N = p.get_int("N"), K = p.get_int("K");
  std::vector<double> out(M * N);
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < K; ++k)
        acc += a["data"][i * K + k] * a["weight"][j * K + k];
      if (p.get_bool("bias")) acc += a["bias"][j];
      if (p.get_string("act") == "relu") acc = std::max(acc, 0.0);
      if (p.get_string("act") == "gelu") acc = gelu(acc);
      out[i * N + j] = acc;
    }
  return out;
}

// Calls f(index) for every multi-index below `dims` (row-major order).
void for_each_index(const std::vector<int64_t>& dims,
                    const std::function<void(const std::vector<int64_t>&)>& f) {
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t d : dims)
    if (d <= 0) return;
  for (;;) {
    f(idx);
    size_t d = dims.size();
    while (d > 0) {
      --d;
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
      if (d == 0) return;
    }
    if (dims.empty()) return;
  }
}

// Direct convolution with explicit bounds checks instead of a padded copy.
std::vector<double> ref_conv(const WorkloadParams& p, Arrays& a) {
  const std::string& w = p.workload();
  size_t nd = w == "conv1d" ? 1 : w == "conv3d" ? 3 : 2;
  std::vector<int64_t> in, k;
  if (nd == 1) {
    in = {p.get_int("L")};
    k = {p.get_int("K")};
  } else if (nd == 2) {
    in = {p.get_int("H"), p.get_int("W")};
    k = {p.get_int("KH"), p.get_int("KW")};
  } else {
    in = {p.get_int("D"), p.get_int("H"), p.get_int("W")};
    k = {p.get_int("KD"), p.get_int("KH"), p.get_int("KW")};
  }
  const int64_t N = p.get_int("N"), C = p.get_int("C");
  const bool depthwise = w == "depthwise_conv2d";
  const int64_t G = depthwise ? C : p.get_int("groups");
  const int64_t F = depthwise ? C * p.get_int("multiplier") : p.get_int("F");
  const int64_t s = p.get_int("stride"), pad = p.get_int("padding"), dil = p.get_int("dilation");
  const bool nhwc = nd == 2 && p.get_string("layout") == "NHWC";
  const bool bias = nd == 2 && p.get_bool("bias"), relu = nd == 2 && p.get_bool("relu");
  const int64_t Cg = C / G, Fg = F / G;
  std::vector<int64_t> out_sp;
  for (size_t d = 0; d < nd; ++d)
    out_sp.push_back(conv_out(in[d], k[d], s, pad, dil));

  auto data_at = [&](int64_t n, int64_t c, const std::vector<int64_t>& pos) {
    int64_t off = nhwc ? n : n * C + c;
    for (size_t d = 0; d < nd; ++d)
      off = off * in[d] + pos[d];
    if (nhwc) off = off * C + c;
    return a["data"][off];
  };
  auto weight_at = [&](int64_t f, int64_t c, const std::vector<int64_t>& r) {
    int64_t off = 0;
    if (nhwc) {
      for (size_t d = 0; d < nd; ++d)
        off = off * k[d] + r[d];
      return a["weight"][(off * Cg + c) * F + f];
    }
    off = f * Cg + c;
    for (size_t d = 0; d < nd; ++d)
      off = off * k[d] + r[d];
    return a["weight"][off];
  };
  std::vector<int64_t> out_dims = {N, F};
  out_dims.insert(out_dims.end(), out_sp.begin(), out_sp.end());
  std::vector<double> out;
  for_each_index(out_dims, [&](const std::vector<int64_t>& o) {
    const int64_t n = o[0], f = o[1], g = f / Fg;
    double acc = 0;
    for (int64_t c = 0; c < Cg; ++c) {
      for_each_index(k, [&](const std::vector<int64_t>& r) {
        std::vector<int64_t> pos(nd);
        for (size_t d = 0; d < nd; ++d) {
          pos[d] = o[2 + d] * s - pad + r[d] * dil;
          if (pos[d] < 0 || pos[d] >= in[d]) return;
        }
        acc += data_at(n, g * Cg + c, pos) * weight_at(f, c, r);
      });
    }
    if (bias) acc += a["bias"][f];
    if (relu) acc = std::max(acc, 0.0);
    out.push_back(acc);
  });
  if (!nhwc) return out;
  // Computed as [N, F, spatial...]; the NHWC result is [N, spatial..., F].
  std::vector<double> t(out.size());
  int64_t sp = 1;
  for (int64_t d : out_sp)
    sp *= d;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t f = 0; f < F; ++f)
      for (int64_t i = 0; i < sp; ++i)
        t[(n * sp + i) * F + f] = out[(n * F + f) * sp + i];
  return t;
}

// Scatter form: every input pixel adds its kernel-weighted contribution to the output.
std::vector<double> ref_conv2d_transpose(const WorkloadParams& p, Arrays& a) {
  const int64_t N = p.get_int("N"), C = p.get_int("C"), H = p.get_int("H"), W = p.get_int("W");
  const int64_t F = p.get_int("F"), KH = p.get_int("KH"), KW = p.get_int("KW");
  const int64_t s = p.get_int("stride"), pd = p.get_int("padding");
  const int64_t op = p.get_int("output_padding");
  const int64_t OH = (H - 1) * s - 2 * pd + KH + op, OW = (W - 1) * s - 2 * pd + KW + op;
  std::vector<double> out(N * F * OH * OW, 0.0);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t y = 0; y < H; ++y)
        for (int64_t x = 0; x < W; ++x)
          for (int64_t f = 0; f < F; ++f)
            for (int64_t ky = 0; ky < KH; ++ky)
              for (int64_t kx = 0; kx < KW; ++kx) {
                int64_t oy = y * s - pd + ky, ox = x * s - pd + kx;
                if (oy < 0 || oy >= OH || ox < 0 || ox >= OW) continue;
                out[((n * F + f) * OH + oy) * OW + ox] +=
                    a["data"][((n * C + c) * H + y) * W + x] *
                    a["weight"][((c * F + f) * KH + ky) * KW + kx];
              }
  return out;
}

std::vector<double> ref_capsule(const WorkloadParams& p, Arrays& a) {
  const int64_t N = p.get_int("N"), H = p.get_int("H"), W = p.get_int("W");
  const int64_t C = p.get_int("C"), F = p.get_int("F"), K = p.get_int("K");
  const int64_t s = p.get_int("stride"), pd = p.get_int("padding"), cap = p.get_int("cap");
  const int64_t OH = conv_out(H, K, s, pd, 1), OW = conv_out(W, K, s, pd, 1);
  std::vector<double> out;
  for_each_index({N, OH, OW, cap, cap, F}, [&](const std::vector<int64_t>& o) {
    double acc = 0;
    for (int64_t ry = 0; ry < K; ++ry)
      for (int64_t rx = 0; rx < K; ++rx) {
        int64_t y = o[1] * s - pd + ry, x = o[2] * s - pd + rx;
        if (y < 0 || y >= H || x < 0 || x >= W) continue;
        for (int64_t ck = 0; ck < cap; ++ck)
          for (int64_t c = 0; c < C; ++c)
            acc += a["data"][((((o[0] * H + y) * W + x) * cap + o[3]) * cap + ck) * C + c] *
                   a["weight"][((((ry * K + rx) * cap + ck) * cap + o[4]) * C + c) * F + o[5]];
      }
    out.push_back(acc);
  });
  return out;
}

std::vector<double> ref_pool2d(const WorkloadParams& p, Arrays& a) {
  const int64_t N = p.get_int("N"), C = p.get_int("C"), H = p.get_int("H"), W = p.get_int("W");
  const int64_t K = p.get_int("K"), s = p.get_int("stride"), pd = p.get_int("padding");
  const bool is_max = p.get_string("kind") == "max";
  const int64_t OH = conv_out(H, K, s, pd, 1), OW = conv_out(W, K, s, pd, 1);
  std::vector<double> out;
  for_each_index({N, C, OH, OW}, [&](const std::vector<int64_t>& o) {
    double acc = is_max ? -INFINITY : 0.0;
    for (int64_t ry = 0; ry < K; ++ry)
      for (int64_t rx = 0; rx < K; ++rx) {
        int64_t y = o[2] * s - pd + ry, x = o[3] * s - pd + rx;
        if (y < 0 || y >= H || x < 0 || x >= W) continue;
        double v = a["data"][((o[0] * C + o[1]) * H + y) * W + x];
        acc = is_max ? std::max(acc, v) : acc + v;
      }
    out.push_back(is_max ? acc : acc / static_cast<double>(K * K));
  });
  return out;
}

std::vector<double> ref_softmax(const WorkloadParams& p, Arrays& a) {
  const int64_t M = p.get_int("M"), N = p.get_int("N");
  std::vector<double> out(M * N);
  for (int64_t i = 0; i < M; ++i) {
    const double* x = &a["data"][i * N];
    double mx = *std::max_element(x, x + N), total = 0;
    for (int64_t j = 0; j < N; ++j)
      total += std::exp(x[j] - mx);
    for (int64_t j = 0; j < N; ++j)
      out[i * N + j] = std::exp(x[j] - mx) / total;
  }
  return out;
}

std::vector<double> ref_layernorm(const WorkloadParams& p, Arrays& a) {
  const int64_t M = p.get_int("M"), N = p.get_int("N");
  std::vector<double> out(M * N);
  for (int64_t i = 0; i < M; ++i) {
    const double* x = &a["data"][i * N];
    double mean = 0, var = 0;
    for (int64_t j = 0; j < N; ++j)
      mean += x[j] / static_cast<double>(N);
    for (int64_t j = 0; j < N; ++j)
      var += (x[j] - mean) * (x[j] - mean) / static_cast<double>(N);
    for (int64_t j = 0; j < N; ++j)
      out[i * N + j] = (x[j] - mean) / std::sqrt(var + 1e-5) * a["gamma"][j] + a["beta"][j];
  }
  return out;
}

std::vector<double> ref_rmsnorm(const WorkloadParams& p, Arrays& a) {
  const int64_t M = p.get_int("M"), N = p.get_int("N");
  std::vector<double> out(M * N);
  for (int64_t i = 0; i < M; ++i) {
    const double* x = &a["data"][i * N];
    double ms = 0;
    for (int64_t j = 0; j < N; ++j)
      ms += x[j] * x[j] / static_cast<double>(N);
    for (int64_t j = 0; j < N; ++j)
      out[i * N + j] = x[j] / std::sqrt(ms + 1e-5) * a["weight"][j];
  }
  return out;
}

std::vector<double> ref_norm(const WorkloadParams& p, Arrays& a) {
  const int64_t B = p.get_int("B"), MN = p.get_int("M") * p.get_int("N");
  std::vector<double> out(B);
  for (int64_t b = 0; b < B; ++b) {
    double acc = 0;
    for (int64_t i = 0; i < MN; ++i)
      acc += a["data"][b * MN + i] * a["data"][b * MN + i];
    out[b] = std::sqrt(acc);
  }
  return out;
}

std::vector<double> ref_elementwise(const WorkloadParams& p, Arrays& a) {
  std::vector<double> cur = a["data"];
  std::string ops = p.get_string("ops") + "_";
  int next_input = 1;
  for (size_t b = 0, e; (e = ops.find('_', b)) != std::string::npos; b = e + 1) {
    std::string op = ops.substr(b, e - b);
    const std::vector<double>* other = nullptr;
    if (op == "add" || op == "sub" || op == "mul") other = &a["in" + std::to_string(next_input++)];
    for (size_t i = 0; i < cur.size(); ++i) {
      double& x = cur[i];
      if (op == "add")
        x += (*other)[i];
      else if (op == "sub")
        x -= (*other)[i];
      else if (op == "mul")
        x *= (*other)[i];
      else if (op == "relu")
        x = std::max(x, 0.0);
      else if (op == "tanh")
        x = std::tanh(x);
      else if (op == "sigmoid")
        x = 1.0 / (1.0 + std::exp(-x));
      else if (op == "exp")
        x = std::exp(x);
      else if (op == "gelu")
        x = gelu(x);
      else
        ADD_FAILURE() << "reference lacks op " << op;
    }
  }
  return cur;
}

std::vector<double> reference(const WorkloadParams& p, Arrays& a) {
  const std::string& w = p.workload();
  if (w == "matmul") return ref_matmul(p, a);
  if (w == "batch_matmul") return ref_batch_matmul(p, a);
  if (w == "transpose_batch_matmul") return ref_tbg(p, a);
  if (w == "dense") return ref_dense(p, a);
  if (w == "conv1d" || w == "conv2d" || w == "conv3d" || w == "depthwise_conv2d")
    return ref_conv(p, a);
  if (w == "conv2d_transpose") return ref_conv2d_transpose(p, a);
  if (w == "capsule_conv2d") return ref_capsule(p, a);
  if (w == "pool2d") return ref_pool2d(p, a);
  if (w == "softmax") return ref_softmax(p, a);
  if (w == "layernorm") return ref_layernorm(p, a);
  if (w == "rmsnorm") return ref_rmsnorm(p, a);
  if (w == "norm") return ref_norm(p, a);
  if (w == "elementwise") return ref_elementwise(p, a);
  ADD_FAILURE() << "no naive reference for workload " << w;
  return {};
}

// Random inputs for every param but the last (the output), keyed by buffer name.
Arrays random_inputs(const Function& f, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  Arrays a;
  for (size_t i = 0; i < f.params.size(); ++i) {
    std::vector<double>& v = a[f.params[i]->name];
    v.resize(f.params[i]->num_elements());
    bool is_input = i + 1 < f.params.size();
    for (double& x : v)
      x = is_input ? dist(rng) : std::nan("");
  }
  return a;
}

void expect_close(const std::vector<double>& got, const std::vector<double>& want, double tol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], tol * (1.0 + std::fabs(want[i])))
        << what << " at flat index " << i;
  }
}

TEST(WorkloadNumerics, BlockWalkMatchesNaiveReferences) {
  for (const std::string& spec : test_workload_specs()) {
    SCOPED_TRACE(spec);
    WorkloadParams p = resolve_workload_spec(spec);
    Function f = make_workload(spec);
    Arrays a = random_inputs(f, 42);
    std::vector<double> want = reference(p, a);
    BlockWalker walker;
    walker.run(f, &a);
    expect_close(a.at(f.params.back()->name), want, 1e-12, spec);
    // Test specs stay small enough for an interpreter to run in milliseconds.
    EXPECT_LT(walker.block_runs, 250000) << spec;
  }
}

TEST(WorkloadNumerics, InterpreterMatchesNaiveReferences) {
  for (const std::string& spec : test_workload_specs()) {
    SCOPED_TRACE(spec);
    WorkloadParams p = resolve_workload_spec(spec);
    Function f = make_workload(spec);
    Arrays a = random_inputs(f, 7);
    std::vector<NDArray> arrays;
    for (const Buffer& b : f.params) {
      arrays.emplace_back(b->dtype, b->shape);
      const std::vector<double>& v = a.at(b->name);
      for (size_t i = 0; i < v.size(); ++i)
        arrays.back().set_double(static_cast<int64_t>(i), v[i]);
    }
    // Reference on the f32-rounded inputs the interpreter sees.
    for (size_t k = 0; k + 1 < f.params.size(); ++k) {
      std::vector<double>& v = a.at(f.params[k]->name);
      for (size_t i = 0; i < v.size(); ++i)
        v[i] = arrays[k].get_double(static_cast<int64_t>(i));
    }
    std::vector<double> want = reference(p, a);
    std::vector<NDArray*> args;
    for (NDArray& arr : arrays)
      args.push_back(&arr);
    interpret(f, args);
    std::vector<double> got(want.size());
    for (size_t i = 0; i < got.size() && i < static_cast<size_t>(arrays.back().num_elements()); ++i)
      got[i] = arrays.back().get_double(static_cast<int64_t>(i));
    ASSERT_EQ(arrays.back().num_elements(), static_cast<int64_t>(want.size()));
    expect_close(got, want, 2e-4, spec);
  }
}

TEST(WorkloadNumerics, F64WorkloadsAreExactToRounding) {
  for (const char* spec : {"matmul(M=5,N=7,K=9,dtype=f64)",
                           "conv2d(N=1,C=4,H=7,W=7,F=4,KH=3,KW=3,padding=1,groups=2,dtype=f64)",
                           "softmax(M=3,N=11,dtype=f64)"}) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    for (const Buffer& b : f.params)
      EXPECT_EQ(b->dtype, DType::f64());
    Arrays a = random_inputs(f, 3);
    std::vector<double> want = reference(resolve_workload_spec(spec), a);
    std::vector<NDArray> arrays;
    std::vector<NDArray*> args;
    for (const Buffer& b : f.params)
      arrays.emplace_back(b->dtype, b->shape);
    for (size_t k = 0; k < f.params.size(); ++k) {
      const std::vector<double>& v = a.at(f.params[k]->name);
      for (size_t i = 0; i < v.size(); ++i)
        arrays[k].set_double(static_cast<int64_t>(i), v[i]);
      args.push_back(&arrays[k]);
    }
    interpret(f, args);
    std::vector<double> got(want.size());
    for (size_t i = 0; i < got.size(); ++i)
      got[i] = arrays.back().get_double(static_cast<int64_t>(i));
    expect_close(got, want, 1e-12, spec);
  }
}

TEST(WorkloadNumerics, HalfPrecisionWorkloadsRun) {
  for (const char* spec : {"matmul(M=4,N=5,K=8,dtype=f16)", "softmax(M=2,N=9,dtype=bf16)"}) {
    SCOPED_TRACE(spec);
    Function f = make_workload(spec);
    Arrays a = random_inputs(f, 11);
    std::vector<NDArray> arrays;
    std::vector<NDArray*> args;
    for (const Buffer& b : f.params)
      arrays.emplace_back(b->dtype, b->shape);
    for (size_t k = 0; k < f.params.size(); ++k) {
      std::vector<double>& v = a.at(f.params[k]->name);
      for (size_t i = 0; i < v.size(); ++i) {
        arrays[k].set_double(static_cast<int64_t>(i), v[i]);
        if (k + 1 < f.params.size()) v[i] = arrays[k].get_double(static_cast<int64_t>(i));
      }
      args.push_back(&arrays[k]);
    }
    std::vector<double> want = reference(resolve_workload_spec(spec), a);
    interpret(f, args);
    std::vector<double> got(want.size());
    for (size_t i = 0; i < got.size(); ++i)
      got[i] = arrays.back().get_double(static_cast<int64_t>(i));
    expect_close(got, want, 3e-2, spec);
  }
}

TEST(WorkloadNumerics, ScalarReductionOfATeGraph) {
  using namespace te;
  Tensor x = placeholder({3, 4}, DType::f64(), "x");
  Var i = reduce_axis(3, "i"), j = reduce_axis(4, "j");
  Tensor total = compute(
      {},
      [&](const std::vector<Expr>&) {
        return sum(x(i, j), {i, j});
      },
      "total");
  Tensor biggest = compute(
      {},
      [&](const std::vector<Expr>&) {
        return max_reduce(x(i, j) - total(), {i, j});
      },
      "biggest");
  Function f = build("f", {x}, {total, biggest});
  EXPECT_EQ(iter_kinds(block_named(f, "total")), "RR");
  NDArray xa(DType::f64(), {3, 4}), ta(DType::f64(), {}), ba(DType::f64(), {});
  double sum_x = 0, max_x = -INFINITY;
  for (int64_t k = 0; k < 12; ++k) {
    double v = std::sin(static_cast<double>(k) * 1.7) * 3;
    xa.set_double(k, v);
    sum_x += v;
    max_x = std::max(max_x, v);
  }
  interpret(f, {&xa, &ta, &ba});
  EXPECT_NEAR(ta.get_double(0), sum_x, 1e-12);
  EXPECT_NEAR(ba.get_double(0), max_x - sum_x, 1e-12);
}

} // namespace
} // namespace mt
