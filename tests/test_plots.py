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


def _categorical(axis) -> bool:
    """Tick labels are names, not numbers (an axis of op classes or deployments has no unit)."""
    def number(text: str) -> bool:
        try:
            float(text.replace("\u2212", "-"))
            return True
        except ValueError:
            return False

    texts = [t.get_text() for t in axis.get_ticklabels() if t.get_text()]
    return bool(texts) and not any(number(t) for t in texts)


def _check(obj, path):
    """Save to PNG, check the file, and check every drawn axes has units on both axis labels (a categorical
    axis has none, and must not pretend to have one with "[-]")."""
    fig = _figure(obj)
    fig.savefig(path, dpi=60)
    assert path.stat().st_size > 2000
    drawn = [a for a in fig.axes if a.has_data()]
    assert drawn, "no axes with data"
    for a in drawn:
        for axis, label in ((a.xaxis, a.get_xlabel()), (a.yaxis, a.get_ylabel())):
            assert "[-]" not in label, f"axis label with a made-up unit: {label!r}"
            assert has_unit(label) or _categorical(axis), f"axis label without unit: {label!r}"
    plt.close(fig)


def _all_text(fig) -> str:
    """Every title, suptitle and text of a figure, joined (what the reader sees as its description)."""
    parts = [fig._suptitle.get_text() if fig._suptitle else ""]
    for a in fig.axes:
        parts += [a.get_title()] + [t.get_text() for t in a.texts]
    return "\n".join(parts)


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
                       "output_tokens_per_s_per_device": y, "batch": [1, 8, 32, 1, 8]})
    _check(plots.pareto_front(df, y="output_tokens_per_s_per_device", normalize=None, annotate="batch"),
           tmp_path / "pareto.png")
    with pytest.raises(pm.errors.ConfigError, match="is not a rate of a whole row"):
        plots.pareto_front(df, y="output_tokens_per_s_per_device")  # already per device: not divided again
    with pytest.raises(pm.errors.ConfigError, match="'output_tokens_per_s': not a column"):
        plots.pareto_front(df)


def test_slo_vs_load(tmp_path):
    load = np.linspace(1, 10, 8)
    df = pd.DataFrame({"load": load, "ttft_p50_s": 0.2 * load, "ttft_p95_s": 0.4 * load,
                       "tpot_p50_s": 0.01 * load, "tpot_p95_s": 0.02 * load,
                       "goodput_requests_per_s": np.minimum(load, 6.0)})
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
              "tpot_p95_s": None if c == 1 else 0.02, "goodput_requests_per_s": 0.5 * c} for c in (1, 2, 4, 8)]
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
    ("ttft_p95_s", "ttft p95 [s]"), ("per_user_tokens_per_s", "output tokens/s per user [tok/s]"),
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


# --- titles, normalisation, percentile colours, label placement -------------------------------------


def test_titles_say_model_hardware_formats_lengths_and_engine(tmp_path):
    p = pm.predict("llama-3.1-8b", "h100-sxm", tp=2, isl=1024, osl=128, batch=[1, 8, 32], weights="fp8",
                   kv_cache="fp8", engine="vllm")
    df = p.to_dataframe()
    assert df["engine"].str.startswith("vllm").all()
    ax = plots.pareto_front(df, annotate="batch")
    headline, about = plots.titles.title_parts(ax)
    assert headline == "output tokens/s per device vs output tokens/s per user"
    for part in ("llama-3.1-8b", "h100-sxm tp2", "weights fp8", "KV cache fp8", "ISL 1024 / OSL 128 tok",
                 "engine vllm", "labels: batch"):
        assert part in about, (part, about)
    _check(ax, tmp_path / "pareto_titled.png")
    # a breakdown shows one operating point: the first, and says so; the kernel model, not the engine's
    text = _all_text(plots.latency_breakdown(p))
    assert "batch 1 (first of 3 points)" in text and "ISL 1024 / OSL 128" in text and "h100-sxm tp2" in text
    assert "bare kernel model" in text
    sm = pm.StepModel("llama-3.1-8b", "h100-sxm", tp=2, weights="fp8", kv_cache="fp8")
    roof = plots.roofline_chart(sm, plots.phase_ops(sm, "decode", batch=16, context=2048))
    assert "decode: batch 16 @ 2048 tok" in _all_text(roof.figure) and "llama-3.1-8b" in _all_text(roof.figure)
    mem = plots.memory_budget(sm, batch=32, context=4096)
    assert "32 sequences × 4096 tok" in _all_text(mem.figure) and "KV cache fp8" in _all_text(mem.figure)
    two = pd.concat([df.iloc[:1], pm.predict("llama-3.1-8b", "h200-sxm", tp=2, isl=1024, osl=128,
                                             batch=1).to_dataframe()])
    ax = plots.completion_time(two)  # one line per hardware (the column that varies), named in the legend
    assert [t.get_text().split(" (")[0] for t in ax.get_legend().get_texts()] == ["h100-sxm", "h200-sxm"]
    crossing = plots.titles.title_parts(ax)[1]
    assert crossing.startswith("llama-3.1-8b · tp2 · weights fp8/bf16, KV cache fp8/bf16 · ISL 1024 / OSL 128 tok")
    assert crossing.endswith("engine vllm, none")
    pvm = plots.predicted_vs_measured([1.0, 2.0], [1.1, 1.9], about=df)
    assert "h100-sxm tp2" in plots.titles.title_parts(pvm)[1]
    plt.close("all")


