// Which CPU the LLVM target generates code for: triple, CPU name and feature string. Detected
// from the host by feature (LLVM 16 names some recent CPUs "generic" although they have
// AVX-512), or given as a target string `llvm -mcpu=... -mattr=+avx2,... [-mtriple=...]`.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace mt::llvm_cpu {

struct Target {
  std::string triple;
  std::string cpu;
  std::vector<std::string> features; // "+avx2", "-avx512f", ...

  bool has(const std::string& feature) const; // feature without sign: "avx512f"
  // Widest vector register in bits (128 / 256 / 512).
  int vector_bits() const;
  // Architectural vector registers: 32 with AVX-512F or on AArch64, else 16 (x86's ymm/xmm).
  int vector_registers() const;
  // "llvm -mtriple=... -mcpu=... -mattr=..." (parseable by parse_target()).
  std::string str() const;
  std::string feature_string() const; // comma-separated
};

// The host CPU, by its features.
Target host_target();
// "" or "llvm" -> host_target(); otherwise the options given replace detection (a missing
// -mcpu means "x86-64", a missing -mtriple the host triple). Throws std::invalid_argument.
Target parse_target(const std::string& s);

} // namespace mt::llvm_cpu
