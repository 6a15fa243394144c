"""The Prometheus text exposition format (0.0.4), written by hand: a few gauges and counters."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Literal

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_INVALID = re.compile(r"[^a-zA-Z0-9_]")


def metric_name(*parts: str) -> str:
    """A valid metric name from free-form parts (anything else becomes ``_``)."""
    return _INVALID.sub("_", "_".join(p for p in parts if p))


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _number(value: float) -> str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return repr(float(value)) if not float(value).is_integer() else str(int(value))


@dataclass
class Metric:
    """One metric family: its name, help, type and labelled samples."""

    name: str
    help: str
    type: Literal["gauge", "counter"] = "gauge"
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, value: float, **labels: str) -> Metric:
        self.samples.append((labels, value))
        return self


def render(metrics: list[Metric]) -> str:
    """The exposition text of ``metrics`` (families without samples are left out)."""
    lines: list[str] = []
    for metric in metrics:
        if not metric.samples:
            continue
        lines.append(f"# HELP {metric.name} {_escape(metric.help)}")
        lines.append(f"# TYPE {metric.name} {metric.type}")
        for labels, value in metric.samples:
            label_text = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(labels.items()))
            suffix = f"{{{label_text}}}" if label_text else ""
            lines.append(f"{metric.name}{suffix} {_number(value)}")
    return "\n".join(lines) + "\n"