def test_title_fields_that_vary_are_listed_or_left_to_the_legend():
    from perfmodel.plots.titles import describe

    df = pd.DataFrame({"deployment": ["A", "A", "B", "B"], "hardware": ["h100-sxm"] * 2 + ["h200-sxm"] * 2,
                       "model": "m", "precision": ["w:fp8 a:fp8 kv:fp8"] * 2 + ["w:bf16 a:bf16 kv:fp8"] * 2,
                       "isl": [1024, 4096, 1024, 4096], "osl": 256, "engine": "none (bare kernel model)"})
    assert describe(df) == ("m · A, B · h100-sxm, h200-sxm · weights fp8/bf16, KV cache fp8 · "
                            "ISL 1024–4096 / OSL 256 tok\nno serving engine (bare kernel model)")
    # by the legend's column: the hardware follows the deployment, so the legend says it; formats stay
    assert describe(df, by="deployment") == ("m · weights fp8/bf16, KV cache fp8 · ISL 1024–4096 / OSL 256 tok"
                                             "\nno serving engine (bare kernel model)")  # wrapped at 95
    assert describe(df, by="isl").startswith("m · A, B · h100-sxm, h200-sxm · ")  # hardware varies in a series


def _frame():
    """Two rows whose normalised rates are worked out by hand in the test below."""
    return pd.DataFrame({"deployment": ["node", "split"], "hardware": ["h100-sxm", "rubin+groq-lp30"],
                         "per_user_tokens_per_s": [50.0, 40.0], "output_tokens_per_s": [1000.0, 3000.0],
                         "devices": [8, 134], "gpus": [8, 8], "power_w": [5600.0, 20000.0],
                         "usd_per_hour": [20.0, 40.0], "batch": [4, 16]})


@pytest.mark.parametrize("normalize,expected,unit", [
    ("device", [1000 / 8, 3000 / 134], "[tok/s/device]"),
    ("gpu", [125.0, 375.0], "[tok/s/GPU]"),
    ("mw", [1000 / 0.0056, 3000 / 0.02], "[tok/s/MW]"),          # 178,571 and 150,000 tok/s/MW
    ("dollar", [3600 * 1000 / 20, 3600 * 3000 / 40], "[tok/USD]"),  # 180,000 and 270,000 tokens per USD
    ("user", [250.0, 187.5], "[tok/s/user]"),
    (None, [1000.0, 3000.0], "[tok/s]"),
])
def test_normalised_throughput_hand_checked(normalize, expected, unit):
    values, label = plots.normalized_rate(_frame(), "output_tokens_per_s", normalize)
    assert values.tolist() == pytest.approx(expected, rel=1e-12)
    assert label.endswith(unit)
    ax = plots.pareto_front(_frame(), normalize=normalize, frontier=False)
    drawn = sorted(float(y) for c in ax.collections for _, y in c.get_offsets())
    assert drawn == pytest.approx(sorted(expected), rel=1e-12)
    assert ax.get_ylabel() == label
    plt.close(ax.figure)


