// The host API table on its own (no plugin): complete, and each function group behaves as the
// header promises -- statuses and last errors, the (out, capacity, count) convention, handles
// and their lifetimes, program accessors and tensor-expression construction.
#include <gtest/gtest.h>

#include <functional>

#include <cstring>
#include <thread>

#include "abi_test_util.h"
#include "core/lower/lower.h"
#include "core/plugin/host_api.h"
#include "core/plugin/last_error.h"
#include "core/schedule/schedule.h"
#include "core/schedule/trace.h"
#include "core/workload/library.h"
#include "core/workload/te.h"

namespace mt {
namespace {

const mt_host_api& api() {
  return *host_api();
}
mt_str s(const char* x) {
  return mt_str{x, std::strlen(x)};
}
std::string str(mt_str x) {
  return std::string(x.data, x.size);
}

// A schedule handle over a fresh schedule of `spec`, released at scope exit.
struct ScheduleHandle {
  std::shared_ptr<Schedule> sch;
  mt_schedule* h;
  explicit ScheduleHandle(const std::string& spec)
      : sch(std::make_shared<Schedule>(make_workload(spec))), h(make_schedule_handle(sch)) {}
  ~ScheduleHandle() { api().schedule_release(h); }
};

TEST(HostApi, TableIsCompleteAndVersioned) {
  const mt_host_api& t = api();
  EXPECT_EQ(t.struct_size, sizeof(mt_host_api));
  EXPECT_EQ(t.abi_version, MT_PLUGIN_ABI_VERSION);
  // Every slot after the header is a function pointer, and none is missing.
  const size_t first = offsetof(mt_host_api, last_error) / sizeof(void*);
  const size_t count = sizeof(mt_host_api) / sizeof(void*);
  auto slots = reinterpret_cast<void* const*>(&t);
  for (size_t i = first; i < count; ++i)
    EXPECT_NE(slots[i], nullptr) << "slot " << i;
}

TEST(HostApi, LastErrorIsPerThreadAndSetByFailures) {
  api().set_last_error(s("from the plugin"));
  EXPECT_STREQ(api().last_error(), "from the plugin");
  EXPECT_STREQ(mt_last_error(), "from the plugin");
  std::string other;
  std::thread([&] { other = api().last_error(); }).join();
  EXPECT_EQ(other, "");

  ScheduleHandle sh("matmul(M=8,N=8,K=8)");
  mt_block_rv b{};
  EXPECT_EQ(api().get_block(sh.h, s("no_such_block"), &b), MT_ERROR_SCHEDULE);
  std::string msg = api().last_error();
  EXPECT_NE(msg.find("get_block"), std::string::npos) << msg;
  EXPECT_NE(msg.find("no_such_block"), std::string::npos) << msg;
  EXPECT_EQ(api().get_block(nullptr, s("x"), &b), MT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api().last_error()).find("schedule is NULL"), std::string::npos);
}

// A thread's slot is destroyed with its thread_local objects; what runs after that (a plugin
// component destroyed with the statics at exit calls into its plugin, which clears and sets
// the slot) must neither write to it nor read it: it sees an empty message.
TEST(HostApi, TheLastErrorSlotTakesNoWritesOnceItsThreadDestroyedIt) {
  std::string seen = "unset";
  std::thread([&] {
    // Constructed before the slot is first used, so destroyed after it.
    struct Late {
      std::string* out;
      ~Late() {
        api().set_last_error(s("after the slot is gone"));
        *out = api().last_error();
      }
    };
    thread_local Late late{&seen};
    (void)late;
    api().set_last_error(s("while the thread runs"));
    EXPECT_STREQ(api().last_error(), "while the thread runs");
  }).join();
  EXPECT_EQ(seen, "");
}

TEST(HostApi, ArrayOutputsFollowTheCapacityConvention) {
  ScheduleHandle sh("matmul(M=8,N=8,K=8)");
  mt_block_rv b = {sh.sch->all_blocks()[0].id};
  auto count_get_loops = [&] {
    size_t k = 0;
    for (const Instruction& inst : sh.sch->trace().instructions())
      k += inst.kind == "get_loops";
    return k;
  };
  size_t n = 99;
  EXPECT_EQ(api().get_loops(sh.h, b, nullptr, 0, &n), MT_OK); // the query form
  EXPECT_EQ(n, 3u);
  mt_loop_rv loops[3];
  n = 0;
  EXPECT_EQ(api().get_loops(sh.h, b, loops, 2, &n), MT_ERROR_BUFFER_TOO_SMALL);
  EXPECT_EQ(n, 3u);
  EXPECT_EQ(api().get_loops(sh.h, b, loops, 3, &n), MT_OK);
  // The query, the short call and the full call are one lookup, recorded once.
  EXPECT_EQ(count_get_loops(), 1u);
  std::vector<LoopRV> direct = sh.sch->get_loops(BlockRV{b.id});
  for (size_t i = 0; i < 3; ++i)
    EXPECT_TRUE(sh.sch->get(LoopRV{loops[i].id}).loop_var.same_as(sh.sch->get(direct[i]).loop_var));
  // A lookup after a complete answer is a new lookup.
  EXPECT_EQ(api().get_loops(sh.h, b, loops, 3, &n), MT_OK);
  EXPECT_EQ(count_get_loops(), 3u);
  // A primitive between query and fill drops the pending answer: the fill looks up afresh.
  EXPECT_EQ(api().get_loops(sh.h, b, nullptr, 0, &n), MT_OK);
  mt_factor f[2] = {{0, {-1}, -1}, {0, {-1}, 2}};
  mt_loop_rv parts[2];
  ASSERT_EQ(api().split(sh.h, loops[0], f, 2, parts), MT_OK);
  mt_loop_rv four[4];
  EXPECT_EQ(api().get_loops(sh.h, b, four, 4, &n), MT_OK);
  EXPECT_EQ(n, 4u);
}

TEST(HostApi, PrimitivesThroughTheTableMatchDirectCalls) {
  Function f = make_workload("matmul(M=16,N=12,K=8)");
  auto via_api = std::make_shared<Schedule>(f, 9);
  Schedule direct(f, 9);
  mt_schedule* h = make_schedule_handle(via_api);

  Schedule probe(f);
  const std::string name = probe.name_of(probe.all_blocks()[0]);
  BlockRV db = direct.get_block(name);
  mt_block_rv b{};
  ASSERT_EQ(api().get_block(h, mt_str{name.data(), name.size()}, &b), MT_OK);
  mt_loop_rv loops[3];
  size_t n = 0;
  ASSERT_EQ(api().get_loops(h, b, loops, 3, &n), MT_OK);
  mt_expr_rv tiles[2];
  ASSERT_EQ(api().sample_perfect_tile(h, loops[0], 2, 16, nullptr, tiles), MT_OK);
  mt_factor fs[2] = {{1, tiles[0], 0}, {1, tiles[1], 0}};
  mt_loop_rv parts[2];
  ASSERT_EQ(api().split(h, loops[0], fs, 2, parts), MT_OK);
  mt_loop_rv order[2] = {parts[1], parts[0]};
  ASSERT_EQ(api().reorder(h, order, 2), MT_OK);
  ASSERT_EQ(api().parallel(h, parts[1]), MT_OK);
  mt_ann_value v{};
  v.kind = MT_ANN_INT;
  v.int_value = 64;
  ASSERT_EQ(api().annotate_loop(h, loops[2], s("unroll_max"), v), MT_OK);

  auto dl = direct.get_loops(db);
  auto dt = direct.sample_perfect_tile(dl[0], 2, 16);
  auto dp = direct.split(dl[0], {dt[0], dt[1]});
  direct.reorder({dp[1], dp[0]});
  direct.parallel(dp[1]);
  direct.annotate(dl[2], "unroll_max", int64_t{64});

  int64_t t0 = 0;
  ASSERT_EQ(api().get_int(h, tiles[0], &t0), MT_OK);
  EXPECT_EQ(t0, direct.get(dt[0])); // same seed, same decisions
  EXPECT_EQ(via_api->trace().to_json(), direct.trace().to_json());
  mt_for_kind kind = MT_FOR_SERIAL;
  ASSERT_EQ(api().loop_kind(h, parts[1], &kind), MT_OK);
  EXPECT_EQ(kind, MT_FOR_PARALLEL);
  mt_str key{};
  mt_ann_value got{};
  ASSERT_EQ(api().loop_annotation(h, loops[2], 0, &key, &got), MT_OK);
  EXPECT_EQ(str(key), "unroll_max");
  EXPECT_EQ(got.int_value, 64);
  EXPECT_EQ(api().loop_annotation(h, loops[2], 1, &key, &got), MT_ERROR_OUT_OF_RANGE);

  // Illegal: a reduction block cannot be inlined. Refused with a message, nothing recorded.
  EXPECT_EQ(api().compute_inline(h, b), MT_ERROR_SCHEDULE);
  EXPECT_NE(std::string(api().last_error()).find("compute_inline"), std::string::npos);
  EXPECT_EQ(via_api->trace().to_json(), direct.trace().to_json());
  api().schedule_release(h);
}

TEST(HostApi, CopiesAreIndependentAndHandlesAreCounted) {
  ScheduleHandle sh("matmul(M=8,N=8,K=8)");
  mt_block_rv b = {sh.sch->all_blocks()[0].id};
  mt_schedule* copy = nullptr;
  ASSERT_EQ(api().schedule_copy(sh.h, &copy), MT_OK);
  EXPECT_EQ(schedule_of(copy).use_count(), 2); // the handle's and the one returned here
  api().schedule_retain(copy);
  api().schedule_release(copy);
  mt_loop_rv loops[3];
  size_t n = 0;
  ASSERT_EQ(api().get_loops(copy, b, loops, 3, &n), MT_OK); // RVs carry over to copies
  mt_factor f[2] = {{0, {-1}, -1}, {0, {-1}, 2}};
  mt_loop_rv out[2];
  ASSERT_EQ(api().split(copy, loops[0], f, 2, out), MT_OK);
  EXPECT_EQ(schedule_of(copy)->get_loops(BlockRV{b.id}).size(), 4u);
  EXPECT_EQ(sh.sch->get_loops(BlockRV{b.id}).size(), 3u);
  api().schedule_release(copy);
}

TEST(HostApi, BorrowedNodesOutliveLaterPrimitives) {
  ScheduleHandle sh("matmul(M=8,N=8,K=8)");
  mt_block_rv b = {sh.sch->all_blocks()[0].id};
  mt_iter_var_info iv{};
  iv.struct_size = sizeof iv;
  ASSERT_EQ(api().block_iter_var(sh.h, b, 0, &iv), MT_OK);
  mt_buffer_access acc{};
  acc.struct_size = sizeof acc;
  ASSERT_EQ(api().block_write(sh.h, b, 0, &acc), MT_OK);
  std::string name = str(api().buffer_name(acc.buffer));
  // Rebuild the tree several times; the nodes handed out before must stay readable.
  for (int i = 0; i < 3; ++i) {
    auto loops = sh.sch->get_loops(BlockRV{b.id});
    sh.sch->split(loops[0], {int64_t(-1), int64_t(2)});
  }
  EXPECT_EQ(api().expr_kind(iv.var), MT_EXPR_VAR);
  EXPECT_EQ(str(api().buffer_name(acc.buffer)), name);
  EXPECT_EQ(acc.num_accesses, 2u); // the init store and the update store
  EXPECT_EQ(api().expr_kind(acc.indices[0]), MT_EXPR_VAR);
  // A struct whose size the caller did not set is refused.
  mt_iter_var_info unset{};
  EXPECT_EQ(api().block_iter_var(sh.h, b, 0, &unset), MT_ERROR_INVALID_ARGUMENT);
}

// Counts nodes of a lowered program through the accessors and directly.
void count_via_api(const mt_stmt* s, int& fors, int& stores) {
  if (!s) return;
  if (api().stmt_kind(s) == MT_STMT_FOR) ++fors;
  if (api().stmt_kind(s) == MT_STMT_STORE) ++stores;
  for (size_t i = 0; i < api().stmt_num_children(s); ++i)
    count_via_api(api().stmt_child(s, i), fors, stores);
}

// ABI 1.2: the loop-partitioned copy of a lowered program. A reduction with its init guarded
// by `k == 0` loses the test; an unlowered program is refused with the reason.
TEST(HostApi, ProgramPartitionLoopsRemovesTheInitTest) {
  ASSERT_TRUE(MT_HAS_FIELD(&api(), mt_host_api, program_partition_loops));
  Function f = make_workload("matmul(M=4,N=4,K=8)");
  mt_program* unlowered = make_program_handle(f);
  mt_program* out = nullptr;
  EXPECT_EQ(api().program_partition_loops(unlowered, &out), MT_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(api().last_error()).find("not lowered"), std::string::npos)
      << api().last_error();
  EXPECT_EQ(out, nullptr);
  mt_program* p = make_program_handle(lower(f));
  ASSERT_EQ(api().program_partition_loops(p, &out), MT_OK);
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(api().program_is_lowered(out), 1);
  std::function<int(const mt_stmt*)> ifs = [&](const mt_stmt* s) {
    if (!s) return 0;
    int n = api().stmt_kind(s) == MT_STMT_IF_THEN_ELSE;
    for (size_t i = 0; i < api().stmt_num_children(s); ++i)
      n += ifs(api().stmt_child(s, i));
    return n;
  };
  EXPECT_EQ(ifs(api().program_body(p)), 1);
  EXPECT_EQ(ifs(api().program_body(out)), 0);
  api().program_release(out);
  api().program_release(p);
  api().program_release(unlowered);
}

TEST(HostApi, ProgramAccessorsWalkTheLoweredFunction) {
  for (const std::string& spec : test_workload_specs()) {
    SCOPED_TRACE(spec);
    Function lowered = lower(make_workload(spec));
    mt_program* p = make_program_handle(lowered);
    EXPECT_EQ(api().program_is_lowered(p), 1);
    EXPECT_EQ(str(api().program_name(p)), lowered.name);
    ASSERT_EQ(api().program_num_params(p), lowered.params.size());
    for (size_t i = 0; i < lowered.params.size(); ++i) {
      const mt_buffer* b = api().program_param(p, i);
      EXPECT_EQ(str(api().buffer_name(b)), lowered.params[i]->name);
      ASSERT_EQ(api().buffer_ndim(b), lowered.params[i]->shape.size());
      for (size_t d = 0; d < lowered.params[i]->shape.size(); ++d)
        EXPECT_EQ(api().buffer_shape(b, d), lowered.params[i]->shape[d]);
      EXPECT_EQ(api().buffer_dtype(b).bits, lowered.params[i]->dtype.bits);
    }
    EXPECT_EQ(api().program_param(p, 99), nullptr);
    int fors = 0, stores = 0, dfors = 0, dstores = 0;
    count_via_api(api().program_body(p), fors, stores);
    visit_stmts(lowered.body, [&](const Stmt& st) {
      dfors += st->kind == StmtKind::For;
      dstores += st->kind == StmtKind::Store;
      return true;
    });
    EXPECT_EQ(fors, dfors);
    EXPECT_EQ(stores, dstores);
    EXPECT_GT(stores, 0);
    api().program_release(p);
  }
  // Accessors of a NULL node answer zero values instead of crashing.
  EXPECT_EQ(api().stmt_num_children(nullptr), 0u);
  EXPECT_EQ(api().for_extent(nullptr), 0);
  EXPECT_EQ(api().expr_arg(nullptr, 0), nullptr);
  EXPECT_EQ(api().buffer_name(nullptr).size, 0u);
}

TEST(HostApi, TensorExpressionsBuildAWorkingFunction) {
  mt_te_builder* b = nullptr;
  ASSERT_EQ(api().te_builder_create(&b), MT_OK);
  const mt_dtype f32{MT_DTYPE_FLOAT, 32, 1};
  const int64_t shape[2] = {4, 6};
  const mt_te_tensor* x = nullptr;
  ASSERT_EQ(api().te_placeholder(b, s("x"), f32, shape, 2, &x), MT_OK);
  struct Ctx {
    const mt_te_tensor* x;
  } ctx{x};
  // y[i, j] = x[i, j] * 2 + 1
  mt_te_compute_fn fn = [](void* user, mt_te_builder* tb, const mt_expr* const* axes, size_t n,
                           const mt_expr** out) -> mt_status {
    auto* c = static_cast<Ctx*>(user);
    const mt_expr *load = nullptr, *two = nullptr, *one = nullptr, *mul = nullptr;
    const mt_dtype f{MT_DTYPE_FLOAT, 32, 1};
    mt_status st = host_api()->te_load(tb, c->x, axes, n, &load);
    if (st == MT_OK) st = host_api()->te_float_imm(tb, 2.0, f, &two);
    if (st == MT_OK) st = host_api()->te_float_imm(tb, 1.0, f, &one);
    if (st == MT_OK) st = host_api()->te_binary(tb, MT_EXPR_MUL, load, two, &mul);
    if (st == MT_OK) st = host_api()->te_binary(tb, MT_EXPR_ADD, mul, one, out);
    return st;
  };
  const mt_te_tensor* y = nullptr;
  ASSERT_EQ(api().te_compute(b, s("y"), shape, 2, fn, &ctx, &y), MT_OK);
  EXPECT_EQ(str(api().buffer_name(api().te_tensor_buffer(y))), "y");
  mt_program* p = nullptr;
  ASSERT_EQ(api().te_build(b, s("affine"), &x, 1, &y, 1, &p), MT_OK);
  const Function& f = function_of(p);
  std::vector<NDArray> args = abi_test::interpret_on_random(f);
  for (int64_t i = 0; i < 24; ++i)
    EXPECT_FLOAT_EQ(static_cast<float>(args[1].get_double(i)),
                    static_cast<float>(args[0].get_double(i) * 2 + 1));
  api().program_release(p);

  // Expressions from outside the builder are refused; a failing callback's message arrives.
  const mt_expr* out = nullptr;
  int dummy = 0;
  EXPECT_EQ(api().te_not(b, reinterpret_cast<const mt_expr*>(&dummy), &out),
            MT_ERROR_INVALID_ARGUMENT);
  mt_te_compute_fn failing = [](void*, mt_te_builder*, const mt_expr* const*, size_t,
                                const mt_expr**) -> mt_status {
    host_api()->set_last_error(mt_str{"layer says no", 13});
    return MT_ERROR_UNKNOWN;
  };
  EXPECT_NE(api().te_compute(b, s("z"), shape, 2, failing, nullptr, &y), MT_OK);
  EXPECT_NE(std::string(api().last_error()).find("layer says no"), std::string::npos);
  api().te_builder_release(b);
}

TEST(HostApi, TraceAccessorsAndMutation) {
  auto sch = std::make_shared<Schedule>(make_workload("matmul(M=16,N=4,K=4)"), 5);
  LoopRV l = sch->get_loops(sch->all_blocks()[0])[0];
  auto fs = sch->sample_perfect_tile(l, 2, 16);
  sch->split(l, {fs[0], fs[1]});
  mt_trace* t = make_trace_handle(sch->trace());
  size_t idx = api().trace_num_instructions(t);
  for (size_t i = 0; i < api().trace_num_instructions(t); ++i) {
    mt_str k{};
    ASSERT_EQ(api().trace_instruction_kind(t, i, &k), MT_OK);
    if (str(k) == "sample_perfect_tile") idx = i;
  }
  ASSERT_LT(idx, api().trace_num_instructions(t));
  int64_t d[2] = {0, 0};
  size_t n = 0;
  ASSERT_EQ(api().trace_decision(t, idx, d, 2, &n), MT_OK);
  EXPECT_EQ(n, 2u);
  EXPECT_EQ(d[0] * d[1], 16);
  mt_trace* t2 = nullptr;
  int64_t nd[2] = {d[1], d[0]};
  ASSERT_EQ(api().trace_with_decision(t, idx, nd, 2, &t2), MT_OK);
  ASSERT_EQ(api().trace_decision(t2, idx, d, 2, &n), MT_OK);
  EXPECT_EQ(d[0], nd[0]);
  mt_str json{};
  ASSERT_EQ(api().trace_to_json(t2, &json), MT_OK);
  EXPECT_EQ(str(json), trace_of(t2).to_json());
  for (size_t i = 0; i < api().trace_num_instructions(t); ++i) {
    if (!trace_of(t).instructions()[i].decision) {
      EXPECT_EQ(api().trace_decision(t, i, d, 2, &n), MT_ERROR_NOT_FOUND);
    }
  }
  api().trace_release(t2);
  api().trace_release(t);
}

// ABI 1.4: list and string attributes and input counts, read against the core trace they
// come from; a wrong type or index is a status, not a crash.
TEST(HostApi, TraceAttributeAccessorsMatchTheTrace) {
  auto sch = std::make_shared<Schedule>(make_workload("matmul(M=16,N=4,K=4)"), 5);
  BlockRV b = sch->all_blocks()[0];
  sch->sample_categorical({0, 16, 64}, {0.2, 0.3, 0.5});
  sch->annotate(b, "meta_schedule.unroll_explicit", int64_t{16});
  sch->annotate(b, "some.key", std::string("text"));
  mt_trace* t = make_trace_handle(sch->trace());
  const Trace& tr = trace_of(t);
  size_t lists = 0, strings = 0;
  for (size_t i = 0; i < tr.size(); ++i) {
    const Instruction& inst = tr.instructions()[i];
    size_t n_in = 99;
    ASSERT_EQ(api().trace_num_inputs(t, i, &n_in), MT_OK);
    EXPECT_EQ(n_in, inst.inputs.size());
    for (size_t j = 0; j < inst.attrs.size(); ++j) {
      int64_t buf[8];
      size_t n = 0;
      mt_status st = api().trace_attr_ints(t, i, j, buf, 8, &n);
      if (const auto* v = std::get_if<std::vector<int64_t>>(&inst.attrs[j])) {
        ASSERT_EQ(st, MT_OK);
        EXPECT_EQ(std::vector<int64_t>(buf, buf + n), *v);
        ++lists;
      } else {
        EXPECT_EQ(st, MT_ERROR_INVALID_ARGUMENT);
      }
      mt_str s{};
      st = api().trace_attr_str(t, i, j, &s);
      if (const auto* v = std::get_if<std::string>(&inst.attrs[j])) {
        ASSERT_EQ(st, MT_OK);
        EXPECT_EQ(str(s), *v);
        ++strings;
      } else {
        EXPECT_EQ(st, MT_ERROR_INVALID_ARGUMENT);
      }
    }
    size_t n = 0;
    EXPECT_EQ(api().trace_attr_ints(t, i, inst.attrs.size(), nullptr, 0, &n),
              MT_ERROR_OUT_OF_RANGE);
  }
  EXPECT_GE(lists, 1u) << "the categorical's candidates";
  EXPECT_GE(strings, 2u) << "the annotation keys";
  size_t n = 0;
  EXPECT_EQ(api().trace_num_inputs(t, tr.size(), &n), MT_ERROR_OUT_OF_RANGE);
  api().trace_release(t);
}

} // namespace
} // namespace mt
