// The rewrite of generated CUDA C++ for the host compiler, its build into a shared library and
// the launches (cuda_emulator.h).
#include "cuda_emulator.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "core/lower/lower.h"
#include "core_to_program.h"
#include "emulated_tensor_map.h"
#include "metatune/gpu_codegen/dialect.hpp"
#include "metatune/gpu_codegen/kernel_writer.hpp"
#include "metatune/gpu_codegen/tensor_map.hpp"
#include "ptx_emulator.h"
#include "std_rules_test_util.h"

namespace mt::gpu_test::emulator {

namespace G = mt::gpu_codegen;

Counts& Counts::operator+=(const Counts& o) {
  ptx += o.ptx;
  tma_copies += o.tma_copies;
  wgmmas += o.wgmmas;
  max_tma_in_flight = std::max(max_tma_in_flight, o.max_tma_in_flight);
  return *this;
}

namespace {

// ---- the rewrite ---------------------------------------------------------------------------

// Reads C++ text from `at`: string literals, and parentheses with what they enclose.
class Scanner {
public:
  Scanner(const std::string& s, size_t at) : s_(s), at_(at) {}

  size_t at() const { return at_; }
  void skip_space() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_])))
      ++at_;
  }
  bool peek(char c) {
    skip_space();
    return at_ < s_.size() && s_[at_] == c;
  }
  void expect(char c) {
    if (!peek(c)) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  // One or more adjacent string literals, as written.
  std::string literals() {
    std::string out;
    while (peek('"')) {
      size_t begin = at_++;
      while (at_ < s_.size() && s_[at_] != '"')
        at_ += s_[at_] == '\\' ? 2 : 1;
      if (at_ >= s_.size()) fail("unterminated string");
      ++at_;
      out += (out.empty() ? "" : " ") + s_.substr(begin, at_ - begin);
    }
    if (out.empty()) fail("expected a string literal");
    return out;
  }
  // The text up to the next `stop` character outside parentheses and strings (not consumed).
  std::string until_any(const char* stops) {
    size_t begin = at_;
    int depth = 0;
    while (at_ < s_.size()) {
      char c = s_[at_];
      if (c == '"') {
        literals();
        continue;
      }
      if (depth == 0 && std::strchr(stops, c)) break;
      if (c == '(' || c == '[' || c == '{') ++depth;
      if (c == ')' || c == ']' || c == '}') --depth;
      ++at_;
    }
    if (at_ >= s_.size()) fail("unbalanced text");
    return s_.substr(begin, at_ - begin);
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("cuda_to_cpp: " + what + " at: " + s_.substr(at_, 80));
  }

private:
  const std::string& s_;
  size_t at_;
};

// One asm operand, `"constraint"(expression)`, as the emulator's Op: written ("=r", "+f") by
// reference, read by value.
std::string asm_operand(const std::string& text) {
  Scanner sc(text, 0);
  const std::string constraint = sc.literals();
  sc.expect('(');
  const std::string expr = sc.until_any(")");
  const bool written = constraint.find_first_of("=+") != std::string::npos;
  return std::string(written ? "::mt_emu::Op::out_ref(" : "::mt_emu::Op::in(") + expr + ")";
}

// `asm volatile("..." : outputs : inputs : clobbers)` from `at` (its 'a') to the call.
std::string rewrite_asm(const std::string& s, size_t at, size_t* end) {
  Scanner sc(s, at + std::strlen("asm volatile"));
  sc.expect('(');
  std::string text = sc.literals();
  std::vector<std::string> ops;
  for (int section = 0; sc.peek(':'); ++section) {
    sc.expect(':');
    // "::" closes two sections at once.
    while (!sc.peek(':') && !sc.peek(')')) {
      std::string operand = sc.until_any(",:)");
      if (section < 2) ops.push_back(asm_operand(operand)); // not the clobbers
      if (sc.peek(',')) sc.expect(',');
    }
  }
  sc.expect(')');
  *end = sc.at();
  std::string call = "::mt_emu::ptx(" + text + ", {";
  for (size_t i = 0; i < ops.size(); ++i)
    call += (i ? ", " : "") + ops[i];
  return call + "})";
}

