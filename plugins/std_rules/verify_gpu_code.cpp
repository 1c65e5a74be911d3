// VerifyGPUCode (GPU): rejects a candidate whose lowered program would not launch: per kernel
// (top-level statement of the lowered body), the threads per block (product over threadIdx.x/y/z
// of the largest extent bound to each) must not exceed the device's limit, nor the virtual
// threads the vthread limit, nor the shared memory (sum of the "shared" allocations) and the
// local memory per thread (sum of the "local" allocations, one copy per virtual thread) theirs.
// The cuda target sets the last to 255 registers of 4 bytes: larger per-thread arrays live in
// local memory whatever the schedule (TVM's name, max_local_memory_per_block, is kept).
//
// Configuration: {"max_threads_per_block", "max_shared_memory_per_block",
// "max_local_memory_per_block" (all from the target), "max_vthread": 8}.
#include <algorithm>
#include <map>
#include <sstream>

#include "config.hpp"
#include "std_components.hpp"
#include "target_info.hpp"

namespace mt::std_rules {

namespace {

using sdk::Schedule;
using sdk::StmtKind;
using sdk::StmtRef;

struct KernelUse {
  std::map<std::string, int64_t> extent_by_tag; // largest extent bound to each thread tag
  int64_t shared_bytes = 0;
  int64_t local_bytes = 0;
};

int64_t bytes_of(sdk::BufferRef b) {
  int64_t n = b.dtype().bytes();
  for (int64_t d : b.shape())
    n *= d;
  return n;
}

// `copies`: the virtual threads of the vthread loops around `s`; each has its own copy of a
// per-thread array allocated under them (the generator gives it one), so they all count.
void measure(StmtRef s, int64_t copies, KernelUse& use) {
  if (!s) return;
  if (s.kind() == StmtKind::For && s.for_kind() == sdk::ForKind::ThreadBinding) {
    int64_t& e = use.extent_by_tag[s.thread_tag()];
    e = std::max(e, s.extent());
    if (s.thread_tag().rfind("vthread", 0) == 0) copies *= s.extent();
  } else if (s.kind() == StmtKind::Allocate) {
    sdk::BufferRef b = s.buffer();
    std::string scope = b.scope();
    if (scope == "shared")
      use.shared_bytes += bytes_of(b);
    else if (scope == "local")
      use.local_bytes += bytes_of(b) * copies;
    else if (scope == "wgmma.accumulator") // spread over a warpgroup's 128 threads' registers
      use.local_bytes += bytes_of(b) / 128;
  }
  for (StmtRef c : s.children())
    measure(c, copies, use);
}

KernelUse measure(StmtRef kernel) {
  KernelUse use;
  measure(kernel, 1, use);
  return use;
}

// The kernels of a lowered body: its top-level statements, looking through the allocations
// of global temporaries that enclose them.
void collect_kernels(StmtRef s, std::vector<StmtRef>& out) {
  if (!s) return;
  if (s.kind() == StmtKind::Allocate && s.buffer().scope() == "global") {
    collect_kernels(s.body(), out);
  } else if (s.kind() == StmtKind::Seq) {
    for (StmtRef c : s.children())
      collect_kernels(c, out);
  } else {
    out.push_back(s);
  }
}

class VerifyGPUCode : public sdk::Postproc {
public:
  explicit VerifyGPUCode(std::string_view text) : config_("std.VerifyGPUCode", text) {
    config_.allow_only({"max_threads_per_block", "max_shared_memory_per_block",
                        "max_local_memory_per_block", "max_vthread"});
    configure();
  }

  void initialize(const sdk::TuneContext& ctx) override {
    target_ = TargetInfo::from(ctx);
    configure();
  }

  bool apply(Schedule& sch) override {
    sdk::Program lowered = sch.lower();
    std::vector<StmtRef> kernels;
    collect_kernels(lowered.body(), kernels);
    for (size_t k = 0; k < kernels.size(); ++k) {
      KernelUse use = measure(kernels[k]);
      int64_t threads = 1;
      for (const char* tag : {"threadIdx.x", "threadIdx.y", "threadIdx.z"}) {
        auto it = use.extent_by_tag.find(tag);
        if (it != use.extent_by_tag.end()) threads *= it->second;
      }
      auto vt = use.extent_by_tag.find("vthread");
      int64_t vthreads = vt == use.extent_by_tag.end() ? 1 : vt->second;
      auto reject = [&](const std::string& what, int64_t value, int64_t limit) {
        std::ostringstream os;
        os << "std.VerifyGPUCode: kernel " << k << " of '" << lowered.name() << "' uses " << value
           << " " << what << " (limit " << limit << ")";
        throw sdk::Rejected(os.str());
      };
      if (threads > max_threads_) reject("threads per block", threads, max_threads_);
      if (vthreads > max_vthread_) reject("virtual threads", vthreads, max_vthread_);
      if (use.shared_bytes > max_shared_)
        reject("bytes of shared memory", use.shared_bytes, max_shared_);
      if (use.local_bytes > max_local_)
        reject("bytes of local memory", use.local_bytes, max_local_);
    }
    return true;
  }

private:
  void configure() {
    max_threads_ = config_.get_int("max_threads_per_block", target_.max_threads_per_block);
    max_shared_ =
        config_.get_int("max_shared_memory_per_block", target_.max_shared_memory_per_block);
    max_local_ = config_.get_int("max_local_memory_per_block", target_.max_local_memory_per_block);
    max_vthread_ = config_.get_int("max_vthread", 8);
  }

  Config config_;
  TargetInfo target_;
  int64_t max_threads_ = 1024, max_shared_ = 49152, max_local_ = 0, max_vthread_ = 8;
};

} // namespace

void register_verify_gpu_code(sdk::Registry& r) {
  r.add<VerifyGPUCode>("std.VerifyGPUCode",
                       "GPU: reject kernels over the thread / shared / local memory limits");
}

} // namespace mt::std_rules
