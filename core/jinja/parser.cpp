// Jinja's grammar over the lexer's tokens (see parser.h).
#include "core/jinja/parser.h"

#include <initializer_list>
#include <string_view>

#include "core/jinja/error.h"

namespace mt::jinja {

namespace {

using K = Token::Kind;

ExprPtr node(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

// The parser's place in the token list; statements end at the block tags a caller names.
class Parser {
public:
  explicit Parser(const std::vector<Token>& t) : t_(t) {}

  Body template_body() { return statements({}); }

private:
  const Token& peek(size_t ahead = 0) const {
    const size_t i = std::min(i_ + ahead, t_.size() - 1);
    return t_[i];
  }
  const Token& next() {
    const Token& t = t_[i_];
    if (i_ + 1 < t_.size()) ++i_;
    return t;
  }
  [[noreturn]] void fail(const std::string& what) const { throw TemplateError(what, peek().line); }
  bool is_op(std::string_view op, size_t ahead = 0) const {
    return peek(ahead).kind == K::Op && peek(ahead).text == op;
  }
  bool is_name(std::string_view name, size_t ahead = 0) const {
    return peek(ahead).kind == K::Name && peek(ahead).text == name;
  }
  void expect_op(std::string_view op) {
    if (!is_op(op)) fail("expected '" + std::string(op) + "', found " + describe(peek()));
    next();
  }
  std::string expect_name() {
    if (peek().kind != K::Name) fail("expected a name, found " + describe(peek()));
    return next().text;
  }
  void expect_block_end() {
    if (peek().kind != K::BlockEnd) fail("expected '%}', found " + describe(peek()));
    next();
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
    case K::End:
      return "the end of the template";
    case K::BlockEnd:
      return "'%}'";
    case K::VarEnd:
      return "'}}'";
    case K::String:
      return "a string";
    default:
      return "'" + t.text + "'";
    }
  }

  // Statements up to a block tag whose name is in `ends` (the parser left standing on that
  // name).
  Body statements(std::initializer_list<std::string_view> ends) {
    Body body;
    for (;;) {
      const Token& t = peek();
      if (t.kind == K::End) {
        if (ends.size()) fail("missing '{% " + std::string(*(ends.end() - 1)) + " %}'");
        return body;
      }
      if (t.kind == K::Text) {
        auto s = stmt(Stmt::Kind::Text);
        s->text = next().text;
        body.push_back(std::move(s));
      } else if (t.kind == K::VarBegin) {
        next();
        auto s = stmt(Stmt::Kind::Output);
        s->expr = expression();
        if (peek().kind != K::VarEnd) fail("expected '}}', found " + describe(peek()));
        next();
        body.push_back(std::move(s));
      } else if (t.kind == K::BlockBegin) {
        const Token& name = peek(1);
        if (name.kind != K::Name) {
          next();
          fail("expected a tag name after '{%'");
        }
        for (std::string_view e : ends)
          if (name.text == e) {
            next(); // {%, leaving the parser on the end tag's name
            return body;
          }
        next();
        body.push_back(tag());
      } else {
        fail("unexpected " + describe(t));
      }
    }
  }

  StmtPtr stmt(Stmt::Kind kind) {
    auto s = std::make_unique<Stmt>();
    s->kind = kind;
    s->line = peek().line;
    return s;
  }

  // The end tag `name` (standing on it), with nothing after it.
  void close(std::string_view name) {
    if (!is_name(name)) fail("expected '{% " + std::string(name) + " %}'");
    next();
    expect_block_end();
  }

  // Bounds the recursion of nested blocks and expressions: a template is data from a
  // checkpoint folder, and ((((... a million deep must be an error, not a stack overflow.
  struct Nesting {
    explicit Nesting(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting)
        p_.fail("nested too deeply (more than " + std::to_string(kMaxNesting) + " levels)");
    }
    ~Nesting() { --p_.depth_; }
    Parser& p_;
  };
  static constexpr int kMaxNesting = 256;

  StmtPtr tag() {
    Nesting nesting(*this);
    const std::string name = peek().text;
    if (name == "if") return if_tag();
    if (name == "for") return for_tag();
    if (name == "set") return set_tag();
    if (name == "macro") return macro_tag();
    if (name == "break" || name == "continue") {
      auto s = stmt(name == "break" ? Stmt::Kind::Break : Stmt::Kind::Continue);
      next();
      expect_block_end();
      return s;
    }
    if (name == "generation") { // transformers' marker of the assistant's text: its body as is
      auto s = stmt(Stmt::Kind::Block);
      next();
      expect_block_end();
      s->bodies.push_back(statements({"endgeneration"}));
      close("endgeneration");
      return s;
    }
    if (name == "filter") {
      auto s = stmt(Stmt::Kind::Block);
      next();
      s->name = expect_name();
      expect_block_end();
      s->bodies.push_back(statements({"endfilter"}));
      close("endfilter");
      return s;
    }
    if (name == "elif" || name == "else" || name.rfind("end", 0) == 0)
      fail("unexpected '{% " + name + " %}'");
    fail("unknown tag '" + name + "'");
  }

