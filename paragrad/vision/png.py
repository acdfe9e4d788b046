"""A minimal PNG codec (zlib and struct, no Pillow) for save_image: write_png writes 8-bit L, RGB
or RGBA images, each row with filter type 0 (none), in one IDAT chunk; read_png reads back just
that (the tests' decoder), and refuses any other PNG rather than misread it."""
from __future__ import annotations

import os
import struct
import zlib

import numpy as np

from ..io.atomic_write import atomic_write

_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_COLOR_TYPE = {1: 0, 3: 2, 4: 6}                        # channels -> PNG colour type: L, RGB, RGBA
_CHANNELS = {v: k for k, v in _COLOR_TYPE.items()}


def _chunk(kind, data):
    # length, type, data, then the CRC of type + data (PNG spec 5.3)
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode_png(pixels):
    """The PNG file's bytes for a uint8 array (H, W) or (H, W, C), C in 1 (L), 3 (RGB), 4 (RGBA)."""
    pixels = np.asarray(pixels)
    if pixels.dtype != np.uint8:
        raise TypeError(f"write_png: pixels must be uint8, got {pixels.dtype}")
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    if pixels.ndim != 3 or pixels.shape[2] not in _COLOR_TYPE or 0 in pixels.shape[:2]:
        raise ValueError(f"write_png: PNG holds (H, W) or (H, W, C) images with C of 1 (L), 3 (RGB) "
                         f"or 4 (RGBA) channels, got pixels of shape {pixels.shape}")
    h, w, c = pixels.shape
    header = struct.pack(">IIBBBBB", w, h, 8, _COLOR_TYPE[c], 0, 0, 0)   # 8-bit, no interlace
    rows = np.zeros((h, 1 + w * c), np.uint8)           # each row: filter byte 0, then its samples
    rows[:, 1:] = pixels.reshape(h, w * c)
    return (_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(rows.tobytes(), 6))
            + _chunk(b"IEND", b""))


def write_png(fp, pixels):
    """Write pixels (see encode_png) as a PNG to fp: a path, written atomically (a failed write
    leaves no partial file), or a binary file object, given the whole file in one write."""
    data = encode_png(pixels)
    if isinstance(fp, (str, os.PathLike)):
        atomic_write(fp, [data])
    else:
        fp.write(data)


def read_png(fp):
    """A uint8 (H, W) or (H, W, C) array from a PNG as write_png writes it (path or file object)."""
    if isinstance(fp, (str, os.PathLike)):
        with open(fp, "rb") as f:
            data = f.read()
    else:
        data = fp.read()
    if not data.startswith(_SIGNATURE):
        raise ValueError("read_png: not a PNG file (bad signature)")
    pos, chunks = len(_SIGNATURE), {}
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        kind, body = data[pos + 4:pos + 8], data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(kind + body) != crc:
            raise ValueError(f"read_png: bad CRC in the {kind.decode('latin-1')} chunk")
        chunks[kind] = chunks.get(kind, b"") + body        # IDAT chunks join in order
        pos += 12 + length
    w, h, depth, color, _, _, interlace = struct.unpack(">IIBBBBB", chunks[b"IHDR"])
    if depth != 8 or color not in _CHANNELS or interlace != 0:
        raise ValueError(f"read_png: only 8-bit L/RGB/RGBA without interlace is read, got bit depth "
                         f"{depth}, colour type {color}, interlace {interlace}")
    c = _CHANNELS[color]
    rows = np.frombuffer(zlib.decompress(chunks[b"IDAT"]), np.uint8).reshape(h, 1 + w * c)
    if rows[:, 0].any():
        raise ValueError(f"read_png: only filter type 0 is read, got {sorted(set(rows[:, 0].tolist()))}")
    pixels = rows[:, 1:].reshape(h, w, c)
    return pixels[:, :, 0] if c == 1 else pixels
