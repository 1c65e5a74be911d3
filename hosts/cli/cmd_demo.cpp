// `metatune demo`: the end-to-end demonstration of what exists so far. Builds a workload,
// draws random schedules, checks every one against the unscheduled function in the reference
// interpreter, and shows one schedule's trace and lowered program.
#include <chrono>
#include <cmath>
#include <iostream>

#include "core/ir/printer.h"
#include "core/ir/structural.h"
#include "core/lower/interpreter.h"
#include "core/lower/lower.h"
#include "core/runtime/arguments.h"
#include "core/runtime/ndarray.h"
#include "core/schedule/random_schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/library.h"
#include "hosts/cli/command.h"

namespace {

struct DemoOptions {
  std::string workload = "matmul(M=64,N=64,K=64)";
  int schedules = 50;
  int steps = 10;
  uint64_t seed = 1;
};

std::vector<mt::NDArray> run(const mt::Function& f) {
  std::vector<mt::NDArray> args = mt::make_arguments(f, {.seed = 100});
  mt::interpret(f, mt::pointers(args));
  return args;
}

int demo(const DemoOptions& o) {
  using clock = std::chrono::steady_clock;
  mt::Function f = mt::make_workload(o.workload);
  std::cout << "workload " << mt::canonical_workload_spec(o.workload) << "  (structural hash "
            << std::hex << mt::structural_hash(f) << std::dec << ")\n";
  auto ref = run(f);
  auto outs = f.output_mask();
  int ok = 0, applied = 0;
  double best_ms = 1e30;
  std::unique_ptr<mt::Schedule> shown;
  for (int i = 0; i < o.schedules; ++i) {
    auto sch = std::make_unique<mt::Schedule>(f, o.seed + i);
    applied += mt::apply_random_primitives(*sch, o.steps).applied;
    auto t0 = clock::now();
    auto got = run(sch->func());
    double ms = std::chrono::duration<double, std::milli>(clock::now() - t0).count();
    bool same = true;
    for (size_t k = 0; k < got.size(); ++k) {
      std::string why;
      if (outs[k] && !mt::allclose(got[k], ref[k], 1e-4, 1e-5, &why)) {
        same = false;
        std::cout << "schedule " << i << " MISMATCH: " << why << "\n";
      }
    }
    ok += same;
    if (same && sch->trace().size() > (shown ? shown->trace().size() : 0)) shown = std::move(sch);
    best_ms = std::min(best_ms, ms);
  }
  std::cout << ok << "/" << o.schedules << " random schedules (" << applied
            << " primitives applied) match the unscheduled function in the interpreter\n";
  if (shown) {
    std::cout << "\none of them, as a trace:\n" << shown->trace().simplified().to_json() << "\n";
    std::cout << "\nits lowered program:\n" << mt::print(mt::lower(shown->func())) << "\n";
  }
  std::cout << "(tuning on this CPU with the LLVM target comes with `metatune tune`)\n";
  return ok == o.schedules ? 0 : 2;
}

mt::cli::RegisterCommand reg("demo", [](CLI::App& app) -> std::function<int()> {
  auto* sub =
      app.add_subcommand("demo", "Random schedules of a workload, checked in the interpreter");
  auto o = std::make_shared<DemoOptions>();
  sub->add_option("-w,--workload", o->workload, "Workload spec, e.g. 'matmul(M=64,N=64,K=64)'");
  sub->add_option("-n,--schedules", o->schedules, "Number of random schedules");
  sub->add_option("--steps", o->steps, "Primitives attempted per schedule");
  sub->add_option("--seed", o->seed, "Seed of the first schedule");
  return [o] { return demo(*o); };
});

} // namespace
