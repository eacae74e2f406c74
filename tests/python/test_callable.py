"""simpler.Callable: load and validate a blob, what it declares (arguments,
kernels, signature), pack and kernels_header, save/load round trip."""
import os
import subprocess

import pytest

import simpler

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")
VECTOR_SIG = "a:in:f32[n],b:in:f32[n],f:out:f32[n],blocks:scalar"


def example_path(name):
    return os.path.join(simpler.examples_dir(), name + ".spc")


def test_load_example_and_what_it_declares():
    c = simpler.Callable.load(example_path("vector_example"))
    assert c.entry == "vector_example_orch"
    assert c.config == "vector_example_config"
    assert c.signature == VECTOR_SIG
    assert len(c) == len(c.blob) == os.path.getsize(example_path("vector_example"))
    assert c.blob == open(example_path("vector_example"), "rb").read()
    assert isinstance(c.checksum, int) and c.checksum == int.from_bytes(c.blob[36:40], "little")
    args = c.args
    assert [a.name for a in args] == ["a", "b", "f", "blocks"]
    assert args[0] == simpler.ArgSpec(("a", "tensor", simpler.IN, "f32", ("n",)))
    assert args[2].dir == simpler.OUT and args[2].shape == ("n",)
    assert args[3] == simpler.ArgSpec(("blocks", "scalar", None, "i64", None))
    kernels = c.kernels
    assert [(k.func_id, k.core, k.entry) for k in kernels] == [
        (0, "aiv", "vec_add"), (1, "aiv", "vec_add_scalar"), (2, "aiv", "vec_mul")]
    assert c.kernel_name(1) == "vec_add_scalar"
    assert c.kernel_name(7) is None and c.kernel_name(-1) is None
    assert "vector_example_orch" in repr(c)


def test_shapes_with_numbers_and_scalar_dtypes():
    bgemm = simpler.example("bgemm")
    assert bgemm.args[0].shape == (3,) and bgemm.args[0].dtype == "i64"
    assert bgemm.args[1].shape == ("g", "m", "k")
    pa = simpler.example("paged_attention")
    scale = pa.args[-1]
    assert (scale.name, scale.kind, scale.dtype) == ("scale", "scalar", "f32")
    assert pa.args[3].dtype == "i32"


def test_every_example_loads():
    for name in ("vector_example", "matmul_diamond", "bgemm", "paged_attention", "dummy_chain",
                 "control_rw"):
        c = simpler.example(name)
        assert c.signature and len(c.args) >= 3 and len(c.kernels) >= 1


def test_unknown_example_is_an_argument_error():
    with pytest.raises(simpler.ArgumentError, match="no example callable 'nope'"):
        simpler.example("nope")


def test_bytes_like_inputs_are_copied():
    data = bytearray(open(example_path("vector_example"), "rb").read())
    c = simpler.Callable(data)
    data[:] = b"\0" * len(data)  # the Callable holds its own copy
    assert c.entry == "vector_example_orch"
    assert simpler.Callable(memoryview(c.blob)).checksum == c.checksum
    # An unaligned view of the bytes works too: the copy is aligned.
    padded = b"x" + c.blob
    assert simpler.Callable(memoryview(padded)[1:]).checksum == c.checksum


@pytest.mark.parametrize("where", [0, 10, 40, 100, -1])
def test_corrupted_blob_is_a_callable_error(where):
    blob = bytearray(simpler.example("vector_example").blob)
    blob[where] ^= 0x20
    with pytest.raises(simpler.CallableError) as ei:
        simpler.Callable(bytes(blob))
    assert ei.value.status == -19 and ei.value.name == "SP_EBLOB"
    assert "invalid callable" in ei.value.message


def test_truncated_and_empty_blobs(tmp_path):
    blob = simpler.example("vector_example").blob
    for cut in (b"", blob[:8], blob[:79], blob[:-1]):
        with pytest.raises(simpler.BlobError):
            simpler.Callable(cut)
    bad = tmp_path / "bad.spc"
    bad.write_bytes(blob[:200])
    with pytest.raises(simpler.BlobError, match=str(bad)):
        simpler.Callable.load(bad)


def test_load_missing_file_is_an_os_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        simpler.Callable.load(tmp_path / "missing.spc")


def test_save_load_round_trip(tmp_path):
    c = simpler.example("matmul_diamond")
    path = tmp_path / "copy.spc"
    c.save(path)
    back = simpler.Callable.load(str(path))
    assert back.blob == c.blob and back.checksum == c.checksum
    assert back.signature == c.signature and back.kernels == c.kernels


