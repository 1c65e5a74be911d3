#include "core/tokenizer/post_processor.h"

#include <stdexcept>

#include "core/tokenizer/tokenizer_json.h"

namespace mt::tok {

namespace {

// BertProcessing's and RobertaProcessing's "cls"/"sep": ["[CLS]", 101].
TokenId token_pair_id(const TokenizerJson& doc, const Json& p, const std::string& field,
                      const char* key) {
  const Json& pair = doc.required(p, field, key);
  if (!pair.is_array() || pair.size() != 2 || !pair[0].is_string() || !pair[1].is_number_unsigned())
    doc.fail(json_path(field, key), "is not a [token, id] pair");
  return pair[1].get<TokenId>();
}

// A TemplateProcessing list ("single" or "pair"): sequences A / B and special tokens, each with
// its type id (0 when absent).
std::vector<TemplatePiece> read_pieces(const TokenizerJson& doc, const Json& p,
                                       const std::string& field, const char* key) {
  const Json& list = doc.required(p, field, key);
  const Json* specials = doc.member(p, field, "special_tokens");
  const std::string list_field = json_path(field, key);
  if (!list.is_array()) doc.fail(list_field, "is not an array");
  auto type_of = [&](const Json& item, const std::string& item_field) {
    const Json* t = doc.member(item, item_field, "type_id");
    if (!t) return uint32_t{0};
    if (!t->is_number_unsigned()) doc.fail(json_path(item_field, "type_id"), "is not a type id");
    return t->get<uint32_t>();
  };
  std::vector<TemplatePiece> pieces;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string item_field = list_field + "[" + std::to_string(i) + "]";
    TemplatePiece piece;
    if (const Json* seq = doc.member(list[i], item_field, "Sequence")) {
      const std::string seq_field = item_field + ".Sequence";
      const std::string id = doc.string_member(*seq, seq_field, "id");
      if (id != "A" && id != "B") doc.fail(seq_field, "is a sequence other than A and B");
      piece.kind = id == "A" ? TemplatePiece::Kind::A : TemplatePiece::Kind::B;
      piece.type_id = type_of(*seq, seq_field);
      pieces.push_back(std::move(piece));
      continue;
    }
    const Json* special = doc.member(list[i], item_field, "SpecialToken");
    if (!special) doc.fail(item_field, "is neither a Sequence nor a SpecialToken");
    const std::string special_field = item_field + ".SpecialToken";
    const std::string name = doc.string_member(*special, special_field, "id");
    const std::string specials_field = json_path(field, "special_tokens");
    const Json* entry = specials ? doc.member(*specials, specials_field, name.c_str()) : nullptr;
    if (!entry)
      doc.fail(specials_field, "has no entry '" + name + "' (used by " + item_field + ")");
    const std::string entry_field = json_path(specials_field, name);
    const Json& ids = doc.required(*entry, entry_field, "ids");
    if (!ids.is_array()) doc.fail(json_path(entry_field, "ids"), "is not an array");
    for (const Json& id : ids) {
      if (!id.is_number_unsigned()) doc.fail(json_path(entry_field, "ids"), "holds a non-id");
      piece.ids.push_back(id.get<TokenId>());
    }
    piece.type_id = type_of(*special, special_field);
    pieces.push_back(std::move(piece));
  }
  return pieces;
}

size_t count(const std::vector<TemplatePiece>& pieces, TemplatePiece::Kind kind) {
  size_t n = 0;
  for (const TemplatePiece& p : pieces)
    n += p.kind == kind ? 1 : 0;
  return n;
}

// TemplateProcessing: "single" as the special tokens before and after the one sequence A;
// "pair" as it is (exactly one A and one B), or pairs refused where it has none.
PostProcessor read_template(const TokenizerJson& doc, const Json& p, const std::string& field) {
  const std::vector<TemplatePiece> single = read_pieces(doc, p, field, "single");
  const std::string single_field = json_path(field, "single");
  if (count(single, TemplatePiece::Kind::A) != 1 || count(single, TemplatePiece::Kind::B) != 0)
    doc.fail(single_field, "is not one sequence A with special tokens around it");
  std::vector<TokenId> prefix, suffix;
  bool seen_sequence = false;
  for (const TemplatePiece& piece : single) {
    if (piece.kind == TemplatePiece::Kind::A) seen_sequence = true;
    std::vector<TokenId>& to = seen_sequence ? suffix : prefix;
    to.insert(to.end(), piece.ids.begin(), piece.ids.end());
  }
  // A pair template this cannot use refuses pairs only: single sequences still encode.
  const Json* pair = doc.member(p, field, "pair");
  const std::string pair_field = json_path(field, "pair");
  if (!pair || !pair->is_array())
    return PostProcessor::without_pairs(std::move(prefix), std::move(suffix),
                                        pair_field + " is not given");
  std::vector<TemplatePiece> pieces = read_pieces(doc, p, field, "pair");
  if (count(pieces, TemplatePiece::Kind::A) != 1 || count(pieces, TemplatePiece::Kind::B) != 1)
    return PostProcessor::without_pairs(std::move(prefix), std::move(suffix),
                                        pair_field +
                                            " does not hold sequence A and sequence B once each");
  return PostProcessor(std::move(prefix), std::move(suffix), std::move(pieces));
}

// Roberta's pair: <s> A </s> </s> B </s>, every type 0.
PostProcessor roberta(TokenId cls, TokenId sep) {
  using K = TemplatePiece::Kind;
  std::vector<TemplatePiece> pair = {{K::Special, {cls}, 0},
                                     {K::A, {}, 0},
                                     {K::Special, {sep, sep}, 0},
                                     {K::B, {}, 0},
                                     {K::Special, {sep}, 0}};
  return PostProcessor({cls}, {sep}, std::move(pair), /*types_all_zero=*/true);
}

// A Sequence of processors, each applied to the output of the one before. For pairs, the one
// processor that adds tokens decides (ByteLevel adds none); several that do are refused.
PostProcessor read_sequence(const TokenizerJson& doc, const Json& p, const std::string& field);

PostProcessor read_at(const TokenizerJson& doc, const Json& p, const std::string& field) {
  const std::string type = doc.string_member(p, field, "type");
  if (type == "ByteLevel") return {};
  if (type == "BertProcessing")
    return PostProcessor::bert(token_pair_id(doc, p, field, "cls"),
                               token_pair_id(doc, p, field, "sep"));
  if (type == "RobertaProcessing")
    return roberta(token_pair_id(doc, p, field, "cls"), token_pair_id(doc, p, field, "sep"));
  if (type == "TemplateProcessing") return read_template(doc, p, field);
  if (type == "Sequence") return read_sequence(doc, p, field);
  doc.fail(field, "'" + type +
                      "' is not supported (supported: TemplateProcessing, BertProcessing, "
                      "RobertaProcessing, ByteLevel, Sequence)");
}

PostProcessor read_sequence(const TokenizerJson& doc, const Json& p, const std::string& field) {
  const Json& list = doc.required(p, field, "processors");
  const std::string list_field = json_path(field, "processors");
  if (!list.is_array()) doc.fail(list_field, "is not an array");
  std::vector<TokenId> prefix, suffix;
  std::vector<PostProcessor> adding; // the processors that add tokens
  for (size_t i = 0; i < list.size(); ++i) {
    PostProcessor inner = read_at(doc, list[i], list_field + "[" + std::to_string(i) + "]");
    prefix.insert(prefix.begin(), inner.prefix().begin(), inner.prefix().end());
    suffix.insert(suffix.end(), inner.suffix().begin(), inner.suffix().end());
    if (!inner.prefix().empty() || !inner.suffix().empty() || !inner.pair().empty() ||
        !inner.pair_error().empty() || inner.types_all_zero())
      adding.push_back(std::move(inner));
  }
  if (adding.empty()) return {};
  if (adding.size() > 1)
    return PostProcessor::without_pairs(std::move(prefix), std::move(suffix),
                                        list_field + " holds " + std::to_string(adding.size()) +
                                            " processors that add tokens; a pair through "
                                            "more than one is not supported");
  PostProcessor& one = adding.front();
  if (!one.pair_error().empty())
    return PostProcessor::without_pairs(std::move(prefix), std::move(suffix), one.pair_error());
  return PostProcessor(std::move(prefix), std::move(suffix), one.pair(), one.types_all_zero());
}

} // namespace

