#include "core/features/features.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

#include "core/lower/lower.h"

namespace mt {

namespace {

// ---- layout -----------------------------------------------------------------------------------

// Arithmetic group, in order.
enum Arith : int {
  kFAdd,
  kFSub,
  kFMul,
  kFDiv,
  kFFma,
  kFMinMax,
  kFCmp,
  kFSelect,
  kFCast,
  kMathFirst, // one per MathFn, in enum order (exp ... sigmoid)
  kIAddSub = kMathFirst + 9,
  kIMul,
  kIDivMod,
  kIMinMax,
  kICmp,
  kISelect,
  kBoolOp,
  kICast,
  kArithEnd
};
static_assert(kArithEnd == kArithFeatures);

constexpr int kPosClasses = 8; // none, inner/middle/outer spatial, inner/middle/outer reduce, mixed
constexpr int kPerLoopKind = 3 + kPosClasses;
constexpr int kGpuOffset = 3 * kPerLoopKind;
static_assert(kGpuOffset + 8 == kLoopFeatures);

enum BufFeature : int {
  kAccRead,
  kAccWrite,
  kAccRW,
  kBytes,
  kUniqueBytes,
  kLines,
  kUniqueLines,
  kReuseLoop,
  kReuseSerial,
  kReuseNone,
  kReuseDistIters,
  kReuseDistBytes,
  kReuseCount,
  kBytesPerReuse,
  kUniqueBytesPerReuse,
  kLinesPerReuse,
  kUniqueLinesPerReuse,
  kStride,
  kBufEnd
};
static_assert(kBufEnd == kFeaturesPerBuffer);

constexpr double kCacheLineBytes = 64;

// Annotation keys that ask for automatic unrolling up to a number of steps.
bool is_unroll_key(const std::string& key) {
  return key == "pragma_auto_unroll_max_step" || key == "meta_schedule.unroll_explicit" ||
         key == "meta_schedule.unroll_implicit";
}
// Marks the extent-1 loop that carries a block's annotations through lowering (see below).
constexpr const char* kBlockAnnMarker = "mt.features.block_annotations";

struct Layout {
  std::vector<std::string> names;
  std::vector<bool> log_scaled;
  std::unordered_map<std::string, int> index;

  void add(std::string name, bool log) {
    index.emplace(name, static_cast<int>(names.size()));
    names.push_back(std::move(name));
    log_scaled.push_back(log);
  }