def compile_so(tmp_path, source, out):
    cc = simpler._paths.C_COMPILER
    so = str(tmp_path / out)
    subprocess.run([cc, "-std=gnu11", "-O2", "-fPIC", "-shared", "-fvisibility=hidden",
                    f"-I{simpler.include_dir()}", f"-I{tmp_path}", f"-I{KERNELS}", "-o", so,
                    source], check=True)
    return so


AXPY_SIG = "x:in:f32[n],y:inout:f32[n],alpha:scalar:f32"


def test_kernels_header_names_kernels_and_arguments():
    text = simpler.kernels_header(kernels=[(0, "aiv", "axpy_scale"), (1, "aiv", "axpy_add")],
                                  signature=AXPY_SIG, name="axpy_kernels.h")
    assert "#define SP_FUNC_axpy_scale 0" in text
    assert "#define SP_FUNC_axpy_add 1" in text
    assert "#define SP_ARG_y 1" in text and "#define SP_SCALAR_alpha 0" in text
    assert "#define SP_ARG_COUNT 2" in text
    plain = simpler.kernels_header([(3, "aic", "k")])
    assert "#define SP_FUNC_k 3" in plain and "SP_ARG_COUNT" not in plain


def test_kernels_header_refuses_bad_input():
    with pytest.raises(simpler.InvalError):
        simpler.kernels_header([(0, "aiv", "a"), (0, "aiv", "b")])
    with pytest.raises(simpler.InvalError):
        simpler.kernels_header([(0, "gpu", "a")])
    with pytest.raises(simpler.InvalError):
        simpler.kernels_header([(0, "aiv", "a")], signature="x:sideways:f32")


def test_pack_from_shared_objects(tmp_path):
    header = simpler.kernels_header([(0, "aiv", "axpy_scale"), (1, "aiv", "axpy_add")],
                                    signature=AXPY_SIG, name="axpy_kernels.h")
    (tmp_path / "axpy_kernels.h").write_text(header)
    orch = compile_so(tmp_path, os.path.join(KERNELS, "axpy_orch.c"), "orch.so")
    ks = compile_so(tmp_path, os.path.join(KERNELS, "axpy_kernels.c"), "k.so")
    c = simpler.pack(orch, kernels=[(0, "aiv", ks, "axpy_scale", "ios"),
                                    (1, "aiv", ks, "axpy_add")], signature=AXPY_SIG)
    assert c.entry == "orchestration" and c.config is None and c.signature == AXPY_SIG
    assert c.kernels == (simpler.KernelInfo((0, "aiv", "axpy_scale", "ios")),
                         simpler.KernelInfo((1, "aiv", "axpy_add", None)))
    assert [a.name for a in c.args] == ["x", "y", "alpha"]
    # The same from bytes, and positional.
    again = simpler.pack(open(orch, "rb").read(), "orchestration",
                         [(0, "aiv", open(ks, "rb").read(), "axpy_scale", "ios"),
                          (1, "aiv", ks, "axpy_add")], None, AXPY_SIG)
    assert again.blob == c.blob
    no_sig = simpler.pack(orch, kernels=[(0, "aiv", ks, "axpy_scale"),
                                         (1, "aiv", ks, "axpy_add")])
    assert no_sig.signature is None and no_sig.args is None


def test_pack_refuses_with_named_statuses(tmp_path):
    (tmp_path / "axpy_kernels.h").write_text(simpler.kernels_header(
        [(0, "aiv", "axpy_scale"), (1, "aiv", "axpy_add")], signature=AXPY_SIG,
        name="axpy_kernels.h"))
    orch = compile_so(tmp_path, os.path.join(KERNELS, "axpy_orch.c"), "orch.so")
    ks = compile_so(tmp_path, os.path.join(KERNELS, "axpy_kernels.c"), "k.so")
    with pytest.raises(simpler.ModuleSymbolError, match="no_such_kernel"):
        simpler.pack(orch, kernels=[(0, "aiv", ks, "no_such_kernel")])
    with pytest.raises(simpler.ModuleSymbolError):
        simpler.pack(orch, entry="nope")
    with pytest.raises(simpler.BlobError):
        simpler.pack(orch, kernels=[(0, "aiv", ks, "axpy_scale"), (0, "aiv", ks, "axpy_add")])
    with pytest.raises(simpler.KernelLoadError):
        simpler.pack(orch, kernels=[(0, "aiv", b"\x7fELF not really", "axpy_scale")])
    with pytest.raises(simpler.SysError):
        simpler.pack(str(tmp_path / "missing.so"))
    with pytest.raises(simpler.InvalError):
        simpler.pack(orch, signature="x:in:f32[n],x:in:f32[n]")
    with pytest.raises(simpler.InvalError):
        simpler.pack(orch, kernels=[(0, "aiv", ks)])
