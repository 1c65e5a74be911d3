// Tensor IR statements. A function body is a tree of loops (For), sequences, and block
// realizations; a Block is one computation with iteration variables bound to loop expressions
// (the unit that schedule primitives move around). Lowering removes blocks and leaves a plain
// loop program of For / Seq / Store / IfThenElse / Allocate.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/ir/buffer.h"
#include "core/ir/expr.h"

namespace mt {

// Members and values from MT_STMT_KINDS, MT_FOR_KINDS and MT_ITER_KINDS
// (plugin_api/ir_vocabulary.h); the values are the ABI's.
enum class StmtKind : uint8_t { MT_STMT_KINDS(MT_VOCAB_ENUMERATOR) };
enum class ForKind : uint8_t { MT_FOR_KINDS(MT_VOCAB_ENUMERATOR) };
enum class IterKind : uint8_t { MT_ITER_KINDS(MT_VOCAB_ENUMERATOR) };

const char* to_string(ForKind k);  // "serial", "parallel", ... (the IR text form's keywords)
const char* to_string(IterKind k); // "S", "R"
// The ForKind named `s` in the IR text form.
bool parse_for_kind(std::string_view s, ForKind* out);

using AnnValue = std::variant<int64_t, std::string>;
using Annotations = std::map<std::string, AnnValue>;

struct StmtNode;
using Stmt = std::shared_ptr<const StmtNode>;

struct StmtNode {
  explicit StmtNode(StmtKind k) : kind(k) {}
  virtual ~StmtNode() = default;
  const StmtKind kind;
};

// for loop_var in [0, extent)
struct ForNode : StmtNode {
  ForNode() : StmtNode(StmtKind::For) {}
  Expr loop_var;
  int64_t extent = 1;
  ForKind for_kind = ForKind::Serial;
  std::string thread_tag; // ThreadBinding only: "blockIdx.x", "threadIdx.y", "vthread", ...
  Annotations annotations;
  Stmt body;
};

struct SeqNode : StmtNode {
  SeqNode() : StmtNode(StmtKind::Seq) {}
  std::vector<Stmt> stmts;
};

struct StoreNode : StmtNode {
  StoreNode() : StmtNode(StmtKind::Store) {}
  Buffer buffer;
  std::vector<Expr> indices;
  Expr value;
};

struct IfThenElseNode : StmtNode {
  IfThenElseNode() : StmtNode(StmtKind::IfThenElse) {}
  Expr condition;
  Stmt then_case;
  Stmt else_case; // may be null
};

// Storage for `buffer` that lives for the duration of `body` (lowered programs only).
struct AllocateNode : StmtNode {
  AllocateNode() : StmtNode(StmtKind::Allocate) {}
  Buffer buffer;
  Stmt body;
};

struct IterVar {
  Expr var; // i64 variable
  int64_t extent = 1; // domain [0, extent)
  IterKind kind = IterKind::Spatial;
};

struct Block {
  std::string name; // unique within a function
  std::vector<IterVar> iter_vars;
  // Reduction blocks: the store executed when every reduction iter var is 0. Null otherwise.
  Stmt init;
  Stmt body; // a Store (or a small tree of Stores/Ifs) over the iter vars
  Annotations annotations;
};

// A block instance: iter_values[i] (expressions of enclosing loop vars) binds iter_vars[i];
// the block runs only where `predicate` holds (null = always).
struct BlockRealizeNode : StmtNode {
  BlockRealizeNode() : StmtNode(StmtKind::BlockRealize) {}
  std::vector<Expr> iter_values;
  Expr predicate;
  std::shared_ptr<const Block> block;
};

// ---- constructors ---------------------------------------------------------------------------
Stmt make_for(Expr var, int64_t extent, Stmt body, ForKind kind = ForKind::Serial,
              std::string thread_tag = {}, Annotations ann = {});
Stmt make_seq(std::vector<Stmt> stmts); // flattens nested Seq, drops nulls, unwraps singletons
Stmt make_store(Buffer buf, std::vector<Expr> indices, Expr value);
Stmt make_if(Expr cond, Stmt then_case, Stmt else_case = nullptr);
Stmt make_allocate(Buffer buf, Stmt body);
Stmt make_block_realize(std::vector<Expr> iter_values, Expr predicate, Block block);

// Copies with one field changed.
Stmt with_body(const Stmt& s, Stmt body);           // For / Allocate
Stmt with_for_kind(const Stmt& s, ForKind kind, std::string thread_tag = {});
Stmt with_annotations(const Stmt& s, Annotations ann); // For

// ---- traversal --------------------------------------------------------------------------------
// Pre-order visit of statements; returning false from `f` skips the children.
void visit_stmts(const Stmt& s, const std::function<bool(const Stmt&)>& f);
// Bottom-up rewrite of statements: `f` receives a node whose children are already rewritten.
Stmt transform_stmts(const Stmt& s, const std::function<Stmt(const Stmt&)>& f);
// Rewrites every expression of every statement (block iter values, predicates, stores, ...).
Stmt transform_exprs(const Stmt& s, const std::function<Expr(const Expr&)>& f);
Stmt substitute(const Stmt& s, const VarMap& vmap);
// Child statements of a node in order (For body, Seq items, If branches, Allocate body).
std::vector<Stmt> children(const Stmt& s);

template <typename T> const T* as(const Stmt& s) { return static_cast<const T*>(s.get()); }

// Calls f(child, i) for the children of `s` in the order of children() until one call returns
// true; returns whether one did. Walks hot lookups (a block by name after every primitive)
// without copying the children.
template <typename F> bool any_child(const Stmt& s, F&& f) {
  switch (s->kind) {
  case StmtKind::For:
    return f(as<ForNode>(s)->body, 0);
  case StmtKind::Seq: {
    const std::vector<Stmt>& items = as<SeqNode>(s)->stmts;
    for (size_t i = 0; i < items.size(); ++i)
      if (f(items[i], static_cast<int>(i))) return true;
    return false;
  }
  case StmtKind::IfThenElse: {
    auto* n = as<IfThenElseNode>(s);
    return f(n->then_case, 0) || (n->else_case && f(n->else_case, 1));
  }
  case StmtKind::Allocate:
    return f(as<AllocateNode>(s)->body, 0);
  default:
    return false;
  }
}

} // namespace mt
