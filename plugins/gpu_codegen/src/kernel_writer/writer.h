// The writer of one kernel's source text, shared by the files of this folder: each holds the
// part of KernelWriter named after it (names, expressions, barriers, loops, tensor cores, TMA,
// the producer warpgroup, ...). Private to gpu_codegen; kernel_writer.hpp is the interface.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cross_thread_reduction.h"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "metatune/gpu_codegen/shared_layout.hpp"
#include "metatune/sdk/index_analysis.hpp"
#include "producer_warpgroup.h"
#include "shared_access.h"
#include "tensor_op.h"
#include "tma_copy.h"
#include "vector_copy.h"

namespace mt::gpu_codegen::writer {

// In the used-helpers set: the source uses f16 (the dialect's f16 prologue is emitted), tensor
// cores (their header).
inline constexpr const char* kF16 = "<f16>";
inline constexpr const char* kTensorCores = "<tensor cores>";
inline constexpr const char* kAsyncCopies = "<async copies>";
inline constexpr const char* kGroupMma = "<warpgroup mma>";
inline constexpr const char* kTma = "<tma>";
inline constexpr const char* kTmaProducer = "<tma producer>";
inline const std::string kTmaOfRank = "<tma of rank> ";           // + the rank
inline const std::string kAsyncCopyOf = "<async copy of bytes> "; // + the size

// Warp specialisation: the consumers' hardware barrier (0 is __syncthreads'); the most threads
// a block of warpgroups (tensor_op.h's kWarpgroupThreads) may have; the register file an SM
// gives a block, what the producer keeps a thread (CUTLASS's choice too) and the most a thread
// may hold.
inline constexpr int64_t kConsumerBarrier = 1;
inline constexpr int64_t kMaxSpecialisedThreads = 1024;
inline constexpr int64_t kRegisterFile = 65536;
inline constexpr int64_t kProducerRegisters = 40;
inline constexpr int64_t kMaxThreadRegisters = 256;

using P::ExprKind;
using P::StmtKind;

class KernelWriter {
public:
  KernelWriter(const KernelPlan& plan, const Kernel& kernel, const Dialect& d,
               std::set<std::string>& used_helpers)
      : plan_(plan), kernel_(kernel), d_(d), idx_(plan.index32 ? "int" : d.int64_type()),
        used_helpers_(used_helpers) {}

  std::string write();

  // The launch: the plan's, with one more warpgroup along threadIdx.y where a producer
  // warpgroup issues the copies (after write()).
  LaunchDims launch_dims() const;
  // Bytes of dynamic shared memory the kernel's launch must give it (after write()).
  int64_t dynamic_shared_bytes() const { return dynamic_shared_bytes_; }
  // The tensor maps its TMA copies read, in parameter order (after write()).
  std::vector<TensorMapSpec> tensor_maps() const;

private:
  // The shared arrays at kernel scope: the tiles, then the reductions' scratch.
  void declare_shared(std::ostream& os);
  // Bytes of an element of dtype t as a shared array holds it: f16/bf16 in float unless held in
  // their own type (`own_type`, held_in_own_type).
  int64_t held_bytes(P::DType t, bool own_type) const;

  // ---- names ---------------------------------------------------------------------------------
  static std::string sanitize(const std::string& s);
  std::string unique(const std::string& base, int64_t id,
                     std::unordered_map<int64_t, std::string>& names);
  std::string var_name(const P::Expr& v) { return unique(v->name, v->var_id, var_names_); }
  std::string buffer_name(const P::Buffer& b) { return unique(b->name, b->id, buffer_names_); }
  std::string fresh(const std::string& base);

  // ---- expressions ---------------------------------------------------------------------------
  std::string int_type(P::DType t) const;

  // The type a value of dtype t is computed and held in: f16 and bf16 in float (only device
  // memory stores them as such).
  std::string type_of(P::DType t) const;
  static bool is_half(P::DType t) { return t.is_float() && t.bits == 16; }
  // Where f16/bf16 are held as such (elsewhere in float, type_of): device memory, the shared
  // arrays tensor cores load from, and every shared array where the dialect says so.
  bool held_in_own_type(const P::Buffer& b) const;
  std::string storage_type(const P::Buffer& b) const;

