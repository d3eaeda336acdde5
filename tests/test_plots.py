"""Every figure renders to a non-empty PNG and labels its axes with units in brackets."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

import perfmodel as pm  # noqa: E402
from perfmodel import plots  # noqa: E402
from perfmodel.plots.style import column_label, has_unit  # noqa: E402


def _figure(obj):
    return obj if isinstance(obj, matplotlib.figure.Figure) else obj.figure


def _check(obj, path):
    """Save to PNG, check the file, and check every drawn axes has units on both axis labels."""
    fig = _figure(obj)
    fig.savefig(path, dpi=60)
    assert path.stat().st_size > 2000
    drawn = [a for a in fig.axes if a.has_data()]
    assert drawn, "no axes with data"
    for a in drawn:
        assert has_unit(a.get_xlabel()), f"x label without unit: {a.get_xlabel()!r}"
        assert has_unit(a.get_ylabel()), f"y label without unit: {a.get_ylabel()!r}"
    plt.close(fig)


@pytest.fixture(scope="module")
def step_model():
    return pm.StepModel("llama-3.1-8b", "h100-sxm", tp=2, weights="fp8", kv_cache="fp8")


def test_roofline_with_ops(tmp_path, step_model):
    ops = pd.concat([plots.phase_ops(step_model, "decode", batch=16, context=2048),
                     plots.phase_ops(step_model, "prefill", batch=1, context=1024)])
    assert {"qkv_proj", "attention_decode", "attention_prefill", "ffn_up", "lm_head"} <= set(ops["name"])
    gemm = ops[(ops["name"] == "ffn_up") & (ops["phase"] == "decode")].iloc[0]
    assert gemm["intensity"] == pytest.approx(gemm["flops"] / gemm["bytes"])
    peak = step_model.hardware.peak_flops("fp8")
    assert (ops["attained_flops"] <= peak * (1 + 1e-9)).all()  # nothing above the roof
    ax = plots.roofline_chart(step_model, ops)
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "[FLOP/B]" in ax.get_xlabel() and "[FLOP/s]" in ax.get_ylabel()
    texts = " ".join(t.get_text() for t in ax.texts)
    assert "ffn_up" in texts and "HBM" in texts and "fp8" in texts
    _check(ax, tmp_path / "roofline.png")


def test_roofline_moe_mla_groups_and_sram_device(tmp_path):
    sm = pm.StepModel("deepseek-v3", "h200-sxm", tp=8, ep=8, weights="fp8")
    ops = plots.phase_ops(sm, "decode", batch=64, context=4096)
    assert {"experts", "kv_b_absorbed", "router"} <= set(ops["name"])
    assert not ops["name"].duplicated().any()
    _check(plots.roofline_chart("h200-sxm", ops, annotate=False), tmp_path / "moe.png")
    _check(plots.roofline_chart("groq-lpu"), tmp_path / "lpu.png")  # roofs only, SRAM level


def test_latency_breakdown(tmp_path):
    p = pm.predict("llama-3.1-8b", "h100-sxm", tp=2, isl=1024, osl=128, batch=8)
    parts = plots.breakdown_parts(p.breakdown(), "decode")
    step = p.breakdown().query("phase == 'decode'")["time_s"].sum()
    assert parts.to_numpy().sum() == pytest.approx(step)
    assert "communication" in parts.index
    fig = plots.latency_breakdown(p, unit="ms")
    assert len(fig.axes) == 2
    _check(fig, tmp_path / "breakdown.png")
    _, ax = plt.subplots()
    one = plots.latency_breakdown(p.breakdown(), phases=("decode",), ax=ax)
    _check(one, tmp_path / "breakdown_one.png")


def test_memory_budget(tmp_path, step_model):
    other = pm.StepModel("llama-3.1-70b", "h200-sxm", tp=4, weights="fp8")
    table = plots.memory_table({"8B": step_model, "70B": other}, batch=32, context=4096)
    row = table.loc["8B"]
    assert row["used_bytes"] == pytest.approx(row["weights_bytes"] + row["kv_cache_bytes"]
                                              + row["workspace_bytes"])
    assert row["max_sequences"] > 32 and bool(row["fits"])
    ax = plots.memory_budget({"8B": step_model, "70B": other}, batch=32, context=4096)
    assert "[GB]" in ax.get_ylabel()
    assert any("max" in t.get_text() for t in ax.texts)
    _check(ax, tmp_path / "memory.png")


def test_pareto_front(tmp_path):
    x = np.array([1.0, 2.0, 3.0, 2.5, 0.5])
    y = np.array([5.0, 4.0, 1.0, 0.5, 4.5])
    assert plots.pareto_mask(x, y).tolist() == [True, True, True, False, False]
    df = pd.DataFrame({"deployment": ["a"] * 3 + ["b"] * 2, "per_user_tokens_per_s": x,
                       "per_device_tokens_per_s": y, "batch": [1, 8, 32, 1, 8]})
    _check(plots.pareto_front(df, annotate="batch"), tmp_path / "pareto.png")


def test_slo_vs_load(tmp_path):
    load = np.linspace(1, 10, 8)
    df = pd.DataFrame({"load": load, "ttft_p50_s": 0.2 * load, "ttft_p95_s": 0.4 * load,
                       "tpot_p50_s": 0.01 * load, "tpot_p95_s": 0.02 * load,
                       "goodput_rps": np.minimum(load, 6.0)})
    fig = plots.slo_vs_load(df, slo_ttft=2.0, slo_tpot=0.05)
    assert [a.get_ylabel() for a in fig.axes] == ["TTFT [s]", "TPOT [ms]", "goodput [req/s]"]
    _check(fig, tmp_path / "slo.png")
    renamed = df.rename(columns={"load": "rate_rps"})
    assert "[req/s]" in plots.slo_vs_load(renamed).axes[0].get_xlabel()
    with pytest.raises(KeyError, match="load column"):
        plots.slo_vs_load(df.drop(columns="load"))


def test_slo_vs_load_from_a_load_search(tmp_path):
    """The result of perfmodel.serving.max_load: its curve (None where a metric is missing), mode, max."""
    from types import SimpleNamespace

    curve = [{"load": c, "ttft_p50_s": 0.1 * c, "ttft_p95_s": 0.2 * c, "tpot_p50_s": 0.01,
              "tpot_p95_s": None if c == 1 else 0.02, "goodput_rps": 0.5 * c} for c in (1, 2, 4, 8)]
    fig = plots.slo_vs_load(SimpleNamespace(curve=curve, mode="concurrency", max_load=4))
    assert fig.axes[0].get_xlabel() == "concurrency [clients]"
    assert any("max load 4" in t.get_text() for t in fig.axes[2].texts)
    _check(fig, tmp_path / "search.png")


def test_completion_time_marks_article_crossover(tmp_path):
    ax = plots.completion_time({"A": (0.2, 0.040), "B": (0.5, 0.030)})
    labels = [t.get_text() for t in ax.texts]
    assert any("N* = 31 tok" in s and "1.4 s" in s for s in labels)
    _check(ax, tmp_path / "completion.png")
    with pytest.raises(ValueError, match="two or more"):
        plots.completion_time({"A": (0.2, 0.04)})


def test_predicted_vs_measured(tmp_path):
    measured = np.array([0.01, 0.02, 0.05, 0.1])
    predicted = measured * np.array([1.05, 0.8, 1.2, 1.5])
    ax = plots.predicted_vs_measured(measured, predicted, groups=["h100", "h100", "h200", "h200"])
    assert ax.get_title().startswith("TPOT: 25% within ±10 %, 75% within ±25 %")
    _check(ax, tmp_path / "pvm.png")


def test_demo_figures(tmp_path):
    from perfmodel.demo import DemoScenario, run_demo, write_outputs

    sc = DemoScenario(batches=(1, 16))
    df = run_demo(sc)
    figs = plots.demo_figures(df)
    assert {"tpot_vs_batch", "ttft_vs_batch", "pareto"} <= set(figs)
    for name, fig in figs.items():
        _check(fig, tmp_path / f"{name}.png")
    written = write_outputs(df, tmp_path / "out")
    assert {p.name for p in written} >= {"comparison.csv", "pareto.png", "tpot_vs_batch.png"}


@pytest.mark.parametrize("column,label", [
    ("ttft_p95_s", "ttft p95 [s]"), ("per_user_tokens_per_s", "tokens/s per user [tok/s]"),
    ("weights_bytes", "weights [B]"), ("batch", "batch [sequences]"), ("foo", "foo [-]"),
])
def test_column_label(column, label):
    assert column_label(column) == label
    assert column_label(column, "custom [x]") == "custom [x]"


def test_specs_have_html_reprs_with_units_and_sources():
    import perfmodel as pm

    acc = pm.load_hardware("h100-sxm")._repr_html_()
    assert "3.35 TB/s" in acc and "989 TFLOP/s" in acc and "href=" in acc
    mdl = pm.load_model("deepseek-v3")._repr_html_()
    assert "256 experts" in mdl and "70.27 kB" in mdl
    pred = pm.predict("llama-3.1-8b", "h100-sxm", batch=[1, 4])._repr_html_()
    assert "<table" in pred and "TTFT excludes queueing" in pred
