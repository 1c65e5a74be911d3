#include "core/ir/structural.h"

#include <string_view>

#include "core/ir/printer.h"

namespace mt {

namespace {

std::string canonical(const Function& f) {
  return print(f, PrintOptions{.canonical = true});
}
std::string canonical(const Stmt& s) {
  return print(s, PrintOptions{.canonical = true});
}
std::string canonical(const Expr& e) {
  return print(e, PrintOptions{.canonical = true});
}

// The domain tag keeps a function, a statement and an expression with the same text apart and
// names the format version the hash belongs to.
uint64_t fnv1a(std::string_view domain, std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  auto mix = [&](std::string_view s) {
    for (char c : s) {
      h ^= static_cast<unsigned char>(c);
      h *= 0x100000001b3ULL;
    }
  };
  mix(domain);
  mix(text);
  return h;
}

} // namespace

bool structural_equal(const Function& a, const Function& b) {
  return canonical(a) == canonical(b);
}
bool structural_equal(const Stmt& a, const Stmt& b) {
  return canonical(a) == canonical(b);
}
bool structural_equal(const Expr& a, const Expr& b) {
  return canonical(a) == canonical(b);
}

uint64_t structural_hash(const Function& f) {
  return fnv1a("mt-ir-v1 function\n", canonical(f));
}
uint64_t structural_fingerprint(const Function& f) {
  return canonical_digest(f);
}
uint64_t structural_hash(const Stmt& s) {
  return fnv1a("mt-ir-v1 stmt\n", canonical(s));
}
uint64_t structural_hash(const Expr& e) {
  return fnv1a("mt-ir-v1 expr\n", canonical(e));
}

} // namespace mt
