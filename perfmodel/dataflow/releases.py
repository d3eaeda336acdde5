"""Can one stream efficiency serve two software releases of one chip, with speculative decoding as the difference?

Cerebras's October 2024 release of Cerebras Inference "also implements speculative decoding" (its
words, quoted in ``docs/sram.md``); the August 2024 launch did not. If speculative decoding were the
only difference between the releases, one η would reproduce the launch figures without it and the
later figures with it. Cerebras publishes neither its draft model nor its acceptance, so each sourced
acceptance profile (``perfmodel/data/speculative/acceptance.csv``) is tried in turn, at each draft
length k it tabulates, with a separate draft model on the same wafers (:mod:`.speculative`;
Llama-3.2-1B by default, an ASSUMPTION: the smallest model that shares Llama 3.1's tokenizer; an 8B
draft does not fit next to the 405B pipeline's layers). For
an acceptance a the one η is the least-squares fit in log ratio over both releases' rows,

.. math:: \\hat\\eta(a) = \\arg\\min_\\eta \\sum_{rows}
          \\ln^2\\frac{v_{pred}(\\eta,\\,a_{row})}{v_{public}},
          \\qquad a_{row} = \\text{none (launch rows)},\\ a\\ \\text{(later rows)}

(the objective of :func:`.public.fit_stream_efficiency`), and the worst ratio is
:math:`\\max_{rows}\\max(r, 1/r)` with :math:`r = v_{pred}/v_{public}`. Rows: the launch file's
``fit`` rows and every row of the later file, each on the fastest layout of its chip count at the
shipped η. The acceptance is taken from the table, never fitted; choosing the profile that fits best
would be a second fitted parameter, so the result is reported for every profile.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import brentq, minimize_scalar

from ..engine.speculative import SpecDecode
from ..engine.speculative_acceptance import acceptance_profiles, uniform_expected_tokens
from ..errors import ConfigError
from .layout import search_layouts
from .public import public_speeds
from .step import predict_dataflow


def release_rows(launch: str = "cerebras-wse3", later: str = "cerebras-wse3-oct2024") -> list[dict]:
    """The public rows of both releases with their fastest layout and whether they speculate.

    Returns
    -------
    list of dict
        One per row: model, weights, kv_cache, isl, osl, public (tok/s per user), tp, pp,
        speculative (True for the later release) and label (``"<model> <launch|later>"``).
    """
    table = public_speeds()
    rows = table[((table["hardware"] == launch) & (table["role"] == "fit")) | (table["hardware"] == later)]
    out = []
    for _, r in rows.iterrows():
        best = search_layouts(r["model"], r["hardware"], int(r["devices"]), isl=int(r["isl"]), osl=int(r["osl"]),
                              batch=1, weights=r["weights"], kv_cache=r["kv_cache"]).iloc[0]
        spec = r["hardware"] == later
        out.append({"model": r["model"], "weights": r["weights"], "kv_cache": r["kv_cache"], "isl": int(r["isl"]),
                    "osl": int(r["osl"]), "public": float(r["tokens_per_s_per_user"]), "tp": int(best["tp"]),
                    "pp": int(best["pp"]), "speculative": spec,
                    "label": f"{r['model'].removeprefix('llama-3.1-')} {'later' if spec else 'launch'}"})
    return out


def _ratios(rows: list[dict], arch: str, eta: float, spec: SpecDecode) -> np.ndarray:
    v = []
    for r in rows:
        p = predict_dataflow(r["model"], arch, tp=r["tp"], pp=r["pp"], isl=r["isl"], osl=r["osl"],
                             weights=r["weights"], kv_cache=r["kv_cache"], stream_efficiency=eta,
                             spec_decode=spec if r["speculative"] else None)
        if not bool(np.ravel(p.fits)[0]):
            raise ConfigError(f"draft {spec.draft_model!r}: {r['model']} on tp{r['tp']}-pp{r['pp']} of {arch} "
                              f"does not fit with it ({np.ravel(p.fit_reason)[0]}); choose a smaller draft model")
        v.append(float(np.ravel(p.per_user_tokens_per_s)[0]) / r["public"])
    return np.array(v)


def joint_fit(rows: list[dict], spec: SpecDecode, arch: str = "cerebras-wse3") -> tuple[float, np.ndarray]:
    """η̂(a) of the module docstring and the ratios predicted / public it leaves, per row.

    Parameters
    ----------
    rows : list of dict
        From :func:`release_rows`.
    spec : SpecDecode
        The later release's speculative decoding (a draft model and its acceptance).
    arch : str
        The architecture whose execution model runs every row (both releases run the same chip).

    Raises
    ------
    ConfigError
        A row's layout does not hold the draft model next to the target.
    """
    def loss(log_eta: float) -> float:
        return float(np.sum(np.log(_ratios(rows, arch, float(np.exp(log_eta)), spec)) ** 2))

    res = minimize_scalar(loss, bounds=(np.log(1e-3), 0.0), method="bounded", options={"xatol": 1e-4})
    eta = float(np.exp(res.x))
    return eta, _ratios(rows, arch, eta, spec)


def one_eta_table(draft: str = "llama-3.2-1b", launch: str = "cerebras-wse3",
                  later: str = "cerebras-wse3-oct2024") -> pd.DataFrame:
    """The one-η fit for every sourced acceptance profile at every k it tabulates.

    Returns
    -------
    pandas.DataFrame
        Columns profile, method, k, expected_tokens (E of the later rows' steps), eta, worst
        (the largest of max(r, 1/r) over the rows) and one ratio column per row label.
    """
    rows = release_rows(launch, later)
    out = []
    for pid, prof in acceptance_profiles().items():
        for k, _length in prof.lengths:
            spec = SpecDecode("draft", k, acceptance=prof.rates(k), draft_model=draft)
            eta, ratios = joint_fit(rows, spec, launch)
            out.append({"profile": pid, "method": prof.method, "k": k, "expected_tokens": spec.expected_tokens,
                        "eta": eta, "worst": float(np.max(np.maximum(ratios, 1.0 / ratios))),
                        **{r["label"]: x for r, x in zip(rows, ratios, strict=True)}})
    return pd.DataFrame(out)


def needed_expected_tokens(k: int, limit: float = 1.5, draft: str = "llama-3.2-1b", launch: str = "cerebras-wse3",
                           later: str = "cerebras-wse3-oct2024") -> float | None:
    """The smallest E (one acceptance rate at every position, k drafted) that brings every row within ``limit``.

    Returns
    -------
    float or None
        E [tokens per step]; None when even acceptance 1 (E = k + 1) leaves a row outside ``limit``.
    """
    rows = release_rows(launch, later)

    def excess(rate: float) -> float:
        spec = SpecDecode("draft", k, acceptance=rate, draft_model=draft)
        ratios = joint_fit(rows, spec, launch)[1]
        return float(np.max(np.maximum(ratios, 1.0 / ratios))) - limit

    if excess(1.0) > 0:
        return None
    if excess(0.0) <= 0:
        return 1.0
    return uniform_expected_tokens(brentq(excess, 0.0, 1.0, xtol=1e-3), k)
