"""The GPU backend the tests in this folder run on: `TILEC_TEST_BACKEND` where it names one
(`TILEC_TEST_BACKEND=amd pytest -m gpu tests/gpu` on a ROCm machine), else nvidia."""

from tilec import settings

GPU_BACKENDS = {"nvidia": "an NVIDIA GPU", "amd": "an AMD GPU"}
BACKEND = settings.TEST_BACKEND.get() or "nvidia"
if BACKEND not in GPU_BACKENDS:
    BACKEND = "nvidia"
