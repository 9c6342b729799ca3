"""A tiny pure-Python MessagePack encoder/decoder.

Supports what Weir operators exchange: nil, bool, int (up to 64 bits), float, str, bin, array
and map (ext types are rejected). Encodes like the Rust SDK (rmp_serde): every integer and
every length in its most compact form, so a key encoded here equals the key bytes a Rust
operator writes for the same value (this matters: the host hashes key bytes to key groups).

`packb(obj) -> bytes`, `unpackb(data) -> obj` (the whole buffer must be one value) and
`unpack_from(data, offset) -> (obj, new_offset)`. Strings decode to `str`, bin to `bytes`,
arrays to `list` (to `tuple` as a map key, so that the dict can hold it), maps to `dict`
(insertion order = encoded order).
"""

import struct

__all__ = ["MsgpackError", "packb", "pack_into", "unpackb", "unpack_from", "pack_uint"]


class MsgpackError(ValueError):
    """Malformed MessagePack input, or a value that cannot be encoded."""


_pack_B = struct.Struct(">B").pack
_pack_H = struct.Struct(">H").pack
_pack_I = struct.Struct(">I").pack
_pack_Q = struct.Struct(">Q").pack
_pack_b = struct.Struct(">b").pack
_pack_h = struct.Struct(">h").pack
_pack_i = struct.Struct(">i").pack
_pack_q = struct.Struct(">q").pack
_pack_d = struct.Struct(">d").pack

# Precomputed encodings of the small non-negative integers (positive fixint).
_FIXINT = [bytes((i,)) for i in range(128)]


def pack_uint(n):
    """The most compact encoding of the non-negative integer `n` (< 2**64)."""
    if n < 128:
        return _FIXINT[n]
    if n <= 0xFF:
        return b"\xcc" + _pack_B(n)
    if n <= 0xFFFF:
        return b"\xcd" + _pack_H(n)
    if n <= 0xFFFFFFFF:
        return b"\xce" + _pack_I(n)
    if n <= 0xFFFFFFFFFFFFFFFF:
        return b"\xcf" + _pack_Q(n)
    raise MsgpackError("integer %d does not fit in 64 bits" % n)


def _pack_int(n, out):
    if n >= 0:
        out += pack_uint(n)
    elif n >= -32:
        out += _pack_b(n)
    elif n >= -0x80:
        out += b"\xd0" + _pack_b(n)
    elif n >= -0x8000:
        out += b"\xd1" + _pack_h(n)
    elif n >= -0x80000000:
        out += b"\xd2" + _pack_i(n)
    elif n >= -0x8000000000000000:
        out += b"\xd3" + _pack_q(n)
    else:
        raise MsgpackError("integer %d does not fit in 64 bits" % n)


def _pack_len(n, out, fix_base, fix_max, c8, c16, c32):
    if n <= fix_max:
        out.append(fix_base | n)
    elif c8 is not None and n <= 0xFF:
        out.append(c8)
        out.append(n)
    elif n <= 0xFFFF:
        out.append(c16)
        out += _pack_H(n)
    elif n <= 0xFFFFFFFF:
        out.append(c32)
        out += _pack_I(n)
    else:
        raise MsgpackError("length %d is too large" % n)


def pack_into(obj, out):
    """Appends the encoding of `obj` to the bytearray `out`."""
    if obj is None:
        out.append(0xC0)
    elif obj is True:
        out.append(0xC3)
    elif obj is False:
        out.append(0xC2)
    elif isinstance(obj, int):
        _pack_int(obj, out)
    elif isinstance(obj, str):
        raw = obj.encode("utf-8")
        _pack_len(len(raw), out, 0xA0, 31, 0xD9, 0xDA, 0xDB)
        out += raw
    elif isinstance(obj, (bytes, bytearray, memoryview)):
        n = len(obj)
        if n <= 0xFF:
            out.append(0xC4)
            out.append(n)
        elif n <= 0xFFFF:
            out.append(0xC5)
            out += _pack_H(n)
        else:
            out.append(0xC6)
            out += _pack_I(n)
        out += obj
    elif isinstance(obj, float):
        out.append(0xCB)
        out += _pack_d(obj)
    elif isinstance(obj, (list, tuple)):
        _pack_len(len(obj), out, 0x90, 15, None, 0xDC, 0xDD)
        for item in obj:
            pack_into(item, out)
    elif isinstance(obj, dict):
        _pack_len(len(obj), out, 0x80, 15, None, 0xDE, 0xDF)
        for k, v in obj.items():
            pack_into(k, out)
            pack_into(v, out)
    else:
        raise MsgpackError("cannot encode a value of type %s" % type(obj).__name__)


