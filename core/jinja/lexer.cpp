// The template's tokens (see lexer.h).
#include "core/jinja/lexer.h"

#include <algorithm>
#include <cctype>
#include <cstdint>

#include "core/jinja/error.h"
#include "core/jinja/utf8.h"

namespace mt::jinja {

namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

// The lexer's state: where it is in the source, on which line, and the tokens so far.
class Lexer {
public:
  Lexer(std::string_view src, const LexOptions& o) : src_(src), o_(o) {}

  std::vector<Token> run() {
    bool strip_next = false;   // a `-` closed the last tag: strip the text's leading whitespace
    bool trim_newline = false; // a block tag closed the last tag: drop one newline
    while (pos_ < src_.size()) {
      size_t open = find_tag(pos_);
      std::string text(src_.substr(pos_, open - pos_));
      // Does the text start a line? (Jinja: the last tag's match, with what it swallowed after
      // it, ended in a newline.)
      bool line_starting = pos_ == 0;
      if (strip_next) {
        size_t k = 0;
        while (k < text.size() && is_space(text[k]))
          ++k;
        line_starting = k > 0 && text[k - 1] == '\n';
        text.erase(0, k);
      } else if (trim_newline) {
        if (text.rfind("\r\n", 0) == 0)
          text.erase(0, 2), line_starting = true;
        else if (!text.empty() && text[0] == '\n')
          text.erase(0, 1), line_starting = true;
      }
      strip_next = trim_newline = false;
      if (open == src_.size()) {
        emit_text(text);
        break;
      }
      const char kind = src_[open + 1]; // '{', '%' or '#'
      const char mark = open + 2 < src_.size() ? src_[open + 2] : '\0';
      if (mark == '-') {
        while (!text.empty() && is_space(text.back()))
          text.pop_back();
      } else if (kind != '{' && mark != '+' && o_.lstrip_blocks) {
        size_t k = text.size();
        while (k > 0 && (text[k - 1] == ' ' || text[k - 1] == '\t'))
          --k;
        if (k == 0 ? line_starting : text[k - 1] == '\n') text.erase(k);
      }
      emit_text(text);
      count_lines(pos_, open);
      pos_ = open + 2 + ((mark == '-' || mark == '+') ? 1 : 0);
      if (kind == '#') {
        const size_t close = src_.find("#}", pos_);
        if (close == std::string_view::npos)
          throw TemplateError("comment not closed ('#}')", line_);
        strip_next = close > pos_ && src_[close - 1] == '-';
        trim_newline = !strip_next && o_.trim_blocks && !(close > pos_ && src_[close - 1] == '+');
        count_lines(pos_, close + 2);
        pos_ = close + 2;
        continue;
      }
      const bool block = kind == '%';
      if (block && raw_block()) continue;
      tokens_.push_back({block ? Token::Kind::BlockBegin : Token::Kind::VarBegin, "", line_});
      const char close = block ? '%' : '}';
      const int opened = line_;
      int depth = 0; // open brackets: a "}}" inside {'a': {'b': 1}} closes dicts, not the tag
      for (;;) {
        skip_space();
        if (pos_ >= src_.size())
          throw TemplateError(std::string("tag not closed ('") + (block ? "%}" : "}}") + "')",
                              opened);
        if (depth == 0 && (src_[pos_] == '-' || src_[pos_] == '+') && pos_ + 2 < src_.size() &&
            src_[pos_ + 1] == close && src_[pos_ + 2] == '}') {
          strip_next = src_[pos_] == '-';
          trim_newline = false;
          pos_ += 3;
          break;
        }
        if (depth == 0 && src_[pos_] == close && pos_ + 1 < src_.size() && src_[pos_ + 1] == '}') {
          pos_ += 2;
          trim_newline = block && o_.trim_blocks;
          break;
        }
        lex_token();
        const Token& t = tokens_.back();
        if (t.kind == Token::Kind::Op && (t.text == "(" || t.text == "[" || t.text == "{")) ++depth;
        if (t.kind == Token::Kind::Op && (t.text == ")" || t.text == "]" || t.text == "}"))
          depth = std::max(0, depth - 1);
      }
      tokens_.push_back({block ? Token::Kind::BlockEnd : Token::Kind::VarEnd, "", line_});
    }
    tokens_.push_back({Token::Kind::End, "", line_});
    return std::move(tokens_);
  }

private:
  // The next "{{", "{%" or "{#" at or after `from`, else the end.
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i)
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#'))
        return i;
    return src_.size();
  }
  void count_lines(size_t from, size_t to) {
    for (size_t i = from; i < to && i < src_.size(); ++i)
      line_ += src_[i] == '\n';
  }
  void emit_text(const std::string& text) {
    if (!text.empty()) tokens_.push_back({Token::Kind::Text, text, line_});
  }
  void skip_space() {
    while (pos_ < src_.size() && is_space(src_[pos_])) {
      line_ += src_[pos_] == '\n';
      ++pos_;
    }
  }

  // {% raw %}...{% endraw %}: the text between, untouched.
  bool raw_block() {
    size_t p = pos_;
    while (p < src_.size() && is_space(src_[p]))
      ++p;
    if (src_.substr(p, 3) != "raw") return false;
    p += 3;
    while (p < src_.size() && is_space(src_[p]))
      ++p;
    if (p < src_.size() && src_[p] == '-') ++p;
    if (src_.substr(p, 2) != "%}") return false;
    p += 2;
    for (size_t q = src_.find("{%", p); q != std::string_view::npos; q = src_.find("{%", q + 2)) {
      size_t r = q + 2;
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) ++r;
      while (r < src_.size() && is_space(src_[r]))
        ++r;
      if (src_.substr(r, 6) != "endraw") continue;
      r += 6;
      while (r < src_.size() && is_space(src_[r]))
        ++r;
      if (r < src_.size() && (src_[r] == '-' || src_[r] == '+')) ++r;
      if (src_.substr(r, 2) != "%}") continue;
      emit_text(std::string(src_.substr(p, q - p)));
      count_lines(pos_, r + 2);
      pos_ = r + 2;
      return true;
    }
    throw TemplateError("{% raw %} not closed ({% endraw %})", line_);
  }

  void lex_token() {
    const char c = src_[pos_];
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = pos_;
      while (e < src_.size() &&
             (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_'))
        ++e;
      tokens_.push_back({Token::Kind::Name, std::string(src_.substr(pos_, e - pos_)), line_});
      pos_ = e;
      return;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) return lex_number();
    if (c == '\'' || c == '"') return lex_string(c);
    static const char* kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*",
                                 "/",  "%",  "~",  "<",  ">",  "=",  "(", ")", "[",
                                 "]",  "{",  "}",  ",",  ".",  ":",  "|"};
    for (const char* op : kOps) {
      const std::string_view o(op);
      if (src_.substr(pos_, o.size()) == o) {
        tokens_.push_back({Token::Kind::Op, std::string(o), line_});
        pos_ += o.size();
        return;
      }
    }
    throw TemplateError(std::string("unexpected character '") + c + "'", line_);
  }

  void lex_number() {
    size_t e = pos_;
    std::string digits;
    auto run = [&] {
      while (e < src_.size() &&
             (std::isdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) {
        if (src_[e] != '_') digits += src_[e];
        ++e;
      }
    };
    run();
    bool is_float = false;
    if (e + 1 < src_.size() && src_[e] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      is_float = true;
      digits += '.';
      ++e;
      run();
    }
    if (e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t f = e + 1;
      if (f < src_.size() && (src_[f] == '+' || src_[f] == '-')) ++f;
      if (f < src_.size() && std::isdigit(static_cast<unsigned char>(src_[f]))) {
        is_float = true;
        digits += src_.substr(e, f - e);
        e = f;
        run();
      }
    }
    tokens_.push_back({is_float ? Token::Kind::Float : Token::Kind::Int, digits, line_});
    pos_ = e;
  }

  // A string literal with Python's escapes (\n, \t, \\, \', \", \xNN, \uNNNN, \UNNNNNNNN);
  // an unknown escape keeps its backslash, as Python does.
  void lex_string(char quote) {
    const int start = line_;
    std::string out;
    size_t p = pos_ + 1;
    for (;;) {
      if (p >= src_.size()) throw TemplateError("string literal not closed", start);
      const char c = src_[p];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\' || p + 1 >= src_.size()) {
        out += c;
        ++p;
        continue;
      }
      const char e = src_[p + 1];
      p += 2;
      switch (e) {
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'v':
        out += '\v';
        break;
      case '0':
        out += '\0';
        break;
      case '\n':
        ++line_;
        break;
      case 'x':
      case 'u':
      case 'U': {
        const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        if (p + n > src_.size())
          throw TemplateError("truncated \\" + std::string(1, e) + " escape", line_);
        uint32_t cp = 0;
        for (size_t k = 0; k < n; ++k) {
          const char h = src_[p + k];
          if (!std::isxdigit(static_cast<unsigned char>(h)))
            throw TemplateError("truncated \\" + std::string(1, e) + " escape", line_);
          cp = cp * 16 + static_cast<uint32_t>(std::isdigit(static_cast<unsigned char>(h))
                                                   ? h - '0'
                                                   : std::tolower(h) - 'a' + 10);
        }
        append_utf8(out, cp);
        p += n;
        break;
      }
      default:
        out += '\\';
        out += e;
      }
    }
    tokens_.push_back({Token::Kind::String, out, start});
    pos_ = p + 1;
  }

  std::string_view src_;
  LexOptions o_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

} // namespace

std::vector<Token> lex(std::string_view source, const LexOptions& options) {
  return Lexer(source, options).run();
}

} // namespace mt::jinja
