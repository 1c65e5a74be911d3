"""The ONNX graphs of a Llama checkpoint folder for ONNX Runtime: a prefill and a decode step.

  prefill  input_ids int64 [1, S] -> logits [1, 1, vocab] (the last position's: what
           generation needs, as metatune's prefill), present.N.key / present.N.value
           [1, kv_heads, S, head_dim] per layer (positions 0 .. S-1)
  decode   input_ids int64 [1, 1], position int64 [1] (the new token's, = the past length),
           past_key_values.N.key / .value [1, kv_heads, P, head_dim] (P dynamic)
           -> logits [1, 1, vocab], present.N.key / .value [1, kv_heads, P + 1, head_dim]

Keys are cached after the rotation, as Hugging Face's cache holds them. Weights are
initializers (nn.Linear's [out, in] stored transposed, so every projection is one MatMul).
Two forms of the same computation:

* "onnx": standard ops (opset 17) as PyTorch exports LlamaForCausalLM: Gather, RMSNorm spelled
  out (Pow, ReduceMean, Add, Sqrt, Div, Mul -- the pattern ONNX Runtime fuses into
  SimplifiedLayerNormalization), rotate-half RoPE from cos/sin tables gathered at the
  positions (Split, Neg, Concat, Mul, Add), grouped-query attention as broadcast MatMuls over
  [1, kv_heads, heads / kv_heads, S, T] (no copy of the repeated heads), the causal mask as
  a LessOrEqual of absolute positions, Softmax, SwiGLU as Sigmoid/Mul, the untied head.
* "fused": the contrib ops ONNX Runtime's own Llama exports use on CPU (onnxruntime-genai's
  model builder): com.microsoft GroupQueryAttention with the rotation inside (do_rotary,
  cos/sin caches [max_positions, head_dim / 2]) and its KV cache in and out,
  SimplifiedLayerNormalization and SkipSimplifiedLayerNormalization (residual + RMSNorm).
"""

import numpy as np
import onnx
from onnx import TensorProto, helper

import bench_model

OPSET = 17
MS = bench_model.MS
VARIANTS = ("onnx", "fused")
MODES = ("prefill", "decode")


def past_name(i, which):
    return f"past_key_values.{i}.{which}"


def present_name(i, which):
    return f"present.{i}.{which}"


def rope_tables(folder):
    """cos, sin [max_positions, head_dim / 2] in float64, as HF's inv_freq and positions make
    them; rotate-half repeats them over both halves."""
    dh = folder.head_dim
    inv_freq = 1.0 / folder.theta ** (np.arange(0, dh, 2, dtype=np.float64) / dh)
    freqs = np.outer(np.arange(folder.max_positions, dtype=np.float64), inv_freq)
    return np.cos(freqs), np.sin(freqs)


