// Kernels of a plan as source text (kernel_writer.hpp): each kernel written by a KernelWriter
// (writer.h), then the prologues and helpers the kernels used.
#include "writer.h"

namespace mt::gpu_codegen {
namespace writer {

std::string KernelWriter::write() {
  // Names the source uses for itself: a buffer called "exp" (an elementwise op) must not
  // shadow the function.
  for (const char* n :
       {"exp",      "expf",     "log",     "logf",     "tanh",     "tanhf",    "erf",
        "erff",     "sqrt",     "sqrtf",   "rsqrt",    "rsqrtf",   "pow",      "powf",
        "fabs",     "fabsf",    "isnan",   "min",      "max",      "abs",      "barrier",
        "half",     "float",    "double",  "int",      "long",     "char",     "short",
        "uchar",    "ushort",   "uint",    "ulong",    "bool",     "kernel",   "global",
        "local",    "constant", "private", "restrict", "signed",   "unsigned", "void",
        "if",       "else",     "for",     "while",    "do",       "return",   "const",
        "static",   "inline",   "switch",  "case",     "default",  "break",    "continue",
        "sizeof",   "struct",   "union",   "enum",     "typedef",  "volatile", "register",
        "auto",     "extern",   "goto",    "new",      "delete",   "class",    "template",
        "this",     "true",     "false",   "NAN",      "INFINITY", "blockIdx", "threadIdx",
        "blockDim", "gridDim",  "warpSize"})
    taken_.insert(n);
  for (const auto& b : plan_.buffers)
    global_ids_.insert(b->id);
  P::visit_stmts(kernel_.body, [&](const P::Stmt& s) {
    if (s->kind == StmtKind::Allocate) {
      if (s->buffer->scope == "shared")
        shared_.push_back(s->buffer);
      else
        private_.insert(s->buffer->id);
    }
    return true;
  });
  for (const auto& v : kernel_.host_vars)
    scope_vars_.insert(v->var_id);
  P::visit_stmts(kernel_.body, [&](const P::Stmt& x) {
    bool is_block = false;
    int dim = 0;
    if (x->kind == StmtKind::For && x->for_kind == P::ForKind::ThreadBinding &&
        parse_thread_tag(x->thread_tag, &is_block, &dim) && !is_block)
      thread_vars_by_dim_[static_cast<size_t>(dim)].insert(x->loop_var->var_id);
    return true;
  });
  preregister_reductions();
  find_tensor_ops();
  find_tma();
  find_producer();
  Accesses pending;
  indent_ = 1;
  init_tma_barriers();
  if (producer_)
    warp_specialised(pending);
  else
    stmt(kernel_.body, pending, true);

  std::vector<KernelParam> params;
  for (size_t i = 0; i < plan_.buffers.size(); ++i) {
    const auto& b = plan_.buffers[i];
    params.push_back({d_.type_name(b->dtype), buffer_name(b), true, false});
  }
  for (const auto& v : kernel_.host_vars)
    params.push_back({d_.int64_type(), var_name(v), false, true});
  for (const auto& [id, map] : tensor_maps_)
    params.push_back({"", map.name, false, true, true});
  std::ostringstream os;
  const LaunchDims launch = launch_dims();
  os << d_.kernel_signature(kernel_.name, params, launch.block, gives_registers() ? 1 : 0) << "{\n";
  if (!producer_why_.empty()) os << "  // no producer warpgroup: " << producer_why_ << "\n";
  declare_shared(os);
  os << body_.str() << "}\n";
  return os.str();
}

LaunchDims KernelWriter::launch_dims() const {
  LaunchDims d = kernel_.dims;
  if (producer_) d.block[1] += 1;
  return d;
}

std::vector<TensorMapSpec> KernelWriter::tensor_maps() const {
  std::vector<TensorMapSpec> out;
  for (const auto& [id, map] : tensor_maps_)
    out.push_back(map.spec);
  return out;
}

void KernelWriter::declare_shared(std::ostream& os) {
  std::vector<SharedArray> arrays;
  for (const auto& b : shared_) {
    bool own = held_in_own_type(b);
    // The 128-byte swizzle permutes chunks by address bits, within 1024-byte atoms.
    const bool swizzled = core_matrix_layout(b) == CoreMatrixLayout::Swizzle128;
    arrays.push_back({own ? storage_type(b) : type_of(b->dtype), buffer_name(b), b->num_elements(),
                      held_bytes(b->dtype, own), swizzled ? 1024 : kSharedAlignment});
  }
  for (const auto& [name, type, bytes] : scratch_)
    arrays.push_back({type, name, kernel_.dims.threads_per_block(), bytes});
  if (!tma_copies_.empty() && d_.has_tma())
    os << "  " << d_.tma_barriers(tma_bar_, tma_slots_) << "\n";
  if (producer_) os << "  " << d_.tma_barriers(empty_bar_, tma_slots_) << "\n";
  SharedLayout layout = layout_shared(arrays, d_.static_shared_limit());
  if (layout.dynamic) {
    std::string pool = fresh("mt_dynamic_shared");
    os << "  " << d_.dynamic_shared_pool(pool, layout.bytes, layout.alignment) << "\n";
    for (size_t i = 0; i < arrays.size(); ++i)
      os << "  " << d_.dynamic_shared_array(arrays[i].type, arrays[i].name, pool, layout.offsets[i])
         << "\n";
    dynamic_shared_bytes_ = layout.bytes;
    return;
  }
  for (size_t i = 0; i < arrays.size(); ++i) {
    bool fragment = i < shared_.size() && fragment_memory_.count(shared_[i]->id) > 0;
    // Declared one by one, an array needs no more than its accesses do, unless it asks.
    const int64_t asked = arrays[i].alignment > kSharedAlignment ? arrays[i].alignment : 0;
    os << "  "
       << (fragment
               ? d_.fragment_source_array(arrays[i].type, arrays[i].name, arrays[i].elements, asked)
               : d_.shared_array(arrays[i].type, arrays[i].name, arrays[i].elements))
       << "\n";
  }
}

} // namespace writer

using namespace writer;

GpuSource write_kernels(const KernelPlan& plan, const Dialect& dialect) {
  GpuSource out;
  std::set<std::string> used;
  std::ostringstream kernels;
  for (const Kernel& k : plan.kernels) {
    KernelWriter writer(plan, k, dialect, used);
    kernels << writer.write() << "\n";
    out.kernel_names.push_back(k.name);
    out.dynamic_shared_bytes.push_back(writer.dynamic_shared_bytes());
    out.tensor_maps.push_back(writer.tensor_maps());
    out.launch_dims.push_back(writer.launch_dims());
  }
  std::ostringstream os;
  os << dialect.prologue();
  if (used.count(kF16)) os << dialect.f16_prologue();
  if (used.count(kTensorCores)) os << dialect.tensor_core_prologue();
  if (used.count(kGroupMma)) os << dialect.group_mma_prologue();
  if (used.count(kTma)) {
    std::vector<int64_t> ranks;
    for (int64_t rank = 2; rank <= 5; ++rank)
      if (used.count(kTmaOfRank + std::to_string(rank))) ranks.push_back(rank);
    os << dialect.tma_prologue(ranks);
    if (used.count(kTmaProducer)) os << dialect.tma_producer_prologue();
  }
  if (used.count(kAsyncCopies)) {
    std::vector<int64_t> sizes;
    for (int64_t bytes : {4, 8, 16})
      if (used.count(kAsyncCopyOf + std::to_string(bytes))) sizes.push_back(bytes);
    os << dialect.async_copy_prologue(sizes);
  }
  if (used.count("mt_round_bf16")) used.insert({"mt_bf16_to_f32", "mt_f32_to_bf16"});
  std::map<std::string, std::string> all = helpers(dialect, plan.index32);
  // Conversions first: mt_round_bf16 calls them.
  for (const char* first : {"mt_bf16_to_f32", "mt_f32_to_bf16"})
    if (used.count(first)) os << all.at(first);
  for (const std::string& name : used)
    if (all.count(name) && name != "mt_bf16_to_f32" && name != "mt_f32_to_bf16") os << all.at(name);
  os << "\n" << kernels.str();
  out.code = os.str();
  return out;
}

} // namespace mt::gpu_codegen

namespace mt::gpu_codegen {

void maybe_dump_source(const std::string& name, const std::string& code, const std::string& ext) {
  const char* dir = std::getenv("METATUNE_DUMP_GPU_SOURCE");
  if (!dir || !*dir) return;
  std::string path = std::string(dir) + "/" + name + "." + ext;
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fwrite(code.data(), 1, code.size(), f);
    std::fclose(f);
  }
}

} // namespace mt::gpu_codegen
