#include "core/ir/parser.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <deque>
#include <limits>
#include <optional>
#include <unordered_map>

#include "core/ir/printer.h"

namespace mt {

ParseError::ParseError(std::string_view source, int line, int column, const std::string& message)
    : std::runtime_error(std::string(source) + ":" + std::to_string(line) + ":" +
                         std::to_string(column) + ": error: " + message),
      source_(source), line_(line), column_(column), message_(message) {}

namespace {

using ir_text::dtype_name;
using ir_text::parse_dtype_name;

enum class Tok : uint8_t { End, Ident, String, Int, Float, Punct };

struct Token {
  Tok kind = Tok::End;
  std::string text; // identifier, decoded string, punctuation, or the literal as written
  int line = 1;
  int col = 1;
  // Int: magnitude (the sign is a separate '-'); `overflow` when it does not fit in 64 bits.
  uint64_t magnitude = 0;
  bool overflow = false;
  bool hex = false;
  double fvalue = 0;  // Float
  std::string digits; // Int/Float: the number without its suffix
  std::optional<DType> suffix;
};

struct Loc {
  int line;
  int col;
};

std::string describe(const Token& t) {
  switch (t.kind) {
  case Tok::End:
    return "end of input";
  case Tok::Ident:
    return "'" + t.text + "'";
  case Tok::String:
    return "string " + ir_text::quote(t.text);
  case Tok::Int:
    return "integer literal '" + t.text + "'";
  case Tok::Float:
    return "float literal '" + t.text + "'";
  case Tok::Punct:
    return "'" + t.text + "'";
  }
  return "token";
}

bool ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool digit(char c) {
  return c >= '0' && c <= '9';
}
bool ident_char(char c) {
  return ident_start(c) || digit(c) || c == '.';
}
int hex_value(char c) {
  if (digit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Lexer {
public:
  Lexer(std::string_view text, std::string_view source) : text_(text), source_(source) {}

  [[noreturn]] void fail(int line, int col, const std::string& msg) const {
    throw ParseError(source_, line, col, msg);
  }

  Token next() {
    skip_space();
    Token t;
    t.line = line_;
    t.col = col_;
    if (pos_ >= text_.size()) return t;
    char c = text_[pos_];
    if (ident_start(c)) {
      size_t b = pos_;
      while (pos_ < text_.size() && ident_char(text_[pos_]))
        advance();
      t.kind = Tok::Ident;
      t.text = std::string(text_.substr(b, pos_ - b));
      return t;
    }
    if (digit(c)) return number(t);
    if (c == '"') return string(t);
    static const char* const two[] = {"==", "!=", "<=", ">=", "&&", "||", "//"};
    for (const char* p : two) {
      if (text_.substr(pos_, 2) == p) {
        advance();
        advance();
        t.kind = Tok::Punct;
        t.text = p;
        return t;
      }
    }
    if (std::string_view("()[]{},:=<>+-*/%!@").find(c) != std::string_view::npos) {
      advance();
      t.kind = Tok::Punct;
      t.text = std::string(1, c);
      return t;
    }
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u > 0x7e) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", u);
      fail(t.line, t.col, std::string("unexpected byte '") + buf + "'");
    }
    fail(t.line, t.col, std::string("unexpected character '") + c + "'");
  }

private:
  void advance() {
    if (text_[pos_] == '\n') {
      ++line_;
      col_ = 1;
    } else {
      ++col_;
    }
    ++pos_;
  }

  void skip_space() {
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        advance();
      } else if (c == '#') {
        while (pos_ < text_.size() && text_[pos_] != '\n')
          advance();
      } else {
        break;
      }
    }
  }

