#!/usr/bin/env python3
"""Writes the hand-made seeds of tests/fuzz/corpus/: small callable blobs in
the v2 and v3 layouts of simpler/callable.h (with its CRC32C checksum), and argument encodings in the order
fuzz_args.c reads them. Re-run after changing either format; the real blob
corpus/callable/dummy_chain.spc is copied from a build instead."""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
MAGIC = 0x4C4C414352504D53
NO_STRING = 0xFFFFFFFF
F32, F16, I8, I32, U64 = 1, 2, 5, 9, 12
IN, OUT, INOUT, OUT_EXISTING, NO_DEP = 1, 2, 3, 4, 5
AIC, AIV = 0, 1
NONE = -1


def crc32c(data):
    """CRC32C (Castagnoli, reflected 0x82F63B78), as sp_callable_checksum."""
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def align(n, a=64):
    return (n + a - 1) // a * a


def blob(orch, entry, config, kernels, args=None, version=2):
    """kernels: (func_id, core, binary bytes, entry, signature). Version 3
    appends orch_args (the argument signature's string offset) to the header."""
    strings = bytearray(b"\0")

    def put(s):
        if not s:
            return 0
        off = len(strings)
        strings.extend(s.encode() + b"\0")
        return off

    e = put(entry)
    c = put(config) if config is not None else NO_STRING
    a = put(args) if args else NO_STRING
    ks = [(f, core, b, put(ent), put(sig)) for f, core, b, ent, sig in kernels]
    hdr = 72 if version == 2 else 80
    off = align(hdr + 32 * len(ks))
    orch_off, off = off, align(off + len(orch))
    bins = []
    for k in ks:
        bins.append(off)
        off = align(off + len(k[2]))
    str_off, total = off, off + len(strings)
    out = bytearray(total)
    struct.pack_into("<QIIQIIIIQQQQ", out, 0, MAGIC, version, hdr, total, len(ks), e, c, 0,
                     orch_off, len(orch), str_off, len(strings))
    if version >= 3:
        struct.pack_into("<II", out, 72, a, 0)
    out[orch_off:orch_off + len(orch)] = orch
    for i, (f, core, b, ent, sig) in enumerate(ks):
        struct.pack_into("<iIIIQQ", out, hdr + 32 * i, f, core, ent, sig, bins[i], len(b))
        out[bins[i]:bins[i] + len(b)] = b
    out[str_off:] = strings
    # The checksum (header bytes 36..39) covers every other byte.
    struct.pack_into("<I", out, 36, crc32c(out[:36] + out[40:]))
    return bytes(out)


def tensor(addr, buf_bytes, dtype, shape, strides=None, offset=0):
    if strides is None:
        strides, s = [], 1
        for d in reversed(shape):
            strides.insert(0, s)
            s *= d
    pad = [0] * (5 - len(shape))
    return struct.pack("<QQqq5q5qIBBHQ", addr, buf_bytes, offset, -1, *(list(shape) + pad),
                       *(list(strides) + pad), 0, dtype, len(shape), 0, 0)


def staging(tensors, scalars, flags=3, fail_at=0, slot=0, err_len=200):
    """tensors: (dir, tensor bytes)."""
    out = struct.pack("<BHHBBBB", 0, len(tensors), len(scalars), flags, fail_at, slot, err_len)
    for d, t in tensors:
        out += struct.pack("<B", d) + t
    return out + b"".join(struct.pack("<Q", s) for s in scalars)


