r"""Speculative decoding and prefix caching in a deployment's static-batch prediction.

**Speculation, attention–FFN split.** A speculative step verifies :math:`k + 1` tokens of each of the
n sequences in one split step of :math:`n(k+1)` tokens at the mean verified context
:math:`\bar c = c + k/2` (:func:`perfmodel.deployment.split.split_step`: the FFN pool, the exchange
and the head all carry :math:`n(k+1)` tokens), with the attention core replaced by the form that reads
each sequence's KV cache once (:func:`perfmodel.engine.speculative_draft.verify_attention_time`):

.. math:: t_{verify} = t_{split}\big(n(k+1), \bar c\big) - t_{attn}\big(n(k+1), \bar c\big)
    + t^{(k+1)H}_{attn}(n, \bar c).

The correction is exact for one micro-batch (the layers add up); with several it is applied to the
critical path as if attention were on it in full (an approximation, stated in the assumptions). The
k draft forwards run on the attention pool (the draft head or MTP layer sits with the embedding and
LM head there), so :math:`TPOT = (t_{verify} + t_{draft}) / E`.

**Prefix caching.** With hit rate h, a prompt of I tokens has :math:`\lfloor hI \rfloor` tokens in
the cache: the prefill computes the other :math:`I - \lfloor hI \rfloor` after them (their attention
reads the cached part). The KV cache sent to a separate decode pool is the whole prompt's (the
decode pool is assumed not to hold the prefix).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.ops import StepShape
from ..core.step import StepModel
from ..engine.speculative import SpecDecode
from ..engine.speculative_draft import (
    DraftMemory,
    draft_memory,
    draft_step_model,
    draft_time,
    verify_attention_time,
)
from .split import ExchangeLink, SplitStep, split_step


@dataclass(frozen=True)
class SplitSpecStep:
    """A speculative split decode step: ``verify`` (a :class:`SplitStep` of n(k+1) tokens), the
    attention-core correction, the draft time [s] and E [token/step]."""

    verify: SplitStep
    attention_fix: np.ndarray
    draft: np.ndarray
    expected_tokens: float

    @property
    def tpot(self) -> np.ndarray:
        """:math:`(t_{verify} + t_{draft}) / E` [s/token]."""
        return (self.verify.total + self.attention_fix + self.draft) / self.expected_tokens


def split_spec_step(attention: StepModel, ffn: StepModel, link: ExchangeLink, spec: SpecDecode, n_decode,
                    context, attention_devices: int, ffn_devices: int, micro_batches: int = 1,
                    draft: StepModel | None = None) -> SplitSpecStep:
    """One speculative decode step with attention and FFN on different pools (module docstring).

    ``draft`` is the draft's cost model on the attention pool (:func:`draft_step_model` of
    ``attention`` when omitted).
    """
    n, c = (np.array(x, dtype=float) for x in np.broadcast_arrays(n_decode, context))
    q = spec.k + 1
    cbar = c + spec.k / 2.0
    step = split_step(attention, ffn, link, n * q, cbar, attention_devices, ffn_devices, micro_batches)
    fix = verify_attention_time(attention, n, q, cbar) - attention.decode_attention_time(n * q, cbar)
    if draft is None and spec.method != "ngram":
        draft = draft_step_model(attention, spec)
    return SplitSpecStep(step, np.asarray(fix), np.asarray(draft_time(spec, draft, n, c)), spec.expected_tokens)


def attention_pool_draft(attention: StepModel, spec: SpecDecode | None,
                         weights: str | None = None) -> tuple[StepModel | None, DraftMemory]:
    """The draft's cost model on the attention (or decode) pool and the memory it adds per device."""
    if spec is None:
        return None, DraftMemory(0.0, 0.0)
    draft = draft_step_model(attention, spec, weights=weights)
    return draft, draft_memory(spec, draft)


def cached_prefill_time(sm: StepModel, n_prompts, isl, hit_rate: float) -> np.ndarray:
    """Prefill of ``n_prompts`` prompts of ``isl`` tokens with a share ``hit_rate`` cached [s]."""
    i = np.asarray(isl, dtype=float)
    cached = np.floor(float(hit_rate) * i)
    return np.asarray(sm.breakdown(StepShape.make(n_prefill=n_prompts, chunk=i - cached, past=cached)).total)