class LlamaGraph:
    """One graph (prefill or decode) in one variant."""

    def __init__(self, folder, mode, variant="onnx"):
        if mode not in MODES:
            raise ValueError(f"mode '{mode}' ({', '.join(MODES)})")
        if variant not in VARIANTS:
            raise ValueError(f"variant '{variant}' ({', '.join(VARIANTS)})")
        self.f, self.mode, self.variant = folder, mode, variant
        self.H, self.KV, self.dh = folder.heads, folder.kv_heads, folder.head_dim
        self.g = bench_model.Graph()
        self.outputs = []  # (tensor, graph output name, shape)
        self.cos_half, self.sin_half = rope_tables(folder)

    # -- pieces --------------------------------------------------------------------------------
    def w(self, name):
        """An nn.Linear weight [out, in] as the [in, out] initializer of a MatMul."""
        return self.g.init(name + ".T", self.f.t(name).T)

    def norm_w(self, name):
        return self.g.init(name, self.f.t(name))

    def i64(self, values):
        return self.g.const(values, np.int64)

    def rms_norm(self, x, weight):
        g = self.g
        ms = g.op("ReduceMean", [g.op("Pow", [x, g.const(2.0)])], "ms", axes=[-1], keepdims=1)
        r = g.op("Sqrt", [g.op("Add", [ms, g.const(self.f.eps)])])
        return g.op("Mul", [g.op("Div", [x, r]), self.norm_w(weight)], "rms")

    def heads(self, x, n):
        """[1, S, n * dh] -> [1, n, S, dh]"""
        g = self.g
        r = g.op("Reshape", [x, self.i64([0, 0, n, self.dh])])
        return g.op("Transpose", [r], perm=[0, 2, 1, 3])

    def rotate(self, x, cos, sin):
        """x [1, n, S, dh] * cos + rotate_half(x) * sin; cos, sin [S, dh]"""
        g = self.g
        half = self.dh // 2
        x1, x2 = g.op("Split", [x, self.i64([half, half])], "half", outputs=2, axis=-1)
        rot = g.op("Concat", [g.op("Neg", [x2]), x1], "rot", axis=-1)
        return g.op("Add", [g.op("Mul", [x, cos]), g.op("Mul", [rot, sin])], "rope")

    def output(self, tensor, name, shape):
        self.outputs.append((tensor, name, shape))

    # -- the positions every layer shares ------------------------------------------------------
    def inputs(self):
        g = self.g
        seq = "sequence" if self.mode == "prefill" else 1
        ids = g.input("input_ids", TensorProto.INT64, [1, seq])
        if self.mode == "decode":
            self.start = g.input("position", TensorProto.INT64, [1])
        else:
            self.start = self.i64([0])
        return ids

    def positions(self, ids):
        """cos, sin [S, dh] at the absolute positions, and (prefill) the causal mask [S, T]."""
        g = self.g
        s = g.op("Shape", [ids], "seq", start=1, end=2)
        end = g.op("Add", [self.start, s], "end")
        scalar = lambda x: g.op("Squeeze", [x, self.i64([0])])  # noqa: E731
        pos = g.op("Range", [scalar(self.start), scalar(end), g.const(1, np.int64)], "pos")
        cos = g.init("cos_table", np.concatenate([self.cos_half] * 2, -1).astype(np.float32))
        sin = g.init("sin_table", np.concatenate([self.sin_half] * 2, -1).astype(np.float32))
        self.cos = g.op("Gather", [cos, pos], "cos", axis=0)
        self.sin = g.op("Gather", [sin, pos], "sin", axis=0)
        self.allowed = None
        if self.mode == "prefill":  # key j visible to query i when j <= i (absolute)
            keys = g.op("Range", [g.const(0, np.int64), scalar(end), g.const(1, np.int64)])
            query = g.op("Unsqueeze", [pos, self.i64([1])])
            self.allowed = g.op("LessOrEqual", [keys, query], "causal")
        return pos

    # -- the plain form ------------------------------------------------------------------------
    def attention(self, i, n):
        g, H, KV, dh = self.g, self.H, self.KV, self.dh
        p = f"model.layers.{i}.self_attn."
        q = self.rotate(self.heads(g.op("MatMul", [n, self.w(p + "q_proj.weight")]), H),
                        self.cos, self.sin)
        k = self.rotate(self.heads(g.op("MatMul", [n, self.w(p + "k_proj.weight")]), KV),
                        self.cos, self.sin)
        v = self.heads(g.op("MatMul", [n, self.w(p + "v_proj.weight")]), KV)
        if self.mode == "decode":
            shape = [1, KV, "past_sequence", dh]
            k = g.op("Concat", [g.input(past_name(i, "key"), TensorProto.FLOAT, shape), k],
                     "k", axis=2)
            v = g.op("Concat", [g.input(past_name(i, "value"), TensorProto.FLOAT, shape), v],
                     "v", axis=2)
        total = "sequence" if self.mode == "prefill" else "total_sequence"
        self.output(k, present_name(i, "key"), [1, KV, total, dh])
        self.output(v, present_name(i, "value"), [1, KV, total, dh])
        # Query head h reads key/value head h // (H / KV): [1, KV, H / KV, S, dh] against
        # [1, KV, 1, T, dh], broadcast by MatMul.
        q5 = g.op("Reshape", [q, self.i64([0, KV, H // KV, -1, dh])], "q5")
        k5 = g.op("Unsqueeze", [k, self.i64([2])], "k5")
        v5 = g.op("Unsqueeze", [v, self.i64([2])], "v5")
        s = g.op("MatMul", [q5, g.op("Transpose", [k5], perm=[0, 1, 2, 4, 3])], "qk")
        s = g.op("Mul", [s, g.const(1.0 / np.sqrt(dh))], "scaled")
        if self.allowed is not None:
            s = g.op("Where", [self.allowed, s, g.const(np.finfo(np.float32).min)], "masked")
        ctx = g.op("MatMul", [g.op("Softmax", [s], axis=-1), v5], "ctx")
        ctx = g.op("Reshape", [ctx, self.i64([0, H, -1, dh])])
        ctx = g.op("Transpose", [ctx], perm=[0, 2, 1, 3])
        ctx = g.op("Reshape", [ctx, self.i64([0, 0, H * dh])])
        return g.op("MatMul", [ctx, self.w(p + "o_proj.weight")], "attn")

    def mlp(self, i, n):
        g = self.g
        p = f"model.layers.{i}.mlp."
        gate = g.op("MatMul", [n, self.w(p + "gate_proj.weight")], "gate")
        up = g.op("MatMul", [n, self.w(p + "up_proj.weight")], "up")
        act = g.op("Mul", [gate, g.op("Sigmoid", [gate])], "silu")
        return g.op("MatMul", [g.op("Mul", [act, up]), self.w(p + "down_proj.weight")], "mlp")

    def plain(self, ids):
        g = self.g
        self.positions(ids)
        h = g.op("Gather", [self.g.init("model.embed_tokens.weight",
                                        self.f.t("model.embed_tokens.weight")), ids], "emb")
        for i in range(self.f.layers):
            p = f"model.layers.{i}."
            h = g.op("Add", [h, self.attention(i, self.rms_norm(h, p + "input_layernorm.weight"))],
                     "h")
            n = self.rms_norm(h, p + "post_attention_layernorm.weight")
            h = g.op("Add", [h, self.mlp(i, n)], "h")
        return self.rms_norm(h, "model.norm.weight")

    # -- the contrib-op form -------------------------------------------------------------------
    def skip_norm(self, x, skip, weight):
        """(RMSNorm(x + skip), x + skip)"""
        outs = self.g.op("SkipSimplifiedLayerNormalization", [x, skip, self.norm_w(weight)],
                         "ssln", outputs=4, domain=MS, epsilon=self.f.eps)
        return outs[0], outs[3]

    def fused(self, ids):
        g, H, KV, dh = self.g, self.H, self.KV, self.dh
        # GroupQueryAttention's lengths: seqlens_k = total length - 1 per batch row (int32),
        # total_sequence_length a scalar; the rotation takes positions from them.
        s = g.op("Shape", [ids], "seq", start=1, end=2)
        total = g.op("Add", [self.start, s], "total")
        seqlens_k = g.op("Cast", [g.op("Sub", [total, self.i64([1])])], "seqlens_k",
                         to=TensorProto.INT32)
        total_len = g.op("Cast", [g.op("Squeeze", [total, self.i64([0])])], "total_len",
                         to=TensorProto.INT32)
        cos = g.init("cos_cache", self.cos_half.astype(np.float32))
        sin = g.init("sin_cache", self.sin_half.astype(np.float32))
        h = g.op("Gather", [self.g.init("model.embed_tokens.weight",
                                        self.f.t("model.embed_tokens.weight")), ids], "emb")
        n = g.op("SimplifiedLayerNormalization",
                 [h, self.norm_w("model.layers.0.input_layernorm.weight")], "sln",
                 axis=-1, epsilon=self.f.eps)
        kv_shape = [1, KV, "past_sequence", dh]
        present_shape = [1, KV, "sequence" if self.mode == "prefill" else "total_sequence", dh]
        for i in range(self.f.layers):
            p = f"model.layers.{i}."
            q = g.op("MatMul", [n, self.w(p + "self_attn.q_proj.weight")], "q")
            k = g.op("MatMul", [n, self.w(p + "self_attn.k_proj.weight")], "k")
            v = g.op("MatMul", [n, self.w(p + "self_attn.v_proj.weight")], "v")
            past_k = past_v = ""
            if self.mode == "decode":
                past_k = g.input(past_name(i, "key"), TensorProto.FLOAT, kv_shape)
                past_v = g.input(past_name(i, "value"), TensorProto.FLOAT, kv_shape)
            ctx, pk, pv = g.op("GroupQueryAttention",
                               [q, k, v, past_k, past_v, seqlens_k, total_len, cos, sin],
                               "gqa", outputs=3, domain=MS, num_heads=H, kv_num_heads=KV,
                               do_rotary=1, rotary_interleaved=0, scale=float(1 / np.sqrt(dh)))
            self.output(pk, present_name(i, "key"), present_shape)
            self.output(pv, present_name(i, "value"), present_shape)
            a = g.op("MatMul", [ctx, self.w(p + "self_attn.o_proj.weight")], "attn")
            n, h = self.skip_norm(a, h, p + "post_attention_layernorm.weight")
            y = self.mlp(i, n)
            nxt = (f"model.layers.{i + 1}.input_layernorm.weight" if i + 1 < self.f.layers
                   else "model.norm.weight")
            n, h = self.skip_norm(y, h, nxt)
        return n

    # -- the model -----------------------------------------------------------------------------
    def build(self):
        g = self.g
        ids = self.inputs()
        n = self.plain(ids) if self.variant == "onnx" else self.fused(ids)
        if self.mode == "prefill":  # generation needs the last position's logits only
            n = g.op("Gather", [n, self.i64([-1])], "last", axis=1)
        logits = g.op("MatMul", [n, self.w("lm_head.weight")], "logits")
        outputs = [(logits, "logits", [1, 1, self.f.vocab])] + self.outputs
        for tensor, name, _ in outputs:
            g.nodes.append(helper.make_node("Identity", [tensor], [name]))
        graph = helper.make_graph(
            g.nodes, f"llama_{self.mode}", g.inputs,
            [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)
             for _, name, shape in outputs], g.inits)
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET),
                                                    helper.make_opsetid(MS, 1)])
        m.ir_version = 8
        if self.variant == "onnx":  # the checker knows no contrib op schemas
            onnx.checker.check_model(m)
        return m


def build(folder, mode, variant="onnx"):
    """The ModelProto of the folder's prefill or decode step (under 2 GiB: one protobuf)."""
    return LlamaGraph(folder, mode, variant).build()


def output_names(folder):
    """The graphs' outputs in order: logits, then per layer present key, present value."""
    names = ["logits"]
    for i in range(folder.layers):
        names += [present_name(i, "key"), present_name(i, "value")]
    return names
