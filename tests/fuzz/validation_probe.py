"""A pytest plugin (`-p validation_probe`) for a test session run with
`TILEC_VALIDATE_PASSES=1`: counts the kernels translation validation checked and skipped, and
prints the totals when the session ends (`test_validation.py` reads them)."""

from __future__ import annotations

from tilec.pipeline.validation import ValidatePasses

totals = {"kernels": 0, "passes": 0, "skipped": 0}
_after_pipeline = ValidatePasses.after_pipeline


def _count(self, module, changed):
    totals["kernels"] += len(self.checked)
    totals["passes"] += sum(self.checked.values())
    totals["skipped"] += len(self.skipped)
    _after_pipeline(self, module, changed)


ValidatePasses.after_pipeline = _count


def pytest_unconfigure(config):
    print(
        f"\nVALIDATION kernels={totals['kernels']} passes={totals['passes']} "
        f"skipped={totals['skipped']}"
    )