  Layout() {
    for (const char* n :
         {"float_add",  "float_sub",    "float_mul",  "float_div",  "float_fma", "float_minmax",
          "float_cmp",  "float_select", "float_cast", "math_exp",   "math_log",  "math_tanh",
          "math_erf",   "math_sqrt",    "math_rsqrt", "math_pow",   "math_abs",  "math_sigmoid",
          "int_addsub", "int_mul",      "int_divmod", "int_minmax", "int_cmp",   "int_select",
          "bool_op",    "int_cast"})
      add(std::string("op.") + n, true);
    for (const char* k : {"vec", "unroll", "parallel"}) {
      add(std::string(k) + ".num", true);
      add(std::string(k) + ".prod", true);
      add(std::string(k) + ".len", true);
      for (const char* p : {"none", "inner_spatial", "middle_spatial", "outer_spatial",
                            "inner_reduce", "middle_reduce", "outer_reduce", "mixed"})
        add(std::string(k) + ".pos." + p, false);
    }
    add("gpu.is_gpu", false);
    for (const char* t : {"blockIdx.x", "blockIdx.y", "blockIdx.z", "threadIdx.x", "threadIdx.y",
                          "threadIdx.z", "vthread"})
      add(std::string("gpu.") + t, true);
    for (int b = 0; b < kBuffersPerStore; ++b) {
      std::string p = "buf" + std::to_string(b) + ".";
      for (const char* n : {"acc_read", "acc_write", "acc_rw"})
        add(p + n, false);
      for (const char* n : {"bytes", "unique_bytes", "lines", "unique_lines"})
        add(p + n, true);
      for (const char* n : {"reuse_loop", "reuse_serial", "reuse_none"})
        add(p + n, false);
      for (const char* n :
           {"reuse_dist_iters", "reuse_dist_bytes", "reuse_count", "bytes_per_reuse",
            "unique_bytes_per_reuse", "lines_per_reuse", "unique_lines_per_reuse", "stride"})
        add(p + n, true);
    }
    for (int i = 0; i < kIntensityPoints; ++i)
      add("intensity." + std::to_string(i), false);
    for (const char* n : {"alloc.size", "alloc.prod", "alloc.outer_prod", "alloc.inner_prod"})
      add(n, true);
    add("outer_prod", true);
    add("num_loops", true);
    add("auto_unroll_max_step", true);
    if (static_cast<int>(names.size()) != kFeaturesPerStore)
      throw std::logic_error("feature layout does not match kFeaturesPerStore");
  }
};

const Layout& layout() {
  static const Layout l;
  return l;
}

// ---- block annotations through lowering ---------------------------------------------------

bool has_unroll_annotation(const Annotations& ann) {
  for (auto& [k, v] : ann)
    if (is_unroll_key(k) && std::holds_alternative<int64_t>(v)) return true;
  return false;
}

// Lowering drops blocks and with them their annotations. Blocks that ask for unrolling are
// wrapped in an extent-1 loop carrying those annotations, which the walk below reads and
// otherwise ignores.
Stmt carry_block_annotations(const Stmt& s) {
  if (!s) return s;
  switch (s->kind) {
  case StmtKind::For:
  case StmtKind::Allocate: {
    const Stmt& body = s->kind == StmtKind::For ? as<ForNode>(s)->body : as<AllocateNode>(s)->body;
    Stmt nb = carry_block_annotations(body);
    return nb == body ? s : with_body(s, nb);
  }
  case StmtKind::Seq: {
    std::vector<Stmt> items;
    bool changed = false;
    for (const Stmt& c : as<SeqNode>(s)->stmts) {
      items.push_back(carry_block_annotations(c));
      changed = changed || items.back() != c;
    }
    return changed ? make_seq(std::move(items)) : s;
  }
  case StmtKind::IfThenElse: {
    auto* n = as<IfThenElseNode>(s);
    Stmt t = carry_block_annotations(n->then_case), e = carry_block_annotations(n->else_case);
    return t == n->then_case && e == n->else_case ? s : make_if(n->condition, t, e);
  }
  case StmtKind::BlockRealize: {
    auto* n = as<BlockRealizeNode>(s);
    Block b = *n->block;
    Stmt body = carry_block_annotations(b.body), init = carry_block_annotations(b.init);
    bool changed = body != b.body || init != b.init;
    b.body = body;
    b.init = init;
    Stmt out = changed ? make_block_realize(n->iter_values, n->predicate, b) : s;
    if (!has_unroll_annotation(b.annotations)) return out;
    Annotations ann;
    for (auto& [k, v] : b.annotations)
      if (is_unroll_key(k)) ann[k] = v;
    ann[kBlockAnnMarker] = int64_t(1);
    return make_for(make_var("mt_block_ann"), 1, out, ForKind::Serial, {}, ann);
  }
  case StmtKind::Store:
    return s;
  }
  return s;
}

// ---- analysis of one store ------------------------------------------------------------------

struct Loop {
  const ForNode* node;
  double extent; // iterations that reach the store: 1 where a guard pins the variable
  double full;   // the loop's own extent
};

struct Guard {
  Expr condition;
  size_t depth; // loops enclosing the if
};

struct Alloc {
  const BufferNode* buffer;
  size_t depth;
};

struct Interval {
  double lo = 0, hi = 0;
};

// Interval of an index expression when the loops flagged in `relaxed` range over their
// extents and every other loop variable is held at 0 (the footprint's shape does not depend
// on where the fixed loops are for the affine indices lowering produces).
class IndexRanges {
public:
  IndexRanges(const std::vector<Loop>& loops, const std::vector<char>& relaxed)
      : loops_(loops), relaxed_(relaxed) {}

