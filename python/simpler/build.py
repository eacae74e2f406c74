"""Callables from C sources: build_callable, and where simpler's files are.

build_callable compiles an orchestration and its kernels with the system C
compiler the way cmake/SimplerCallable.cmake's simpler_add_callable does
(each source a -fvisibility=hidden shared object; the orchestration sees
"<name>_kernels.h", the header `simpler pack --header` writes) and packs
them into a Callable (simpler.pack). Results are cached by content hash:
the key covers simpler's version, the compiler, the flags, the signature,
the kernel table and every source's bytes, and a hit is re-validated
against the files the compiler recorded as read (cc -MD), so an edited
#include'd header rebuilds. Cache entries are written atomically.
"""
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile

from . import _paths, _simpler
from .errors import CompileError

__all__ = ["build_callable", "examples_dir", "example", "include_dir", "cache_dir"]

#: Compiler invocations build_callable has made in this process (a cache
#: hit makes none): for tests and for the curious.
compile_count = 0

_CFLAGS = ("-std=gnu11", "-O2", "-fPIC", "-shared", "-fvisibility=hidden")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Bumped when the layout of a cache entry changes.
_CACHE_FORMAT = "1"


def include_dir():
    """simpler's public headers (the directory holding simpler/kernel.h)."""
    return _paths.INCLUDE_DIR


def examples_dir():
    """Where the example callables (<name>.spc) are."""
    return _paths.EXAMPLES_DIR


def example(name):
    """The example callable `name` ("vector_example", ...), loaded."""
    path = os.path.join(examples_dir(), name + ".spc")
    if not os.path.isfile(path):
        known = sorted(f[:-4] for f in os.listdir(examples_dir()) if f.endswith(".spc")) \
            if os.path.isdir(examples_dir()) else []
        raise _invalid(f"no example callable '{name}' in {examples_dir()} "
                       f"(known: {', '.join(known) or 'none'})")
    return _simpler.Callable.load(path)


def cache_dir(explicit=None):
    """The build cache: `explicit`, else $SIMPLER_CACHE_DIR, else
    $XDG_CACHE_HOME/simpler, else ~/.cache/simpler."""
    if explicit:
        return os.fspath(explicit)
    if os.environ.get("SIMPLER_CACHE_DIR"):
        return os.environ["SIMPLER_CACHE_DIR"]
    if os.environ.get("XDG_CACHE_HOME"):
        return os.path.join(os.environ["XDG_CACHE_HOME"], "simpler")
    return os.path.join(os.path.expanduser("~"), ".cache", "simpler")


def _invalid(message):
    from .errors import by_name
    cls = by_name["SP_EINVAL"]
    return cls(cls.status, message)


def _compiler(cc):
    """The compiler command as a list (cc, else $CC, else simpler's own)."""
    text = cc or os.environ.get("CC") or _paths.C_COMPILER
    words = shlex.split(text) if isinstance(text, str) else [os.fspath(w) for w in text]
    if not words:
        raise _invalid("no C compiler: pass cc=, set CC, or rebuild simpler")
    exe = words[0]
    if os.sep not in exe:
        found = shutil.which(exe)
        if not found:
            raise _invalid(f"C compiler '{exe}' not found on PATH")
        words[0] = found
    return words


def _kernel_table(kernels):
    """[(func_id, core, name, source, sig)] from build_callable's kernels."""
    table = []
    for func_id, item in enumerate(kernels):
        if not isinstance(item, (tuple, list)) or len(item) not in (3, 4):
            raise _invalid(f"kernel {func_id}: expected (name, core, source[, sig]), got {item!r}")
        name, core, source = item[0], item[1], os.fspath(item[2])
        sig = item[3] if len(item) == 4 else None
        if not isinstance(name, str) or not _IDENT.match(name):
            raise _invalid(f"kernel {func_id}: name {name!r} is not a C identifier")
        if core not in ("aic", "aiv"):
            raise _invalid(f"kernel '{name}': core {core!r} is not 'aic' or 'aiv'")
        if not os.path.isfile(source):
            raise _invalid(f"kernel '{name}': source {source} not found")
        table.append((func_id, core, name, os.path.abspath(source), sig))
    return table


def _file_digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def _parse_depfile(path):
    """The prerequisites of a make-style dependency file (cc -MD -MF)."""
    with open(path) as f:
        text = f.read().replace("\\\n", " ")
    files = []
    for line in text.splitlines():
        _target, sep, deps = line.partition(": ")
        if not sep:
            continue
        # Escaped spaces stay inside one name.
        for word in re.split(r"(?<!\\)\s+", deps.strip()):
            if word:
                files.append(word.replace("\\ ", " "))
    return files


def _deps_valid(deps):
    """Every recorded dependency still has its recorded content."""
    for path, rec in deps.items():
        try:
            st = os.stat(path)
        except OSError:
            return False
        if st.st_size == rec["size"] and st.st_mtime_ns == rec["mtime_ns"]:
            continue
        if st.st_size != rec["size"] or _file_digest(path) != rec["sha256"]:
            return False
    return True


