"""Paths of the measurement files shipped in ``perfmodel/data/validation`` (provenance in its README)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from ..errors import unknown_name

#: Shipped files by short name; ``own-h200-*``: the project's own per-op runs on one H200 (README there).
FILES = {"serving": "serving_measured.csv", "published": "published_end_to_end_clean.csv",
         "open-loop-mlperf": "openloop/mlperf_llama2_70b_server.csv",
         **{f"own-h200-{table.replace('_', '-')}": f"own_h200/{table}.csv"
            for table in ("gemm", "attention_decode", "attention_prefill", "decode_step", "prefill_step",
                          "decode_step_mha", "prefill_step_mha", "hbm_copy", "prefill_breakdown",
                          "prefill_clocks")}}


def shipped_path(name: str = "serving") -> Path:
    """Path of a shipped measurement file: ``serving``, ``published``, ``open-loop-mlperf`` (open-loop
    runs, ``openloop/README.md``) or ``own-h200-<table>`` (``gemm``, ``attention-decode``,
    ``attention-prefill``, ``decode-step``, ``prefill-step``, ``decode-step-mha``, ``prefill-step-mha``,
    ``hbm-copy``, ``prefill-breakdown``, ``prefill-clocks``)."""
    if name not in FILES:
        raise unknown_name("shipped validation data", name, list(FILES))
    return Path(str(resources.files("perfmodel") / "data" / "validation" / FILES[name]))
