// A C++ test plugin written with the SDK only: one component of every kind, each small enough
// that the host-side tests can check its effect independently.
#include <algorithm>
#include <set>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include <metatune/sdk.hpp>

namespace sdk = mt::sdk;

namespace {

// Splits the outermost loop of the block by 4 (same as the C plugin, through the SDK).
class SplitBy4 : public sdk::ScheduleRule {
public:
  std::vector<sdk::Schedule> apply(sdk::Schedule& sch, sdk::BlockRV block) override {
    std::vector<sdk::LoopRV> loops = sch.get_loops(block);
    if (!loops.empty()) sch.split(loops[0], {-1, 4});
    return {sch};
  }
};

// Samples a perfect tiling of the outermost loop into two and splits by it.
class SampledSplit : public sdk::ScheduleRule {
public:
  std::vector<sdk::Schedule> apply(sdk::Schedule& sch, sdk::BlockRV block) override {
    std::vector<sdk::LoopRV> loops = sch.get_loops(block);
    if (loops.empty()) return {sch};
    std::vector<sdk::ExprRV> f = sch.sample_perfect_tile(loops[0], 2, 64);
    sch.split(loops[0], {f[0], f[1]});
    return {sch};
  }
};

class Throwing : public sdk::ScheduleRule {
public:
  std::vector<sdk::Schedule> apply(sdk::Schedule&, sdk::BlockRV) override {
    throw std::runtime_error("boom from test.sdk.Throwing");
  }
};

// Tries an illegal primitive and reports what the host said, as an annotation.
class IllegalPrimitive : public sdk::ScheduleRule {
public:
  std::vector<sdk::Schedule> apply(sdk::Schedule& sch, sdk::BlockRV block) override {
    try {
      sch.compute_inline(block); // illegal for a reduction / output block
    } catch (const sdk::ScheduleError& e) {
      sch.annotate(block, "caught", std::string(e.what()));
    }
    return {sch};
  }
};

// Writes what the analysis accessors report about the block into block annotations, so that
// the host can compare them with its own analysis.
class Analysis : public sdk::ScheduleRule {
public:
  std::vector<sdk::Schedule> apply(sdk::Schedule& sch, sdk::BlockRV block) override {
    std::string kinds, extents;
    for (const sdk::IterVarInfo& iv : sch.iter_vars(block)) {
      kinds += iv.kind == sdk::IterKind::Reduce ? "R" : "S";
      extents += (extents.empty() ? "" : ",") + std::to_string(iv.extent);
    }
    std::string reads;
    for (const sdk::BufferAccess& a : sch.reads(block)) {
      reads += (reads.empty() ? "" : ",") + a.buffer.name() + "/" +
               std::to_string(a.indices.size()) + "x" + std::to_string(a.buffer.ndim());
    }
    std::string writes;
    for (const sdk::BufferAccess& a : sch.writes(block))
      writes += (writes.empty() ? "" : ",") + a.buffer.name();
    // Which iter var each index of the first write uses (by node identity).
    std::string pattern;
    std::vector<sdk::IterVarInfo> ivs = sch.iter_vars(block);
    std::vector<sdk::BufferAccess> ws = sch.writes(block);
    if (!ws.empty() && !ws[0].indices.empty())
      for (const sdk::ExprRef& idx : ws[0].indices[0])
        for (size_t i = 0; i < ivs.size(); ++i)
          if (idx.uses(ivs[i].var)) pattern += std::to_string(i);
    std::string loop_extents;
    for (sdk::LoopRV l : sch.get_loops(block))
      loop_extents += (loop_extents.empty() ? "" : ",") + std::to_string(sch.extent(l));
    sch.annotate(block, "iter_kinds", kinds);
    sch.annotate(block, "iter_extents", extents);
    sch.annotate(block, "reads", reads);
    sch.annotate(block, "writes", writes);
    sch.annotate(block, "write_pattern", pattern);
    sch.annotate(block, "loop_extents", loop_extents);
    sch.annotate(block, "is_reduction", int64_t{sch.is_reduction(block) ? 1 : 0});
    sch.annotate(block, "name", sch.name_of(block));
    return {sch};
  }
};

// Reverses the decision of the first sample_perfect_tile (still a perfect tiling).
class ReverseFirstTile : public sdk::Mutator {
public:
  std::optional<sdk::Trace> apply(const sdk::Trace& trace, sdk::Rng& rng) override {
    (void)rng.uniform_int(0, 2); // exercises the host's engine
    for (size_t i = 0; i < trace.size(); ++i) {
      if (trace.kind(i) != "sample_perfect_tile") continue;
      std::optional<std::vector<int64_t>> d = trace.decision(i);
      if (!d) continue;
      std::vector<int64_t> r(d->rbegin(), d->rend());
      return trace.with_decision(i, r);
    }
    return std::nullopt;
  }
};

// Rejects a candidate whose lowered program has a loop longer than the configured limit.
class RejectLongLoops : public sdk::Postproc {
public:
  explicit RejectLongLoops(std::string_view config) {
    if (!config.empty()) limit_ = std::stoll(std::string(config));
  }
  bool apply(sdk::Schedule& sch) override {
    int64_t longest = 0;
    sch.lower().body().visit([&](const sdk::StmtRef& s) {
      if (s.kind() == sdk::StmtKind::For && s.extent() > longest) longest = s.extent();
      return true;
    });
    if (longest > limit_)
      throw sdk::Rejected("a loop of extent " + std::to_string(longest) + " exceeds " +
                          std::to_string(limit_));
    return true;
  }

private:
  int64_t limit_ = 16;
};

// Score = minus the number of loops of the lowered program; update counts its calls.
class CountLoops : public sdk::CostModel {
public:
  std::vector<double> predict(const std::vector<sdk::Schedule>& cs) override {
    std::vector<double> out;
    for (const sdk::Schedule& s : cs) {
      int loops = 0;
      s.lower().body().visit([&](const sdk::StmtRef& x) {
        loops += x.kind() == sdk::StmtKind::For;
        return true;
      });
      out.push_back(-loops + 1000.0 * updates_);
    }
    return out;
  }
  void update(const std::vector<sdk::Schedule>&, const std::vector<double>&) override {
    ++updates_;
  }

private:
  int updates_ = 0;
};

class CopySpaces : public sdk::SearchStrategy {
public:
  std::vector<sdk::Schedule> generate(const std::vector<sdk::Schedule>& spaces, sdk::Rng&,
                                      size_t max) override {
    std::vector<sdk::Schedule> out;
    for (size_t i = 0; i < max && !spaces.empty(); ++i)
      out.push_back(spaces[i % spaces.size()].copy());
    return out;
  }
};

// A search-context strategy (ABI 1.3): fresh samples only, the smallest hashes of each
// round first -- distinctive enough that a test can tell it ran (the records name this plugin).
class SmallestHashFirst : public sdk::SearchContextStrategy {
public:
  void start(sdk::SearchContext ctx) override {
    ctx_ = ctx;
    rng_ = sdk::Random(ctx.seed());
  }
  std::vector<sdk::Candidate> next_batch(size_t n) override {
    std::vector<sdk::Candidate> got;
    for (sdk::Candidate& c : ctx_.sample(rng_.seeds(4 * n)))
      if (c && seen_.insert(c.hash()).second) got.push_back(std::move(c));
    std::sort(got.begin(), got.end(),
              [](const sdk::Candidate& a, const sdk::Candidate& b) { return a.hash() < b.hash(); });
    if (got.size() > n) got.resize(n);
    return got;
  }
  void notify_measured(const std::vector<sdk::Candidate>& measured,
                       const std::vector<double>&) override {
    ctx_.count("duplicates", 0); // exercises the statistics entry
    notified_ += measured.size();
  }

private:
  sdk::SearchContext ctx_;
  sdk::Random rng_;
  std::set<uint64_t> seen_;
  size_t notified_ = 0;
};

// A strategy that fails: the task proposes nothing and says why; the run does not crash.
class BrokenStrategy : public sdk::SearchContextStrategy {
public:
  void start(sdk::SearchContext) override {}
  std::vector<sdk::Candidate> next_batch(size_t) override {
    throw std::runtime_error("BrokenStrategy always fails");
  }
};

// ---- a target that interprets the program.hpp tree (tests the accessor walk) ----

namespace prog = mt::sdk::program;

class TreeInterpreter {
public:
  explicit TreeInterpreter(const prog::Program& p, const std::vector<sdk::TensorView>& args) {
    if (args.size() != p.params.size()) throw std::invalid_argument("argument count");
    for (size_t i = 0; i < args.size(); ++i)
      mem_[p.params[i]->id] = {args[i].data, {}};
    run(p.body);
  }

private:
  struct Storage {
    void* data;
    std::vector<double> own; // Allocate
  };