  Interval of(const Expr& e) const {
    const ExprNode* n = e.get();
    switch (n->kind) {
    case ExprKind::IntImm:
      return {double(n->int_value), double(n->int_value)};
    case ExprKind::Var: {
      for (size_t i = 0; i < loops_.size(); ++i)
        if (loops_[i].node->loop_var.get() == n) return {0, relaxed_[i] ? loops_[i].extent - 1 : 0};
      return {0, 0};
    }
    case ExprKind::Add: {
      Interval a = of(n->args[0]), b = of(n->args[1]);
      return {a.lo + b.lo, a.hi + b.hi};
    }
    case ExprKind::Sub: {
      Interval a = of(n->args[0]), b = of(n->args[1]);
      return {a.lo - b.hi, a.hi - b.lo};
    }
    case ExprKind::Mul: {
      Interval a = of(n->args[0]), b = of(n->args[1]);
      double p[4] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
      return {*std::min_element(p, p + 4), *std::max_element(p, p + 4)};
    }
    case ExprKind::FloorDiv: {
      Interval a = of(n->args[0]);
      int64_t c = 0;
      if (is_const_int(n->args[1], &c) && c > 0)
        return {std::floor(a.lo / double(c)), std::floor(a.hi / double(c))};
      return unknown();
    }
    case ExprKind::FloorMod: {
      Interval a = of(n->args[0]);
      int64_t c = 0;
      if (!is_const_int(n->args[1], &c) || c <= 0) return unknown();
      double q = std::floor(a.lo / double(c));
      if (std::floor(a.hi / double(c)) == q) return {a.lo - q * double(c), a.hi - q * double(c)};
      return {0, double(c - 1)};
    }
    case ExprKind::Min:
    case ExprKind::Max: {
      Interval a = of(n->args[0]), b = of(n->args[1]);
      if (n->kind == ExprKind::Min) return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case ExprKind::Select: {
      Interval a = of(n->args[1]), b = of(n->args[2]);
      return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case ExprKind::Cast:
      return of(n->args[0]);
    default:
      return unknown();
    }
  }

private:
  static Interval unknown() { return {-1e300, 1e300}; }
  const std::vector<Loop>& loops_;
  const std::vector<char>& relaxed_;
};

// d(index)/d(var) for the affine parts of an index; `known` false when the index depends on
// the variable in some other way.
struct Coef {
  double value = 0;
  bool known = true;
};

Coef coefficient(const Expr& e, const ExprNode* var) {
  const ExprNode* n = e.get();
  switch (n->kind) {
  case ExprKind::IntImm:
  case ExprKind::FloatImm:
    return {0, true};
  case ExprKind::Var:
    return {n == var ? 1.0 : 0.0, true};
  case ExprKind::Add:
  case ExprKind::Sub: {
    Coef a = coefficient(n->args[0], var), b = coefficient(n->args[1], var);
    return {n->kind == ExprKind::Add ? a.value + b.value : a.value - b.value, a.known && b.known};
  }
  case ExprKind::Mul: {
    int64_t c = 0;
    if (is_const_int(n->args[1], &c)) {
      Coef a = coefficient(n->args[0], var);
      return {a.value * double(c), a.known};
    }
    if (is_const_int(n->args[0], &c)) {
      Coef b = coefficient(n->args[1], var);
      return {b.value * double(c), b.known};
    }
    break;
  }
  case ExprKind::FloorDiv: {
    int64_t c = 0;
    if (is_const_int(n->args[1], &c) && c != 0) {
      Coef a = coefficient(n->args[0], var);
      return {a.value / double(c), a.known}; // the average step
    }
    break;
  }
  case ExprKind::FloorMod: {
    int64_t c = 0;
    if (is_const_int(n->args[1], &c)) return coefficient(n->args[0], var); // within a period
    break;
  }
  case ExprKind::Cast:
    return coefficient(n->args[0], var);
  default:
    break;
  }
  bool used = uses_var(e, var);
  return {used ? 1.0 : 0.0, !used};
}

struct OpCounts {
  std::array<double, kArithFeatures> n{};
  double flops() const {
    double f = 0;
    for (int i = kFAdd; i < kIAddSub; ++i)
      if (i != kFFma && i != kFCast) f += n[i];
    return f;
  }
};

void count_ops(const Expr& root, OpCounts& c) {
  post_order_visit(root, [&](const Expr& e) {
    const ExprNode* n = e.get();
    bool is_float = n->dtype.is_float();
    switch (n->kind) {
    case ExprKind::Add:
    case ExprKind::Sub:
      if (is_float) {
        c.n[n->kind == ExprKind::Add ? kFAdd : kFSub] += 1;
        // A multiply feeding an add/sub fuses into one fma instruction.
        if (n->args[0]->kind == ExprKind::Mul || n->args[1]->kind == ExprKind::Mul) c.n[kFFma] += 1;
      } else {
        c.n[kIAddSub] += 1;
      }
      break;
    case ExprKind::Mul:
      c.n[is_float ? kFMul : kIMul] += 1;
      break;
    case ExprKind::Div:
      c.n[is_float ? kFDiv : kIDivMod] += 1;
      break;
    case ExprKind::FloorDiv:
    case ExprKind::FloorMod:
      c.n[kIDivMod] += 1;
      break;
    case ExprKind::Min:
    case ExprKind::Max:
      c.n[is_float ? kFMinMax : kIMinMax] += 1;
      break;
    case ExprKind::EQ:
    case ExprKind::NE:
    case ExprKind::LT:
    case ExprKind::LE:
    case ExprKind::GT:
    case ExprKind::GE:
      c.n[n->args[0]->dtype.is_float() ? kFCmp : kICmp] += 1;
      break;
    case ExprKind::And:
    case ExprKind::Or:
    case ExprKind::Not:
      c.n[kBoolOp] += 1;
      break;
    case ExprKind::Select:
      c.n[is_float ? kFSelect : kISelect] += 1;
      break;
    case ExprKind::Cast:
      c.n[is_float ? kFCast : kICast] += 1;
      break;
    case ExprKind::Call:
      c.n[kMathFirst + static_cast<int>(n->fn)] += 1;
      break;
    default:
      break;
    }
  });
}

struct Access {
  const BufferNode* buffer;
  const std::vector<Expr>* indices;
};

struct BufferUse {
  const BufferNode* buffer;
  bool read = false, write = false;
  std::vector<const std::vector<Expr>*> accesses;
  double bytes = 0;
};

double log_feature(double x) {
  return std::log2(1.0 + std::max(0.0, x));
}

class Extractor {
public:
  Extractor(const FeatureOptions& options, bool is_gpu) : options_(options), is_gpu_(is_gpu) {}

  std::vector<std::vector<float>> rows;

  void walk(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
    case StmtKind::For: {
      auto* f = as<ForNode>(s);
      if (f->annotations.count(kBlockAnnMarker)) {
        markers_.push_back(f);
        walk(f->body);
        markers_.pop_back();
        return;
      }
      loops_.push_back({f, double(f->extent), double(f->extent)});
      walk(f->body);
      loops_.pop_back();
      return;
    }
    case StmtKind::Seq:
      for (const Stmt& c : as<SeqNode>(s)->stmts)
        walk(c);
      return;
    case StmtKind::IfThenElse: {
      auto* n = as<IfThenElseNode>(s);
      guards_.push_back({n->condition, loops_.size()});
      // `if (k == 0) init` runs its body once per k loop, not extent(k) times.
      std::vector<std::pair<size_t, double>> pinned;
      pin_loops(n->condition, pinned);
      walk(n->then_case);
      for (auto& [i, ext] : pinned)
        loops_[i].extent = ext;
      walk(n->else_case);
      guards_.pop_back();
      return;
    }
    case StmtKind::Allocate: {
      auto* n = as<AllocateNode>(s);
      allocs_.push_back({n->buffer.get(), loops_.size()});
      walk(n->body);
      allocs_.pop_back();
      return;
    }
    case StmtKind::Store:
      store(*as<StoreNode>(s));
      return;
    case StmtKind::BlockRealize:
      throw std::invalid_argument("extract_features: the function still has blocks after lowering");
    }
  }

private:
  double prod(size_t begin, size_t end) const {
    double p = 1;
    for (size_t i = begin; i < end; ++i)
      p *= loops_[i].extent;
    return p;
  }
  // Bit i set when the expression uses the variable of loops_[i] (loops past 63 share bit 63).
  uint64_t loop_mask(const Expr& root) const {
    uint64_t m = 0;
    post_order_visit(root, [&](const Expr& e) {
      if (e->kind != ExprKind::Var) return;
      for (size_t i = 0; i < loops_.size(); ++i)
        if (loops_[i].node->loop_var.get() == e.get()) m |= uint64_t(1) << std::min<size_t>(i, 63);
    });
    return m;
  }
  double full_prod(size_t end) const {
    double p = 1;
    for (size_t i = 0; i < end; ++i)
      p *= loops_[i].full;
    return p;
  }

  // For a condition that is a conjunction of `loop_var == constant` terms, sets those loops'
  // extents to 1 (remembering the old ones in `pinned`).
  void pin_loops(const Expr& c, std::vector<std::pair<size_t, double>>& pinned) {
    if (c->kind == ExprKind::And) {
      pin_loops(c->args[0], pinned);
      pin_loops(c->args[1], pinned);
      return;
    }
    if (c->kind != ExprKind::EQ) return;
    const Expr& a = c->args[0];
    const Expr& b = c->args[1];
    const ExprNode* var = a->kind == ExprKind::Var && b->kind == ExprKind::IntImm   ? a.get()
                          : b->kind == ExprKind::Var && a->kind == ExprKind::IntImm ? b.get()
                                                                                    : nullptr;
    if (!var) return;
    for (size_t i = 0; i < loops_.size(); ++i)
      if (loops_[i].node->loop_var.get() == var && loops_[i].extent != 1) {
        pinned.push_back({i, loops_[i].extent});
        loops_[i].extent = 1;
      }
  }

  // Elements of `use` touched while the innermost `level` loops run (others fixed), and the
  // cache lines they span.
  void footprint(const BufferUse& use, size_t level, double* elems, double* lines) const {
    size_t L = loops_.size();
    relaxed_.assign(L, 0);
    for (size_t i = L - std::min(level, L); i < L; ++i)
      relaxed_[i] = 1;
    IndexRanges ranges(loops_, relaxed_);
    const std::vector<int64_t>& shape = use.buffer->shape;
    size_t nd = shape.size();
    lo_.assign(nd, 1e300);
    hi_.assign(nd, -1e300);
    for (const auto* idx : use.accesses) {
      for (size_t d = 0; d < nd && d < idx->size(); ++d) {
        Interval r = ranges.of((*idx)[d]);
        lo_[d] = std::min(lo_[d], r.lo);
        hi_[d] = std::max(hi_[d], r.hi);
      }
    }
    double e = 1, run = 1;
    bool contiguous = true;
    for (size_t d = nd; d-- > 0;) {
      double ext = std::min(std::max(1.0, hi_[d] - lo_[d] + 1), double(shape[d]));
      e *= ext;
      // Consecutive elements in memory: the innermost extents up to the first partial one.
      if (contiguous) run *= ext;
      contiguous = contiguous && ext == double(shape[d]);
    }
    double bytes = use.buffer->dtype.bytes();
    *elems = e;
    *lines = e / run * std::ceil(run * bytes / kCacheLineBytes);
  }

  // One store's row, group by group in the layout's order (features.h).
  void store(const StoreNode& st) {
    Row row(options_);
    const double trip = prod(0, loops_.size());
    const OpCounts per_iter = arithmetic_features(st, trip, row);
    loop_kind_features(store_mask(st), row);
    gpu_features(row);
    const BufferUses uses = buffer_uses(st, trip);
    for (size_t b = 0; b < uses.uses.size() && b < size_t(kBuffersPerStore); ++b)
      buffer_features(uses, b, row);
    intensity_features(per_iter.flops(), uses.level_bytes, row);
    allocation_features(st, trip, row);
    nest_features(trip, row);
    rows.push_back(std::move(row.values));
  }

  // A row being filled: set() log-scales the features the layout marks, where the options ask.
  struct Row {
    explicit Row(const FeatureOptions& options)
        : values(kFeaturesPerStore, 0.0f), log_scale(options.log_scale) {}
    void set(int i, double v) {
      values[i] = static_cast<float>(log_scale && lay.log_scaled[i] ? log_feature(v) : v);
    }
    std::vector<float> values;
    bool log_scale;
    const Layout& lay = layout();
  };

  // The buffers a store reads and writes, the most bytes first, with their footprints: at every
  // nesting level (0 = one iteration ... L = the whole nest) in elements, the whole nest's in
  // cache lines, and all buffers' bytes together at each level.
  struct BufferUses {
    std::vector<BufferUse> uses;
    std::vector<std::vector<double>> elems;
    std::vector<double> lines;
    std::vector<double> level_bytes;
  };

  // The arithmetic, weighted by how often it runs: the store's each iteration, its guards' as
  // often as they are evaluated. Returns one iteration's counts.
  OpCounts arithmetic_features(const StoreNode& st, double trip, Row& row) const {
    OpCounts per_iter;
    count_ops(st.value, per_iter);
    for (const Expr& i : st.indices)
      count_ops(i, per_iter);
    std::array<double, kArithFeatures> ops{};
    for (int i = 0; i < kArithFeatures; ++i)
      ops[i] = per_iter.n[i] * trip;
    for (const Guard& g : guards_) {
      OpCounts gc;
      count_ops(g.condition, gc);
      double w = full_prod(g.depth);
      for (int i = 0; i < kArithFeatures; ++i)
        ops[i] += gc.n[i] * w;
    }
    for (int i = 0; i < kArithFeatures; ++i)
      row.set(kArithOffset + i, ops[i]);
    return per_iter;
  }

  // The loops that change the stored element (spatial ones; the others repeat it: reduce).
  uint64_t store_mask(const StoreNode& st) const {
    uint64_t mask = 0;
    for (const Expr& idx : st.indices)
      mask |= loop_mask(idx);
    return mask;
  }

  // Vectorized, unrolled and parallel loops: how many, their product, the innermost's extent,
  // and where they stand (innermost, middle, outermost; spatial or reduce; mixed).
  void loop_kind_features(uint64_t store_mask, Row& row) const {
    const size_t L = loops_.size();
    auto spatial = [&](size_t i) { return (store_mask >> std::min<size_t>(i, 63) & 1) != 0; };
    const ForKind kinds[3] = {ForKind::Vectorized, ForKind::Unrolled, ForKind::Parallel};
    for (int k = 0; k < 3; ++k) {
      int base = kLoopOffset + k * kPerLoopKind;
      double num = 0, p = 1, len = 0;
      int pos = -1;
      for (size_t i = 0; i < L; ++i) {
        if (loops_[i].node->for_kind != kinds[k]) continue;
        num += 1;
        p *= loops_[i].extent;
        len = loops_[i].extent; // the innermost one wins
        int where = i + 1 == L ? 0 : i == 0 ? 2 : 1;
        int cls = 1 + where + (spatial(i) ? 0 : 3);
        pos = pos < 0 || pos == cls ? cls : 7;
      }
      row.set(base + 0, num);
      row.set(base + 1, num ? p : 0);
      row.set(base + 2, len);
      row.set(base + 3 + (pos < 0 ? 0 : pos), 1);
    }
  }

  // Whether the target is a GPU, and the extent bound to each block and thread dimension.
  void gpu_features(Row& row) const {
    int gpu = kLoopOffset + kGpuOffset;
    row.set(gpu, is_gpu_ ? 1 : 0);
    static const char* tags[7] = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z", "threadIdx.x",
                                  "threadIdx.y", "threadIdx.z", "vthread"};
    std::array<double, 7> bind{};
    for (const Loop& l : loops_) {
      if (l.node->for_kind != ForKind::ThreadBinding) continue;
      for (int t = 0; t < 7; ++t)
        if (l.node->thread_tag.rfind(tags[t], 0) == 0) bind[t] = (bind[t] ? bind[t] : 1) * l.extent;
    }
    for (int t = 0; t < 7; ++t)
      row.set(gpu + 1 + t, bind[t]);
  }

