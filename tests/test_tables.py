"""Tables in human units (issue 21, "One presentation"): times in ms, sizes in GiB, large powers in kW,
chosen from the glossary's unit, renamed in the header, with a footnote; rates and counts unchanged."""

from __future__ import annotations

from perfmodel.tables import MISSING, format_table, shown_name


def test_time_rate_and_byte_columns_hand_checked():
    rows = [{"batch": 8, "tpot_s": 0.006474, "decode_tokens_per_s": 1323.0,
             "weights_bytes_per_device": 16059990016},
            {"batch": 16, "tpot_s": float("nan"), "decode_tokens_per_s": 2200.5, "weights_bytes_per_device": 2**30}]
    lines = format_table(rows, why={"tpot_s": "no decode step"}).splitlines()
    assert lines[0].split() == ["batch", "tpot_ms", "decode_tokens_per_s", "weights_gib_per_device"]
    # 0.006474 s = 6.474 ms; 16059990016 B / 2**30 = 14.957 GiB; the rate stays tokens/s
    assert lines[2].split() == ["8", "6.474", "1323", "14.96"]
    assert lines[3].split() == ["16", MISSING, "2200", "1"]
    assert lines[4] == f"{MISSING} in tpot_ms: no decode step"
    assert lines[5] == "times in ms, sizes in GiB (JSON/CSV/DataFrame: SI seconds, bytes)"


def test_rates_ending_in_per_s_and_unknown_names_are_not_converted():
    rows = [{"requests_per_s": 0.5, "output_tokens_per_s_per_device": 0.25, "value_s": 2.0}]
    out = format_table(rows)
    assert out.splitlines()[0].split() == ["requests_per_s", "output_tokens_per_s_per_device", "value_s"]
    assert out.splitlines()[2].split() == ["0.5", "0.25", "2"] and "ms" not in out


def test_per_token_times_keep_their_normaliser_and_power_switches_to_kw_per_column():
    rows = [{"comm_s_per_token": 2.5e-4, "power_w": 5600.0}, {"comm_s_per_token": 1e-3, "power_w": 700.0}]
    lines = format_table(rows).splitlines()
    assert lines[0].split() == ["comm_ms_per_token", "power_kw"]
    assert [line.split() for line in lines[2:4]] == [["0.25", "5.6"], ["1", "0.7"]]
    assert lines[4] == "times in ms, power in kW (JSON/CSV/DataFrame: SI seconds, watts)"
    # below 1 kW in every row the column stays in W and no footnote is needed for it
    assert format_table([{"power_w": 700.0}]).splitlines() == ["power_w", "-------", "700"]


def test_a_metric_per_row_table_is_converted_row_by_row():
    rows = [{"metric": "ttft_p95_s", "a": 0.02414, "b": 0.5}, {"metric": "completed", "a": 40, "b": 41}]
    lines = format_table(rows).splitlines()
    assert lines[2].split() == ["ttft_p95_ms", "24.14", "500"]
    assert lines[3].split() == ["completed", "40", "41"]
    assert lines[4].startswith("times in ms")
    assert shown_name("tpot_p50_s") == "tpot_p50_ms" and shown_name("requests_per_s") == "requests_per_s"
