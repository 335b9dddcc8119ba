"""SASS of run-time CUDA sources for sm_90 (the H100/H200), compiled with nvcc and read with
nvdisasm (the test extra ``nvidia-cuda-nvdisasm``), so kernels can be checked without a GPU."""
from __future__ import annotations

import glob
import importlib.util
import os
import re
import shutil
import subprocess

import pytest

_INSTRUCTION = re.compile(r"/\*[0-9a-f]+\*/\s+(.*?)\s*;")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_BRANCH = re.compile(r"BRA\s+`\((\.L_x_\d+)\)")


def nvdisasm() -> str | None:
    """nvdisasm on PATH, else the one the ``nvidia-cuda-nvdisasm`` wheel installs."""
    found = shutil.which("nvdisasm")
    spec = importlib.util.find_spec("nvidia")
    if found is None and spec is not None:
        for root in spec.submodule_search_locations or []:
            found = next(iter(sorted(glob.glob(os.path.join(root, "*", "bin", "nvdisasm")))), None)
            if found:
                break
    return found


def parse_sass(text: str) -> dict[str, "Sass"]:
    """``{kernel: Sass}`` from ``nvdisasm -c`` output."""
    kernels: dict[str, list[tuple[str, str]]] = {}
    current = None
    for line in text.splitlines():
        section = re.match(r"\s*\.section\s+\.text\.(\w+),", line)
        if section:
            current = kernels.setdefault(section.group(1), [])
        elif current is not None and _LABEL.match(line.strip()):
            current.append(("label", _LABEL.match(line.strip()).group(1)))
        elif current is not None and _INSTRUCTION.search(line):
            current.append(("op", _INSTRUCTION.search(line).group(1)))
    return {name: Sass(lines) for name, lines in kernels.items()}


class Sass:
    """One kernel's SASS: its opcodes, and the opcodes of each loop (a label up to a later
    branch back to it)."""

    def __init__(self, lines: list[tuple[str, str]]):
        self.lines = lines

    @property
    def opcodes(self) -> list[str]:
        return [opcode(t) for k, t in self.lines if k == "op"]

    def loops(self) -> list[list[str]]:
        out = []
        for end, (kind, text) in enumerate(self.lines):
            target = _BRANCH.search(text) if kind == "op" else None
            if target:
                start = next((i for i, (k, t) in enumerate(self.lines[:end])
                              if k == "label" and t == target.group(1)), None)
                if start is not None:
                    out.append([opcode(t) for k, t in self.lines[start:end + 1] if k == "op"])
        return out

    def loop_with(self, op: str) -> list[str]:
        """The smallest loop containing opcode ``op`` (e.g. the element loop: the one storing
        ``out[i]`` with ``STG``); fails when no loop contains it."""
        found = [body for body in self.loops() if op in body]
        assert found, f"no loop contains {op}: {self.opcodes}"
        return min(found, key=len)


def opcode(instruction: str) -> str:
    """``LDS`` of ``@P0 LDS.U R7, [R4]``."""
    words = instruction.split()
    return (words[1] if words[0].startswith("@") else words[0]).split(".")[0]


@pytest.fixture(scope="session")
def sass(tmp_path_factory):
    """``compile(source) -> {kernel: Sass}`` for sm_90 (the kernels inside ``extern "C"``,
    as pycuda compiles them); skips without nvcc or nvdisasm."""
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on PATH")
    disassembler = nvdisasm()
    if disassembler is None:
        pytest.skip("no nvdisasm: pip install nvidia-cuda-nvdisasm (in nitro's test extra)")
    folder = tmp_path_factory.mktemp("sass")

    def compile_(source: str) -> dict:
        src, cubin = folder / "kernels.cu", folder / "kernels.cubin"
        src.write_text('extern "C" {\n' + source + "\n}\n")
        run = subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-o", str(cubin), str(src)],
                             capture_output=True, text=True, timeout=300)
        assert run.returncode == 0, run.stderr
        assert "warning" not in run.stderr, run.stderr   # pycuda would repeat compiler warnings to users
        dis = subprocess.run([disassembler, "-c", str(cubin)], capture_output=True, text=True, timeout=120)
        assert dis.returncode == 0, dis.stderr
        return parse_sass(dis.stdout)
    return compile_
