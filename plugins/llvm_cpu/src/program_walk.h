// Walks over sdk program trees that the code generator's recognisers and rewrites share: the
// one statement under single-statement sequences, and a statement tree rebuilt with its
// expressions mapped.
#pragma once

#include <functional>

#include "metatune/sdk/program.hpp"

namespace mt::llvm_cpu {

// The one statement under single-statement sequences (s itself otherwise; null for null).
const sdk::program::StmtNode* only_stmt(const sdk::program::Stmt& s);

// `s` rebuilt: every expression a statement holds (indices, value, condition) mapped by `expr`,
// then each rebuilt statement handed to `adjust` with the original (to change its buffer, its
// indices or value), children first mapped the same way.
sdk::program::Stmt map_stmts(
    const sdk::program::Stmt& s,
    const std::function<sdk::program::Expr(const sdk::program::Expr&)>& expr,
    const std::function<void(const sdk::program::StmtNode& old, sdk::program::StmtNode& node)>&
        adjust = {});

} // namespace mt::llvm_cpu
