// Rendering a parsed template (see template.h): statements write text, expressions evaluate
// to values with Python's semantics, names resolve through a stack of scopes -- one per loop
// iteration and macro call, so that a `set` inside them stays there, as in Jinja.
#include "core/jinja/template.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <unordered_map>
#include <variant>

#include "core/jinja/builtins.h"
#include "core/jinja/error.h"
#include "core/jinja/parser.h"

namespace mt::jinja {

namespace {

[[noreturn]] void undefined_error(const Value& v) {
  throw std::invalid_argument("'" + v.undefined_name() + "' is undefined");
}

int64_t integer_of(const Value& v) {
  return v.is_bool() ? int64_t{v.as_bool()} : v.as_int();
}

// Python's floor division and modulo (the result takes the divisor's sign).
int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value arithmetic(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) undefined_error(a);
  if (b.is_undefined()) undefined_error(b);
  if (op == "+") {
    if (a.is_string() && b.is_string()) return a.as_string() + b.as_string();
    if (a.is_list() && b.is_list()) {
      List l = a.as_list();
      l.insert(l.end(), b.as_list().begin(), b.as_list().end());
      return l;
    }
  }
  if (op == "*") {
    const Value* seq = a.is_string() || a.is_list()   ? &a
                       : b.is_string() || b.is_list() ? &b
                                                      : nullptr;
    const Value* n = seq == &a ? &b : &a;
    if (seq && (n->is_int() || n->is_bool())) {
      const int64_t times = std::max<int64_t>(0, integer_of(*n));
      const size_t unit = seq->is_string() ? seq->as_string().size() : seq->as_list().size();
      if (times > 0 && unit > 0 && static_cast<uint64_t>(times) > (size_t{1} << 28) / unit)
        throw std::invalid_argument("repetition too large (" + std::to_string(times) + " times)");
      if (seq->is_string()) {
        std::string s;
        for (int64_t i = 0; i < times; ++i)
          s += seq->as_string();
        return s;
      }
      List l;
      for (int64_t i = 0; i < times; ++i)
        l.insert(l.end(), seq->as_list().begin(), seq->as_list().end());
      return l;
    }
  }
  if (!a.is_number() || !b.is_number())
    throw std::invalid_argument(std::string("unsupported operand type(s) for ") + op + ": '" +
                                a.type_name() + "' and '" + b.type_name() + "'");
  const bool ints = !a.is_float() && !b.is_float();
  if (op == "/") {
    if (b.number() == 0) throw std::invalid_argument("division by zero");
    return a.number() / b.number();
  }
  if (ints) {
    const int64_t x = integer_of(a), y = integer_of(b);
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    if ((op == "//" || op == "%") && y == 0) throw std::invalid_argument("division by zero");
    if (op == "//") return floor_div(x, y);
    if (op == "%") return x - floor_div(x, y) * y;
    if (op == "**") {
      if (y < 0) return std::pow(static_cast<double>(x), static_cast<double>(y));
      int64_t r = 1;
      for (int64_t i = 0; i < y; ++i)
        r *= x;
      return r;
    }
  }
  const double x = a.number(), y = b.number();
  if (op == "+") return x + y;
  if (op == "-") return x - y;
  if (op == "*") return x * y;
  if ((op == "//" || op == "%") && y == 0) throw std::invalid_argument("float division by zero");
  if (op == "//") return std::floor(x / y);
  if (op == "%") {
    double m = std::fmod(x, y);
    if (m != 0 && ((m < 0) != (y < 0))) m += y;
    return m;
  }
  if (op == "**") return std::pow(x, y);
  throw std::invalid_argument("unknown operator " + op);
}

bool contains(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string())
      throw std::invalid_argument(
          std::string("'in <string>' requires string as left operand, not ") + item.type_name());
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_dict() || container.is_namespace()) return container.find(item) != nullptr;
  for (const Value& v : container.items())
    if (v == item) return true;
  return false;
}

// A render in progress: the scopes, and the statement being run (for the error's line).
class Renderer {
public:
  Renderer(const Dict& variables, int64_t max_steps) : max_steps_(max_steps) {
    frames_.emplace_back();
    for (auto& [k, v] : global_functions())
      frames_.back()[k.as_string()] = v;
    for (const auto& [k, v] : variables)
      if (k.is_string()) frames_.back()[k.as_string()] = v;
  }

