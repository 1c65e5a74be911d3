#!/usr/bin/env python3
"""metatune's Hugging Face loader (core/graph/hf_checkpoint.cpp) against transformers itself.

For each small random-weight decoder below: transformers makes the model from a config,
save_pretrained() writes the folder (config.json + model.safetensors, as transformers writes
them), transformers computes the logits of a fixed prompt from that folder (reloaded, in
float64) and greedy-generates N tokens; then `metatune model run --hf DIR --tokens ...
--save-output X.npy` gives metatune's logits of every position and `metatune model generate
--hf DIR --prompt-ids ... --ignore-eos` its greedy tokens, and the two are compared.

The text check (models llama2_sp_text, llama3_bpe_text, qwen2_bpe_text): a tokenizer trained
here with the tokenizers package in Llama 2's SentencePiece-BPE form, Llama 3's or Qwen2's
byte-level form is saved with a random-weight model of its vocabulary size; for each prompt
(spaces, accents, CJK and emoji, special tokens written in the text) transformers' tokenizer
and `metatune tokenize --add-special-tokens` give the prompt ids, transformers' generate() and
`metatune model generate --hf DIR --prompt TEXT --ignore-eos` the greedy tokens, and
transformers' decode() of the generated ids is compared with the text metatune printed and
with `metatune tokenize --decode`. Then the chat check, in the same folders: real chat
templates (Mistral, Zephyr, Gemma 2, Llama 3, Llama 3.1 with tools, Qwen2.5, Qwen3, SmolLM2 -- the files
of tests/tokenizer/data/chat_templates) over three conversations (one turn; system and several
turns with accents, emoji and CJK; a tool schema), transformers' apply_chat_template ids against
`metatune tokenize --messages`, and the greedy tokens of `metatune model generate --messages`.

    .venv/bin/python check.py [--metatune build/bin/metatune] [--models a,b] [--keep DIR]

Exit status 1 when any model's logits differ by more than --tol x max|ref| (or a folder is
refused by the loader, or the greedy tokens differ where transformers' top two logits are not
within that tolerance of each other), or, in the text check, when prompt ids, greedy tokens
(same rule), the printed text or the decoded text differ, or a metatune command fails.
"""
import argparse
import copy
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import transformers
from transformers import (AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM,
                          MistralConfig, MistralForCausalLM, PreTrainedTokenizerFast, Qwen2Config,
                          Qwen2ForCausalLM, Qwen3Config, Qwen3ForCausalLM, GemmaConfig,
                          GemmaForCausalLM, Gemma2Config, Gemma2ForCausalLM, Gemma3TextConfig,
                          Gemma3ForCausalLM, Phi3Config, Phi3ForCausalLM)
import tokenizers
from tokenizers import (Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors,
                        trainers)
from tokenizers import models as tok_models

SMALL = dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
             num_key_value_heads=2, intermediate_size=128, max_position_embeddings=256)

