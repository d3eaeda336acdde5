"""Dated public list prices: every shipped row sourced and dated, the loader's errors, and plans that use
them for ``objective="cost"`` when no price is given (saying which row)."""

from __future__ import annotations

import datetime as dt
import math
import re

import pytest
import yaml

from perfmodel.errors import SpecError, UnknownNameError
from perfmodel.hardware import load_hardware
from perfmodel.planning import Candidate, plan
from perfmodel.planning.cost import PowerBasis
from perfmodel.planning.prices import (
    LIST_PRICE_CAVEAT,
    default_list_price,
    list_price_by_id,
    list_prices,
    parse_list_prices,
)
from perfmodel.serving import SLO, Workload
from perfmodel.serving.stand_in import ConstantStepModel

ROWS = list_prices()


def test_the_table_is_not_empty_and_ids_are_unique():
    assert len(ROWS) >= 10
    assert len({r.id for r in ROWS}) == len(ROWS)
    assert {"AWS", "Azure", "CoreWeave", "Lambda", "RunPod"} <= {r.provider for r in ROWS}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.id)
def test_every_row_is_sourced_dated_and_names_a_shipped_accelerator(row):
    assert row.source.startswith("https://")
    assert dt.date.fromisoformat(row.seen) <= dt.date(2026, 12, 31)
    assert load_hardware(row.accelerator, "accelerator").id == row.accelerator
    assert row.usd_per_hour > 0 and row.count >= 1
    assert LIST_PRICE_CAVEAT in row.describe() and row.as_dict()["basis"] == "list price, not what you pay"


def test_per_device_hour_is_the_instance_price_over_its_devices():
    assert list_price_by_id("aws-p5.48xlarge").usd_per_device_hour == pytest.approx(98.32 / 8)  # 12.29
    assert list_price_by_id("spheron-gb200-superchip").usd_per_device_hour == pytest.approx(9.08 / 2)  # 4.54
    assert list_price_by_id("lambda-1x-h100-sxm").usd_per_device_hour == pytest.approx(3.78)


def test_default_is_the_cheapest_row_optionally_of_one_provider():
    h100 = [r.usd_per_device_hour for r in list_prices("h100-sxm")]
    assert h100 == sorted(h100) and len(h100) >= 3
    assert default_list_price("h100-sxm").usd_per_device_hour == min(h100)
    assert default_list_price("H100", provider="aws").id == "aws-p5.48xlarge"  # alias, case-insensitive provider
    assert default_list_price("gb200-nvl72").accelerator == "gb200"  # a system's accelerator
    assert default_list_price("mi250x") is None
    with pytest.raises(UnknownNameError, match="list-price provider"):
        list_prices(provider="awz")
    with pytest.raises(UnknownNameError, match="aws-p5.48xlarge"):
        list_price_by_id("aws-p5.48xl")


#: Rows added on 2026-12-02 -> (figure as quoted in the row's note, copied by hand from the source;
#: "instance" when it is the instance price, "device" when it is the price per device-hour).
QUOTED = {
    "aws-p4de.24xlarge": ("40.96575", "instance"),
    "aws-g6e.48xlarge": ("30.13118", "instance"),
    "aws-g6.48xlarge": ("13.3504", "instance"),
    "aws-inf2.48xlarge": ("12.98127", "instance"),
    "aws-trn2.48xlarge": ("85.964", "instance"),
    "gcp-tpu-v6e-8": ("21.6", "instance"),
    "gcp-tpu-v5litepod-64": ("76.8", "instance"),
    "lambda-1x-gh200": ("1.49", "instance"),
    "lambda-8x-a100-80gb-sxm4": ("14.32", "instance"),
    "tensorwave-mi300x": ("$1.50", "device"),
    "vultr-mi300x": ("$1.85", "device"),
    "azure-nd-mi300x-v5": ("Azure ($6/hr)", "device"),
    "oracle-bm-gpu-mi300x": ("Oracle ($6/hr)", "device"),
    "tensorwave-mi325x": ("$1.95", "device"),
    "packet-rtx-pro-6000": ("$0.66/hr", "device"),
    # second pass (h100-nvl, b300, mi355x)
    "azure-nc40ads-h100-v5": ("6.98,6.98,eastus", "instance"),
    "runpod-h100-nvl-community": ('2.59,1,"H100 NVL, Community Cloud"', "device"),
    "runpod-h100-nvl-secure": ('3.19,1,"H100 NVL, Secure Cloud"', "device"),
    "oci-bm-gpu-b300-8": ("120,,us-chicago-1", "instance"),
    "verda-1b300": ("6.99,2.447", "instance"),
    "hyperstack-b300": ("price_per_hour: 7.40", "device"),
    "oci-bm-gpu-mi355x-8": ("68.8,,us-chicago-1", "instance"),
    "intel-tiber-bm-spr-gaudi2": ("| $10.40", "instance"),
    "intel-tiber-bm-gnr-gaudi3": ("| $19.92", "instance"),
}