  enum class Flow { Normal, Break, Continue };

  Flow run(const Body& body, std::string& out) {
    for (const StmtPtr& s : body) {
      line_ = s->line;
      step();
      const Flow f = statement(*s, out);
      if (f != Flow::Normal) return f;
    }
    return Flow::Normal;
  }
  int line() const { return line_; }

private:
  using Frame = std::unordered_map<std::string, Value>;

  // A template is data from a checkpoint folder: one that would run for minutes is stopped.
  void step() {
    if (++steps_ > max_steps_)
      throw std::invalid_argument("the template ran more than " + std::to_string(max_steps_) +
                                  " statements and loop iterations: stopped");
  }
  int64_t max_steps_;
  int64_t steps_ = 0;

  Value lookup(const std::string& name) const {
    for (auto f = frames_.rbegin(); f != frames_.rend(); ++f) {
      auto it = f->find(name);
      if (it != f->end()) return it->second;
    }
    return Value::undefined(name);
  }
  void assign(const std::vector<std::string>& targets, const Value& v) {
    if (targets.size() == 1) {
      frames_.back()[targets[0]] = v;
      return;
    }
    const List items = v.items();
    if (items.size() != targets.size())
      throw std::invalid_argument("cannot unpack " + std::to_string(items.size()) +
                                  " values into " + std::to_string(targets.size()) + " names");
    for (size_t i = 0; i < targets.size(); ++i)
      frames_.back()[targets[i]] = items[i];
  }

  Flow statement(const Stmt& s, std::string& out) {
    switch (s.kind) {
    case Stmt::Kind::Text:
      out += s.text;
      return Flow::Normal;
    case Stmt::Kind::Output:
      out += eval(*s.expr).str();
      return Flow::Normal;
    case Stmt::Kind::If:
      for (size_t i = 0; i < s.bodies.size(); ++i)
        if (i >= s.conditions.size() || eval(*s.conditions[i]).truthy())
          return run(s.bodies[i], out);
      return Flow::Normal;
    case Stmt::Kind::For:
      return for_loop(s, out);
    case Stmt::Kind::Set:
      if (!s.name.empty()) {
        const Value ns = lookup(s.targets[0]);
        if (!ns.is_namespace())
          throw std::invalid_argument("cannot assign attribute on non-namespace object");
        if (s.name[0] == '_') // as transformers' sandbox: no private-looking attributes
          throw std::invalid_argument("a namespace cannot store underscore-prefixed attributes ('" +
                                      s.name + "')");
        Value v = eval(*s.expr);
        Dict& attrs = ns.as_namespace().attributes;
        for (auto& [k, old] : attrs)
          if (k.is_string() && k.as_string() == s.name) {
            old = std::move(v);
            return Flow::Normal;
          }
        attrs.emplace_back(s.name, std::move(v));
      } else {
        assign(s.targets, eval(*s.expr));
      }
      return Flow::Normal;
    case Stmt::Kind::SetBlock: {
      std::string text;
      run(s.bodies[0], text);
      frames_.back()[s.targets[0]] =
          s.name.empty() ? Value(text) : apply_filter(s.name, Value(text), Args{});
      return Flow::Normal;
    }
    case Stmt::Kind::Macro:
      frames_.back()[s.name] = macro(s);
      return Flow::Normal;
    case Stmt::Kind::Break:
      return Flow::Break;
    case Stmt::Kind::Continue:
      return Flow::Continue;
    case Stmt::Kind::Block: {
      if (s.name.empty()) return run(s.bodies[0], out);
      std::string text;
      const Flow f = run(s.bodies[0], text);
      out += apply_filter(s.name, Value(text), Args{}).str();
      return f;
    }
    }
    return Flow::Normal;
  }

