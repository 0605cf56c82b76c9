"""Reader and writer for EGMT tensor files (the fixture format shared with C++).

An EGMT file is a flat, ordered list of named tensors. Layout (little-endian):

    magic      8 bytes   b"EGMTENS1"   (format name + version 1)
    count      uint32    number of tensors
    count times:
      name_len uint32    length of name in bytes
      name     bytes     UTF-8, no terminator
      ndim     uint32    0 for a scalar
      dims     int64[ndim]
      dtype    uint32    0 = float32, 1 = int64
      data     raw little-endian elements, row-major (C order), prod(dims) of them
               (one element when ndim == 0)

There is no padding and no trailing data; readers reject both.
"""

import struct
from collections import OrderedDict

import numpy as np
import torch

MAGIC = b"EGMTENS1"
DTYPE_CODES = {torch.float32: 0, torch.int64: 1}
CODE_TO_NUMPY = {0: np.dtype("<f4"), 1: np.dtype("<i8")}


def write_egmt(path, tensors):
    """Writes an ordered mapping name -> tensor (float32 or int64) to path."""
    chunks = [MAGIC, struct.pack("<I", len(tensors))]
    for name, tensor in tensors.items():
        tensor = tensor.detach().cpu().contiguous()
        if tensor.dtype not in DTYPE_CODES:
            raise TypeError(f"{name}: dtype {tensor.dtype} is not float32 or int64")
        code = DTYPE_CODES[tensor.dtype]
        name_bytes = name.encode("utf-8")
        chunks.append(struct.pack("<I", len(name_bytes)))
        chunks.append(name_bytes)
        chunks.append(struct.pack("<I", tensor.dim()))
        chunks.append(struct.pack(f"<{tensor.dim()}q", *tensor.shape))
        chunks.append(struct.pack("<I", code))
        chunks.append(tensor.numpy().astype(CODE_TO_NUMPY[code], copy=False).tobytes(order="C"))
    with open(path, "wb") as f:
        f.write(b"".join(chunks))


def read_egmt(path):
    """Reads an EGMT file into an OrderedDict name -> torch tensor."""
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:8] != MAGIC:
        raise ValueError(f"{path}: not an EGMT v1 file (magic {blob[:8]!r}); regenerate with make_fixtures.py")
    pos = 8

    def take(fmt):
        nonlocal pos
        size = struct.calcsize(fmt)
        if pos + size > len(blob):
            raise ValueError(f"{path}: truncated at byte {pos}")
        values = struct.unpack_from(fmt, blob, pos)
        pos += size
        return values

    (count,) = take("<I")
    tensors = OrderedDict()
    for _ in range(count):
        (name_len,) = take("<I")
        name = bytes(take(f"<{name_len}s")[0]).decode("utf-8")
        (ndim,) = take("<I")
        dims = list(take(f"<{ndim}q"))
        (code,) = take("<I")
        if code not in CODE_TO_NUMPY:
            raise ValueError(f"{path}: tensor {name} has unknown dtype code {code}")
        dtype = CODE_TO_NUMPY[code]
        numel = int(np.prod(dims)) if ndim else 1
        nbytes = numel * dtype.itemsize
        if pos + nbytes > len(blob):
            raise ValueError(f"{path}: tensor {name} truncated")
        array = np.frombuffer(blob, dtype=dtype, count=numel, offset=pos).reshape(dims)
        pos += nbytes
        if name in tensors:
            raise ValueError(f"{path}: duplicate tensor name {name}")
        tensors[name] = torch.from_numpy(array.copy())
    if pos != len(blob):
        raise ValueError(f"{path}: {len(blob) - pos} trailing bytes")
    return tensors