// A kernel's entry point taking the driver's parameter array.
std::string entry_point(const std::string& name, const std::string& params) {
  std::string call;
  std::stringstream ss(params);
  std::string decl;
  int i = 0;
  while (std::getline(ss, decl, ',')) {
    // The type is the declaration without its last word; __restrict__ qualifies nothing here.
    size_t last = decl.find_last_of(" *");
    std::string type = decl.substr(0, last + 1);
    type = std::regex_replace(type, std::regex("__restrict__|__grid_constant__"), "");
    call += std::string(i ? ", " : "") + "*reinterpret_cast<" + type + "*>(p[" + std::to_string(i) +
            "])";
    ++i;
  }
  return "extern \"C\" __attribute__((visibility(\"default\"))) void mt_emu_entry_" + name +
         "(void** p) { " + name + "(" + call + "); }\n";
}

} // namespace

std::string cuda_to_cpp(const std::string& cuda, std::vector<std::string>* kernels) {
  std::string out = "#include \"cuda_builtins.h\"\n";
  std::string entries;
  const std::regex header(R"(^#include <(cuda_fp16|cuda_bf16|mma|hip/hip_fp16)\.h>$)");
  const std::regex shared_array(
      R"(^(\s*)__shared__ (?:__align__\((\d+)\) )?([\w ]+?) (\w+)\[(\d+)\];$)");
  const std::regex dynamic_pool(
      R"(^(\s*)extern __shared__ __align__\((\d+)\) unsigned char (\w+)\[\];$)");
  const std::regex kernel(
      R"re(extern "C" __global__ void __launch_bounds__\([^)]*\) (\w+)\(([^)]*)\))re");
  std::stringstream lines(cuda);
  std::string body, line;
  int declarations = 0;
  while (std::getline(lines, line)) {
    std::smatch m;
    if (std::regex_match(line, header)) continue;
    if (std::regex_match(line, m, shared_array)) {
      body += m[1].str() + m[3].str() + "* const " + m[4].str() + " = static_cast<" + m[3].str() +
              "*>(::mt_emu::shared_alloc(" + std::to_string(declarations++) + ", " + m[5].str() +
              " * sizeof(" + m[3].str() + "), " + (m[2].matched ? m[2].str() : "16") + "));\n";
      continue;
    }
    if (std::regex_match(line, m, dynamic_pool)) {
      body += m[1].str() + "unsigned char* const " + m[3].str() + " = ::mt_emu::dynamic_shared(" +
              m[2].str() + ");\n";
      continue;
    }
    if (line.find("__shared__") != std::string::npos)
      throw std::runtime_error("cuda_to_cpp: a shared declaration it does not know: " + line);
    if (std::regex_search(line, m, kernel)) {
      kernels->push_back(m[1].str());
      entries += entry_point(m[1].str(), m[2].str());
    }
    body += line + "\n";
  }
  // The asm statements, anywhere (helpers and kernels).
  for (size_t at = body.find("asm volatile"); at != std::string::npos;
       at = body.find("asm volatile", at)) {
    size_t end = 0;
    std::string call = rewrite_asm(body, at, &end);
    body.replace(at, end - at, call);
    at += call.size();
  }
  return out + body + entries;
}

// ---- the module ----------------------------------------------------------------------------

namespace {

std::string run_command(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) throw std::runtime_error("cannot run " + command);
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0)
    out.append(buf, n);
  int status = pclose(p);
  if (status != 0)
    throw std::runtime_error("failed (" + std::to_string(status) + "): " + command + "\n" +
                             out.substr(0, 6000));
  return out;
}

} // namespace

EmulatedModule::EmulatedModule(const std::string& cuda) {
  std::vector<std::string> kernels;
  cpp_ = cuda_to_cpp(cuda, &kernels);
  char dir[] = "/tmp/mt-cuda-emulator-XXXXXX";
  if (!mkdtemp(dir)) throw std::runtime_error("mkdtemp failed");
  const std::string src = std::string(dir) + "/kernel.cpp", lib = std::string(dir) + "/kernel.so";
  std::ofstream(src) << cpp_;
  try {
    run_command(std::string(MT_HOST_CXX) + " -std=c++20 -O1 -fPIC -shared -w -I" +
                MT_CUDA_EMULATOR_DIR + " -o " + lib + " " + src);
  } catch (...) {
    std::filesystem::remove_all(dir);
    throw;
  }
  library_ = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  std::filesystem::remove_all(dir);
  if (!library_) throw std::runtime_error(std::string("dlopen: ") + dlerror());
}

EmulatedModule::~EmulatedModule() {
  if (library_) dlclose(library_);
}

