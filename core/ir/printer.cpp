#include "core/ir/printer.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>
#include <variant>

namespace mt {

namespace ir_text {

std::string dtype_name(DType t) {
  if (!mt_dtype_code_text(to_dtype_code(t.kind)))
    return "<dtype " + std::to_string(static_cast<int>(t.kind)) + ">";
  std::string name = to_string(t.kind);
  return t.kind == DTypeKind::Bool && t.bits == 1 ? name : name + std::to_string(t.bits);
}

std::optional<DType> parse_dtype_name(std::string_view s) {
  // No kind's prefix is a prefix of another's, so the first that matches is the only one.
  std::optional<DTypeKind> kind;
  std::string_view digits;
  for (int i = 0; mt_dtype_code_at(i) >= 0 && !kind; ++i) {
    std::string_view prefix = to_string(static_cast<DTypeKind>(i));
    if (!s.starts_with(prefix)) continue;
    kind = static_cast<DTypeKind>(i);
    digits = s.substr(prefix.size());
  }
  if (!kind) return std::nullopt;
  if (*kind == DTypeKind::Bool && digits.empty()) return DType::boolean();
  // Leading zeros are not a dtype name, so "f032" stays an ordinary identifier.
  if (digits.empty() || digits.size() > 3 || (digits.size() > 1 && digits[0] == '0'))
    return std::nullopt;
  int bits = 0;
  for (char c : digits) {
    if (c < '0' || c > '9') return std::nullopt;
    bits = bits * 10 + (c - '0');
  }
  if (bits > 255) return std::nullopt;
  return DType{*kind, static_cast<uint8_t>(bits)};
}

bool is_reserved_word(std::string_view s) {
  static const std::unordered_set<std::string_view> words = {
      "func", "lowered", "buffer", "extern", "var",   "for",   "in",  "if",
      "else", "alloc",   "block",  "init",   "where", "attrs", "seq", "select",
      "min",  "max",     "true",   "false",  "inf",   "nan"};
  MathFn fn;
  return words.count(s) > 0 || parse_math_fn(s, &fn) || parse_dtype_name(s).has_value();
}

bool is_plain_name(std::string_view s) {
  if (s.empty()) return false;
  auto alpha = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!alpha(s[0])) return false;
  for (char c : s)
    if (!alpha(c) && !(c >= '0' && c <= '9') && c != '.') return false;
  return !is_reserved_word(s);
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char ch : s) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\r':
      out += "\\r";
      break;
    default:
      if (c < 0x20 || c > 0x7e) {
        static const char hex[] = "0123456789abcdef";
        out += "\\x";
        out += hex[c >> 4];
        out += hex[c & 15];
      } else {
        out += ch;
      }
    }
  }
  out += '"';
  return out;
}

std::string name_token(std::string_view s) {
  return is_plain_name(s) ? std::string(s) : quote(s);
}

std::string shortest_double(double v) {
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, res.ptr);
}

DType natural_dtype(const ExprNode& n) {
  auto arg_type = [&](size_t i) {
    return i < n.args.size() && n.args[i].get() != nullptr ? n.args[i]->dtype : n.dtype;
  };
  switch (n.kind) {
  case ExprKind::IntImm:
    return n.dtype.is_float() ? DType::i64() : n.dtype;
  case ExprKind::FloatImm:
    return n.dtype.is_float() ? n.dtype : DType::f64();
  case ExprKind::Var:
  case ExprKind::Cast:
    return n.dtype;
  case ExprKind::Load:
    return n.buffer ? n.buffer->dtype : n.dtype;
  case ExprKind::Not:
    return DType::boolean();
  case ExprKind::Select:
    return arg_type(1);
  case ExprKind::Call:
    return arg_type(0);
  default:
    if (is_comparison(n.kind) || n.kind == ExprKind::And || n.kind == ExprKind::Or)
      return DType::boolean();
    if (is_binary(n.kind)) return arg_type(0);
    return n.dtype;
  }
}

} // namespace ir_text