  // Element `index` of `b` as a value of type_of(dtype), and the statement writing `value` there
  // (without its semicolon): f16/bf16 converted where held in their own type.
  std::string read_element(const P::Buffer& b, const std::string& index);
  std::string write_element(const P::Buffer& b, const std::string& index, std::string value);

  // A result of dtype f16/bf16 rounded to it.
  std::string rounded(P::DType t, const std::string& x);

  // Whether an integer expression is never negative (loop variables are not), so that floor
  // division and modulo by a positive constant can be C's.
  bool non_negative(const P::Expr& e) const;

  std::string helper(const std::string& base, P::DType t);

  std::string float_literal(double v, P::DType t);

  std::string flat_index(const P::Buffer& b, const std::vector<P::Expr>& indices);

  // The layout of a shared array wgmma reads (tensor_op.h); nullopt for every other array.
  std::optional<CoreMatrixLayout> core_matrix_layout(const P::Buffer& b) const;

  std::string row_major_index(const P::Buffer& b, const std::vector<P::Expr>& indices);

  // tensor_op.h's Swizzle128 offset written with the exclusive or itself: the same value as
  // core_matrix_offset's, whose xor is spelled in sums and remainders for the vector-copy
  // analysis, in a form the compilers fold into a few instructions. The row and column are
  // indices of the buffer, never negative, so C's division and remainder are the floor ones.
  std::string swizzled_index(const P::Buffer& b, const std::vector<P::Expr>& indices);

  // An expression where nothing binds tighter around it (a condition, a right-hand side):
  // without the outermost parentheses, which compilers warn about in `if ((a == b))`.
  std::string bare(const P::Expr& e);

  std::string expr(const P::Expr& e);

  std::string expr_in_float(const P::Expr& e);

  std::string combine(ExprKind k, P::DType t, const std::string& x, const std::string& y);

  std::string identity(ExprKind k, P::DType t);

  // ---- statements ----------------------------------------------------------------------------
  void line(const std::string& s);

  bool visible(const P::Buffer& b) const { return !private_.count(b->id); }

  static bool uses_var_anywhere(const P::Stmt& s, int64_t var_id);

  // The stores that cross-thread reductions turn into register arithmetic, known before any
  // barrier is placed (they touch no memory, so they hand nothing between threads).
  void preregister_reductions();

  // Whether an index uses a variable of every thread dimension the block has (more than one
  // thread along it): only then is the same index the same thread.
  bool tells_threads_apart(const std::vector<P::Expr>& indices) const;

  Accesses accesses(const P::Stmt& s);

  // `fence_after`: the wgmma fence follows the barrier (else the caller writes it later).
  void barrier(Accesses& pending, bool uniform, const std::string& why, bool fence_after = true);

  // Every path from the accumulator's fill to a product crosses a barrier, a pipelined loop's
  // fetch or the fence written at the product itself: one fence per k-tile, not one per
  // product. Written right before the products' nest: ptxas injects a warpgroup.arrive of its
  // own (note C7519) when other code lies between the fence and the products.
  void group_mma_fence();

  void commit_group_mmas();

  // Before a barrier in a kernel with warpgroup MMAs: this thread's wgmmas, which read shared
  // memory asynchronously, are done (the tiles may be overwritten after the barrier), and its
  // ordinary and cp.async writes to shared memory are made visible to the asynchronous proxy
  // that the next wgmmas read through.
  void group_mma_quiesce();

  std::string describe(const P::Stmt& s);

  void seq(const std::vector<P::Stmt>& items, Accesses& pending, bool uniform);

  void stmt(const P::Stmt& s, Accesses& pending, bool uniform);

  void stmt_for(const P::Stmt& s, Accesses& pending, bool uniform);

  bool depends_on_thread(const P::Expr& e) const;

  // A vectorised loop that copies consecutive elements (vector_copy.h) as one wide move, where
  // the dialect has them and both arrays hold the elements in their own type.
  bool vector_copy(const P::Stmt& loop, Accesses& pending);

  void serial_loop(const P::Stmt& s, Accesses& pending, bool uniform);

  static int64_t spare_slots(const P::Stmt& loop);
  // The stages of a loop that lowering pipelined (core's software_pipeline.h), 0 if it is not.
  static int64_t pipeline_stages(const P::Stmt& loop);

