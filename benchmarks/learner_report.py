"""The learner benchmark's report: the detail table, the time-to-quality table, the speed and
peer goals met or not, and the plot of perplexity against learner seconds."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from benchmarks.scorer import Point, Run

PAPER_S_PER_100 = 0.73  # Ma, Chen & Fox (2015): 0.73-0.82 s per 100 documents
TARGET_S_PER_100 = 0.08  # the speed goal: at least 9x faster than the paper
TARGET_GENSIM_RATIO = 2.0  # the speed goal: at least 2x gensim's tokens per second
# the peer goal at K = 50: perplexity <= 0.95x scikit-learn's, tokens/s >= these multiples
TARGET_SKLEARN_PPL = 0.95
TARGET_SKLEARN_SPEED = {"sgrld": 2.0, "sgrhmc": 1.5}
REFERENCES = ("gensim", "sklearn")  # the peers whose tokens/s the detail table divides by


def _cell(value: float | None, width: int, digits: int = 1) -> str:
    """``value`` right-aligned in ``width`` columns, or '-' for none or NaN."""
    if value is None or math.isnan(value):
        return f"{'-':>{width}s}"
    return f"{value:{width}.{digits}f}"


def _docs_label(docs: int) -> str:
    return f"{docs // 1000}k" if docs % 1000 == 0 else str(docs)


def format_table(runs: list[Run], eval_gamma: float) -> str:
    """A readable table: model x checkpoint, perplexities, speeds and ratios to the peers."""
    rates = {
        r.name: {p.docs: p.tokens_per_s for p in r.points}
        for r in runs
        if r.name in REFERENCES and r.points
    }
    width = max([8, *(len(r.name) for r in runs)])
    header = (
        f"{'model':{width}s} {'docs':>6s} {'ppl':>8s} {'ppl_mean':>8s} {'ppl_avg':>8s} "
        f"{'ppl_own':>8s} {'own_avg':>8s} {'s/100doc':>9s} {'tokens/s':>9s}"
        + "".join(f" {'x ' + name:>9s}" for name in rates)
        + f" {'x paper':>8s}"
    )
    lines = [
        f"perplexity: ppl/ppl_avg at the common gamma={eval_gamma:g}, ppl of streamlda's current "
        "sample; ppl_mean of its beta_mean (served); ppl_own/own_avg at each model's own prior",
        "x gensim / x sklearn = tokens/s over theirs at the same checkpoint; "
        f"x paper = {PAPER_S_PER_100} s/100 docs over ours",
        header,
        "-" * len(header),
    ]
    for run in runs:
        if run.error and not run.points:
            lines.append(f"{run.name:{width}s} FAILED: {run.error}")
        for p in run.points:
            ratios = "".join(
                " " + _cell(p.tokens_per_s / rate[p.docs] if p.docs in rate else None, 9, 2)
                for rate in rates.values()
            )
            lines.append(
                f"{run.name:{width}s} {p.docs:6d} {p.perplexity:8.1f} "
                f"{_cell(p.perplexity_mean, 8)} {p.perplexity_avg:8.1f} "
                f"{_cell(p.perplexity_own, 8)} {_cell(p.perplexity_own_avg, 8)} "
                f"{p.s_per_100_docs:9.4f} {p.tokens_per_s:9.0f}{ratios} "
                f"{PAPER_S_PER_100 / p.s_per_100_docs:8.1f}"
            )
        if run.error and run.points:
            lines.append(f"{run.name:{width}s} stopped: {run.error}")
    lines += [
        f"{run.name}: peak GPU memory {run.gpu_peak_mib:.0f} MiB ({run.device})"
        for run in runs
        if run.gpu_peak_mib is not None
    ]
    return "\n".join(lines)


def time_to_quality(runs: list[Run], checkpoints: list[int]) -> list[dict[str, Any]]:
    """Per system: served perplexity and learner seconds at each checkpoint; tokens/s, ns per
    token-sweep (Gibbs learners), prep seconds (tomotopy) and the last sample's perplexity
    (streamlda) at the last checkpoint."""
    rows = []
    for run in runs:
        if not run.points:
            continue
        at = {p.docs: p for p in run.points}
        last = run.points[-1]
        sweeps = last.tokens * run.sweeps if run.sweeps else 0
        rows.append(
            {
                "system": run.name,
                "family": run.family,
                "at": {
                    d: {"perplexity": at[d].served, "train_s": at[d].train_s, "npmi": at[d].npmi}
                    for d in checkpoints
                    if d in at
                },
                "tokens_per_s": last.tokens_per_s,
                "ns_per_token_sweep": 1e9 * last.train_s / sweeps if sweeps else None,
                "prep_s": last.prep_s if run.family == "tomotopy" else None,
                "sample_perplexity": None if last.perplexity_mean is None else last.perplexity,
            }
        )
    return rows


def format_time_to_quality(
    rows: list[dict[str, Any]], checkpoints: list[int], eval_gamma: float
) -> str:
    """The time-to-quality table: systems x checkpoints (perplexity, learner seconds)."""
    width = max([8, *(len(r["system"]) for r in rows)])
    columns = "".join(
        f" {'ppl@' + _docs_label(d):>9s} {'s@' + _docs_label(d):>8s}" for d in checkpoints
    )
    header = (
        f"{'system':{width}s}{columns} {'npmi':>7s} {'tokens/s':>9s} {'ns/tok-sweep':>12s} "
        f"{'prep_s':>7s} {'sample':>8s}"
    )
    lines = [
        f"time to quality: held-out perplexity (gamma={eval_gamma:g}) of the served estimate "
        "(streamlda: beta_mean; 'sample' = its current sample at the end) and learner seconds; "
        "npmi: the served estimate's mean NPMI (top 10 words, held-out documents) at the end",
        "tomotopy: a model per column, trained on the first documents (prep_s = add_doc + "
        "initialisation, not in s@); tokens/s and ns per token x sweep (or iteration) at the end",
        header,
        "-" * len(header),
    ]
    for row in rows:
        cells = "".join(
            f" {_cell(row['at'][d]['perplexity'], 9)} {_cell(row['at'][d]['train_s'], 8, 2)}"
            if d in row["at"]
            else f" {'-':>9s} {'-':>8s}"
            for d in checkpoints
        )
        last = row["at"][max(row["at"])] if row["at"] else {}
        lines.append(
            f"{row['system']:{width}s}{cells} {_cell(last.get('npmi'), 7, 3)} "
            f"{row['tokens_per_s']:9.0f} "
            f"{_cell(row['ns_per_token_sweep'], 12)} {_cell(row['prep_s'], 7, 2)} "
            f"{_cell(row['sample_perplexity'], 8)}"
        )
    return "\n".join(lines)


def targets(runs: list[Run], n_topics: int) -> dict[str, Any]:
    """How far the speed and peer goals are met at the last checkpoint of each streamlda run."""
    last = {r.name: r.points[-1] for r in runs if r.points}
    gensim, sklearn = last.get("gensim"), last.get("sklearn")
    out: dict[str, Any] = {}
    for run in runs:
        if run.family != "streamlda" or not run.points:
            continue
        p = run.points[-1]
        entry: dict[str, Any] = {
            "s_per_100_docs": p.s_per_100_docs,
            "meets_0.08_s_per_100": p.s_per_100_docs <= TARGET_S_PER_100,
        }
        if gensim is not None:
            entry["x_gensim_tokens_per_s"] = p.tokens_per_s / gensim.tokens_per_s
            entry["meets_2x_gensim"] = entry["x_gensim_tokens_per_s"] >= TARGET_GENSIM_RATIO
            entry["perplexity_below_gensim"] = p.perplexity < gensim.perplexity
        if sklearn is not None:
            entry.update(_sklearn_targets(p, sklearn, str(run.settings["sampler"]), n_topics))
        out[run.name] = entry
    return out


def _sklearn_targets(p: Point, sklearn: Point, sampler: str, n_topics: int) -> dict[str, Any]:
    """The peer goal against scikit-learn: at K=50 served perplexity <= 0.95x and tokens/s >= 2x
    (SGRLD) / 1.5x (SGRHMC); at other K (and for other samplers' speed) ahead on both."""
    speed_goal = TARGET_SKLEARN_SPEED.get(sampler, 1.0) if n_topics == 50 else 1.0
    ppl_goal = TARGET_SKLEARN_PPL if n_topics == 50 else 1.0
    speed = p.tokens_per_s / sklearn.tokens_per_s
    ratio = p.served / sklearn.served
    return {
        "x_sklearn_tokens_per_s": speed,
        "sklearn_speed_goal": speed_goal,
        "meets_sklearn_speed": speed >= speed_goal,
        "ppl_over_sklearn": ratio,
        "ppl_sample_over_sklearn": p.perplexity / sklearn.served,
        "sklearn_ppl_goal": ppl_goal,
        "meets_sklearn_ppl": ratio <= ppl_goal,
    }


def format_targets(summary: dict[str, Any]) -> str:
    """One line per streamlda run: the targets, met or not."""
    lines = [
        "targets at the last checkpoint: speed (<= 0.08 s/100 docs; >= 2x gensim tokens/s; "
        "sample ppl below gensim's); peers (served ppl <= 0.95x sklearn's and tokens/s >= 2x "
        "(sgrld) / 1.5x (sgrhmc) sklearn's at K=50; ahead of sklearn on both at other K):"
    ]
    width = max([7, *(len(name) for name in summary)])
    for name, t in summary.items():
        parts = [
            f"{t['s_per_100_docs']:.3f} s/100 docs "
            f"({'met' if t['meets_0.08_s_per_100'] else 'not met'})"
        ]
        if "x_gensim_tokens_per_s" in t:
            parts.append(
                f"{t['x_gensim_tokens_per_s']:.2f}x gensim "
                f"({'met' if t['meets_2x_gensim'] else 'not met'})"
            )
            parts.append(
                "ppl below gensim" if t["perplexity_below_gensim"] else "ppl NOT below gensim"
            )
        if "x_sklearn_tokens_per_s" in t:
            parts.append(
                f"ppl {t['ppl_over_sklearn']:.3f}x sklearn "
                f"(sample {t['ppl_sample_over_sklearn']:.3f}x; goal <= {t['sklearn_ppl_goal']:g}: "
                f"{'met' if t['meets_sklearn_ppl'] else 'not met'})"
            )
            parts.append(
                f"{t['x_sklearn_tokens_per_s']:.2f}x sklearn tokens/s (goal >= "
                f"{t['sklearn_speed_goal']:g}: {'met' if t['meets_sklearn_speed'] else 'not met'})"
            )
        lines.append(f"  {name:{width}s} " + "; ".join(parts))
    return "\n".join(lines)


def write_plot(runs: list[Run], path: Path, title: str) -> None:
    """PNG of served held-out perplexity against learner seconds (log), a line per system."""
    from matplotlib.figure import Figure  # a bare Figure renders with Agg: no pyplot, no GUI

    fig = Figure(figsize=(10, 6.5), layout="constrained")
    ax = fig.subplots()
    markers = "osD^v<>phP*X"
    for i, run in enumerate(r for r in runs if r.points):
        (line,) = ax.plot(
            [p.train_s for p in run.points],
            [p.served for p in run.points],
            marker=markers[i % len(markers)],
            label=run.name,
        )
        if run.curve:
            ax.plot(
                [p.train_s for p in run.curve],
                [p.perplexity for p in run.curve],
                linestyle=":",
                marker=".",
                color=line.get_color(),
                label=f"{run.family} on {run.curve[0].docs} docs, by iteration",
            )
    ax.set_xscale("log")
    ax.set_xlabel("learner seconds (log scale)")
    ax.set_ylabel("held-out perplexity")
    ax.set_title(title, fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    fig.savefig(path, dpi=120)
