#include "core/tokenizer/post_processor.h"

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

// TemplateProcessing's "single": the special tokens before and after the one sequence "A".
PostProcessor read_template(const TokenizerJson& doc, const Json& p, const std::string& field) {
  const Json& single = doc.required(p, field, "single");
  const Json* specials = doc.member(p, field, "special_tokens");
  const std::string single_field = json_path(field, "single");
  if (!single.is_array()) doc.fail(single_field, "is not an array");
  std::vector<TokenId> prefix, suffix;
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string item_field = single_field + "[" + std::to_string(i) + "]";
    if (const Json* seq = doc.member(single[i], item_field, "Sequence")) {
      const std::string id = doc.string_member(*seq, item_field + ".Sequence", "id");
      if (id != "A" || seen_sequence)
        doc.fail(item_field, "is a sequence other than the one sequence A");
      seen_sequence = true;
      continue;
    }
    const Json* special = doc.member(single[i], item_field, "SpecialToken");
    if (!special) doc.fail(item_field, "is neither a Sequence nor a SpecialToken");
    const std::string name = doc.string_member(*special, item_field + ".SpecialToken", "id");
    const std::string specials_field = json_path(field, "special_tokens");
    const Json* entry = specials ? doc.member(*specials, specials_field, name.c_str()) : nullptr;
    if (!entry)
      doc.fail(specials_field, "has no entry '" + name + "' (used by " + item_field + ")");
    const std::string entry_field = json_path(specials_field, name);
    const Json& ids = doc.required(*entry, entry_field, "ids");
    if (!ids.is_array()) doc.fail(json_path(entry_field, "ids"), "is not an array");
    for (const Json& id : ids) {
      if (!id.is_number_unsigned()) doc.fail(json_path(entry_field, "ids"), "holds a non-id");
      (seen_sequence ? suffix : prefix).push_back(id.get<TokenId>());
    }
  }
  if (!seen_sequence) doc.fail(single_field, "has no Sequence A");
  return PostProcessor(std::move(prefix), std::move(suffix));
}

PostProcessor read_at(const TokenizerJson& doc, const Json& p, const std::string& field) {
  const std::string type = doc.string_member(p, field, "type");
  if (type == "ByteLevel") return {};
  if (type == "BertProcessing" || type == "RobertaProcessing")
    return PostProcessor({token_pair_id(doc, p, field, "cls")},
                         {token_pair_id(doc, p, field, "sep")});
  if (type == "TemplateProcessing") return read_template(doc, p, field);
  if (type == "Sequence") {
    const Json& list = doc.required(p, field, "processors");
    if (!list.is_array()) doc.fail(json_path(field, "processors"), "is not an array");
    // Each one applied to the output of the one before.
    std::vector<TokenId> prefix, suffix;
    for (size_t i = 0; i < list.size(); ++i) {
      const PostProcessor inner =
          read_at(doc, list[i], json_path(field, "processors") + "[" + std::to_string(i) + "]");
      prefix.insert(prefix.begin(), inner.prefix().begin(), inner.prefix().end());
      suffix.insert(suffix.end(), inner.suffix().begin(), inner.suffix().end());
    }
    return PostProcessor(std::move(prefix), std::move(suffix));
  }
  doc.fail(field, "'" + type +
                      "' is not supported (supported: TemplateProcessing, BertProcessing, "
                      "RobertaProcessing, ByteLevel, Sequence)");
}

} // namespace

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