def packb(obj):
    """The MessagePack encoding of `obj`, as bytes."""
    if obj.__class__ is int and 0 <= obj < 128:
        return _FIXINT[obj]
    out = bytearray()
    pack_into(obj, out)
    return bytes(out)


_unpack_B = struct.Struct(">B").unpack_from
_unpack_H = struct.Struct(">H").unpack_from
_unpack_I = struct.Struct(">I").unpack_from
_unpack_Q = struct.Struct(">Q").unpack_from
_unpack_b = struct.Struct(">b").unpack_from
_unpack_h = struct.Struct(">h").unpack_from
_unpack_i = struct.Struct(">i").unpack_from
_unpack_q = struct.Struct(">q").unpack_from
_unpack_f = struct.Struct(">f").unpack_from
_unpack_d = struct.Struct(">d").unpack_from

# Fixed-size scalars: marker -> (unpacker, size).
_SCALARS = {
    0xCC: (_unpack_B, 1), 0xCD: (_unpack_H, 2), 0xCE: (_unpack_I, 4), 0xCF: (_unpack_Q, 8),
    0xD0: (_unpack_b, 1), 0xD1: (_unpack_h, 2), 0xD2: (_unpack_i, 4), 0xD3: (_unpack_q, 8),
    0xCA: (_unpack_f, 4), 0xCB: (_unpack_d, 8),
}
# Length prefixes of str / bin / array / map: marker -> (unpacker, size, kind).
_LENGTHS = {
    0xD9: (_unpack_B, 1, "str"), 0xDA: (_unpack_H, 2, "str"), 0xDB: (_unpack_I, 4, "str"),
    0xC4: (_unpack_B, 1, "bin"), 0xC5: (_unpack_H, 2, "bin"), 0xC6: (_unpack_I, 4, "bin"),
    0xDC: (_unpack_H, 2, "array"), 0xDD: (_unpack_I, 4, "array"),
    0xDE: (_unpack_H, 2, "map"), 0xDF: (_unpack_I, 4, "map"),
}


def _need(data, pos, n):
    if pos + n > len(data):
        raise MsgpackError("unexpected end of data at byte %d" % pos)


def unpack_from(data, pos=0):
    """Decodes one value starting at `data[pos]`; returns `(value, position after it)`."""
    _need(data, pos, 1)
    b = data[pos]
    pos += 1
    if b < 0x80:
        return b, pos
    if b >= 0xE0:
        return b - 0x100, pos
    if 0xA0 <= b <= 0xBF:
        kind, n = "str", b & 0x1F
    elif 0x90 <= b <= 0x9F:
        kind, n = "array", b & 0x0F
    elif 0x80 <= b <= 0x8F:
        kind, n = "map", b & 0x0F
    elif b == 0xC0:
        return None, pos
    elif b == 0xC2:
        return False, pos
    elif b == 0xC3:
        return True, pos
    elif b in _SCALARS:
        unpack, size = _SCALARS[b]
        _need(data, pos, size)
        return unpack(data, pos)[0], pos + size
    elif b in _LENGTHS:
        unpack, size, kind = _LENGTHS[b]
        _need(data, pos, size)
        n = unpack(data, pos)[0]
        pos += size
    else:
        raise MsgpackError("unsupported MessagePack marker 0x%02x at byte %d" % (b, pos - 1))
    if kind == "str":
        _need(data, pos, n)
        try:
            return bytes(data[pos:pos + n]).decode("utf-8"), pos + n
        except UnicodeDecodeError as e:
            raise MsgpackError("invalid UTF-8 in a string: %s" % e) from None
    if kind == "bin":
        _need(data, pos, n)
        return bytes(data[pos:pos + n]), pos + n
    if kind == "array":
        items = []
        for _ in range(n):
            item, pos = unpack_from(data, pos)
            items.append(item)
        return items, pos
    result = {}
    for _ in range(n):
        k, pos = unpack_from(data, pos)
        v, pos = unpack_from(data, pos)
        if k.__class__ is list:
            k = _hashable(k)
        try:
            result[k] = v
        except TypeError:
            raise MsgpackError("unhashable map key of type %s" % type(k).__name__) from None
    return result, pos


def _hashable(items):
    """An array used as a map key, as a tuple (arrays inside it too), so the dict can hold
    it; a map inside it stays unhashable."""
    return tuple(_hashable(i) if i.__class__ is list else i for i in items)


def unpackb(data):
    """Decodes `data`, which must hold exactly one value."""
    value, pos = unpack_from(data, 0)
    if pos != len(data):
        raise MsgpackError("%d trailing bytes after the value" % (len(data) - pos))
    return value