def task(kernels, ranges, heap, tid, shape, func_ids, args, scalars=0, deps=(), block_num=1,
         null_mask=0, msg_len=200):
    """kernels: (func_id, core, signature); args: (dir, tensor bytes)."""
    sig_code = {c: i for i, c in enumerate("ioxens")}
    out = struct.pack("<BB", 1, len(kernels))
    for f, core, sig in kernels:
        out += struct.pack("<iBB", f, core, len(sig)) + bytes(sig_code[c] for c in sig)
    out += struct.pack("<B", len(ranges))
    for r in ranges + [heap]:
        out += struct.pack("<QQ", *r)
    out += struct.pack("<QB", tid, msg_len)
    dirs = [d for d, _ in args] + [0] * (32 - len(args))
    out += struct.pack("<BBBBBI3i32BI", shape, len(args), scalars, len(deps), 0, block_num,
                       *func_ids, *dirs, null_mask)
    out += b"".join(t for _, t in args)
    return out + b"".join(struct.pack("<q", d) for d in deps)


def views(t, dim, start, length, d0, d1, shape, index, dtype, addr=0x1000):
    shape5 = list(shape) + [0] * (5 - len(shape))
    return struct.pack("<B", 2) + t + struct.pack("<iqqiiB5qqBQ", dim, start, length, d0, d1,
                                                  len(shape), *shape5, index, dtype, addr)


def write(target, name, data):
    path = os.path.join(HERE, "corpus", target, name)
    with open(path, "wb") as f:
        f.write(data)


ELF = b"\x7fELF" + bytes(12)
write("callable", "minimal.spc", blob(ELF, "orch", None, []))
write("callable", "two_kernels.spc",
      blob(ELF, "build_graph", "graph_config",
           [(0, AIV, ELF + b"add", "kernel_add", "iio"), (7, AIC, ELF + b"mm", "kernel_mm", "xs")]))
write("callable", "args_v3.spc",
      blob(ELF, "build_graph", None, [(0, AIV, ELF + b"add", "kernel_add", "iio")],
           args="x:in:f32[n], y:in:f32[n], z:out:f32[n], tile:scalar:i64", version=3))
write("callable", "unchecked_sig.spc",
      blob(ELF, "o", None, [(1023, AIV, b"k", "k_a", ""), (4096, AIC, b"kk", "k_b", "ioxens")]))

HOST = 0x7F0000001000
write("args", "stage_three.bin",
      staging([(IN, tensor(HOST, 16, F32, [4])), (OUT, tensor(HOST + 64, 16, F32, [4])),
               (INOUT, tensor(HOST + 128, 24, I32, [2, 3]))], [7, 1 << 40]))
write("args", "stage_slice_copy_fails.bin",
      staging([(NO_DEP, tensor(HOST, 16, F32, [2], [1], offset=2))], [], flags=1, fail_at=2))
write("args", "stage_transposed.bin",
      staging([(OUT_EXISTING, tensor(HOST, 24, F32, [3, 2], [1, 3]))], [3], flags=0, slot=1))

ARG, HEAP = (0x10000, 4096), (0x100000, 1 << 20)
kernels = [(0, AIV, "ios"), (1, AIC, ""), (2, AIV, "x")]
write("args", "task_aiv.bin",
      task(kernels, [ARG], HEAP, 5, 2, [NONE, 0, NONE],
           [(IN, tensor(0x10000, 64, F32, [16])), (OUT, tensor(0, 0, F32, [16]))], scalars=1,
           deps=[3]))
write("args", "task_mix.bin",
      task(kernels, [ARG], HEAP, 9, 3, [1, 2, NONE],
           [(INOUT, tensor(0x100040, 256, F16, [8, 8], offset=8))], block_num=4))
write("args", "task_dummy.bin", task(kernels, [], HEAP, 3, 0, [NONE] * 3, [], deps=[0, 1, 2]))

write("args", "views_2d.bin",
      views(tensor(0x1000, 128, F32, [4, 8]), 1, 2, 4, 0, 1, [8, 4], 5, F16))
write("args", "views_negative_stride.bin",
      views(tensor(0x1000, 8, I8, [2, 3], [-3, 1], offset=3), 0, 1, 1, 1, 0, [6], 4, I32))
write("args", "views_broadcast.bin",
      views(tensor(0x1000, 8, U64, [5, 1, 3], [0, 7, 0]), 2, 0, 3, 0, 2, [3, 1, 5], 14, U64))