  Flow for_loop(const Stmt& s, std::string& out) {
    const Value seq = eval(*s.expr);
    List items = seq.items();
    if (s.filter) { // `for x in xs if cond`: the loop sees only the items that pass
      List kept;
      for (const Value& item : items) {
        frames_.emplace_back();
        assign(s.targets, item);
        const bool keep = eval(*s.filter).truthy();
        frames_.pop_back();
        if (keep) kept.push_back(item);
      }
      items = std::move(kept);
    }
    const auto n = static_cast<int64_t>(items.size());
    // loop.changed(x)'s memory: the arguments of its last call, across the iterations.
    auto changed_last = std::make_shared<Value>(Value::undefined("changed"));
    for (int64_t i = 0; i < n; ++i) {
      step();
      frames_.emplace_back();
      assign(s.targets, items[static_cast<size_t>(i)]);
      Dict loop = {
          {"index", i + 1},  {"index0", i},        {"revindex", n - i}, {"revindex0", n - i - 1},
          {"first", i == 0}, {"last", i == n - 1}, {"length", n},       {"depth", 1},
          {"depth0", 0}};
      loop.emplace_back("previtem",
                        i > 0 ? items[static_cast<size_t>(i - 1)] : Value::undefined("previtem"));
      loop.emplace_back("nextitem", i + 1 < n ? items[static_cast<size_t>(i + 1)]
                                              : Value::undefined("nextitem"));
      loop.emplace_back("cycle", Value(Function([i](const Args& a) {
                          if (a.positional.empty())
                            throw std::invalid_argument("no items for cycling given");
                          return a.positional[static_cast<size_t>(i) % a.positional.size()];
                        })));
      loop.emplace_back("changed", Value(Function([last = changed_last](const Args& a) {
                          Value now(a.positional);
                          const bool changed = !(*last == now);
                          *last = std::move(now);
                          return Value(changed);
                        })));
      frames_.back()["loop"] = Value(std::move(loop));
      const Flow f = run(s.bodies[0], out);
      frames_.pop_back();
      if (f == Flow::Break) break;
    }
    if (n == 0 && s.bodies.size() > 1) run(s.bodies[1], out);
    return Flow::Normal;
  }

  // A macro as a function: its parameters bound in a scope of their own over the caller's.
  Value macro(const Stmt& s) {
    return Value(Function([this, &s](const Args& args) {
      if (args.positional.size() > s.targets.size())
        throw std::invalid_argument("macro '" + s.name + "' takes " +
                                    std::to_string(s.targets.size()) + " arguments");
      Frame frame;
      for (size_t i = 0; i < s.targets.size(); ++i) {
        if (const Value* v = args.get(s.targets[i], i))
          frame[s.targets[i]] = *v;
        else if (s.defaults[i])
          frame[s.targets[i]] = eval(*s.defaults[i]);
        else
          frame[s.targets[i]] = Value::undefined(s.targets[i]);
      }
      for (const auto& [k, v] : args.keyword) {
        if (std::find(s.targets.begin(), s.targets.end(), k) == s.targets.end())
          throw std::invalid_argument("macro '" + s.name + "' takes no keyword argument '" + k +
                                      "'");
      }
      if (macro_depth_ >= kMaxMacroDepth)
        throw std::invalid_argument("macro '" + s.name + "': calls nested more than " +
                                    std::to_string(kMaxMacroDepth) + " deep");
      const int saved = line_;
      ++macro_depth_;
      frames_.push_back(std::move(frame));
      std::string text;
      run(s.bodies[0], text);
      frames_.pop_back();
      --macro_depth_;
      line_ = saved;
      return Value(std::move(text));
    }));
  }

  Args arguments(const Expr& e) {
    Args a;
    for (const ExprPtr& x : e.items)
      a.positional.push_back(eval(*x));
    for (const auto& [k, x] : e.keywords)
      a.keyword.emplace_back(k, eval(*x));
    return a;
  }

