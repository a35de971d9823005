"""Int8 weights kept int8: the packaged MiniLM's MatMuls as ``DynamicQuantizeMatMul``.

The packaged all-MiniLM-L6-v2 stores each MatMul weight as int8 with one scale per
column, turned back into floats (``Cast`` then ``Mul``) before a float ``MatMul``.
onnxruntime folds those into float constants when it loads the model, so every
run reads 42 MB of float weights: a short query's embedding is bound by that
memory traffic (about 2 ms of its 3.5-4 here), and batches by float arithmetic.

This rewrites each such ``MatMul`` into onnxruntime's ``DynamicQuantizeMatMul``
over the same int8 weights and scales: the activations are quantised to 8 bits
per run and multiplied in integers (10.6 MB of weights, VNNI where the CPU has
it). Measured on 2 cores, one text a run as :mod:`.local` runs them: a short
query 3.8 -> 1.8 ms, 173 -> 440 sentences of ~43 tokens a second; against a
float forward pass of the original weights the vectors keep a cosine of 0.994
on average (0.989 at worst; 0.9995 before) (docs/benchmarks.md).

Then nodes go that change no number: each bias ``Add`` into its product, each
layer's Q, K and V products into one, the keys' turning into one ``Transpose``, the
softmax's NaN guard, and each layer's attention into one ``MultiHeadAttention``
(205 nodes a run before the last, 137 after). Each step keeps every vector the same
to the bit; only those are kept, since the int8 activations magnify any change in
the last bit (tried and dropped: com.microsoft ``Gelu`` for the export's ``Erf``
chain and ``SkipLayerNormalization`` for each residual ``Add`` and
``LayerNormalization``, a cosine of 0.996 and 0.995 at worst over the dev questions).

The model is edited as protobuf through a schema of the few ONNX fields read
here; every other field passes through as it was (protobuf keeps unknown
fields), so the ``onnx`` package is not needed.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from memkit._imports import require

_INT8 = 3  # onnx.TensorProto.INT8
_FLOAT = 1
_INT64_TENSOR = 7
_FLOAT_ATTRIBUTE = 1  # onnx.AttributeProto.FLOAT
_INT_ATTRIBUTE = 2  # onnx.AttributeProto.INT
_INTS_ATTRIBUTE = 7  # onnx.AttributeProto.INTS
_CONTRIB = "com.microsoft"
# google.protobuf's FieldDescriptorProto.Type numbers
_INT64, _INT32, _FLOATS, _STRING, _BYTES, _MESSAGE = 3, 5, 2, 9, 12, 11

# (message, [(field number, name, type, repeated, message type)]); float_data is packed
_FIELDS: dict[str, list[tuple[int, str, int, bool, str]]] = {
    "TensorProto": [
        (1, "dims", _INT64, True, ""),
        (2, "data_type", _INT32, False, ""),
        (4, "float_data", _FLOATS, True, ""),
        (8, "name", _STRING, False, ""),
        (9, "raw_data", _BYTES, False, ""),
    ],
    "AttributeProto": [
        (1, "name", _STRING, False, ""),
        (2, "f", _FLOATS, False, ""),
        (3, "i", _INT64, False, ""),
        (8, "ints", _INT64, True, ""),
        (20, "type", _INT32, False, ""),
    ],
    "NodeProto": [
        (1, "input", _STRING, True, ""),
        (2, "output", _STRING, True, ""),
        (3, "name", _STRING, False, ""),
        (4, "op_type", _STRING, False, ""),
        (5, "attribute", _MESSAGE, True, "AttributeProto"),
        (7, "domain", _STRING, False, ""),
    ],
    "ValueInfoProto": [
        (1, "name", _STRING, False, ""),
    ],
    "GraphProto": [
        (1, "node", _MESSAGE, True, "NodeProto"),
        (5, "initializer", _MESSAGE, True, "TensorProto"),
        (11, "input", _MESSAGE, True, "ValueInfoProto"),
        (12, "output", _MESSAGE, True, "ValueInfoProto"),
    ],
    "OperatorSetIdProto": [
        (1, "domain", _STRING, False, ""),
        (2, "version", _INT64, False, ""),
    ],
    "ModelProto": [
        (7, "graph", _MESSAGE, False, "GraphProto"),
        (8, "opset_import", _MESSAGE, True, "OperatorSetIdProto"),
    ],
}


@functools.cache
def _model_class() -> Any:
    """ModelProto over the fields above (the ONNX numbers; proto2, as onnx.proto is).
    protobuf comes with onnxruntime."""
    descriptor_pb2: Any = require("google.protobuf.descriptor_pb2", "local")
    descriptor_pool: Any = require("google.protobuf.descriptor_pool", "local")
    message_factory: Any = require("google.protobuf.message_factory", "local")
    file = descriptor_pb2.FileDescriptorProto(
        name="memkit_onnx_subset.proto", package="memkit_onnx_subset", syntax="proto2")
    for message, fields in _FIELDS.items():
        proto = file.message_type.add(name=message)
        for number, name, kind, repeated, type_name in fields:
            field = proto.field.add(name=name, number=number, type=kind)
            field.label = (descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED if repeated
                           else descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
            if name == "float_data":
                field.options.packed = True
            if type_name:
                field.type_name = f".memkit_onnx_subset.{type_name}"
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    model = pool.FindMessageTypeByName("memkit_onnx_subset.ModelProto")
    if hasattr(message_factory, "GetMessageClass"):  # protobuf >= 4.21
        return message_factory.GetMessageClass(model)
    return message_factory.MessageFactory(pool).GetPrototype(model)


def dynamic_int8(model: bytes, *, attention: bool = True) -> tuple[bytes, int]:
    """``model`` with each ``MatMul(x, Cast(int8 weight) * scale)`` as a
    ``DynamicQuantizeMatMul`` on the int8 weight, and how many were rewritten (0: the
    model comes back unchanged, e.g. a float export a user supplied). ``attention``:
    each layer's attention also as one ``MultiHeadAttention`` (onnxruntime 1.20 or
    newer runs it with the export's mask; 1.18 and 1.19 refuse that mask when run)."""
    proto = _model_class()()
    proto.ParseFromString(model)
    graph = proto.graph
    initializers = {t.name: t for t in graph.initializer}
    producer = {output: node for node in graph.node for output in node.output}
    rewritten = 0
    for node in graph.node:
        weights = _int8_weights(node, producer, initializers)
        if weights is None:
            continue
        weight, scales = weights
        columns = len(scales)
        scale_1d = graph.initializer.add(name=f"{node.output[0]}__memkit_scale", data_type=_FLOAT,
                                         dims=[columns], raw_data=scales.tobytes())
        zero = graph.initializer.add(name=f"{scale_1d.name}_zero", data_type=_INT8, dims=[columns],
                                     raw_data=bytes(columns))
        activations = node.input[0]
        del node.input[:]
        node.input.extend([activations, weight.name, scale_1d.name, zero.name])
        node.op_type, node.domain = "DynamicQuantizeMatMul", _CONTRIB
        rewritten += 1
    if not rewritten:
        return model, 0
    if not any(o.domain == _CONTRIB for o in proto.opset_import):
        proto.opset_import.add(domain=_CONTRIB, version=1)
    _fold_biases(graph)
    _merge_projections(graph)
    _transpose_keys_once(graph)
    _drop_nan_guards(graph)
    if attention:
        _fuse_attention(graph)
    return proto.SerializeToString(), rewritten