def test_per_user_rate_of_a_sweep_divides_by_its_sequences():
    """A sweep row's rate covers dp replicas of `batch` sequences each: per user is R / (dp x batch), read off
    ``sequences`` (and off ``concurrency`` in a frame saved before the rename)."""
    df = pd.DataFrame({"output_tokens_per_s": [1600.0], "batch": [8], "dp": [2], "sequences": [16]})
    assert plots.normalized_rate(df, "output_tokens_per_s", "user")[0].tolist() == [100.0]
    old = df.rename(columns={"sequences": "concurrency"})
    assert plots.normalized_rate(old, "output_tokens_per_s", "user")[0].tolist() == [100.0]
    assert plots.normalized_rate(df.drop(columns="sequences"), "output_tokens_per_s", "user")[0].tolist() == [100.0]


def test_normalisation_errors_name_the_missing_data():
    df = _frame()
    with pytest.raises(pm.errors.ConfigError, match="needs a 'power_w' column"):
        plots.normalized_rate(df.drop(columns="power_w"), "output_tokens_per_s", "mw")
    df.loc[1, "usd_per_hour"] = np.nan
    with pytest.raises(pm.errors.ConfigError, match=r"'usd_per_hour' is missing .* for 1 row\(s\) \(deployment: split"):
        plots.normalized_rate(df, "output_tokens_per_s", "dollar")
    with pytest.raises(pm.errors.ConfigError, match=r"rubin\+groq-lp30 \(mixed\) is not a device with hbm or gddr main memory"):
        plots.normalized_rate(df.drop(columns="gpus"), "output_tokens_per_s", "gpu")
    # GPUs only: the devices are the GPUs
    only = df.drop(columns="gpus").iloc[:1]
    assert plots.normalized_rate(only, "output_tokens_per_s", "gpu")[0].tolist() == [125.0]
    with pytest.raises(pm.errors.ConfigError, match="normalize: expected one of"):
        plots.normalized_rate(df, "output_tokens_per_s", "per_gpu")


def test_percentiles_have_distinct_colours_and_a_legend():
    load = np.linspace(1, 10, 6)
    df = pd.DataFrame({"load": load, "goodput_requests_per_s": load, "devices": 4, **{
        f"{m}_{p}_s": k * load for m in ("ttft", "tpot") for p, k in (("p50", 1), ("p90", 2), ("p95", 3),
                                                                         ("p99", 4))}})
    fig = plots.slo_vs_load(df, normalize="device", slo_ttft=20.0, slo_tpot=0.05)
    for a in fig.axes[:2]:
        lines = {ln.get_label(): matplotlib.colors.to_hex(ln.get_color()) for ln in a.get_lines()}
        slo = next(c for label, c in lines.items() if label.startswith("SLO"))
        assert len({lines[p] for p in ("p50", "p90", "p95", "p99")} | {slo}) == 5  # and none is the SLO's
        assert [t.get_text() for t in a.get_legend().get_texts()][:4] == ["p50", "p90", "p95", "p99"]
    assert fig.axes[2].get_ylabel() == "goodput per device [req/s/device]"
    assert fig.axes[2].get_lines()[0].get_ydata().tolist() == pytest.approx((load / 4).tolist())
    plt.close(fig)


def test_load_search_figure_is_described_by_its_config():
    from types import SimpleNamespace

    curve = [{"load": c, "ttft_p50_s": 0.1 * c, "ttft_p95_s": 0.2 * c, "tpot_p50_s": 0.01, "tpot_p95_s": 0.02,
              "goodput_requests_per_s": 0.5 * c} for c in (1, 2, 4)]
    cfg = {"model": "llama-3.1-8b", "hardware": "h100-sxm", "parallel": "tp2", "precision": "w:fp8 a:fp8 kv:fp8",
           "isl": 1024.0, "osl": 256.0, "engine": "vllm", "devices": 2}
    fig = plots.slo_vs_load(SimpleNamespace(curve=curve, mode="rate", max_load=2, config=cfg, bracketed=False),
                            normalize="gpu")
    assert fig._suptitle.get_text().startswith("llama-3.1-8b · h100-sxm tp2 · weights fp8, KV cache fp8")
    assert any(t.get_text() == "max load ≥ 2" for t in fig.axes[2].texts)  # a lower bound only
    assert fig.axes[2].get_lines()[0].get_ydata().tolist() == pytest.approx([0.25, 0.5, 1.0])
    plt.close(fig)