namespace {

using ir_text::dtype_name;
using ir_text::name_token;
using ir_text::quote;

// Operator precedence levels, loosest first; everything printed in function-call or literal
// form is a primary.
enum Prec : int { kOr = 1, kAnd, kCmp, kAdd, kMul, kUnary, kPrimary };

bool is_infix(ExprKind k) {
  return is_binary(k) && k != ExprKind::Min && k != ExprKind::Max;
}

int infix_prec(ExprKind k) {
  switch (k) {
  case ExprKind::Or:
    return kOr;
  case ExprKind::And:
    return kAnd;
  case ExprKind::Add:
  case ExprKind::Sub:
    return kAdd;
  case ExprKind::Mul:
  case ExprKind::Div:
  case ExprKind::FloorDiv:
  case ExprKind::FloorMod:
    return kMul;
  default:
    return kCmp;
  }
}

// Where the printer's text goes: the text itself, or only a digest of it. The digest is the
// polynomial hash of the bytes modulo the prime 2^61 - 1, which composes: the digest of a
// concatenation follows from the digests and lengths of its parts. So a subexpression printed
// many times (a DAG, see Printer::expr) costs one digest, however long its text would be.
class Sink {
public:
  explicit Sink(bool digest_only) : digest_only_(digest_only) {}

  Sink& operator+=(std::string_view s) {
    if (!digest_only_) {
      text_ += s;
    } else {
      for (char c : s)
        feed(c);
    }
    return *this;
  }
  Sink& operator+=(char c) {
    if (!digest_only_) {
      text_ += c;
    } else {
      feed(c);
    }
    return *this;
  }
  void append(size_t n, char c) {
    if (!digest_only_) {
      text_.append(n, c);
    } else {
      for (size_t i = 0; i < n; ++i)
        feed(c);
    }
  }
  // Appends another sink's output (of the same kind).
  void append(const Sink& piece) {
    if (!digest_only_) {
      text_ += piece.text_;
    } else {
      digest_ = add(mul(digest_, power(kBase, piece.length_)), piece.digest_);
      length_ += piece.length_;
    }
  }

  Sink empty_like() const { return Sink(digest_only_); }
  std::string take_text() { return std::move(text_); }
  uint64_t digest() const { return digest_; }

private:
  static constexpr uint64_t kPrime = (uint64_t{1} << 61) - 1;
  static constexpr uint64_t kBase = 0x1f3d5b79a2c4e6f1ULL % kPrime;

  static uint64_t add(uint64_t a, uint64_t b) {
    uint64_t r = a + b;
    return r >= kPrime ? r - kPrime : r;
  }
  static uint64_t mul(uint64_t a, uint64_t b) {
    unsigned __int128 p = static_cast<unsigned __int128>(a) * b;
    uint64_t r = static_cast<uint64_t>(p & kPrime) + static_cast<uint64_t>(p >> 61);
    return r >= kPrime ? r - kPrime : r;
  }
  static uint64_t power(uint64_t b, uint64_t e) {
    uint64_t r = 1;
    for (; e; e >>= 1, b = mul(b, b))
      if (e & 1) r = mul(r, b);
    return r;
  }
  void feed(char c) {
    digest_ = add(mul(digest_, kBase), static_cast<unsigned char>(c) + 1);
    ++length_;
  }

  bool digest_only_;
  std::string text_;
  uint64_t digest_ = 0;
  uint64_t length_ = 0;
};

// Finds the variables and buffers that are used outside any binder of them (For loop var,
// block iter var, Allocate, function declaration), in order of first use: the printer declares
// them up front so that the text is self-contained.
class FreeCollector {
public:
  std::vector<Expr> vars;
  std::vector<Buffer> buffers;

  void bind(const Buffer& b) { ++bound_bufs_[b.get()]; }
  void unbind(const Buffer& b) { --bound_bufs_[b.get()]; }