def _fold_biases(graph: Any) -> None:
    """Each ``DynamicQuantizeMatMul`` whose output only a bias ``Add`` reads takes the bias
    as its fifth input, and the ``Add`` goes (24 nodes fewer a run, a query about 12%
    faster). Exact: the product adds the bias to each scaled sum, as the ``Add`` did
    (tested)."""
    initializers = {t.name: t for t in graph.initializer}
    readers = _readers(graph)
    folded: set[str] = set()  # the products' outputs the Adds read
    for node in graph.node:
        if (node.op_type != "DynamicQuantizeMatMul" or node.domain != _CONTRIB
                or len(node.input) != 4):
            continue
        add = _bias_add(node, readers, initializers)
        if add is None or list(initializers[add.input[1]].dims) != list(
                initializers[node.input[2]].dims):
            continue
        folded.add(node.output[0])
        node.input.append(add.input[1])
        node.output[0] = add.output[0]
    _rebuild(graph, lambda node: node.op_type == "Add" and node.input[0] in folded)


def _merge_projections(graph: Any) -> None:
    """Each group of biased ``DynamicQuantizeMatMul`` reading the same input (an attention
    layer's query, key and value), as one over the weights side by side and a ``Split``:
    the input is quantised once and 12 fewer nodes run (a query about 7% faster). Exact:
    the input's scale is the same, integer sums do not depend on the other columns, and
    each column keeps its scale and bias, so every output is the number the three nodes
    gave (tested)."""
    initializers = {t.name: t for t in graph.initializer}
    groups: dict[str, list[Any]] = {}
    for node in graph.node:
        if node.op_type == "DynamicQuantizeMatMul" and node.domain == _CONTRIB:
            groups.setdefault(node.input[0], []).append(node)
    replaced: dict[str, list[Any]] = {}  # the group's first node's output -> the new nodes
    gone: set[str] = set()  # outputs of the nodes they replace
    node_class = type(graph.node[0])
    for source, nodes in groups.items():
        weights = [initializers[node.input[1]] for node in nodes]
        if (len(nodes) < 2 or any(len(node.input) != 5 for node in nodes)
                or any(not w.raw_data or w.dims[0] != weights[0].dims[0] for w in weights)):
            continue
        columns = [int(w.dims[1]) for w in weights]
        base = f"{nodes[0].output[0]}__memkit_merged"
        _tensor(graph, f"{base}_weight", _INT8, np.concatenate(
            [np.frombuffer(w.raw_data, np.int8).reshape(-1, c) for w, c in
             zip(weights, columns, strict=True)], axis=1))
        _tensor(graph, f"{base}_scale", _FLOAT, np.concatenate(
            [_floats(initializers[node.input[2]]) for node in nodes]))
        _tensor(graph, f"{base}_zero", _INT8, np.zeros(sum(columns), np.int8))
        _tensor(graph, f"{base}_bias", _FLOAT, np.concatenate(
            [_floats(initializers[node.input[4]]) for node in nodes]))
        _tensor(graph, f"{base}_split", _INT64_TENSOR, np.array(columns, "<i8"))
        product = node_class(name=f"{base}_product", op_type="DynamicQuantizeMatMul",
                             domain=_CONTRIB, output=[f"{base}_product"],
                             input=[source, *(f"{base}_{part}" for part in
                                              ("weight", "scale", "zero", "bias"))])
        split = node_class(name=f"{base}_split", op_type="Split",
                           input=[f"{base}_product", f"{base}_split"],
                           output=[node.output[0] for node in nodes])
        split.attribute.add(name="axis", i=-1, type=_INT_ATTRIBUTE)
        replaced[nodes[0].output[0]] = [product, split]
        gone.update(node.output[0] for node in nodes)
    _rebuild(graph, lambda node: node.output[0] in gone, replaced)


