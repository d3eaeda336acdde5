"""Time of one forward step of a model replica: its ops built, costed and summed.

:class:`StepAssembly` is the part of :class:`~perfmodel.core.step.StepModel` that forms a step. Per
layer group, every op's roofline time (compute and memory parts kept apart) plus the layer's
collectives; a step's latency is the sum over all layers, the embedding / LM head once, and the
pipeline hand-offs. Decoding sequences are split into ``pp`` micro-batches when ``pp > 1`` (each
token still traverses every stage, so the latency covers all layers at the micro-batch size). A few
operating points are summed from the step model's compiled op plan (:mod:`perfmodel.core.plan`) from
its second call on. Ops are built by :mod:`perfmodel.core.ops` from the step model's ``model``,
``parallel``, ``precision`` and ``expert_imbalance``, costed by :class:`~perfmodel.core.step_costs.OpCosts`,
and messages by :class:`~perfmodel.core.step_links.LinkTimes`; host-resident KV reads use
``kv_host_fraction``, ``kv_host_overlap`` and ``host_bandwidth``.
"""

from __future__ import annotations

import functools

import numpy as np

from ..errors import ConfigError
from ..modelspec.schema import LayerGroup
from .breakdown import PartSums, StepBreakdown
from .ops import (
    CONTEXT_OPS,
    Message,
    Op,
    StepShape,
    attention_ops,
    decode_attention_op,
    elementwise_op,
    embedding_head_ops,
    ffn_ops,
    indexer_decode_op,
    layer_messages,
)
from .step_costs import STACK_POINTS