  static double read(const prog::BufferNode& b, void* data, int64_t i) {
    switch (b.dtype.kind) {
    case prog::DTypeKind::Float:
      return b.dtype.bits == 64 ? static_cast<double*>(data)[i] : static_cast<float*>(data)[i];
    case prog::DTypeKind::Int:
      return b.dtype.bits == 64 ? static_cast<double>(static_cast<int64_t*>(data)[i])
                                : static_cast<int32_t*>(data)[i];
    case prog::DTypeKind::Bool:
      return static_cast<uint8_t*>(data)[i];
    default:
      throw std::runtime_error("tree interpreter: unsupported dtype");
    }
  }
  static void write(const prog::BufferNode& b, void* data, int64_t i, double v) {
    switch (b.dtype.kind) {
    case prog::DTypeKind::Float:
      if (b.dtype.bits == 64)
        static_cast<double*>(data)[i] = v;
      else
        static_cast<float*>(data)[i] = static_cast<float>(v);
      return;
    case prog::DTypeKind::Int:
      if (b.dtype.bits == 64)
        static_cast<int64_t*>(data)[i] = static_cast<int64_t>(v);
      else
        static_cast<int32_t*>(data)[i] = static_cast<int32_t>(v);
      return;
    case prog::DTypeKind::Bool:
      static_cast<uint8_t*>(data)[i] = v != 0;
      return;
    default:
      throw std::runtime_error("tree interpreter: unsupported dtype");
    }
  }
  int64_t flat(const prog::BufferNode& b, const std::vector<prog::Expr>& idx) {
    int64_t f = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      auto i = static_cast<int64_t>(eval(idx[d]));
      if (i < 0 || i >= b.shape[d]) throw std::runtime_error("out of bounds on " + b.name);
      f = f * b.shape[d] + i;
    }
    return f;
  }
  void* data_of(const prog::BufferNode& b) {
    Storage& s = mem_.at(b.id);
    return s.own.empty() ? s.data : static_cast<void*>(s.own.data());
  }
  double eval(const prog::Expr& e) {
    using K = prog::ExprKind;
    auto a = [&](size_t i) { return eval(e->args[i]); };
    bool is_int = e->dtype.is_int();
    auto fl = [](double x, double y) { return std::floor(x / y); };
    switch (e->kind) {
    case K::IntImm:
      return static_cast<double>(e->int_value);
    case K::FloatImm:
      return e->float_value;
    case K::Var:
      return vars_.at(e->var_id);
    case K::Add:
      return a(0) + a(1);
    case K::Sub:
      return a(0) - a(1);
    case K::Mul:
      return a(0) * a(1);
    case K::Div:
      return is_int ? fl(a(0), a(1)) : a(0) / a(1);
    case K::FloorDiv:
      return fl(a(0), a(1));
    case K::FloorMod: {
      double x = a(0), y = a(1);
      return x - fl(x, y) * y;
    }
    case K::Min:
      return std::min(a(0), a(1));
    case K::Max:
      return std::max(a(0), a(1));
    case K::EQ:
      return a(0) == a(1);
    case K::NE:
      return a(0) != a(1);
    case K::LT:
      return a(0) < a(1);
    case K::LE:
      return a(0) <= a(1);
    case K::GT:
      return a(0) > a(1);
    case K::GE:
      return a(0) >= a(1);
    case K::And:
      return a(0) != 0 && a(1) != 0;
    case K::Or:
      return a(0) != 0 || a(1) != 0;
    case K::Not:
      return a(0) == 0;
    case K::Select:
      return a(0) != 0 ? a(1) : a(2);
    case K::Cast:
      return is_int ? std::trunc(a(0)) : a(0);
    case K::Load:
      return read(*e->buffer, data_of(*e->buffer), flat(*e->buffer, e->args));
    case K::Call:
      switch (e->fn) {
      case prog::MathFn::Exp:
        return std::exp(a(0));
      case prog::MathFn::Sqrt:
        return std::sqrt(a(0));
      case prog::MathFn::Abs:
        return std::fabs(a(0));
      case prog::MathFn::Log:
        return std::log(a(0));
      case prog::MathFn::Tanh:
        return std::tanh(a(0));
      case prog::MathFn::Erf:
        return std::erf(a(0));
      case prog::MathFn::Rsqrt:
        return 1.0 / std::sqrt(a(0));
      case prog::MathFn::Pow:
        return std::pow(a(0), a(1));
      case prog::MathFn::Sigmoid:
        return 1.0 / (1.0 + std::exp(-a(0)));
      }
    }
    throw std::runtime_error("tree interpreter: unknown expression");
  }
  void run(const prog::Stmt& s) {
    if (!s) return;
    switch (s->kind) {
    case prog::StmtKind::For:
      for (int64_t i = 0; i < s->extent; ++i) {
        vars_[s->loop_var->var_id] = static_cast<double>(i);
        run(s->body);
      }
      return;
    case prog::StmtKind::Seq:
      for (const auto& x : s->stmts)
        run(x);
      return;
    case prog::StmtKind::Store:
      write(*s->buffer, data_of(*s->buffer), flat(*s->buffer, s->indices), eval(s->value));
      return;
    case prog::StmtKind::IfThenElse:
      if (eval(s->condition) != 0)
        run(s->then_case);
      else
        run(s->else_case);
      return;
    case prog::StmtKind::Allocate: {
      // Doubles are wide enough for every dtype read() and write() support.
      Storage st{nullptr, std::vector<double>(static_cast<size_t>(s->buffer->num_elements()) + 1)};
      auto saved = mem_.find(s->buffer->id);
      mem_[s->buffer->id] = std::move(st);
      run(s->body);
      (void)saved;
      mem_.erase(s->buffer->id);
      return;
    }
    }
  }

