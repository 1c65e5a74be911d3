// The SentencePiece-form BPE (core/tokenizer/sentence_piece_bpe.h: Llama 2's, Mistral's,
// TinyLlama's tokenizer.json) against Hugging Face's tokenizers package (0.23.3): a small
// vocabulary built here (<unk> <s> </s>, the 256 byte tokens, a few pieces and 17 merges) in
// five forms -- Llama 2's (Prepend + Replace normalizers; Replace, ByteFallback, Fuse, Strip
// decoders), the Metaspace pre-tokenizer and decoder with prepend_scheme "first" (transformers'
// newer conversion) and "always" with split, and without byte fallback (fused unknowns or not)
// -- then Gemma's form and the Split pre-tokenizer's five behaviors
// -- and for each, the ids, both decodes and the ids with the post-processor's <s> that the
// package gives for texts with leading, doubled and trailing spaces, characters only bytes
// spell, added tokens inside the text, an empty text; and decodes of hand-made id lists (a
// character cut by a special token, ill-formed bytes, leading replacements). Pasted below.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.h"
#include "tests/tokenizer/tokenizer_test_files.h"

namespace mt::tok {
namespace {

using json = nlohmann::json;

// The package's results (the generator's JSON, \u escapes), per form: the fields that differ
// between the forms, then [text, ids, decode(skip special), decode(keep), ids with <s>] and
// [ids, decode(skip special), decode(keep)].
const char* const kPackageResults = R"json(
{"legacy":{"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"\u2581"},{"type":"Replace","pattern":{"String":" "},
"content":"\u2581"}]},
"pre_tokenizer":null,"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},
"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
"byte_fallback":true,"fuse_unk":true,
"cases":[["Hello world",[259,283,290],"Hello world","Hello world",[1,259,283,290]],
["the world",[279,290],"the world","the world",[1,279,290]],
["  two  spaces ",[293,277,264,263,293,273,115,267,269,261,273,259],"  two  spaces ","  two  spaces ",[1,293,277,264,263,293,273,115,267,269,261,273,259]],
["H\u00e9llo",[284,275,280,263],"H\u00e9llo","H\u00e9llo",[1,284,275,280,263]],
["\u65e5\u672c \u8a9e",[259,276,233,159,175,259,235,173,161],"\u65e5\u672c \u8a9e","\u65e5\u672c \u8a9e",[1,259,276,233,159,175,259,235,173,161]],
["x\ud83d\ude00y",[259,274,243,162,155,131,124],"x\ud83d\ude00y","x\ud83d\ude00y",[1,259,274,243,162,155,131,124]],
["a<s>b",[291,1,292],"a b","a<s> b",[1,291,1,292]],
["<s>Hello</s> world",[1,259,283,2,259,290],"Hello  world","<s> Hello</s>  world",[1,1,259,283,2,259,290]],
["",[],"","",[1]],
["Hello",[259,283],"Hello","Hello",[1,259,283]],
["\u2581Hello",[293,283]," Hello"," Hello",[1,293,283]],
["a\u00e9\u65e5\ud83d\ude00z",[291,275,276,243,162,155,131,125],"a\u00e9\u65e5\ud83d\ude00z","a\u00e9\u65e5\ud83d\ude00z",[1,291,275,276,243,162,155,131,125]],
["a\u0000b",[291,3,268],"a\u0000b","a\u0000b",[1,291,3,268]]],
"decodes":[[[233,154],"\ufffd\ufffd","\ufffd\ufffd"],[[233,1,154,168],"\u65e5","\ufffd<s>\ufffd\ufffd"],[[259,259,260]," H"," H"],[[68,285],"A Hello","A Hello"]]},
"metaspace_first":{"normalizer":null,"pre_tokenizer":{"type":"Metaspace","replacement":"\u2581","prepend_scheme":"first","split":false},
"decoder":{"type":"Metaspace","replacement":"\u2581","prepend_scheme":"first","split":false},
"byte_fallback":true,"fuse_unk":true,
"cases":[["Hello world",[259,283,290],"Hello world","Hello world",[1,259,283,290]],
["the world",[279,290],"the world","the world",[1,279,290]],
["  two  spaces ",[259,277,264,263,293,273,115,267,269,261,273,259]," two  s<0x70>aces "," two  s<0x70>aces ",[1,259,277,264,263,293,273,115,267,269,261,273,259]],
["H\u00e9llo",[284,275,280,263],"H\u00e9llo","H\u00e9llo",[1,284,275,280,263]],
["\u65e5\u672c \u8a9e",[259,276,233,159,175,259,235,173,161],"\u65e5<0xE6><0x9C><0xAC> <0xE8><0xAA><0x9E>","\u65e5<0xE6><0x9C><0xAC> <0xE8><0xAA><0x9E>",[1,259,276,233,159,175,259,235,173,161]],
["x\ud83d\ude00y",[259,274,243,162,155,131,124],"x<0xF0><0x9F><0x98><0x80><0x79>","x<0xF0><0x9F><0x98><0x80><0x79>",[1,259,274,243,162,155,131,124]],
["a<s>b",[291,1,268],"ab","a<s>b",[1,291,1,268]],
["<s>Hello</s> world",[1,283,2,290],"Hello world","<s>Hello</s> world",[1,1,283,2,290]],
["",[],"","",[1]],
["Hello",[259,283],"Hello","Hello",[1,259,283]],
["\u2581Hello",[259,283],"Hello","Hello",[1,259,283]],
["a\u00e9\u65e5\ud83d\ude00z",[291,275,276,243,162,155,131,125],"a\u00e9\u65e5<0xF0><0x9F><0x98><0x80><0x7A>","a\u00e9\u65e5<0xF0><0x9F><0x98><0x80><0x7A>",[1,291,275,276,243,162,155,131,125]],
["a\u0000b",[291,3,268],"a<0x00>b","a<0x00>b",[1,291,3,268]]],
"decodes":[[[233,154],"<0xE6><0x97>","<0xE6><0x97>"],[[233,1,154,168],"<0xE6><0x97><0xA5>","<0xE6><s><0x97><0xA5>"],[[259,259,260]," H"," H"],[[68,285],"<0x41> Hello","<0x41> Hello"]]},
"metaspace_always_split":{"normalizer":null,"pre_tokenizer":{"type":"Metaspace","replacement":"\u2581","prepend_scheme":"always","split":true},
"decoder":{"type":"Metaspace","replacement":"\u2581","add_prefix_space":true},
"byte_fallback":true,"fuse_unk":true,
"cases":[["Hello world",[259,283,290],"Hello world","Hello world",[1,259,283,290]],
["the world",[279,290],"the world","the world",[1,279,290]],
["  two  spaces ",[259,277,264,263,259,259,273,115,267,269,261,273,259]," two  s<0x70>aces "," two  s<0x70>aces ",[1,259,277,264,263,259,259,273,115,267,269,261,273,259]],
["H\u00e9llo",[284,275,280,263],"H\u00e9llo","H\u00e9llo",[1,284,275,280,263]],
["\u65e5\u672c \u8a9e",[259,276,233,159,175,259,235,173,161],"\u65e5<0xE6><0x9C><0xAC> <0xE8><0xAA><0x9E>","\u65e5<0xE6><0x9C><0xAC> <0xE8><0xAA><0x9E>",[1,259,276,233,159,175,259,235,173,161]],
["x\ud83d\ude00y",[259,274,243,162,155,131,124],"x<0xF0><0x9F><0x98><0x80><0x79>","x<0xF0><0x9F><0x98><0x80><0x79>",[1,259,274,243,162,155,131,124]],
["a<s>b",[291,1,292],"a b","a<s> b",[1,291,1,292]],
["<s>Hello</s> world",[1,259,283,2,290],"Hello world","<s> Hello</s> world",[1,1,259,283,2,290]],
["",[],"","",[1]],
["Hello",[259,283],"Hello","Hello",[1,259,283]],
["\u2581Hello",[259,283],"Hello","Hello",[1,259,283]],
["a\u00e9\u65e5\ud83d\ude00z",[291,275,276,243,162,155,131,125],"a\u00e9\u65e5<0xF0><0x9F><0x98><0x80><0x7A>","a\u00e9\u65e5<0xF0><0x9F><0x98><0x80><0x7A>",[1,291,275,276,243,162,155,131,125]],
["a\u0000b",[291,3,268],"a<0x00>b","a<0x00>b",[1,291,3,268]]],
"decodes":[[[233,154],"<0xE6><0x97>","<0xE6><0x97>"],[[233,1,154,168],"<0xE6><0x97><0xA5>","<0xE6><s><0x97><0xA5>"],[[259,259,260]," H"," H"],[[68,285],"<0x41> Hello","<0x41> Hello"]]},
"no_byte_fallback":{"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"\u2581"},{"type":"Replace","pattern":{"String":" "},
"content":"\u2581"}]},
"pre_tokenizer":null,"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},
"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
"byte_fallback":false,"fuse_unk":true,
"cases":[["Hello world",[259,283,290],"Hello world","Hello world",[1,259,283,290]],
["the world",[279,290],"the world","the world",[1,279,290]],
["  two  spaces ",[293,277,264,263,293,273,0,267,269,261,273,259],"  two  saces ","  two  s<unk>aces ",[1,293,277,264,263,293,273,0,267,269,261,273,259]],
["H\u00e9llo",[284,275,280,263],"H\u00e9llo","H\u00e9llo",[1,284,275,280,263]],
["\u65e5\u672c \u8a9e",[259,276,0,259,0],"\u65e5 ","\u65e5<unk> <unk>",[1,259,276,0,259,0]],
["x\ud83d\ude00y",[259,274,0],"x","x<unk>",[1,259,274,0]],
["a<s>b",[291,1,292],"a b","a<s> b",[1,291,1,292]],
["<s>Hello</s> world",[1,259,283,2,259,290],"Hello  world","<s> Hello</s>  world",[1,1,259,283,2,259,290]],
["",[],"","",[1]],
["Hello",[259,283],"Hello","Hello",[1,259,283]],
["\u2581Hello",[293,283]," Hello"," Hello",[1,293,283]],
["a\u00e9\u65e5\ud83d\ude00z",[291,275,276,0],"a\u00e9\u65e5","a\u00e9\u65e5<unk>",[1,291,275,276,0]],
["a\u0000b",[291,0,268],"ab","a<unk>b",[1,291,0,268]]],
"decodes":[[[233,154],"\ufffd\ufffd","\ufffd\ufffd"],[[233,1,154,168],"\u65e5","\ufffd<s>\ufffd\ufffd"],[[259,259,260]," H"," H"],[[68,285],"A Hello","A Hello"]]},
"unk_not_fused":{"normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"\u2581"},{"type":"Replace","pattern":{"String":" "},
"content":"\u2581"}]},
"pre_tokenizer":null,"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},
"content":" "},{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
"byte_fallback":false,"fuse_unk":false,
"cases":[["Hello world",[259,283,290],"Hello world","Hello world",[1,259,283,290]],
["the world",[279,290],"the world","the world",[1,279,290]],
["  two  spaces ",[293,277,264,263,293,273,0,267,269,261,273,259],"  two  saces ","  two  s<unk>aces ",[1,293,277,264,263,293,273,0,267,269,261,273,259]],
["H\u00e9llo",[284,275,280,263],"H\u00e9llo","H\u00e9llo",[1,284,275,280,263]],
["\u65e5\u672c \u8a9e",[259,276,0,259,0],"\u65e5 ","\u65e5<unk> <unk>",[1,259,276,0,259,0]],
["x\ud83d\ude00y",[259,274,0,0],"x","x<unk><unk>",[1,259,274,0,0]],
["a<s>b",[291,1,292],"a b","a<s> b",[1,291,1,292]],
["<s>Hello</s> world",[1,259,283,2,259,290],"Hello  world","<s> Hello</s>  world",[1,1,259,283,2,259,290]],
["",[],"","",[1]],
["Hello",[259,283],"Hello","Hello",[1,259,283]],
["\u2581Hello",[293,283]," Hello"," Hello",[1,293,283]],
["a\u00e9\u65e5\ud83d\ude00z",[291,275,276,0,0],"a\u00e9\u65e5","a\u00e9\u65e5<unk><unk>",[1,291,275,276,0,0]],
["a\u0000b",[291,0,268],"ab","a<unk>b",[1,291,0,268]]],
"decodes":[[[233,154],"\ufffd\ufffd","\ufffd\ufffd"],[[233,1,154,168],"\u65e5","\ufffd<s>\ufffd\ufffd"],[[259,259,260]," H"," H"],[[68,285],"A Hello","A Hello"]]}})json";

