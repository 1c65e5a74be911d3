// Read-only analysis of blocks and function trees shared by schedule primitives, rules and
// the plugin API: which buffers a block reads and writes, where things are in the tree.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/ir/function.h"

namespace mt {

// Buffers a block reads, in order of first appearance in its body; the buffer the block
// updates (the implicit self-read of a reduction) is not listed.
std::vector<Buffer> block_reads(const Block& b);
// Buffers a block writes (body and init), in order of first appearance.
std::vector<Buffer> block_writes(const Block& b);
// Every load of `buf` in the block (init and body).
std::vector<Expr> block_loads_of(const Block& b, const BufferNode* buf);
bool block_reads_buffer(const Block& b, const BufferNode* buf);
bool block_writes_buffer(const Block& b, const BufferNode* buf);
bool is_reduction_block(const Block& b);

// A node of a statement tree with the chain of ancestors from the root: nodes[0] is the root,
// nodes.back() the node found; index[k] is the position of nodes[k] among the children of
// nodes[k-1] (index[0] = -1).
struct StmtPath {
  std::vector<Stmt> nodes;
  std::vector<int> index;
  const Stmt& leaf() const { return nodes.back(); }
  // Enclosing For nodes, outermost first (excluding the leaf itself).
  std::vector<const ForNode*> loops() const;
};

std::optional<StmtPath> find_path(const Stmt& root, const std::function<bool(const Stmt&)>& pred);
std::optional<StmtPath> find_block(const Stmt& root, const std::string& name);
std::optional<StmtPath> find_loop(const Stmt& root, const ExprNode* loop_var);

// Replaces the leaf of `path` by `replacement` and returns the new root. A null replacement
// removes the leaf, and any ancestor left empty by that (a For or Allocate with no body, an
// empty Seq, an If with no then-branch) is removed too.
Stmt replace_at(const StmtPath& path, Stmt replacement);
// Replaces child `i` of `parent` (in the order of children()); null removes it.
Stmt replace_child(const Stmt& parent, int i, Stmt child);

// Block realizations in program order (pre-order).
std::vector<const BlockRealizeNode*> collect_blocks(const Stmt& root);
std::vector<std::string> block_names_in_order(const Stmt& root);

} // namespace mt