  Token number(Token& t) {
    size_t b = pos_;
    if (text_[pos_] == '0' && pos_ + 1 < text_.size() &&
        (text_[pos_ + 1] == 'x' || text_[pos_ + 1] == 'X')) {
      advance();
      advance();
      size_t digits = 0;
      while (pos_ < text_.size() && hex_value(text_[pos_]) >= 0) {
        if (t.magnitude >> 60) t.overflow = true;
        t.magnitude = (t.magnitude << 4) | static_cast<uint64_t>(hex_value(text_[pos_]));
        advance();
        ++digits;
      }
      t.kind = Tok::Int;
      t.hex = true;
      t.text = std::string(text_.substr(b, pos_ - b));
      if (digits == 0) fail(t.line, t.col, "hexadecimal literal needs digits");
      if (pos_ < text_.size() && ident_char(text_[pos_]))
        fail(line_, col_, "unexpected character after hexadecimal literal");
      return t;
    }
    bool is_float = false;
    while (pos_ < text_.size() && digit(text_[pos_]))
      advance();
    if (pos_ + 1 < text_.size() && text_[pos_] == '.' && digit(text_[pos_ + 1])) {
      is_float = true;
      advance();
      while (pos_ < text_.size() && digit(text_[pos_]))
        advance();
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      size_t p = pos_ + 1;
      if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) ++p;
      if (p < text_.size() && digit(text_[p])) {
        is_float = true;
        while (pos_ < p)
          advance();
        while (pos_ < text_.size() && digit(text_[pos_]))
          advance();
      }
    }
    std::string_view num = text_.substr(b, pos_ - b);
    t.text = std::string(num);
    t.digits = t.text;
    if (is_float) {
      t.kind = Tok::Float;
      auto res = std::from_chars(num.data(), num.data() + num.size(), t.fvalue);
      if (res.ec == std::errc::result_out_of_range)
        fail(t.line, t.col, "float literal '" + t.text + "' is out of range");
      if (res.ec != std::errc() || res.ptr != num.data() + num.size())
        fail(t.line, t.col, "malformed float literal '" + t.text + "'");
    } else {
      t.kind = Tok::Int;
      for (char d : num) {
        uint64_t v = static_cast<uint64_t>(d - '0');
        if (t.magnitude > (std::numeric_limits<uint64_t>::max() - v) / 10) t.overflow = true;
        t.magnitude = t.magnitude * 10 + v;
      }
    }
    if (pos_ < text_.size() && ident_start(text_[pos_])) {
      int sl = line_, sc = col_;
      size_t s = pos_;
      while (pos_ < text_.size() && ident_char(text_[pos_]))
        advance();
      std::string_view suffix = text_.substr(s, pos_ - s);
      t.suffix = parse_dtype_name(suffix);
      if (!t.suffix)
        fail(sl, sc, "invalid literal suffix '" + std::string(suffix) + "' (expected a dtype)");
      t.text += suffix;
    }
    return t;
  }

  Token string(Token& t) {
    advance(); // opening quote
    t.kind = Tok::String;
    while (true) {
      if (pos_ >= text_.size() || text_[pos_] == '\n')
        fail(t.line, t.col, "unterminated string literal");
      char c = text_[pos_];
      if (c == '"') {
        advance();
        return t;
      }
      if (c != '\\') {
        t.text += c;
        advance();
        continue;
      }
      int el = line_, ec = col_;
      advance();
      if (pos_ >= text_.size()) fail(t.line, t.col, "unterminated string literal");
      char e = text_[pos_];
      advance();
      switch (e) {
      case '"':
        t.text += '"';
        break;
      case '\\':
        t.text += '\\';
        break;
      case 'n':
        t.text += '\n';
        break;
      case 't':
        t.text += '\t';
        break;
      case 'r':
        t.text += '\r';
        break;
      case 'x': {
        int hi = pos_ < text_.size() ? hex_value(text_[pos_]) : -1;
        int lo = pos_ + 1 < text_.size() ? hex_value(text_[pos_ + 1]) : -1;
        if (hi < 0 || lo < 0) fail(el, ec, "'\\x' escape needs two hexadecimal digits");
        advance();
        advance();
        t.text += static_cast<char>(hi * 16 + lo);
        break;
      }
      default:
        fail(el, ec, "unknown escape sequence in string literal");
      }
    }
  }

  std::string_view text_;
  std::string_view source_;
  size_t pos_ = 0;
  int line_ = 1;
  int col_ = 1;
};

class Parser {
public:
  Parser(std::string_view text, std::string_view source) : lex_(text, source), source_(source) {}

  // Where the most recently consumed token started.
  Loc last_location() const { return last_; }

