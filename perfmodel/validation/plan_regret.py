r"""Would a plan ranked by the model choose the configuration that measured best? (issue #20)

A *group* is one workload measured under several deployment configurations: the same model, system,
engine and ISL/OSL, with configurations differing in weight format, TP/PP/attention-DP/EP or (P/D)
pool layouts and worker counts, each run at one or more closed-loop concurrencies. Every row carries
the measured mean TTFT and TPOT and the model's prediction of the same row.

Per row, with :math:`C` clients over :math:`G` GPUs and :math:`O` output tokens per request:

.. math::

    s = 1 / \mathrm{TPOT} \quad\text{[tokens/s per user]}, \qquad
    x = \frac{C\,O}{(\mathrm{TTFT} + (O - 1)\,\mathrm{TPOT})\,G} \quad\text{[output tokens/s per GPU]}

(the closed loop's throughput; the same formula for measured and predicted means). The per-user speed
:math:`s` is the project's ``per_user_tokens_per_s`` (``speed="tpot"``); ``speed="e2e"`` uses
:math:`O / (\mathrm{TTFT} + (O - 1)\,\mathrm{TPOT})` instead, which also counts the wait for the first
token (a run that queues its clients is slow by this measure however short its TPOT). At a per-user speed
floor :math:`f`:

- the **measured best** is the largest measured :math:`x` over rows with measured :math:`s \ge f`;
- the **plan's pick** is the configuration of the row with the largest *predicted* :math:`x` among
  rows with predicted :math:`s \ge f` (what a planner that only sees the predictions ranks first);
- the pick's **measured** throughput is the best measured :math:`x` of that configuration at the
  floor (the operator runs the chosen configuration at the largest measured load that keeps the
  floor), 0 when none of its runs kept it, and the **regret** is
  :math:`100\,(1 - x_\mathrm{pick} / x_\mathrm{best})` %. A plan that finds no row meeting the floor
  has regret 100 %.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import ConfigError
from ..metrics_vocabulary import deprecated_property
from .metrics import current_columns

#: Columns :func:`choose` and :func:`score_groups` need.
ROW_COLUMNS = ("config", "clients", "gpus", "osl", "measured_ttft_mean_s", "measured_tpot_mean_s",
               "predicted_ttft_mean_s", "predicted_tpot_mean_s")
#: Columns that define a group (one workload on one system and engine).
GROUP_COLUMNS = ("model_path", "system", "backend", "isl", "osl")
#: Per-user speed measures (:func:`add_rates`).
SPEEDS = ("tpot", "e2e")
#: A pick within this regret [%] counts as a success (issue #20: within 10 % of the measured best).
WITHIN_PCT = 10.0


def throughput_per_gpu(ttft_s, tpot_s, clients, osl, gpus) -> np.ndarray:
    """Closed-loop output tokens/s per GPU: :math:`C\\,O / ((\\mathrm{TTFT} + (O-1)\\,\\mathrm{TPOT})\\,G)`.

    Parameters
    ----------
    ttft_s, tpot_s : array_like
        Mean time to first token and time per output token [s].
    clients : array_like
        Closed-loop clients over the ``gpus`` GPUs [-].
    osl : array_like
        Output tokens per request [-].
    gpus : array_like
        GPUs the clients are served by [-].
    """
    ttft, tpot, c, o, g = (np.asarray(v, dtype=float) for v in (ttft_s, tpot_s, clients, osl, gpus))
    return c * o / ((ttft + (o - 1.0) * tpot) * g)


def add_rates(rows: pd.DataFrame, speed: str = "tpot") -> pd.DataFrame:
    """``rows`` with ``{measured,predicted}_speed`` [tokens/s per user] and
    ``{measured,predicted}_output_tokens_per_s_per_gpu`` (:func:`throughput_per_gpu`); NaN where a prediction
    is missing. ``speed``: ``tpot`` (1/TPOT) or
    ``e2e`` (OSL / (TTFT + (OSL - 1) TPOT))."""
    if speed not in SPEEDS:
        raise ConfigError(f"speed: expected one of {', '.join(SPEEDS)}, got {speed!r}")
    rows = current_columns(rows, "add_rates")
    missing = [c for c in ROW_COLUMNS if c not in rows.columns]
    if missing:
        raise ConfigError(f"rows: missing column(s) {missing}; expected {list(ROW_COLUMNS)}")
    out = rows.copy()
    for kind in ("measured", "predicted"):
        tpot, osl = out[f"{kind}_tpot_mean_s"].to_numpy(float), out["osl"].to_numpy(float)
        e2e = out[f"{kind}_ttft_mean_s"].to_numpy(float) + (osl - 1.0) * tpot
        out[f"{kind}_speed"] = 1.0 / tpot if speed == "tpot" else osl / e2e
        out[f"{kind}_output_tokens_per_s_per_gpu"] = throughput_per_gpu(
            out[f"{kind}_ttft_mean_s"], tpot, out["clients"], out["osl"], out["gpus"])
    return out


def layout_label(tp: int, pp: int, dp: int, ep: int, moe_tp: int = 0) -> str:
    """Short layout name: ``TP4``, ``TP1 ADP8 EP8``, ``TP8 PP2``, ``TP8 EP4 moeTP2`` (degrees of 1 left out,
    ``moeTP`` only beside EP > 1)."""
    parts = [f"TP{int(tp)}"] + [f"{name}{int(v)}" for name, v in (("PP", pp), ("ADP", dp), ("EP", ep)) if int(v) > 1]
    if int(ep) > 1 and int(moe_tp or 0) > 1:
        parts.append(f"moeTP{int(moe_tp)}")
    return " ".join(parts)


def deployment_rows(deployments: pd.DataFrame) -> pd.DataFrame:
    """Mapped measured rows (:func:`perfmodel.validation.rows.map_rows` columns) with ``config``,
    ``clients`` and ``gpus``.

    Aggregated: ``concurrency`` clients on one replica of tp × pp × dp GPUs (replicas are independent
    closed loops, so one replica's throughput per GPU is the deployment's). P/D-disaggregated:
    ``concurrency`` × ``d_workers`` clients on ``p_workers`` prefill replicas of p_tp × p_pp × p_dp GPUs
    and ``d_workers`` decode replicas of tp × pp × dp GPUs. ``config`` names the weight format and
    the layout(s) with worker counts.
    """
    out = deployments.copy()
    mode = out["mode"] if "mode" in out else pd.Series("agg", index=out.index)
    disagg = (mode == "disagg").to_numpy()
    per_replica = (out["tp"] * out["pp"] * out["dp"]).to_numpy(float)
    clients = out["concurrency"].to_numpy(float).copy()
    gpus = per_replica.copy()
    labels = []
    for i, r in enumerate(out.to_dict("records")):
        layout = layout_label(r["tp"], r["pp"], r["dp"], r["ep"], r["moe_tp"])
        if disagg[i]:
            pre = layout_label(r["p_tp"], r["p_pp"], r["p_dp"], r["p_ep"], r["p_moe_tp"])
            labels.append(f"{r['weights']} P/D {int(r['p_workers'])}x[{pre}] + {int(r['d_workers'])}x[{layout}]")
            clients[i] *= r["d_workers"]
            gpus[i] = r["p_workers"] * r["p_tp"] * r["p_pp"] * r["p_dp"] + r["d_workers"] * per_replica[i]
        else:
            labels.append(f"{r['weights']} {layout}")
    return out.assign(config=labels, clients=clients, gpus=gpus)


@dataclass(frozen=True)
class Choice:
    """The plan's pick against the measured best in one group at one floor.

    Attributes
    ----------
    floor : float
        Per-user speed floor [tokens/s per user].
    configs : int
        Distinct configurations in the group.
    configs_at_floor : int
        Configurations with at least one measured run at or above the floor.
    best_config : str
        Configuration of the measured best.
    best_output_tokens_per_s_per_gpu : float
        Measured best throughput at the floor [tokens/s per GPU].
    best_speed : float
        Measured per-user speed of the measured best run [tokens/s per user].
    best_predicted_speed : float
        Predicted per-user speed of the measured best run [tokens/s per user] (NaN if not predicted):
        below the floor, the plan cannot choose that run.
    pick_config : str
        Configuration the predictions rank first ('' when no predicted row meets the floor).
    pick_predicted_output_tokens_per_s_per_gpu : float
        Predicted throughput of the pick's row [tokens/s per GPU] (NaN without a pick).
    pick_output_tokens_per_s_per_gpu : float
        Best measured throughput of the pick's configuration at the floor [tokens/s per GPU] (0 when
        none of its runs meets the floor or there is no pick).
    pick_rank : int
        Rank of the pick among the configurations by measured throughput at the floor (1 = the best;
        0 when the pick has no run at the floor or there is no pick).
    pick_max_speed : float
        Fastest measured per-user speed of any run of the pick's configuration [tokens/s per user]
        (NaN without a pick): how far below the floor a pick that misses it stays.
    regret_pct : float
        :math:`100\\,(1 - x_\\mathrm{pick} / x_\\mathrm{best})` [%], :math:`x_\\mathrm{pick}` =
        ``pick_output_tokens_per_s_per_gpu``, :math:`x_\\mathrm{best}` = ``best_output_tokens_per_s_per_gpu``.

    The old field names ``best_tps_gpu``, ``pick_predicted_tps_gpu`` and ``pick_tps_gpu`` still answer for
    one release, with a DeprecationWarning.
    """

    floor: float
    configs: int
    configs_at_floor: int
    best_config: str
    best_output_tokens_per_s_per_gpu: float
    best_speed: float
    best_predicted_speed: float
    pick_config: str
    pick_predicted_output_tokens_per_s_per_gpu: float
    pick_output_tokens_per_s_per_gpu: float
    pick_rank: int
    pick_max_speed: float
    regret_pct: float

    # the old names, for one release (a DeprecationWarning each time)
    best_tps_gpu = deprecated_property("Choice", "best_tps_gpu")
    pick_predicted_tps_gpu = deprecated_property("Choice", "pick_predicted_tps_gpu")
    pick_tps_gpu = deprecated_property("Choice", "pick_tps_gpu")


def choose(rows: pd.DataFrame, floor: float, speed: str = "tpot") -> Choice | None:
    """Score the plan's pick in one group at one per-user speed floor (see the module docstring).

    Parameters
    ----------
    rows : pandas.DataFrame
        One group's rows, with :data:`ROW_COLUMNS`; missing predictions are NaN (such rows can never be
        picked). Ties are broken by row order.
    floor : float
        Per-user speed floor [tokens/s per user].
    speed : str
        Per-user speed measure, ``tpot`` or ``e2e`` (:func:`add_rates`).

    Returns
    -------
    Choice or None
        None when no measured row meets the floor (nothing to compare against).
    """
    r = add_rates(current_columns(rows, "choose"), speed)
    at_floor = r[r["measured_speed"] >= floor]
    if at_floor.empty:
        return None
    measured_x, predicted_x = "measured_output_tokens_per_s_per_gpu", "predicted_output_tokens_per_s_per_gpu"
    per_config = at_floor.groupby("config", sort=False)[measured_x].max().sort_values(
        ascending=False, kind="stable")
    best_config, best = str(per_config.index[0]), float(per_config.iloc[0])
    best_row = at_floor.loc[at_floor[measured_x].idxmax()]
    feasible = r[(r["predicted_speed"] >= floor) & np.isfinite(r[predicted_x])]
    if feasible.empty:
        pick, predicted, measured, rank, fastest = "", float("nan"), 0.0, 0, float("nan")
    else:
        row = feasible.loc[feasible[predicted_x].idxmax()]
        pick, predicted = str(row["config"]), float(row[predicted_x])
        measured = float(per_config.get(pick, 0.0))
        rank = int(np.flatnonzero(per_config.index == pick)[0]) + 1 if pick in per_config.index else 0
        fastest = float(r.loc[r["config"] == pick, "measured_speed"].max())
    return Choice(floor=float(floor), configs=int(r["config"].nunique()), configs_at_floor=len(per_config),
                  best_config=best_config, best_output_tokens_per_s_per_gpu=best,
                  best_speed=float(best_row["measured_speed"]),
                  best_predicted_speed=float(best_row["predicted_speed"]), pick_config=pick,
                  pick_predicted_output_tokens_per_s_per_gpu=predicted, pick_output_tokens_per_s_per_gpu=measured,
                  pick_rank=rank, pick_max_speed=fastest, regret_pct=100.0 * (1.0 - measured / best))


def _cell(value) -> str:
    """A group key cell as text; integral floats without the '.0' (ISL 1024.0 -> 1024)."""
    return str(int(value)) if isinstance(value, (float, np.floating)) and float(value).is_integer() else str(value)


def score_groups(rows: pd.DataFrame, quantile: float = 0.5, speed: str = "tpot", group_columns=GROUP_COLUMNS
                 ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score every group at the floor = ``quantile`` of its measured per-user speeds.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows with :data:`ROW_COLUMNS` and ``group_columns``.
    quantile : float
        Floor rule, in (0, 1): the floor is this quantile of the group's measured per-user speeds (numpy's
        linear interpolation; 0.5 is the median).
    speed : str
        Per-user speed measure, ``tpot`` or ``e2e`` (:func:`add_rates`).
    group_columns : sequence of str
        Columns defining a group.

    Returns
    -------
    scored : pandas.DataFrame
        One row per group with at least two configurations: the group columns, ``rows``,
        ``min_config_runs`` (fewest runs of one configuration) and the :class:`Choice` fields.
    skipped : pandas.DataFrame
        ``group`` (the columns joined by " / ") and ``reason`` of every other group.
    """
    if not 0.0 < quantile < 1.0:
        raise ConfigError(f"quantile: expected a number in (0, 1), got {quantile!r}")
    rows = current_columns(rows, "score_groups")
    scored, skipped = [], []
    for key, g in rows.groupby(list(group_columns), sort=True):
        label = " / ".join(_cell(k) for k in key)
        configs = g["config"].nunique()
        if configs < 2:
            skipped.append({"group": label, "reason": f"one configuration ({g['config'].iloc[0]}), "
                                                      f"{len(g)} run(s): no choice to make"})
            continue
        floor = float(np.quantile(add_rates(g, speed)["measured_speed"].to_numpy(float), quantile))
        choice = choose(g, floor, speed)
        scored.append({**dict(zip(group_columns, key, strict=True)), "rows": len(g),
                       "min_config_runs": int(g.groupby("config").size().min()), **choice.__dict__})
    return pd.DataFrame(scored), pd.DataFrame(skipped, columns=["group", "reason"])


def summarize(scored: pd.DataFrame, within_pct: float = WITHIN_PCT) -> dict:
    """Groups, median and p90 regret [%], share of groups within ``within_pct`` [%] and share where the
    pick is the measured best configuration."""
    if scored.empty:
        return {"groups": 0, "median_regret_pct": None, "p90_regret_pct": None, "within_share": None,
                "best_share": None}
    regret = scored["regret_pct"].to_numpy(float)
    return {"groups": len(scored), "median_regret_pct": float(np.median(regret)),
            "p90_regret_pct": float(np.quantile(regret, 0.9)),
            "within_share": float(np.mean(regret <= within_pct)),
            "best_share": float(np.mean(scored["pick_rank"].to_numpy() == 1))}
