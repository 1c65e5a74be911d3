// The rewrite of generated CUDA C++ for the host compiler (cuda_to_cpp.h).
#include "cuda_to_cpp.h"

#include <cctype>
#include <cstring>
#include <regex>
#include <sstream>
#include <stdexcept>

namespace mt::gpu_test::emulator {

namespace {

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

std::string cuda_to_cpp(const std::string& cuda) {
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

} // namespace mt::gpu_test::emulator