  std::unordered_map<int64_t, Storage> mem_;
  std::unordered_map<int64_t, double> vars_;
};

// Takes its first param packed (ABI 1.8), in a layout of its own: the 4-byte elements in
// reverse order. Any other param offered packed fails to pack (the host's error path).
class TreeModule : public sdk::Module {
public:
  explicit TreeModule(prog::Program p) : p_(std::move(p)) {}
  void run(const std::vector<sdk::TensorView>& args) override { TreeInterpreter(p_, args); }

  std::optional<PackedLayout> packed_layout(size_t param) override {
    if (param >= p_.params.size() || param > 1) return std::nullopt;
    return PackedLayout{bytes(param), "reversed " + std::to_string(bytes(param))};
  }
  void pack(size_t param, const void* src, void* dst) override {
    if (param != 0) throw sdk::Error(MT_ERROR_UNKNOWN, "test: no packing for param 1");
    const auto* s = static_cast<const uint32_t*>(src);
    auto* d = static_cast<uint32_t*>(dst);
    const size_t n = bytes(param) / 4;
    for (size_t i = 0; i < n; ++i)
      d[i] = s[n - 1 - i];
  }
  void run_packed(const std::vector<sdk::TensorView>& args,
                  const std::vector<uint8_t>& packed) override {
    std::vector<sdk::TensorView> plain = args;
    std::vector<uint32_t> unpacked;
    if (!packed.empty() && packed[0]) {
      const auto* s = static_cast<const uint32_t*>(args[0].data);
      const size_t n = bytes(0) / 4;
      unpacked.resize(n);
      for (size_t i = 0; i < n; ++i)
        unpacked[i] = s[n - 1 - i];
      plain[0].data = unpacked.data();
    }
    for (size_t i = 1; i < packed.size(); ++i)
      if (packed[i]) throw sdk::Error(MT_ERROR_INVALID_ARGUMENT, "test: only param 0 packs");
    run(plain);
  }

private:
  size_t bytes(size_t param) const {
    return static_cast<size_t>(p_.params[param]->num_elements()) * 4;
  }
  prog::Program p_;
};

