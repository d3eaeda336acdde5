"""Inputs echoed inside the outputs under their own format's names: which numbers, in which unit.

A result names its numbers by the glossary (:mod:`perfmodel.metrics_vocabulary`), with the unit in the
name. The configuration a command ran with is echoed beside its results as the input format spells it:
the engine profile (``engine.step_overhead``, seconds), the workload and SLO (``workload.arrival.rate``,
requests/s; ``slo.tpot``, seconds), plan's search space and candidate counts, a hardware spec's figures
(``hardware show``) and a model's shape (``models show``). These keep the format's names,
which its documentation defines (``docs/spec-formats.md``, ``docs/serving.md``, ``docs/planning.md``,
``perfmodel/modelspec/schema.py``),
and are listed here with their units so that every number a command prints has a stated unit
(``tests/test_metrics_vocabulary.py`` fails on one that is neither a glossary name nor listed here).
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase


@dataclass(frozen=True)
class Echo:
    """The numeric fields of one echoed input format.

    Attributes
    ----------
    prefix : str
        Where the echo sits in a flattened output key (``"engine."``; ``""`` for a whole document).
    what : str
        The format and where its fields are documented.
    fields : dict of str to str
        Field path below ``prefix`` (``fnmatch`` pattern: ``*`` stands for a name the data chooses, such as
        a hardware id) -> unit (``"s"``, ``"requests/s"``, ``"bytes"``, ``"1"`` for counts and fractions...).
    emitted_by : tuple of str
        Commands whose output holds it.
    """

    prefix: str
    what: str
    fields: dict[str, str]
    emitted_by: tuple[str, ...]

    def unit(self, key: str) -> str | None:
        """The unit of the flattened output ``key`` if it is one of these fields, else None."""
        if not key.startswith(self.prefix):
            return None
        rest = key[len(self.prefix):]
        return next((u for f, u in self.fields.items() if fnmatchcase(rest, f)), None)


def _lengths(name: str) -> dict[str, str]:
    """A token-length distribution's fields (fixed ``value``, ``choice`` ``values``/``weights``,
    ``lognormal`` ``mean``/``sigma``/``min``/``max``, ``uniform`` ``low``/``high``), all tokens or weights."""
    return {f"{name}.{f}": "1" for f in ("value", "values", "weights", "mean", "sigma", "min", "max", "low", "high")}


_SLO = {"ttft": "s", "tpot": "s", "e2e": "s", "ttfat": "s", "target": "1"}
_PROFILE = {"max_num_batched_tokens": "1", "max_num_seqs": "1", "kv_block_size": "1", "step_overhead": "s",
            "seq_overhead": "s/sequence", "kv_capacity_fraction": "1", "gpu_memory_utilization": "1",
            "mem_fraction_static": "1", "free_gpu_memory_fraction": "1", "schema_version": "1"}
_TERMS = {"step_overhead": "s", "seq_overhead": "s/sequence", "layer_overhead": "s/layer",
          "decode_kernel_scale": "1", "prefill_kernel_scale": "1", "small_m_tactic": "1", "request_overhead": "s",
          "sync_fraction": "1", "first_token_steps": "1", "prefill_dp_lockstep": "1"}
SERVING = ("simulate", "max-load")

#: Every echoed input format with numbers.
ECHOES: tuple[Echo, ...] = (
    Echo("engine.", "engine profile (docs/spec-formats.md, engine profiles; fitted terms: docs/calibration.md); "
         "`defaults.value` is the value of the profile field its row names",
         {**_PROFILE, **{f"terms.{k}": u for k, u in _TERMS.items()}, "defaults.value": "unit of the field named",
          "spec_decode.expected_tokens_per_step": "1"}, SERVING),
    Echo("workload.", "workload (docs/spec-formats.md, workloads)",
         {"schema_version": "1", "arrival.rate": "requests/s", "arrival.cv": "1", "arrival.time_scale": "1",
          "arrival.concurrency": "1", "arrival.think_time": "s", "arrival.ramp_up": "s", "prefix_hit_rate": "1",
          "prefix.tokens": "1", "prefix.pool": "1", "tokens_per_word": "1", "task_words": "1", "timeout": "s",
          "max_queue": "1", "requests": "1", "horizon": "s", "spec_acceptance": "1",
          "sessions.turns": "1", "sessions.think_time": "s",
          **_lengths("isl"), **_lengths("osl"), **_lengths("reasoning_tokens"), **_lengths("sessions.user_tokens"),
          **{f"slo.{k}": u for k, u in _SLO.items()}}, ("simulate",)),
    Echo("slo.", "SLO limits and target (docs/spec-formats.md, workloads: slo)", _SLO, SERVING),
    Echo("inputs.slo.", "plan's SLO (docs/planning.md)", _SLO, ("plan",)),
    Echo("inputs.search_space.", "plan's search space: layout sizes and engine limits (docs/planning.md)",
         {"*": "1"}, ("plan",)),
    Echo("inputs.prices_usd_per_device_hour.", "plan's --price per device and hour, by hardware id "
         "(docs/planning.md)", {"*": "USD/h"}, ("plan",)),
    Echo("counts.", "plan's candidates: enumerated, pruned (by reason), simulated, accepted... (docs/planning.md)",
         {"*": "1"}, ("plan",)),
    Echo("", "hardware spec figures in SI, named as the spec file names them (docs/spec-formats.md, "
         "docs/hardware-table.md)",
         {"schema_version": "1", "memory.*.capacity.value": "bytes", "memory.*.bandwidth.value": "bytes/s",
          "memory.*.latency.value": "s", "compute.*.value": "FLOP/s", "power.value": "W", "host_memory.value": "bytes",
          "host_link.bandwidth.value": "bytes/s", "scale_up.bandwidth.value": "bytes/s", "scale_up.domain": "1",
          "bandwidth.value": "bytes/s", "alpha.value": "s", "count": "1", "group_size": "1", "scale_up_domain": "1"},
         ("hardware show",)),
    Echo("", "a system's accelerator count and scale-up domain, as its spec file names them (docs/spec-formats.md)",
         {"count": "1", "scale_up_domain": "1"}, ("hardware list",)),
    Echo("", "a vendor claim's metric values (in the unit of the metric its `metric` key names; a ratio claim's "
         "`claimed` is a ratio), its operating point's batch limit and the unknowns' values (in the unit its "
         "`unit` key gives; docs/planning.md, vendor-claim checks); CSV `value`: the metric in operating_point "
         "rows, the unknown's value in sensitivity rows",
         {"claimed": "claim's metric (ratio claims: 1)", "baseline.value": "claim's metric",
          "candidate.value": "claim's metric", "interactivity.baseline": "claim's metric",
          "interactivity.candidate": "claim's metric", "baseline": "claim's metric", "candidate": "claim's metric",
          "operating_point.max_batch": "1", "value": "claim's metric or the unknown's unit",
          "sensitivity.value": "the unknown's unit", "assumptions_needed.ratio_range": "1", "ratio_range": "1",
          **{f"{p}{f}": "the unknown's unit" for p in ("", "assumptions_needed.")
             for f in ("nominal", "value_needed", "values_meeting_claim")}}, ("claim",)),
    Echo("", "model shape as perfmodel's model spec names it (perfmodel/modelspec/schema.py, read from "
         "config.json); parameter counts by part",
         {"num_layers": "1", "hidden_size": "1", "vocab_size": "1", "num_attention_heads": "1", "num_kv_heads": "1",
          "head_dim": "1", "v_head_dim": "1", "intermediate_size": "1", "max_position_embeddings": "1",
          "mla.*": "1", "moe.*": "1", "layer_groups.count": "1", "layer_groups.window": "1",
          "sparse_attention.*": "1", "recurrent.*": "1", "params_breakdown.*": "1"}, ("models show",)),
)


def echo_unit(key: str, command: str) -> str | None:
    """The unit of the flattened output ``key`` of ``command`` if it is an echoed input field, else None."""
    return next((u for e in ECHOES if command in e.emitted_by and (u := e.unit(key)) is not None), None)


def echoes_md() -> str:
    """The echoed input fields as a Markdown table, for docs/cli.md."""
    rows = ["| where | fields (unit) | format | emitted by |", "|---|---|---|---|"]
    for e in ECHOES:
        fields = ", ".join(f"`{f}` ({u})" for f, u in e.fields.items())
        rows.append(f"| `{e.prefix or '(top level)'}` | {fields} | {e.what} | {', '.join(e.emitted_by)} |")
    return "\n".join(rows)
