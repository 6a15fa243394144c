"""The GPU check's summary: a few lines a person reads first, from its result lines."""

from __future__ import annotations

from typing import Any


def summary(records: list[dict[str, Any]]) -> str:
    """A few lines a person reads first: which parts failed, then each part's figures."""
    end = records[-1]
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_kind.setdefault(record["kind"], []).append(record)
    statuses = by_kind.get("part", [])
    lines = [
        f"GPU check ({end['mode']}) reached the end in {end['seconds']:.0f} s: "
        f"{len(end['parts_ok'])} of {len(statuses)} parts ok"
        + (f"; FAILED: {', '.join(end['parts_failed'])}" if end["parts_failed"] else "")
    ]
    for status in statuses:
        mark = "ok  " if status["ok"] else "FAIL"
        extra = "" if status["ok"] else f": {status['error']}"
        lines.append(f"  {mark} {status['part']:<8} {status['seconds']:6.1f} s{extra}")
    for device in by_kind.get("device", []):
        lines.append(
            f"device: {device.get('name')}; driver {device.get('driver')}; torch "
            f"{device.get('torch')} (CUDA {device.get('torch_cuda')}); numba {device.get('numba')}"
            f", numba-cuda {device.get('numba_cuda')}; NVVM {device.get('nvvm')}; CUDA kernels "
            f"usable: {device.get('cuda_kernels')}"
        )
    for tests in by_kind.get("tests", []):
        lines.append(
            f"tests ({tests['on']}): {tests['passed']} passed, {tests['failed']} failed, "
            f"{tests['errors']} errors, {tests['skipped']} skipped"
            + "".join(f"\n  failed: {name}" for name in tests["failures"])
        )
    kernels = by_kind.get("kernel", [])
    if kernels:
        lines.append("kernels: ns per token-sweep (docs per minibatch), peak device MiB")
        cells: dict[tuple[int, int], list[str]] = {}
        for k in kernels:
            peak = "" if k["peak_mib"] is None else f", {k['peak_mib']:.0f} MiB"
            cells.setdefault((k["words"], k["topics"]), []).append(
                f"{k['backend']} {k['kernel']} {k['ns_per_token_sweep']:.1f} ({k['docs']}{peak})"
            )
        for (words, topics), parts in cells.items():
            lines.append(f"  W={words} K={topics}: " + "; ".join(parts))
    for run_ in by_kind.get("learner", []):
        marks = ", ".join(f"{p['docs']}: {p['perplexity']:.1f}" for p in run_["checkpoints"])
        early = " (stopped at its time budget)" if run_["stopped_early"] else ""
        peak = "" if run_["peak_mib"] is None else f", peak {run_['peak_mib']:.0f} MiB"
        gibbs = ", ".join(run_["gibbs"])
        lines.append(
            f"learner K={run_['topics']} W={run_['words']} {run_['dtype']} on {run_['device']} "
            f"({gibbs}): {run_['docs']} docs at {run_['docs_per_s']:.1f} docs/s{early}; "
            f"served perplexity at {marks}{peak}"
        )
    for up in by_kind.get("up", []):
        lines.append(
            f"up on {up['device']}: {up['docs_seen']} docs in {up['window_s']:.0f} s, fresh "
            f"{up['fresh_docs_per_s']:.1f} docs/s, worker {up['worker_docs_per_s']:.1f} docs/s "
            f"(median of /stats); /topics served {up['topics_served']} topics"
        )
    for skipped in by_kind.get("skipped", []):
        lines.append(f"skipped: {skipped['what']}")
    for error in by_kind.get("error", []):
        lines.append(f"error in {error['what']}: {error['error'][:300]}")
    for status in statuses:
        if not status["ok"] and status["output_tail"]:
            tail = status["output_tail"].strip().splitlines()[-12:]
            lines.append(f"{status['part']} ended with:")
            lines.extend(f"  | {line}" for line in tail)
    return "\n".join(lines) + "\n"