  StmtPtr if_tag() {
    auto s = stmt(Stmt::Kind::If);
    next();
    s->conditions.push_back(expression());
    expect_block_end();
    for (;;) {
      s->bodies.push_back(statements({"elif", "else", "endif"}));
      if (is_name("elif")) {
        next();
        s->conditions.push_back(expression());
        expect_block_end();
      } else if (is_name("else")) {
        next();
        expect_block_end();
        s->bodies.push_back(statements({"endif"}));
        close("endif");
        return s;
      } else {
        close("endif");
        return s;
      }
    }
  }

  std::vector<std::string> targets() {
    std::vector<std::string> names;
    const bool paren = is_op("(");
    if (paren) next();
    names.push_back(expect_name());
    while (is_op(",")) {
      next();
      names.push_back(expect_name());
    }
    if (paren) expect_op(")");
    return names;
  }

  StmtPtr for_tag() {
    auto s = stmt(Stmt::Kind::For);
    next();
    s->targets = targets();
    if (!is_name("in")) fail("expected 'in' in the for tag, found " + describe(peek()));
    next();
    s->expr = or_expression(); // `if` after it filters the items, it is not a condition
    if (is_name("if")) {
      next();
      s->filter = expression();
    }
    if (is_name("recursive")) fail("recursive loops are not supported");
    expect_block_end();
    s->bodies.push_back(statements({"else", "endfor"}));
    if (is_name("else")) {
      next();
      expect_block_end();
      s->bodies.push_back(statements({"endfor"}));
    }
    close("endfor");
    return s;
  }

  StmtPtr set_tag() {
    auto s = stmt(Stmt::Kind::Set);
    next();
    if (peek().kind == K::Name && is_op(".", 1)) { // set ns.attr = ...
      s->targets.push_back(next().text);
      next();
      s->name = expect_name();
    } else {
      s->targets = targets();
    }
    if (peek().kind == K::BlockEnd || is_op("|")) {
      if (s->targets.size() != 1 || !s->name.empty()) fail("a set block assigns one name");
      if (is_op("|")) { // {% set x | filter %}: the block's text through the filter
        next();
        s->name = expect_name();
      }
      expect_block_end();
      s->kind = Stmt::Kind::SetBlock;
      s->bodies.push_back(statements({"endset"}));
      close("endset");
      return s;
    }
    expect_op("=");
    s->expr = tuple_or_expression();
    expect_block_end();
    return s;
  }

  StmtPtr macro_tag() {
    auto s = stmt(Stmt::Kind::Macro);
    next();
    s->name = expect_name();
    expect_op("(");
    while (!is_op(")")) {
      s->targets.push_back(expect_name());
      if (is_op("=")) {
        next();
        s->defaults.push_back(expression());
      } else {
        s->defaults.push_back(nullptr);
      }
      if (!is_op(")")) expect_op(",");
    }
    next();
    expect_block_end();
    s->bodies.push_back(statements({"endmacro"}));
    close("endmacro");
    return s;
  }

  // `a, b` without brackets (a tuple) where a set or a for allows it.
  ExprPtr tuple_or_expression() {
    ExprPtr first = expression();
    if (!is_op(",")) return first;
    auto t = node(Expr::Kind::List, first->line);
    t->name = "tuple";
    t->items.push_back(std::move(first));
    while (is_op(",")) {
      next();
      if (peek().kind == K::BlockEnd) break;
      t->items.push_back(expression());
    }
    return t;
  }

  ExprPtr expression() {
    ExprPtr e = or_expression();
    while (is_name("if")) {
      auto c = node(Expr::Kind::Condition, peek().line);
      next();
      c->a = std::move(e);
      c->b = or_expression();
      if (is_name("else")) {
        next();
        c->c = expression();
      }
      e = std::move(c);
    }
    return e;
  }

  ExprPtr binary(std::string op, ExprPtr a, ExprPtr b) {
    auto e = node(Expr::Kind::Binary, a->line);
    e->name = std::move(op);
    e->a = std::move(a);
    e->b = std::move(b);
    return e;
  }

