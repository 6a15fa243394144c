"""Compile streamlda's numba kernels into the image (the Dockerfile runs this at build time).

numba compiles the Gibbs, scoring and inference kernels on their first call: a minute or more
on two cores, at every container start, since a container's cache goes with it. A short
`streamlda train` on a synthetic corpus and the API's own warm-up fill NUMBA_CACHE_DIR once, in
the image, so the worker learns and the API answers soon after they start.
"""

from __future__ import annotations

import json
import random
import subprocess
import tempfile
from pathlib import Path

from service.api.infer.proportions import warm_up


def main() -> None:
    """Write 400 random documents, train K = 5 on them, then warm the API's inference."""
    rng = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    words = ["".join(rng.choices(letters, k=rng.randint(5, 9))) for _ in range(400)]
    with tempfile.TemporaryDirectory() as work:
        corpus = Path(work) / "warm.jsonl"
        with corpus.open("w") as out:
            for i in range(400):
                text = " ".join(rng.choices(words, k=80))
                out.write(json.dumps({"id": str(i), "title": f"t{i}", "text": text}) + "\n")
        command = ["streamlda", "train", "--source", f"jsonl:{corpus}", "--topics", "5"]
        command += ["--vocab-size", "300", "--docs", "400", "--heldout", "50", "--threads", "1"]
        subprocess.run([*command, "--out", str(Path(work) / "out")], check=True)
    warm_up()


if __name__ == "__main__":
    main()
