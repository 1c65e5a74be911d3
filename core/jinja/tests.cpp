// Jinja's tests (`x is defined`, `n is divisibleby(3)`; see builtins.h).
#include <functional>
#include <map>
#include <stdexcept>

#include "core/jinja/builtins.h"

namespace mt::jinja {

namespace {

using TestFn = std::function<bool(const Value&, const Args&)>;

const Value& operand(const Args& a, const char* test) {
  if (a.positional.empty())
    throw std::invalid_argument(std::string("the test '") + test + "' takes one argument");
  return a.positional[0];
}

const std::map<std::string, TestFn, std::less<>>& tests() {
  static const std::map<std::string, TestFn, std::less<>> t = [] {
    std::map<std::string, TestFn, std::less<>> m;
    m["defined"] = [](const Value& v, const Args&) { return !v.is_undefined(); };
    m["undefined"] = [](const Value& v, const Args&) { return v.is_undefined(); };
    m["none"] = [](const Value& v, const Args&) { return v.is_none(); };
    m["boolean"] = [](const Value& v, const Args&) { return v.is_bool(); };
    m["true"] = [](const Value& v, const Args&) { return v.is_bool() && v.as_bool(); };
    m["false"] = [](const Value& v, const Args&) { return v.is_bool() && !v.as_bool(); };
    m["integer"] = [](const Value& v, const Args&) { return v.is_int(); };
    m["float"] = [](const Value& v, const Args&) { return v.is_float(); };
    m["number"] = [](const Value& v, const Args&) { return v.is_number(); };
    m["string"] = [](const Value& v, const Args&) { return v.is_string(); };
    m["mapping"] = [](const Value& v, const Args&) { return v.is_dict(); };
    m["sequence"] = [](const Value& v, const Args&) {
      return v.is_string() || v.is_list() || v.is_dict();
    };
    m["iterable"] = [](const Value& v, const Args&) {
      return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
    };
    m["callable"] = [](const Value& v, const Args&) { return v.is_callable(); };
    m["lower"] = [](const Value& v, const Args&) {
      const std::string s = v.str();
      for (char c : s)
        if (std::isupper(static_cast<unsigned char>(c))) return false;
      return true;
    };
    m["upper"] = [](const Value& v, const Args&) {
      const std::string s = v.str();
      for (char c : s)
        if (std::islower(static_cast<unsigned char>(c))) return false;
      return true;
    };
    auto integer = [](const Value& v, const char* test) {
      if (!v.is_int() && !v.is_bool())
        throw std::invalid_argument(std::string("the test '") + test + "' needs an int, not " +
                                    v.type_name());
      return v.is_bool() ? int64_t{v.as_bool()} : v.as_int();
    };
    m["odd"] = [integer](const Value& v, const Args&) { return integer(v, "odd") % 2 != 0; };
    m["even"] = [integer](const Value& v, const Args&) { return integer(v, "even") % 2 == 0; };
    m["divisibleby"] = [integer](const Value& v, const Args& a) {
      const int64_t d = integer(operand(a, "divisibleby"), "divisibleby");
      if (d == 0) throw std::invalid_argument("integer division or modulo by zero");
      return integer(v, "divisibleby") % d == 0;
    };
    TestFn eq = [](const Value& v, const Args& a) { return v == operand(a, "eq"); };
    TestFn ne = [](const Value& v, const Args& a) { return !(v == operand(a, "ne")); };
    TestFn lt = [](const Value& v, const Args& a) { return less_than(v, operand(a, "lt")); };
    TestFn gt = [](const Value& v, const Args& a) { return less_than(operand(a, "gt"), v); };
    TestFn le = [](const Value& v, const Args& a) { return !less_than(operand(a, "le"), v); };
    TestFn ge = [](const Value& v, const Args& a) { return !less_than(v, operand(a, "ge")); };
    for (const char* n : {"eq", "equalto", "=="})
      m[n] = eq;
    for (const char* n : {"ne", "!="})
      m[n] = ne;
    for (const char* n : {"lt", "lessthan", "<"})
      m[n] = lt;
    for (const char* n : {"gt", "greaterthan", ">"})
      m[n] = gt;
    for (const char* n : {"le", "<="})
      m[n] = le;
    for (const char* n : {"ge", ">="})
      m[n] = ge;
    m["in"] = [](const Value& v, const Args& a) {
      const Value& seq = operand(a, "in");
      if (seq.is_string() && v.is_string())
        return seq.as_string().find(v.as_string()) != std::string::npos;
      if (seq.is_dict()) return seq.find(v) != nullptr;
      for (const Value& x : seq.items())
        if (x == v) return true;
      return false;
    };
    m["sameas"] = [](const Value& v, const Args& a) {
      const Value& o = operand(a, "sameas");
      // Python's `is`: None, True and False are singletons; other values are compared here
      // by value only when they are those.
      if (v.is_none() || o.is_none()) return v.is_none() && o.is_none();
      if (v.is_bool() || o.is_bool())
        return v.is_bool() && o.is_bool() && v.as_bool() == o.as_bool();
      return v == o;
    };
    return m;
  }();
  return t;
}

} // namespace

bool has_test(std::string_view name) {
  return tests().count(name) > 0;
}

bool apply_test(std::string_view name, const Value& input, const Args& args) {
  auto it = tests().find(name);
  if (it == tests().end()) throw std::invalid_argument("no test named '" + std::string(name) + "'");
  return it->second(input, args);
}

} // namespace mt::jinja