  BufferUses buffer_uses(const StoreNode& st, double trip) const {
    BufferUses out;
    std::vector<BufferUse>& uses = out.uses;
    auto use_of = [&](const BufferNode* b) -> BufferUse& {
      for (auto& u : uses)
        if (u.buffer == b) return u;
      uses.emplace_back();
      uses.back().buffer = b;
      return uses.back();
    };
    {
      BufferUse& w = use_of(st.buffer.get());
      w.write = true;
      w.accesses.push_back(&st.indices);
    }
    auto gather = [&](const Expr& root) {
      post_order_visit(root, [&](const Expr& e) {
        if (e->kind != ExprKind::Load) return;
        BufferUse& u = use_of(e->buffer.get());
        u.read = true;
        u.accesses.push_back(&e->args);
      });
    };
    gather(st.value);
    for (const Expr& i : st.indices)
      gather(i);
    for (auto& u : uses)
      u.bytes = double(u.accesses.size()) * trip * u.buffer->dtype.bytes();
    std::stable_sort(uses.begin(), uses.end(),
                     [](const BufferUse& a, const BufferUse& b) { return a.bytes > b.bytes; });

    const size_t L = loops_.size();
    out.elems.assign(uses.size(), std::vector<double>(L + 1));
    out.lines.assign(uses.size(), 0);
    out.level_bytes.assign(L + 1, 0);
    for (size_t b = 0; b < uses.size(); ++b) {
      for (size_t lv = 0; lv <= L; ++lv) {
        double e = 0, ln = 0;
        footprint(uses[b], lv, &e, &ln);
        out.elems[b][lv] = e;
        if (lv == L) out.lines[b] = ln;
        out.level_bytes[lv] += e * uses[b].buffer->dtype.bytes();
      }
    }
    return out;
  }

