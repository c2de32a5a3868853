"""The device rules behind `tilec_nvidia.tma_store.exact` (why a block is sometimes the masked
store): each case stores every block through TMA (`exact` patched to hold; tma_store_probe.py,
a process a case, as a trap ruins the CUDA context) and checks that TMA then does not write
what the mask holds, as the rule says. A case that comes out exact means the rule is not the
device's: `exact` may then take such blocks (a speed-up, not a bug). Needs an sm_90 device:
`pytest -m gpu tests/nvidia/test_tma_store_rules_gpu.py`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

PROBE = Path(__file__).with_name("tma_store_probe.py")

RULES = [
    # element, rows, columns, block, row shift, column shift (negative: after the origin); rule
    (("fp32", 70, 90, 32, 64, 0, 0), "past"),  # 360-byte rows: columns 90 and 91 written
    (("i8", 40, 300, 16, 128, 0, 0), "past"),  # 300-byte rows: columns 300 to 303
    (("i8", 33, 320, 16, 128, 1, 0), "trap"),  # a block starting a row before the tensor
    (("fp16", 64, 192, 64, 64, 0, -4), "trap"),  # an innermost coordinate 8 bytes into a chunk
]


@pytest.mark.parametrize(("case", "rule"), RULES)
def test_tma_stores_are_not_the_masked_store_where_exact_refuses_them(tmp_path, case, rule):
    pytest.importorskip("torch", reason="needs PyTorch")
    env = {**os.environ, "TILEC_NVIDIA_TMA": "1", "TILEC_CACHE_DIR": str(tmp_path / "cache")}
    args = [str(a) for a in case]
    result = subprocess.run([sys.executable, str(PROBE), *args], capture_output=True,
                            text=True, timeout=600, check=False, env=env, cwd=PROBE.parent)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["outcome"] != "exact", (
        f"{case}: TMA stored exactly; the {rule} rule is not the device's"
    )
    if report["outcome"] == "trap":  # the device's error, not another failure of the probe
        device_errors = ("illegal instruction", "misaligned", "launch failure", "illegal address")
        assert any(e in report["error"].lower() for e in device_errors), report
    if rule == "past":  # the elements up to the next 16-byte boundary, nothing else
        assert report["outcome"] == "differs" and report["inside"] == 0, report
        element_bytes = {"fp32": 4, "fp16": 2, "i8": 1}[case[0]]
        edge = case[2] * element_bytes
        assert report["past"] == list(range(edge, -(-edge // 16) * 16)), report