def _transpose_keys_once(graph: Any) -> None:
    """Each attention layer's keys, turned for the scores' product, by one ``Transpose``.

    The export turns them in four steps: ``Transpose`` to ``[B, H, S, D]``, ``Reshape`` to
    ``[-1, S, D]``, ``Transpose`` ``[0, 2, 1]``, ``Reshape`` to ``[B, H, D, S]``, the two
    shapes computed from ``Shape`` by ``Slice`` and ``Concat`` nodes: 10 nodes a layer.
    One ``Transpose`` of the keys as the layer's product left them (``[B, S, H, D]``, perm
    ``[0, 2, 3, 1]``) gives the same tensor, every element moved and none computed: 54
    fewer nodes a run, a query about 8% faster. The vectors are the same to the bit
    (tested). Nodes nothing reads then go, with them the weights' ``Cast`` and ``Mul``
    left unread by the rewrite to ``DynamicQuantizeMatMul`` (onnxruntime folded them into
    unused floats at load: peak memory 25 MB less)."""
    producer = {output: node for node in graph.node for output in node.output}
    initializers = {t.name: t for t in graph.initializer}
    node_class = type(graph.node[0]) if graph.node else None
    turned: dict[str, list[Any]] = {}
    for node in graph.node:
        keys = _turned_keys(node, producer, initializers)
        if keys is None or node_class is None:
            continue
        source, perm = keys
        transpose = node_class(name=f"{node.output[0]}__memkit_keys", op_type="Transpose",
                               input=[source], output=[node.output[0]])
        transpose.attribute.add(name="perm", ints=perm, type=_INTS_ATTRIBUTE)
        turned[node.output[0]] = [transpose]
    if turned:
        _rebuild(graph, lambda node: node.output[0] in turned, turned)
        _drop_unread(graph)