  void stmt(const Stmt& s) {
    if (!s) return;
    switch (s->kind) {
    case StmtKind::For: {
      auto* n = as<ForNode>(s);
      ++bound_vars_[n->loop_var.get()];
      forget_visited();
      stmt(n->body);
      --bound_vars_[n->loop_var.get()];
      forget_visited();
      break;
    }
    case StmtKind::Seq:
      for (const Stmt& c : as<SeqNode>(s)->stmts)
        stmt(c);
      break;
    case StmtKind::Store: {
      auto* n = as<StoreNode>(s);
      use(n->buffer);
      for (const Expr& i : n->indices)
        expr(i);
      expr(n->value);
      break;
    }
    case StmtKind::IfThenElse: {
      auto* n = as<IfThenElseNode>(s);
      expr(n->condition);
      stmt(n->then_case);
      stmt(n->else_case);
      break;
    }
    case StmtKind::Allocate: {
      auto* n = as<AllocateNode>(s);
      ++bound_bufs_[n->buffer.get()];
      forget_visited();
      stmt(n->body);
      --bound_bufs_[n->buffer.get()];
      forget_visited();
      break;
    }
    case StmtKind::BlockRealize: {
      auto* n = as<BlockRealizeNode>(s);
      for (const Expr& v : n->iter_values)
        expr(v);
      expr(n->predicate);
      if (!n->block) break;
      for (const IterVar& iv : n->block->iter_vars)
        ++bound_vars_[iv.var.get()];
      forget_visited();
      stmt(n->block->init);
      stmt(n->block->body);
      for (const IterVar& iv : n->block->iter_vars)
        --bound_vars_[iv.var.get()];
      forget_visited();
      break;
    }
    }
  }

  void expr(const Expr& e) {
    if (!e) return;
    if (e->kind == ExprKind::Var && bound_vars_[e.get()] == 0 && seen_vars_.insert(e.get()).second)
      vars.push_back(e);
    if (e->kind == ExprKind::Load) use(e->buffer);
    if (e->args.empty()) return;
    // A subexpression with several parents (a DAG) is walked once per binding scope: what it
    // declares depends only on the binders in scope.
    if (may_be_shared(e) && !visited_.insert(e.get()).second) return;
    for (const Expr& a : e->args)
      expr(a);
  }

private:
  void use(const Buffer& b) {
    if (b && bound_bufs_[b.get()] == 0 && seen_bufs_.insert(b.get()).second) buffers.push_back(b);
  }

  std::unordered_map<const ExprNode*, int> bound_vars_;
  std::unordered_map<const BufferNode*, int> bound_bufs_;
  std::unordered_set<const ExprNode*> seen_vars_;
  std::unordered_set<const BufferNode*> seen_bufs_;
  std::unordered_set<const ExprNode*> visited_; // shared nodes walked in the current scope

  // (clear() costs the bucket count even when the set is empty: every loop calls this twice)
  void forget_visited() {
    if (!visited_.empty()) visited_.clear();
  }
};

class Printer {
public:
  explicit Printer(const PrintOptions& options, bool digest_only = false)
      : opt_(options), out_(digest_only) {}

  std::string function(const Function& f) {
    FreeCollector free;
    for (const Buffer& b : f.params)
      free.bind(b);
    for (const Buffer& b : f.buffers)
      free.bind(b);
    free.stmt(f.body);

    if (f.lowered) out_ += "lowered ";
    out_ += "func ";
    out_ += opt_.canonical ? std::string("f") : name_token(f.name);
    out_ += "(";
    for (size_t i = 0; i < f.params.size(); ++i) {
      if (i) out_ += ", ";
      out_ += buffer_decl(f.params[i]);
    }
    out_ += ") {\n";
    ++indent_;
    for (const Buffer& b : f.buffers)
      line("buffer " + buffer_decl(b));
    declare_free(free);
    body_list(f.body);
    --indent_;
    out_ += "}\n";
    return out_.take_text();
  }

