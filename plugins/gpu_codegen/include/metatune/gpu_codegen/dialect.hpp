// What differs between the GPU source languages the generator writes: CUDA C++, HIP C++ and
// OpenCL C. Everything else (loops, indices, barriers' placement, cross-thread reductions) is
// the one writer's (kernel_writer.hpp); a dialect only spells things.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "metatune/sdk/program.hpp"

namespace mt::gpu_codegen {

namespace P = mt::sdk::program;

// One kernel parameter as the writer declares it.
struct KernelParam {
  std::string type; // element type (buffers) or scalar type
  std::string name;
  bool buffer = true;
  bool read_only = false;
  bool tensor_map = false; // a TMA tensor map passed by value (tensor_map.hpp)
};

// What a tensor-core fragment holds (tensor_op.h).
enum class FragmentRole { MatrixA, MatrixB, Accumulator };

class Dialect {
public:
  virtual ~Dialect() = default;
  virtual const char* name() const = 0;
  // Headers and pragmas at the top of the source.
  virtual std::string prologue() const = 0;
  // Qualifier of the helper functions the writer emits ("inline", "__device__ inline").
  virtual std::string helper_qualifier() const = 0;
  // `<qualifiers> void name(params) ` up to, not including, the opening brace. `resident`: the
  // blocks the kernel is built to have on a multiprocessor at once, 0 for the compiler's choice
  // (1 where warpgroups move registers between them: ptxas then knows the count at entry).
  virtual std::string kernel_signature(const std::string& name,
                                       const std::vector<KernelParam>& params,
                                       const int64_t block[3], int64_t resident = 0) const = 0;
  // The index of this block in the grid / this thread in the block along dim (0 = x).
  virtual std::string block_index(int dim) const = 0;
  virtual std::string thread_index(int dim) const = 0;
  // Waits for every thread of the block; makes shared and global writes visible to them.
  virtual std::string barrier() const = 0;
  // Declaration of a block-shared array at kernel scope.
  virtual std::string shared_array(const std::string& type, const std::string& name,
                                   int64_t elements) const = 0;
  // Shared memory beyond what a kernel may declare statically (CUDA: 48 KB) is sized at launch
  // instead (dynamic shared memory, which the target opts each kernel into): every array of
  // the kernel then becomes a view of one pool at a byte offset aligned to 128. 0: the dialect
  // declares every array statically, whatever its size.
  virtual int64_t static_shared_limit() const { return 0; }
  // The pool's declaration (`bytes` long) and an array of `type` at byte `offset` of it
  // (offset % 128 == 0).
  virtual std::string dynamic_shared_pool(const std::string& /*pool*/, int64_t /*bytes*/,
                                          int64_t /*alignment*/) const {
    return "";
  }
  virtual std::string dynamic_shared_array(const std::string& /*type*/, const std::string& name,
                                           const std::string& /*pool*/, int64_t /*offset*/) const {
    return name;
  }
  virtual std::string type_name(P::DType t) const = 0;
  virtual std::string int64_type() const = 0;
  // A math function of the IR on float arguments of type t.
  virtual std::string math(P::MathFn fn, P::DType t,
                           const std::vector<std::string>& args) const = 0;
  // Spelling of +inf / -inf / NaN in type t.
  virtual std::string infinity(P::DType t, bool negative) const = 0;
  virtual std::string nan(P::DType t) const = 0;
  virtual std::string is_nan(const std::string& x) const = 0;
  // Before a loop the schedule asks to unroll.
  virtual std::string unroll_pragma() const { return "#pragma unroll"; }

  // f16 and bf16: device memory holds them (type_name: the storage type), kernels compute in
  // float and round every result to the type, as the reference interpreter does -- exact,
  // because float has more than twice their precision.
  // Reading element `index` of f16 buffer `buffer` (`shared`: a block-shared array, else
  // device memory) as float, writing float `value` there (a statement without its semicolon),
  // rounding a float to the nearest f16.
  virtual std::string load_f16(const std::string& buffer, const std::string& index,
                               bool shared) const = 0;
  virtual std::string store_f16(const std::string& buffer, const std::string& index,
                                const std::string& value, bool shared) const = 0;
  // Whether an f16/bf16 element held in its own type may be copied by plain assignment (an
  // OpenCL `half` may only be read and written through vload_half / vstore_half).
  virtual bool assigns_half(P::DType /*t*/) const { return true; }
  // The element type of a block-shared array of f16/bf16 held in its own type.
  virtual std::string shared_half_type(P::DType t) const { return type_name(t); }
  virtual std::string round_f16(const std::string& x) const = 0;
  // Whether block-shared arrays hold f16/bf16 in their own type too (half the shared memory,
  // as VerifyGPUCode counts it; read and written through the conversions above), or in float.
  virtual bool holds_half_in_shared() const { return false; }
  // The bits of a float as a 32-bit unsigned integer and back (bf16 is the upper half).
  virtual std::string float_bits(const std::string& x) const = 0;
  virtual std::string bits_float(const std::string& u) const = 0;
  // What a source using f16 needs first (a header).
  virtual std::string f16_prologue() const { return ""; }

