// The `tojson` filter as Hugging Face chat templates get it: Python's json.dumps with
// ensure_ascii=False (transformers replaces Jinja's HTML-safe version), so a tool's schema
// reaches the prompt byte for byte as the model saw it in training -- ", " and ": " between
// items, insertion order, floats as Python writes them.
#pragma once

#include <string>

#include "core/jinja/value.h"

namespace mt::jinja {

struct JsonDumpOptions {
  int indent = -1;         // < 0: one line; else newlines with this many spaces per level
  std::string indent_text; // an indent given as a string (used instead of `indent` spaces)
  bool has_indent = false;
  std::string item_separator; // default ", " on one line, "," with an indent
  std::string key_separator = ": ";
  bool has_item_separator = false;
  bool sort_keys = false;
  bool ensure_ascii = false;
};

// Throws std::invalid_argument for what JSON cannot hold (undefined, a function).
std::string json_dump(const Value& v, const JsonDumpOptions& options = {});

} // namespace mt::jinja