  void async_line(const std::string& text);

  // A pipelined loop's body, with one barrier an iteration (CUTLASS's multistage order): the
  // wait until this iteration's tile -- fetched S-1 iterations ago, or by the prologue -- has
  // landed (at most the newest S-2 groups still in flight), the barrier that makes it every
  // thread's and that every thread passes only once done with the previous iteration's reads;
  // then the fetch ahead (statement 0, its copies issued asynchronously where the dialect can,
  // committed as one group), which overwrites the slot those reads used (software_pipeline.h:
  // iteration k fetches into slot k - 1 - spare), and the reads of this iteration's slot, which
  // the fetch does not touch -- so its writes are not among the accesses the reads are checked
  // against. The barrier also covers whatever else the iterations hand each other: it
  // separates every statement of one iteration from every statement of the next.
  void pipelined_body(const P::Stmt& body, int64_t stages, Accesses& pending, bool uniform,
                      const std::string& var);

  // A vthread loop, as TVM injects virtual threads: the virtual threads are independent like
  // threads, so their statements may interleave. What does not use the virtual thread -- the
  // cooperative fetch of a shared tile, which MultiLevelTiling places inside the vthread loop
  // and whose region covers every virtual thread -- runs once instead of once per virtual
  // thread (with one barrier), and per-thread arrays allocated under the loop get one copy per
  // virtual thread. A serial loop would be correct too, only slower; the interpreter runs the
  // loop serially, so the tests compare the two.
  void vthread_loop(const P::Stmt& s, Accesses& pending, bool uniform);

  // Whether the virtual threads of the loop being injected may interleave: a statement that does
  // not use them runs once, so it must write what it would write every time (not read what it
  // writes); one that does must keep its result apart per virtual thread (in an array of its
  // own, or at an index that uses the virtual thread), or another would overwrite it between
  // its write and its read.
  bool injectable(const P::Stmt& body);

  // Whether `s` uses the virtual thread: its variable, or an array allocated under the loop.
  bool depends_on_vthread(const P::Stmt& s);

  // A statement written once under a vthread loop although parts of it use the virtual
  // thread: a sequence, a loop or an allocation holding some statement that does not (those
  // parts then run once; the others loop over the virtual threads inside).
  bool opens_once(const P::Stmt& s);

  // A serial loop (the reduction's outer part, as CrossThreadReduction splits it) whose whole
  // body is a loop reducing across threads into an element the serial loop does not choose:
  // every thread then accumulates its share over all the serial iterations and the block
  // combines once, instead of once per iteration (same result: the combiner is associative).
  bool reduces_across_threads_inside(const P::Stmt& serial);

  // `around`: a serial loop to run inside the thread scope, around the body (see above).
  void thread_loop(const P::Stmt& s, Accesses& pending, bool uniform,
                   const P::Stmt& around = nullptr);

  const P::Buffer& buffer_of(const P::Stmt& store) { return store->buffer; }

  // A per-thread array allocated outside the loops bound to some thread dimension but used
  // inside them: in the serial program one array that all those threads share, on a GPU one per
  // thread. Right only where each thread touches what it wrote itself (a reduction's target,
  // a thread-invariant index); refused where threads would read each other's elements.
  void check_private_to_threads(const P::Stmt& alloc);

  // A store outside every loop of some thread dimension of the block runs in each of its
  // threads, where the serial program runs it once: harmless when they all write the same value
  // (it reads neither its own buffer nor a thread's private array), wrong otherwise.
  void check_runs_once_per_element(const P::Stmt& s);

  void store(const P::Stmt& s, Accesses& pending);

  // A store that copies an f16/bf16 element between two arrays holding it in the same type:
  // the element itself, not a round trip through float (which costs two conversions per
  // element in a cooperative fetch one lane wide). Empty when the store is anything else.
  std::string half_copy_source(const P::Stmt& s);

  // The accumulators' registers pinned where they are (CUTLASS's warpgroup_fence_operand):
  // after a TMA issue, a branch of one thread, ptxas otherwise moves them across the fence and
  // injects a warpgroup.arrive of its own (note C7519).
  void accumulator_fences();