  Value eval(const Expr& e) {
    switch (e.kind) {
    case Expr::Kind::Literal:
      return e.value;
    case Expr::Kind::Name:
      return lookup(e.name);
    case Expr::Kind::List: {
      List l;
      for (const ExprPtr& x : e.items)
        l.push_back(eval(*x));
      return e.name == "tuple" ? Value::tuple(std::move(l)) : Value(std::move(l));
    }
    case Expr::Kind::Dict: {
      Dict d;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value k = eval(*e.items[i]);
        Value v = eval(*e.items[i + 1]);
        bool replaced = false;
        for (auto& [key, old] : d)
          if (key == k) old = v, replaced = true;
        if (!replaced) d.emplace_back(std::move(k), std::move(v));
      }
      return d;
    }
    case Expr::Kind::Attribute: {
      const Value obj = eval(*e.a);
      if (obj.is_undefined()) undefined_error(obj);
      return get_attribute(obj, e.name);
    }
    case Expr::Kind::Item: {
      const Value obj = eval(*e.a);
      if (obj.is_undefined()) undefined_error(obj);
      return get_item(obj, eval(*e.b));
    }
    case Expr::Kind::Slice: {
      const Value obj = eval(*e.a);
      if (obj.is_undefined()) undefined_error(obj);
      Value bounds[3];
      const Value* p[3] = {nullptr, nullptr, nullptr};
      for (size_t i = 0; i < 3; ++i)
        if (e.items[i]) {
          bounds[i] = eval(*e.items[i]);
          if (!bounds[i].is_none()) p[i] = &bounds[i];
        }
      return get_slice(obj, p[0], p[1], p[2]);
    }
    case Expr::Kind::Call: {
      const Value f = eval(*e.a);
      if (f.is_undefined()) undefined_error(f);
      if (!f.is_callable())
        throw std::invalid_argument(std::string("'") + f.type_name() + "' object is not callable");
      return f.as_callable()(arguments(e));
    }
    case Expr::Kind::Filter: {
      const Value input = eval(*e.a);
      return apply_filter(e.name, input, arguments(e));
    }
    case Expr::Kind::Test: {
      const Value input = eval(*e.a);
      return apply_test(e.name, input, arguments(e)) != e.negated;
    }
    case Expr::Kind::Unary: {
      const Value v = eval(*e.a);
      if (e.name == "not") return !v.truthy();
      if (v.is_undefined()) undefined_error(v);
      if (!v.is_number())
        throw std::invalid_argument("bad operand type for unary " + e.name + ": '" + v.type_name() +
                                    "'");
      if (e.name == "+") return v.is_float() ? v : Value(integer_of(v));
      return v.is_float() ? Value(-v.as_float()) : Value(-integer_of(v));
    }
    case Expr::Kind::Binary:
      return binary(e);
    case Expr::Kind::Condition:
      if (eval(*e.b).truthy()) return eval(*e.a);
      return e.c ? eval(*e.c) : Value::undefined("conditional expression");
    }
    return Value();
  }

  Value binary(const Expr& e) {
    const std::string& op = e.name;
    if (op == "and") {
      Value a = eval(*e.a);
      return a.truthy() ? eval(*e.b) : a;
    }
    if (op == "or") {
      Value a = eval(*e.a);
      return a.truthy() ? a : eval(*e.b);
    }
    const Value a = eval(*e.a), b = eval(*e.b);
    if (op == "~") return a.str() + b.str();
    if (op == "==") return a == b;
    if (op == "!=") return !(a == b);
    if (op == "<") return less_than(a, b);
    if (op == ">") return less_than(b, a);
    if (op == "<=") return less_than(a, b) || a == b;
    if (op == ">=") return less_than(b, a) || a == b;
    if (op == "in") return contains(b, a);
    if (op == "not in") return !contains(b, a);
    return arithmetic(op, a, b);
  }

  std::vector<Frame> frames_;
  int line_ = 0;
  static constexpr int kMaxMacroDepth =
      64; // recursion of macros (jinja2's would hit Python's limit)
  int macro_depth_ = 0;
};

} // namespace

Template::Template(std::string_view source, const LexOptions& options)
    : body_(parse(lex(source, options))) {}

std::string Template::render(const Dict& variables, int64_t max_steps) const {
  Renderer r(variables, max_steps);
  std::string out;
  try {
    r.run(body_, out);
  } catch (const TemplateError& e) {
    if (e.line() > 0) throw;
    throw TemplateError(e.message(), r.line()); // raised by a function the template called
  } catch (const std::bad_variant_access&) {    // a filter or method given the wrong type
    throw TemplateError("an argument of the wrong type (a number where text is needed, or the "
                        "other way round)",
                        r.line());
  } catch (const std::exception& e) {
    throw TemplateError(e.what(), r.line());
  }
  return out;
}

} // namespace mt::jinja
