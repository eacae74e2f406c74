"""docs/USAGE.md section 10 (Python), followed literally: every ```python
block of the section runs as written, in a directory of its own, outside
the tree; a block with a "# prints: X" line must print X; the scene-test
block runs under pytest as the text says (its case count checked); the sh
block's build-tree import and the quickstart line run with the build
tree's package standing in for the installed one (install/check_install
covers the prefix)."""
import os
import re
import subprocess
import sys

import pytest

SRC = os.environ.get("SP_TEST_SOURCE_DIR") or os.path.dirname(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
USAGE = os.path.join(SRC, "docs", "USAGE.md")


def section_10():
    text = open(USAGE, encoding="utf-8").read()
    start = text.index("\n## 10. Python")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def blocks(lang):
    return re.findall(rf"```{lang}\n(.*?)```", section_10(), re.S)


def run(cmd, cwd):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, SIMPLER_CACHE_DIR=str(cwd / "cache")))


def test_the_section_has_its_blocks():
    assert len(blocks("python")) >= 3 and len(blocks("sh")) >= 1


@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_python_block_runs_as_written(index, tmp_path):
    code = blocks("python")[index]
    if "class Test" in code and "SceneTest" in code:
        # The scene-test block: saved as the text says and run under pytest.
        (tmp_path / "test_vector.py").write_text(code)
        r = run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                 "test_vector.py"], tmp_path)
        assert r.returncode == 0, r.stdout + r.stderr
        said = re.search(r"`(\d+) passed`", section_10())
        assert said and f"{said.group(1)} passed" in r.stdout, r.stdout
        return
    (tmp_path / "block.py").write_text(code)
    r = run([sys.executable, "block.py"], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    for want in re.findall(r"^# prints: (.*)$", code, re.M):
        assert want.strip() in r.stdout, (want, r.stdout)


def test_sh_block_build_tree_lines(tmp_path):
    """Every PYTHONPATH= line of the sh block, with the build tree's package
    standing in for the prefix's, and the output the block shows."""
    sh = blocks("sh")[0]
    lines = [ln for ln in sh.splitlines() if ln.startswith("PYTHONPATH=")]
    assert any(ln.startswith("PYTHONPATH=$SIMPLER_SRC/build/python ") for ln in lines), sh
    env = dict(os.environ, SIMPLER_SRC=SRC, SIMPLER_CACHE_DIR=str(tmp_path / "cache"))
    printed = ""
    for ln in lines:
        cmd = re.sub(r"^PYTHONPATH=\S+ ", "", ln.split("  #")[0].strip())
        r = subprocess.run(["/bin/sh", "-c", cmd], cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=300)
        assert r.returncode == 0, (cmd, r.stdout + r.stderr)
        printed += r.stdout
    shown = [ln[2:] for ln in sh.splitlines() if ln.startswith("# ")]
    assert shown and all(s in printed for s in shown), (shown, printed)
