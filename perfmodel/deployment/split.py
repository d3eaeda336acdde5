"""Attention–FFN split of a decode step: attention on one pool, FFN/MoE on another, per-layer exchange.

Per decode step and per layer, the attention pool runs attention (projections, core, router, norms
and its TP all-reduce), sends the step's activations to the FFN pool, the FFN pool runs the FFN or
experts (with its own collectives) and sends the results back. With T tokens in the step, hidden
size h and b_a bytes per activation, one direction carries :math:`S = T h b_a` per layer.

**Link assumption.** Every device of both pools has its own port of bandwidth B (per direction)
onto the fabric joining the pools; a layer's activations leave spread evenly over the N_a attention
devices and arrive spread evenly over the N_f FFN devices, so one message takes

.. math:: m = \\alpha + \\frac{S}{B\\,\\min(N_a, N_f)}

and a token's step makes L dependent round trips (L layers), 2L messages. With negligible S,
80 layers at α = 5 µs per message (10 µs per round trip) add 0.8 ms per token; at 25 µs, 4 ms.
A rack's aggregate scale-up bandwidth plays no part: only the named link does.

**Overlap (ping-pong).** The step is cut into n micro-batches of T/n tokens, n at most the number
of sequences T (a micro-batch holds at least one sequence, so a batch of 1 runs as one). With
per-layer averages a (attention), f (FFN), o = S_mb/(B min(N_a,N_f)) (link occupancy of one
direction: α is latency, not occupancy) and the round trip of one micro-batch
:math:`r = a + f + 2(\\alpha + o)`, the busiest resource works

.. math:: w = \\max(a - \\lambda_a,\\; f - \\lambda_f,\\; o)

per micro-batch and layer, where :math:`\\lambda_a, \\lambda_f` are the latency (α) parts of the
pools' own collectives (the attention TP all-reduce, the FFN all-to-all...): while one micro-batch
waits on a collective's latency the pool computes another, as it does while the exchange is in
flight. Then

.. math:: t_{layers} = \\max\\big(n L w + r - w,\\; L r + (n - 1) w\\big)

the larger of the busiest resource's work plus one micro-batch's fill/drain, and the dependency
chain of one micro-batch plus the stagger of the others. For n = 1 it is the plain sum
:math:`L r = A + F + 2L(\\alpha + S/(B\\min(N_a,N_f)))`. Two micro-batches beat one when
:math:`2w < a + f + 2\\alpha`, roughly: when each pool's work shrinks with its batch (KV reads,
compute) and the exchange latency is not small against it; fixed costs per micro-batch (weight
reads at small batch, kernel overheads) are paid n times. The embedding, LM head and framework step
overhead run once on the attention pool, after the layers.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.breakdown import StepBreakdown
from ..core.ops import Message, StepShape, layer_messages
from ..core.roofline import message_time
from ..core.step import StepModel


@dataclass(frozen=True)
class ExchangeLink:
    """Link between two pools: ``bandwidth`` per direction per device [B/s], ``alpha`` per message [s]."""

    bandwidth: float
    alpha: float
    name: str = "link"


def exchange_message(tokens, hidden: int, act_bytes: float, attention_devices: int, ffn_devices: int,
                     link: ExchangeLink) -> tuple[np.ndarray, np.ndarray]:
    """Latency and link occupancy of one direction of one layer's exchange [s].

    Returns
    -------
    latency : ndarray
        :math:`\\alpha + S / (B \\min(N_a, N_f))` with :math:`S = T h b_a`.
    occupancy : ndarray
        :math:`S / (B \\min(N_a, N_f))`, the time the busiest port is busy.
    """
    size = np.asarray(tokens, dtype=float) * hidden * act_bytes / min(attention_devices, ffn_devices)
    occupancy = size / link.bandwidth
    return message_time(size, link.bandwidth, link.alpha), occupancy


def pipelined_layers_time(a, f, latency, occupancy, layers: int, micro_batches, a_latency=0.0,
                          f_latency=0.0) -> np.ndarray:
    """Critical path of the layers of a split step with ``micro_batches`` in flight [s].

    Parameters
    ----------
    a, f : array_like
        Attention and FFN time of one layer for one micro-batch [s].
    latency, occupancy : array_like
        One message's latency and link occupancy for one micro-batch [s].
    layers : int
        L.
    micro_batches : int or array_like
        n ≥ 1 (per operating point).
    a_latency, f_latency : array_like
        Latency (α) parts λ of a and f: the pools' collectives at zero size [s]; not busy time.

    Returns
    -------
    ndarray
        See the module docstring; equals ``layers * (a + f + 2*latency)`` for n = 1.
    """
    round_trip = np.add(np.add(a, f), 2.0 * np.asarray(latency))
    n = np.asarray(micro_batches, dtype=float)
    if np.all(n == 1.0):
        return layers * round_trip
    busiest = np.maximum(np.maximum(np.subtract(a, a_latency), np.subtract(f, f_latency)), occupancy)
    resource = n * layers * busiest + round_trip - busiest
    chain = layers * round_trip + (n - 1.0) * busiest
    return np.where(n == 1.0, layers * round_trip, np.maximum(resource, chain))


def micro_batch_count(micro_batches: int, sequences) -> np.ndarray:
    """Micro-batches actually formed: :math:`\\min(n, \\lfloor T \\rfloor)`, at least 1 [per point]."""
    t = np.asarray(sequences, dtype=float)
    return np.clip(np.minimum(float(micro_batches), np.floor(t)), 1.0, None)


def collective_latency(sm: StepModel, shape: StepShape, part: str) -> np.ndarray:
    """Latency part λ of one pool's collectives over all layers [s]: each message costed at zero size.

    ``part`` is ``"attention"`` (the attention TP all-reduce) or ``"ffn"`` (the others), the same
    split as :meth:`~perfmodel.core.step.StepModel.breakdown_part`.
    """
    total = np.zeros(())
    for group in sm.model.layer_groups:
        for msg in layer_messages(sm.model, group, sm.parallel, sm.precision, shape):
            if (msg.name == "attn_allreduce") == (part == "attention"):
                zero = Message(msg.name, msg.kind, np.zeros_like(np.asarray(msg.size, dtype=float)), msg.ranks,
                               msg.link)
                total = total + group.count * sm._message_time(zero)
    return total


@dataclass
class SplitStep:
    """One split decode step [s] (arrays over operating points).

    Attributes
    ----------
    total : ndarray
        Step time: layers (critical path) + head.
    attention, ffn : ndarray
        Busy time of the attention and FFN pools over the step (all micro-batches).
    head : ndarray
        Embedding, LM head, sampling and step overhead (attention pool, once).
    exchange_exposed : ndarray
        Exchange time on the critical path: ``total`` minus the same step with a free link.
    exchange_serial : ndarray
        2·L·n message latencies: the exchange time without any overlap.
    collectives : ndarray
        Collectives inside the pools (attention TP all-reduce, FFN all-to-all...) on the critical
        path: the step with a free link minus the same with the collectives removed as well.
    attention_parts, ffn_parts, head_parts : StepBreakdown
        Per-micro-batch breakdowns (for per-op-class views).
    """

    total: np.ndarray
    attention: np.ndarray
    ffn: np.ndarray
    head: np.ndarray
    exchange_exposed: np.ndarray
    exchange_serial: np.ndarray
    collectives: np.ndarray
    attention_parts: StepBreakdown
    ffn_parts: StepBreakdown
    head_parts: StepBreakdown

    def bound(self) -> np.ndarray:
        """'compute', 'memory' or 'communication': the largest of the summed parts."""
        parts = (self.attention_parts, self.ffn_parts, self.head_parts)
        c = sum(sum(p.compute.values()) for p in parts)
        m = sum(sum(p.memory.values()) for p in parts)
        k = self.exchange_exposed + self.collectives
        c, m, k = np.broadcast_arrays(np.asarray(c, float), np.asarray(m, float), np.asarray(k, float))
        return np.where((k > c) & (k > m), "communication", np.where(c >= m, "compute", "memory"))


def split_step(attention: StepModel, ffn: StepModel, link: ExchangeLink, n_decode, context,
               attention_devices: int, ffn_devices: int, micro_batches: int = 1) -> SplitStep:
    """Time of one decode step with attention and FFN on different pools.

    Parameters
    ----------
    attention, ffn : StepModel
        The two pools' step models (attention layout and FFN layout, same model and precision).
    link : ExchangeLink
        The link between the pools.
    n_decode, context : array_like
        Sequences decoding in the step and tokens each attends to.
    attention_devices, ffn_devices : int
        N_a and N_f.
    micro_batches : int
        n requested (see the module docstring); at most one micro-batch per sequence is formed.
    """
    # one common shape: StepBreakdown accumulates op times in place
    tokens, context = (np.array(x, dtype=float) for x in np.broadcast_arrays(n_decode, context))
    n = micro_batch_count(int(micro_batches), tokens)
    mb = StepShape.make(n_decode=tokens / n, context=context)
    a_parts = attention.breakdown_part(mb, "attention")
    f_parts = ffn.breakdown_part(mb, "ffn")
    h_parts = attention.breakdown_part(StepShape.make(n_decode=tokens, context=context), "head")
    layers = attention.model.num_layers
    a_mb, f_mb = a_parts.total, f_parts.total
    lat, occ = exchange_message(tokens / n, attention.model.hidden_size, attention.precision.act_bytes,
                                attention_devices, ffn_devices, link)
    a, f = a_mb / layers, f_mb / layers
    lam_a = collective_latency(attention, mb, "attention") / layers
    lam_f = collective_latency(ffn, mb, "ffn") / layers
    layers_t = pipelined_layers_time(a, f, lat, occ, layers, n, lam_a, lam_f)
    free = pipelined_layers_time(a, f, 0.0, 0.0, layers, n, lam_a, lam_f)
    # collectives attributed after the exchange: the step with a free link minus the same step with
    # the pools' collectives removed too, so exchange + collectives <= total
    a_ops = (a_mb - np.asarray(a_parts.comm_total)) / layers
    f_ops = (f_mb - np.asarray(f_parts.comm_total)) / layers
    bare = pipelined_layers_time(a_ops, f_ops, 0.0, 0.0, layers, n)
    head = h_parts.total
    return SplitStep(
        total=layers_t + head, attention=n * a_mb, ffn=n * f_mb, head=np.asarray(head),
        exchange_exposed=layers_t - free, exchange_serial=2.0 * layers * n * lat,
        collectives=free - bare, attention_parts=a_parts, ffn_parts=f_parts, head_parts=h_parts,
    )
