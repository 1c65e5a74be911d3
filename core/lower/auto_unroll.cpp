// Lowering pass 5: automatic unrolling, as MetaSchedule asks for it. A loop annotated
// `pragma_auto_unroll_max_step = N` (std.RewriteParallelVectorizeUnroll puts the sampled depth
// on the outermost loop of a nest) opens a scope, itself included, in which every serial loop
// is unrolled when
//   - nothing below it stays a loop (only unrolled and vectorized loops), and
//   - its extent times the statements of its body, counted with the loops below expanded, is at
//     most N (a vectorized loop counts its body once: it becomes one vector statement), and
//   - with it, no more than kMaxUnrollNesting unrolled loops are nested (TVM's auto_max_depth),
// so the innermost loops are unrolled up to N statements, bottom-up, as TVM's UnrollLoop does.
// `pragma_unroll_explicit` (1 unless set to 0) says how: explicitly, the loop becomes
// ForKind::Unrolled, which every code generator expands; by hint, it stays serial and gets the
// kUnrollHintAnnotation annotation that a code generator may turn into its own unrolling (LLVM:
// llvm.loop.unroll.full). Parallel, vectorized and thread-bound loops are never unrolled and
// (apart from vectorized ones) keep the loops around them rolled; a loop the schedule already
// unrolled stays unrolled and counts as such. Loop extents are constants in this IR (a
// non-constant extent, if the IR ever gets one, must count as a loop that stays a loop).
// A nested annotation replaces the enclosing one in its scope. Outside any annotation nothing
// changes; with METATUNE_DISABLE_AUTO_UNROLL=1 in the environment the pass does nothing.
#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "core/lower/lower.h"

namespace mt {

namespace {

// Deeper unrolled nests are not worth their code size (TVM's default auto_max_depth).
constexpr int kMaxUnrollNesting = 8;
constexpr int64_t kMaxSteps = std::numeric_limits<int64_t>::max();
constexpr const char* kMaxStepKey = "pragma_auto_unroll_max_step";
constexpr const char* kExplicitKey = "pragma_unroll_explicit";

// The unroll request in force at a statement.
struct UnrollScope {
  int64_t max_step = 0;
  bool explicit_unroll = true;
};

// What a subtree tells the loops around it.
struct Summary {
  int64_t steps = 0;        // statements it runs once its unrolled loops are expanded
  int unrolled_nesting = 0; // unrolled loops nested in it, at most
  bool has_loop = false;    // some loop in it stays a loop

  // This subtree followed by `next` (a sequence, or the two branches of an `if`).
  void then(const Summary& next) {
    steps = steps > kMaxSteps - next.steps ? kMaxSteps : steps + next.steps;
    unrolled_nesting = std::max(unrolled_nesting, next.unrolled_nesting);
    has_loop = has_loop || next.has_loop;
  }
};

// extent * steps, saturated (extent >= 1).
int64_t times(int64_t extent, int64_t steps) {
  return steps > kMaxSteps / extent ? kMaxSteps : extent * steps;
}

class AutoUnroller {
public:
  Stmt visit(const Stmt& s, UnrollScope scope, Summary* out) {
    if (!s) return s;
    switch (s->kind) {
    case StmtKind::For:
      return visit_for(s, scope, out);
    case StmtKind::Store:
      out->steps = 1;
      return s;
    case StmtKind::Seq: {
      std::vector<Stmt> items;
      bool changed = false;
      for (const Stmt& c : as<SeqNode>(s)->stmts) {
        Summary part;
        items.push_back(visit(c, scope, &part));
        out->then(part);
        changed = changed || items.back() != c;
      }
      return changed ? make_seq(std::move(items)) : s;
    }
    case StmtKind::IfThenElse: {
      auto* n = as<IfThenElseNode>(s);
      Summary then_part, else_part;
      Stmt t = visit(n->then_case, scope, &then_part);
      Stmt e = visit(n->else_case, scope, &else_part);
      out->then(then_part);
      out->then(else_part);
      return t == n->then_case && e == n->else_case ? s : make_if(n->condition, t, e);
    }
    case StmtKind::Allocate: {
      const Stmt& body = as<AllocateNode>(s)->body;
      Stmt nb = visit(body, scope, out);
      return nb == body ? s : with_body(s, nb);
    }
    case StmtKind::BlockRealize: // gone after lower_blocks; counted as one opaque statement
      out->steps = 1;
      return s;
    }
    return s;
  }

private:
  static UnrollScope enter(const ForNode& f, UnrollScope scope) {
    auto it = f.annotations.find(kMaxStepKey);
    if (it != f.annotations.end())
      if (const int64_t* v = std::get_if<int64_t>(&it->second)) scope.max_step = *v;
    it = f.annotations.find(kExplicitKey);
    if (it != f.annotations.end())
      if (const int64_t* v = std::get_if<int64_t>(&it->second)) scope.explicit_unroll = *v != 0;
    return scope;
  }

  Stmt visit_for(const Stmt& s, UnrollScope scope, Summary* out) {
    auto* f = as<ForNode>(s);
    scope = enter(*f, scope);
    Summary body;
    Stmt nb = visit(f->body, scope, &body);
    Stmt self = nb == f->body ? s : with_body(s, nb);

    if (f->for_kind == ForKind::Vectorized) { // one vector statement per statement of its body
      *out = body;
      return self;
    }
    bool unroll = f->for_kind == ForKind::Unrolled;
    if (f->for_kind == ForKind::Serial)
      unroll = scope.max_step > 0 && f->extent >= 1 && !body.has_loop &&
               body.unrolled_nesting < kMaxUnrollNesting &&
               times(f->extent, body.steps) <= scope.max_step;
    if (!unroll) {
      *out = body;
      out->has_loop = true;
      return self;
    }
    out->steps = times(std::max<int64_t>(f->extent, 1), body.steps);
    out->unrolled_nesting = body.unrolled_nesting + 1;
    out->has_loop = body.has_loop; // below a loop the schedule unrolled, loops may stay
    if (f->for_kind == ForKind::Unrolled) return self;
    if (scope.explicit_unroll) return with_for_kind(self, ForKind::Unrolled);
    Annotations ann = as<ForNode>(self)->annotations;
    ann[kUnrollHintAnnotation] = int64_t{1};
    return with_annotations(self, std::move(ann));
  }
};

} // namespace

bool auto_unroll_disabled_by_environment() {
  const char* v = std::getenv("METATUNE_DISABLE_AUTO_UNROLL");
  return v && *v && std::string_view(v) != "0";
}

Stmt auto_unroll(const Stmt& body) {
  Summary ignored;
  return AutoUnroller().visit(body, UnrollScope{}, &ignored);
}

} // namespace mt