  std::string statement(const Stmt& s) {
    FreeCollector free;
    free.stmt(s);
    declare_free(free);
    stmt(s);
    return out_.take_text();
  }

  std::string expression(const Expr& e) {
    FreeCollector free;
    free.expr(e);
    declare_free(free);
    expr(out_, e);
    return out_.take_text();
  }

private:
  // Printed names of in-scope binders: a stack per object (the innermost binding wins) and a
  // count per name so that a new binder never takes a name that is visible at that point.
  struct Names {
    char prefix;
    std::unordered_map<const void*, std::vector<std::string>> stack;
    std::unordered_map<std::string, int> in_scope;
    int counter = 0;
  };

  // `alt` is tried before numbered suffixes (iter vars named after their loops become vi, vj).
  std::string bind(Names& names, const void* obj, const std::string& base,
                   const std::string& alt = {}) {
    std::string name;
    if (opt_.canonical) {
      name = names.prefix + std::to_string(names.counter++);
    } else {
      name = base;
      if (names.in_scope[name] > 0 && !alt.empty()) name = alt;
      for (int k = 1; names.in_scope[name] > 0; ++k)
        name = base + "_" + std::to_string(k);
    }
    names.stack[obj].push_back(name);
    ++names.in_scope[name];
    bound_.push_back({&names, obj});
    forget_shared_text();
    return name;
  }

  // Pops every binding made since `mark` (the scope that is being left).
  void unbind_to(size_t mark) {
    while (bound_.size() > mark) {
      auto [names, obj] = bound_.back();
      bound_.pop_back();
      forget_shared_text();
      auto& st = names->stack[obj];
      --names->in_scope[st.back()];
      st.pop_back();
    }
  }

  std::string ref(Names& names, const void* obj, const std::string& fallback) {
    auto it = names.stack.find(obj);
    if (it != names.stack.end() && !it->second.empty()) return name_token(it->second.back());
    return name_token(fallback); // unreachable: every free object is declared up front
  }

  std::string bind_var(const Expr& v, bool iter_var = false) {
    std::string base = v ? v->name : std::string();
    return name_token(bind(vars_, v.get(), base, iter_var ? "v" + base : std::string()));
  }
  std::string bind_buffer(const Buffer& b) {
    return name_token(bind(bufs_, b.get(), b ? b->name : std::string()));
  }
  std::string var_ref(const ExprNode* v) { return ref(vars_, v, v->name); }
  std::string buffer_ref(const Buffer& b) {
    return b ? ref(bufs_, b.get(), b->name) : std::string("<null>");
  }

  std::string buffer_type(const Buffer& b) {
    if (!b) return "<null>";
    std::string s = dtype_name(b->dtype) + "[";
    for (size_t i = 0; i < b->shape.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(b->shape[i]);
    }
    s += "]";
    if (b->scope != "global") s += " @" + name_token(b->scope);
    return s;
  }

  std::string buffer_decl(const Buffer& b) {
    std::string name = bind_buffer(b);
    return name + ": " + buffer_type(b);
  }

  void declare_free(const FreeCollector& free) {
    // Plain (non-canonical) statement/expression printing is for reading: no header.
    bool header = opt_.canonical || in_function_;
    for (const Buffer& b : free.buffers) {
      std::string d = buffer_decl(b);
      if (header) line("extern " + d);
    }
    for (const Expr& v : free.vars) {
      std::string d = bind_var(v) + ": " + dtype_name(v->dtype);
      if (header) line("var " + d);
    }
  }

  void line(const std::string& text) {
    indent();
    out_ += text;
    out_ += '\n';
  }
  void indent() { out_.append(2 * static_cast<size_t>(indent_), ' '); }

