// Structural equality and hashing of IR, modulo the names of variables and buffers (alpha
// equivalence) and the function's own name. Both are defined by the canonical print
// (printer.h, PrintOptions::canonical), which spells out every other field; the hash is FNV-1a
// 64 of that text, so it is the same in every process and on every platform (it changes only
// when the text format does, see docs/ir_text_format.md).
#pragma once

#include <cstdint>

#include "core/ir/expr.h"
#include "core/ir/function.h"
#include "core/ir/stmt.h"

namespace mt {

// Free variables and buffers (used but not bound) are matched by order of first use.
bool structural_equal(const Function& a, const Function& b);
bool structural_equal(const Stmt& a, const Stmt& b);
bool structural_equal(const Expr& a, const Expr& b);

uint64_t structural_hash(const Function& f);
uint64_t structural_hash(const Stmt& s);
uint64_t structural_hash(const Expr& e);

// Identity of a function up to alpha equivalence, for telling candidates apart within a run
// (the search's duplicates): equal exactly when the canonical texts are equal (up to a chance
// collision), like structural_hash, but computed without printing the text, whose length
// grows with the tree a DAG of shared subexpressions stands for. Not stored anywhere: the
// database keys workloads by structural_hash, whose values must not change.
uint64_t structural_fingerprint(const Function& f);

} // namespace mt
