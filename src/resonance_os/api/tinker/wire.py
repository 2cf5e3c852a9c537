"""The SDK's protobuf messages (``tinker.proto.tinker_public_pb2``) to and from plain numpy data.

Requests: ``ForwardBackwardRequest`` -> :class:`FwdBwdRequest` (tokens int32, tensors dense or sparse
CSR). Replies: per-datum outputs -> ``ForwardBackwardOutput`` (one ``ArrayRecord``, byte offsets per
datum), sampled sequences -> ``SampleResponse``. A malformed message is a :class:`UserError` naming
the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from tinker.proto import tinker_public_pb2 as pb

from resonance_os.api.tinker.errors import UserError

_DTYPES = {
    pb.DTYPE_FLOAT32: np.dtype(np.float32),
    pb.DTYPE_INT64: np.dtype(np.int64),
    pb.DTYPE_INT32: np.dtype(np.int32),
}


@dataclass
class Datum:
    tokens: np.ndarray  # int64 (T,)
    inputs: dict[str, np.ndarray]  # loss_fn_inputs, flat (T,) arrays


@dataclass
class FwdBwdRequest:
    model_id: str
    seq_id: int
    loss_fn: str
    config: dict[str, float | str]
    forward_only: bool
    data: list[Datum] = field(default_factory=list)


def _tensor(msg: pb.Tensor, where: str) -> np.ndarray:
    dtype = _DTYPES.get(msg.dtype)
    if dtype is None:
        raise UserError(f"{where}: unsupported tensor dtype {msg.dtype} (send float32 or int64)")
    shape = [int(s) for s in msg.shape]
    try:
        if msg.HasField("sparse_csr"):
            csr = msg.sparse_csr
            values = np.frombuffer(csr.values, dtype=dtype)
            crow = np.frombuffer(csr.crow_indices, dtype=np.int64)
            col = np.frombuffer(csr.col_indices, dtype=np.int64)
            if len(shape) != 2 or len(crow) != shape[0] + 1 or len(col) != len(values):
                raise UserError(f"{where}: a sparse CSR tensor needs a 2-D shape and matching indices")
            dense = np.zeros(shape, dtype=dtype)
            for row in range(shape[0]):
                dense[row, col[crow[row] : crow[row + 1]]] = values[crow[row] : crow[row + 1]]
            array = dense
        else:
            array = np.frombuffer(msg.dense, dtype=dtype)
            if shape and math.prod(shape) != array.size:
                raise UserError(f"{where}: shape {shape} does not match its {array.size} values")
    except (ValueError, IndexError) as exc:
        raise UserError(f"{where}: cannot decode the tensor ({exc})") from None
    return array.reshape(-1)  # one value per token; a (1, T) tensor is the same values


def decode_forward_backward(body: bytes) -> FwdBwdRequest:
    """Parse the SDK's ``ForwardBackwardRequest`` body (``Content-Type: application/x-protobuf``)."""
    msg = pb.ForwardBackwardRequest()
    try:
        msg.ParseFromString(body)
    except Exception as exc:  # protobuf's DecodeError
        raise UserError(f"body: not a ForwardBackwardRequest protobuf ({exc})") from None
    config: dict[str, float | str] = {k: float(v) for k, v in msg.loss_fn_config.items()}
    for key, value in msg.loss_fn_config_v2.items():
        config[key] = value.text if value.WhichOneof("value") == "text" else float(value.number)
    request = FwdBwdRequest(msg.model_id, int(msg.seq_id), msg.loss_fn, config, bool(msg.forward_only))
    for i, datum in enumerate(msg.data):
        tokens: list[np.ndarray] = []
        for chunk in datum.model_input:
            if chunk.WhichOneof("chunk") != "encoded_text":
                raise UserError(
                    f"data[{i}].model_input: only encoded_text chunks are supported (got {chunk.WhichOneof('chunk')})"
                )
            tokens.append(np.frombuffer(chunk.encoded_text.tokens, dtype=np.int32).astype(np.int64))
        if len(datum.model_input_spans) or len(datum.loss_fn_input_spans):
            raise UserError(f"data[{i}]: provenance spans (stable_reinforce) are not supported")
        inputs = {
            name: _tensor(tensor, f"data[{i}].loss_fn_inputs[{name!r}]")
            for name, tensor in datum.loss_fn_inputs.items()
        }
        all_tokens = np.concatenate(tokens) if tokens else np.zeros(0, dtype=np.int64)
        request.data.append(Datum(all_tokens, inputs))
    return request


def _batched(arrays: list[np.ndarray], dtype: int) -> pb.BatchedTensor:
    np_dtype = _DTYPES[dtype]
    offsets = np.zeros(len(arrays) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([a.size * np_dtype.itemsize for a in arrays])
    data = b"".join(np.ascontiguousarray(a, dtype=np_dtype).tobytes() for a in arrays)
    return pb.BatchedTensor(data=data, offsets=offsets.tobytes(), dtype=dtype)


def encode_forward_backward(outputs: list[dict[str, np.ndarray]], metrics: dict[str, float]) -> bytes:
    """``ForwardBackwardOutput``: one ArrayRecord holding every datum's float32 outputs."""
    record = pb.ArrayRecord(num_datums=len(outputs))
    for name in outputs[0] if outputs else ():
        record.fields[name].CopyFrom(_batched([o[name] for o in outputs], pb.DTYPE_FLOAT32))
    msg = pb.ForwardBackwardOutput(loss_fn_output_type="ArrayRecord", metrics=metrics)
    msg.loss_fn_outputs.append(record)
    return msg.SerializeToString()


@dataclass
class Sequence:
    tokens: list[int]
    logprobs: list[float]
    stopped: bool  # True: a stop condition ended it; False: max_tokens


def encode_sample(sequences: list[Sequence], prompt_logprobs: list[float] | None) -> bytes:
    """``SampleResponse``; ``prompt_logprobs`` uses NaN for "no value" (position 0)."""
    msg = pb.SampleResponse()
    for seq in sequences:
        msg.sequences.add(
            stop_reason=pb.STOP_REASON_STOP if seq.stopped else pb.STOP_REASON_LENGTH,
            tokens=np.asarray(seq.tokens, dtype=np.int32).tobytes(),
            logprobs=np.asarray(seq.logprobs, dtype=np.float32).tobytes(),
        )
    if prompt_logprobs is not None:
        msg.prompt_logprobs = np.asarray(prompt_logprobs, dtype=np.float32).tobytes()
    return msg.SerializeToString()
