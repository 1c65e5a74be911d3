// Reference results (see measure.h): random inputs, and outputs from the reference interpreter
// on the unscheduled workload. The interpreter is exact but slow (about 50 ns per innermost
// iteration: close to a minute for matmul 1024^3), so the work is spread over threads where
// that cannot change a single bit of the result: a root loop nest is cut into slices of its
// outermost loop when that loop picks out disjoint output elements (its variable is a spatial
// iter var that indexes every store of the nest's only block). Each slice is interpreted
// separately; nests run in order, intermediates live in arrays shared by all slices.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <exception>
#include <thread>

#include "core/lower/interpreter.h"
#include "core/measure/measure.h"
#include "core/measure/reference_cache.h"
#include "core/runtime/arguments.h"

namespace mt {

namespace {

using Clock = std::chrono::steady_clock;

bool is_exactly(const Expr& e, const Expr& var) {
  return e && e.same_as(var);
}

// Position of `var` among `indices` (as an index of its own), or -1.
int position_of(const std::vector<Expr>& indices, const Expr& var) {
  for (size_t p = 0; p < indices.size(); ++p)
    if (is_exactly(indices[p], var)) return static_cast<int>(p);
  return -1;
}

// True when the iterations of `loop` (a root loop nest) write disjoint elements and read no
// element another iteration writes, so that its iterations may run in any order at once.
bool sliceable(const ForNode& loop) {
  std::vector<const BlockRealizeNode*> realizes;
  visit_stmts(loop.body, [&](const Stmt& s) {
    if (s->kind == StmtKind::BlockRealize) realizes.push_back(as<BlockRealizeNode>(s));
    return true;
  });
  if (realizes.size() != 1) return false;
  const BlockRealizeNode& br = *realizes[0];
  const Block& block = *br.block;
  // The block iter var bound to exactly the loop variable, spatial.
  Expr vi;
  for (size_t k = 0; k < br.iter_values.size() && k < block.iter_vars.size(); ++k)
    if (is_exactly(br.iter_values[k], loop.loop_var) &&
        block.iter_vars[k].kind == IterKind::Spatial)
      vi = block.iter_vars[k].var;
  if (!vi) return false;
  // Every store indexes by vi, each buffer always at the same position.
  std::vector<std::pair<const BufferNode*, int>> written;
  bool ok = true;
  for (const Stmt& part : {block.init, block.body}) {
    if (!part) continue;
    visit_stmts(part, [&](const Stmt& s) {
      if (s->kind == StmtKind::Store) {
        const StoreNode& st = *as<StoreNode>(s);
        int p = position_of(st.indices, vi);
        if (p < 0) ok = false;
        for (const auto& [buf, q] : written)
          if (buf == st.buffer.get() && q != p) ok = false;
        written.push_back({st.buffer.get(), p});
      }
      return true;
    });
  }
  if (!ok || written.empty()) return false;
  // Loads of a written buffer (reductions: C = C + ...) read the iteration's own elements.
  for (const Stmt& part : {block.init, block.body}) {
    if (!part) continue;
    transform_exprs(part, [&](const Expr& e) {
      post_order_visit(e, [&](const Expr& x) {
        if (x->kind != ExprKind::Load) return;
        for (const auto& [buf, p] : written)
          if (buf == x->buffer.get() && position_of(x->args, vi) != p) ok = false;
      });
      return e;
    });
  }
  return ok;
}

// Runs `programs` at once, one thread each (the first on this thread).
void run_all(const std::vector<CompiledProgram>& programs, const std::vector<NDArray*>& args) {
  std::vector<std::exception_ptr> errors(programs.size());
  std::vector<std::thread> threads;
  for (size_t t = 1; t < programs.size(); ++t)
    threads.emplace_back([&, t] {
      try {
        programs[t].run(args);
      } catch (...) {
        errors[t] = std::current_exception();
      }
    });
  try {
    programs[0].run(args);
  } catch (...) {
    errors[0] = std::current_exception();
  }
  for (auto& th : threads)
    th.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

void interpret_sliced(const Function& f, std::vector<NDArray>& args, int threads) {
  // Intermediates become parameters, so that they outlive each slice's run.
  Function base;
  base.name = f.name;
  base.params = f.params;
  base.params.insert(base.params.end(), f.buffers.begin(), f.buffers.end());
  std::vector<NDArray> scratch;
  for (const Buffer& b : f.buffers) {
    scratch.emplace_back(b->dtype, b->shape);
    if (b->dtype.is_float())
      scratch.back().fill(NAN);
    else
      std::memset(scratch.back().data(), 0x5A, scratch.back().nbytes());
  }
  std::vector<NDArray*> ptrs;
  for (auto& a : args)
    ptrs.push_back(&a);
  for (auto& a : scratch)
    ptrs.push_back(&a);

  std::vector<Stmt> nests;
  if (f.body && f.body->kind == StmtKind::Seq)
    nests = as<SeqNode>(f.body)->stmts;
  else
    nests = {f.body};
  for (const Stmt& nest : nests) {
    std::vector<CompiledProgram> programs;
    const ForNode* loop = nest && nest->kind == StmtKind::For ? as<ForNode>(nest) : nullptr;
    if (loop && loop->extent >= 2 && sliceable(*loop)) {
      int64_t parts = std::min<int64_t>(threads, loop->extent);
      int64_t chunk = (loop->extent + parts - 1) / parts;
      for (int64_t begin = 0; begin < loop->extent; begin += chunk) {
        Expr var = make_var(loop->loop_var->name, loop->loop_var->dtype);
        VarMap shift{{loop->loop_var.get(), var + int_imm(begin, var->dtype)}};
        Function slice = base;
        slice.body =
            make_for(var, std::min(chunk, loop->extent - begin), substitute(loop->body, shift),
                     loop->for_kind, loop->thread_tag, loop->annotations);
        programs.emplace_back(slice);
      }
    } else {
      Function whole = base;
      whole.body = nest;
      programs.emplace_back(whole);
    }
    run_all(programs, ptrs);
  }
}

} // namespace

Reference reference_inputs(const Function& workload, uint64_t seed) {
  Reference ref;
  ref.is_output = workload.output_mask();
  ref.args = make_arguments(workload, {.seed = seed});
  return ref;
}

Reference Reference::compute(const Function& workload, uint64_t seed, int threads) {
  Reference ref = reference_inputs(workload, seed);
  if (threads <= 0) threads = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  auto t0 = Clock::now();
  if (threads == 1 || workload.lowered) {
    std::vector<NDArray*> ptrs;
    for (auto& a : ref.args)
      ptrs.push_back(&a);
    interpret(workload, ptrs);
  } else {
    interpret_sliced(workload, ref.args, threads);
  }
  ref.compute_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return ref;
}

Reference Reference::compute_with(const Function& workload, uint64_t seed,
                                  const Evaluator& evaluator) {
  Reference ref = reference_inputs(workload, seed);
  auto t0 = Clock::now();
  evaluator.run(workload, ref.args);
  ref.compute_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  return ref;
}

std::vector<NDArray> Reference::fresh_args() const {
  std::vector<NDArray> out;
  out.reserve(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (is_output[i]) {
      out.emplace_back(args[i].dtype(), args[i].shape());
      poison(out.back());
    } else {
      out.push_back(args[i]);
    }
  }
  return out;
}

} // namespace mt
