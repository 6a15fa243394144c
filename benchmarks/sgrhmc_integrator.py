"""How faithfully the shipped SGRHMC step keeps known laws (BENCHMARKS.md, "SGRHMC's
integrator").

``gamma``: one coordinate per chain and no data, so the target is theta ~ Gamma(alpha, 1);
prints quantiles of the ensemble as it runs (start at the target or at theta = 1).
``row``: one row of W = 3 words with fixed statistics (N/n) E[n_kw] = (2, 0.5, 0); the target is
beta ~ Dirichlet(alpha + statistics), theta_k. ~ Gamma(3 alpha); prints averages over the second
half of the run.

    .venv/bin/python -m benchmarks.sgrhmc_integrator gamma --alpha 0.1 --eps 0.02 --steps 2000
    .venv/bin/python -m benchmarks.sgrhmc_integrator row --alpha 0.3 --eps 0.01 --steps 8000
    .venv/bin/python -m benchmarks.sgrhmc_integrator row --alpha 1 --friction 1000 --steps 3000
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import torch

from lda.sgmcmc.gradient import MinibatchStatistics
from lda.sgmcmc.samplers import Hyper, SamplerState, step

QUANTILES = (0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 0.999)
ROW_STATISTICS = (2.0, 0.5, 0.0)


def gamma_check(
    alpha: float, eps: float, steps: int, chains: int, start: str, friction: float
) -> None:
    """Quantiles of theta against Gamma(alpha, 1) every quarter of the run."""
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(1)
    shape = torch.full((chains, 1), alpha, dtype=torch.float64)
    if start == "target":
        theta = torch.distributions.Gamma(shape, 1.0).sample()
    else:
        theta = torch.ones(chains, 1, dtype=torch.float64)
    state = SamplerState(theta, torch.randn(chains, 1, generator=g, dtype=torch.float64))
    stats = MinibatchStatistics(torch.zeros(chains, 1, dtype=torch.float64), scale=1.0)
    qs = torch.tensor(QUANTILES, dtype=torch.float64)
    truth = torch.distributions.Gamma(shape[:, 0], 1.0).sample()
    print("quantiles", " ".join(f"{q:g}" for q in QUANTILES))
    print("truth     ", " ".join(f"{x:.3g}" for x in torch.quantile(truth, qs).tolist()))
    for i in range(steps):
        state, _ = step("sgrhmc", state, stats, Hyper(alpha, 0.01, friction), eps, g)
        if (i + 1) % max(steps // 4, 1) == 0:
            values = torch.quantile(state.theta[:, 0], qs).tolist()
            print(f"step {i + 1:6d}", " ".join(f"{x:.3g}" for x in values))


def row_check(
    alpha: float, eps: float, steps: int, chains: int, start: str, friction: float
) -> None:
    """E[beta], E[theta_k.] over the second half against the Dirichlet and Gamma laws."""
    torch.manual_seed(1)
    g = torch.Generator().manual_seed(0)
    data = torch.tensor(ROW_STATISTICS, dtype=torch.float64)
    w = data.numel()
    if start == "target":
        rows = torch.distributions.Gamma(
            torch.full((chains,), w * alpha, dtype=torch.float64), 1.0
        ).sample()
        theta = (
            rows[:, None] * torch.distributions.Dirichlet((alpha + data).expand(chains, w)).sample()
        )
    else:
        theta = -torch.log1p(-torch.rand(chains, w, generator=g, dtype=torch.float64))
    state = SamplerState(theta, torch.randn(chains, w, generator=g, dtype=torch.float64))
    stats = MinibatchStatistics(data.expand(chains, w).contiguous(), scale=1.0)
    beta_sum = torch.zeros(w, dtype=torch.float64)
    row_sum = 0.0
    kept = 0
    for i in range(steps):
        state, _ = step("sgrhmc", state, stats, Hyper(alpha, 0.01, friction), eps, g)
        if i >= steps // 2:
            rows = state.theta.sum(dim=1)
            beta_sum += (state.theta / rows[:, None]).mean(dim=0)
            row_sum += float(rows.mean())
            kept += 1
    target = (alpha + data) / (alpha + data).sum()
    print(f"E[beta]      {' '.join(f'{x:.3f}' for x in (beta_sum / kept).tolist())}")
    print(f"truth        {' '.join(f'{x:.3f}' for x in target.tolist())}")
    print(f"E[theta_k.]  {row_sum / kept:.3f}   truth {w * alpha:.3f}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("check", choices=["gamma", "row"])
    parser.add_argument("--alpha", type=float, default=0.1)
    parser.add_argument("--eps", type=float, default=0.02)
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--chains", type=int, default=None, help="200,000 (gamma) or 4,000 (row)")
    parser.add_argument("--start", choices=["target", "away"], default="target")
    parser.add_argument("--friction", type=float, default=1.0, help="C in D = C diag(theta)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    run = gamma_check if args.check == "gamma" else row_check
    chains = args.chains or (200_000 if args.check == "gamma" else 4_000)
    run(args.alpha, args.eps, args.steps, chains, args.start, args.friction)


if __name__ == "__main__":
    main()