  // The innermost loop that moves a buffer's (first) access, and the row-major stride it moves
  // it by; the loop is loops_.size() where none does.
  struct Stride {
    double elements = 0;
    size_t loop = 0;
  };
  Stride innermost_stride(const BufferUse& u) const {
    const size_t L = loops_.size();
    std::vector<double> row_stride(u.buffer->shape.size(), 1);
    for (size_t d = row_stride.size(); d-- > 1;)
      row_stride[d - 1] = row_stride[d] * double(u.buffer->shape[d]);
    Stride out{0, L};
    uint64_t first_mask = 0;
    for (const Expr& e : *u.accesses[0])
      first_mask |= loop_mask(e);
    for (size_t i = L; i-- > 0 && out.loop == L;) {
      if (loops_[i].extent == 1 || !(first_mask >> std::min<size_t>(i, 63) & 1)) continue;
      double s = 0;
      for (size_t d = 0; d < u.accesses[0]->size() && d < row_stride.size(); ++d) {
        Coef c = coefficient((*u.accesses[0])[d], loops_[i].node->loop_var.get());
        s += (c.known ? std::abs(c.value) : 1.0) * row_stride[d];
      }
      if (s != 0) out = {s, i};
    }
    return out;
  }

  // The innermost loop along which none of a buffer's accesses move (loops_.size() where none).
  size_t reuse_loop(const BufferUse& u) const {
    const size_t L = loops_.size();
    uint64_t mask = 0;
    for (const auto* idx : u.accesses)
      for (const Expr& e : *idx)
        mask |= loop_mask(e);
    for (size_t i = L; i-- > 0;) {
      if (loops_[i].extent == 1) continue; // nothing is repeated along it
      if (!(mask >> std::min<size_t>(i, 63) & 1)) return i;
    }
    return L;
  }