  ExprPtr or_expression() {
    ExprPtr e = and_expression();
    while (is_name("or")) {
      next();
      e = binary("or", std::move(e), and_expression());
    }
    return e;
  }
  ExprPtr and_expression() {
    ExprPtr e = not_expression();
    while (is_name("and")) {
      next();
      e = binary("and", std::move(e), not_expression());
    }
    return e;
  }
  ExprPtr not_expression() {
    Nesting nesting(*this);
    if (is_name("not")) {
      auto e = node(Expr::Kind::Unary, peek().line);
      next();
      e->name = "not";
      e->a = not_expression();
      return e;
    }
    return comparison();
  }
  ExprPtr comparison() {
    ExprPtr e = sum();
    // Chained as in Python: a < b < c is a < b and b < c (b written once, evaluated twice
    // here, which only matters for side effects that templates do not have).
    ExprPtr chain;
    const Expr* last = nullptr; // the last link's right operand
    for (;;) {
      std::string op;
      if (peek().kind == K::Op &&
          (peek().text == "==" || peek().text == "!=" || peek().text == "<" || peek().text == ">" ||
           peek().text == "<=" || peek().text == ">=")) {
        op = next().text;
      } else if (is_name("in")) {
        next();
        op = "in";
      } else if (is_name("not") && is_name("in", 1)) {
        next();
        next();
        op = "not in";
      } else {
        break;
      }
      ExprPtr rhs = sum();
      ExprPtr lhs = chain ? clone(*last) : std::move(e);
      last = rhs.get();
      ExprPtr link = binary(op, std::move(lhs), std::move(rhs));
      chain = chain ? binary("and", std::move(chain), std::move(link)) : std::move(link);
    }
    return chain ? std::move(chain) : std::move(e);
  }
  // A copy of a parsed comparison operand (chained comparisons use it twice).
  static ExprPtr clone(const Expr& x) {
    auto e = std::make_unique<Expr>();
    e->kind = x.kind;
    e->line = x.line;
    e->value = x.value;
    e->name = x.name;
    e->negated = x.negated;
    if (x.a) e->a = clone(*x.a);
    if (x.b) e->b = clone(*x.b);
    if (x.c) e->c = clone(*x.c);
    for (const auto& i : x.items)
      e->items.push_back(i ? clone(*i) : nullptr);
    for (const auto& [k, v] : x.keywords)
      e->keywords.emplace_back(k, clone(*v));
    return e;
  }
  ExprPtr sum() {
    ExprPtr e = concat();
    while (is_op("+") || is_op("-")) {
      std::string op = next().text;
      e = binary(op, std::move(e), concat());
    }
    return e;
  }
  ExprPtr concat() {
    ExprPtr e = product();
    while (is_op("~")) {
      next();
      e = binary("~", std::move(e), product());
    }
    return e;
  }
  ExprPtr product() {
    ExprPtr e = power();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().text;
      e = binary(op, std::move(e), power());
    }
    return e;
  }
  ExprPtr power() {
    ExprPtr e = unary();
    while (is_op("**")) {
      next();
      e = binary("**", std::move(e), unary());
    }
    return e;
  }
  ExprPtr unary(bool with_filters = true) {
    Nesting nesting(*this);
    ExprPtr e;
    if (is_op("-") || is_op("+")) {
      e = node(Expr::Kind::Unary, peek().line);
      e->name = next().text;
      e->a = unary(false);
    } else {
      e = postfix(primary());
    }
    return with_filters ? filters_and_tests(std::move(e)) : std::move(e);
  }

  ExprPtr primary() {
    Nesting nesting(*this);
    const Token& t = peek();
    if (t.kind == K::Name) {
      next();
      auto e = node(Expr::Kind::Literal, t.line);
      if (t.text == "true" || t.text == "True")
        e->value = true;
      else if (t.text == "false" || t.text == "False")
        e->value = false;
      else if (t.text == "none" || t.text == "None")
        e->value = None{};
      else {
        e->kind = Expr::Kind::Name;
        e->name = t.text;
      }
      return e;
    }
    if (t.kind == K::String) {
      auto e = node(Expr::Kind::Literal, t.line);
      std::string s;
      while (peek().kind == K::String)
        s += next().text; // adjacent literals join
      e->value = std::move(s);
      return e;
    }
    if (t.kind == K::Int || t.kind == K::Float) {
      next();
      auto e = node(Expr::Kind::Literal, t.line);
      try {
        if (t.kind == K::Int)
          e->value = static_cast<int64_t>(std::stoll(t.text));
        else
          e->value = std::stod(t.text);
      } catch (const std::exception&) {
        throw TemplateError("number out of range: " + t.text, t.line);
      }
      return e;
    }
    if (is_op("(")) {
      next();
      if (is_op(")")) {
        next();
        auto empty = node(Expr::Kind::List, t.line);
        empty->name = "tuple";
        return empty;
      }
      ExprPtr e = expression();
      if (is_op(",")) {
        auto tuple = node(Expr::Kind::List, t.line);
        tuple->name = "tuple";
        tuple->items.push_back(std::move(e));
        while (is_op(",")) {
          next();
          if (is_op(")")) break;
          tuple->items.push_back(expression());
        }
        e = std::move(tuple);
      }
      expect_op(")");
      return e;
    }
    if (is_op("[")) {
      next();
      auto e = node(Expr::Kind::List, t.line);
      while (!is_op("]")) {
        e->items.push_back(expression());
        if (!is_op("]")) expect_op(",");
      }
      next();
      return e;
    }
    if (is_op("{")) {
      next();
      auto e = node(Expr::Kind::Dict, t.line);
      while (!is_op("}")) {
        e->items.push_back(expression());
        expect_op(":");
        e->items.push_back(expression());
        if (!is_op("}")) expect_op(",");
      }
      next();
      return e;
    }
    fail("unexpected " + describe(t));
  }