@pytest.mark.parametrize(("row_id", "quoted", "basis"), [(k, *v) for k, v in QUOTED.items()])
def test_new_rows_carry_the_figure_quoted_from_their_source(row_id, quoted, basis):
    row = list_price_by_id(row_id)
    assert quoted in row.note
    figure = float(re.search(r"\d+(?:\.\d+)?", quoted).group())
    assert (row.usd_per_hour if basis == "instance" else row.usd_per_device_hour) == pytest.approx(figure, rel=1e-12)


def test_every_row_seen_since_2026_12_02_is_checked_against_its_quote():
    assert {r.id for r in ROWS if dt.date.fromisoformat(r.seen) >= dt.date(2026, 12, 2)} == set(QUOTED)


def test_parts_priced_on_2026_12_02_have_a_default_per_device_hour():
    # hand-computed: instance price over devices
    assert default_list_price("a100-sxm", provider="AWS").usd_per_device_hour == pytest.approx(40.96575 / 8)  # 5.121
    assert default_list_price("trn2").usd_per_device_hour == pytest.approx(85.964 / 16)  # 5.373 per chip
    assert default_list_price("inf2").usd_per_device_hour == pytest.approx(12.98127 / 12)  # 1.082 per chip
    assert default_list_price("tpu-v6e").usd_per_device_hour == pytest.approx(2.70)  # 21.6 / 8 per chip
    assert default_list_price("tpu-v5e").usd_per_device_hour == pytest.approx(1.20)  # 76.8 / 64 per chip
    assert default_list_price("mi300x").id == "tensorwave-mi300x"  # cheapest of 1.50, 1.85, 6, 6
    assert default_list_price("l40s", provider="AWS").usd_per_device_hour == pytest.approx(30.13118 / 8)
    assert default_list_price("gh200").accelerator == "gh200" and default_list_price("gh200-hbm3e") is None


def test_parts_priced_in_the_second_pass_have_a_default_per_device_hour():
    # hand-computed: instance price over devices; cheapest row per accelerator
    assert default_list_price("h100-nvl").id == "runpod-h100-nvl-community"  # 2.59 < 3.19 < 6.98
    assert default_list_price("h100-nvl", provider="Azure").usd_per_device_hour == pytest.approx(6.98)
    assert default_list_price("b300").id == "verda-1b300"  # 6.99 < 7.40 < 120 / 8 = 15.00
    assert default_list_price("b300", provider="Oracle").usd_per_device_hour == pytest.approx(15.0)
    assert default_list_price("mi355x").usd_per_device_hour == pytest.approx(8.6)  # 68.8 / 8
    assert default_list_price("gaudi2").usd_per_device_hour == pytest.approx(1.30)  # 10.40 / 8
    assert default_list_price("gaudi3").usd_per_device_hour == pytest.approx(2.49)  # 19.92 / 8
    # no quotable on-demand list price was found for the MI250X (docs/planning.md says so)
    assert default_list_price("mi250x") is None


def _table(**row):
    base = {"id": "x", "provider": "P", "instance": "i", "accelerator": "h100-sxm", "count": 8,
            "usd_per_hour": 10.0, "source": "https://example.com/prices", "seen": dt.date(2026, 12, 1)}
    return {"kind": "list_prices", "rows": [{**base, **row}]}


@pytest.mark.parametrize(("row", "match"), [
    ({"source": None}, "row 'x': missing source"),
    ({"seen": None}, "row 'x': missing seen"),
    ({"usd_per_hour": -1}, "usd_per_hour: must be a number > 0"),
    ({"usd_per_hour": 0}, "usd_per_hour: must be a number > 0"),
    ({"count": 0}, "count: must be an integer >= 1"),
    ({"source": "a blog"}, "source: must be the URL"),
    ({"seen": "last week"}, "seen: expected an ISO date"),
    ({"price": 3}, "unknown key"),
])
def test_bad_rows_are_refused_with_the_field_named(row, match):
    with pytest.raises(SpecError, match=match):
        parse_list_prices(_table(**row))


