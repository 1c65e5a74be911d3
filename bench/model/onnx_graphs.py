"""The ONNX graphs of a checkpoint folder's forward, for ONNX Runtime.

Two forms of the same computation, from the same weights (as initializers):

* "onnx": standard ONNX ops only (opset 17), written as PyTorch exports a Hugging Face model:
  Gather embeddings + position add, LayerNormalization, MatMul + Add, attention as
  Reshape/Transpose, MatMul, Div, mask, Softmax, MatMul, GELU spelled out (erf for BERT, tanh
  for GPT-2), residual adds, the final LayerNorm and GPT-2's LM head tied to wte. ONNX
  Runtime's own graph optimizer (ORT_ENABLE_ALL) and onnxruntime.transformers' optimizer fuse
  from this form.
* "fused": the ops those optimizers aim for, written directly (com.microsoft domain): Attention
  (packed QKV weights, unidirectional for GPT-2, the padding mask for BERT),
  SkipLayerNormalization (residual + bias + LayerNorm), FastGelu / BiasGelu. It is what ONNX
  Runtime at its best runs for these models on CPU, without depending on its pattern matching.

Inputs: input_ids int64 [B, S]; BERT also attention_mask int64 [B, S]. Output: GPT-2 logits
[B, S, vocab], BERT the last hidden state [B, S, hidden] -- the outputs of metatune's
std.Decoder and std.Encoder. Shapes are static, as metatune's compiled models are.
"""

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
MS = "com.microsoft"
VARIANTS = ("onnx", "fused")


class Graph:
    """Nodes and initializers under construction, with unique names."""

    def __init__(self):
        self.nodes, self.inits, self.inputs, self.outputs = [], [], [], []
        self.init_names = set()
        self.count = 0

    def fresh(self, hint):
        self.count += 1
        return f"{hint}_{self.count}"

    def init(self, name, array):
        if name in self.init_names:  # one initializer however often a weight is used
            return name
        self.init_names.add(name)
        self.inits.append(numpy_helper.from_array(np.ascontiguousarray(array), name))
        return name

    def const(self, value, dtype=np.float32):
        return self.init(self.fresh("c"), np.asarray(value, dtype=dtype))

    def op(self, op_type, inputs, hint=None, outputs=1, domain=None, **attrs):
        names = [self.fresh(hint or op_type.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op_type, inputs, names, name=self.fresh(op_type),
                                           domain=domain, **attrs))
        return names[0] if outputs == 1 else names

    def input(self, name, elem, shape):
        self.inputs.append(helper.make_tensor_value_info(name, elem, shape))
        return name

    def model(self, output, out_shape, name):
        self.nodes.append(helper.make_node("Identity", [output], [name]))
        self.outputs.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, out_shape))
        g = helper.make_graph(self.nodes, "forward", self.inputs, self.outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", OPSET),
                                                helper.make_opsetid(MS, 1)])
        m.ir_version = 8
        return m