class TreeTarget : public sdk::Target {
public:
  std::string describe() override { return R"({"kind": "tree-interpreter", "num_cores": 1})"; }
  std::vector<std::string> default_components(sdk::ComponentKind kind) override {
    if (kind == sdk::ComponentKind::ScheduleRule) return {"test.sdk.SplitBy4", "test.c.SplitBy4"};
    return {};
  }
  std::unique_ptr<sdk::Module> build(const sdk::Program& lowered) override {
    return std::make_unique<TreeModule>(sdk::to_program_tree(lowered));
  }
};

// out = relu(x) + 1 for any rank, plus the row sums of the input for rank 2.
class ReluPlusOne : public sdk::Layer {
public:
  std::vector<sdk::TeTensor> forward(sdk::TensorBuilder& b,
                                     const std::vector<sdk::TeTensor>& inputs) override {
    if (inputs.size() != 1) throw std::invalid_argument("ReluPlusOne takes one input");
    sdk::TeTensor x = inputs[0];
    sdk::TeTensor y =
        b.compute("relu_plus_one", x.shape(), [&](const std::vector<sdk::TeExpr>& ax) {
          return sdk::max(x(ax), b.float_imm(0.0)) + b.float_imm(1.0);
        });
    std::vector<sdk::TeTensor> out{y};
    std::vector<int64_t> shape = x.shape();
    if (shape.size() == 2) {
      sdk::TeExpr k = b.reduce_axis(shape[1], "k");
      out.push_back(
          b.compute_reduce("row_sum", {shape[0]}, [&](const std::vector<sdk::TeExpr>& ax) {
            return sdk::TeReduction{MT_REDUCE_SUM, x(ax[0], k), {k}};
          }));
    }
    return out;
  }
};

} // namespace