# name -> (config class, model class, extra config fields, prompt length)
MODELS = {
    "llama": (LlamaConfig, LlamaForCausalLM, dict(tie_word_embeddings=False), 16),
    "llama_llama3_rope_bias": (LlamaConfig, LlamaForCausalLM, dict(
        tie_word_embeddings=False, attention_bias=True, mlp_bias=True,
        rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                      "high_freq_factor": 4.0, "original_max_position_embeddings": 64}), 16),
    "qwen2_tied": (Qwen2Config, Qwen2ForCausalLM, dict(tie_word_embeddings=True), 16),
    "mistral_window8": (MistralConfig, MistralForCausalLM, dict(
        tie_word_embeddings=False, sliding_window=8), 24),
    # Qwen3: per-head q/k RMS norms, heads wider than hidden / heads (q is 128 wide), tied.
    "qwen3_headdim32": (Qwen3Config, Qwen3ForCausalLM, dict(
        tie_word_embeddings=True, head_dim=32), 16),
    # Saved in shards (save_pretrained's max_shard_size): model-0000N-of-0000M.safetensors and
    # model.safetensors.index.json, as checkpoints of more than a few GB come.
    # Gemma: GeGLU (tanh GELU), RMSNorm scaling by 1 + weight, embeddings times sqrt(hidden),
    # tied head; Gemma 2 adds norms after the attention and the MLP, query_pre_attn_scalar,
    # soft-capped scores and logits (caps low enough to bite here) and a sliding window on
    # its even layers (8 under a 24-token prompt), the odd ones global.
    "gemma": (GemmaConfig, GemmaForCausalLM, dict(head_dim=16), 16),
    "gemma2": (Gemma2Config, Gemma2ForCausalLM, dict(
        head_dim=32, query_pre_attn_scalar=24, attn_logit_softcapping=3.0,
        final_logit_softcapping=5.0, sliding_window=8), 24),
    # Gemma 3 (gemma3_text, the 1B's form): q/k norms by 1 + weight, windowed and global layers
    # (a window of 8 under a 24-token prompt), two rotary tables: the windowed layers' base 100,
    # the global layers' 10000 with linear scaling by 2.
    "gemma3_text": (Gemma3TextConfig, Gemma3ForCausalLM, dict(
        head_dim=16, query_pre_attn_scalar=24, sliding_window=8,
        layer_types=["sliding_attention", "full_attention"], rope_local_base_freq=100.0,
        rope_theta=10000.0, rope_scaling={"rope_type": "linear", "factor": 2.0}), 24),
    # Qwen2 with use_sliding_window: a window of 8 from layer max_window_layers (1) on.
    "qwen2_window": (Qwen2Config, Qwen2ForCausalLM, dict(
        tie_word_embeddings=True, use_sliding_window=True, sliding_window=8,
        max_window_layers=1), 24),
    # Phi-3: one qkv_proj and one gate_up_proj (split at load), a sliding window (8 here).
    "phi3_window8": (Phi3Config, Phi3ForCausalLM, dict(
        tie_word_embeddings=False, sliding_window=8, pad_token_id=0), 24),
    "llama_sharded": (LlamaConfig, LlamaForCausalLM, dict(tie_word_embeddings=False), 16),
    # Weights stored in bf16, as most checkpoints ship (metatune reads them as f32; the
    # reference reloads the same bf16 values and computes in float64).
    "qwen2_bf16": (Qwen2Config, Qwen2ForCausalLM, dict(tie_word_embeddings=True), 16),
    # YaRN (Qwen2.5's long-context setting): an original context of 64, so that with head width
    # 16 one frequency is kept, one blended and the rest divided; the attention factor on cos
    # and sin.
    "qwen2_yarn": (Qwen2Config, Qwen2ForCausalLM, dict(tie_word_embeddings=True, rope_scaling={
        "rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}), 16),
    # LongRoPE (Phi-3.5, Phi-4): per-frequency short factors, the original context at the top of
    # config.json (metatune limits sequences to it), sqrt(1 + ln 4 / ln 64) on cos and sin.
    "phi3_longrope": (Phi3Config, Phi3ForCausalLM, dict(
        tie_word_embeddings=False, pad_token_id=0, original_max_position_embeddings=64,
        rope_scaling={"type": "longrope",
                      "short_factor": [1.0, 1.1, 1.3, 1.7, 2.4, 3.3, 4.6, 6.0],
                      "long_factor": [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 48.0, 64.0]}), 16),
    # Dynamic NTK: the base changes only past max_position_embeddings.
    "llama_dynamic": (LlamaConfig, LlamaForCausalLM, dict(
        tie_word_embeddings=False, rope_scaling={"rope_type": "dynamic", "factor": 2.0}), 16),
}
SHARD_SIZE = {"llama_sharded": "150KB"}
SAVE_DTYPE = {"qwen2_bf16": torch.bfloat16}
# The same folder as llama_llama3_rope_bias with config.json's rope fields rewritten in
# transformers 4's form (rope_theta and rope_scaling at the top) when transformers wrote
# transformers 5's rope_parameters: the loader's other path. Not transformers' own output.
V4_VARIANT = "llama_llama3_rope_bias_v4fields"


def init_weights(model, seed):
    """Random weights larger than transformers' default init (std 0.02), so that attention is
    far from uniform and the logits spread: linear weights std 0.15, embeddings 0.5, biases
    0.1, norm weights 1 + 0.1 N(0, 1)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(p.shape, generator=g, dtype=torch.float64)
            if "norm" in name:
                v = 1.0 + 0.1 * r
            elif name.endswith(".bias"):
                v = 0.1 * r
            elif "embed_tokens" in name:
                v = 0.5 * r
            else:
                v = 0.15 * r
            p.copy_(v.to(p.dtype))


def prompt_ids(n, vocab, seed):
    g = np.random.default_rng(seed)
    return [int(x) for x in g.integers(3, vocab, size=n)]  # past bos/eos/pad (0..2)


def hf_reference(folder, ids, new_tokens):
    """transformers' logits of `ids` (float64 and float32 forwards of the reloaded folder), its
    greedy generate() tokens (float64, with its cache) and, along that greedy sequence, the
    margin between the top two logits at each step (float64, whole-sequence forward)."""
    out = {}
    for dtype in (torch.float64, torch.float32):
        m = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager")
        m = m.to(dtype).eval()
        with torch.no_grad():
            logits = m(torch.tensor([ids])).logits[0]
        out[str(dtype).split(".")[-1]] = logits.double().numpy()
        if dtype == torch.float64:
            gc = copy.deepcopy(m.generation_config)
            gc.do_sample = False
            gc.max_new_tokens = new_tokens
            gc.min_new_tokens = 0
            gc.eos_token_id = None  # a fixed count, as metatune's --ignore-eos
            gc.pad_token_id = 0
            with torch.no_grad():
                seq = m.generate(torch.tensor([ids]), generation_config=gc)
            greedy = [int(t) for t in seq[0, len(ids):]]
            with torch.no_grad():
                full = m(seq).logits[0, len(ids) - 1:-1].double().numpy()
            top2 = np.sort(full, axis=-1)[:, -2:]
            out["greedy"] = greedy
            out["greedy_margin"] = (top2[:, 1] - top2[:, 0]).tolist()
            out["greedy_max_abs"] = float(np.abs(full).max())
            out["manual_greedy"] = [int(t) for t in full.argmax(-1)]
        out["class"] = type(m).__name__
    return out


def hf_logits64(folder, ids, zero_bias=(), **overrides):
    m = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager", **overrides)
    m = m.double().eval()
    with torch.no_grad():
        for name, p in m.named_parameters():
            if name.endswith(".bias") and any(z in name for z in zero_bias):
                p.zero_()
        return m(torch.tensor([ids])).logits[0].numpy()


def controls(name, folder, ids, ref):
    """How far transformers' own logits move when the feature a model is here for is taken away
    (so that a loader ignoring it would fail the check): label -> max abs logit difference."""
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    no_scaling = ({"rope_parameters": {"rope_type": "default",
                                       "rope_theta": cfg["rope_parameters"].get("rope_theta", 1e4)}}
                  if "rope_parameters" in cfg else {"rope_scaling": None})
    cases = {
        "llama": {"rope_theta 500000 instead of 10000": (
            dict(rope_parameters={"rope_type": "default", "rope_theta": 500000.0})
            if "rope_parameters" in cfg else dict(rope_theta=500000.0))},
        "llama_llama3_rope_bias": {"without the llama3 rope scaling": no_scaling,
                                   "without the attention and mlp biases": dict(
                                       zero_bias=("self_attn.", "mlp."))},
        "qwen2_tied": {"without the q/k/v biases": dict(zero_bias=("self_attn.",))},
        "mistral_window8": {"without the sliding window": dict(sliding_window=None)},
        "qwen2_yarn": {"without the yarn scaling": no_scaling},
        "gemma2": {"without the sliding window": dict(sliding_window=4096)},
        "gemma3_text": {"without the sliding window": dict(sliding_window=4096)},
        "qwen2_window": {"without the sliding window": dict(sliding_window=4096)},
        "phi3_longrope": {"without the longrope scaling": no_scaling},
    }
    out = {}
    for label, kw in cases.get(name, {}).items():
        out[label] = float(np.abs(hf_logits64(folder, ids, **kw) - ref).max())
    return out


def run_cmd(cmd, timeout=300):
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    return p, time.time() - t0


def loader_error(text):
    """The lines of metatune's output that say why it stopped (not its info log)."""
    lines = [l for l in text.splitlines() if l.strip() and "[info]" not in l and "built " not in l]
    return "\n".join(lines[-6:])


def metatune_logits(metatune, folder, ids, implementations, work):
    npy = os.path.join(work, f"logits_{implementations}.npy")
    cmd = [metatune, "model", "run", "--hf", folder, "--tokens", ",".join(map(str, ids)),
           "--repeats", "1", "-q", "--log-level", "warn", "--implementations", implementations,
           "--save-output", npy]
    p, secs = run_cmd(cmd)
    if p.returncode != 0 or not os.path.exists(npy):
        return None, loader_error(p.stdout + p.stderr) or f"exit {p.returncode}", cmd, secs
    a = np.load(npy)
    return a.reshape(-1, a.shape[-1]).astype(np.float64), None, cmd, secs


def metatune_generate(metatune, folder, ids, new_tokens, work):
    report = os.path.join(work, "generate.json")
    cmd = [metatune, "model", "generate", "--hf", folder, "--prompt-ids", ",".join(map(str, ids)),
           "--max-new-tokens", str(new_tokens), "--ignore-eos", "--greedy", "-q",
           "--log-level", "warn", "--report-json", report]
    p, secs = run_cmd(cmd)
    if p.returncode != 0 or not os.path.exists(report):
        return None, loader_error(p.stdout + p.stderr) or f"exit {p.returncode}", cmd, secs
    with open(report) as f:
        return [int(t) for t in json.load(f)["new_tokens"]], None, cmd, secs


def rewrite_v4_fields(src, dst):
    """Copy folder src to dst with config.json's rope_parameters spelled as transformers 4 did:
    rope_theta at the top, the scaling (without rope_theta) as rope_scaling. Returns False when
    src's config has no rope_parameters (transformers 4 wrote those fields itself)."""
    with open(os.path.join(src, "config.json")) as f:
        cfg = json.load(f)
    if "rope_parameters" not in cfg:
        return False
    shutil.copytree(src, dst)
    rp = dict(cfg.pop("rope_parameters"))
    cfg["rope_theta"] = rp.pop("rope_theta", 10000.0)
    cfg["rope_scaling"] = None if rp.get("rope_type", "default") == "default" else rp
    with open(os.path.join(dst, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2, sort_keys=True)
    return True


# ---------------------------------------------------------------------------------------------
# The text check: a tokenizer trained here with the tokenizers package in one of the forms the
# Llama-family checkpoints ship, saved beside a random-weight model; prompts as text through
# transformers' tokenizer and through metatune's, greedy generation from them, and the decoded
# text of the generated ids on both sides.

# The Split patterns of Llama 3's and Qwen2's tokenizer.json (Qwen2: one number a piece).
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = LLAMA3_PATTERN.replace(r"\p{N}{1,3}", r"\p{N}")
TEXT_CORPUS_BYTES = 400_000
TEXT_VOCAB = 1500  # tokens trained (the SentencePiece form: with its 256 byte tokens)

# name -> (tokenizer form, config class, model class, extra config fields)
TEXT_MODELS = {
    "llama2_sp_text": ("llama2", LlamaConfig, LlamaForCausalLM, dict(tie_word_embeddings=False)),
    "llama3_bpe_text": ("llama3", LlamaConfig, LlamaForCausalLM, dict(tie_word_embeddings=False)),
    "qwen2_bpe_text": ("qwen2", Qwen2Config, Qwen2ForCausalLM, dict(tie_word_embeddings=True)),
}
TEXT_PROMPTS = [
    ("ascii_spaces", "  The quick  brown fox jumps over the lazy dog."),
    ("accented", "Café déjà vu: naïve façade, Ångström, Dvořák; re\u0301sume\u0301 "
                 "(e + combining acute)."),
    ("cjk_emoji", "日本語のテキスト、中文字符 🙂👍🏽 한국어!"),
]
# A prompt with the form's special tokens written in the text (found before anything else).
SPECIAL_PROMPT = {
    "llama2": "Hello</s> world<s> again <unk>x",
    "llama3": "Hi<|end_of_text|> there <|begin_of_text|>again",
    "qwen2": "<|im_start|>user\nHello there<|im_end|>\n<|endoftext|>",
}


def text_corpus(limit=TEXT_CORPUS_BYTES):
    """The licenses in /usr/share/common-licenses, then Debian's copyright files, sorted, up to
    `limit` characters."""
    import glob
    files, total = [], 0
    for pattern in ("/usr/share/common-licenses/*", "/usr/share/doc/*/copyright"):
        for path in sorted(glob.glob(pattern)):
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            try:
                with open(path, encoding="utf-8") as f:
                    size = len(f.read())
            except (UnicodeDecodeError, OSError):
                continue
            if total + size > limit:
                return files, total
            files.append(path)
            total += size
    return files, total


def train_llama2_form(files):
    """A BPE over SentencePiece pieces in Llama 2's tokenizer.json form (what transformers'
    LlamaConverter writes): model BPE with byte_fallback, fuse_unk, unk <unk>; vocabulary
    <unk> <s> </s> (0..2, special added tokens), the 256 byte tokens <0x00>..<0xFF> (3..258),
    then the trained pieces; normalizer Prepend("▁") + Replace(" ", "▁"); no pre-tokenizer;
    decoder Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0); post-processor
    TemplateProcessing "<s> $A" (pair "<s> $A <s> $B")."""
    tok = Tokenizer(tok_models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    # Trained with words cut at the spaces (so no piece has a "▁" inside), as SentencePiece's are.
    tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first",
                                                 split=True)
    tok.train(files, trainers.BpeTrainer(vocab_size=TEXT_VOCAB - 256,
                                         special_tokens=["<unk>", "<s>", "</s>"],
                                         show_progress=False))
    doc = json.loads(tok.to_str())
    trained = sorted(doc["model"]["vocab"].items(), key=lambda kv: kv[1])
    specials = ["<unk>", "<s>", "</s>"]
    assert [t for t, _ in trained[:3]] == specials
    order = specials + [f"<0x{b:02X}>" for b in range(256)] + [t for t, _ in trained[3:]]
    assert len(set(order)) == len(order)
    doc["model"]["vocab"] = {t: i for i, t in enumerate(order)}
    doc["normalizer"] = {"type": "Sequence", "normalizers": [
        {"type": "Prepend", "prepend": "\u2581"},
        {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]}
    doc["pre_tokenizer"] = None
    doc["decoder"] = {"type": "Sequence", "decoders": [
        {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
        {"type": "ByteFallback"}, {"type": "Fuse"},
        {"type": "Strip", "content": " ", "start": 1, "stop": 0}]}
    doc["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                 {"Sequence": {"id": "A", "type_id": 0}},
                 {"SpecialToken": {"id": "<s>", "type_id": 1}},
                 {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}}
    tok = Tokenizer.from_str(json.dumps(doc, ensure_ascii=False))
    config = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}
    return tok, config, dict(bos_token_id=1, eos_token_id=2, pad_token_id=None)


def train_split_form(files, form):
    """A byte-level BPE in the form Llama 3 (ignore_merges, <|begin_of_text|> $A as the
    post-processor's template after ByteLevel, as Llama 3.x's tokenizer.json has it) or Qwen2
    (NFC normalizer; post-processor ByteLevel: no BOS; <|endoftext|> <|im_start|> <|im_end|>)
    writes it: pre-tokenizer Sequence [Split(pattern, Isolated), ByteLevel(add_prefix_space
    False, use_regex False)], decoder ByteLevel; the special tokens after the trained ones."""
    llama3 = form == "llama3"
    tok = Tokenizer(tok_models.BPE(ignore_merges=llama3))
    if not llama3:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN if llama3 else QWEN2_PATTERN),
                             behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.train(files, trainers.BpeTrainer(vocab_size=TEXT_VOCAB,
                                         initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                         show_progress=False))
    if llama3:
        tok.add_special_tokens(["<|begin_of_text|>", "<|end_of_text|>"])
        bos = tok.token_to_id("<|begin_of_text|>")
        tok.post_processor = processors.Sequence([
            processors.ByteLevel(add_prefix_space=True, trim_offsets=False, use_regex=True),
            processors.TemplateProcessing(
                single="<|begin_of_text|> $A",
                pair="<|begin_of_text|> $A <|begin_of_text|>:1 $B:1",
                special_tokens=[("<|begin_of_text|>", bos)])])
        config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}
        ids = dict(bos_token_id=bos, eos_token_id=tok.token_to_id("<|end_of_text|>"),
                   pad_token_id=None)
    else:
        tok.add_special_tokens(["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
        tok.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False,
                                                  use_regex=False)
        config = {"bos_token": None, "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>"}
        eot = tok.token_to_id("<|endoftext|>")
        ids = dict(bos_token_id=None, eos_token_id=eot, pad_token_id=eot)
    return tok, config, ids


def make_text_model(name, folder, seed, corpus):
    """The tokenizer of TEXT_MODELS[name]'s form, trained on `corpus`, and a random-weight model
    of its vocabulary size, saved together in `folder`. Returns what was made."""
    form, cfg_cls, model_cls, extra = TEXT_MODELS[name]
    tok, tok_config, special_ids = (train_llama2_form(corpus) if form == "llama2"
                                    else train_split_form(corpus, form))
    vocab = tok.get_vocab_size(with_added_tokens=True)
    assert sorted(tok.get_vocab(with_added_tokens=True).values()) == list(range(vocab))
    cfg = cfg_cls(**dict(SMALL, vocab_size=vocab), **extra, **special_ids)
    k = len(MODELS) + list(TEXT_MODELS).index(name)  # the same weights whichever are run
    torch.manual_seed(seed + k)
    model = model_cls(cfg)
    init_weights(model, seed + k)
    model.save_pretrained(folder, safe_serialization=True)
    tok.save(os.path.join(folder, "tokenizer.json"))
    # transformers' tokenizer of the folder: tokenizer.json as it is (PreTrainedTokenizerFast,
    # transformers 5's TokenizersBackend), not a model class's tokenizer that rebuilds the
    # pipeline; no clean_up_tokenization_spaces (a transformers step, not tokenizer.json's).
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(dict(tokenizer_class="PreTrainedTokenizerFast", model_max_length=256,
                       clean_up_tokenization_spaces=False, **tok_config), f, indent=2)
    return {"form": form, "vocab_size": vocab, "special_ids": special_ids}


def metatune_tokenize(metatune, folder, text):
    cmd = [metatune, "tokenize", "--tokenizer", folder, "--text", text, "--whole",
           "--add-special-tokens", "--json"]
    p, _ = run_cmd(cmd)
    if p.returncode != 0:
        return None, loader_error(p.stdout + p.stderr) or f"exit {p.returncode}"
    return json.loads(p.stdout), None


def metatune_decode(metatune, folder, ids):
    cmd = [metatune, "tokenize", "--tokenizer", folder, "--text", " ".join(map(str, ids)),
           "--decode", "--json"]
    p, _ = run_cmd(cmd)
    if p.returncode != 0:
        return None, loader_error(p.stdout + p.stderr) or f"exit {p.returncode}"
    return json.loads(p.stdout), None


def metatune_generate_text(metatune, folder, text, new_tokens, work):
    """`metatune model generate --hf DIR --prompt TEXT`: its report (prompt token count, new
    ids) and the text it printed (stdout before its figures line)."""
    report = os.path.join(work, "generate_text.json")
    if os.path.exists(report):
        os.remove(report)
    cmd = [metatune, "model", "generate", "--hf", folder, "--prompt", text,
           "--max-new-tokens", str(new_tokens), "--ignore-eos", "--greedy", "-q",
           "--log-level", "warn", "--report-json", report]
    # Bytes, read as UTF-8 here: text=True would turn a printed "\r" into "\n".
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, timeout=300)
    secs = time.time() - t0
    p.stdout = p.stdout.decode("utf-8", errors="backslashreplace")
    p.stderr = p.stderr.decode("utf-8", errors="backslashreplace")
    if p.returncode != 0 or not os.path.exists(report):
        return None, loader_error(p.stdout + p.stderr) or f"exit {p.returncode}", cmd, secs
    with open(report) as f:
        rep = json.load(f)
    # The streamed text, then "\n", then (-q) the line "prompt N tokens: prefill ...".
    marker = f"\nprompt {rep['prompt_tokens']} tokens: prefill "
    at = p.stdout.rfind(marker)
    if at < 0:
        return None, f"no '{marker.strip()}' line in its output:\n{p.stdout[-500:]}", cmd, secs
    printed = p.stdout[:at]
    return {"prompt_tokens": rep["prompt_tokens"], "new_tokens": [int(t) for t in rep["new_tokens"]],
            "printed": printed, "stdout": p.stdout}, None, cmd, secs


def hf_greedy(model, ids, new_tokens):
    """transformers' greedy tokens (float64) and the top-two margin at each step: the arg max of
    the model's own forward of the whole sequence, token after token. Not generate(): with the
    end-of-sequence id as the arg max, transformers 5's generate() stops there even with
    eos_token_id None in its generation config (a model the text check builds did), where
    metatune's --ignore-eos goes on."""
    seq = list(ids)
    margins, max_abs = [], 0.0
    with torch.no_grad():
        for _ in range(new_tokens):
            last = model(torch.tensor([seq])).logits[0, -1].double().numpy()
            top2 = np.sort(last)[-2:]
            margins.append(float(top2[1] - top2[0]))
            max_abs = max(max_abs, float(np.abs(last).max()))
            seq.append(int(last.argmax()))
    return seq[len(ids):], margins, max_abs


def first_difference(a, b):
    return next((j for j, (x, y) in enumerate(zip(a, b)) if x != y),
                None if len(a) == len(b) else min(len(a), len(b)))


# The chat check: real chat templates (tests/tokenizer/data/chat_templates/templates) written
# into the text models' tokenizer_config.json; conversations through transformers'
# apply_chat_template(tokenize=True) and through `metatune tokenize --messages`, then greedy
# generation from them (`metatune model generate --messages`).
CHAT_TEMPLATES = {
    "llama2": ["mistral-7b-instruct-v0.1", "zephyr-7b-beta", "gemma-2-2b-it"],
    "llama3": ["llama-3-8b-instruct", "llama-3.1-8b-instruct"],
    "qwen2": ["qwen2.5-7b-instruct", "qwen3-0.6b", "smollm2-instruct"],
}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "Le temps qu'il fait à une ville 🌦",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
CHAT_CONVERSATIONS = [
    ("one_turn", {"messages": [{"role": "user", "content": "Hello there, how are you?"}]}),
    ("multi_turn", {"messages": [
        {"role": "system", "content": "Réponds en français 🙂"},
        {"role": "user", "content": "Quelle heure est-il ?"},
        {"role": "assistant", "content": "  Il est midi.  "},
        {"role": "user", "content": "Merci ! 日本語も？"}]}),
    ("tools", {"messages": [{"role": "user", "content": "What's the weather in Paris?"}],
               "tools": [WEATHER_TOOL], "date_string": "26 Jul 2024"}),
]


def chat_check(form, folder, work, args, hf_tok, model):
    """For each of CHAT_TEMPLATES[form] and each conversation: the prompt ids of transformers'
    apply_chat_template against `metatune tokenize --messages`, and (the first conversation)
    greedy tokens of `metatune model generate --messages` against transformers' from its ids.
    A conversation the template refuses must be refused by both. Returns (results, failed)."""
    here = os.path.dirname(os.path.abspath(__file__))
    tdir = os.path.join(here, "..", "..", "..", "tests", "tokenizer", "data", "chat_templates",
                        "templates")
    cfg_path = os.path.join(folder, "tokenizer_config.json")
    with open(cfg_path) as f:
        base_cfg = json.load(f)
    out, failed = [], False
    for tname in CHAT_TEMPLATES[form]:
        with open(os.path.join(tdir, tname + ".jinja")) as f:
            template = f.read()
        with open(cfg_path, "w") as f:
            json.dump(dict(base_cfg, chat_template=template), f, indent=2)
        tok = AutoTokenizer.from_pretrained(folder)
        for label, conv in CHAT_CONVERSATIONS:
            c = {"template": tname, "conversation": label}
            out.append(c)
            extra = {k: v for k, v in conv.items() if k not in ("messages", "tools")}
            try:
                hf_ids = list(tok.apply_chat_template(conv["messages"], tools=conv.get("tools"),
                                                      add_generation_prompt=True, tokenize=True,
                                                      return_dict=True, **extra)["input_ids"])
                hf_err = None
            except Exception as e:  # the template refused the conversation
                hf_ids, hf_err = None, f"{type(e).__name__}: {e}"
            path = os.path.join(work, f"chat_{tname}_{label}.json")
            with open(path, "w") as f:
                json.dump(conv, f, ensure_ascii=False)
            p, _ = run_cmd([args.metatune, "tokenize", "--tokenizer", folder, "--messages", path,
                            "--json"])
            mt_ids = json.loads(p.stdout) if p.returncode == 0 else None
            c.update(hf_ids=hf_ids, hf_error=hf_err, metatune_ids=mt_ids)
            if hf_err is not None:
                ok = mt_ids is None
                c["metatune_error"] = loader_error(p.stdout + p.stderr)
                print(f"   -- chat {tname} / {label}: transformers refuses ({hf_err[:90]}); "
                      f"metatune {'refuses too' if ok else 'RENDERS IT'}: {c['metatune_error'][:120]}")
            else:
                ok = mt_ids == hf_ids
                print(f"   -- chat {tname} / {label}: {len(hf_ids)} prompt ids  "
                      f"[{'agree' if ok else 'DIFFER'}]")
                if not ok:
                    k = first_difference(mt_ids or [], hf_ids)
                    print(f"         first differs at {k}: transformers "
                          f"{json.dumps(tok.decode(hf_ids[k:k + 8]), ensure_ascii=False)}, metatune "
                          f"{json.dumps(tok.decode((mt_ids or [])[k:k + 8]), ensure_ascii=False)}; "
                          + (loader_error(p.stdout + p.stderr) if mt_ids is None else ""))
            c["ids_agree"] = ok
            failed |= not ok
            if label != CHAT_CONVERSATIONS[0][0] or hf_ids is None:
                continue
            hf_new, _, _ = hf_greedy(model, hf_ids, args.new_tokens)
            report = os.path.join(work, "chat_generate.json")
            if os.path.exists(report):
                os.remove(report)
            p, secs = run_cmd([args.metatune, "model", "generate", "--hf", folder, "--messages",
                               path, "--max-new-tokens", str(args.new_tokens), "--ignore-eos",
                               "--greedy", "-q", "--log-level", "warn", "--report-json", report])
            rep = json.load(open(report)) if p.returncode == 0 and os.path.exists(report) else None
            gen_ok = (rep is not None and rep["prompt_tokens"] == len(hf_ids)
                      and [int(t) for t in rep["new_tokens"]] == hf_new)
            c.update(hf_new=hf_new, metatune_new=rep and rep["new_tokens"], greedy_agree=gen_ok)
            print(f"      greedy from the chat prompt, transformers {hf_new}, metatune model "
                  f"generate --messages {rep and rep['new_tokens']}  [{'agree' if gen_ok else 'DIFFER'}]"
                  f" ({secs:.1f} s)" + ("" if rep else " " + loader_error(p.stdout + p.stderr)))
            failed |= not gen_ok
    with open(cfg_path, "w") as f:
        json.dump(base_cfg, f, indent=2)
    return out, failed


def text_check(name, folder, work, args, corpus):
    """Builds TEXT_MODELS[name] in `folder` and compares, for each prompt: the prompt ids
    (transformers' tokenizer with add_special_tokens=True; also the tokenizers package on its
    own) with metatune's (`metatune tokenize --add-special-tokens`, and the count `model
    generate --prompt` reported), the greedy tokens (transformers' generate() from its ids,
    metatune's `model generate --prompt TEXT`), and the text of the generated ids: transformers'
    decode (skip_special_tokens=True) against what metatune printed and against `metatune
    tokenize --decode`. Returns (result dict, failed)."""
    made = make_text_model(name, folder, args.seed, corpus)
    r = {"model": name, "text": True, "folder": folder, **made, "prompts": []}
    hf_tok = AutoTokenizer.from_pretrained(folder)
    # AutoTokenizer may take a model type's own class (transformers 5: Qwen2Tokenizer for a
    # qwen2 config.json, which rebuilds parts of the pipeline); the ids of tokenizer.json as it
    # is, through transformers and through the tokenizers package, are checked beside it.
    fast_tok = PreTrainedTokenizerFast.from_pretrained(folder)
    pkg_tok = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
    model = AutoModelForCausalLM.from_pretrained(folder, attn_implementation="eager")
    model = model.to(torch.float64).eval()
    r["hf_tokenizer_class"] = type(hf_tok).__name__
    r["hf_class"] = type(model).__name__
    print(f"\n== {name}: {made['form']} tokenizer ({made['vocab_size']} tokens, "
          f"{type(hf_tok).__name__}) + {type(model).__name__}; config {made['special_ids']}",
          flush=True)
    failed = False
    prompts = TEXT_PROMPTS + [("special_tokens", SPECIAL_PROMPT[made["form"]])]
    for label, text in prompts:
        q = {"label": label, "text": text}
        r["prompts"].append(q)
        bad = []
        print(f"   -- {label}: {json.dumps(text, ensure_ascii=False)}")
        hf_ids = hf_tok(text, add_special_tokens=True)["input_ids"]
        fast_ids = fast_tok(text, add_special_tokens=True)["input_ids"]
        pkg_ids = pkg_tok.encode(text, add_special_tokens=True).ids
        q["hf_ids"] = hf_ids
        if fast_ids != hf_ids:
            q["pretrainedtokenizerfast_ids"] = fast_ids
            print(f"      (PreTrainedTokenizerFast gives other ids than {type(hf_tok).__name__}: "
                  f"{fast_ids})")
        if pkg_ids != hf_ids:
            q["tokenizers_package_ids"] = pkg_ids
            print(f"      (the tokenizers package alone gives other ids: {pkg_ids})")
        mt_ids, err = metatune_tokenize(args.metatune, folder, text)
        q["metatune_ids"] = mt_ids
        if err is not None:
            q["tokenize_error"] = err
            bad.append("tokenize failed")
            print("      metatune tokenize: FAILED\n         " + err.replace("\n", "\n         "))
        q["ids_agree"] = mt_ids == hf_ids
        print(f"      prompt ids, transformers: {hf_ids}")
        if mt_ids is not None:
            tag = "agree" if q["ids_agree"] else "DIFFER"
            print(f"      prompt ids, metatune:     {mt_ids}  [{tag}]")
            if not q["ids_agree"]:
                k = first_difference(mt_ids, hf_ids)
                q["ids_first_difference"] = k
                bad.append("prompt ids")
                print(f"         first differs at index {k}: transformers "
                      f"{hf_tok.convert_ids_to_tokens(hf_ids[k:k + 4])}, metatune "
                      f"{hf_tok.convert_ids_to_tokens(mt_ids[k:k + 4])}")
        hf_new, margins, max_abs = hf_greedy(model, hf_ids, args.new_tokens)
        q["hf_new"] = hf_new
        q["hf_text"] = hf_tok.decode(hf_new, skip_special_tokens=True)
        q["hf_text_with_specials"] = hf_tok.decode(hf_new)
        gen, err, cmd, secs = metatune_generate_text(args.metatune, folder, text, args.new_tokens,
                                                     work)
        q["generate_command"] = " ".join(cmd)
        print(f"      greedy, transformers: {hf_new}  text {json.dumps(q['hf_text'], ensure_ascii=False)}"
              + ("" if q["hf_text_with_specials"] == q["hf_text"] else
                 f" (with special tokens: {json.dumps(q['hf_text_with_specials'], ensure_ascii=False)})"))
        if err is not None:
            q["generate_error"] = err
            bad.append("generate failed")
            print(f"      greedy, metatune model generate --prompt: FAILED ({secs:.1f} s)\n         "
                  + err.replace("\n", "\n         "))
        else:
            q.update(metatune_new=gen["new_tokens"], metatune_printed=gen["printed"],
                     metatune_prompt_tokens=gen["prompt_tokens"])
            if gen["prompt_tokens"] != len(hf_ids):
                bad.append("prompt length in model generate")
                print(f"      metatune model generate --prompt reports {gen['prompt_tokens']} "
                      f"prompt tokens, transformers' ids are {len(hf_ids)}  [DIFFER]")
            agree = gen["new_tokens"] == hf_new
            q["greedy_agree"] = agree
            note = ""
            if not agree:
                k = first_difference(gen["new_tokens"], hf_new)
                margin = margins[k] if k is not None and k < len(margins) else None
                # Only the same prompt's tokens can be a near tie.
                near_tie = (q["ids_agree"] and margin is not None
                            and margin <= args.tol * max_abs)
                q["greedy_first_difference"] = {"step": k, "hf_top2_margin": margin,
                                                "near_tie": bool(near_tie)}
                note = (f" -- first differs at step {k}" +
                        ("" if margin is None else
                         f"; transformers' top-two margin there {margin:.3g}") +
                        (" (a near tie: not counted)" if near_tie else ""))
                if not near_tie:
                    bad.append("greedy tokens")
            print(f"      greedy, metatune:     {gen['new_tokens']}  [{'agree' if agree else 'DIFFER'}]"
                  f"{note}; prompt {gen['prompt_tokens']} tokens ({secs:.1f} s)")
            # What metatune printed, against transformers' decode of metatune's own ids.
            expect = hf_tok.decode(gen["new_tokens"], skip_special_tokens=True)
            q["hf_text_of_metatune_new"] = expect
            q["printed_agree"] = gen["printed"] == expect
            print(f"      text, metatune printed: {json.dumps(gen['printed'], ensure_ascii=False)}  "
                  f"[{'agree' if q['printed_agree'] else 'DIFFER'}]")
            if not q["printed_agree"]:
                bad.append("printed text")
                print(f"         transformers' decode of those ids: "
                      f"{json.dumps(expect, ensure_ascii=False)}")
                rest = expect[len(gen["printed"]):]
                if expect.startswith(gen["printed"]) and rest and set(rest) == {"\ufffd"}:
                    q["printed_missing_tail"] = rest
                    print(f"         metatune printed all but the last {len(rest)} character(s), "
                          f"all U+FFFD: its stream holds back text that ends in U+FFFD (a "
                          f"character a later token may complete) and prints nothing of it "
                          f"after the last token")
        dec, err = metatune_decode(args.metatune, folder, hf_new)
        q["metatune_decode_of_hf_new"] = dec
        if err is not None:
            q["decode_error"] = err
            bad.append("decode failed")
            print("      metatune tokenize --decode: FAILED\n         " + err.replace("\n", "\n         "))
        else:
            q["decode_agree"] = dec == q["hf_text"]
            print(f"      text, metatune tokenize --decode of transformers' ids: "
                  f"{json.dumps(dec, ensure_ascii=False)}  [{'agree' if q['decode_agree'] else 'DIFFER'}]")
            if not q["decode_agree"]:
                bad.append("decoded text")
        q["failures"] = bad
        failed |= bool(bad)
    r["chats"], chat_failed = chat_check(made["form"], folder, work, args, hf_tok, model)
    return r, failed or chat_failed


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", "..", ".."))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--metatune", default=os.environ.get("METATUNE",
                                                         os.path.join(root, "build/bin/metatune")))
    all_models = list(MODELS) + [V4_VARIANT] + list(TEXT_MODELS)
    ap.add_argument("--models", default=",".join(all_models),
                    help="comma-separated, of: " + ", ".join(all_models) + " (the last " +
                    str(len(TEXT_MODELS)) + ": the text check, a tokenizer with each)")
    ap.add_argument("--implementations", default="library,untuned",
                    help="metatune model run --implementations values to compare (comma-separated)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--new-tokens", type=int, default=8)
    ap.add_argument("--tol", type=float, default=1e-3, help="max |metatune - ref| / max |ref|")
    ap.add_argument("--keep", help="write the folders here (default: a temporary folder, removed)")
    ap.add_argument("--json", help="write the results as JSON to this file")
    args = ap.parse_args()
    if not os.access(args.metatune, os.X_OK):
        sys.exit(f"check.py: {args.metatune} is not an executable (build metatune first)")
    torch.manual_seed(args.seed)
    base = args.keep or tempfile.mkdtemp(prefix="mt_transformers_check.")
    os.makedirs(base, exist_ok=True)
    print(f"transformers {transformers.__version__}, torch {torch.__version__}; metatune "
          f"{args.metatune}; folders in {base}; tolerance {args.tol:g} x max|ref|", flush=True)
    results, failed = [], False
    wanted = [m for m in args.models.split(",") if m]
    for name in wanted:
        if name not in all_models:
            sys.exit(f"check.py: unknown model {name}")
    corpus = None
    for name in wanted:
        r = {"model": name}
        results.append(r)
        folder = os.path.join(base, name)
        work = os.path.join(base, name + ".out")
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(work, ignore_errors=True)
        os.makedirs(work)
        if name in TEXT_MODELS:
            if corpus is None:
                corpus = text_corpus()
                print(f"\ntext check: tokenizers {tokenizers.__version__}, trained on "
                      f"{len(corpus[0])} files ({corpus[1]} characters) of "
                      f"/usr/share/common-licenses and /usr/share/doc/*/copyright", flush=True)
            t, bad = text_check(name, folder, work, args, corpus[0])
            r.update(t)
            failed |= bad
            continue
        if name == V4_VARIANT:
            src_name = "llama_llama3_rope_bias"
            src = os.path.join(base, src_name)
            if not os.path.exists(os.path.join(src, "config.json")):
                print(f"\n== {name}: needs {src_name} first (skipped)")
                r["skipped"] = True
                continue
            if not rewrite_v4_fields(src, folder):
                print(f"\n== {name}: transformers wrote transformers 4's fields itself (skipped)")
                r["skipped"] = True
                continue
            ids = prompt_ids(MODELS[src_name][3], SMALL["vocab_size"], args.seed + 1000)
            r["note"] = f"{src_name}'s folder, config.json's rope_parameters rewritten as rope_theta + rope_scaling"
        else:
            cfg_cls, model_cls, extra, n = MODELS[name]
            cfg = cfg_cls(**SMALL, **extra)
            k = list(MODELS).index(name)  # the same weights whichever --models are run
            torch.manual_seed(args.seed + k)
            model = model_cls(cfg)
            init_weights(model, args.seed + k)
            if name in SAVE_DTYPE:
                model = model.to(SAVE_DTYPE[name])
            shard = {"max_shard_size": SHARD_SIZE[name]} if name in SHARD_SIZE else {}
            model.save_pretrained(folder, safe_serialization=True, **shard)
            ids = prompt_ids(n, SMALL["vocab_size"], args.seed + 1000)
        with open(os.path.join(folder, "config.json")) as f:
            saved = json.load(f)
        rope_keys = {k: saved[k] for k in ("rope_theta", "rope_scaling", "rope_parameters",
                                           "sliding_window", "tie_word_embeddings",
                                           "attention_bias", "mlp_bias") if k in saved}
        r.update(folder=folder, prompt=ids, config_fields=rope_keys,
                 files=sorted(os.listdir(folder)))
        print(f"\n== {name}: {len(ids)}-token prompt; config.json {json.dumps(rope_keys)}", flush=True)
        ref = hf_reference(folder, ids, args.new_tokens)
        r["hf_class"] = ref["class"]
        r64, r32 = ref["float64"], ref["float32"]
        scale = float(np.abs(r64).max())
        r["hf_f32_vs_f64_max_abs"] = float(np.abs(r32 - r64).max())
        r["ref_max_abs_logit"] = scale
        r["ref_next_token"] = int(r64[-1].argmax())
        print(f"   transformers ({ref['class']}, eager attention): max|logit| {scale:.4f}; its own "
              f"float32 vs float64: max abs diff {r['hf_f32_vs_f64_max_abs']:.3g}; next token "
              f"{r['ref_next_token']}")
        if name != V4_VARIANT:
            r["controls"] = controls(name, folder, ids, r64)
            for label, d in r["controls"].items():
                print(f"   control: transformers {label}: max abs logit diff {d:.3g} from the above")
        r["runs"] = {}
        for impl in [x for x in args.implementations.split(",") if x]:
            got, err, cmd, secs = metatune_logits(args.metatune, folder, ids, impl, work)
            run = {"command": " ".join(cmd), "seconds": round(secs, 2)}
            r["runs"][impl] = run
            if err is not None:
                run["error"] = err
                failed = True
                print(f"   metatune model run ({impl}): FAILED ({secs:.1f} s)\n      " +
                      err.replace("\n", "\n      "))
                continue
            if got.shape != r64.shape:
                run["error"] = f"logits shape {list(got.shape)}, {list(r64.shape)} expected"
                failed = True
                print(f"   metatune model run ({impl}): {run['error']}")
                continue
            diff = np.abs(got - r64)
            run["max_abs_diff"] = float(diff.max())
            run["rel"] = float(diff.max() / scale)
            run["last_max_abs_diff"] = float(diff[-1].max())
            run["argmax_agree_positions"] = int((got.argmax(-1) == r64.argmax(-1)).sum())
            run["next_token"] = int(got[-1].argmax())
            run["ok"] = run["rel"] <= args.tol
            failed |= not run["ok"]
            print(f"   metatune model run ({impl}): max abs logit diff {run['max_abs_diff']:.3g} "
                  f"(all {len(ids)} positions; {run['rel']:.2g} x max|ref|; last position "
                  f"{run['last_max_abs_diff']:.3g}); argmax agrees at "
                  f"{run['argmax_agree_positions']}/{len(ids)} positions; next token "
                  f"{run['next_token']}  [{'ok' if run['ok'] else 'MISMATCH'}] ({secs:.1f} s)")
        toks, err, cmd, secs = metatune_generate(args.metatune, folder, ids, args.new_tokens, work)
        r["greedy_hf"] = ref["greedy"]
        r["greedy_hf_full_recompute"] = ref["manual_greedy"]
        r["generate_command"] = " ".join(cmd)
        print(f"   greedy, transformers generate(do_sample=False): {ref['greedy']}")
        if ref["manual_greedy"] != ref["greedy"]:
            print(f"   (transformers' whole-sequence argmax along it: {ref['manual_greedy']})")
        if err is not None:
            r["generate_error"] = err
            failed = True
            print(f"   greedy, metatune model generate: FAILED ({secs:.1f} s)\n      " +
                  err.replace("\n", "\n      "))
            continue
        r["greedy_metatune"] = toks
        agree = toks == ref["greedy"]
        r["greedy_agree"] = agree
        note = ""
        if not agree:
            k = next(j for j, (a, b) in enumerate(zip(toks, ref["greedy"])) if a != b)
            margin = ref["greedy_margin"][k]
            near_tie = margin <= args.tol * ref["greedy_max_abs"]
            r["greedy_first_difference"] = {"step": k, "hf_top2_margin": margin,
                                            "near_tie": near_tie}
            note = (f" -- first differs at step {k}; transformers' top-two margin there "
                    f"{margin:.3g}" + (" (a near tie: not counted)" if near_tie else ""))
            failed |= not near_tie
        print(f"   greedy, metatune model generate --ignore-eos:    {toks}  "
              f"[{'agree' if agree else 'DIFFER'}]{note} ({secs:.1f} s)", flush=True)

    print("\n== summary (max abs logit difference, metatune vs transformers float64; greedy "
          "tokens; text check: prompt ids, greedy tokens, printed text, decode)")
    for r in results:
        if r.get("skipped"):
            print(f"   {r['model']:34s} skipped")
            continue
        if r.get("text"):
            for q in r["prompts"]:
                what = "; ".join(
                    f"{k} " + ("agree" if q.get(f) else "FAILED" if e in q else "DIFFER")
                    for k, f, e in (("prompt ids", "ids_agree", "tokenize_error"),
                                    ("greedy", "greedy_agree", "generate_error"),
                                    ("printed text", "printed_agree", "generate_error"),
                                    ("decode", "decode_agree", "decode_error")))
                print(f"   {r['model'] + ' / ' + q['label']:34s} {what}")
            chats = r.get("chats", [])
            agree = sum(bool(c["ids_agree"]) for c in chats)
            both_refuse = sum(c["hf_error"] is not None and bool(c["ids_agree"]) for c in chats)
            greedy = [c for c in chats if "greedy_agree" in c]
            print(f"   {r['model'] + ' / chat':34s} {len({c['template'] for c in chats})} "
                  f"templates, {len(chats)} conversations: prompt ids agree on {agree} "
                  f"({both_refuse} refused by both); greedy agree on "
                  f"{sum(bool(c['greedy_agree']) for c in greedy)} of {len(greedy)}")
            continue
        runs = ", ".join(f"{k} " + (f"{v['max_abs_diff']:.2g}" + ("" if v["ok"] else " MISMATCH")
                                     if "max_abs_diff" in v else "FAILED")
                         for k, v in r.get("runs", {}).items())
        g = ("FAILED" if "generate_error" in r else
             "agree" if r.get("greedy_agree") else "DIFFER")
        print(f"   {r['model']:34s} {runs}; greedy {g}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"transformers": transformers.__version__, "torch": torch.__version__,
                       "tolerance": args.tol, "results": results}, f, indent=2)
    if not args.keep:
        shutil.rmtree(base, ignore_errors=True)
    print("\nresult: " + ("MISMATCH or failure (see above)" if failed else "all agree"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
