"""`tilec.autotune`, `tilec.Config`, `tilec.heuristics`: Triton's autotuner and heuristics, with
configs compiled in parallel and timings kept on disk (see `tuner`, `store`, `parallel`)."""

from tilec.runtime.autotune.checks import AutotuneKeyWarning
from tilec.runtime.autotune.config import Config, Heuristics, HeuristicsWarning, heuristics
from tilec.runtime.autotune.tuner import Autotuner, autotune

__all__ = [
    "AutotuneKeyWarning",
    "Autotuner",
    "Config",
    "Heuristics",
    "HeuristicsWarning",
    "autotune",
    "heuristics",
]