def _compile(cmd):
    global compile_count
    compile_count += 1
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError as e:
        raise CompileError(message=f"cannot run the C compiler {cmd[0]}: {e}") from None
    if proc.returncode != 0:
        raise CompileError(message=f"{shlex.join(cmd)} failed (exit {proc.returncode}):\n"
                           f"{proc.stderr.strip()}")


def build_callable(orchestration, kernels=(), entry="orchestration", config=None,
                   signature=None, name=None, cflags=(), include_dirs=(), cc=None,
                   cache_dir=None):
    """Compile `orchestration` and `kernels` (C sources) into a Callable.

    kernels: (name, core, source) or (name, core, source, sig) items; a
    kernel's func_id is its position and its SP_KERNEL symbol is its name.
    The orchestration includes "<name>_kernels.h" (name: `name`, default the
    orchestration file's stem) for SP_FUNC_<kernel> and, with a
    `signature`, SP_ARG_<arg> / SP_SCALAR_<arg>. A compile failure raises
    simpler.CompileError with the compiler's message.
    """
    orchestration = os.path.abspath(os.fspath(orchestration))
    if not os.path.isfile(orchestration):
        raise _invalid(f"orchestration source {orchestration} not found")
    if name is None:
        name = re.sub(r"\W", "_", os.path.splitext(os.path.basename(orchestration))[0])
    if not _IDENT.match(name):
        raise _invalid(f"name {name!r} is not a C identifier")
    table = _kernel_table(kernels)
    compiler = _compiler(cc)
    user_flags = [f"-I{os.path.abspath(os.fspath(d))}" for d in include_dirs]
    user_flags += [os.fspath(f) for f in cflags]
    base_flags = list(_CFLAGS) + [f"-I{include_dir()}"]

    # The header every build of this key writes (the kernel table and the
    # signature are in the key, so its text is too).
    header_name = f"{name}_kernels.h"
    header = _simpler.kernels_header(kernels=[(k[0], k[1], k[2]) for k in table],
                                     signature=signature, name=header_name)

    key = hashlib.sha256()
    for part in (_CACHE_FORMAT, _simpler.VERSION, *compiler, "\0", *base_flags, "\0",
                 *user_flags, "\0", entry, config or "", signature or "", name, header):
        key.update(part.encode() + b"\0")
    sources = [orchestration] + sorted({k[3] for k in table})
    for func_id, core, kname, source, sig in table:
        key.update(f"{func_id}:{core}:{kname}:{sig or ''}:{source}\0".encode())
    for source in sources:
        key.update(_file_digest(source).encode())
    digest = key.hexdigest()[:40]

    cache = os.path.abspath(build_cache_dir(cache_dir))
    spc_path = os.path.join(cache, f"{name}-{digest}.spc")
    deps_path = os.path.join(cache, f"{name}-{digest}.deps.json")
    hit = _load_hit(spc_path, deps_path)
    if hit is not None:
        return hit

    os.makedirs(cache, exist_ok=True)
    work = tempfile.mkdtemp(prefix=f".{name}-", dir=cache)
    try:
        with open(os.path.join(work, header_name), "w") as f:
            f.write(header)
        deps = set()

        def build_one(source, out):
            depfile = out + ".d"
            _compile(compiler + base_flags + [f"-I{work}"] + user_flags +
                     ["-MD", "-MF", depfile, "-o", out, source, "-lm"])
            deps.update(os.path.abspath(p) for p in _parse_depfile(depfile))

        orch_so = os.path.join(work, "orchestration.so")
        build_one(orchestration, orch_so)
        objects = {}
        for i, source in enumerate(sources[1:]):
            objects[source] = os.path.join(work, f"k{i}.so")
            build_one(source, objects[source])
        specs = []
        for func_id, core, kname, source, sig in table:
            spec = (func_id, core, objects[source], kname)
            specs.append(spec + (sig,) if sig is not None else spec)
        callable_ = _simpler.pack(orch_so, entry=entry, kernels=specs, config=config,
                                  signature=signature)
        # Recorded: what the compiler read, but not the generated header
        # (its text is part of the key) nor anything else in `work`.
        record = {}
        for path in sorted(deps):
            if path.startswith(work + os.sep):
                continue
            st = os.stat(path)
            record[path] = {"size": st.st_size, "mtime_ns": st.st_mtime_ns,
                            "sha256": _file_digest(path)}
        tmp_spc = os.path.join(work, "callable.spc")
        callable_.save(tmp_spc)
        tmp_deps = os.path.join(work, "deps.json")
        with open(tmp_deps, "w") as f:
            json.dump({"format": _CACHE_FORMAT, "deps": record}, f)
        # The blob first, then the record that makes it a hit.
        os.replace(tmp_spc, spc_path)
        os.replace(tmp_deps, deps_path)
        return callable_
    finally:
        shutil.rmtree(work, ignore_errors=True)


build_cache_dir = cache_dir


def _load_hit(spc_path, deps_path):
    """The cached callable, or None when absent or a dependency changed."""
    try:
        with open(deps_path) as f:
            record = json.load(f)
        if record.get("format") != _CACHE_FORMAT or not _deps_valid(record["deps"]):
            return None
        return _simpler.Callable.load(spc_path)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    except Exception as e:  # a damaged entry (CallableError): rebuild it
        from .errors import Error
        if isinstance(e, Error):
            return None
        raise