  // Statement lists between braces: two or more statements are a Seq; anything else (a Seq of
  // fewer items, a Seq nested in a Seq) is spelled `seq { ... }` by stmt().
  void body_list(const Stmt& s) {
    if (!s) return;
    if (s->kind == StmtKind::Seq && as<SeqNode>(s)->stmts.size() >= 2) {
      for (const Stmt& c : as<SeqNode>(s)->stmts)
        stmt(c);
      return;
    }
    stmt(s);
  }

  void braced(const Stmt& s) {
    if (!s) {
      out_ += "{}";
      return;
    }
    out_ += "{\n";
    ++indent_;
    body_list(s);
    --indent_;
    indent();
    out_ += "}";
  }

  void annotations(const Annotations& ann) {
    if (ann.empty()) return;
    out_ += " attrs(";
    bool first = true;
    for (const auto& [key, value] : ann) {
      if (!first) out_ += ", ";
      first = false;
      out_ += quote(key) + ": ";
      if (const int64_t* i = std::get_if<int64_t>(&value))
        out_ += std::to_string(*i);
      else if (const std::string* str = std::get_if<std::string>(&value))
        out_ += quote(*str);
      else
        out_ += "<valueless>";
    }
    out_ += ")";
  }

  void store_text(const StoreNode* n) {
    out_ += buffer_ref(n->buffer) + "[";
    for (size_t i = 0; i < n->indices.size(); ++i) {
      if (i) out_ += ", ";
      expr(out_, n->indices[i]);
    }
    out_ += "] = ";
    expr(out_, n->value);
  }

  void if_chain(const IfThenElseNode* n) {
    out_ += "if ";
    expr(out_, n->condition);
    out_ += " ";
    braced(n->then_case);
    if (!n->else_case) return;
    out_ += " else ";
    if (n->else_case->kind == StmtKind::IfThenElse)
      if_chain(as<IfThenElseNode>(n->else_case));
    else
      braced(n->else_case);
  }

  void stmt(const Stmt& s) {
    indent();
    if (!s) {
      out_ += "<null>\n";
      return;
    }
    switch (s->kind) {
    case StmtKind::For:
      for_stmt(as<ForNode>(s));
      break;
    case StmtKind::Seq: {
      auto* n = as<SeqNode>(s);
      if (n->stmts.empty()) {
        out_ += "seq {}";
        break;
      }
      out_ += "seq {\n";
      ++indent_;
      for (const Stmt& c : n->stmts)
        stmt(c);
      --indent_;
      indent();
      out_ += "}";
      break;
    }
    case StmtKind::Store:
      store_text(as<StoreNode>(s));
      break;
    case StmtKind::IfThenElse:
      if_chain(as<IfThenElseNode>(s));
      break;
    case StmtKind::Allocate: {
      auto* n = as<AllocateNode>(s);
      size_t mark = bound_.size();
      out_ += "alloc " + buffer_decl(n->buffer) + " ";
      braced(n->body);
      unbind_to(mark);
      break;
    }
    case StmtKind::BlockRealize:
      block_realize(as<BlockRealizeNode>(s));
      break;
    default:
      out_ += "<bad stmt>";
      break;
    }
    out_ += '\n';
  }

  void for_stmt(const ForNode* n) {
    size_t mark = bound_.size();
    out_ += "for ";
    if (!is_var(n->loop_var)) {
      out_ += "<bad loop var>";
    } else {
      out_ += bind_var(n->loop_var);
      if (!(n->loop_var->dtype == DType::i64())) out_ += ": " + dtype_name(n->loop_var->dtype);
    }
    out_ += " in " + std::to_string(n->extent);
    if (n->for_kind != ForKind::Serial || !n->thread_tag.empty()) {
      out_ += " ";
      out_ += to_string(n->for_kind);
      if (!n->thread_tag.empty()) out_ += "(" + quote(n->thread_tag) + ")";
    }
    annotations(n->annotations);
    out_ += " ";
    braced(n->body);
    unbind_to(mark);
  }

