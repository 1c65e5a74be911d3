// The values a chat template computes with: Python's objects as Jinja sees them (None, bool,
// int, float, str, list, dict, callables) plus Jinja's undefined, with Python's printing
// (str and repr), truth, equality and ordering -- a template prints "True", "1.0" and
// "['a', 1]" exactly as Python would, and that is what the model was trained on.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace mt::jinja {

class Value;

// A dict keeps its keys in insertion order (as Python's does, and json.dumps prints them so).
using List = std::vector<Value>;
using Dict = std::vector<std::pair<Value, Value>>;

// The arguments of a call: positional, then keyword (in the order written).
struct Args {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keyword;
  // The keyword argument `name`, else the positional one at `index` (npos: none), else nullptr.
  const Value* get(std::string_view name, size_t index = static_cast<size_t>(-1)) const;
};

using Function = std::function<Value(const Args&)>;

struct Undefined {
  std::string name; // what was looked up, for the error when it is used
};
struct None {};

// A mutable object whose attributes `{% set ns.x = ... %}` may assign: Jinja's namespace(),
// the one way to carry a value out of a loop body.
struct Namespace {
  Dict attributes;
};

class Value {
public:
  using Storage =
      std::variant<Undefined, None, bool, int64_t, double, std::string, std::shared_ptr<List>,
                   std::shared_ptr<Dict>, std::shared_ptr<Function>, std::shared_ptr<Namespace>>;

  Value() : v_(Undefined{}) {}
  Value(None) : v_(None{}) {}
  Value(bool b) : v_(b) {}
  Value(int i) : v_(static_cast<int64_t>(i)) {}
  Value(int64_t i) : v_(i) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(List l) : v_(std::make_shared<List>(std::move(l))) {}
  Value(Dict d) : v_(std::make_shared<Dict>(std::move(d))) {}
  Value(Function f) : v_(std::make_shared<Function>(std::move(f))) {}
  static Value undefined(std::string name) { return Value(Storage(Undefined{std::move(name)})); }
  // A Python tuple: a list that prints as (a, b) (dict.items() pairs, `(a, b)` literals).
  static Value tuple(List l) {
    Value v(std::move(l));
    v.tuple_ = true;
    return v;
  }
  static Value namespace_of(Dict attributes) {
    return Value(Storage(std::make_shared<Namespace>(Namespace{std::move(attributes)})));
  }

  bool is_undefined() const { return std::holds_alternative<Undefined>(v_); }
  bool is_none() const { return std::holds_alternative<None>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_float() const { return std::holds_alternative<double>(v_); }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return std::holds_alternative<std::string>(v_); }
  bool is_list() const { return std::holds_alternative<std::shared_ptr<List>>(v_); }
  bool is_tuple() const { return tuple_; }
  bool is_dict() const { return std::holds_alternative<std::shared_ptr<Dict>>(v_); }
  bool is_callable() const { return std::holds_alternative<std::shared_ptr<Function>>(v_); }
  bool is_namespace() const { return std::holds_alternative<std::shared_ptr<Namespace>>(v_); }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  const std::string& as_string() const { return std::get<std::string>(v_); }
  const List& as_list() const { return *std::get<std::shared_ptr<List>>(v_); }
  const Dict& as_dict() const { return *std::get<std::shared_ptr<Dict>>(v_); }
  const Function& as_callable() const { return *std::get<std::shared_ptr<Function>>(v_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(v_); }
  const std::string& undefined_name() const { return std::get<Undefined>(v_).name; }
  // A number as a double (bools are 0 and 1, as in Python).
  double number() const;

  // Python's bool(x); undefined is false.
  bool truthy() const;
  // Python's str(x) (undefined prints as nothing); repr(x) for the items of a list or dict.
  std::string str() const;
  std::string repr() const;
  // Python's type name, for error messages: "str", "int", "list", "dict", "NoneType", ...
  const char* type_name() const;

  // dict.get: the value at `key`, or nullptr.
  const Value* find(const Value& key) const;
  // The items to iterate: a list's, a dict's keys, a string's characters (UTF-8 code points);
  // undefined iterates as nothing. Anything else throws std::invalid_argument.
  List items() const;

  friend bool operator==(const Value& a, const Value& b);

private:
  explicit Value(Storage s) : v_(std::move(s)) {}
  std::string repr_at(int depth) const;
  Storage v_;
  bool tuple_ = false;
};

// Python's a < b for numbers, strings (by code point) and lists; throws std::invalid_argument
// for other pairs, naming both types.
bool less_than(const Value& a, const Value& b);

// Python's repr of a float: the shortest digits that read back to it, "1.0", "1e+20", "nan".
std::string float_repr(double d);

} // namespace mt::jinja
