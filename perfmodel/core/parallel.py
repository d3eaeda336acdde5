"""Parallel layout of one model replica and its validation.

Conventions (as in TensorRT-LLM and AIConfigurator):

- ``tp``: tensor parallelism of attention (heads split) and of dense FFNs.
- ``dp_attention``: attention data parallelism inside the replica; each of its ranks runs attention
  for its own share of the sequences with ``tp`` devices.
- ``pp``: pipeline stages; layers are split evenly across stages.
- ``ep`` and ``moe_tp``: expert and tensor parallelism of MoE layers, with
  ``ep × moe_tp == tp × dp_attention`` (the MoE group spans the attention group).

Devices per replica = ``tp × dp_attention × pp``.

An expert-parallel size that does not divide the expert count (DeepSeek-R1's 256 experts over 24 or
48 GB200 GPUs of a wide-EP decode pool) places :math:`\\lceil E / ep \\rceil` experts on the busiest
rank, and a MoE layer waits for its busiest rank: weights, routed tokens and experts hit per rank are
charged as if the experts were split over :math:`ep_{eff} = E / \\lceil E / ep \\rceil` ranks
(:meth:`Parallel.experts_ep`; equal to ``ep`` when it divides E). Redundant expert copies (SGLang
``--ep-num-redundant-experts``, TensorRT-LLM's MoE load balancer slots) are not modelled: their counts
are not recorded with the measured runs.

Attention heads divide by the attention-TP size ``tp``, not by the MoE group: a recorded tensor-parallel
size that does not divide the heads (DeepSeek-R1's 128 heads on 12, 20, 28, 36, 72 GPUs of a GB200
NVL72) is served with attention data parallelism, each rank holding whole heads
(:func:`attention_layout`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ConfigError
from ..modelspec.schema import ModelSpec


@dataclass(frozen=True)
class Parallel:
    """A validated parallel layout (see module docstring)."""

    tp: int = 1
    pp: int = 1
    dp_attention: int = 1
    ep: int = 1
    moe_tp: int = 0  # 0 = derived as tp*dp_attention/ep

    @property
    def group(self) -> int:
        """Devices in one pipeline stage (tp × dp_attention)."""
        return self.tp * self.dp_attention

    @property
    def devices(self) -> int:
        """Devices per replica."""
        return self.group * self.pp

    @property
    def moe_tp_eff(self) -> int:
        return self.moe_tp or self.group // self.ep

    @classmethod
    def build(cls, model: ModelSpec, tp: int = 1, pp: int = 1, ep: int = 1, dp_attention: int = 1,
              moe_tp: int | None = None) -> Parallel:
        """Validate a layout against a model.

        Raises
        ------
        ConfigError
            Non-positive degrees, TP not dividing the attention heads, EP above the expert count (an EP
            that does not divide it is allowed, see the module docstring), ``ep × moe_tp`` different
            from ``tp × dp_attention``, PP larger than the layer count.
        """
        for name, v in (("tp", tp), ("pp", pp), ("ep", ep), ("dp_attention", dp_attention)):
            if not isinstance(v, (int,)) or isinstance(v, bool) or v < 1:
                raise ConfigError(f"{name}: must be a positive integer, got {v!r}")
        if moe_tp is not None and (not isinstance(moe_tp, int) or isinstance(moe_tp, bool) or moe_tp < 0):
            raise ConfigError(f"moe_tp: must be a positive integer (or 0/None: derived), got {moe_tp!r}")
        if model.num_attention_heads % tp:
            divisors = [d for d in range(1, model.num_attention_heads + 1)
                        if model.num_attention_heads % d == 0 and d <= 64]
            hint = (f"; or run attention DP over those devices: tp=1, dp_attention={tp * dp_attention} "
                    f"(attention_layout)" if model.moe is not None else "")
            raise ConfigError(f"tp={tp} does not divide {model.id}'s {model.num_attention_heads} attention "
                              f"heads; allowed tp: {divisors}{hint}")
        if pp > model.num_layers:
            raise ConfigError(f"pp={pp} exceeds {model.id}'s {model.num_layers} layers")
        group = tp * dp_attention
        if model.moe is None:
            if ep != 1:
                raise ConfigError(f"ep={ep}: {model.id} is dense (no experts); use ep=1")
            if moe_tp and moe_tp != group:
                raise ConfigError(f"moe_tp={moe_tp}: {model.id} is dense (no experts); its FFN is split "
                                  f"like attention, moe_tp must be tp*dp_attention = {group} or None")
            mtp = moe_tp or group
        else:
            if ep > model.moe.num_experts:
                raise ConfigError(f"ep={ep} exceeds {model.id}'s {model.moe.num_experts} experts")
            if group % ep:
                raise ConfigError(f"ep={ep} must divide tp*dp_attention={group}")
            mtp = moe_tp if moe_tp else group // ep
            if ep * mtp != group:
                raise ConfigError(f"ep*moe_tp = {ep}*{mtp} must equal tp*dp_attention = {group}")
        return cls(tp=tp, pp=pp, dp_attention=dp_attention, ep=ep, moe_tp=mtp)

    def experts_ep(self, num_experts: int) -> float:
        """Effective expert-parallel size :math:`E / \\lceil E / ep \\rceil` for E experts [-].

        The experts on the busiest rank are :math:`\\lceil E/ep \\rceil`; dividing by this size instead of
        ``ep`` charges a rank that many. Exactly ``ep`` when ``ep`` divides E (256 experts, ep 48: 6
        experts on the busiest rank, effective size 256/6 = 42.67).
        """
        return num_experts / -(-num_experts // self.ep)

    def label(self) -> str:
        parts = [f"tp{self.tp}"]
        if self.pp > 1:
            parts.append(f"pp{self.pp}")
        if self.dp_attention > 1:
            parts.append(f"adp{self.dp_attention}")
        if self.ep > 1:
            parts.append(f"ep{self.ep}")
        return "-".join(parts)


def attention_layout(model: ModelSpec, tp: int, dp_attention: int = 1) -> tuple[int, int]:
    """(attention tp, attention dp) an engine runs for a recorded ``tp`` × ``dp_attention`` world.

    Unchanged when ``tp`` divides the model's attention heads. Otherwise, for a MoE model recorded
    without attention DP, the engine can only run it with attention DP over the whole group (TensorRT-LLM
    ``enable_attention_dp``, SGLang ``--enable-dp-attention --dp N``): attention replicated per rank
    (tp 1, dp = tp) while the MoE layers keep the group of ``tp`` devices. Anything else is returned
    as given (:meth:`Parallel.build` then says why it is invalid).

    Examples
    --------
    DeepSeek-R1 (128 heads, MoE) on 36 GPUs: ``attention_layout(r1, 36)`` is ``(1, 36)``; on 8 GPUs
    ``(8, 1)``.
    """
    if model.moe is None or dp_attention != 1 or tp < 1 or model.num_attention_heads % tp == 0:
        return tp, dp_attention
    return 1, tp