  // Buffer b's group: access kind, bytes, unique bytes and lines, stride, lines fetched, and its
  // reuse (along a loop, among the store's own accesses, or none) with the distance and count.
  void buffer_features(const BufferUses& all, size_t b, Row& row) const {
    const size_t L = loops_.size();
    const BufferUse& u = all.uses[b];
    int base = kBufferOffset + int(b) * kFeaturesPerBuffer;
    double elem_bytes = u.buffer->dtype.bytes();
    row.set(base + (u.read && u.write ? kAccRW : u.write ? kAccWrite : kAccRead), 1);
    row.set(base + kBytes, u.bytes);
    double unique_bytes = all.elems[b][L] * elem_bytes;
    row.set(base + kUniqueBytes, unique_bytes);
    row.set(base + kUniqueLines, all.lines[b]);

    const Stride stride = innermost_stride(u);
    row.set(base + kStride, stride.elements);
    // Lines fetched: one sweep of the stride loop covers ext * stride * bytes contiguous
    // bytes; loops inside it revisit the same line, loops outside it repeat the sweep.
    double lines = double(u.accesses.size());
    if (stride.loop < L) {
      double ext = loops_[stride.loop].extent;
      double per_sweep = stride.elements * elem_bytes >= kCacheLineBytes
                             ? ext
                             : std::ceil(ext * stride.elements * elem_bytes / kCacheLineBytes);
      lines *= prod(0, stride.loop) * per_sweep;
    }
    row.set(base + kLines, lines);

    const size_t reuse = reuse_loop(u);
    double dist_iters = 0, dist_bytes = 0, count = 0;
    if (reuse < L) {
      row.set(base + kReuseLoop, 1);
      size_t inner_levels = L - 1 - reuse;
      dist_iters = prod(reuse + 1, L);
      dist_bytes = all.level_bytes[inner_levels];
      count = loops_[reuse].extent;
    } else if (u.accesses.size() > 1) {
      row.set(base + kReuseSerial, 1);
      dist_iters = 1;
      dist_bytes = all.level_bytes[0];
      count = double(u.accesses.size() - 1);
    } else {
      row.set(base + kReuseNone, 1);
    }
    row.set(base + kReuseDistIters, dist_iters);
    row.set(base + kReuseDistBytes, dist_bytes);
    row.set(base + kReuseCount, count);
    double div = std::max(1.0, count);
    row.set(base + kBytesPerReuse, u.bytes / div);
    row.set(base + kUniqueBytesPerReuse, unique_bytes / div);
    row.set(base + kLinesPerReuse, lines / div);
    row.set(base + kUniqueLinesPerReuse, all.lines[b] / div);
  }