  Function function() {
    Function f;
    f.lowered = accept_ident("lowered");
    expect_ident("func", "expected 'func' at start of function");
    f.name = expect_name("function name");
    expect("(", "expected '(' after function name");
    scopes_.emplace_back();
    if (!accept(")")) {
      do {
        Loc at = loc();
        std::string name = expect_name("parameter name");
        expect(":", "expected ':' after parameter name");
        f.params.push_back(declare_buffer(name, buffer_type(name), at));
      } while (accept(","));
      expect(")", "expected ')' after parameters");
    }
    expect("{", "expected '{' to open function body");
    // Declarations come before the first statement.
    while (true) {
      if (accept_ident("buffer")) {
        Loc at = loc();
        std::string name = expect_name("buffer name");
        expect(":", "expected ':' after buffer name");
        f.buffers.push_back(declare_buffer(name, buffer_type(name), at));
      } else if (accept_ident("extern")) {
        Loc at = loc();
        std::string name = expect_name("buffer name");
        expect(":", "expected ':' after buffer name");
        declare_buffer(name, buffer_type(name), at);
      } else if (accept_ident("var")) {
        Loc at = loc();
        std::string name = expect_name("variable name");
        expect(":", "expected ':' after variable name");
        DType t = dtype("variable type");
        declare_var(make_var(name, t), at);
      } else {
        break;
      }
    }
    f.body = stmt_list();
    expect("}", "expected '}' to close function body");
    if (peek().kind != Tok::End)
      fail(peek(), "expected end of input after function, found " + describe(peek()));
    return f;
  }

private:
  // ---- tokens ---------------------------------------------------------------------------------

  const Token& peek(size_t k = 0) {
    while (ahead_.size() <= k)
      ahead_.push_back(lex_.next());
    return ahead_[k];
  }
  Token take() {
    peek();
    Token t = std::move(ahead_.front());
    ahead_.pop_front();
    last_ = {t.line, t.col};
    return t;
  }
  Loc loc() { return {peek().line, peek().col}; }

  [[noreturn]] void fail(Loc at, const std::string& msg) const {
    throw ParseError(source_, at.line, at.col, msg);
  }
  [[noreturn]] void fail(const Token& t, const std::string& msg) const {
    fail(Loc{t.line, t.col}, msg);
  }

  bool is_punct(const Token& t, std::string_view p) const {
    return t.kind == Tok::Punct && t.text == p;
  }
  bool is_ident(const Token& t, std::string_view w) const {
    return t.kind == Tok::Ident && t.text == w;
  }

  bool accept(std::string_view p) {
    if (!is_punct(peek(), p)) return false;
    take();
    return true;
  }
  bool accept_ident(std::string_view w) {
    if (!is_ident(peek(), w)) return false;
    take();
    return true;
  }
  void expect(std::string_view p, const std::string& msg) {
    if (!accept(p)) fail(peek(), msg + ", found " + describe(peek()));
  }
  void expect_ident(std::string_view w, const std::string& msg) {
    if (!accept_ident(w)) fail(peek(), msg + ", found " + describe(peek()));
  }

  bool is_name(const Token& t) const {
    return t.kind == Tok::String || (t.kind == Tok::Ident && !ir_text::is_reserved_word(t.text));
  }

  std::string expect_name(const std::string& what) {
    const Token& t = peek();
    if (t.kind == Tok::Ident && ir_text::is_reserved_word(t.text))
      fail(t,
           "expected " + what + ", found keyword '" + t.text + "' (quote it to use it as a name)");
    if (!is_name(t)) fail(t, "expected " + what + ", found " + describe(t));
    return take().text;
  }

  // A plain decimal integer, optionally negative (shapes, extents, annotation values).
  int64_t integer(const std::string& what) {
    Loc at = loc();
    bool neg = accept("-");
    const Token& t = peek();
    if (t.kind != Tok::Int || t.hex || t.suffix)
      fail(t, "expected " + what + ", found " + describe(t));
    Token n = take();
    return checked_int(n, neg, at);
  }

  int64_t checked_int(const Token& t, bool negative, Loc at) const {
    uint64_t limit = negative ? (uint64_t(1) << 63) : uint64_t(std::numeric_limits<int64_t>::max());
    if (t.overflow || t.magnitude > limit)
      fail(at,
           "integer literal '" + std::string(negative ? "-" : "") + t.text + "' is out of range");
    // Two's complement negation in unsigned arithmetic: -2^63 has no positive counterpart.
    return static_cast<int64_t>(negative ? uint64_t(0) - t.magnitude : t.magnitude);
  }