  void block_realize(const BlockRealizeNode* n) {
    out_ += "block ";
    if (!n->block) {
      out_ += "<null>";
      return;
    }
    const Block& b = *n->block;
    // Bindings and predicate are evaluated outside the block: print them before the iter vars
    // come into scope.
    std::vector<Sink> values;
    for (const Expr& v : n->iter_values) {
      values.push_back(out_.empty_like());
      expr(values.back(), v);
    }
    Sink pred = out_.empty_like();
    if (n->predicate) expr(pred, n->predicate);

    size_t mark = bound_.size();
    out_ += name_token(b.name) + "(";
    size_t count = std::max(b.iter_vars.size(), values.size());
    for (size_t i = 0; i < count; ++i) {
      if (i) out_ += ", ";
      if (i < b.iter_vars.size()) {
        const IterVar& iv = b.iter_vars[i];
        if (!is_var(iv.var)) {
          out_ += "<bad iter var>";
        } else {
          out_ += bind_var(iv.var, /*iter_var=*/true) + ": ";
          if (!(iv.var->dtype == DType::i64())) out_ += dtype_name(iv.var->dtype) + " ";
        }
        out_ += to_string(iv.kind);
        out_ += "[" + std::to_string(iv.extent) + "]";
      } else {
        out_ += "?";
      }
      out_ += " = ";
      if (i < values.size()) {
        out_.append(values[i]);
      } else {
        out_ += '?';
      }
    }
    out_ += ")";
    if (n->predicate) {
      out_ += " where ";
      out_.append(pred);
    }
    annotations(b.annotations);
    if (!b.init && !b.body) {
      out_ += " {}";
    } else {
      out_ += " {\n";
      ++indent_;
      if (b.init) {
        indent();
        if (b.init->kind == StmtKind::Store) {
          out_ += "init { ";
          store_text(as<StoreNode>(b.init));
          out_ += " }";
        } else {
          out_ += "init ";
          braced(b.init);
        }
        out_ += '\n';
      }
      body_list(b.body);
      --indent_;
      indent();
      out_ += "}";
    }
    unbind_to(mark);
  }

  // ---- expressions ----------------------------------------------------------------------------

  static bool needs_ascription(const ExprNode& n) {
    return !(ir_text::natural_dtype(n) == n.dtype);
  }

  static int prec(const Expr& e) {
    if (!e || needs_ascription(*e)) return kPrimary;
    if (is_infix(e->kind) && e->args.size() == 2) return infix_prec(e->kind);
    if (e->kind == ExprKind::Not && e->args.size() == 1) return kUnary;
    return kPrimary;
  }

  void operand(Sink& o, const Expr& e, int need) {
    if (prec(e) < need) {
      o += "(";
      expr(o, e);
      o += ")";
    } else {
      expr(o, e);
    }
  }

  void expr(Sink& o, const Expr& e) {
    if (!e) {
      o += "<null>";
      return;
    }
    // A subexpression with several parents is printed once per binding scope and copied
    // after that: its text depends only on the names in scope (cleared by bind and unbind).
    if (!e->args.empty() && may_be_shared(e)) {
      if (auto it = shared_text_.find(e.get()); it != shared_text_.end()) {
        o.append(it->second);
        return;
      }
      Sink text = o.empty_like();
      expr_text(text, e);
      o.append(text);
      shared_text_.emplace(e.get(), std::move(text));
      return;
    }
    expr_text(o, e);
  }

  void expr_text(Sink& o, const Expr& e) {
    if (needs_ascription(*e)) {
      // The node's type is not the one its operands imply: spell it out.
      o += "(";
      expr_as(o, *e, ir_text::natural_dtype(*e));
      o += " : " + dtype_name(e->dtype) + ")";
      return;
    }
    expr_as(o, *e, e->dtype);
  }