METATUNE_PLUGIN("test_sdk_components", "2.1", "one SDK component of every kind, for tests") {
  registry.add<SplitBy4>("test.sdk.SplitBy4", "splits the outermost loop by 4")
      .add<SampledSplit>("test.sdk.SampledSplit", "splits the outermost loop by a sampled tiling")
      .add<Throwing>("test.sdk.Throwing", "always throws")
      .add<IllegalPrimitive>("test.sdk.IllegalPrimitive", "catches a schedule error")
      .add<Analysis>("test.sdk.Analysis", "reports block analysis as annotations")
      .add<ReverseFirstTile>("test.sdk.ReverseFirstTile", "reverses the first tile decision")
      .add<RejectLongLoops>("test.sdk.RejectLongLoops", "rejects long loops")
      .add<CountLoops>("test.sdk.CountLoops", "scores by loop count")
      .add<CopySpaces>("test.sdk.CopySpaces", "copies the design spaces")
      .add<SmallestHashFirst>("test.sdk.SmallestHashFirst", "fresh samples, smallest hash first")
      .add<BrokenStrategy>("test.sdk.BrokenStrategy", "a strategy whose next_batch throws")
      .add<TreeTarget>("test.sdk.TreeTarget", "interprets the program.hpp tree")
      .add<ReluPlusOne>("test.sdk.ReluPlusOne", "relu(x) + 1 and row sums");
}