  DType dtype(const std::string& what) {
    const Token& t = peek();
    if (t.kind == Tok::Ident) {
      if (auto d = parse_dtype_name(t.text)) {
        take();
        return *d;
      }
      fail(t, "unknown dtype '" + t.text + "'");
    }
    fail(t, "expected " + what + ", found " + describe(t));
  }

  // RAII bound on recursion through nested constructs.
  class Nest {
  public:
    explicit Nest(Parser& p) : p_(p) {
      if (++p_.nesting_ > kMaxParseNesting)
        p_.fail(p_.peek(), "nesting too deep (limit " + std::to_string(kMaxParseNesting) + ")");
    }
    ~Nest() { --p_.nesting_; }
    Nest(const Nest&) = delete;
    Nest& operator=(const Nest&) = delete;

  private:
    Parser& p_;
  };

  // ---- scopes ---------------------------------------------------------------------------------

  struct Scope {
    std::unordered_map<std::string, Expr> vars;
    std::unordered_map<std::string, Buffer> buffers;
  };

  void declare_var(const Expr& v, Loc at) {
    if (!scopes_.back().vars.emplace(v->name, v).second)
      fail(at, "redefinition of variable '" + v->name + "'");
  }
  Buffer declare_buffer(const std::string& name, const Buffer& b, Loc at) {
    if (!scopes_.back().buffers.emplace(name, b).second)
      fail(at, "redefinition of buffer '" + name + "'");
    return b;
  }
  Expr lookup_var(const std::string& name, Loc at) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->vars.find(name);
      if (found != it->vars.end()) return found->second;
    }
    fail(at, "use of undeclared variable '" + name + "'");
  }
  Buffer lookup_buffer(const std::string& name, Loc at) const {
    for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
      auto found = it->buffers.find(name);
      if (found != it->buffers.end()) return found->second;
    }
    fail(at, "use of undeclared buffer '" + name + "'");
  }

  // dtype '[' shape ']' ['@' scope]
  Buffer buffer_type(const std::string& name) {
    DType t = dtype("buffer element type");
    expect("[", "expected '[' before buffer shape");
    std::vector<int64_t> shape;
    if (!accept("]")) {
      do {
        shape.push_back(integer("buffer dimension"));
      } while (accept(","));
      expect("]", "expected ']' after buffer shape");
    }
    std::string scope = "global";
    if (accept("@")) scope = expect_name("memory scope");
    return make_buffer(name, t, std::move(shape), std::move(scope));
  }

  // ---- statements -----------------------------------------------------------------------------

  // Statements up to the closing '}': none is null, one is itself, more are a Seq.
  Stmt stmt_list() {
    std::vector<Stmt> items;
    while (!is_punct(peek(), "}")) {
      if (peek().kind == Tok::End) fail(peek(), "expected '}' before end of input");
      items.push_back(stmt());
    }
    if (items.empty()) return nullptr;
    if (items.size() == 1) return items[0];
    auto seq = std::make_shared<SeqNode>();
    seq->stmts = std::move(items);
    return seq;
  }

  Stmt braced_list(const std::string& what) {
    Nest nest(*this);
    expect("{", "expected '{' to open " + what);
    Stmt s = stmt_list();
    expect("}", "expected '}' to close " + what);
    return s;
  }

  Stmt stmt() {
    const Token& t = peek();
    if (is_ident(t, "for")) return for_stmt();
    if (is_ident(t, "if")) return if_stmt();
    if (is_ident(t, "alloc")) return alloc_stmt();
    if (is_ident(t, "block")) return block_stmt();
    if (is_ident(t, "seq")) {
      take();
      Nest nest(*this);
      expect("{", "expected '{' after 'seq'");
      auto seq = std::make_shared<SeqNode>();
      while (!accept("}")) {
        if (peek().kind == Tok::End) fail(peek(), "expected '}' before end of input");
        seq->stmts.push_back(stmt());
      }
      return seq;
    }
    if (is_name(t) && is_punct(peek(1), "[")) return store_stmt();
    if (t.kind == Tok::Ident && ir_text::is_reserved_word(t.text))
      fail(t, "expected a statement, found keyword '" + t.text + "'");
    fail(t, "expected a statement, found " + describe(t));
  }

  Annotations annotations() {
    Annotations ann;
    if (!accept_ident("attrs")) return ann;
    expect("(", "expected '(' after 'attrs'");
    if (accept(")")) return ann;
    do {
      Loc at = loc();
      if (peek().kind != Tok::String && peek().kind != Tok::Ident)
        fail(peek(), "expected annotation key, found " + describe(peek()));
      std::string key = take().text;
      expect(":", "expected ':' after annotation key");
      AnnValue value;
      if (peek().kind == Tok::String)
        value = take().text;
      else
        value = integer("annotation value (integer or string)");
      if (!ann.emplace(key, std::move(value)).second)
        fail(at, "duplicate annotation key " + ir_text::quote(key));
    } while (accept(","));
    expect(")", "expected ')' after annotations");
    return ann;
  }

  Stmt for_stmt() {
    take();
    Loc at = loc();
    std::string name = expect_name("loop variable name");
    DType t = DType::i64();
    if (accept(":")) t = dtype("loop variable type");
    expect_ident("in", "expected 'in' after loop variable");
    int64_t extent = integer("loop extent");
    ForKind kind = ForKind::Serial;
    std::string tag;
    if (peek().kind == Tok::Ident && parse_for_kind(peek().text, &kind)) {
      take();
      if (accept("(")) {
        if (peek().kind != Tok::String)
          fail(peek(), "expected thread tag string, found " + describe(peek()));
        tag = take().text;
        expect(")", "expected ')' after thread tag");
      }
    }
    Annotations ann = annotations();
    Expr var = make_var(name, t);
    scopes_.emplace_back();
    declare_var(var, at);
    Stmt body = braced_list("loop body");
    scopes_.pop_back();
    return make_for(var, extent, body, kind, tag, std::move(ann));
  }

  Stmt if_stmt() {
    Nest nest(*this); // else-if chains recurse
    take();
    Expr cond = expr();
    Stmt then_case = braced_list("'if' body");
    Stmt else_case;
    if (accept_ident("else")) {
      if (is_ident(peek(), "if"))
        else_case = if_stmt();
      else
        else_case = braced_list("'else' body");
    }
    return make_if(cond, then_case, else_case);
  }

  Stmt alloc_stmt() {
    take();
    Loc at = loc();
    std::string name = expect_name("buffer name");
    expect(":", "expected ':' after buffer name");
    Buffer b = buffer_type(name);
    scopes_.emplace_back();
    declare_buffer(name, b, at);
    Stmt body = braced_list("'alloc' body");
    scopes_.pop_back();
    return make_allocate(b, body);
  }

  Stmt block_stmt() {
    take();
    Block block;
    block.name = expect_name("block name");
    expect("(", "expected '(' after block name");
    std::vector<Expr> values;
    std::vector<Loc> var_locs;
    if (!accept(")")) {
      do {
        var_locs.push_back(loc());
        std::string name = expect_name("iter var name");
        expect(":", "expected ':' after iter var name");
        DType t = DType::i64();
        if (peek().kind == Tok::Ident && parse_dtype_name(peek().text)) t = dtype("iter var type");
        IterVar iv;
        if (accept_ident("S"))
          iv.kind = IterKind::Spatial;
        else if (accept_ident("R"))
          iv.kind = IterKind::Reduce;
        else
          fail(peek(), "expected iter var kind 'S' or 'R', found " + describe(peek()));
        expect("[", "expected '[' before iter var extent");
        iv.extent = integer("iter var extent");
        expect("]", "expected ']' after iter var extent");
        expect("=", "expected '=' before iter var binding");
        // Bindings are evaluated outside the block, before any iter var is in scope.
        values.push_back(expr());
        iv.var = make_var(name, t);
        block.iter_vars.push_back(iv);
      } while (accept(","));
      expect(")", "expected ')' after iter vars");
    }
    Expr predicate;
    if (accept_ident("where")) predicate = expr();
    block.annotations = annotations();
    scopes_.emplace_back();
    for (size_t i = 0; i < block.iter_vars.size(); ++i)
      declare_var(block.iter_vars[i].var, var_locs[i]);
    {
      Nest nest(*this);
      expect("{", "expected '{' to open block body");
      if (accept_ident("init")) block.init = braced_list("block init");
      block.body = stmt_list();
      expect("}", "expected '}' to close block body");
    }
    scopes_.pop_back();
    auto n = std::make_shared<BlockRealizeNode>();
    n->iter_values = std::move(values);
    n->predicate = predicate;
    n->block = std::make_shared<const Block>(std::move(block));
    return n;
  }

  std::vector<Expr> indices(Loc at, const Buffer& b, const char* what) {
    std::vector<Expr> idx;
    expect("[", "expected '['");
    if (!accept("]")) {
      do {
        idx.push_back(expr());
      } while (accept(","));
      expect("]", "expected ']' after indices");
    }
    if (idx.size() != b->shape.size())
      fail(at, std::string(what) + " '" + b->name + "' with " + std::to_string(idx.size()) +
                   " indices, but the buffer has rank " + std::to_string(b->shape.size()));
    return idx;
  }

  Stmt store_stmt() {
    Loc at = loc();
    std::string name = take().text;
    Buffer b = lookup_buffer(name, at);
    auto n = std::make_shared<StoreNode>();
    n->buffer = b;
    n->indices = indices(at, b, "store to");
    expect("=", "expected '=' after store target");
    Loc vat = loc();
    n->value = expr();
    if (!(n->value->dtype == b->dtype))
      fail(vat, "store of a " + dtype_name(n->value->dtype) + " value to " + dtype_name(b->dtype) +
                    " buffer '" + b->name + "'");
    return n;
  }

  // ---- expressions ----------------------------------------------------------------------------

  Expr finish(std::shared_ptr<ExprNode> n, Loc at) {
    int depth = 0;
    for (const Expr& a : n->args) {
      auto it = depth_.find(a.get());
      depth = std::max(depth, it == depth_.end() ? 1 : it->second.second);
    }
    if (depth + 1 > kMaxParsedExprDepth)
      fail(at, "expression nested too deeply (limit " + std::to_string(kMaxParsedExprDepth) + ")");
    Expr e(std::move(n));
    // The map keeps the node alive so that its address cannot be reused by another node.
    if (!e->args.empty()) depth_[e.get()] = {e, depth + 1};
    return e;
  }

  Expr node(ExprKind kind, std::vector<Expr> args, Loc at, DType cast_to = DType::i64()) {
    auto n = std::make_shared<ExprNode>();
    n->kind = kind;
    n->dtype = cast_to;
    n->args = std::move(args);
    n->dtype = ir_text::natural_dtype(*n);
    return finish(std::move(n), at);
  }

  Expr binary(ExprKind kind, Expr a, Expr b, Loc at) {
    if (!(a->dtype == b->dtype))
      fail(at, std::string("type mismatch in '") + to_string(kind) + "': " + dtype_name(a->dtype) +
                   " vs " + dtype_name(b->dtype));
    if ((kind == ExprKind::FloorDiv || kind == ExprKind::FloorMod) && !a->dtype.is_int())
      fail(at, std::string("'") + to_string(kind) + "' needs integer operands, got " +
                   dtype_name(a->dtype));
    return node(kind, {std::move(a), std::move(b)}, at);
  }

  Expr expr() { return infix(kOr); }

  enum Level : int { kOr = 1, kAnd, kCmp, kAdd, kMul, kUnary };

  std::optional<ExprKind> infix_op(const Token& t, int level) const {
    if (t.kind != Tok::Punct) return std::nullopt;
    static const std::pair<const char*, ExprKind> ops[] = {
        {"||", ExprKind::Or},       {"&&", ExprKind::And},    {"==", ExprKind::EQ},
        {"!=", ExprKind::NE},       {"<", ExprKind::LT},      {"<=", ExprKind::LE},
        {">", ExprKind::GT},        {">=", ExprKind::GE},     {"+", ExprKind::Add},
        {"-", ExprKind::Sub},       {"*", ExprKind::Mul},     {"/", ExprKind::Div},
        {"//", ExprKind::FloorDiv}, {"%", ExprKind::FloorMod}};
    for (auto [text, kind] : ops) {
      if (t.text != text) continue;
      int l = kind == ExprKind::Or                               ? kOr
              : kind == ExprKind::And                            ? kAnd
              : is_comparison(kind)                              ? kCmp
              : (kind == ExprKind::Add || kind == ExprKind::Sub) ? kAdd
                                                                 : kMul;
      if (l == level) return kind;
    }
    return std::nullopt;
  }

  Expr infix(int level) {
    if (level == kUnary) return unary();
    Expr lhs = infix(level + 1);
    while (auto kind = infix_op(peek(), level)) {
      Loc at = loc();
      take();
      Expr rhs = infix(level + 1);
      lhs = binary(*kind, lhs, rhs, at);
    }
    return lhs;
  }

  Expr literal(const Token& t, bool negative, Loc at) {
    if (t.kind == Tok::Float) {
      DType dt = t.suffix.value_or(DType::f32());
      if (!dt.is_float())
        fail(at, "float literal '" + t.text + "' cannot have non-float type " + dtype_name(dt));
      return float_imm(negative ? -t.fvalue : t.fvalue, dt);
    }
    if (t.hex) fail(at, "hexadecimal literals are only allowed as NaN payloads");
    DType dt = t.suffix.value_or(DType::i64());
    if (dt.is_float()) {
      // An integer-looking float (the printer writes 1e+20 as 100000000000000000000f32).
      double v = 0;
      auto res = std::from_chars(t.digits.data(), t.digits.data() + t.digits.size(), v);
      if (res.ec != std::errc()) fail(at, "float literal '" + t.text + "' is out of range");
      return float_imm(negative ? -v : v, dt);
    }
    return int_imm(checked_int(t, negative, at), dt);
  }

  Expr unary() {
    Loc at = loc();
    if (accept("!")) {
      Nest nest(*this);
      return node(ExprKind::Not, {unary()}, at);
    }
    if (accept("-")) {
      Nest nest(*this);
      if (peek().kind == Tok::Int || peek().kind == Tok::Float) return literal(take(), true, at);
      Expr a = unary();
      if (a->kind == ExprKind::IntImm)
        return int_imm(static_cast<int64_t>(uint64_t(0) - static_cast<uint64_t>(a->int_value)),
                       a->dtype);
      if (a->kind == ExprKind::FloatImm) return float_imm(-a->float_value, a->dtype);
      // No negation node in the IR: -x is 0 - x.
      Expr zero;
      if (a->dtype.is_int())
        zero = int_imm(0, a->dtype);
      else if (a->dtype.is_float())
        zero = float_imm(0, a->dtype);
      else
        fail(at, "cannot negate a " + dtype_name(a->dtype) + " value");
      return binary(ExprKind::Sub, zero, a, at);
    }
    return primary();
  }

  std::vector<Expr> call_args(const std::string& fn) {
    Nest nest(*this);
    expect("(", "expected '(' after '" + fn + "'");
    std::vector<Expr> args;
    if (!accept(")")) {
      do {
        args.push_back(expr());
      } while (accept(","));
      expect(")", "expected ')' after arguments of '" + fn + "'");
    }
    return args;
  }

  void arity(const std::string& fn, const std::vector<Expr>& args, size_t n, Loc at) const {
    if (args.size() != n)
      fail(at, "'" + fn + "' takes " + std::to_string(n) + " argument" + (n == 1 ? "" : "s") +
                   ", got " + std::to_string(args.size()));
  }

  // dtype '(' ['-'] ('inf' | 'nan' [':' hexbits]) ')' after the '(' has been consumed.
  Expr special_float(DType dt, Loc at) {
    if (!dt.is_float()) fail(at, "inf/nan literals need a float type, not " + dtype_name(dt));
    bool neg = accept("-");
    Token w = take();
    double v;
    if (w.text == "inf") {
      v = std::numeric_limits<double>::infinity();
    } else if (accept(":")) {
      const Token& t = peek();
      if (t.kind != Tok::Int || !t.hex || t.overflow)
        fail(t, "expected 64-bit hexadecimal NaN payload, found " + describe(t));
      uint64_t bits = take().magnitude;
      v = std::bit_cast<double>(bits);
      if (!std::isnan(v)) fail(at, "payload " + w.text + " is not a NaN bit pattern");
    } else {
      v = std::numeric_limits<double>::quiet_NaN();
    }
    expect(")", "expected ')' after special float literal");
    return float_imm(neg ? -v : v, dt);
  }

  Expr primary() {
    Loc at = loc();
    const Token& t = peek();
    switch (t.kind) {
    case Tok::Int:
    case Tok::Float:
      return literal(take(), false, at);
    case Tok::Punct:
      if (is_punct(t, "(")) {
        Nest nest(*this);
        take();
        Expr e = expr();
        if (accept(":")) {
          Loc tat = loc();
          DType dt = dtype("type after ':'");
          if (e->kind == ExprKind::Var)
            fail(tat, "cannot change the type of variable '" + e->name + "'");
          auto n = std::make_shared<ExprNode>(*e);
          n->dtype = dt;
          e = finish(std::move(n), tat);
        }
        expect(")", "expected ')'");
        return e;
      }
      break;
    case Tok::String:
      return name_ref(at);
    case Tok::Ident: {
      std::string word = t.text;
      if (word == "true" || word == "false") {
        take();
        return int_imm(word == "true", DType::boolean());
      }
      if (auto dt = parse_dtype_name(word)) {
        take();
        if (!is_punct(peek(), "(")) fail(at, "expected '(' after type '" + word + "' (a cast)");
        if ((is_ident(peek(1), "inf") || is_ident(peek(1), "nan")) ||
            (is_punct(peek(1), "-") && (is_ident(peek(2), "inf") || is_ident(peek(2), "nan")))) {
          Nest nest(*this);
          take();
          return special_float(*dt, at);
        }
        std::vector<Expr> args = call_args(word);
        arity(word, args, 1, at);
        return node(ExprKind::Cast, std::move(args), at, *dt);
      }
      MathFn fn;
      if (parse_math_fn(word, &fn)) {
        take();
        std::vector<Expr> args = call_args(word);
        arity(word, args, static_cast<size_t>(math_fn_arity(fn)), at);
        auto n = std::make_shared<ExprNode>();
        n->kind = ExprKind::Call;
        n->fn = fn;
        n->args = std::move(args);
        n->dtype = ir_text::natural_dtype(*n);
        return finish(std::move(n), at);
      }
      if (word == "min" || word == "max") {
        take();
        std::vector<Expr> args = call_args(word);
        arity(word, args, 2, at);
        return binary(word == "min" ? ExprKind::Min : ExprKind::Max, args[0], args[1], at);
      }
      if (word == "select") {
        take();
        std::vector<Expr> args = call_args(word);
        arity(word, args, 3, at);
        if (!(args[1]->dtype == args[2]->dtype))
          fail(at, "select branches have different types: " + dtype_name(args[1]->dtype) + " vs " +
                       dtype_name(args[2]->dtype));
        return node(ExprKind::Select, std::move(args), at);
      }
      if (word == "inf" || word == "nan")
        fail(at, "'" + word + "' needs a type: write f32(" + word + ")");
      if (ir_text::is_reserved_word(word))
        fail(at, "unexpected keyword '" + word + "' in expression");
      return name_ref(at);
    }
    case Tok::End:
      break;
    }
    fail(t, "expected an expression, found " + describe(t));
  }

  // A variable, or a load when followed by '['.
  Expr name_ref(Loc at) {
    std::string name = take().text;
    if (!is_punct(peek(), "[")) return lookup_var(name, at);
    Buffer b = lookup_buffer(name, at);
    auto n = std::make_shared<ExprNode>();
    n->kind = ExprKind::Load;
    n->buffer = b;
    {
      Nest nest(*this);
      n->args = indices(at, b, "load from");
    }
    n->dtype = b->dtype;
    return finish(std::move(n), at);
  }

  Lexer lex_;
  std::string_view source_;
  std::deque<Token> ahead_;
  Loc last_{1, 1};
  int nesting_ = 0;
  std::vector<Scope> scopes_;
  std::unordered_map<const ExprNode*, std::pair<Expr, int>> depth_;
};

} // namespace

Function parse_function(std::string_view text, std::string_view source_name) {
  Parser p(text, source_name);
  try {
    return p.function();
  } catch (const std::invalid_argument& e) {
    // A constructor rejected something the parser let through: still a located error.
    throw ParseError(source_name, p.last_location().line, p.last_location().col, e.what());
  }
}

} // namespace mt
