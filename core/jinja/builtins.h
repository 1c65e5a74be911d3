// What a template calls by name: filters (`x | trim`), tests (`x is defined`), the methods of
// strings and dicts (`s.strip()`, `d.items()`), and the globals (range, namespace, dict).
// Python's semantics throughout; each throws std::invalid_argument on bad input, which the
// renderer turns into a TemplateError with the line.
#pragma once

#include <string>
#include <string_view>

#include "core/jinja/value.h"

namespace mt::jinja {

// The filter `name` applied to `input`; throws std::invalid_argument for an unknown one.
Value apply_filter(std::string_view name, const Value& input, const Args& args);
bool has_filter(std::string_view name);
// The test `name` of `input`; throws std::invalid_argument for an unknown one.
bool apply_test(std::string_view name, const Value& input, const Args& args);
bool has_test(std::string_view name);

// obj.name as Jinja looks it up: a Python attribute first (a str's or dict's method, bound
// to obj), then an item; an undefined value where neither exists.
Value get_attribute(const Value& obj, const std::string& name);
// obj[key]: an item first (a negative index counts from the end), then an attribute.
Value get_item(const Value& obj, const Value& key);
// obj[start:stop:step] over a list's items or a string's characters; null bounds are absent.
Value get_slice(const Value& obj, const Value* start, const Value* stop, const Value* step);

// range, namespace and dict.
Dict global_functions();

// Python's str.strip/lstrip/rstrip: of whitespace as Python's str.isspace() sees it (Unicode's
// too), or of the characters of `chars`.
std::string strip(const std::string& s, const Value* chars, bool left, bool right);

} // namespace mt::jinja