  // Tensor cores: WMMA's warp-wide 16x16x16 operations, f16 or bf16 operands, f32 accumulator
  // (tensor_op.h). A dialect without them (the default) gets the marked nests written as the
  // loops they are -- the operations' tile semantics, emulated per thread -- which is how
  // tensor-core schedules are checked against the interpreter on a machine without the
  // hardware. The spellings below are called only when has_tensor_cores().
  virtual bool has_tensor_cores() const { return false; }
  virtual std::string tensor_core_prologue() const { return ""; }
  // `count` fragments of a role, as one array; matrix_a/b hold `operand` (f16 or bf16) and are
  // loaded row- or column-major.
  virtual std::string fragment_array(FragmentRole, P::DType /*operand*/, bool /*col_major*/,
                                     const std::string& name, int64_t /*count*/) const {
    return name;
  }
  virtual std::string fill_fragment(const std::string& frag, const std::string& value) const {
    return frag + value;
  }
  // `ld`: elements between rows (row-major) or columns (column-major) of the memory tile;
  // `pointer` points at elements of type `operand` held as type_name(operand).
  virtual std::string load_fragment(const std::string& frag, const std::string& pointer,
                                    P::DType /*operand*/, int64_t /*ld*/) const {
    return frag + pointer;
  }
  virtual std::string mma(const std::string& acc, const std::string& a,
                          const std::string& b) const {
    return acc + a + b;
  }
  virtual std::string store_fragment(const std::string& pointer, const std::string& frag,
                                     int64_t /*ld*/, bool /*col_major*/) const {
    return pointer + frag;
  }
  // Hopper's warpgroup MMA (wgmma, sm_90a; tensor_op.h), called only when has_tensor_cores():
  // a warpgroup accumulator of `floats` per thread; the 64-bit shared-memory descriptor of an
  // operand tile at `pointer` (`lbo`/`sbo`: the descriptor's leading and stride byte offsets,
  // tensor_op.h's GroupOperand; `swizzle128`: held in the 128-byte swizzled layout, else as
  // plain core matrices); the fence that orders the threads' own accesses of the accumulator
  // registers before the products that follow; one m64n`cols`k16 product added to the
  // accumulator's registers from `first` on (`trans_*`: the operand is MN-major); the commit
  // and the wait below; the fence that makes ordinary shared-memory writes visible to them.
  // Statements with their semicolons, the descriptor an expression.
  virtual std::string group_mma_prologue() const { return ""; }
  virtual std::string group_accumulator_array(const std::string& name, int64_t floats) const {
    return name + std::to_string(floats);
  }
  virtual std::string group_mma_descriptor(const std::string& pointer, int64_t /*lbo*/,
                                           int64_t /*sbo*/, bool /*swizzle128*/) const {
    return pointer;
  }
  virtual std::string group_mma_fence() const { return ""; }
  virtual std::string group_mma(const std::string& acc, const std::string& first, int64_t /*cols*/,
                                const std::string& desc_a, const std::string& desc_b,
                                bool /*trans_a*/, bool /*trans_b*/, P::DType /*operand*/) const {
    return acc + first + desc_a + desc_b;
  }
  // The products issued since the last commit made one group; the wait until at most
  // `pending` of this thread's newest groups are still running.
  virtual std::string group_mma_commit() const { return ""; }
  virtual std::string group_mma_wait(int64_t /*pending*/) const { return ""; }
  // A statement the compiler cannot move an access of register `reg` across (the asynchronous
  // products write the accumulator behind its back).
  virtual std::string register_fence(const std::string& reg) const { return reg; }
  virtual std::string async_proxy_fence() const { return ""; }
  // One aligned move of `bytes` (4, 8 or 16) from address `src` to address `dst` (a
  // statement without its semicolon; `*_shared`: the address is in block-shared memory, else in
  // device memory), or "" where the dialect writes such copies as loops.
  // Two f32 values `a`, `b` stored as one 8-byte move at `dst` (an address 8-byte aligned), or
  // "" where the dialect stores them one by one.
  virtual std::string f32_pair_store(const std::string& /*dst*/, const std::string& /*a*/,
                                     const std::string& /*b*/) const {
    return "";
  }
  virtual std::string vector_move(int64_t /*bytes*/, const std::string& /*dst*/,
                                  bool /*dst_shared*/, const std::string& /*src*/,
                                  bool /*src_shared*/) const {
    return "";
  }
  // Asynchronous copies (software pipelining, core's software_pipeline.h): one aligned move of
  // `bytes` (4, 8 or 16) from device memory at `src` to shared memory at `dst` that the thread
  // does not wait for, or "" where the dialect has none (the copy is then a vector_move, done
  // when written -- the same program). Copies are committed in groups; async_wait(n) returns
  // once at most the newest n groups are still in flight. Statements without the semicolon.
  virtual std::string async_copy(int64_t /*bytes*/, const std::string& /*dst*/,
                                 const std::string& /*src*/) const {
    return "";
  }
  virtual std::string async_commit() const { return ""; }
  virtual std::string async_wait(int64_t /*n*/) const { return ""; }
  // What a source using asynchronous copies needs first (helper functions): for the copy
  // sizes in `bytes` (each used at least once) and the commit and the wait.
  virtual std::string async_copy_prologue(const std::vector<int64_t>& /*bytes*/) const {
    return "";
  }
  // Hopper's tensor memory accelerator (tma_copy.h), called only when has_tma(): helper
  // functions (box copies of the tensor ranks in `ranks`); the declaration of `count` mbarriers;
  // their initialisation for `arrivals` arrivals a phase (by one thread, then fenced); the
  // expectation of `bytes` on barrier `bar` (an address) with this thread's arrival; one box copy
  // to shared address `dst` from tensor map `map` (a kernel parameter) at `coords` (innermost
  // first), counted on `bar`; the wait until `bar` has completed the phase of parity `parity`.
  // Statements without their semicolons.
  virtual bool has_tma() const { return false; }
  virtual std::string tma_prologue(const std::vector<int64_t>& /*ranks*/) const { return ""; }
  virtual std::string tma_barriers(const std::string& name, int64_t /*count*/) const {
    return name;
  }
  virtual std::string tma_barrier_init(const std::string& bar, int64_t /*arrivals*/) const {
    return bar;
  }
  virtual std::string tma_barrier_init_fence() const { return ""; }
  virtual std::string tma_expect(const std::string& bar, int64_t /*bytes*/) const { return bar; }
  virtual std::string tma_load(const std::string& dst, const std::string& map,
                               const std::vector<std::string>& /*coords*/,
                               const std::string& bar) const {
    return dst + map + bar;
  }
  virtual std::string tma_wait(const std::string& bar, const std::string& /*parity*/) const {
    return bar;
  }
  // Warp specialisation (a producer warpgroup issuing the TMA copies), only when has_tma(): its
  // helper functions (after tma_prologue's); this thread's arrival on `bar` (a consumer done with a
  // slot); the wait of a thread with no warpgroup MMA in flight (the producer, for a free slot); a
  // barrier among the first `threads` threads only (the consumers), with hardware barrier `id`; a
  // warpgroup's change of its registers a thread to `regs` (`increase`: it takes registers the
  // others gave back).
  virtual std::string tma_producer_prologue() const { return ""; }
  virtual std::string tma_release(const std::string& bar) const { return bar; }
  virtual std::string tma_producer_wait(const std::string& bar,
                                        const std::string& /*parity*/) const {
    return bar;
  }
  virtual std::string named_barrier(int64_t /*id*/, int64_t /*threads*/) const { return barrier(); }
  virtual std::string set_max_registers(bool /*increase*/, int64_t /*regs*/) const { return ""; }

  // Declaration of a shared array that fragments are loaded from: held in its own type (f16),
  // aligned as the loads require and to at least `alignment` bytes.
  virtual std::string fragment_source_array(const std::string& type, const std::string& name,
                                            int64_t elements, int64_t /*alignment*/) const {
    return shared_array(type, name, elements);
  }
};

// `pool_shared_beyond` > 0: a kernel's local arrays become views of one pool when together they
// exceed that many bytes -- the layout CUDA uses beyond 48 KB, so that PoCL checks it.
std::unique_ptr<Dialect> opencl_dialect(int64_t pool_shared_beyond = 0);
std::unique_ptr<Dialect> cuda_dialect();
std::unique_ptr<Dialect> hip_dialect();

} // namespace mt::gpu_codegen
