"""Run an ONNX model on another CPU than this one: ONNX Runtime picks its int8 kernels from the
CPU's CPUID (AMX, AVX512-VNNI, AVX-VNNI, AVX2, ...), so a test that wants each kernel forced runs
the session under QEMU's user-mode emulator with a CPU model that lacks the newer instructions.

``Haswell-noTSX`` declares AVX2 and no VNNI: the u8s8 kernel there sums pairs of products in 16
bits (``vpmaddubsw``), which saturates on full-range int8 weights, and is what an AVX2-only machine
runs. QEMU 7.2 emulates AVX2 but not AVX-512 or VNNI, so the VNNI/AMX kernels run only natively
(where this machine has them). The emulator is Debian's ``qemu-user`` (installed by .ci/run)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

QEMU = "qemu-x86_64"
CPU_MODELS = {"native": None, "avx2": "Haswell-noTSX"}   # kernel -> the QEMU CPU model that forces it

_RUN = """
import sys, numpy as np, onnxruntime as ort
so = ort.SessionOptions(); so.intra_op_num_threads = 1
s = ort.InferenceSession(sys.argv[1], so, providers=["CPUExecutionProvider"])
feed = dict(np.load(sys.argv[2]))
np.save(sys.argv[3], s.run(None, feed)[0])
"""


def emulator_or_skip() -> str:
    """The emulator's path; a skip where it is missing (a failure where KGNORM_REQUIRE_QEMU=1)."""
    path = shutil.which(QEMU)
    if path is None:
        if os.environ.get("KGNORM_REQUIRE_QEMU") == "1":
            pytest.fail(f"{QEMU} not found (apt-get install qemu-user)")
        pytest.skip(f"{QEMU} not installed: the AVX2 kernel cannot be forced here")
    return path


def run_onnx(model: str | Path, feed: dict[str, np.ndarray], kernel: str, tmp: Path) -> np.ndarray:
    """The first output of the ONNX `model` on `feed`, run on this CPU (`kernel` native) or on the
    emulated CPU model of `kernel` (a separate process)."""
    cpu = CPU_MODELS[kernel]
    if cpu is None:
        import onnxruntime as ort

        so = ort.SessionOptions()
        so.intra_op_num_threads = 1
        return ort.InferenceSession(str(model), so, providers=["CPUExecutionProvider"]).run(None, feed)[0]
    qemu = emulator_or_skip()
    np.savez(tmp / "feed.npz", **feed)
    out = tmp / "out.npy"
    done = subprocess.run([qemu, "-cpu", cpu, sys.executable, "-c", _RUN, str(model), str(tmp / "feed.npz"), str(out)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return np.load(out)
