#include "core/tokenizer/added_vocabulary.h"

#include <algorithm>
#include <cstdint>

#include "core/tokenizer/tokenizer_json.h"
#include "core/tokenizer/unicode_tables.h"
#include "core/tokenizer/utf8_codec.h"

namespace mt::tok {

namespace {

bool is_word_char(char32_t c) {
  if (c == 0x200C || c == 0x200D) return true;
  const GeneralCategory g = general_category(c);
  return is_letter(g) || is_mark(g) || g == GeneralCategory::Nd || g == GeneralCategory::Nl ||
         g == GeneralCategory::Pc;
}

// The last / first character of well-formed UTF-8 text (which the pieces here are: they
// are cut at token boundaries of well-formed text).
char32_t last_char(std::string_view s) {
  size_t i = s.size() - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80)
    --i;
  return decode_utf8(s.substr(i)).front();
}

char32_t first_char(std::string_view s) {
  size_t n = 1;
  while (n < s.size() && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80)
    ++n;
  return decode_utf8(s.substr(0, n)).front();
}

// The byte offset where the trailing White_Space of `s` starts.
size_t trailing_space_start(std::string_view s) {
  size_t start = s.size();
  while (start > 0) {
    size_t i = start - 1;
    while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80)
      --i;
    if (!is_white_space(decode_utf8(s.substr(i, start - i)).front())) break;
    start = i;
  }
  return start;
}

// The byte length of the leading White_Space of `s`.
size_t leading_space_length(std::string_view s) {
  size_t end = 0;
  while (end < s.size()) {
    size_t n = 1;
    while (end + n < s.size() && (static_cast<unsigned char>(s[end + n]) & 0xC0) == 0x80)
      ++n;
    if (!is_white_space(decode_utf8(s.substr(end, n)).front())) break;
    end += n;
  }
  return end;
}

} // namespace

AddedVocabulary::AddedVocabulary(std::vector<AddedToken> tokens, Normalizer normalize)
    : tokens_(std::move(tokens)), normalize_(std::move(normalize)) {
  for (size_t i = 0; i < tokens_.size(); ++i) {
    const AddedToken& t = tokens_[i];
    by_id_[t.id] = i;
    by_content_[t.content] = t.id;
    if (t.content.empty()) continue;
    if (t.normalized && normalize_)
      normalized_patterns_.push_back({normalize_(t.content), i});
    else
      (t.normalized ? normalized_patterns_ : raw_patterns_).push_back({t.content, i});
  }
}

void AddedVocabulary::split_with(std::string_view text, const std::vector<Pattern>& patterns,
                                 std::vector<TextPiece>& out) const {
  size_t done = 0; // text before this is in `out`
  size_t scan = 0;
  while (!patterns.empty() && scan < text.size()) {
    // Leftmost-longest: the first position where some pattern matches, the longest there.
    const Pattern* best = nullptr;
    size_t start = scan;
    for (; start < text.size() && !best; ++start) {
      for (const Pattern& p : patterns)
        if (!p.text.empty() && text.compare(start, p.text.size(), p.text) == 0 &&
            (!best || p.text.size() > best->text.size()))
          best = &p;
      if (best) break;
    }
    if (!best) break;
    size_t stop = start + best->text.size();
    scan = stop;
    const AddedToken& token = tokens_[best->token];
    if (token.single_word) {
      const bool word_before = start > 0 && is_word_char(last_char(text.substr(0, start)));
      const bool word_after = stop < text.size() && is_word_char(first_char(text.substr(stop)));
      if (word_before || word_after) continue;
    }
    if (token.lstrip) start = std::max(trailing_space_start(text.substr(0, start)), done);
    if (token.rstrip) stop += leading_space_length(text.substr(stop));
    if (done < start) out.push_back({std::string(text.substr(done, start - done)), std::nullopt});
    out.push_back({std::string(text.substr(start, stop - start)), token.id});
    done = scan = stop;
  }
  if (done < text.size()) out.push_back({std::string(text.substr(done)), std::nullopt});
}

std::vector<TextPiece> AddedVocabulary::split(std::string_view text) const {
  std::vector<TextPiece> raw;
  split_with(text, raw_patterns_, raw);
  std::vector<TextPiece> out;
  for (TextPiece& piece : raw) {
    if (piece.id) {
      out.push_back(std::move(piece));
      continue;
    }
    const std::string normalized = normalize_ ? normalize_(piece.text) : std::move(piece.text);
    split_with(normalized, normalized_patterns_, out);
  }
  return out;
}

const AddedToken* AddedVocabulary::find(TokenId id) const {
  auto it = by_id_.find(id);
  return it == by_id_.end() ? nullptr : &tokens_[it->second];
}

std::optional<TokenId> AddedVocabulary::token_to_id(std::string_view content) const {
  auto it = by_content_.find(std::string(content));
  if (it == by_content_.end()) return std::nullopt;
  return it->second;
}

std::vector<AddedToken> read_added_tokens(const TokenizerJson& doc) {
  std::vector<AddedToken> tokens;
  const Json* list = doc.member(doc.root(), "", "added_tokens");
  if (!list) return tokens;
  if (!list->is_array()) doc.fail("added_tokens", "is not an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const Json& entry = (*list)[i];
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    AddedToken t;
    t.content = doc.string_member(entry, field, "content");
    const std::optional<uint64_t> id = doc.optional_unsigned(entry, field, "id");
    if (!id) doc.fail(json_path(field, "id"), "is missing");
    if (*id > UINT32_MAX) doc.fail(json_path(field, "id"), "is too large for a token id");
    t.id = static_cast<TokenId>(*id);
    t.single_word = doc.bool_member(entry, field, "single_word", false);
    t.lstrip = doc.bool_member(entry, field, "lstrip", false);
    t.rstrip = doc.bool_member(entry, field, "rstrip", false);
    t.special = doc.bool_member(entry, field, "special", false);
    t.normalized = doc.bool_member(entry, field, "normalized", !t.special);
    tokens.push_back(std::move(t));
  }
  return tokens;
}

std::vector<TokenId>
encode_pieces(const std::vector<TextPiece>& pieces,
              const std::function<std::vector<TokenId>(std::string_view)>& tokenize_word) {
  std::vector<TokenId> ids;
  for (const TextPiece& piece : pieces) {
    if (piece.id) {
      ids.push_back(*piece.id);
      continue;
    }
    const std::vector<TokenId> w = tokenize_word(piece.text);
    ids.insert(ids.end(), w.begin(), w.end());
  }
  return ids;
}

} // namespace mt::tok