def _drop_nan_guards(graph: Any) -> None:
    """Each attention layer's ``Where(IsNaN(p), 0, p)`` after its ``Softmax`` read as ``p``.

    A softmax row is NaN only when its scores hold a NaN or an infinity: the export masks
    padding with the lowest finite float, not minus infinity, so a row of masked keys
    is finite too, and a text's activations stay finite. The guard copies the
    ``[B, H, S, S]`` probabilities twice a layer: without it a query's model run is
    about 5% faster; the vectors are the same to the bit (tested)."""
    producer = {output: node for node in graph.node for output in node.output}
    outputs = {o.name for o in graph.output}
    same: dict[str, str] = {}
    for node in graph.node:
        if node.op_type != "Where" or len(node.input) != 3 or node.output[0] in outputs:
            continue
        test, probabilities = producer.get(node.input[0]), node.input[2]
        softmax = producer.get(probabilities)
        if (test is not None and test.op_type == "IsNaN" and list(test.input) == [probabilities]
                and softmax is not None and softmax.op_type == "Softmax"):
            same[node.output[0]] = probabilities
    if same:
        for node in graph.node:
            for i, name in enumerate(node.input):
                if name in same:
                    node.input[i] = same[name]
        _drop_unread(graph)


def _fuse_attention(graph: Any) -> None:
    """Each attention layer, from its query, key and value to the heads joined again, as
    one com.microsoft ``MultiHeadAttention`` after two ``Mul`` (the query and the key by
    the export's scale; the op's own scale is 1): 11 nodes a layer fewer, and the shapes
    they read (205 nodes a run to 137; a query's model run about 2.5% less CPU).

    The export splits Q, K and V into heads (``Reshape`` and ``Transpose``), scales Q and
    K by a constant each, adds the mask to their product, takes its softmax, multiplies V
    by it and joins the heads (``Transpose``, ``Reshape``). The fused op does the same
    steps on the same numbers: the scaling, moved before the split (an element's product
    does not depend on where it sits), the mask added as its ``attention_bias``, and its
    scores and softmax those of the export: the vectors are the same to the bit (tested;
    the 999 dev questions checked). The export's own scale as the op's ``scale`` would
    round the scores differently, and the int8 activations of the next products
    magnify that (a cosine of 0.995 at worst over the dev questions)."""
    producer = {output: node for node in graph.node for output in node.output}
    initializers = {t.name: t for t in graph.initializer}
    # a BERT export's inputs (ids, mask, types) are all [batch, tokens]
    shapes = {i.name: [_BATCH, _TOKENS] for i in graph.input}
    fused: dict[str, list[Any]] = {}
    for node in graph.node:
        found = _attention(node, shapes, producer, initializers)
        if found is None:
            continue
        query, key, value, bias, heads = found
        base = f"{node.output[0]}__memkit_attention"
        scaled = [type(node)(name=f"{base}_{part}", op_type="Mul", input=list(tensor),
                             output=[f"{base}_{part}"])
                  for part, tensor in (("query", query), ("key", key))]
        attention = type(node)(name=base, op_type="MultiHeadAttention", domain=_CONTRIB,
                               input=[f"{base}_query", f"{base}_key", value, "", "", bias],
                               output=[node.output[0]])
        attention.attribute.add(name="num_heads", i=heads, type=_INT_ATTRIBUTE)
        attention.attribute.add(name="scale", f=1.0, type=_FLOAT_ATTRIBUTE)
        fused[node.output[0]] = [*scaled, attention]
    if fused:
        _rebuild(graph, lambda node: node.output[0] in fused, fused)
        _drop_unread(graph)