  // Arithmetic intensity (flops / unique bytes) as the nest grows from the inside, sampled at
  // kIntensityPoints evenly spaced points of log2(iterations).
  void intensity_features(double flops, const std::vector<double>& level_bytes, Row& row) const {
    const size_t L = loops_.size();
    std::vector<double> xs(L + 1), ys(L + 1);
    double iters = 1;
    for (size_t lv = 0; lv <= L; ++lv) {
      if (lv > 0) iters *= loops_[L - lv].extent;
      xs[lv] = std::log2(iters);
      ys[lv] = level_bytes[lv] > 0 ? flops * iters / level_bytes[lv] : 0;
    }
    double total = xs[L];
    for (int p = 0; p < kIntensityPoints; ++p) {
      double x = total * (p + 1) / kIntensityPoints;
      double y = ys[L];
      for (size_t lv = 1; lv <= L; ++lv) {
        if (xs[lv] < x) continue;
        double span = xs[lv] - xs[lv - 1];
        double t = span > 0 ? (x - xs[lv - 1]) / span : 1;
        y = ys[lv - 1] + t * (ys[lv] - ys[lv - 1]);
        break;
      }
      row.set(kIntensityOffset + p, y);
    }
  }

  // The allocation of the stored buffer (the innermost one of its name): its size, that size
  // times the iterations around it, those iterations, and the store's per allocation.
  void allocation_features(const StoreNode& st, double trip, Row& row) const {
    for (size_t a = allocs_.size(); a-- > 0;) {
      const Alloc& al = allocs_[a];
      if (al.buffer != st.buffer.get() && al.buffer->name != st.buffer->name) continue;
      double size = double(al.buffer->num_elements()) * al.buffer->dtype.bytes();
      double outer = prod(0, al.depth);
      row.set(kAllocOffset + 0, size);
      row.set(kAllocOffset + 1, size * outer);
      row.set(kAllocOffset + 2, outer);
      row.set(kAllocOffset + 3, trip / outer);
      return;
    }
  }

