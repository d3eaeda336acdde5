"""Deployment files: pools of devices, placement of the phases on them, and the links between them.

A deployment says *where* each part of inference runs. Three roles are placed on named pools:
``prefill`` (the whole prompt pass), ``decode_attention`` (attention projections, attention core,
router, norms, embedding and LM head of decode steps) and ``decode_ffn`` (the dense FFN or the MoE
experts of decode steps). The modes follow from the placement:

==============================  ==========================================================
mode                            placement
==============================  ==========================================================
``aggregated``                  all three roles on one pool
``disaggregated``               prefill on one pool, both decode roles on another
``af-split``                    prefill and decode attention on one pool, decode FFN on another
``disaggregated+af-split``      prefill, decode attention and decode FFN on different pools
==============================  ==========================================================

Example (Vera Rubin GPUs for prefill and decode attention, Groq 3 LPUs for decode FFN)::

    schema_version: 1
    model: kimi-k2
    precision: {weights: fp8, kv_cache: fp8}
    pools:
      gpu: {hardware: rubin, count: 8, tp: 8, assumed_compute: {fp8: 25 PFLOP/s, bf16: 12.5 PFLOP/s}}
      lpu: {hardware: groq-lp30, count: 2304}
    placement: {prefill: gpu, decode_attention: gpu, decode_ffn: lpu}
    links:
      gpu-lpu: {bandwidth: 200 GB/s, alpha: 5 us}   # per direction, per device

Speculative decoding and prefix caching are deployment fields: ``spec_decode`` takes the command-line
spelling (``mtp:k=3``, ``eagle:k=4,accept=0.7``, ``off``) or a mapping (``{method: mtp, k: 3}``;
:func:`perfmodel.engine.speculative.as_spec_decode`), ``draft_weights`` the draft's weight format
(default: the deployment's), and ``prefix_hit_rate`` the share of each prompt found in the prefix
cache, 0 to < 1 (attended, not computed).

Links are keyed ``"<pool>-<pool>"`` (or carry ``between: [a, b]``) and are either a shipped link id
(``gpu-lpu: ib-ndr``) or a mapping of ``bandwidth`` (per direction, per device) and ``alpha`` (fixed
latency of one message), optionally on top of a shipped ``link``. Every pair of pools that exchanges
data (KV cache from prefill to decode attention; activations between decode attention and decode FFN)
needs exactly one link. Quantities are strings with units (:func:`perfmodel.units.to_si`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from ..errors import closest
from ..precision import dtype
from ..spec_base import Strict as _Strict
from ..units import to_si

Role = Literal["prefill", "decode_attention", "decode_ffn"]
ROLES: tuple[str, ...] = ("prefill", "decode_attention", "decode_ffn")
Mode = Literal["aggregated", "disaggregated", "af-split", "disaggregated+af-split"]
ComputeKey = Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "fp6", "fp4", "int4"]


def _quantity(value: Any, dimension: str, unit: str, allow_zero: bool = False, hint: str = "") -> float | None:
    """A quantity in SI units, or None; > 0 required (>= 0 with ``allow_zero``).

    pydantic prefixes the field path to the messages, so they need not name the field.
    """
    if value is None:
        return None
    q = to_si(value, dimension, "value")
    if q < 0 or (q == 0 and not allow_zero):
        raise ValueError(f"must be {'>=' if allow_zero else '>'} 0 {unit}{hint}, got {value!r}")
    return q


class PrecisionSpec(_Strict):
    """Formats of weights, activations (default: from weights) and KV cache, for every pool; weights
    default to the checkpoint's own format and the KV cache to fp8 for FP8/FP4 weights, else bf16
    (:mod:`perfmodel.formats`)."""

    weights: str | None = None
    activations: str | None = None
    kv_cache: str | None = None

    @field_validator("weights", "activations", "kv_cache")
    @classmethod
    def _known(cls, v: str | None, info) -> str | None:
        if v is not None:
            dtype(v, info.field_name)  # raises with the closest known formats
        return v


class PoolSpec(_Strict):
    """A pool of identical devices and the parallel layout of one replica on it.

    Attributes
    ----------
    hardware : str
        Accelerator id or alias, system id (its accelerator; its power if published), or YAML path.
    count : int, optional
        Devices in the pool; default: the system's count, else one replica (tp·dp_attention·pp).
    tp, dp_attention, pp : int
        Layout of one replica for prefill / aggregated / decode-attention roles; the pool holds
        ``count / (tp·dp_attention·pp)`` replicas. In an attention–FFN split every attention device
        is an attention-DP rank of the single decode instance (dp_attention = count / tp).
    ep, moe_tp : int, optional
        Expert / expert-tensor parallelism. On a pool that only runs decode FFN, all ``count``
        devices form one group with ``ep·moe_tp = count`` (default ep = gcd(count, experts)).
    reserve : float
        Fraction of each device's memory left unused (default 0.10).
    efficiency : str, optional
        Efficiency profile of this pool (default: the deployment's).
    power_per_device : str, optional
        Power per device (``"300 W"``), for devices without a published TDP.
    assumed_compute : dict, optional
        Dense peaks missing from the spec, stated as assumptions (``{bf16: 12.5 PFLOP/s}``). Figures
        present in the spec cannot be overridden here.
    spill : "ddr", optional
        Let FFN weights that do not fit the main memory (SRAM) spill to the spec's ``ddr`` level.
    collective_alpha : str, optional
        Fixed latency of one whole collective inside the pool (``"3 us"``). When set, every
        collective there costs ``collective_alpha + volume / B`` (the core's measured-latency mode)
        instead of the per-step α of ring algorithms, whose (n−1)·α is meaningless over thousands of
        statically scheduled LPU chips. Default: the core's algorithms.
    note : str, optional
    """

    hardware: str
    count: int | None = Field(default=None, ge=1)
    tp: int = Field(default=1, ge=1)
    dp_attention: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    ep: int | None = Field(default=None, ge=1)
    moe_tp: int | None = Field(default=None, ge=1)
    reserve: float = Field(default=0.10, ge=0.0, lt=1.0)
    efficiency: str | None = None
    power_per_device: float | None = None
    assumed_compute: dict[ComputeKey, float] = Field(default_factory=dict)
    spill: Literal["ddr"] | None = None
    collective_alpha: float | None = None
    note: str | None = None

    @field_validator("collective_alpha", mode="before")
    @classmethod
    def _coll_alpha(cls, v: Any) -> float | None:
        return _quantity(v, "time", "s")

    @field_validator("power_per_device", mode="before")
    @classmethod
    def _power(cls, v: Any) -> float | None:
        return _quantity(v, "power", "W")

    @field_validator("assumed_compute", mode="before")
    @classmethod
    def _peaks(cls, v: Any) -> Any:
        if not isinstance(v, dict):
            return v
        out = {}
        for k, q in v.items():
            flops = to_si(q, "flops", str(k))
            if flops <= 0:
                raise ValueError(f"{k}: must be > 0 FLOP/s, got {q!r}")
            out[k] = flops
        return out


class LinkSpec(_Strict):
    """A link between two pools: per-direction bandwidth per device and fixed latency per message.

    ``link`` names a shipped link (its figures are the defaults); ``bandwidth`` / ``alpha`` set or
    override them. Without ``link`` both are required.
    """

    link: str | None = None
    bandwidth: float | None = None
    alpha: float | None = None
    between: tuple[str, str] | None = None
    note: str | None = None

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, data: Any) -> Any:
        return {"link": data} if isinstance(data, str) else data

    @field_validator("bandwidth", mode="before")
    @classmethod
    def _bw(cls, v: Any) -> float | None:
        return _quantity(v, "bandwidth", "B/s", hint=" (per direction, per device)")

    @field_validator("alpha", mode="before")
    @classmethod
    def _alpha(cls, v: Any) -> float | None:
        return _quantity(v, "time", "s", allow_zero=True)

    @model_validator(mode="after")
    def _complete(self) -> LinkSpec:
        if self.link is None and (self.bandwidth is None or self.alpha is None):
            raise ValueError("give a shipped link id ('link: ib-ndr') or both 'bandwidth' (per direction, "
                             "per device) and 'alpha' (e.g. {bandwidth: 200 GB/s, alpha: 5 us})")
        return self


class PlacementSpec(_Strict):
    """Pool of each role. ``decode: X`` is shorthand for both decode roles on pool X."""

    prefill: str
    decode_attention: str
    decode_ffn: str

    @model_validator(mode="before")
    @classmethod
    def _decode_shorthand(cls, data: Any) -> Any:
        if isinstance(data, dict) and "decode" in data:
            data = dict(data)
            pool = data.pop("decode")
            for role in ("decode_attention", "decode_ffn"):
                if role in data:
                    raise ValueError(f"give either 'decode' or '{role}', not both")
                data[role] = pool
        return data


class Options(_Strict):
    """Modelling options.

    Attributes
    ----------
    micro_batches : int
        Micro-batches a split decode step is cut into so that attention, exchange and FFN overlap
        (ping-pong); 1 = no overlap (plain sum).
    kv_transfer : "after_prefill" | "layerwise"
        KV cache sent after the prefill ends (all of it exposed), or layer by layer while the
        prefill runs (only what the pipeline cannot hide is exposed).
    expert_imbalance : float
        Busiest expert-parallel rank's load relative to uniform routing (≥ 1).
    """

    micro_batches: int = Field(default=1, ge=1)
    kv_transfer: Literal["after_prefill", "layerwise"] = "after_prefill"
    expert_imbalance: float = Field(default=1.0, ge=1.0)


class Deployment(_Strict):
    """A validated deployment (see the module docstring for the file format)."""

    schema_version: Literal[1] = 1
    kind: Literal["deployment"] = "deployment"
    name: str | None = None
    model: str
    precision: PrecisionSpec = Field(default_factory=PrecisionSpec)
    efficiency: str = "calibrated"
    pools: dict[str, PoolSpec] = Field(min_length=1)
    placement: PlacementSpec | None = None
    links: dict[str, LinkSpec] = Field(default_factory=dict)
    options: Options = Field(default_factory=Options)
    spec_decode: str | dict[str, Any] | None = None
    draft_weights: str | None = None
    prefix_hit_rate: float = Field(default=0.0, ge=0.0, lt=1.0)
    notes: list[str] = Field(default_factory=list)

    @field_validator("spec_decode", mode="before")
    @classmethod
    def _spec(cls, v: Any) -> Any:
        from ..engine.speculative import as_spec_decode

        as_spec_decode(v)  # raises naming the bad part; the spelling or mapping is kept as written
        return "off" if v is False else v  # YAML reads a bare `off` as false

    @field_validator("draft_weights")
    @classmethod
    def _draft_format(cls, v: str | None) -> str | None:
        if v is not None:
            dtype(v, "draft_weights")
        return v

    @property
    def spec(self):
        """The :class:`~perfmodel.engine.speculative.SpecDecode` of ``spec_decode`` (None: off)."""
        from ..engine.speculative import as_spec_decode

        return as_spec_decode(self.spec_decode)

    @field_validator("notes", mode="before")
    @classmethod
    def _notes(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v

    @model_validator(mode="before")
    @classmethod
    def _default_placement(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("placement") is None and isinstance(data.get("pools"), dict) \
                and len(data["pools"]) == 1:
            only = next(iter(data["pools"]))
            data = {**data, "placement": {r: only for r in ROLES}}
        if isinstance(data, dict) and isinstance(data.get("placement"), str):
            data = {**data, "placement": {r: data["placement"] for r in ROLES}}
        return data

    @model_validator(mode="after")
    def _references(self) -> Deployment:
        names = list(self.pools)
        if self.placement is None:
            raise ValueError(f"placement: required with several pools ({', '.join(names)}); e.g. "
                             f"placement: {{prefill: {names[0]}, decode_attention: {names[0]}, "
                             f"decode_ffn: {names[-1]}}}")
        for role in ROLES:
            pool = getattr(self.placement, role)
            if pool not in self.pools:
                near = closest(pool, names, n=1)
                hint = f"did you mean {near[0]!r}? " if near else ""
                raise ValueError(f"placement.{role}: unknown pool {pool!r}; {hint}defined pools: "
                                 f"{', '.join(names)}")
        used = set(self.placement.model_dump().values())
        unused = [n for n in names if n not in used]
        if unused:
            raise ValueError(f"pools.{unused[0]}: defined but not used by placement (roles: "
                             f"{', '.join(f'{r}={getattr(self.placement, r)}' for r in ROLES)})")
        seen: dict[frozenset, str] = {}
        for key, spec in self.links.items():
            pair = self._pair(key, spec)
            if pair in seen:
                raise ValueError(f"links.{key}: a second link between the same pools (first: {seen[pair]!r})")
            seen[pair] = key
        needed = self.exchanges()
        for what, (a, b) in needed.items():
            if frozenset((a, b)) not in seen:
                raise ValueError(
                    f"links: {what} needs a link between pools {a!r} and {b!r}; add e.g. "
                    f"links: {{{a}-{b}: {{bandwidth: 200 GB/s, alpha: 5 us}}}} (per direction, per device) "
                    f"or a shipped link id ({a}-{b}: ib-ndr)")
        wanted = {frozenset(p) for p in needed.values()}
        for pair, key in seen.items():
            if pair not in wanted:
                raise ValueError(f"links.{key}: pools {' and '.join(sorted(pair))} exchange nothing under "
                                 f"this placement (mode {self.mode}); remove the link")
        return self

    # ------------------------------------------------------------------ derived
    def _pair(self, key: str, spec: LinkSpec) -> frozenset:
        names = list(self.pools)
        if spec.between is not None:
            pair = spec.between
        else:
            pair = None
            for sep in ("<->", "--", "-", "_", ":"):
                parts = key.split(sep)
                for k in range(1, len(parts)):
                    a, b = sep.join(parts[:k]), sep.join(parts[k:])
                    if a in self.pools and b in self.pools:
                        pair = (a, b)
                        break
                if pair:
                    break
            if pair is None:
                raise ValueError(f"links.{key}: cannot read two pool names from the key; name it "
                                 f"'<pool>-<pool>' with pools {', '.join(names)}, or add between: [a, b]")
        for p in pair:
            if p not in self.pools:
                near = closest(p, names, n=1)
                hint = f"did you mean {near[0]!r}? " if near else ""
                raise ValueError(f"links.{key}.between: unknown pool {p!r}; {hint}defined pools: {', '.join(names)}")
        if pair[0] == pair[1]:
            raise ValueError(f"links.{key}: a link joins two different pools, got {pair[0]!r} twice")
        return frozenset(pair)

    def exchanges(self) -> dict[str, tuple[str, str]]:
        """Pool pairs that exchange data: ``kv_transfer`` (prefill → decode attention) and
        ``activations`` (decode attention ↔ decode FFN), where they are on different pools."""
        p = self.placement
        assert p is not None
        out = {}
        if p.prefill != p.decode_attention:
            out["kv_transfer"] = (p.prefill, p.decode_attention)
        if p.decode_attention != p.decode_ffn:
            out["activations"] = (p.decode_attention, p.decode_ffn)
        return out

    def link_between(self, a: str, b: str) -> tuple[str, LinkSpec]:
        """The link (key, spec) joining pools ``a`` and ``b``."""
        for key, spec in self.links.items():
            if self._pair(key, spec) == frozenset((a, b)):
                return key, spec
        raise KeyError(f"no link between {a!r} and {b!r}")

    @property
    def mode(self) -> Mode:
        """``aggregated``, ``disaggregated``, ``af-split`` or ``disaggregated+af-split``."""
        ex = self.exchanges()
        if "kv_transfer" in ex and "activations" in ex:
            return "disaggregated+af-split"
        if "kv_transfer" in ex:
            return "disaggregated"
        if "activations" in ex:
            return "af-split"
        return "aggregated"

    def roles(self, pool: str) -> tuple[str, ...]:
        """Roles placed on ``pool`` (in :data:`ROLES` order)."""
        assert self.placement is not None
        return tuple(r for r in ROLES if getattr(self.placement, r) == pool)