  void args(Sink& o, const std::vector<Expr>& a) {
    for (size_t i = 0; i < a.size(); ++i) {
      if (i) o += ", ";
      expr(o, a[i]);
    }
  }

  static std::string float_literal(double v, DType t) {
    std::string dt = dtype_name(t);
    if (std::isnan(v)) {
      uint64_t bits = std::bit_cast<uint64_t>(v);
      if (bits == 0x7ff8000000000000ULL) return dt + "(nan)";
      if (bits == 0xfff8000000000000ULL) return dt + "(-nan)";
      char buf[32];
      std::snprintf(buf, sizeof(buf), "0x%016llx", static_cast<unsigned long long>(bits));
      return dt + "(nan:" + buf + ")";
    }
    if (std::isinf(v)) return dt + (v < 0 ? "(-inf)" : "(inf)");
    return ir_text::shortest_double(v) + dt;
  }

  // Prints `n` as if its type were `t` (the caller adds an ascription when they differ).
  void expr_as(Sink& o, const ExprNode& n, DType t) {
    switch (n.kind) {
    case ExprKind::IntImm:
      if (t == DType::boolean() && (n.int_value == 0 || n.int_value == 1)) {
        o += n.int_value ? "true" : "false";
      } else {
        o += std::to_string(n.int_value);
        if (!(t == DType::i64())) o += dtype_name(t);
      }
      return;
    case ExprKind::FloatImm:
      o += float_literal(n.float_value, t);
      return;
    case ExprKind::Var:
      o += var_ref(&n);
      return;
    case ExprKind::Load:
      o += buffer_ref(n.buffer) + "[";
      args(o, n.args);
      o += "]";
      return;
    case ExprKind::Not:
      if (n.args.size() == 1) {
        o += "!";
        operand(o, n.args[0], kUnary);
        return;
      }
      break;
    case ExprKind::Min:
    case ExprKind::Max:
    case ExprKind::Select:
      o += to_string(n.kind);
      o += "(";
      args(o, n.args);
      o += ")";
      return;
    case ExprKind::Cast:
      o += dtype_name(n.dtype) + "(";
      args(o, n.args);
      o += ")";
      return;
    case ExprKind::Call:
      o += to_string(n.fn);
      o += "(";
      args(o, n.args);
      o += ")";
      return;
    default:
      if (is_infix(n.kind) && n.args.size() == 2) {
        int p = infix_prec(n.kind);
        operand(o, n.args[0], p);
        o += " ";
        o += to_string(n.kind);
        o += " ";
        operand(o, n.args[1], p + 1);
        return;
      }
      break;
    }
    // Wrong operand count or unknown kind: readable, and rejected by the parser.
    o += "<bad ";
    o += to_string(n.kind);
    o += ">(";
    args(o, n.args);
    o += ")";
  }

public:
  bool in_function_ = false;
  uint64_t digest() const { return out_.digest(); }

private:
  PrintOptions opt_;
  Sink out_;
  int indent_ = 0;
  Names vars_{'v', {}, {}, 0};
  Names bufs_{'b', {}, {}, 0};
  std::vector<std::pair<Names*, const void*>> bound_;
  // Keys are only compared while the printed function holds the nodes alive.
  std::unordered_map<const ExprNode*, Sink> shared_text_;

  void forget_shared_text() {
    if (!shared_text_.empty()) shared_text_.clear();
  }
};

} // namespace

std::string print(const Function& f, const PrintOptions& options) {
  Printer p(options);
  p.in_function_ = true;
  return p.function(f);
}

uint64_t canonical_digest(const Function& f) {
  Printer p(PrintOptions{.canonical = true}, /*digest_only=*/true);
  p.in_function_ = true;
  p.function(f);
  return p.digest();
}

std::string print(const Stmt& s, const PrintOptions& options) {
  return Printer(options).statement(s);
}

std::string print(const Expr& e, const PrintOptions& options) {
  return Printer(options).expression(e);
}

} // namespace mt
