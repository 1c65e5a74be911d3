// `metatune tokenize --tokenizer DIR (--text T | --file F) [--json] [--decode]`: text to token
// ids with a checkpoint's tokenizer (core/tokenizer), one line of ids per input line, or with
// --decode ids back to text; with --pair / --pair-file, each line with its second sequence as
// one pair, ids and type ids; with --chat TEXT / --messages FILE, a conversation through the
// checkpoint's chat template (--render: the prompt text instead of its ids) (docs/tokenizers.md).
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "hosts/cli/chat_prompt.h"
#include "hosts/cli/command.h"

namespace mt::cli {

namespace {

struct TokenizeOptions {
  std::string tokenizer;
  std::string text;
  std::string file;
  // The second sequence of a pair: --pair (with --text), --pair-file (line i with line i).
  std::string pair, pair_file;
  bool has_text = false; // --text given (possibly empty)
  bool has_pair = false; // --pair given (possibly empty)
  bool json = false;
  bool decode = false;
  bool whole = false;
  bool pieces = false;
  bool add_special_tokens = false;
  bool keep_special_tokens = false;
  bool info = false;
  ChatOptions chat;
  bool render = false; // with a conversation: print the prompt text, not its ids
};

// The input's lines, cut at '\n' only (a '\r' before it stays part of the line, as a
// character to tokenize); a final '\n' does not start another line.
std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

std::string read_file(const std::string& path) {
  if (path == "-") {
    std::ostringstream s;
    s << std::cin.rdbuf();
    return s.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot be opened");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string read_input(const TokenizeOptions& o) {
  return o.file.empty() ? o.text : read_file(o.file);
}

// Ids as "1 2 3" or as a JSON array "[1,2,3]".
std::vector<tok::TokenId> parse_ids(const std::string& line, const std::string& where) {
  std::vector<tok::TokenId> ids;
  const size_t first = line.find_first_not_of(" \t\r");
  if (first != std::string::npos && line[first] == '[') {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_array()) throw std::invalid_argument(where + ": not a JSON array of ids");
    for (const auto& v : j) {
      if (!v.is_number_unsigned())
        throw std::invalid_argument(where + ": not a token id: " + v.dump());
      ids.push_back(v.get<tok::TokenId>());
    }
    return ids;
  }
  std::istringstream s(line);
  std::string word;
  while (s >> word) {
    size_t used = 0;
    unsigned long v = 0;
    try {
      v = std::stoul(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != word.size() || word[0] == '-' || v > UINT32_MAX)
      throw std::invalid_argument(where + ": not a token id: '" + word + "'");
    ids.push_back(static_cast<tok::TokenId>(v));
  }
  return ids;
}

std::string where_of(const TokenizeOptions& o, size_t line) {
  return (o.file.empty() ? std::string("--text") : o.file) + ": line " + std::to_string(line + 1);
}

std::string join(const std::vector<tok::TokenId>& ids, bool json) {
  std::string text = json ? "[" : "";
  for (size_t k = 0; k < ids.size(); ++k)
    text += (k ? (json ? "," : " ") : "") + std::to_string(ids[k]);
  return json ? text + "]" : text;
}

// One line of output for a pair: {"ids": [...], "type_ids": [...]}, or "ids | type ids".
std::string encoded_pair(const tok::Tokenizer& tokenizer, const TokenizeOptions& o,
                         const std::string& a, const std::string& b) {
  const tok::Encoding e = tokenizer.encode_pair(a, b, o.add_special_tokens);
  const std::vector<tok::TokenId> types(e.type_ids.begin(), e.type_ids.end());
  if (o.json) return "{\"ids\":" + join(e.ids, true) + ",\"type_ids\":" + join(types, true) + "}";
  return join(e.ids, false) + " | " + join(types, false);
}

// One line of output for one line of text: its ids, or with --pieces its words.
std::string encoded_line(const tok::Tokenizer& tokenizer, const TokenizeOptions& o,
                         const std::string& line) {
  if (o.pieces) {
    nlohmann::json words = nlohmann::json::array();
    for (const tok::TextPiece& w : tokenizer.pre_tokenize(line))
      words.push_back(w.text);
    return words.dump();
  }
  return join(tokenizer.encode(line, o.add_special_tokens), o.json);
}

int run(const TokenizeOptions& o) {
  const tok::Tokenizer tokenizer = tok::Tokenizer::load(o.tokenizer);
  if (o.info) {
    std::cout << tokenizer.kind() << " from " << tokenizer.source() << ", "
              << tokenizer.vocab_size() << " tokens\n";
    if (!o.has_text && o.file.empty() && !o.chat.given()) return 0;
  }
  if (o.chat.given()) {
    if (o.has_text || !o.file.empty() || o.decode || o.pieces || o.has_pair || !o.pair_file.empty())
      throw std::invalid_argument("tokenize: --chat / --messages take the place of --text, --file, "
                                  "--decode, --pieces and pairs");
    const std::string prompt = chat_prompt(o.chat, o.tokenizer);
    if (o.render)
      std::cout << (o.json ? nlohmann::json(prompt).dump() + "\n" : prompt);
    else // the template wrote BOS and the role tokens: the tokenizer adds none
      std::cout << join(tokenizer.encode(prompt, /*add_special_tokens=*/false), o.json) << "\n";
    return 0;
  }
  const std::string input = read_input(o);
  // An empty --text is one empty line, an empty file none.
  auto lines_of = [&](const std::string& text, bool one) {
    return o.whole || one ? std::vector<std::string>{text} : split_lines(text);
  };
  const std::vector<std::string> lines = lines_of(input, o.has_text && input.empty());
  std::vector<std::string> pairs;
  if (o.has_pair || !o.pair_file.empty()) {
    if (o.decode || o.pieces)
      throw std::invalid_argument("tokenize: --pair / --pair-file encode; not with --decode or "
                                  "--pieces");
    const std::string second = o.has_pair ? o.pair : read_file(o.pair_file);
    pairs = lines_of(second, o.has_pair && second.empty());
    if (pairs.size() != lines.size())
      throw std::invalid_argument("tokenize: " + std::to_string(lines.size()) +
                                  " input lines but " + std::to_string(pairs.size()) +
                                  " second sequences (" +
                                  (o.has_pair ? std::string("--pair") : o.pair_file) + ")");
  }
  std::ostringstream out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (o.decode) {
      const std::string text =
          tokenizer.decode(parse_ids(lines[i], where_of(o, i)), !o.keep_special_tokens);
      out << (o.json ? nlohmann::json(text).dump() : text) << "\n";
      continue;
    }
    try {
      out << (pairs.empty() ? encoded_line(tokenizer, o, lines[i])
                            : encoded_pair(tokenizer, o, lines[i], pairs[i]))
          << "\n";
    } catch (const std::invalid_argument& e) { // ill-formed UTF-8: say which line
      throw std::invalid_argument(where_of(o, i) + ": " + e.what());
    }
  }
  std::cout << out.str();
  return 0;
}

RegisterCommand reg("tokenize", [](CLI::App& app) -> std::function<int()> {
  auto* sub = app.add_subcommand(
      "tokenize", "Text to token ids (or back) with a checkpoint's tokenizer.json / vocab.txt");
  auto o = std::make_shared<TokenizeOptions>();
  sub->add_option("--tokenizer", o->tokenizer,
                  "Checkpoint folder (its tokenizer.json, else vocab.txt) or either file")
      ->required();
  auto* text = sub->add_option("--text", o->text, "The input text (one result per line of it)");
  auto* file = sub->add_option("--file", o->file, "Read the input from this file ('-': stdin)");
  text->excludes(file);
  auto* pair = sub->add_option("--pair", o->pair,
                               "A second sequence: --text and it as a pair (a question and a "
                               "passage), printed as ids | type ids");
  auto* pair_file = sub->add_option("--pair-file", o->pair_file,
                                    "Second sequences, one per line: line i of --file with line i "
                                    "of this file as a pair");
  pair->excludes(pair_file);
  pair->needs(text);
  pair_file->needs(file);
  sub->add_flag("--json", o->json,
                "Ids as one JSON array per line (a pair: {\"ids\": [...], \"type_ids\": [...]}); "
                "with --decode, texts as JSON strings");
  sub->add_flag("--decode", o->decode,
                "Input lines are ids (space-separated or JSON arrays); print their text");
  sub->add_flag("--pieces", o->pieces,
                "Print what the model is given instead of ids: the words (byte characters for a "
                "byte-level BPE, normalized words for WordPiece), one JSON array per line");
  sub->add_flag("--whole", o->whole, "Treat the whole input as one text, newlines included");
  sub->add_flag("--add-special-tokens", o->add_special_tokens,
                "Add the post-processor's tokens ([CLS] ... [SEP] for BERT; none for GPT-2)");
  sub->add_flag("--keep-special-tokens", o->keep_special_tokens,
                "With --decode, keep special tokens in the text (default: skipped)");
  sub->add_flag("--info", o->info, "Print the tokenizer's kind, file and vocabulary size first");
  add_chat_options(sub, o->chat);
  sub->add_flag("--render", o->render,
                "With --chat / --messages: print the prompt text the chat template wrote (with "
                "--json as a JSON string), not its ids");
  return [o, text, pair] {
    o->has_text = text->count() > 0;
    o->has_pair = pair->count() > 0;
    if (!o->has_text && o->file.empty() && !o->info && !o->chat.given())
      throw std::invalid_argument("tokenize: give --text, --file, --chat or --messages");
    if (o->render && !o->chat.given())
      throw std::invalid_argument("tokenize: --render shows a conversation's prompt: give --chat "
                                  "or --messages");
    return run(*o);
  };
});

} // namespace

} // namespace mt::cli
