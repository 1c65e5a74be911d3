// What the search strategy tests share: a small evolutionary search, and whether a candidate
// still carries an annotation the CPU postprocessors should have consumed.
#pragma once

#include "core/ir/stmt.h"
#include "core/search/search_strategy.h"

namespace mt::search_test {

inline EvolutionaryOptions small_options() {
  EvolutionaryOptions o;
  o.population = 48;
  o.init_min_unmeasured = 16;
  o.genetic_iterations = 2;
  return o;
}

// The annotations the CPU postprocessors consume: a post-processed candidate has none left.
inline bool has_postproc_annotation(const Function& f) {
  bool found = false;
  auto check = [&](const Annotations& anns) {
    for (const auto& [k, v] : anns)
      if (k == "meta_schedule.parallel" || k == "meta_schedule.vectorize" ||
          k == "meta_schedule.unroll_explicit" || k == "meta_schedule.unroll_implicit")
        found = true;
  };
  visit_stmts(f.body, [&](const Stmt& s) {
    if (s->kind == StmtKind::For) check(as<ForNode>(s)->annotations);
    if (s->kind == StmtKind::BlockRealize) check(as<BlockRealizeNode>(s)->block->annotations);
    return true;
  });
  return found;
}

} // namespace mt::search_test