// Gemma's form (normalizer Replace " " -> "\u2581", pre-tokenizer Split on " " merged with the
// previous piece, which after that normalizer finds nothing; decoders Replace, ByteFallback,
// Fuse) and a Split on "l" in each of its five behaviors with no normalizer, where it cuts:
// the package's results for the same vocabulary (tokenizers 0.23.3, generated as above).
const char* const kSplitPackageResults = R"json(
{"gemma":{"normalizer":{"type":"Replace","pattern":{"String":" "},"content":"\u2581"},"pre_tokenizer":{"type":"Split","pattern":{"String":" "},"behavior":"MergedWithPrevious","invert":false},"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]},"byte_fallback":true,"fuse_unk":true,"cases":[["Hello world",[283,290],"Hello world","Hello world",[1,283,290]],["the world",[270,278,290],"the world","the world",[1,270,278,290]],["  two  spaces ",[259,277,264,263,293,273,115,267,269,261,273,259],"  two  spaces ","  two  spaces ",[1,259,277,264,263,293,273,115,267,269,261,273,259]],["H\u00e9llo",[260,275,280,263],"H\u00e9llo","H\u00e9llo",[1,260,275,280,263]],["\u65e5\u672c \u8a9e",[276,233,159,175,259,235,173,161],"\u65e5\u672c \u8a9e","\u65e5\u672c \u8a9e",[1,276,233,159,175,259,235,173,161]],["a<s>b",[267,1,268],"ab","a<s>b",[1,267,1,268]],["<s>Hello</s> world",[1,283,2,290],"Hello world","<s>Hello</s> world",[1,1,283,2,290]],["",[],"","",[1]],["hello  llama lll",[278,280,263,293,280,267,112,267,259,280,262],"hello  llama lll","hello  llama lll",[1,278,280,263,293,280,267,112,267,259,280,262]],["l",[262],"l","l",[1,262]],["ll x l",[280,259,274,259,262],"ll x l","ll x l",[1,280,259,274,259,262]]],"decodes":[[[233,154],"\ufffd\ufffd","\ufffd\ufffd"],[[233,1,154,168],"\u65e5","\ufffd<s>\ufffd\ufffd"],[[259,259,260],"  H","  H"],[[68,285],"A Hello","A Hello"]]},
"split_Removed":{"normalizer":null,"pre_tokenizer":{"type":"Split","pattern":{"String":"l"},"behavior":"Removed","invert":false},"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]},"byte_fallback":true,"fuse_unk":true,"cases":[["Hello world",[260,261,263,35,264,287,266],"Heo word","Heo word",[1,260,261,263,35,264,287,266]],["the world",[270,278,35,264,287,266],"the word","the word",[1,270,278,35,264,287,266]],["  two  spaces ",[35,35,270,264,263,35,35,273,115,267,269,261,273,35],"  two  spaces ","  two  spaces ",[1,35,35,270,264,263,35,35,273,115,267,269,261,273,35]],["H\u00e9llo",[260,275,263],"H\u00e9o","H\u00e9o",[1,260,275,263]],["\u65e5\u672c \u8a9e",[276,233,159,175,35,235,173,161],"\u65e5\u672c \u8a9e","\u65e5\u672c \u8a9e",[1,276,233,159,175,35,235,173,161]],["a<s>b",[267,1,268],"ab","a<s>b",[1,267,1,268]],["<s>Hello</s> world",[1,260,261,263,2,35,264,287,266],"Heo word","<s>Heo</s> word",[1,1,260,261,263,2,35,264,287,266]],["",[],"","",[1]],["hello  llama lll",[278,263,35,35,267,112,267,35],"heo  ama ","heo  ama ",[1,278,263,35,35,267,112,267,35]],["l",[],"","",[1]],["ll x l",[35,274,35]," x "," x ",[1,35,274,35]]],"decodes":[[[233,154],"\ufffd\ufffd","\ufffd\ufffd"],[[233,1,154,168],"\u65e5","\ufffd<s>\ufffd\ufffd"],[[259,259,260],"  H","  H"],[[68,285],"A Hello","A Hello"]]},
"split_Isolated":{"normalizer":null,"pre_tokenizer":{"type":"Split","pattern":{"String":"l"},"behavior":"Isolated","invert":false},"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]},"byte_fallback":true,"fuse_unk":true,"cases":[["Hello world",[260,261,262,262,263,35,264,287,262,266],"Hello world","Hello world",[1,260,261,262,262,263,35,264,287,262,266]],["the world",[270,278,35,264,287,262,266],"the world","the world",[1,270,278,35,264,287,262,266]],["  two  spaces ",[35,35,270,264,263,35,35,273,115,267,269,261,273,35],"  two  spaces ","  two  spaces ",[1,35,35,270,264,263,35,35,273,115,267,269,261,273,35]],["H\u00e9llo",[260,275,262,262,263],"H\u00e9llo","H\u00e9llo",[1,260,275,262,262,263]],["\u65e5\u672c \u8a9e",[276,233,159,175,35,235,173,161],"\u65e5\u672c \u8a9e","\u65e5\u672c \u8a9e",[1,276,233,159,175,35,235,173,161]],["a<s>b",[267,1,268],"ab","a<s>b",[1,267,1,268]],["<s>Hello</s> world",[1,260,261,262,262,263,2,35,264,287,262,266],"Hello world","<s>Hello</s> world",[1,1,260,261,262,262,263,2,35,264,287,262,266]],["",[],"","",[1]],["hello  llama lll",[278,262,262,263,35,35,262,262,267,112,267,35,262,262,262],"hello  llama lll","hello  llama lll",[1,278,262,262,263,35,35,262,262,267,112,267,35,262,262,262]],["l",[262],"l","l",[1,262]],["ll x l",[262,262,35,274,35,262],"ll x l","ll x l",[1,262,262,35,274,35,262]]],"decodes":[[[233,154],"\ufffd\ufffd","\ufffd\ufffd"],[[233,1,154,168],"\u65e5","\ufffd<s>\ufffd\ufffd"],[[259,259,260],"  H","  H"],[[68,285],"A Hello","A Hello"]]},
"split_MergedWithPrevious":{"normalizer":null,"pre_tokenizer":{"type":"Split","pattern":{"String":"l"},"behavior":"MergedWithPrevious","invert":false},"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]},"byte_fallback":true,"fuse_unk":true,"cases":[["Hello world",[260,261,262,262,263,35,264,287,262,266],"Hello world","Hello world",[1,260,261,262,262,263,35,264,287,262,266]],["the world",[270,278,35,264,287,262,266],"the world","the world",[1,270,278,35,264,287,262,266]],["  two  spaces ",[35,35,270,264,263,35,35,273,115,267,269,261,273,35],"  two  spaces ","  two  spaces ",[1,35,35,270,264,263,35,35,273,115,267,269,261,273,35]],["H\u00e9llo",[260,275,262,262,263],"H\u00e9llo","H\u00e9llo",[1,260,275,262,262,263]],["\u65e5\u672c \u8a9e",[276,233,159,175,35,235,173,161],"\u65e5\u672c \u8a9e","\u65e5\u672c \u8a9e",[1,276,233,159,175,35,235,173,161]],["a<s>b",[267,1,268],"ab","a<s>b",[1,267,1,268]],["<s>Hello</s> world",[1,260,261,262,262,263,2,35,264,287,262,266],"Hello world","<s>Hello</s> world",[1,1,260,261,262,262,263,2,35,264,287,262,266]],["",[],"","",[1]],["hello  llama lll",[278,262,262,263,35,35,262,262,267,112,267,35,262,262,262],"hello  llama lll","hello  llama lll",[1,278,262,262,263,35,35,262,262,267,112,267,35,262,262,262]],["l",[262],"l","l",[1,262]],["ll x l",[262,262,35,274,35,262],"ll x l","ll x l",[1,262,262,35,274,35,262]]],"decodes":[[[233,154],"\ufffd\ufffd","\ufffd\ufffd"],[[233,1,154,168],"\u65e5","\ufffd<s>\ufffd\ufffd"],[[259,259,260],"  H","  H"],[[68,285],"A Hello","A Hello"]]},
"split_MergedWithNext":{"normalizer":null,"pre_tokenizer":{"type":"Split","pattern":{"String":"l"},"behavior":"MergedWithNext","invert":false},"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]},"byte_fallback":true,"fuse_unk":true,"cases":[["Hello world",[260,261,262,262,263,35,264,287,289],"Hello world","Hello world",[1,260,261,262,262,263,35,264,287,289]],["the world",[270,278,35,264,287,289],"the world","the world",[1,270,278,35,264,287,289]],["  two  spaces ",[35,35,270,264,263,35,35,273,115,267,269,261,273,35],"  two  spaces ","  two  spaces ",[1,35,35,270,264,263,35,35,273,115,267,269,261,273,35]],["H\u00e9llo",[260,275,262,262,263],"H\u00e9llo","H\u00e9llo",[1,260,275,262,262,263]],["\u65e5\u672c \u8a9e",[276,233,159,175,35,235,173,161],"\u65e5\u672c \u8a9e","\u65e5\u672c \u8a9e",[1,276,233,159,175,35,235,173,161]],["a<s>b",[267,1,268],"ab","a<s>b",[1,267,1,268]],["<s>Hello</s> world",[1,260,261,262,262,263,2,35,264,287,289],"Hello world","<s>Hello</s> world",[1,1,260,261,262,262,263,2,35,264,287,289]],["",[],"","",[1]],["hello  llama lll",[278,262,262,263,35,35,262,262,267,112,267,35,262,262,262],"hello  llama lll","hello  llama lll",[1,278,262,262,263,35,35,262,262,267,112,267,35,262,262,262]],["l",[262],"l","l",[1,262]],["ll x l",[262,262,35,274,35,262],"ll x l","ll x l",[1,262,262,35,274,35,262]]],"decodes":[[[233,154],"\ufffd\ufffd","\ufffd\ufffd"],[[233,1,154,168],"\u65e5","\ufffd<s>\ufffd\ufffd"],[[259,259,260],"  H","  H"],[[68,285],"A Hello","A Hello"]]},
"split_Contiguous":{"normalizer":null,"pre_tokenizer":{"type":"Split","pattern":{"String":"l"},"behavior":"Contiguous","invert":false},"decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"\u2581"},"content":" "},{"type":"ByteFallback"},{"type":"Fuse"}]},"byte_fallback":true,"fuse_unk":true,"cases":[["Hello world",[260,261,280,263,35,264,287,262,266],"Hello world","Hello world",[1,260,261,280,263,35,264,287,262,266]],["the world",[270,278,35,264,287,262,266],"the world","the world",[1,270,278,35,264,287,262,266]],["  two  spaces ",[35,35,270,264,263,35,35,273,115,267,269,261,273,35],"  two  spaces ","  two  spaces ",[1,35,35,270,264,263,35,35,273,115,267,269,261,273,35]],["H\u00e9llo",[260,275,280,263],"H\u00e9llo","H\u00e9llo",[1,260,275,280,263]],["\u65e5\u672c \u8a9e",[276,233,159,175,35,235,173,161],"\u65e5\u672c \u8a9e","\u65e5\u672c \u8a9e",[1,276,233,159,175,35,235,173,161]],["a<s>b",[267,1,268],"ab","a<s>b",[1,267,1,268]],["<s>Hello</s> world",[1,260,261,280,263,2,35,264,287,262,266],"Hello world","<s>Hello</s> world",[1,1,260,261,280,263,2,35,264,287,262,266]],["",[],"","",[1]],["hello  llama lll",[278,280,263,35,35,280,267,112,267,35,280,262],"hello  llama lll","hello  llama lll",[1,278,280,263,35,35,280,267,112,267,35,280,262]],["l",[262],"l","l",[1,262]],["ll x l",[280,35,274,35,262],"ll x l","ll x l",[1,280,35,274,35,262]]],"decodes":[[[233,154],"\ufffd\ufffd","\ufffd\ufffd"],[[233,1,154,168],"\u65e5","\ufffd<s>\ufffd\ufffd"],[[259,259,260],"  H","  H"],[[68,285],"A Hello","A Hello"]]}})json";

// The tokenizer.json all forms share, as the generator wrote it.
json base_tokenizer() {
  json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
  const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b)
    vocab[std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">"] = vocab.size();
  for (const char* p : {"\u2581", "H", "e", "l", "o", "w", "r", "d", "a", "b", "c", "t", "h", "i",
                        "s", "x", "\u00e9", "\u65e5"})
    vocab[p] = vocab.size();
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"\u2581", "t"}, {"h", "e"},          {"\u2581t", "he"}, {"l", "l"},          {"e", "ll"},
      {"ell", "o"},    {"H", "ello"},       {"\u2581", "H"},   {"\u2581H", "ello"}, {"\u2581", "w"},
      {"o", "r"},      {"\u2581w", "or"},   {"l", "d"},        {"\u2581wor", "ld"}, {"\u2581", "a"},
      {"\u2581", "b"}, {"\u2581", "\u2581"}};
  json merge_list = json::array();
  for (const auto& [a, b] : merges) {
    if (!vocab.contains(a + b)) vocab[a + b] = vocab.size();
    merge_list.push_back(a + " " + b);
  }
  json added = json::array();
  for (const auto& [content, id] :
       {std::pair<std::string, int>{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}})
    added.push_back({{"id", id}, {"content", content}, {"special", true}, {"normalized", false}});
  json special = {{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}};
  return {{"added_tokens", added},
          {"post_processor",
           {{"type", "TemplateProcessing"},
            {"single", {special, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
          {"model",
           {{"type", "BPE"},
            {"unk_token", "<unk>"},
            {"vocab", vocab},
            {"merges", merge_list},
            {"ignore_merges", false}}}};
}

TEST(SentencePieceBpe, EncodesAndDecodesAsThePackageInEveryForm) {
  const testing::TempDir dir;
  json results = json::parse(kPackageResults);
  results.update(json::parse(kSplitPackageResults));
  ASSERT_EQ(results.size(), 11u);
  for (const auto& [form, r] : results.items()) {
    SCOPED_TRACE(form);
    json doc = base_tokenizer();
    for (const char* key : {"normalizer", "pre_tokenizer", "decoder"})
      doc[key] = r[key];
    doc["model"]["byte_fallback"] = r["byte_fallback"];
    doc["model"]["fuse_unk"] = r["fuse_unk"];
    dir.write(form + "/tokenizer.json", doc.dump());
    const Tokenizer tok = Tokenizer::load(dir.path(form));
    EXPECT_STREQ(tok.kind(), "SentencePiece BPE");
    for (const json& c : r["cases"]) {
      const std::string text = c[0].get<std::string>();
      SCOPED_TRACE("text '" + text + "'");
      const std::vector<TokenId> ids = tok.encode(text);
      EXPECT_EQ(ids, c[1].get<std::vector<TokenId>>());
      EXPECT_EQ(tok.decode(ids), c[2].get<std::string>());
      EXPECT_EQ(tok.decode(ids, false), c[3].get<std::string>());
      EXPECT_EQ(tok.encode(text, true), c[4].get<std::vector<TokenId>>());
    }
    for (const json& d : r["decodes"]) {
      const std::vector<TokenId> ids = d[0].get<std::vector<TokenId>>();
      EXPECT_EQ(tok.decode(ids), d[1].get<std::string>()) << d[0].dump();
      EXPECT_EQ(tok.decode(ids, false), d[2].get<std::string>()) << d[0].dump();
    }
  }
}

TEST(SentencePieceBpe, WhatItDoesNotSupportIsRefusedByName) {
  const testing::TempDir dir;
  const auto error = [&](const json& doc) -> std::string {
    dir.write("t/tokenizer.json", doc.dump());
    try {
      Tokenizer::load(dir.path("t"));
    } catch (const std::exception& e) {
      return e.what();
    }
    return "(loaded)";
  };
  json doc = base_tokenizer();
  doc["model"]["byte_fallback"] = true;
  doc["normalizer"] = {{"type", "NFKC"}};
  EXPECT_NE(error(doc).find("normalizer 'NFKC' is not supported with a SentencePiece BPE"),
            std::string::npos)
      << error(doc);
  doc["normalizer"] = {{"type", "Replace"}, {"pattern", {{"Regex", " +"}}}, {"content", "_"}};
  EXPECT_NE(error(doc).find("normalizer.pattern {\"Regex\":\" +\"} is not supported (a String)"),
            std::string::npos)
      << error(doc);
  doc["normalizer"] = nullptr;
  doc["pre_tokenizer"] = {{"type", "Metaspace"}, {"prepend_scheme", "sometimes"}};
  EXPECT_NE(error(doc).find("pre_tokenizer.prepend_scheme 'sometimes' (always, first, never)"),
            std::string::npos)
      << error(doc);
  doc["pre_tokenizer"] = nullptr;
  doc["decoder"] = {{"type", "Sequence"}, {"decoders", {{{"type", "CTC"}}}}};
  EXPECT_NE(error(doc).find("decoder.decoders[0] 'CTC' is not supported"), std::string::npos)
      << error(doc);
  doc["decoder"] = nullptr;
  doc["model"]["end_of_word_suffix"] = "</w>";
  EXPECT_NE(error(doc).find("model.end_of_word_suffix is set"), std::string::npos) << error(doc);
}

} // namespace
} // namespace mt::tok
