#include "metatune/llvm_cpu/target.hpp"

#include <algorithm>
#include <sstream>

#include <memory>

#include <llvm/ADT/StringMap.h>
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/TargetParser/Host.h>
#include <llvm/TargetParser/Triple.h>

#include "llvm_backend.h"

namespace mt::llvm_cpu {

bool Target::has(const std::string& feature) const {
  // Later entries win, as in LLVM's own feature strings.
  for (auto it = features.rbegin(); it != features.rend(); ++it)
    if (it->size() > 1 && it->compare(1, std::string::npos, feature) == 0) return (*it)[0] == '+';
  // Not listed: implied by the CPU (and by the listed features) or not.
  initialize_llvm();
  std::string err;
  const llvm::Target* t = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!t) return false;
  std::unique_ptr<llvm::MCSubtargetInfo> sti(
      t->createMCSubtargetInfo(triple, cpu, feature_string()));
  return sti && sti->checkFeatures("+" + feature);
}

int Target::vector_bits() const {
  if (has("avx512f")) return 512;
  if (has("avx") || has("avx2")) return 256;
  return 128;
}

int Target::vector_registers() const {
  if (has("avx512f")) return 32;
  if (triple.rfind("aarch64", 0) == 0 || triple.rfind("arm64", 0) == 0) return 32;
  return 16;
}

std::string Target::feature_string() const {
  std::string s;
  for (const auto& f : features) {
    if (!s.empty()) s += ',';
    s += f;
  }
  return s;
}

std::string Target::str() const {
  std::string s = "llvm -mtriple=" + triple + " -mcpu=" + cpu;
  if (!features.empty()) s += " -mattr=" + feature_string();
  return s;
}

Target host_target() {
  Target t;
  t.triple = llvm::sys::getProcessTriple();
  llvm::StringMap<bool> host;
  if (llvm::sys::getHostCPUFeatures(host)) {
    for (const auto& kv : host)
      t.features.push_back((kv.second ? "+" : "-") + kv.first().str());
    std::sort(t.features.begin(), t.features.end());
  }
  std::string name = llvm::sys::getHostCPUName().str();
  // LLVM 16 does not know some recent CPUs (AMD Zen 5 reads as "generic"): pick the x86-64
  // micro-architecture level that the detected features reach, so scheduling is sane, and
  // rely on the explicit feature list for the instructions.
  if (name.empty() || name == "generic" || name == "unknown") {
    if (llvm::Triple(t.triple).isX86()) {
      if (t.has("avx512f") && t.has("avx512bw") && t.has("avx512vl") && t.has("avx512dq"))
        name = "x86-64-v4";
      else if (t.has("avx2") && t.has("fma") && t.has("bmi2"))
        name = "x86-64-v3";
      else
        name = "x86-64";
    } else {
      name = "generic";
    }
  }
  t.cpu = name;
  return t;
}

Target parse_target(const std::string& s) {
  std::istringstream is(s);
  std::string word;
  std::vector<std::string> words;
  while (is >> word)
    words.push_back(word);
  if (words.empty() || (words.size() == 1 && words[0] == "llvm")) return host_target();
  if (words[0] != "llvm")
    throw std::invalid_argument("target string '" + s + "' must start with 'llvm'");
  Target t;
  for (size_t i = 1; i < words.size(); ++i) {
    const std::string& w = words[i];
    auto value = [&](const char* prefix) -> std::string {
      return w.substr(std::string(prefix).size());
    };
    if (w.rfind("-mcpu=", 0) == 0) {
      t.cpu = value("-mcpu=");
    } else if (w.rfind("-mtriple=", 0) == 0) {
      t.triple = value("-mtriple=");
    } else if (w.rfind("-mattr=", 0) == 0) {
      std::string list = value("-mattr=");
      std::stringstream ls(list);
      std::string f;
      while (std::getline(ls, f, ',')) {
        if (f.empty()) continue;
        if (f[0] != '+' && f[0] != '-')
          throw std::invalid_argument("target string '" + s + "': feature '" + f +
                                      "' needs a + or - sign");
        t.features.push_back(f);
      }
    } else {
      throw std::invalid_argument("target string '" + s + "': unknown option '" + w + "'");
    }
  }
  if (t.triple.empty()) t.triple = llvm::sys::getProcessTriple();
  if (t.cpu.empty()) t.cpu = llvm::Triple(t.triple).isX86() ? "x86-64" : "generic";
  return t;
}

} // namespace mt::llvm_cpu
