// The CUDA emulator's run time (ptx_emulator.h): fibers, barriers, mbarriers, TMA, cp.async and
// wgmma as the PTX ISA defines them.
#include "ptx_emulator.h"

#include <sys/mman.h>
#include <ucontext.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>

#include "cuda_builtins.h"
#include "emulated_tensor_map.h"

namespace mt_emu {

namespace {

struct WgmmaOp {
  std::vector<float*> regs;
  std::vector<float> d_in, snapshot;
  uint64_t desc_a = 0, desc_b = 0;
  bool scale_d = true, trans_a = false, trans_b = false, bf16 = false;
  int n = 0;
};

struct CpAsync {
  unsigned char* dst = nullptr;
  const unsigned char* src = nullptr;
  int bytes = 0;
};

struct Fiber {
  ucontext_t ctx{};
  Dim3 tid;
  int linear = 0;
  bool done = false;
  std::string waiting;                            // what it waits for, for the deadlock message
  std::vector<std::vector<WgmmaOp>> wgmma_groups; // committed, not complete; oldest first
  uint64_t wgmma_committed = 0;                   // groups committed so far
  std::vector<WgmmaOp> wgmma_open;
  std::vector<std::vector<CpAsync>> cp_groups;
  std::vector<CpAsync> cp_open;
  std::map<float*, float> pending_value; // a register's value once its pending products retire
  // Shared bytes its cp.async wrote (the generic proxy) since its last fence.proxy.async.
  std::vector<std::pair<size_t, size_t>> unfenced;
};

struct Mbarrier {
  int count = 0, pending = 0;
  int64_t tx = 0;
  uint64_t phase = 0; // completed phases
};

struct BarrierState {
  int arrived = 0, expected = 0;
  uint64_t generation = 0;
};

struct TmaCopy {
  unsigned dst = 0, bar = 0;
  const EmulatedTensorMap* map = nullptr;
  int64_t coords[4] = {};
};

constexpr size_t kSharedBytes = 256 * 1024; // what an 18-bit shared address reaches
constexpr size_t kStackBytes = 512 * 1024;

struct Launch {
  void (*entry)(void**) = nullptr;
  void** params = nullptr;
  Dim3 grid, block, block_idx;
  size_t dynamic_bytes = 0;
  unsigned char* smem = nullptr;
  size_t static_end = 0;
  std::map<int, size_t> static_arrays; // declaration -> offset
  size_t dynamic_at = kSharedBytes;    // where the dynamic pool starts
  std::vector<Fiber> fibers;
  std::vector<unsigned char*> stacks;
  Fiber* current = nullptr;
  ucontext_t scheduler{};
  std::mt19937_64 rng;
  uint64_t progress = 0;
  std::map<unsigned, Mbarrier> mbarriers;
  std::map<int, BarrierState> barriers;
  std::map<int, uint64_t> wgmma_completed; // per warpgroup: its groups complete so far
  std::vector<TmaCopy> tma_pending;
  // Per shared byte: the thread whose cp.async wrote it and that has not fenced the write for
  // the asynchronous proxy (wgmma's reads) since; -1 for none.
  std::vector<int> unfenced_writer;
  std::string error;
  uint64_t steps = 0, tma_copies = 0, wgmmas = 0, max_tma_in_flight = 0;
};

Launch*& launch() {
  static Launch* l = nullptr;
  return l;
}
Fiber& current() {
  return *launch()->current;
}

std::string where() {
  Launch& l = *launch();
  char buf[128];
  std::snprintf(buf, sizeof buf, "block (%u,%u,%u) thread (%u,%u,%u)", l.block_idx.x, l.block_idx.y,
                l.block_idx.z, current().tid.x, current().tid.y, current().tid.z);
  return buf;
}

// Stops the launch: the fiber never runs again.
[[noreturn]] void fail(const std::string& what) {
  Launch& l = *launch();
  if (l.error.empty()) l.error = where() + ": " + what;
  Fiber& f = current();
  f.done = true;
  swapcontext(&f.ctx, &l.scheduler);
  std::abort(); // never resumed
}

// Back to the scheduler; `why` says what the thread waits for ("" = it does not).
void yield(const std::string& why = "") {
  Launch& l = *launch();
  Fiber& f = current();
  f.waiting = why;
  swapcontext(&f.ctx, &l.scheduler);
  f.waiting.clear();
}

unsigned char* shared_at(uint64_t addr, size_t bytes, const char* what) {
  if (addr + bytes > kSharedBytes) {
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "%s: shared address 0x%llx (+%zu bytes) is outside shared memory", what,
                  static_cast<unsigned long long>(addr), bytes);
    fail(buf);
  }
  return launch()->smem + addr;
}

// A static shared array: one place a block for each declaration, whichever thread reaches it
// first and however often (a declaration in a loop is still one array).
void* shared_alloc_impl(int declaration, size_t bytes, size_t align) {
  Launch& l = *launch();
  auto it = l.static_arrays.find(declaration);
  if (it == l.static_arrays.end()) {
    size_t at = (l.static_end + align - 1) / align * align;
    it = l.static_arrays.emplace(declaration, at).first;
    l.static_end = at + bytes;
    if (l.static_end > l.dynamic_at) fail("static and dynamic shared memory exceed 256 KB");
  }
  return l.smem + it->second;
}

// Dynamic shared memory sits at the top of the window, aligned as asked.
unsigned char* dynamic_shared_impl(size_t align) {
  Launch& l = *launch();
  size_t at = (kSharedBytes - l.dynamic_bytes) / align * align;
  if (at < l.static_end) fail("static and dynamic shared memory exceed 256 KB");
  l.dynamic_at = at;
  return l.smem + at;
}

// ---- barriers ------------------------------------------------------------------------------

void bar_sync(int id, int expected) {
  Launch& l = *launch();
  BarrierState& b = l.barriers[id];
  if (b.arrived == 0)
    b.expected = expected;
  else if (b.expected != expected)
    fail("bar.sync " + std::to_string(id) + " with " + std::to_string(expected) +
         " threads while others count " + std::to_string(b.expected));
  const uint64_t gen = b.generation;
  ++l.progress;
  if (++b.arrived == b.expected) {
    b.arrived = 0;
    ++b.generation;
    return;
  }
  while (l.barriers[id].generation == gen)
    yield("barrier " + std::to_string(id) + " (" + std::to_string(b.arrived) + " of " +
          std::to_string(b.expected) + " arrived)");
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

Mbarrier& mbarrier(unsigned addr, const char* what) {
  shared_at(addr, 8, what);
  if (addr % 8) fail(std::string(what) + ": mbarrier not 8-byte aligned");
  auto it = launch()->mbarriers.find(addr);
  if (it == launch()->mbarriers.end())
    fail(std::string(what) + ": mbarrier at " + hex(addr) + " was never initialised");
  return it->second;
}

void mbarrier_settle(Mbarrier& b) {
  if (b.pending == 0 && b.tx == 0) {
    ++b.phase;
    b.pending = b.count;
  }
}

void mbarrier_arrive(unsigned addr, int64_t expect_bytes) {
  Mbarrier& b = mbarrier(addr, "mbarrier.arrive");
  ++launch()->progress;
  b.tx += expect_bytes;
  if (b.pending <= 0) fail("mbarrier.arrive on a phase that expects no more arrivals");
  --b.pending;
  mbarrier_settle(b);
}

// ---- TMA -----------------------------------------------------------------------------------

void tma_complete(const TmaCopy& c) {
  Launch& l = *launch();
  const EmulatedTensorMap& m = *c.map;
  const size_t row_bytes = static_cast<size_t>(m.box[0]) * m.element_bytes;
  size_t rows = 1;
  for (int d = 1; d < m.rank; ++d)
    rows *= m.box[d];
  const size_t total = row_bytes * rows;
  shared_at(c.dst, total, "cp.async.bulk.tensor");
  for (size_t r = 0; r < rows; ++r) {
    // The row's coordinates along dims 1.., and whether it lies inside the tensor.
    int64_t rest = static_cast<int64_t>(r), offset = 0;
    bool inside = true;
    for (int d = 1; d < m.rank; ++d) {
      int64_t g = c.coords[d] + rest % m.box[d];
      rest /= m.box[d];
      if (g < 0 || g >= static_cast<int64_t>(m.dims[d])) inside = false;
      offset += g * static_cast<int64_t>(m.strides[d]);
    }
    for (uint32_t e = 0; e < m.box[0]; ++e) {
      const int64_t g0 = c.coords[0] + e;
      size_t addr = c.dst + r * row_bytes + static_cast<size_t>(e) * m.element_bytes;
      if (m.swizzle_bytes == 128) addr ^= ((addr >> 7) & 7) << 4;
      unsigned char* dst = l.smem + addr;
      if (inside && g0 >= 0 && g0 < static_cast<int64_t>(m.dims[0]))
        std::memcpy(dst, m.base + offset + g0 * m.element_bytes, m.element_bytes);
      else
        std::memset(dst, 0, m.element_bytes);
    }
  }
  auto it = l.mbarriers.find(c.bar);
  if (it == l.mbarriers.end()) {
    l.error = "a TMA copy completed on an mbarrier that was never initialised";
    return;
  }
  it->second.tx -= static_cast<int64_t>(total);
  mbarrier_settle(it->second);
  ++l.progress;
}

void tma_issue(const std::vector<Op>& ops, int rank) {
  Launch& l = *launch();
  TmaCopy c;
  c.dst = static_cast<unsigned>(ops[0].value);
  c.map = reinterpret_cast<const EmulatedTensorMap*>(ops[1].value);
  if (c.map->magic != EmulatedTensorMap{}.magic) fail("cp.async.bulk.tensor: not a tensor map");
  if (c.map->rank != rank) fail("cp.async.bulk.tensor: the map's rank differs from the copy's");
  if (c.map->swizzle_bytes == 128 && c.map->box[0] * c.map->element_bytes > 128)
    fail("cp.async.bulk.tensor: a 128-byte swizzle needs a box of at most 128 bytes a row");
  if (c.dst % 128) fail("cp.async.bulk.tensor: shared destination not 128-byte aligned");
  for (int d = 0; d < rank; ++d)
    c.coords[d] = static_cast<int32_t>(ops[2 + d].value);
  c.bar = static_cast<unsigned>(ops[2 + rank].value);
  mbarrier(c.bar, "cp.async.bulk.tensor");
  l.tma_pending.push_back(c);
  l.max_tma_in_flight = std::max<uint64_t>(l.max_tma_in_flight, l.tma_pending.size());
  ++l.tma_copies;
  ++l.progress;
}

// ---- cp.async ------------------------------------------------------------------------------

void cp_async_retire(Fiber& f, size_t keep) {
  Launch& l = *launch();
  while (f.cp_groups.size() > keep) {
    for (const CpAsync& c : f.cp_groups.front()) {
      std::memcpy(c.dst, c.src, c.bytes);
      const size_t at = static_cast<size_t>(c.dst - l.smem);
      std::fill_n(l.unfenced_writer.begin() + static_cast<long>(at), c.bytes, f.linear);
      f.unfenced.emplace_back(at, static_cast<size_t>(c.bytes));
    }
    f.cp_groups.erase(f.cp_groups.begin());
  }
}

// fence.proxy.async: the thread's generic-proxy writes become visible to the asynchronous proxy.
void proxy_fence(Fiber& f) {
  Launch& l = *launch();
  for (const auto& [at, bytes] : f.unfenced)
    for (size_t b = at; b < at + bytes; ++b)
      if (l.unfenced_writer[b] == f.linear) l.unfenced_writer[b] = -1;
  f.unfenced.clear();
}

// ---- wgmma ---------------------------------------------------------------------------------

float operand_value(uint64_t desc, int mn, int k, bool mn_major, bool bf16) {
  const uint64_t start = (desc & 0x3FFF) << 4, lbo = ((desc >> 16) & 0x3FFF) << 4,
                 sbo = ((desc >> 32) & 0x3FFF) << 4, swizzle = desc >> 62;
  uint64_t addr;
  if (swizzle == 0) { // core matrices of 8 rows x 16 bytes: LBO along k, SBO along m or n
    addr = start + (k / 8) * lbo + (mn / 8) * sbo +
           (mn_major ? (k % 8) * 16 + (mn % 8) * 2 : (mn % 8) * 16 + (k % 8) * 2);
  } else if (swizzle == 1) { // 128-byte rows in 1024-byte atoms of 8 rows, chunks xor-ed
    addr = mn_major ? start + (mn / 64) * lbo + (k / 8) * sbo + (k % 8) * 128 + (mn % 64) * 2
                    : start + (mn / 8) * sbo + (mn % 8) * 128 + k * 2;
    addr ^= ((addr >> 7) & 7) << 4;
  } else {
    fail("wgmma: swizzle mode " + std::to_string(swizzle) + " is not emulated");
  }
  uint16_t bits;
  std::memcpy(&bits, shared_at(addr, 2, "wgmma operand"), 2);
  // wgmma reads through the asynchronous proxy: a cp.async write not yet fenced by its thread
  // may not be what it sees.
  if (int writer = launch()->unfenced_writer[addr]; writer >= 0)
    fail("wgmma reads shared memory (" + hex(addr) + ") that thread " + std::to_string(writer) +
         " wrote with cp.async and has not made visible with fence.proxy.async");
  return bf16 ? __bfloat162float(__nv_bfloat16{bits}) : __half2float(__half{bits});
}

// The thread's fragment of D = (scale_d ? D : 0) + A * B for m64nNk16 with f32 accumulators:
// warp w of the warpgroup holds rows 16w..16w+15; per 8 columns, registers (row, 2 columns)
// and (row + 8, the same 2).
std::vector<float> wgmma_product(const WgmmaOp& op, int lane_in_group) {
  const int w = lane_in_group / 32, lane = lane_in_group % 32;
  std::vector<float> out(op.regs.size());
  for (size_t i = 0; i < op.regs.size(); ++i) {
    const int row = 16 * w + lane / 4 + 8 * static_cast<int>((i >> 1) & 1);
    const int col = 8 * static_cast<int>(i / 4) + 2 * (lane % 4) + static_cast<int>(i & 1);
    float sum = 0;
    for (int k = 0; k < 16; ++k)
      sum += operand_value(op.desc_a, row, k, op.trans_a, op.bf16) *
             operand_value(op.desc_b, col, k, op.trans_b, op.bf16);
    out[i] = (op.scale_d ? op.d_in[i] : 0.0f) + sum;
  }
  return out;
}

// What the registers will hold once the thread's products still in flight complete.
void update_pending_values(Fiber& f) {
  f.pending_value.clear();
  for (const auto& g : f.wgmma_groups)
    for (const WgmmaOp& op : g)
      for (size_t i = 0; i < op.regs.size(); ++i)
        f.pending_value[op.regs[i]] = op.snapshot[i];
  for (const WgmmaOp& op : f.wgmma_open)
    for (size_t i = 0; i < op.regs.size(); ++i)
      f.pending_value[op.regs[i]] = op.snapshot[i];
}

// A wgmma group is the warpgroup's: it runs once all 128 threads have issued and committed it,
// and completes for all of them at once (a thread's wait_group returning means the group's whole
// product is done, which a release by one thread of the warpgroup relies on, as CUTLASS's
// consumer release does). Its operands are read now, and must be what each thread saw when it
// issued its part.
void wgmma_complete_group(int warpgroup) {
  Launch& l = *launch();
  for (int t = 0; t < 128; ++t) {
    Fiber& f = l.fibers[static_cast<size_t>(warpgroup * 128 + t)];
    for (WgmmaOp& op : f.wgmma_groups.front()) {
      std::vector<float> now = wgmma_product(op, t);
      if (std::memcmp(now.data(), op.snapshot.data(), now.size() * sizeof(float)) != 0)
        fail("the shared tiles of a wgmma changed between the issue by thread " +
             std::to_string(f.linear) +
             " and the group's completion (a slot overwritten while "
             "the product was in flight, or read before it was filled)");
      for (size_t i = 0; i < now.size(); ++i)
        *op.regs[i] = now[i];
    }
    f.wgmma_groups.erase(f.wgmma_groups.begin());
    update_pending_values(f);
  }
  ++l.wgmma_completed[warpgroup];
  ++l.progress;
}

// wgmma.wait_group `keep`: the thread's groups but the newest `keep` complete; a group whose
// other threads have not all issued it yet is waited for.
void wgmma_wait(Fiber& f, uint64_t keep) {
  Launch& l = *launch();
  const int warpgroup = f.linear / 128;
  if (static_cast<size_t>(warpgroup * 128 + 128) > l.fibers.size())
    fail("wgmma in a warpgroup the block does not fill");
  const uint64_t needed = f.wgmma_committed > keep ? f.wgmma_committed - keep : 0;
  for (;;) {
    const uint64_t done = l.wgmma_completed[warpgroup];
    if (done >= needed) return;
    bool all_issued = true;
    for (int t = 0; t < 128 && all_issued; ++t)
      all_issued = l.fibers[static_cast<size_t>(warpgroup * 128 + t)].wgmma_committed > done;
    if (all_issued)
      wgmma_complete_group(warpgroup);
    else
      yield("wgmma group " + std::to_string(done) + " of warpgroup " + std::to_string(warpgroup) +
            " (other threads have not issued it)");
  }
}

void wgmma_issue(const char* text, const std::vector<Op>& ops) {
  Fiber& f = current();
  WgmmaOp op;
  const char* shape = std::strstr(text, ".m64n");
  op.n = std::atoi(shape + 5);
  op.bf16 = std::strstr(text, ".bf16") != nullptr;
  const size_t regs = static_cast<size_t>(op.n / 2);
  if (ops.size() != regs + 3) fail("wgmma: operand count differs from the shape's");
  for (size_t i = 0; i < regs; ++i) {
    op.regs.push_back(ops[i].f32());
    auto it = f.pending_value.find(op.regs.back());
    op.d_in.push_back(it != f.pending_value.end() ? it->second : *op.regs.back());
  }
  op.desc_a = ops[regs].value;
  op.desc_b = ops[regs + 1].value;
  op.scale_d = ops[regs + 2].value != 0;
  // "..., p, scale-a, scale-b, tnsp-a, tnsp-b;"
  int sa = 0, sb = 0, ta = 0, tb = 0;
  const char* tail = std::strstr(text, ", p, ");
  if (!tail || std::sscanf(tail, ", p, %d, %d, %d, %d", &sa, &sb, &ta, &tb) != 4)
    fail("wgmma: cannot read the immediates");
  if (sa != 1 || sb != 1) fail("wgmma: negated operands are not emulated");
  op.trans_a = ta != 0;
  op.trans_b = tb != 0;
  op.snapshot = wgmma_product(op, f.linear % 128);
  for (size_t i = 0; i < regs; ++i)
    f.pending_value[op.regs[i]] = op.snapshot[i];
  f.wgmma_open.push_back(std::move(op));
  ++launch()->wgmmas;
}

// ---- the asm statements --------------------------------------------------------------------

int number_after(const char* text, const char* key) {
  const char* at = std::strstr(text, key);
  if (!at) fail(std::string("cannot read '") + key + "' in: " + text);
  return std::atoi(at + std::strlen(key));
}

bool has(const char* text, const char* what) {
  return std::strstr(text, what) != nullptr;
}

void ptx_impl(const char* text, const std::vector<Op>& ops) {
  Launch& l = *launch();
  Fiber& f = current();
  ++l.steps;
  const char* t = text;
  while (*t == ' ' || *t == '\n')
    ++t;
  if (!*t) return; // a register fence for the compiler
  if (has(t, "wgmma.mma_async")) return wgmma_issue(t, ops);
  if (has(t, "wgmma.fence")) return;
  if (has(t, "wgmma.commit_group")) {
    f.wgmma_groups.push_back(std::move(f.wgmma_open));
    f.wgmma_open.clear();
    ++f.wgmma_committed;
    return;
  }
  if (has(t, "wgmma.wait_group")) {
    if (!f.wgmma_open.empty()) fail("wgmma.wait_group with products not yet committed");
    return wgmma_wait(f, static_cast<uint64_t>(number_after(t, "wgmma.wait_group.sync.aligned ")));
  }
  if (has(t, "mbarrier.init")) {
    Mbarrier b;
    b.count = b.pending = static_cast<int>(ops[1].value);
    shared_at(ops[0].value, 8, "mbarrier.init");
    l.mbarriers[static_cast<unsigned>(ops[0].value)] = b;
    ++l.progress;
    return;
  }
  if (has(t, "mbarrier.arrive.expect_tx"))
    return mbarrier_arrive(static_cast<unsigned>(ops[0].value), static_cast<int64_t>(ops[1].value));
  if (has(t, "mbarrier.arrive")) return mbarrier_arrive(static_cast<unsigned>(ops[0].value), 0);
  if (has(t, "mbarrier.try_wait.parity")) {
    const unsigned addr = static_cast<unsigned>(ops[1].value);
    const uint64_t parity = ops[2].value & 1;
    const Mbarrier& b = mbarrier(addr, "mbarrier.try_wait");
    const bool done = (b.phase % 2) != parity;
    *static_cast<unsigned*>(ops[0].out) = done ? 1u : 0u;
    if (!done)
      yield("mbarrier " + hex(addr) + " parity " + std::to_string(parity) + " (phase " +
            std::to_string(b.phase) + ", " + std::to_string(b.pending) + " arrivals and " +
            std::to_string(b.tx) + " bytes outstanding)");
    return;
  }
  if (has(t, "cp.async.bulk.tensor."))
    return tma_issue(ops, number_after(t, "cp.async.bulk.tensor."));
  if (has(t, "cp.async.commit_group")) {
    f.cp_groups.push_back(std::move(f.cp_open));
    f.cp_open.clear();
    return;
  }
  if (has(t, "cp.async.wait_group")) return cp_async_retire(f, static_cast<size_t>(ops[0].value));
  if (has(t, "cp.async.wait_all")) {
    f.cp_groups.push_back(std::move(f.cp_open));
    f.cp_open.clear();
    return cp_async_retire(f, 0);
  }
  if (has(t, "cp.async.c")) { // cp.async.cg / .ca .shared.global [dst], [src], bytes
    CpAsync c;
    c.bytes = number_after(std::strstr(t, "], ") + 3, "], "); // [%0], [%1], bytes
    c.dst = shared_at(ops[0].value, static_cast<size_t>(c.bytes), "cp.async");
    c.src = reinterpret_cast<const unsigned char*>(ops[1].value);
    if (ops[0].value % static_cast<uint64_t>(c.bytes) ||
        ops[1].value % static_cast<uint64_t>(c.bytes))
      fail("cp.async: addresses not aligned to the copy's size");
    f.cp_open.push_back(c);
    return;
  }
  if (has(t, "bar.sync ")) {
    int id = 0, n = 0;
    if (std::sscanf(std::strstr(t, "bar.sync ") + 9, "%d, %d", &id, &n) != 2)
      fail(std::string("cannot read bar.sync in: ") + t);
    return bar_sync(id, n);
  }
  if (has(t, "fence.proxy.async")) return proxy_fence(f);
  if (has(t, "fence.") || has(t, "setmaxnreg.")) return;
  fail(std::string("PTX the emulator does not know: ") + t);
}

// ---- the scheduler -------------------------------------------------------------------------

void fiber_main() {
  Launch& l = *launch();
  l.entry(l.params);
  Fiber& f = current();
  if (!f.wgmma_open.empty() || !f.wgmma_groups.empty())
    fail("the thread ended with wgmma products in flight");
  cp_async_retire(f, 0);
  f.done = true;
  ++l.progress;
}

std::string deadlock_message() {
  Launch& l = *launch();
  std::string m = "deadlock: every thread waits and no copy is in flight;";
  int shown = 0;
  for (const Fiber& f : l.fibers)
    if (!f.done && shown++ < 4)
      m += " thread (" + std::to_string(f.tid.x) + "," + std::to_string(f.tid.y) + "," +
           std::to_string(f.tid.z) + ") waits on " + f.waiting + ";";
  return m;
}

// A fresh block: shared memory poisoned, no barrier or copy left from the last one, a fiber a
// thread starting at the kernel's entry.
void start_block() {
  Launch& l = *launch();
  const unsigned n = l.block.x * l.block.y * l.block.z;
  l.fibers.assign(n, Fiber{});
  l.mbarriers.clear();
  l.barriers.clear();
  l.wgmma_completed.clear();
  l.tma_pending.clear();
  l.unfenced_writer.assign(kSharedBytes, -1);
  l.static_end = 0;
  l.static_arrays.clear();
  l.dynamic_at = kSharedBytes;
  std::memset(l.smem, 0xFF, kSharedBytes);
  while (l.stacks.size() < n)
    l.stacks.push_back(static_cast<unsigned char*>(
        mmap(nullptr, kStackBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)));
  for (unsigned i = 0; i < n; ++i) {
    Fiber& f = l.fibers[i];
    f.linear = static_cast<int>(i);
    f.tid = {i % l.block.x, (i / l.block.x) % l.block.y, i / (l.block.x * l.block.y)};
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = l.stacks[i];
    f.ctx.uc_stack.ss_size = kStackBytes;
    f.ctx.uc_link = &l.scheduler;
    makecontext(&f.ctx, fiber_main, 0);
  }
}

void land_copy(size_t k) {
  Launch& l = *launch();
  TmaCopy c = l.tma_pending[k];
  l.tma_pending.erase(l.tma_pending.begin() + static_cast<long>(k));
  tma_complete(c);
}

// Each live thread once, in an order drawn from the seed, until it waits or ends; a copy in
// flight may land after any of them. False when no thread was left.
bool run_round(std::vector<unsigned>& order) {
  Launch& l = *launch();
  bool live = false;
  std::shuffle(order.begin(), order.end(), l.rng);
  for (unsigned i : order) {
    Fiber& f = l.fibers[i];
    if (f.done) continue;
    live = true;
    l.current = &f;
    swapcontext(&l.scheduler, &f.ctx);
    if (!l.error.empty()) return true;
    if (!l.tma_pending.empty() && l.rng() % 4 == 0) land_copy(l.rng() % l.tma_pending.size());
    if (!l.error.empty()) return true;
  }
  return live;
}

bool run_block() {
  Launch& l = *launch();
  start_block();
  std::vector<unsigned> order(l.fibers.size());
  for (unsigned i = 0; i < order.size(); ++i)
    order[i] = i;
  for (int idle_rounds = 0;;) {
    const uint64_t before = l.progress;
    if (!run_round(order)) break;
    if (!l.error.empty()) return false;
    if (l.progress != before) {
      idle_rounds = 0;
    } else if (!l.tma_pending.empty()) { // nobody can move before a copy lands
      land_copy(0);
      if (!l.error.empty()) return false;
    } else if (++idle_rounds >= 2) {
      l.error = "block (" + std::to_string(l.block_idx.x) + "," + std::to_string(l.block_idx.y) +
                "," + std::to_string(l.block_idx.z) + "): " + deadlock_message();
      return false;
    }
  }
  if (!l.tma_pending.empty()) {
    l.error = "the block ended with TMA copies in flight";
    return false;
  }
  return true;
}

} // namespace

// ---- what the rewritten kernels call (cuda_builtins.h) -------------------------------------

void ptx(const char* text, std::vector<Op> ops) {
  ptx_impl(text, ops);
}
void* shared_alloc(int declaration, size_t bytes, size_t align) {
  return shared_alloc_impl(declaration, bytes, align);
}
unsigned char* dynamic_shared(size_t align) {
  return dynamic_shared_impl(align);
}
size_t shared_offset(const void* p) {
  const unsigned char* c = static_cast<const unsigned char*>(p);
  Launch& l = *launch();
  if (c < l.smem || c >= l.smem + kSharedBytes)
    fail("__cvta_generic_to_shared of an address outside shared memory");
  return static_cast<size_t>(c - l.smem);
}
const Dim3& thread_index() {
  return current().tid;
}
const Dim3& block_index() {
  return launch()->block_idx;
}
const Dim3& block_dim() {
  return launch()->block;
}
const Dim3& grid_dim() {
  return launch()->grid;
}
void syncthreads() {
  const Dim3& b = launch()->block;
  bar_sync(0, static_cast<int>(b.x * b.y * b.z));
}
void trap() {
  fail("trap");
}

std::string run_grid(void (*entry)(void**), void** params, const unsigned grid[3],
                     const unsigned block[3], size_t dynamic_shared_bytes, uint64_t seed,
                     LaunchStats* stats) {
  static unsigned char* smem = static_cast<unsigned char*>(
      mmap(nullptr, kSharedBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  if (launch()) return "run_grid: a launch is already running";
  Launch l;
  l.entry = entry;
  l.params = params;
  l.grid = {grid[0], grid[1], grid[2]};
  l.block = {block[0], block[1], block[2]};
  l.dynamic_bytes = dynamic_shared_bytes;
  l.smem = smem;
  l.rng.seed(seed);
  launch() = &l;
  bool ok = true;
  for (unsigned z = 0; ok && z < grid[2]; ++z)
    for (unsigned y = 0; ok && y < grid[1]; ++y)
      for (unsigned x = 0; ok && x < grid[0]; ++x) {
        l.block_idx = {x, y, z};
        ok = run_block();
      }
  for (unsigned char* s : l.stacks)
    munmap(s, kStackBytes);
  launch() = nullptr;
  if (stats) {
    stats->ptx += l.steps;
    stats->tma_copies += l.tma_copies;
    stats->wgmmas += l.wgmmas;
    stats->max_tma_in_flight = std::max(stats->max_tma_in_flight, l.max_tma_in_flight);
  }
  return ok ? std::string() : l.error;
}

} // namespace mt_emu
