"""Speculative decoding on a statically scheduled machine: a draft model proposes, the target verifies.

Cerebras's October 2024 release added speculative decoding, and SambaNova's model table lists it for
its Llama-3.1-405B and Llama-3.3-70B deployments (sources in ``docs/sram.md``). One speculative step
drafts k tokens per sequence with a separate draft model (k sequential draft passes) and verifies the
k + 1 tokens of every sequence in one pass of the target; it emits E tokens on average, so

.. math:: TPOT_{spec} = \\frac{t_{verify} + k\\,t_{draft}}{E}, \\qquad
          E = \\sum_{i=0}^{k} \\prod_{j=1}^{i} a_j

- :math:`t_{verify}`: the target's decode with k + 1 tokens per sequence in its micro-batch
  (:meth:`DataflowModel.decode` with ``tokens_per_sequence``): the weights are streamed once, every
  op, collective and hand-off carries k + 1 times the tokens.
- :math:`t_{draft}`: the draft model's own decode TPOT on the same architecture and chips, with the
  target's tp and its pp clipped to the draft's layers (an assumption: where vendors place the draft
  is not published). Its weights sit next to the target's in the weight tier.
- E from the per-position acceptance :math:`a_j` (:mod:`perfmodel.engine.speculative_acceptance`).
  A draft/target pair has no sourced acceptance, so it must be given: this is a what-if, not a
  prediction. :func:`needed_expected_tokens` inverts the equation: the E a public speed needs.

Only ``method="draft"`` (a separate model) is modelled here; EAGLE heads and MTP layers run inside the
target's pipeline, which the compiled schedules of these machines do not describe.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..engine.speculative import SpecDecode, as_spec_decode
from ..errors import ConfigError
from ..modelspec import load_model

if TYPE_CHECKING:  # pragma: no cover
    from .step import DataflowModel


def draft_model(target: DataflowModel, spec: SpecDecode) -> DataflowModel:
    """The draft's cost model: the target's architecture, formats and η, tp, pp ≤ the draft's layers."""
    if spec.method != "draft":
        raise ConfigError(f"spec_decode {spec.method!r}: on a dataflow machine only a separate draft model is "
                          f"modelled (e.g. draft:llama-3.2-1b,k=4,accept=0.8)")
    draft = load_model(spec.draft_model)
    prec = target.precision
    try:
        return type(target)(draft, target.arch, tp=target.parallel.tp,
                             pp=min(target.parallel.pp, draft.num_layers), weights=prec.weights.name,
                             activations=prec.activations.name, kv_cache=prec.kv_cache.name,
                             stream_efficiency=target.eta)
    except ConfigError as exc:
        raise ConfigError(f"spec_decode draft model {draft.id!r} at the target's tp={target.parallel.tp}: "
                          f"{exc}") from None


def speculative_decode(target: DataflowModel, spec, batch, context, weight_bandwidth: float | None = None
                       ) -> dict[str, np.ndarray]:
    """Verification and draft times of one step, E, and the TPOT per output token [s] (module docstring).

    Returns
    -------
    dict
        ``verify_s``, ``draft_s`` (the k draft passes), ``step_s``, ``expected_tokens`` and ``tpot_s``.
    """
    spec = as_spec_decode(spec)
    if spec is None:
        raise ConfigError("spec_decode: expected a speculative decoding configuration, got None")
    draft = draft_model(target, spec)
    verify = target.decode(batch, context, weight_bandwidth, tokens_per_sequence=spec.k + 1)["tpot_s"]
    ctx = np.asarray(context, dtype=float) + (spec.k - 1) / 2.0
    drafts = spec.k * draft.decode(batch, ctx)["tpot_s"]
    e = spec.expected_tokens
    step = verify + drafts
    return {"verify_s": verify, "draft_s": drafts, "step_s": step, "expected_tokens": np.asarray(e),
            "tpot_s": step / e}


def needed_expected_tokens(target: DataflowModel, draft: str, k: int, tokens_per_s: float, batch=1,
                           context=1024.0) -> float:
    """Tokens a speculative step must emit for the target to reach ``tokens_per_s`` per user.

    :math:`E = v\\,(t_{verify} + k\\,t_{draft})`; above k + 1 no acceptance reaches the speed.
    """
    spec = SpecDecode("draft", k, acceptance=1.0, draft_model=draft)
    step = speculative_decode(target, spec, batch, context)["step_s"]
    return float(np.ravel(step)[0]) * float(tokens_per_s)