# a graph input's batch and tokens, as values no constant of the graph is
_BATCH, _TOKENS = (1 << 41), (1 << 41) + 1


def _attention(node: Any, shapes: dict[str, list[int]], producer: dict[str, Any],
               initializers: dict[str, Any]) -> tuple[
                   tuple[str, str], tuple[str, str], str, str, int] | None:
    """``((Q, its scale), (K, its scale), V, mask, heads)`` when ``node`` is the export's
    ``Reshape(Transpose(Softmax(Q' @ K' + mask) @ V', [0, 2, 1, 3]), [B, S, E])``, with
    ``Q' = Transpose(Reshape(Q, [B, S, -1, D]), [0, 2, 1, 3]) * scale``, K' the same
    turned ``[0, 2, 3, 1]``, V' as Q' unscaled, and Q, K, V ``E = heads * D`` columns
    wide; else None."""
    joined = _made_by(producer, node.input[0], "Transpose") if node.op_type == "Reshape" else None
    weighted = _made_by(producer, joined.input[0], "MatMul") if joined else None
    softmax = _made_by(producer, weighted.input[0], "Softmax") if weighted else None
    masked = _made_by(producer, softmax.input[0], "Add") if softmax else None
    if (masked is None or joined is None or weighted is None or softmax is None
            or _ints(joined, "perm") != [0, 2, 1, 3] or _int(softmax, "axis") not in (-1, 3)):
        return None
    scores, bias = _made_by(producer, masked.input[0], "MatMul"), masked.input[1]
    if scores is None:
        scores, bias = _made_by(producer, masked.input[1], "MatMul"), masked.input[0]
    query, key = (_scaled(producer, initializers, name) for name in scores.input) if scores else (
        None, None)
    heads = [query and _heads(producer, query[0], [0, 2, 1, 3]),
             key and _heads(producer, key[0], [0, 2, 3, 1]),
             _heads(producer, weighted.input[1], [0, 2, 1, 3])]
    if query is None or key is None or any(h is None for h in heads):
        return None
    sources = [h[0] for h in heads if h]
    widths = {_columns(producer, initializers, source) for source in sources}
    split = {tuple(_shape_value(h[1], shapes, producer, initializers) or ()) for h in heads if h}
    if len(widths) != 1 or len(split) != 1:
        return None
    width, [shape] = widths.pop(), split
    if (width is None or len(shape) != 4 or shape[:2] != (_BATCH, _TOKENS) or shape[3] < 1
            or width % shape[3] or shape[2] not in (-1, width // shape[3])
            or _shape_value(node.input[1], shapes, producer, initializers)
            not in ([_BATCH, _TOKENS, -1], [_BATCH, _TOKENS, width])):
        return None
    return ((sources[0], query[1]), (sources[1], key[1]), sources[2], bias,
            width // shape[3])


def _made_by(producer: dict[str, Any], name: str, op_type: str) -> Any:
    """The node of the default domain making ``name`` when it is an ``op_type``, else None."""
    node = producer.get(name)
    return node if node is not None and node.op_type == op_type and not node.domain else None


def _scaled(producer: dict[str, Any], initializers: dict[str, Any],
            name: str) -> tuple[str, str] | None:
    """``(X, c)`` when ``name`` is ``Mul(X, c)`` or ``Mul(c, X)``, ``c`` one float constant."""
    mul = _made_by(producer, name, "Mul")
    for tensor, scale in (mul.input, reversed(mul.input)) if mul else ():
        constant = initializers.get(scale)
        if (constant is not None and constant.data_type == _FLOAT and len(constant.raw_data) == 4
                and tensor not in initializers):
            return tensor, scale
    return None


def _heads(producer: dict[str, Any], name: str, perm: list[int]) -> tuple[str, str] | None:
    """``(X, shape)`` when ``name`` is ``Transpose(Reshape(X, shape), perm)``."""
    turn = _made_by(producer, name, "Transpose")
    split = _made_by(producer, turn.input[0], "Reshape") if turn else None
    if split is None or _ints(turn, "perm") != perm or len(split.input) != 2:
        return None
    return split.input[0], split.input[1]


def _columns(producer: dict[str, Any], initializers: dict[str, Any], name: str) -> int | None:
    """The width of ``name``'s last axis when a ``DynamicQuantizeMatMul``'s weight or a
    ``Split`` of constant sizes along it says it, else None."""
    node = producer.get(name)
    if node is not None and node.op_type == "DynamicQuantizeMatMul" and node.domain == _CONTRIB:
        weight = initializers.get(node.input[1])
        return int(weight.dims[-1]) if weight is not None and len(weight.dims) == 2 else None
    if node is None or node.op_type != "Split" or node.domain or _int(node, "axis") != -1:
        return None
    sizes = _int64s(initializers.get(node.input[1])) if len(node.input) == 2 else None
    if sizes is None or len(sizes) != len(node.output):
        return None
    return sizes[list(node.output).index(name)]


def _turned_keys(node: Any, producer: dict[str, Any],
                 initializers: dict[str, Any]) -> tuple[str, list[int]] | None:
    """``(X, perm)`` when ``node`` is ``Reshape(Transpose(Reshape(K, [-1, S, D]), [0, 2, 1]),
    [B, H, D, S])`` where ``K = Transpose(X, p)`` is 4-d, of shape ``[B, H, S, D]``, and
    the two shapes are read from K's: ``node``'s output is then ``Transpose(X, perm)``."""
    if node.op_type != "Reshape" or len(node.input) != 2:
        return None
    turn = producer.get(node.input[0])
    if turn is None or turn.op_type != "Transpose" or _ints(turn, "perm") != [0, 2, 1]:
        return None
    flat = producer.get(turn.input[0])
    if flat is None or flat.op_type != "Reshape" or len(flat.input) != 2:
        return None
    keys = producer.get(flat.input[0])
    if keys is None or keys.op_type != "Transpose" or len(_ints(keys, "perm") or ()) != 4:
        return None
    # K's shape as four values no constant of the graph is, to see where each one goes
    tags = [(1 << 40) + i for i in range(4)]
    b, h, s, d = tags
    shapes = {flat.input[0]: tags}
    if (_shape_value(flat.input[1], shapes, producer, initializers) != [-1, s, d]
            or _shape_value(node.input[1], shapes, producer, initializers)
            != [b, h, d, s]):
        return None
    perm = _ints(keys, "perm") or []
    return keys.input[0], [perm[i] for i in (0, 1, 3, 2)]


def _shape_value(name: str, shapes: dict[str, list[int]], producer: dict[str, Any],
                 initializers: dict[str, Any]) -> list[int] | None:
    """The 1-d int64 tensor ``name`` when it is made from the shapes of the tensors of
    ``shapes`` (given as tags) and constants by ``Shape``, ``Slice`` and ``Concat`` only,
    else None."""
    constant = _int64s(initializers.get(name))
    if constant is not None:
        return constant
    node = producer.get(name)
    if node is None:
        return None
    if node.op_type == "Shape" and len(node.input) == 1 and node.input[0] in shapes:
        return shapes[node.input[0]][_int(node, "start") or 0 : _int(node, "end")]
    if node.op_type == "Concat" and _int(node, "axis") == 0:
        parts = [_shape_value(i, shapes, producer, initializers) for i in node.input]
        return None if any(p is None for p in parts) else [v for p in parts for v in p or ()]
    if node.op_type == "Slice" and len(node.input) == 3:
        data = _shape_value(node.input[0], shapes, producer, initializers)
        starts, ends = (_int64s(initializers.get(i)) for i in node.input[1:])
        if data is None or starts is None or ends is None or len(starts) != 1 or len(ends) != 1:
            return None
        return data[starts[0]:ends[0]]  # a step of 1: ONNX clamps the bounds as Python does
    return None


def _int64s(tensor: Any) -> list[int] | None:
    if tensor is None or tensor.data_type != _INT64_TENSOR or len(tensor.dims) > 1:
        return None
    values: list[int] = np.frombuffer(tensor.raw_data, "<i8").tolist()
    return values if tensor.raw_data or list(tensor.dims) == [0] else None


def _ints(node: Any, name: str) -> list[int] | None:
    found = [list(a.ints) for a in node.attribute if a.name == name]
    return found[0] if found else None


def _int(node: Any, name: str) -> int | None:
    found = [int(a.i) for a in node.attribute if a.name == name]
    return found[0] if found else None


def _drop_unread(graph: Any) -> None:
    """The graph without the nodes whose outputs nothing reads (ONNX nodes have no side
    effects)."""
    outputs = {o.name for o in graph.output}
    while True:
        unread = functools.partial(_unread, outputs | {i for n in graph.node for i in n.input})
        if not any(unread(node) for node in graph.node):
            return
        _rebuild(graph, unread)


def _unread(read: set[str], node: Any) -> bool:
    return not any(output in read for output in node.output)


def _readers(graph: Any) -> dict[str, list[Any]]:
    readers: dict[str, list[Any]] = {}
    for node in graph.node:
        for name in node.input:
            readers.setdefault(name, []).append(node)
    return readers


def _rebuild(graph: Any, drop: Callable[[Any], bool],
             before: dict[str, list[Any]] | None = None) -> None:
    """The graph's nodes without those ``drop`` picks, the nodes of ``before`` in front of
    the node whose first output names them (so the order stays topological)."""
    if not graph.node:
        return
    node_class = type(graph.node[0])
    order = []
    for node in graph.node:
        order.extend((before or {}).get(node.output[0], []))
        if not drop(node):
            order.append(node_class.FromString(node.SerializeToString()))
    del graph.node[:]
    graph.node.extend(order)


def _bias_add(node: Any, readers: dict[str, list[Any]], initializers: dict[str, Any]) -> Any:
    """The ``Add`` of a constant that alone reads ``node``'s output, else None."""
    found = readers.get(node.output[0], [])
    if len(found) != 1 or found[0].op_type != "Add" or list(found[0].input[:1]) != [node.output[0]]:
        return None
    bias = initializers.get(found[0].input[1])
    if bias is None or bias.data_type != _FLOAT or not bias.raw_data:
        return None
    return found[0]


def _floats(tensor: Any) -> npt.NDArray[np.float32]:
    return np.frombuffer(tensor.raw_data, "<f4")


def _tensor(graph: Any, name: str, kind: int, values: npt.NDArray[Any]) -> None:
    graph.initializer.add(name=name, data_type=kind, dims=list(values.shape),
                          raw_data=values.tobytes())


def _int8_weights(node: Any, producer: dict[str, Any],
                  initializers: dict[str, Any]) -> tuple[Any, npt.NDArray[np.float32]] | None:
    """The int8 weight initializer behind a MatMul's second input and its scale per
    column, or None when that input is not ``Cast(int8 initializer) * float scale`` with
    one scale, or one per column."""
    if node.op_type != "MatMul" or node.domain not in ("", "ai.onnx") or len(node.input) != 2:
        return None
    mul = producer.get(node.input[1])
    if mul is None or mul.op_type != "Mul" or len(mul.input) != 2:
        return None
    for cast_output, scale_name in (mul.input, reversed(mul.input)):
        cast = producer.get(cast_output)
        scale = initializers.get(scale_name)
        if cast is None or cast.op_type != "Cast" or scale is None or scale.data_type != _FLOAT:
            continue
        weight = initializers.get(cast.input[0])
        if weight is None or weight.data_type != _INT8 or len(weight.dims) != 2:
            continue
        columns = int(weight.dims[1])
        values = (np.frombuffer(scale.raw_data, "<f4") if scale.raw_data
                  else np.array(scale.float_data, np.float32))
        if values.size == 1 or (values.size == columns and list(scale.dims)[-1:] == [columns]):
            return weight, np.ascontiguousarray(np.broadcast_to(values.astype("<f4").reshape(-1),
                                                                (columns,)))
    return None
