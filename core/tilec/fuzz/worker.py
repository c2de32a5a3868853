"""The child process that runs the fuzzer's checks: `python -m tilec.fuzz.worker MODE`.

It reads one request a line on stdin (a base64 pickle of a `Program`) and answers one JSON line
on its own copy of stdout (`{"finding": null}` or the finding's fields); everything the compiler
prints goes to stderr. An LLVM abort or a hang ends or stalls this process, not the campaign,
which reports the kernel it was given (`tilec.fuzz.campaign.Worker`).
"""

from __future__ import annotations

import base64
import json
import os
import pickle
import sys

from tilec.fuzz.check import run_check


def main(mode: str) -> None:
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    sys.stdout = sys.stderr
    for line in sys.stdin:
        program = pickle.loads(base64.b64decode(line))
        try:
            finding = run_check(mode, program)
        except Exception as err:  # a bug of the fuzzer itself: report it as one too
            finding = None
            answer = {"kind": "harness", "key": type(err).__name__, "message": repr(err)}
        else:
            answer = None if finding is None else {
                "kind": finding.kind, "key": finding.key, "message": finding.message,
            }  # fmt: skip
        replies.write(json.dumps({"finding": answer}) + "\n")
        replies.flush()


if __name__ == "__main__":
    main(sys.argv[1])
