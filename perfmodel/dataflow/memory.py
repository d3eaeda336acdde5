"""Memory of one chip of a statically scheduled machine, per tier, with an explicit spill.

Layers are split over ``pp`` stages, the most loaded stage holding :math:`l = \\lceil L/pp \\rceil`
layers; within a stage every layer's weights are split over the ``tp`` chips (attention heads, FFN
columns, experts tensor-split). The embedding sits on the first stage and the LM head on the last,
each **vocabulary-sharded over that stage's tp chips** (one table when pp = 1 and they are tied), in
the weight format unless the architecture says bf16. Per chip of the most loaded stage:

.. math::
    W_{chip} = l\\,\\bar w_{layer}/tp \\; + \\; T/tp, \\qquad
    K_{chip} = b\\,\\sum_{g} \\frac{l}{L} n_g \\min(c, W_g)\\, e_{kv}(tp)\\, b_{kv}

with :math:`\\bar w_{layer}` the mean layer weight bytes, T the bytes of the tables on that stage
(the larger of embedding and head when pp > 1), b sequences of context c held by the replica,
:math:`e_{kv}(tp)` the cached elements per token and layer on one chip (KV heads split over tp, at
least one). Weights go to the architecture's weight tier, KV to its KV tier, the activation
workspace to the weight tier. A tier's usable share is :math:`C (1 - r)`.

**Spill.** When the weight tier overflows and the architecture declares a ``spill_tier``, the
overflow o of the weights moves there and is streamed from there every token, so weight reads run at

.. math:: B_{eff} = \\frac{W}{(W - o)/B_{fast} + o/B_{slow}}

Without a spill tier a misfit is reported (``fits`` False with the reason), never hidden.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..core.memory import attention_weight_elems, ffn_weight_elems, workspace_bytes
from ..core.ops import kv_elems_per_token_layer
from ..core.parallel import Parallel
from ..modelspec import ModelSpec
from ..precision import Precision
from .arch import DataflowArch


def layers_per_stage(model: ModelSpec, pp: int) -> int:
    """Layers on the most loaded stage: :math:`\\lceil L / pp \\rceil`."""
    return math.ceil(model.num_layers / pp)


def layer_weight_bytes(model: ModelSpec, par: Parallel, prec: Precision) -> float:
    """Mean weight bytes of one layer on one chip of a tp-wide stage [B]."""
    total = sum(g.count * (attention_weight_elems(model, par.tp) + ffn_weight_elems(model, g, par))
                for g in model.layer_groups)
    return total / model.num_layers * prec.weights.bytes


def table_bytes(model: ModelSpec, par: Parallel, prec: Precision, arch: DataflowArch) -> float:
    """Embedding and LM-head bytes on one chip of the stage holding the larger share [B]."""
    per_table = model.vocab_size * model.hidden_size / par.tp * (
        prec.weights.bytes if arch.tables_in_weight_format else 2.0)
    if par.pp == 1:
        return per_table * (1 if model.tie_word_embeddings else 2)
    return per_table


def kv_bytes_per_chip(model: ModelSpec, par: Parallel, prec: Precision, sequences, context) -> np.ndarray:
    """KV cache on one chip of the most loaded stage for ``sequences`` of ``context`` tokens [B]."""
    ctx = np.asarray(context, dtype=float)
    share = layers_per_stage(model, par.pp) / model.num_layers
    per_layer = kv_elems_per_token_layer(model, par.tp) * prec.kv_cache.bytes
    held = sum(g.count * (np.minimum(ctx, g.window) if g.window else ctx) for g in model.layer_groups)
    return np.asarray(sequences, dtype=float) * share * held * per_layer


@dataclass(frozen=True)
class ChipMemory:
    """Use of each memory tier of one chip [B] (arrays over operating points).

    Attributes
    ----------
    used : dict[str, ndarray]
        Bytes held per tier (after any spill).
    capacity : dict[str, float]
        Capacity per tier [B].
    reserve : float
    weights, kv, workspace : ndarray
        Weight, KV-cache and workspace bytes of the chip (before placement).
    spill_bytes : float
        Weight bytes moved to the spill tier (0 without spill).
    weight_bandwidth : float
        Bandwidth weight reads run at [B/s] (the spill blend when spilling).
    tiers : dict[str, str]
        ``weights``/``kv``/``spill`` -> tier name.
    """

    used: dict[str, np.ndarray]
    capacity: dict[str, float]
    reserve: float
    weights: float
    kv: np.ndarray
    workspace: np.ndarray
    spill_bytes: float
    weight_bandwidth: float
    tiers: dict[str, str | None] = field(default_factory=dict)

    @property
    def fits(self) -> np.ndarray:
        """Every tier within its usable share."""
        ok = True
        for tier, used in self.used.items():
            ok = ok & (used <= self.capacity[tier] * (1.0 - self.reserve))
        return np.asarray(ok)

    def reason(self) -> np.ndarray:
        """Per point: '' or which tier overflows and by how much."""
        parts = []
        for tier, used in self.used.items():
            usable = self.capacity[tier] * (1.0 - self.reserve)
            over = np.asarray(used) > usable
            msg = np.char.add(np.char.add(f"{tier} ", np.char.mod("%.4g", np.asarray(used) / 1e6)),
                              f" MB > usable {usable / 1e6:.4g} MB per chip")
            parts.append(np.where(over, msg, ""))
        out = parts[0]
        for p in parts[1:]:
            out = np.where((out != "") & (p != ""), np.char.add(np.char.add(out, "; "), p),
                           np.where(out != "", out, p))
        return out


def chip_memory(model: ModelSpec, par: Parallel, prec: Precision, arch: DataflowArch, sequences,
                context) -> ChipMemory:
    """Per-tier memory of the most loaded chip (module docstring)."""
    acc = arch.chip
    seqs = np.asarray(sequences, dtype=float)
    w = layers_per_stage(model, par.pp) * layer_weight_bytes(model, par, prec) + table_bytes(
        model, par, prec, arch)
    kv = kv_bytes_per_chip(model, par, prec, seqs, context)
    micro = np.ceil(seqs / _pipeline_depth(model, par, arch))
    work = workspace_bytes(model, par, prec, micro)
    used: dict[str, np.ndarray] = {t: np.zeros(np.broadcast(seqs, kv).shape) for t in acc.memory}
    used[arch.weights_tier] = used[arch.weights_tier] + w + work
    used[arch.kv_tier] = used[arch.kv_tier] + kv
    capacity = {t: lvl.capacity.value for t, lvl in acc.memory.items()}
    fast = acc.memory[arch.weights_tier].bandwidth.value
    spill, bw = 0.0, fast
    usable = capacity[arch.weights_tier] * (1.0 - arch.reserve)
    if arch.spill_tier is not None:
        # weights beyond what the tier holds next to the largest KV and workspace of the points
        room = usable - float(np.max(used[arch.weights_tier] - w))
        spill = min(max(0.0, w - max(room, 0.0)), w)
        if spill > 0:
            used[arch.weights_tier] = used[arch.weights_tier] - spill
            used[arch.spill_tier] = used[arch.spill_tier] + spill
            slow = acc.memory[arch.spill_tier].bandwidth.value
            bw = w / ((w - spill) / fast + spill / slow)
    tiers = {"weights": arch.weights_tier, "kv": arch.kv_tier, "spill": arch.spill_tier}
    return ChipMemory(used, capacity, arch.reserve, w, kv, work, spill, bw, tiers)


def _pipeline_depth(model: ModelSpec, par: Parallel, arch: DataflowArch) -> int:
    """Micro-batches in flight: one per stage, or one per layer when layers own chip regions."""
    if arch.execution == "spatial":
        return par.pp * layers_per_stage(model, par.pp)
    return par.pp
