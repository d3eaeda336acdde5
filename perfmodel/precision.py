"""Numeric formats: storage bits per element (as a float) and which peak-compute entry they use.

Block-scaled formats carry their scale overhead in ``bits``: NVFP4 stores one FP8 (E4M3) scale per
16 FP4 values (4 + 8/16 = 4.5 bits), MXFP4 one E8M0 scale per 32 values (4 + 8/32 = 4.25 bits),
INT4 weight-only with group size 128 and an FP16 scale (4 + 16/128 = 4.125 bits).
Sources: NVIDIA, "Introducing NVFP4 for Efficient and Accurate Low-Precision Inference" (2025);
OCP Microscaling Formats (MX) v1.0 specification (2023); AWQ (Lin et al., 2023), group size 128.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .errors import unknown_name


@dataclass(frozen=True)
class DType:
    """A storage / compute format.

    Attributes
    ----------
    name : str
        Canonical name (``"bf16"``, ``"fp8"``, ``"nvfp4"``...).
    bits : float
        Storage bits per element including block-scale overhead [bit].
    compute : str
        Key of the accelerator's dense peak used when matrix products run in this format
        (``"bf16"``, ``"fp8"``, ``"fp4"``, ``"int8"``...). Weight-only formats (int4) compute in bf16.
    """

    name: str
    bits: float
    compute: str

    @property
    def bytes(self) -> float:
        """Bytes per element [B] (a float: 0.5625 for NVFP4)."""
        return self.bits / 8.0


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("fp32", 32.0, "fp32"),
        DType("tf32", 32.0, "tf32"),
        DType("bf16", 16.0, "bf16"),
        DType("fp16", 16.0, "fp16"),
        DType("fp8", 8.0, "fp8"),
        # 128x128 weight blocks with one fp32 scale each (DeepSeek-V3 style checkpoints)
        DType("fp8_block", 8.0 + 32.0 / (128 * 128), "fp8"),
        DType("int8", 8.0, "int8"),
        DType("fp6", 6.0, "fp6"),
        DType("int4", 4.125, "bf16"),
        DType("mxfp4", 4.25, "fp4"),
        DType("nvfp4", 4.5, "fp4"),
        DType("fp4", 4.5, "fp4"),
    )
}
#: Aliases accepted anywhere a dtype name is.
DTYPE_ALIASES = {
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32", "float": "fp32",
    "fp8_e4m3": "fp8", "e4m3": "fp8", "float8": "fp8", "block_fp8": "fp8_block", "w4a16": "int4",
    "int4_awq": "int4", "w4a16_mxfp4": "mxfp4",
}


def serving_activations(weights: str, has_fp4: bool) -> str:
    """Activation format serving engines run a weight format with (TensorRT-LLM / vLLM defaults).

    fp8 and NVFP4 weights quantise their activations alike; block-scaled FP8 uses fp8 activations;
    MXFP4 experts (gpt-oss) run MXFP4 x MXFP8 kernels; FP4 weights on accelerators without FP4 tensor
    cores (``has_fp4`` false: Hopper) run weight-only with bf16 activations, as does everything else.
    """
    if weights in ("nvfp4", "mxfp4") and not has_fp4:
        return "bf16"
    if weights in ("fp8", "nvfp4"):
        return weights
    return "fp8" if weights in ("mxfp4", "fp8_block") else "bf16"


def dtype(name: str | DType, field: str = "dtype") -> DType:
    """Look up a :class:`DType` by name or alias (case-insensitive).

    Raises
    ------
    UnknownNameError
        If the name is unknown; the message lists the closest known formats.
    """
    if isinstance(name, DType):
        return name
    key = str(name).strip().lower()
    key = DTYPE_ALIASES.get(key, key)
    if key not in DTYPES:
        raise unknown_name(f"{field} format", str(name), list(DTYPES) + list(DTYPE_ALIASES))
    return DTYPES[key]


@dataclass(frozen=True)
class Precision:
    """Formats of weights, activations and KV cache, each set independently.

    The matrix-product peak used is that of the *activations* format when both operands are
    quantised (fp8 weights with fp8 activations use the fp8 peak), otherwise the wider of the two
    (weight-only int4 computes in bf16).
    """

    weights: DType
    activations: DType
    kv_cache: DType

    @classmethod
    def of(cls, weights: str | DType = "bf16", activations: str | DType | None = None,
           kv_cache: str | DType | None = None) -> Precision:
        """Build a precision; ``activations`` default to bf16 unless weights are fp8/fp4 (then the
        same as weights, as in FP8 and NVFP4 serving), ``kv_cache`` defaults to bf16."""
        w = dtype(weights, "weights")
        if activations is None:
            a = (DTYPES["fp8"] if w.name == "fp8_block" else w) if w.compute in ("fp8", "fp4") else DTYPES["bf16"]
        else:
            a = dtype(activations, "activations")
        kv = dtype(kv_cache, "kv_cache") if kv_cache is not None else DTYPES["bf16"]
        return cls(w, a, kv)

    @cached_property
    def compute(self) -> str:
        """Peak-compute key used by matrix products (see class docstring)."""
        order = ["fp4", "fp6", "fp8", "int8", "bf16", "fp16", "tf32", "fp32"]
        wc, ac = self.weights.compute, self.activations.compute
        return wc if order.index(wc) > order.index(ac) else ac

    @cached_property
    def matmul_format(self) -> str:
        """Key of the fitted GEMM / MoE terms of an efficiency profile: :attr:`compute`, except
        ``fp8_block`` for block-scaled FP8 weights (their kernels differ from per-tensor FP8's)."""
        if self.weights.name == "fp8_block" and self.compute == "fp8":
            return "fp8_block"
        return self.compute

    @cached_property
    def moe_format(self) -> str:
        """Key of the fitted fused-MoE terms: :attr:`matmul_format`, except for MXFP4 weights under
        16-bit (``mxfp4_a16``, W4A16: Hopper's Triton kernels) or fp8 activations (``mxfp4_a8``,
        MXFP4 x MXFP8: Blackwell's), whose kernels differ from both the bf16/fp8 and NVFP4 ones."""
        if self.weights.name == "mxfp4" and self.compute in ("bf16", "fp16", "fp8"):
            return "mxfp4_a8" if self.compute == "fp8" else "mxfp4_a16"
        return self.matmul_format

    @cached_property
    def act_bytes(self) -> float:
        """Bytes per activation element moved between kernels and over links [B].

        Serving engines keep inter-kernel activations in bf16 even when GEMMs run in fp8/fp4 (the
        quantisation happens inside the GEMM), so this is 2 B unless activations are fp32.
        """
        return 4.0 if self.activations.bits >= 32 else 2.0

    def label(self) -> str:
        return f"w:{self.weights.name} a:{self.activations.name} kv:{self.kv_cache.name}"


def label_fields(label: str) -> dict[str, str]:
    """``{"weights", "activations", "kv_cache"}`` of a :meth:`Precision.label` (``"w:fp8 a:fp8 kv:fp8"``).

    The names the results carry instead of the label, as the flags and arguments spell them.
    """
    parts = dict(item.split(":", 1) for item in label.split())
    return {"weights": parts["w"], "activations": parts["a"], "kv_cache": parts["kv"]}