  // The nest as a whole: iterations, depth, and the deepest unroll an annotation asks for.
  void nest_features(double trip, Row& row) const {
    double unroll_steps = 0;
    auto note_unroll = [&](const Annotations& ann) {
      for (auto& [k, v] : ann)
        if (is_unroll_key(k))
          if (auto* i = std::get_if<int64_t>(&v)) unroll_steps = std::max(unroll_steps, double(*i));
    };
    for (const Loop& l : loops_)
      note_unroll(l.node->annotations);
    for (const ForNode* m : markers_)
      note_unroll(m->annotations);
    row.set(kOuterOffset + 0, trip);
    row.set(kOuterOffset + 1, double(loops_.size()));
    row.set(kOuterOffset + 2, unroll_steps);
  }

  FeatureOptions options_;
  bool is_gpu_;
  std::vector<Loop> loops_;
  std::vector<Guard> guards_;
  std::vector<Alloc> allocs_;
  std::vector<const ForNode*> markers_;
  mutable std::vector<char> relaxed_;
  mutable std::vector<double> lo_, hi_;
};

} // namespace

const std::vector<std::string>& feature_names() {
  return layout().names;
}

int feature_index(std::string_view name) {
  const auto& idx = layout().index;
  auto it = idx.find(std::string(name));
  if (it == idx.end()) throw std::out_of_range("unknown feature '" + std::string(name) + "'");
  return it->second;
}

bool feature_is_log_scaled(int index) {
  return index >= 0 && index < kFeaturesPerStore && layout().log_scaled[index];
}

std::vector<std::vector<float>> extract_features(const Function& scheduled,
                                                 const FeatureOptions& options) {
  Function lowered;
  const Function* f = &scheduled;
  if (!scheduled.lowered) {
    Function marked = scheduled;
    marked.body = carry_block_annotations(scheduled.body);
    lowered = lower(marked);
    f = &lowered;
  }
  bool is_gpu = false;
  visit_stmts(f->body, [&](const Stmt& s) {
    if (s->kind == StmtKind::For && as<ForNode>(s)->for_kind == ForKind::ThreadBinding)
      is_gpu = true;
    return !is_gpu;
  });
  Extractor ex(options, is_gpu);
  ex.walk(f->body);
  return std::move(ex.rows);
}

FeatureMatrix to_feature_matrix(const std::vector<std::vector<float>>& rows) {
  FeatureMatrix m;
  m.rows = rows.size();
  m.data.reserve(rows.size() * kFeaturesPerStore);
  for (const auto& r : rows) {
    if (r.size() != size_t(kFeaturesPerStore))
      throw std::invalid_argument("to_feature_matrix: a row has " + std::to_string(r.size()) +
                                  " values, expected " + std::to_string(kFeaturesPerStore));
    m.data.insert(m.data.end(), r.begin(), r.end());
  }
  return m;
}

FeatureMatrix extract_feature_matrix(const Function& scheduled, const FeatureOptions& options) {
  return to_feature_matrix(extract_features(scheduled, options));
}

} // namespace mt