def test_unknown_accelerator_and_duplicates_are_refused():
    with pytest.raises(UnknownNameError, match="h100-sxn"):
        parse_list_prices(_table(accelerator="h100-sxn"))
    data = _table()
    data["rows"].append(dict(data["rows"][0]))
    with pytest.raises(SpecError, match="duplicate id"):
        parse_list_prices(data)
    with pytest.raises(SpecError, match="kind: list_prices"):
        parse_list_prices({"rows": []})


def test_shipped_file_says_list_price_not_what_you_pay():
    from importlib import resources

    text = (resources.files("perfmodel") / "data" / "prices" / "cloud_list_prices.yaml").read_text()
    assert "NOT what you pay" in text
    assert len(parse_list_prices(yaml.safe_load(text))) == len(ROWS)


# --------------------------------------------------------------------------------------------------
# plans
# --------------------------------------------------------------------------------------------------
ENGINE = {"name": "hand", "max_num_seqs": 8, "max_num_batched_tokens": 4096}


def _plan(objective, **kw):
    w = Workload.fixed(16, 21, rate=5.0)
    slo = SLO(ttft="1 s", tpot="50 ms", target=0.95)
    pb = PowerBasis("tdp", 300.0, source="input")
    cands = [Candidate(f"one {hw}", ConstantStepModel(0.01), hw, power=pb) for hw in ("l40s", "h100-sxm", "mi250x")]
    # every candidate ranked (no frontier pruning): the tests read each hardware's row
    return plan(None, w, slo, cands, engine=ENGINE, requests=200, objective=objective, prune=False, **kw)


def test_cost_plan_uses_the_cheapest_list_price_and_names_the_row():
    res = _plan("cost")
    by_hw = {r["hardware"]: r for r in res.ranked}
    l40s = default_list_price("l40s")
    assert by_hw["l40s"]["cost_per_hour"] == pytest.approx(l40s.usd_per_device_hour * by_hw["l40s"]["devices"])
    assert by_hw["l40s"]["price_source"] == f"list price row {l40s.id}"
    assert res.inputs["list_prices"]["h100-sxm"]["id"] == default_list_price("h100-sxm").id
    # the MI250X has no row: no cost, ranked last, and the inputs say so
    assert math.isnan(by_hw["mi250x"]["cost_per_hour"]) and by_hw["mi250x"]["price_source"] == "not given"
    assert res.inputs["list_prices"]["mi250x"] is None and res.ranked[-1]["hardware"] == "mi250x"
    # same device counts, so the cheaper device-hour ranks first
    assert res.ranked[0]["hardware"] == "l40s"


def test_input_prices_win_and_providers_filter():
    res = _plan("cost", price={"l40s": "9/h"}, price_provider="AWS")
    by_hw = {r["hardware"]: r for r in res.ranked}
    assert by_hw["l40s"]["cost_per_hour"] == pytest.approx(9.0 * by_hw["l40s"]["devices"])
    assert by_hw["l40s"]["price_source"] == "input"
    assert by_hw["h100-sxm"]["price_source"] == "list price row aws-p5.48xlarge"
    assert res.ranked[0]["hardware"] == "l40s"  # same devices: $9 (input) < $12.29 (AWS list) per device-hour
    with pytest.raises(UnknownNameError, match="list-price provider"):
        _plan("cost", price_provider="nope")


def test_other_objectives_do_not_invent_a_cost():
    res = _plan("devices")
    assert all(math.isnan(r["cost_per_hour"]) for r in res.ranked)
    assert res.inputs["list_prices"] == {}


def test_a_total_cost_model_takes_precedence_over_list_prices():
    from perfmodel.planning.cost import TotalCost

    tco = TotalCost.of("$30000")
    res = _plan("cost", tco=tco)
    assert res.inputs["list_prices"] == {}
    for r in res.ranked:
        assert r["price_source"] == "total-cost model"
        # 300 W per device on the input power basis (module docstring of perfmodel.planning.cost)
        assert r["cost_per_hour"] == pytest.approx(float(tco.usd_per_device_hour(300.0)) * r["devices"])