  // ---- TMA copies (tma_copy.h)
  // ------------------------------------------------------------------- The pipelined fetches of
  // the swizzled wgmma operands whose operation asks for TMA, each recognised as a box copy, or
  // none at all: every fetch of such a buffer must be one, and the kernel's one pipeline must run
  // once (under no serial loop), because the barriers' phases count its tiles from the start of the
  // kernel. Otherwise the fetches stay the threads' own copies, which is the same program.
  void find_tma();

  // ---- warp specialisation (producer_warpgroup.h)
  // ------------------------------------------------------------------- Asked for by an
  // operation, done where every operand tile is a TMA copy, the block is whole warpgroups along
  // threadIdx.y (x = 128) with room for one more, and the pipeline's shape allows it (the
  // plan); otherwise the kernel stays the block's own copies and says why in a comment.
  void find_producer();

  // The kernel as two roles: the producer warpgroup (threadIdx.y one past the schedule's)
  // gives its registers to the consumers where three or more warpgroups share the register
  // file, and its first thread issues every copy in tile order, each into a slot the consumers
  // have handed back; the consumers run the schedule without the copies.
  void warp_specialised(Accesses& pending);

  // Three warpgroups or more share the register file (at most 168 registers a thread): the
  // producer gives its registers to the consumers.
  bool gives_registers() const { return producer_ && kernel_.dims.block[1] + 1 >= 3; }

  bool contains_tma(const P::Stmt& s) const;

  // The producer's part of `s`: the statements on the way to the copies (their shape is
  // producer_warpgroup.h's plan), the thread indices taken as 0.
  void producer_stmt(const P::Stmt& s);

  // Whether the producer's part of `s` reads variable `var`.
  bool producer_reads(const P::Stmt& s, int64_t var) const;

  void producer_loop(const P::Stmt& s);

  // A consumer's pipelined iteration: wait for the tile, multiply, and hand back the slot of
  // the products now complete (those of `spare` iterations ago stay in flight).
  void consumer_body(const std::vector<P::Stmt>& items, Accesses& pending, const std::string& var);

  struct TensorMap {
    std::string name;
    TensorMapSpec spec;
  };

  TensorMap tensor_map(const TmaCopy& c);

  // The barriers' initialisation, once at the kernel's start by one thread, before any thread
  // waits on them or a copy counts on them.
  void init_tma_barriers();

  // Thread (0, 0, 0) of the block.
  std::string leader_condition() const;

  // A fetch nest as its TMA box copies: issued by one thread, each box's coordinates and
  // shared-memory start the nest's indices at the box's first element. A dialect without TMA
  // gets the same boxes copied by every thread of the block, element (r, c) of a box to where
  // TMA's 128-byte swizzle puts it -- written here from that definition, apart from the layout
  // wgmma reads (tensor_op.h), so that PoCL checks the two against each other and the
  // boxes against the nest.
  void tma_copy(const P::Stmt& loop, const TmaCopy& c, Accesses& pending);

  // One box's copy, counted on the slot's barrier; the first box of a fetch also expects the
  // whole fetch's bytes there (with this thread's arrival).
  void issue_tma_box(const TmaCopy& c, bool expect);

  // One box copied by every thread of the block, element (r, c) from G[origin + (r, c)] to
  // the box's start + r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8: TMA's 128-byte swizzle.
  void emulate_tma_box(const TmaCopy& c);

  // ---- tensor cores (tensor_op.h) --------------------------------------------------------------
  // Every marked nest of the kernel recognised up front (the fragments' declarations need
  // their roles and layouts), with what the hardware requires of the kernel checked whether
  // or not the dialect has tensor cores: the emulation accepts exactly the programs the
  // instructions would run.
  void find_tensor_ops();

  // The fragments of an Allocate, declared as the dialect's fragment array.
  void fragments(const P::Stmt& alloc, Accesses& pending, bool uniform);

  void tensor_op(const P::Stmt& loop, Accesses& pending, bool uniform);

  // A warpgroup operation (wgmma, sm_90a). Each thread of the warpgroup holds cols / 2 floats
  // of a 64 x cols accumulator tile: warp w rows 16w to 16w + 15; per 8 columns j, values
  // (row, 2 columns) and (row + 8, the same 2) with row = 16w + lane / 4, columns 8j + 2 (lane
  // % 4) -- mma.sync's m16n8 accumulator, four warps high.
  void group_op(const TensorOp& op);

