// KernelWriter: Reductions across threads: the scratch they need, registered before the body is
// written, and their tree combine through shared memory.
#include "writer.h"

namespace mt::gpu_codegen::writer {

bool KernelWriter::uses_var_anywhere(const P::Stmt& s, int64_t var_id) {
  bool used = false;
  auto check = [&](const P::Expr& e) {
    used = used || (static_cast<bool>(e) && P::uses_var(e, var_id));
  };
  P::visit_stmts(s, [&](const P::Stmt& x) {
    for (const auto& i : x->indices)
      check(i);
    check(x->value);
    check(x->condition);
    return !used;
  });
  return used;
}

void KernelWriter::preregister_reductions() {
  std::function<void(const P::Stmt&, std::unordered_set<std::string>)> walk =
      [&](const P::Stmt& x, std::unordered_set<std::string> tags) {
        if (!x) return;
        if (x->kind == StmtKind::For) {
          bool is_block = false;
          int dim = 0;
          if (x->for_kind == P::ForKind::ThreadBinding &&
              parse_thread_tag(x->thread_tag, &is_block, &dim) && !is_block &&
              !tags.count(x->thread_tag) && kernel_.dims.block[dim] > 1) {
            try {
              // Every enclosing variable counts as outside: what is refused is said again,
              // with the reason, when the loop is written.
              std::unordered_set<int64_t> all_outside;
              P::visit_stmts(kernel_.body, [&](const P::Stmt& y) {
                if (y->kind == StmtKind::For) all_outside.insert(y->loop_var->var_id);
                return true;
              });
              for (const auto& v : kernel_.host_vars)
                all_outside.insert(v->var_id);
              if (auto xr = find_shared_target_stores(x, false, private_, all_outside)) {
                in_registers_.insert(xr->update.get());
                for (const auto& init : xr->inits)
                  in_registers_.insert(init.get());
              }
            } catch (const UnsupportedError&) {
            }
            tags.insert(x->thread_tag);
          }
          walk(x->body, tags);
          return;
        }
        for (const auto& c : x->kind == StmtKind::Seq ? x->stmts : std::vector<P::Stmt>{})
          walk(c, tags);
        if (x->kind == StmtKind::IfThenElse) {
          walk(x->then_case, tags);
          walk(x->else_case, tags);
        }
        if (x->kind == StmtKind::Allocate) walk(x->body, tags);
      };
  walk(kernel_.body, {});
}

void KernelWriter::reduction_epilogue(const CrossThreadReduction& xr, const std::string& t,
                                      int dim) {
  static const char* tags[3] = {"threadIdx.x", "threadIdx.y", "threadIdx.z"};
  for (int d = 0; d < 3; ++d)
    if (d != dim && kernel_.dims.block[d] > 1 && !active_tags_.count(tags[d]))
      throw UnsupportedError(std::string("a reduction across ") + tags[dim] +
                             " in a block that also has threads along " + tags[d] +
                             " outside it (each of them would apply the result)");
  if (expanded_.count(xr.buffer_id))
    throw UnsupportedError("a reduction across threads into an array of virtual threads");
  const P::Stmt& st = xr.update;
  const P::DType dt = st->buffer->dtype;
  std::string vals = fresh("mt_red_shared"), flags = fresh("mt_redflags_shared");
  scratch_.emplace_back(vals, type_of(dt), held_bytes(dt, false));
  scratch_.emplace_back(flags, "int", 4);
  const int64_t* b = kernel_.dims.block;
  std::string flat = "(" + d_.thread_index(0) + " + " + std::to_string(b[0]) + " * (" +
                     d_.thread_index(1) + " + " + std::to_string(b[1]) + " * " +
                     d_.thread_index(2) + "))";
  int64_t stride = dim == 0 ? 1 : dim == 1 ? b[0] : b[0] * b[1];
  int64_t n = b[dim], p2 = 1;
  while (p2 < n)
    p2 *= 2;
  std::string me = fresh("mt_lane"), base = fresh("mt_base");
  line("const int " + me + " = (int)" + flat + ";");
  line("const int " + base + " = " + me + " - (int)" + t + " * " + std::to_string(stride) + ";");
  line(d_.barrier());
  line(vals + "[" + me + "] = " + xr.red + ";");
  line(flags + "[" + me + "] = " + xr.flags + ";");
  line(d_.barrier());
  std::string s = fresh("mt_s");
  line("for (int " + s + " = " + std::to_string(p2 / 2) + "; " + s + " > 0; " + s + " >>= 1) {");
  ++indent_;
  line("if (" + t + " < " + s + " && " + t + " + " + s + " < " + std::to_string(n) + ") {");
  ++indent_;
  std::string other = me + " + " + s + " * " + std::to_string(stride);
  line(vals + "[" + me +
       "] = " + combine(xr.combiner, dt, vals + "[" + me + "]", vals + "[" + other + "]") + ";");
  line(flags + "[" + me + "] |= " + flags + "[" + other + "];");
  --indent_;
  line("}");
  line(d_.barrier());
  --indent_;
  line("}");
  std::string index = flat_index(st->buffer, st->indices);
  line(xr.broadcast ? "{" : "if (" + t + " == 0) {");
  ++indent_;
  if (static_cast<bool>(xr.init_value))
    line("if (" + flags + "[" + base + "] & 1) " +
         write_element(st->buffer, index, bare(xr.init_value)) + ";");
  line("if (" + flags + "[" + base + "] & 2) " +
       write_element(
           st->buffer, index,
           combine(xr.combiner, dt, read_element(st->buffer, index), vals + "[" + base + "]")) +
       ";");
  --indent_;
  line("}");
}

} // namespace mt::gpu_codegen::writer
