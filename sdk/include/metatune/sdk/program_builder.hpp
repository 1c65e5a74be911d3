// Builds the plain C++ program tree of program.hpp from a lowered Program seen through the
// host's accessors: one walk, after which a target's code generator owns the tree and never
// calls the host again. Buffers and variables keep their identity (one node each, with ids
// unique within the program); expressions are copied node for node, without re-inferring
// types or folding.
#pragma once

#include <memory>
#include <string_view>
#include <unordered_map>

#include "metatune/sdk/error.hpp"
#include "metatune/sdk/ir.hpp"
#include "metatune/sdk/program.hpp"

namespace mt::sdk {

static_assert(std::string_view(MT_LOOP_UNROLL_HINT) == program::kUnrollHintAnnotation,
              "the unroll hint annotation is spelled as the ABI spells it");
static_assert(std::string_view(MT_LOOP_SOFTWARE_PIPELINE_STAGES) ==
                      program::kSoftwarePipelineStages &&
                  std::string_view(MT_LOOP_SOFTWARE_PIPELINE_PROLOGUE) ==
                      program::kSoftwarePipelinePrologue &&
                  std::string_view(MT_LOOP_SOFTWARE_PIPELINE_ASYNC_COPY) ==
                      program::kSoftwarePipelineAsyncCopy &&
                  std::string_view(MT_LOOP_SOFTWARE_PIPELINE_SPARE_SLOTS) ==
                      program::kSoftwarePipelineSpareSlots,
              "the software pipelining annotations are spelled as the ABI spells them");

class ProgramBuilder {
public:
  program::Program build(const Program& p) {
    if (!p.lowered())
      throw Error(MT_ERROR_INVALID_ARGUMENT,
                  "ProgramBuilder: program '" + p.name() + "' is not lowered");
    program::Program out;
    out.name = p.name();
    for (const BufferRef& b : p.params())
      out.params.push_back(buffer(b));
    out.body = stmt(p.body());
    return out;
  }

  program::Buffer buffer(BufferRef b) {
    if (!b) return nullptr;
    auto it = buffers_.find(b.get());
    if (it != buffers_.end()) return it->second;
    program::Buffer nb =
        program::make_buffer(b.name(), b.dtype(), b.shape(), b.scope(), next_id_++);
    buffers_.emplace(b.get(), nb);
    return nb;
  }

  program::Expr expr(ExprRef e) {
    if (!e) return program::Expr();
    if (e.kind() == ExprKind::Var) {
      auto it = vars_.find(e.get());
      if (it != vars_.end()) return it->second;
      program::Expr v = program::make_var(e.var_name(), e.dtype(), next_id_++);
      vars_.emplace(e.get(), v);
      return v;
    }
    auto n = std::make_shared<program::ExprNode>();
    n->kind = e.kind();
    n->dtype = e.dtype();
    switch (n->kind) {
    case ExprKind::IntImm:
      n->int_value = e.int_value();
      break;
    case ExprKind::FloatImm:
      n->float_value = e.float_value();
      break;
    case ExprKind::Call:
      n->fn = e.call_fn();
      break;
    case ExprKind::Load:
      n->buffer = buffer(e.load_buffer());
      break;
    default:
      break;
    }
    for (const ExprRef& a : e.args())
      n->args.push_back(expr(a));
    return program::Expr(n);
  }

  program::Stmt stmt(StmtRef s) {
    if (!s) return nullptr;
    auto n = std::make_shared<program::StmtNode>();
    switch (s.kind()) {
    case StmtKind::For:
      n->kind = program::StmtKind::For;
      n->loop_var = expr(s.loop_var());
      n->extent = s.extent();
      n->for_kind = s.for_kind();
      n->thread_tag = s.thread_tag();
      for (const auto& [k, v] : s.annotations())
        n->annotations.emplace(k, v);
      n->body = stmt(s.body());
      break;
    case StmtKind::Seq:
      n->kind = program::StmtKind::Seq;
      for (const StmtRef& c : s.children())
        n->stmts.push_back(stmt(c));
      break;
    case StmtKind::Store:
      n->kind = program::StmtKind::Store;
      n->buffer = buffer(s.buffer());
      for (const ExprRef& i : s.indices())
        n->indices.push_back(expr(i));
      n->value = expr(s.value());
      break;
    case StmtKind::IfThenElse:
      n->kind = program::StmtKind::IfThenElse;
      n->condition = expr(s.condition());
      n->then_case = stmt(s.then_case());
      n->else_case = stmt(s.else_case());
      break;
    case StmtKind::Allocate:
      n->kind = program::StmtKind::Allocate;
      n->buffer = buffer(s.buffer());
      n->body = stmt(s.body());
      break;
    case StmtKind::BlockRealize:
      throw Error(MT_ERROR_INVALID_ARGUMENT,
                  "ProgramBuilder: block '" + s.block_name() + "' left in a lowered program");
    }
    return n;
  }

private:
  std::unordered_map<const mt_buffer*, program::Buffer> buffers_;
  std::unordered_map<const mt_expr*, program::Expr> vars_;
  int64_t next_id_ = 1;
};

// The program.hpp tree of a lowered program.
inline program::Program to_program_tree(const Program& p) {
  return ProgramBuilder().build(p);
}

} // namespace mt::sdk
