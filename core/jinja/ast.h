// The parsed template: statements (text, output, if, for, set, macro, ...) over expressions.
// One node shape per family, its kind saying which fields it uses -- the parser builds it, the
// renderer walks it; neither needs more than that.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/jinja/value.h"

namespace mt::jinja {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,   // value
    Name,      // name
    List,      // items (a tuple is a list here)
    Dict,      // items: key, value, key, value, ...
    Attribute, // a.name
    Item,      // a[b]
    Slice,     // a[items[0] : items[1] : items[2]], each possibly null
    Call,      // a(items..., keywords...)
    Filter,    // a | name(items..., keywords...)
    Test,      // a is [not] name(items...)
    Unary,     // op a: "-", "+", "not"
    Binary,    // a op b: arithmetic, comparisons, "in", "not in", "and", "or", "~"
    Condition, // a if b else c (c may be null)
  };
  Kind kind;
  int line = 0;
  Value value;
  std::string name;     // a name, an attribute, a filter or test, an operator
  bool negated = false; // `is not`
  ExprPtr a, b, c;
  std::vector<ExprPtr> items;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    Text,     // text
    Output,   // {{ expr }}
    If,       // conditions[i] -> bodies[i]; a last body without condition is the else
    For,      // for targets in expr [if filter]: bodies[0], else bodies[1]
    Set,      // set targets = expr; or `set ns.attr = expr` (attribute)
    SetBlock, // set targets[0] %}bodies[0]{% endset
    Macro,    // macro name(targets with defaults): bodies[0]
    Break,
    Continue,
    Block, // a body rendered as is: {% generation %}, {% filter %} with `name` as its filter
  };
  Kind kind;
  int line = 0;
  std::string text;
  std::string name; // the macro's name, the attribute of `set ns.attr`, the filter of a block
  std::vector<std::string> targets;
  std::vector<ExprPtr> defaults; // a macro's parameters' defaults (null where none)
  ExprPtr expr, filter;
  std::vector<ExprPtr> conditions;
  std::vector<Body> bodies;
};

} // namespace mt::jinja
