"""The GPU backend the tests in this folder run on: `TILEC_TEST_BACKEND` where it names one
(`TILEC_TEST_BACKEND=amd pytest -m gpu tests/gpu` on a ROCm machine), else nvidia."""

import os

GPU_BACKENDS = {"nvidia": "an NVIDIA GPU", "amd": "an AMD GPU"}
BACKEND = os.environ.get("TILEC_TEST_BACKEND", "nvidia")
if BACKEND not in GPU_BACKENDS:
    BACKEND = "nvidia"