class StepAssembly:
    """Step building and evaluation of a :class:`~perfmodel.core.step.StepModel` (a mixin)."""

    @functools.cached_property
    def _attention_groups(self) -> list[LayerGroup]:
        """Layers merged by token mixer and attention window (their FFN kind is irrelevant to them)."""
        counts: dict[tuple, int] = {}
        for g in self.model.layer_groups:
            counts[(g.mixer, g.window)] = counts.get((g.mixer, g.window), 0) + g.count
        return [LayerGroup(count=c, ffn="dense", window=w, mixer=m) for (m, w), c in counts.items()]

    @functools.cached_property
    def _ffn_groups(self) -> list[LayerGroup]:
        """Layers merged by FFN kind and whether they have a mixer (their window and mixer kind are
        irrelevant to FFN ops, norms and messages)."""
        counts: dict[tuple, int] = {}
        for g in self.model.layer_groups:
            key = (g.ffn, "none" if g.mixer == "none" else "attention")
            counts[key] = counts.get(key, 0) + g.count
        return [LayerGroup(count=c, ffn=f, window=None, mixer=m) for (f, m), c in counts.items()]

    def _offload(self, op: Op, group, shape: StepShape) -> tuple[Op, np.ndarray]:
        """Move the host-resident share of a decode attention op's KV bytes to the host link."""
        from dataclasses import replace

        from .ops import kv_elems_per_token_layer

        attended = np.minimum(shape.context, group.window) if group.window else shape.context
        kv = (shape.n_decode / self.parallel.dp_attention * attended
              * kv_elems_per_token_layer(self.model, self.parallel.tp) * self.precision.kv_cache.bytes)
        host = self.kv_host_fraction * kv
        return replace(op, bytes=op.bytes - host), host

    @functools.cached_property
    def builders(self) -> list[tuple[str, LayerGroup | None, float]]:
        """The op builders of a step in the order :meth:`breakdown` sums their ops: (side, layer group,
        layer count), side ``"attention"`` (:func:`~perfmodel.core.ops.attention_ops` of a group of
        :attr:`_attention_groups`), ``"ffn"`` (:func:`~perfmodel.core.ops.ffn_ops` and the elementwise op
        of a group of :attr:`_ffn_groups`, then that group's messages) or ``"head"`` (embedding, LM head
        and sampling once)."""
        return ([("attention", g, g.count) for g in self._attention_groups]
                + [("ffn", g, g.count) for g in self._ffn_groups] + [("head", None, 1.0)])

    def build_ops(self, side: str, group: LayerGroup | None, shape: StepShape) -> list[Op]:
        """The ops of one builder of :attr:`builders` for ``shape`` (after the pipeline's micro-batching)."""
        par, model, prec = self.parallel, self.model, self.precision
        if side == "attention":
            return attention_ops(model, group, par, prec, shape)
        if side == "ffn":
            ops = ffn_ops(model, group, par, prec, shape, self.expert_imbalance)
            ops.append(elementwise_op(model, group, par, prec, shape))
            return ops
        return embedding_head_ops(model, par, prec, shape)

    @functools.cached_property
    def plan(self):
        """The compiled op plan of this step model (:class:`perfmodel.core.plan.StepPlan`), formed on
        first use; None where it does not apply."""
        from .plan import StepPlan

        return StepPlan.build(self)

    def __getstate__(self) -> dict:
        """Pickled without its plan (a plan holds functions; it is formed again where it is used)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("plan", "_first_call_done")}

    def reused_plan(self):
        """:attr:`plan` from this step model's second call on, None on its first: forming a plan costs
        about as much as ten scalar predicts, which a step model used once would not recover."""
        if "plan" in self.__dict__ or self.__dict__.pop("_first_call_done", False):
            return self.plan
        self.__dict__["_first_call_done"] = True
        return None

    def plan_totals(self, shape: StepShape):
        """The sums of a step of a few points (:class:`perfmodel.core.plan.PlanTotals`, the values
        :meth:`breakdown` gives) from the compiled plan; None where the plan is not used (more than
        :data:`STACK_POINTS` points, arrays of different shapes, a first call or no plan)."""
        n = shape.n_decode
        if not (n.size <= STACK_POINTS and n.shape == shape.context.shape == shape.n_prefill.shape
                == shape.chunk.shape == shape.past.shape):
            return None
        plan = self.reused_plan()
        return None if plan is None else plan.totals(shape)

    def micro_batch(self, shape: StepShape) -> StepShape:
        """``shape`` as one pipeline stage's micro-batch sees it: decodes split into ``pp`` micro-batches
        (latency = all layers at micro-batch size); ``shape`` itself for ``pp == 1``."""
        pp = self.parallel.pp
        if pp > 1:
            return StepShape(shape.n_decode / pp, shape.context, shape.n_prefill, shape.chunk, shape.past)
        return shape

    def step_comm(self, shape: StepShape) -> dict[str, np.ndarray]:
        """Exposed time of each message of a step [s] (``shape`` micro-batched already), in the order
        :meth:`breakdown` adds them; without the host-KV reads."""
        par, model, prec = self.parallel, self.model, self.precision
        out: dict[str, np.ndarray] = {}
        for group in self._ffn_groups:
            for msg in layer_messages(model, group, par, prec, shape):
                out[msg.name] = out.get(msg.name, 0.0) + group.count * self._message_time(msg)
        if par.pp > 1:
            hand_off = Message("pp_p2p", "p2p", shape.tokens * model.hidden_size * prec.act_bytes, 2)
            out["pp_p2p"] = (par.pp - 1) * self._message_time(hand_off)
        return out

    def breakdown(self, shape: StepShape) -> StepBreakdown:
        """Time parts of one step through all pipeline stages (see module docstring)."""
        shape = self.micro_batch(shape)
        out = StepBreakdown(step_overhead=self.efficiency.step_overhead)
        ops: list[tuple[Op, float]] = []  # (op, layer count), costed together below
        # Attention depends only on a layer's window, the FFN side only on its kind: cost each distinct
        # one once and weight it by its layer count (DeepSeek's 3 dense + 58 MoE layers share attention).
        for side, group, count in self.builders:
            for op in self.build_ops(side, group, shape):
                if side == "attention" and self.kv_host_fraction > 0 and op.kind == "attention_decode":
                    op, host_bytes = self._offload(op, group, shape)
                    exposed = (1.0 - self.kv_host_overlap) * host_bytes / self.host_bandwidth
                    out.comm["kv_host_read"] = out.comm.get("kv_host_read", 0.0) + count * exposed
                ops.append((op, count))
        out.comm.update(self.step_comm(shape))  # message names differ from "kv_host_read"
        out.ops = [(op.op_class, parts, count)
                   for (op, count), parts in zip(ops, self._costs([op for op, _ in ops]), strict=True)]
        out.context_ops = [j for j, (op, _) in enumerate(ops) if op.name in CONTEXT_OPS]
        return out

    def decode_attention_parts(self, n_decode, context) -> PartSums:
        """Decode attention cores (and DSA indexers) alone, summed over layers: the context-dependent
        part of a step [s]."""
        par = self.parallel
        n = np.asarray(n_decode, dtype=float) / (par.pp if par.pp > 1 else 1)
        shape = StepShape.make(n_decode=n, context=context)
        comp = mem = tot = 0.0
        for group in self._attention_groups:
            if group.mixer != "attention":  # a recurrent step does not depend on the context
                continue
            ops = [decode_attention_op(self.model, group, par, self.precision, shape)]
            if self.model.sparse_attention is not None:
                ops.append(indexer_decode_op(self.model, par, self.precision, shape))
            for op in ops:
                parts = self._op_parts(op)
                comp = comp + group.count * parts.compute
                mem = mem + group.count * parts.memory
                tot = tot + group.count * parts.total
        return PartSums(np.asarray(comp), np.asarray(mem), np.asarray(tot))

    def decode_attention_time(self, n_decode, context) -> np.ndarray:
        """Time of the decode attention cores alone, summed over layers [s]."""
        return self.decode_attention_parts(n_decode, context).total

    def breakdown_part(self, shape: StepShape, part: str) -> StepBreakdown:
        """Time parts of one side of a step, for placing attention and FFN on different pools [s].

        The three parts add up to :meth:`breakdown` (``pp == 1``):

        - ``"attention"``: per layer, the attention projections and core, the MoE router (gating runs
          next to attention, so the FFN side receives tokens already routed), the add + norm traffic
          and the attention TP all-reduce;
        - ``"ffn"``: per layer, the dense FFN or the routed and shared experts, the activation
          function and the FFN/MoE collectives of this layout (all-reduce, all-gather +
          reduce-scatter, or dispatch + combine all-to-all);
        - ``"head"``: the embedding, LM head and sampling once, plus the framework step overhead.

        Parameters
        ----------
        shape : StepShape
            Work of the step (all arrays broadcast together).
        part : {"attention", "ffn", "head"}
            Side to keep.

        Raises
        ------
        ConfigError
            ``pp > 1`` (a split places whole layers' halves on pools, not pipeline stages) or an
            unknown part.
        """
        if part not in ("attention", "ffn", "head"):
            raise ConfigError(f"part: expected 'attention', 'ffn' or 'head', got {part!r}")
        par, model, prec = self.parallel, self.model, self.precision
        if par.pp > 1:
            raise ConfigError(f"breakdown_part needs pp == 1 (got pp={par.pp})")
        out = StepBreakdown(step_overhead=self.efficiency.step_overhead if part == "head" else 0.0)
        if part == "head":
            for op in embedding_head_ops(model, par, prec, shape):
                out.add_op(op.op_class, self._op_parts(op), 1.0)
            return out
        for group in model.layer_groups:
            ffn = ffn_ops(model, group, par, prec, shape, self.expert_imbalance)
            if part == "attention":
                ops = attention_ops(model, group, par, prec, shape) + [o for o in ffn if o.name == "router"]
            else:
                ops = [o for o in ffn if o.name != "router"]
            ops.append(elementwise_op(model, group, par, prec, shape, part=part))
            for op in ops:
                if self.kv_host_fraction > 0 and op.kind == "attention_decode":
                    op, host_bytes = self._offload(op, group, shape)
                    exposed = (1.0 - self.kv_host_overlap) * host_bytes / self.host_bandwidth
                    out.comm["kv_host_read"] = out.comm.get("kv_host_read", 0.0) + group.count * exposed
                out.add_op(op.op_class, self._op_parts(op), group.count)
            for msg in layer_messages(model, group, par, prec, shape):
                if (msg.name == "attn_allreduce") == (part == "attention"):
                    out.comm[msg.name] = out.comm.get(msg.name, 0.0) + group.count * self._message_time(msg)
        return out

    def step_time(self, n_decode=0.0, mean_context=0.0, prefill_tokens=0.0, prefill_past=0.0):
        """Latency of one forward step [s] (numpy broadcasting).

        Parameters
        ----------
        n_decode : array_like
            Decoding sequences in the step.
        mean_context : array_like
            Mean tokens attended per decoding sequence (the new one included).
        prefill_tokens : array_like
            New prompt tokens in the step (one chunk).
        prefill_past : array_like
            Tokens of that prompt already cached before the chunk.
        """
        pre = np.asarray(prefill_tokens, dtype=float)
        shape = StepShape.make(n_decode, mean_context, (pre > 0).astype(float), pre, prefill_past)
        sums = self.plan_totals(shape)
        return self.breakdown(shape).total if sums is None else sums.total