class Forward:
    """One model's graph in one variant; the transformer blocks are the model's own."""

    def __init__(self, folder, batch, seq, variant):
        if variant not in VARIANTS:
            raise ValueError(f"variant '{variant}' ({', '.join(VARIANTS)})")
        self.f, self.B, self.S, self.variant = folder, batch, seq, variant
        self.D, self.H = folder.dim, folder.heads
        self.dh = self.D // self.H
        self.g = Graph()

    # -- pieces both models use -------------------------------------------------------------
    def w(self, name, transpose=False):
        x = self.f.t(name)
        return self.g.init(name + (".T" if transpose else ""), x.T if transpose else x)

    def layer_norm(self, x, prefix):
        return self.g.op("LayerNormalization", [x, self.w(prefix + ".weight"),
                                                self.w(prefix + ".bias")],
                         "ln", axis=-1, epsilon=self.f.eps)

    def linear(self, x, weight, bias):
        """x @ weight + bias; weight [in, out] already (an initializer name)."""
        return self.g.op("Add", [self.g.op("MatMul", [x, weight], "mm"), bias], "lin")

    def gelu(self, x):
        g, c = self.g, self.g.const
        if self.f.activation == "gelu":  # x * 0.5 * (1 + erf(x / sqrt 2)), as torch exports it
            half = g.op("Mul", [x, c(0.5)])
            erf = g.op("Erf", [g.op("Div", [x, c(math.sqrt(2.0))])])
            return g.op("Mul", [half, g.op("Add", [erf, c(1.0)])], "gelu")
        # 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))): gelu_new
        cube = g.op("Mul", [c(0.044715), g.op("Pow", [x, c(3.0)])])
        inner = g.op("Mul", [c(math.sqrt(2.0 / math.pi)), g.op("Add", [x, cube])])
        half = g.op("Mul", [c(0.5), x])
        return g.op("Mul", [half, g.op("Add", [c(1.0), g.op("Tanh", [inner])])], "gelu")

    def heads(self, x, perm):
        g = self.g
        r = g.op("Reshape", [x, g.const([0, 0, self.H, self.dh], np.int64)])
        return g.op("Transpose", [r], perm=perm)

    def attention_core(self, q, k, v, mask_add=None, allowed=None):
        """q, k, v [B, S, D] -> context [B, S, D]; the mask additive or a Where."""
        g = self.g
        s = g.op("MatMul", [self.heads(q, [0, 2, 1, 3]), self.heads(k, [0, 2, 3, 1])], "qk")
        s = g.op("Div", [s, g.const(math.sqrt(self.dh))])
        if mask_add is not None:
            s = g.op("Add", [s, mask_add])
        if allowed is not None:
            s = g.op("Where", [allowed, s, g.const(np.finfo(np.float32).min)])
        p = g.op("Softmax", [s], axis=-1)
        ctx = g.op("MatMul", [p, self.heads(v, [0, 2, 1, 3])], "ctx")
        ctx = g.op("Transpose", [ctx], perm=[0, 2, 1, 3])
        return g.op("Reshape", [ctx, g.const([0, 0, self.D], np.int64)])

    def fused_attention(self, x, qkv_w, qkv_b, mask=None, causal=False):
        ins = [x, self.g.init(self.g.fresh("qkv_w"), qkv_w),
               self.g.init(self.g.fresh("qkv_b"), qkv_b)]
        if mask is not None:
            ins.append(mask)
        return self.g.op("Attention", ins, "attn", domain=MS, num_heads=self.H,
                         unidirectional=int(causal))

    def skip_norm(self, x, skip, bias, prefix, with_sum=False):
        """LayerNorm(x + skip + bias), and the sum itself when with_sum (pre-norm residual)."""
        outs = self.g.op("SkipLayerNormalization",
                         [x, skip, self.w(prefix + ".weight"), self.w(prefix + ".bias"), bias],
                         "sln", outputs=4, domain=MS, epsilon=self.f.eps)
        return (outs[0], outs[3]) if with_sum else outs[0]

    def embed(self, table, ids):
        return self.g.op("Gather", [self.w(table), ids], "emb", axis=0)

    def positions(self, table):
        return self.g.init(table + "[:S]", self.f.t(table)[: self.S])

    # -- the models ------------------------------------------------------------------------
    def gpt2(self):
        f, g, D = self.f, self.g, self.D
        ids = g.input("input_ids", TensorProto.INT64, [self.B, self.S])
        h = g.op("Add", [self.embed("wte.weight", ids), self.positions("wpe.weight")], "h")
        fused = self.variant == "fused"
        allowed = g.init("causal", np.tril(np.ones((self.S, self.S), dtype=bool)))
        n = self.layer_norm(h, "h.0.ln_1")
        for i in range(f.layers):
            p = f"h.{i}."
            if fused:
                a = self.fused_attention(n, f.t(p + "attn.c_attn.weight"),
                                         f.t(p + "attn.c_attn.bias"), causal=True)
                a = g.op("MatMul", [a, self.w(p + "attn.c_proj.weight")], "mm")
                n, h = self.skip_norm(a, h, self.w(p + "attn.c_proj.bias"), p + "ln_2", True)
                u = g.op("MatMul", [n, self.w(p + "mlp.c_fc.weight")], "mm")
                u = g.op("FastGelu", [u, self.w(p + "mlp.c_fc.bias")], "gelu", domain=MS)
                y = g.op("MatMul", [u, self.w(p + "mlp.c_proj.weight")], "mm")
                nxt = f"h.{i + 1}.ln_1" if i + 1 < f.layers else "ln_f"
                n, h = self.skip_norm(y, h, self.w(p + "mlp.c_proj.bias"), nxt, True)
                continue
            qkv = self.linear(n, self.w(p + "attn.c_attn.weight"), self.w(p + "attn.c_attn.bias"))
            q, k, v = g.op("Split", [qkv, g.const([D, D, D], np.int64)], "split", outputs=3,
                           axis=-1)
            ctx = self.attention_core(q, k, v, allowed=allowed)
            a = self.linear(ctx, self.w(p + "attn.c_proj.weight"), self.w(p + "attn.c_proj.bias"))
            h = g.op("Add", [h, a], "h")
            n = self.layer_norm(h, p + "ln_2")
            u = self.gelu(self.linear(n, self.w(p + "mlp.c_fc.weight"),
                                      self.w(p + "mlp.c_fc.bias")))
            y = self.linear(u, self.w(p + "mlp.c_proj.weight"), self.w(p + "mlp.c_proj.bias"))
            h = g.op("Add", [h, y], "h")
            n = self.layer_norm(h, f"h.{i + 1}.ln_1" if i + 1 < f.layers else "ln_f")
        # The head is the token table (tied), as a MatMul by its transpose.
        logits = g.op("MatMul", [n, self.w("wte.weight", transpose=True)], "logits")
        return g.model(logits, [self.B, self.S, f.vocab], "logits")

    def bert(self):
        f, g = self.f, self.g
        ids = g.input("input_ids", TensorProto.INT64, [self.B, self.S])
        mask = g.input("attention_mask", TensorProto.INT64, [self.B, self.S])
        e = "embeddings."
        x = g.op("Add", [self.embed(e + "word_embeddings.weight", ids),
                         self.positions(e + "position_embeddings.weight")])
        type0 = g.init("token_type_0", f.t(e + "token_type_embeddings.weight")[0])
        h = self.layer_norm(g.op("Add", [x, type0]), e + "LayerNorm")
        fused = self.variant == "fused"
        if fused:
            mask_index = g.op("Cast", [mask], "mask_i32", to=TensorProto.INT32)
        else:  # (1 - mask) * -10000 added to the scores, as BERT's exports have it
            m = g.op("Unsqueeze", [g.op("Unsqueeze", [mask, g.const([1], np.int64)]),
                                   g.const([2], np.int64)])
            m = g.op("Sub", [g.const(1.0), g.op("Cast", [m], to=TensorProto.FLOAT)])
            mask_add = g.op("Mul", [m, g.const(-10000.0)], "mask_add")
        for i in range(f.layers):
            p = f"encoder.layer.{i}."
            wt = lambda n: self.w(p + n + ".weight", transpose=True)  # noqa: E731
            b = lambda n: self.w(p + n + ".bias")  # noqa: E731
            names = [p + "attention.self." + x for x in ("query", "key", "value")]
            if fused:
                qkv_w = np.concatenate([f.t(n + ".weight").T for n in names], axis=1)
                qkv_b = np.concatenate([f.t(n + ".bias") for n in names])
                a = self.fused_attention(h, qkv_w, qkv_b, mask=mask_index)
                a = g.op("MatMul", [a, wt("attention.output.dense")], "mm")
                h = self.skip_norm(a, h, b("attention.output.dense"),
                                   p + "attention.output.LayerNorm")
                u = g.op("MatMul", [h, wt("intermediate.dense")], "mm")
                u = g.op("BiasGelu", [u, b("intermediate.dense")], "gelu", domain=MS)
                y = g.op("MatMul", [u, wt("output.dense")], "mm")
                h = self.skip_norm(y, h, b("output.dense"), p + "output.LayerNorm")
                continue
            q, k, v = (self.linear(h, self.w(n + ".weight", True), self.w(n + ".bias"))
                       for n in names)
            ctx = self.attention_core(q, k, v, mask_add=mask_add)
            a = self.linear(ctx, wt("attention.output.dense"), b("attention.output.dense"))
            h = self.layer_norm(g.op("Add", [a, h]), p + "attention.output.LayerNorm")
            u = self.gelu(self.linear(h, wt("intermediate.dense"), b("intermediate.dense")))
            y = self.linear(u, wt("output.dense"), b("output.dense"))
            h = self.layer_norm(g.op("Add", [y, h]), p + "output.LayerNorm")
        return g.model(h, [self.B, self.S, self.D], "last_hidden_state")


def build(folder, batch, seq, variant="onnx"):
    """The ModelProto of the folder's forward for input [batch, seq]."""
    fwd = Forward(folder, batch, seq, variant)
    m = fwd.gpt2() if folder.model_type == "gpt2" else fwd.bert()
    onnx.checker.check_model(m)  # under 2 GiB: both models fit in one protobuf
    return m


def feeds(folder, ids):
    """The input dict of a graph from ids [B, S] (BERT: the padding mask all ones)."""
    out = {"input_ids": ids.astype(np.int64)}
    if folder.model_type == "bert":
        out["attention_mask"] = np.ones_like(out["input_ids"])
    return out