  // Which 64 x cols tile of a warpgroup accumulator `t` starts, in the buffer's row-major grid
  // of such tiles.
  P::Expr group_tile_index(const Tile& t, int64_t cols);

  void reduction_epilogue(const CrossThreadReduction& xr, const std::string& t, int dim);

  const KernelPlan& plan_;
  const Kernel& kernel_;
  const Dialect& d_;
  std::string idx_;
  std::set<std::string>& used_helpers_;
  std::ostringstream body_;
  int indent_ = 0;
  int counter_ = 0;
  std::unordered_map<int64_t, std::string> var_names_, buffer_names_;
  std::unordered_set<std::string> taken_;
  std::unordered_set<int64_t> global_ids_, private_, thread_vars_, scope_vars_;
  std::vector<P::Buffer> shared_;
  std::vector<std::tuple<std::string, std::string, int64_t>> scratch_; // name, type, bytes
  int64_t dynamic_shared_bytes_ = 0;
  // Thread tags whose loop encloses the current statement: the outermost loop's variable id and
  // extent.
  std::map<std::string, std::pair<int64_t, int64_t>> active_tags_;
  std::array<std::unordered_set<int64_t>, 3> thread_vars_by_dim_;
  std::unordered_map<const P::StmtNode*, Accesses> access_cache_;
  std::unordered_map<const P::StmtNode*, int64_t> xthread_targets_;
  std::unordered_set<const P::StmtNode*> in_registers_;
  CrossThreadReduction* active_xr_ = nullptr;
  struct VThread {
    P::Expr var;
    int64_t extent = 1;
    std::unordered_set<int64_t> inner_allocs;
    bool unrolled = false; // the loops over the virtual threads (vthread_loop)
  };
  static constexpr int64_t kVThreadRegisterWords = 128;
  std::optional<VThread> vt_;
  bool in_vloop_ = false;
  std::vector<P::Stmt> synthetic_;
  std::unordered_map<const P::StmtNode*, bool> vdepends_;
  std::unordered_map<int64_t, int64_t> expanded_; // buffer id -> elements per virtual thread
  std::vector<TensorOp> tensor_ops_;
  std::unordered_map<const P::StmtNode*, size_t> op_of_loop_;
  std::map<int64_t, FragmentInfo> frag_info_;
  std::unordered_set<int64_t> fragment_memory_;  // shared arrays fragments are loaded from
  std::unordered_set<int64_t> tensor_nest_vars_; // loop variables of the operations' nests
  bool group_ops_ = false;                       // the operations are a warpgroup's (wgmma)
  // Products (commit groups) that may stay in flight at a barrier: those of the spare slots'
  // iterations of the pipelined loop being written, 0 elsewhere.
  int64_t group_wait_depth_ = 0;
  bool group_uncommitted_ = false; // products written since the last commit
  bool group_fenced_ = false;      // a wgmma.fence since the accumulator was last touched
  std::map<int64_t, CoreMatrixLayout> core_matrix_; // shared arrays wgmma reads, their layouts

  std::unordered_map<const P::StmtNode*, TmaCopy> tma_copies_; // fetch nests copied by TMA
  int64_t tma_slots_ = 0, tma_arrivals_ = 0;       // the pipeline's slots; TMA copies a fetch
  std::string tma_bar_;                            // the slots' mbarriers
  bool tma_writes_every_operand_ = false;          // no thread writes a tile wgmma reads
  std::optional<ProducerPlan> producer_;           // warp specialisation (producer_warpgroup.h)
  std::string producer_why_;                       // why it was asked for and not done
  std::string empty_bar_;                          // the slots' "consumers are done" mbarriers
  bool in_producer_ = false, in_consumer_ = false; // writing that role's code
  std::map<int64_t, TensorMap> tensor_maps_;       // global buffer id -> its kernel parameter

  bool in_tensor_op_ = false;
  bool in_async_ = false; // under a fetch that lowering marked for asynchronous copies
};

// Helpers a kernel may call, spelled for the dialect, by name (only those used are emitted:
// NVRTC warns about an unused static function).
std::map<std::string, std::string> helpers(const Dialect& d, bool index32);

} // namespace mt::gpu_codegen::writer