PostProcessor PostProcessor::bert(TokenId cls, TokenId sep) {
  using K = TemplatePiece::Kind;
  std::vector<TemplatePiece> pair = {{K::Special, {cls}, 0},
                                     {K::A, {}, 0},
                                     {K::Special, {sep}, 0},
                                     {K::B, {}, 1},
                                     {K::Special, {sep}, 1}};
  return PostProcessor({cls}, {sep}, std::move(pair));
}

PostProcessor PostProcessor::without_pairs(std::vector<TokenId> prefix, std::vector<TokenId> suffix,
                                           std::string why) {
  PostProcessor p(std::move(prefix), std::move(suffix));
  p.pair_error_ = std::move(why);
  return p;
}

Encoding PostProcessor::apply_pair(std::span<const TokenId> a, std::span<const TokenId> b,
                                   bool add_special_tokens) const {
  if (!pair_error_.empty())
    throw std::invalid_argument("cannot encode a pair of sequences: " + pair_error_);
  Encoding e;
  auto add = [&](std::span<const TokenId> ids, uint32_t type) {
    e.ids.insert(e.ids.end(), ids.begin(), ids.end());
    e.type_ids.insert(e.type_ids.end(), ids.size(), types_all_zero_ ? 0 : type);
  };
  if (!add_special_tokens || pair_.empty()) {
    add(a, 0);
    add(b, 1);
    return e;
  }
  for (const TemplatePiece& piece : pair_) {
    if (piece.kind == TemplatePiece::Kind::A)
      add(a, piece.type_id);
    else if (piece.kind == TemplatePiece::Kind::B)
      add(b, piece.type_id);
    else
      add(piece.ids, piece.type_id);
  }
  return e;
}

std::vector<TokenId> PostProcessor::apply(std::span<const TokenId> ids) const {
  std::vector<TokenId> out(prefix_);
  out.insert(out.end(), ids.begin(), ids.end());
  out.insert(out.end(), suffix_.begin(), suffix_.end());
  return out;
}

PostProcessor read_post_processor(const TokenizerJson& doc) {
  const Json* p = doc.member(doc.root(), "", "post_processor");
  if (!p) return {};
  return read_at(doc, *p, "post_processor");
}

} // namespace mt::tok