  void call_arguments(Expr& e) {
    expect_op("(");
    while (!is_op(")")) {
      if (peek().kind == K::Name && is_op("=", 1)) {
        std::string key = next().text;
        next();
        e.keywords.emplace_back(std::move(key), expression());
      } else {
        if (!e.keywords.empty()) fail("a positional argument follows a keyword argument");
        e.items.push_back(expression());
      }
      if (!is_op(")")) expect_op(",");
    }
    next();
  }

  ExprPtr postfix(ExprPtr e) {
    for (;;) {
      if (is_op(".")) {
        auto a = node(Expr::Kind::Attribute, peek().line);
        next();
        if (peek().kind == K::Int) { // x.0 is x[0]
          a->kind = Expr::Kind::Item;
          a->b = node(Expr::Kind::Literal, peek().line);
          a->b->value = static_cast<int64_t>(std::stoll(next().text));
        } else {
          a->name = expect_name();
        }
        a->a = std::move(e);
        e = std::move(a);
      } else if (is_op("[")) {
        const int line = peek().line;
        next();
        ExprPtr parts[3];
        int colons = 0;
        for (;;) {
          if (is_op(":")) {
            if (++colons > 2) fail("a slice has at most two ':'");
            next();
            continue;
          }
          if (is_op("]")) break;
          parts[colons] = expression();
          if (!is_op(":") && !is_op("]")) expect_op("]");
        }
        next();
        if (colons == 0) {
          if (!parts[0]) fail("empty subscript");
          auto i = node(Expr::Kind::Item, line);
          i->a = std::move(e);
          i->b = std::move(parts[0]);
          e = std::move(i);
        } else {
          auto s = node(Expr::Kind::Slice, line);
          s->a = std::move(e);
          for (auto& p : parts)
            s->items.push_back(std::move(p));
          e = std::move(s);
        }
      } else if (is_op("(")) {
        auto c = node(Expr::Kind::Call, peek().line);
        call_arguments(*c);
        c->a = std::move(e);
        e = std::move(c);
      } else {
        return e;
      }
    }
  }

  ExprPtr filters_and_tests(ExprPtr e) {
    for (;;) {
      if (is_op("|")) {
        auto f = node(Expr::Kind::Filter, peek().line);
        next();
        f->name = expect_name();
        while (is_op(".")) { // dotted filter names
          next();
          f->name += "." + expect_name();
        }
        if (is_op("(")) call_arguments(*f);
        f->a = std::move(e);
        e = postfix(std::move(f));
      } else if (is_name("is")) {
        auto t = node(Expr::Kind::Test, peek().line);
        next();
        if (is_name("not")) {
          next();
          t->negated = true;
        }
        t->name = expect_name();
        if (is_op("(")) {
          call_arguments(*t);
        } else if (starts_bare_argument()) {
          t->items.push_back(postfix(primary())); // `is divisibleby 3`, `is sameas false`
        }
        t->a = std::move(e);
        e = std::move(t);
      } else {
        return e;
      }
    }
  }
  // A test's one argument written without brackets?
  bool starts_bare_argument() const {
    const Token& t = peek();
    if (t.kind == K::String || t.kind == K::Int || t.kind == K::Float) return true;
    if (t.kind == K::Op) return t.text == "[" || t.text == "{" || t.text == "(";
    if (t.kind != K::Name) return false;
    for (const char* w : {"else", "or", "and", "is", "in", "not", "if"})
      if (t.text == w) return false;
    return true;
  }

  const std::vector<Token>& t_;
  size_t i_ = 0;
  int depth_ = 0;
};

} // namespace

Body parse(const std::vector<Token>& tokens) {
  return Parser(tokens).template_body();
}

} // namespace mt::jinja