def test_max_load_records_what_it_searched():
    from perfmodel.serving import Workload, max_load

    sm = pm.StepModel("llama-3.1-8b", "h100-sxm", tp=2, weights="fp8", kv_cache="fp8")
    found = max_load(sm, Workload.fixed(512, 32, rate=1.0, slo={"tpot": "50 ms"}), requests=40,
                     max_simulations=2)
    assert found.config == {"isl": 512.0, "osl": 32.0, "engine": "vllm", "replicas": 1, "model": "llama-3.1-8b",
                            "hardware": "h100-sxm", "parallel": "tp2", "precision": "w:fp8 a:fp8 kv:fp8",
                            "devices": 2}


def _crowded():
    """Twenty labelled points within a few pixels of each other: default offsets collide."""
    rng = np.random.default_rng(0)
    n = 18  # in a box of 2 % of each axis, plus two points that set the axes' span
    x = np.r_[100 + rng.uniform(0, 4, n), 1.0, 200.0]
    y = np.r_[1000 + rng.uniform(0, 40, n), 10.0, 2000.0]
    return pd.DataFrame({"per_user_tokens_per_s": x, "output_tokens_per_s": y, "devices": 1,
                         "batch": 2 ** np.arange(n + 2)})


def test_point_labels_do_not_overlap():
    from perfmodel.plots.labels import _markers, overlapping

    ax = plots.pareto_front(_crowded(), annotate="batch")
    fig = ax.figure
    fig.canvas.draw()  # the final render (Agg), after layout
    labels = [t for t in ax.texts if t.get_gid() != plots.titles.SUBTITLE_GID]
    assert len(labels) == 20
    assert overlapping(labels, fig.canvas.get_renderer()) == []
    frame = ax.get_window_extent(fig.canvas.get_renderer())
    assert all(frame.x0 - 1 <= b.x0 and b.x1 <= frame.x1 + 1 for b in
               (t.get_window_extent(fig.canvas.get_renderer()) for t in labels))
    legend = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert not [t for t in labels if t.get_window_extent(fig.canvas.get_renderer()).overlaps(legend)]
    markers = _markers(ax)
    assert len(markers) == 20
    assert not [t for t in labels for m in markers if t.get_window_extent(fig.canvas.get_renderer()).overlaps(m)]
    # the case is crowded: at the requested offsets the labels do collide
    for t in labels:
        t.xyann = (3, 3)
    fig.canvas.draw()
    assert len(overlapping(labels, fig.canvas.get_renderer())) > 10
    plt.close(fig)


def test_demo_pareto_divides_the_split_by_its_gpus():
    from perfmodel.demo import DemoScenario, run_demo

    df = run_demo(DemoScenario(batches=(1, 16)))
    split = df[df["deployment"].str.startswith("GPU/LPU split")]
    assert (split["devices"] > 100).all() and (split["gpus"] == 8).all()   # 8 Rubin + the LP30s
    ax = plots.demo_figures(df)["pareto"].axes[0]
    series = {c.get_label(): sorted(float(y) for _, y in c.get_offsets()) for c in ax.collections}
    name = split["deployment"].iloc[0]
    assert series[name] == pytest.approx(sorted(split["decode_tokens_per_s"] / 8))
    assert ax.get_ylabel() == "decode tokens/s per GPU [tok/s/GPU]"
    assert "its other" in _all_text(ax.figure) and "chips not counted" in _all_text(ax.figure)
    from perfmodel.demo import summary_table

    table = summary_table(df)[df["deployment"] == name]  # the printed table names both rates
    assert table["decode_tokens_per_s_per_gpu"].tolist() == pytest.approx((split["decode_tokens_per_s"] / 8).tolist())
    assert table["decode_tokens_per_s_per_device"].tolist() == pytest.approx(
        (split["decode_tokens_per_s"] / split["devices"]).tolist())
    plt.close("all")