std::string EmulatedModule::launch(const std::string& name, const G::LaunchDims& dims,
                                   size_t dynamic_shared_bytes, void** params, uint64_t seed,
                                   Counts* counts) {
  auto entry =
      reinterpret_cast<void (*)(void**)>(dlsym(library_, ("mt_emu_entry_" + name).c_str()));
  if (!entry) return "no entry point for kernel " + name;
  unsigned grid[3], block[3];
  for (int i = 0; i < 3; ++i) {
    grid[i] = static_cast<unsigned>(dims.grid[i]);
    block[i] = static_cast<unsigned>(dims.block[i]);
  }
  mt_emu::LaunchStats stats;
  std::string error =
      mt_emu::run_grid(entry, params, grid, block, dynamic_shared_bytes, seed, &stats);
  if (counts) *counts += Counts{stats.ptx, stats.tma_copies, stats.wgmmas, stats.max_tma_in_flight};
  return error;
}

// ---- a schedule against the reference ------------------------------------------------------

namespace {

// The module's kernels run once over arguments as the tests make them, plus the plan's
// temporaries; parameters in the order the cuda target passes them (every buffer, the host
// loops' values, the tensor maps).
std::string run_once(EmulatedModule& module, const G::KernelPlan& plan, const G::GpuSource& src,
                     std::vector<NDArray>& args, uint64_t seed, Counts* counts) {
  std::vector<void*> buffers;
  std::vector<std::vector<unsigned char>> temporaries(plan.buffers.size());
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    if (b < args.size()) {
      buffers.push_back(args[b].data());
    } else {
      temporaries[b].assign(static_cast<size_t>(plan.buffers[b]->size_bytes()), 0xFF);
      buffers.push_back(temporaries[b].data());
    }
  }
  std::string error;
  G::run_host_steps(plan, [&](int k, const std::vector<int64_t>& scalars) {
    if (!error.empty()) return;
    const size_t kernel = static_cast<size_t>(k);
    std::vector<long long> values(scalars.begin(), scalars.end());
    const auto& specs = src.tensor_maps.at(kernel);
    std::vector<std::array<uint64_t, 16>> map_bytes(specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      const G::TensorMapSpec& spec = specs[i];
      mt_emu::EmulatedTensorMap m;
      m.base = static_cast<const unsigned char*>(buffers.at(spec.buffer));
      m.rank = static_cast<int>(spec.dims.size());
      if (m.rank > 4) {
        error = "a tensor map of rank " + std::to_string(m.rank);
        return;
      }
      m.swizzle_bytes = spec.swizzle_bytes;
      for (size_t d = 0; d < spec.dims.size(); ++d) {
        m.dims[d] = spec.dims[d];
        m.box[d] = spec.box[d];
        if (d > 0) m.strides[d] = spec.strides_bytes[d - 1];
      }
      std::memcpy(map_bytes[i].data(), &m, sizeof m);
    }
    std::vector<void*> params;
    for (void*& b : buffers)
      params.push_back(&b);
    for (long long& v : values)
      params.push_back(&v);
    for (auto& m : map_bytes)
      params.push_back(m.data());
    error = module.launch(plan.kernels[kernel].name, src.launch_dims.at(kernel),
                          static_cast<size_t>(src.dynamic_shared_bytes.at(kernel)), params.data(),
                          seed, counts);
  });
  return error;
}

} // namespace

std::string run_and_compare(const Function& scheduled, const std::vector<NDArray>& reference,
                            const RunOptions& options, Counts* counts, std::string* source) {
  sdk::program::Program p = llvm_cpu::test::core_to_program(lower(scheduled));
  G::KernelPlan plan = G::plan_kernels(p);
  G::GpuSource src = G::write_kernels(plan, options.hip ? *G::hip_dialect() : *G::cuda_dialect());
  if (options.edit) src.code = options.edit(src.code);
  if (source) *source = src.code;
  EmulatedModule module(src.code);
  for (uint64_t seed : options.seeds) {
    std::vector<NDArray> args = std_rules_test::make_args(scheduled);
    std::string error = run_once(module, plan, src, args, seed, counts);
    if (!error.empty()) return "seed " + std::to_string(seed) + ": emulator: " + error;
    for (size_t i = 0; i < args.size(); ++i) {
      std::string why;
      if (!allclose(args[i], reference[i], options.rtol, options.atol, &why))
        return "seed " + std::to_string(seed) + ": param " + std::to_string(i) + ": " + why;
    }
  }
  return {};
}

} // namespace mt::gpu_test::emulator
