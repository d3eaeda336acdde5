"""Hardware strings of published and measured rows -> (device count, accelerator id, memory variant).

Published tables write the hardware in many ways: ``"H200-SXM-141GB (x8)"``, ``"8xB200"``,
``"H200 (x4)"``, ``"2x H100 80GB"``, ``"4 nodes x 8xB200 (...)"``, ``"GB200 NVL72"``, ``"DGX B200
(8xB200)"``, ``"NVIDIA H100 SXM"``. :func:`parse_hardware` reads them into a :class:`HardwareName` and
says what it could not read instead of guessing:

- **part**: the longest run of words (outside parentheses, then inside them) that is a shipped
  accelerator id or alias, or a shipped system id or alias (``GB200 NVL72``, ``DGX B200``, ``Groq 3
  LPX``); a memory suffix (``-80GB``) is set aside first; failing that, the longest leading
  dash-separated pieces of one word (``RTX-PRO-6000-Blackwell-Server``). A part named with a form
  factor the catalogue does not ship (``A100 PCIe``, ``A100-PCIe``) is not read as the shipped form.
- **count**: ``(xN)``; a leading ``N x`` / ``Nx`` (``M nodes x Nx``: M·N); the system's device count;
  ``(NxPART)`` of the same part; ``node`` of an HGX part: the HGX system's count; a bare part name: 1.
  Strings that say the count is not known (``cluster``, ``multi-node``, ``count not stated``) get none.
- **memory**: ``NNN GB`` written with the part, which must match the shipped part's capacity within
  :data:`MEMORY_TOLERANCE` (an A100 40GB is not the shipped 80 GB part).

Anything else (an architecture such as ``SM100``, two accelerator kinds joined by ``+``, a part the
catalogue does not ship) leaves ``accelerator`` None and says why in ``problem``.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from ..hardware import list_hardware

#: Relative difference allowed between a written memory size and the shipped part's capacity.
MEMORY_TOLERANCE = 0.05
#: Words naming a form factor that must be part of the shipped name when written (``A100 PCIe``).
UNSHIPPED_FORM_WORDS = ("pcie",)
#: Words that say a row's device count is not known.
UNKNOWN_COUNT_WORDS = ("count not stated", "cluster", "multi-node", "multinode", "system")
#: Words dropped before matching (vendors, packaging).
NOISE_WORDS = ("nvidia", "amd", "intel", "google")
_TIMES = r"\s*[x×]\s*"


@dataclass(frozen=True)
class HardwareName:
    """What a hardware string says.

    Attributes
    ----------
    text : str
        The string as written.
    accelerator : str or None
        Shipped accelerator id (None when no part could be read, see ``problem``).
    count : int or None
        Devices of that accelerator (None when the string does not say).
    memory_gb : float or None
        Memory size written with the part [GB, decimal], None when none is written.
    problem : str or None
        What could not be parsed (None when part and count were both read).
    notes : tuple of str
        How the count was read when not written as a number of devices.
    """

    text: str
    accelerator: str | None
    count: int | None
    memory_gb: float | None = None
    problem: str | None = None
    notes: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        """Part and count both read."""
        return self.problem is None


@functools.cache
def _names() -> tuple[dict[str, str], dict[str, tuple[str, int]], dict[str, float]]:
    """Normalised accelerator names -> id, system names -> (accelerator, count), capacities [GB]."""
    parts: dict[str, str] = {}
    systems: dict[str, tuple[str, int]] = {}
    memory: dict[str, float] = {}
    for spec in list_hardware("accelerator"):
        memory[spec.id] = spec.memory_capacity / 1e9
        for name in (spec.id, *spec.aliases):
            parts[_norm(name)] = spec.id
    for spec in list_hardware("system"):
        for name in (spec.id, *spec.aliases):
            systems[_norm(name)] = (spec.accelerator, spec.count)
    return parts, systems, memory


def _norm(name: str) -> str:
    return re.sub(r"[\s_]+", "-", name.strip().lower())


def _split(text: str) -> tuple[str, str]:
    """Text outside parentheses, text inside them."""
    inside = " ".join(re.findall(r"\(([^()]*)\)", text))
    return re.sub(r"\([^()]*\)", " ", text), inside


def _words(text: str) -> list[str]:
    words = [w for w in re.split(r"[\s,;:]+", text) if w]
    return [w for w in words if w.lower() not in NOISE_WORDS]


def _strip_memory(word: str) -> tuple[str, float | None]:
    m = re.fullmatch(r"(.+?)-(\d+(?:\.\d+)?)\s*gb", word, flags=re.IGNORECASE)
    return (m.group(1), float(m.group(2))) if m else (word, None)


@dataclass(frozen=True)
class _Match:
    accelerator: str
    system_count: int | None
    memory_gb: float | None
    end: int
    form_problem: str | None = None


def _match_part(words: list[str]) -> _Match | None:
    """Longest run of words naming a shipped accelerator or system (see module docstring)."""
    parts, systems, _ = _names()
    for n in range(min(4, len(words)), 0, -1):
        for i in range(len(words) - n + 1):
            run = words[i:i + n]
            last, memory = _strip_memory(run[-1])
            key = _norm("-".join([*run[:-1], last]))
            nxt = words[i + n].lower() if i + n < len(words) else ""
            if key in systems:
                acc, count = systems[key]
                return _Match(acc, count, memory, i + n)
            if key in parts:
                form = None
                if nxt in UNSHIPPED_FORM_WORDS:
                    form = f"{' '.join(run)} {words[i + n]} is not a shipped accelerator"
                return _Match(parts[key], None, memory, i + n, form)
    return _match_dash_prefix(words)


def _match_dash_prefix(words: list[str]) -> _Match | None:
    """A word whose leading dash-separated pieces name a shipped part (``RTX-PRO-6000-Blackwell-Server``
    is ``rtx-pro-6000``); a dropped ``PCIe`` piece is a form factor, not a qualifier."""
    parts = _names()[0]
    for i, word in enumerate(words):
        pieces = _strip_memory(word)[0].split("-")
        for k in range(len(pieces) - 1, 0, -1):
            key = _norm("-".join(pieces[:k]))
            if key in parts:
                dropped = [p.lower() for p in pieces[k:]]
                form = f"{word} is not a shipped accelerator" if set(dropped) & set(UNSHIPPED_FORM_WORDS) \
                    else None
                return _Match(parts[key], None, _strip_memory(word)[1], i + 1, form)
    return None


def _leading_count(head: str) -> tuple[int | None, str]:
    m = re.match(rf"^\s*(\d+)\s*nodes?{_TIMES}(\d+){_TIMES}", head, flags=re.IGNORECASE)
    if m:
        return int(m.group(1)) * int(m.group(2)), head[m.end():]
    m = re.match(rf"^\s*(\d+){_TIMES}(?=[A-Za-z])", head)
    if m:
        return int(m.group(1)), head[m.end():]
    return None, head


def _inner_count(inside: str, accelerator: str) -> int | None:
    """``(NxPART)`` naming the same part."""
    for m in re.finditer(rf"(\d+){_TIMES}([A-Za-z][\w-]*)", inside):
        found = _match_part([m.group(2)])
        if found is not None and found.accelerator == accelerator:
            return int(m.group(1))
    return None


def _node_count(accelerator: str) -> int | None:
    """Devices of the shipped HGX/DGX board of an accelerator (one node)."""
    _, systems, _ = _names()
    for name, (acc, count) in systems.items():
        if acc == accelerator and name.startswith("hgx-"):
            return count
    return None


def _memory(text: str, accelerator: str, written: float | None) -> tuple[float | None, str | None]:
    """Memory written with the part and whether it matches the shipped capacity."""
    m = re.search(r"(?<![\d.])(\d+(?:\.\d+)?)\s*GB\b(?!\s*/)", text, flags=re.IGNORECASE)
    size = written if written is not None else (float(m.group(1)) if m else None)
    if size is None:
        return None, None
    shipped = _names()[2][accelerator]
    if abs(size - shipped) > MEMORY_TOLERANCE * shipped:
        return size, (f"memory variant {size:g} GB differs from the shipped {accelerator} "
                      f"({shipped:g} GB)")
    return size, None


def parse_hardware(text: object) -> HardwareName:
    """Read a hardware string (see module docstring).

    Parameters
    ----------
    text : str
        The hardware cell (``"H200-SXM-141GB (x8)"``, ``"8xB200"``, ``"b200_sxm"``...).

    Returns
    -------
    HardwareName
        Never raises for a bad string: what could not be read is in ``problem``.
    """
    raw = "" if text is None or (isinstance(text, float) and text != text) else str(text)
    if not raw.strip():
        return HardwareName(raw, None, None, problem="empty hardware string")
    head, inside = _split(raw)
    if "+" in head:
        sides = [_match_part(_words(_leading_count(s)[1])) for s in head.split("+")]
        kinds = sorted({s.accelerator for s in sides if s is not None})
        if len(kinds) > 1:
            return HardwareName(raw, None, None, problem=f"mixes accelerator kinds {' + '.join(kinds)}; "
                                                         "one kind per row")
        head = head.split("+")[0]
    count, rest = _leading_count(head)
    explicit = re.search(r"\(\s*[x×]\s*(\d+)\s*\)", raw)
    if explicit:
        count = int(explicit.group(1))
    found = _match_part(_words(rest))
    if found is None:
        found = _match_part(_words(inside))
    if found is None:
        arch = re.search(r"\bSM\s?(\d{2,3})\b", raw)
        first = (_words(rest) or [raw.strip()])[0]
        why = (f"names a GPU architecture (SM{arch.group(1)}), not a part" if arch else
               f"part {first!r} is not a shipped accelerator or system")
        return HardwareName(raw, None, count, problem=why)
    if found.form_problem:
        return HardwareName(raw, None, count, problem=found.form_problem)
    acc, notes = found.accelerator, []
    memory, problem = _memory(" ".join(_words(rest)), acc, found.memory_gb)
    if explicit:
        pass
    elif count is None and found.system_count is not None:
        count = found.system_count
        notes.append(f"count from the shipped system ({count} devices)")
    elif count is None and (inner := _inner_count(inside, acc)) is not None:
        count = inner
    elif count is None and any(re.search(rf"\b{w}\b", raw.lower()) for w in UNKNOWN_COUNT_WORDS):
        pass
    elif count is None and re.search(r"\bnode\b", raw, flags=re.IGNORECASE) and _node_count(acc):
        count = _node_count(acc)
        notes.append(f"one node = the shipped HGX board of {acc} ({count} devices)")
    elif count is None:
        count = 1
        notes.append("no count written: one device")
    if count is None and problem is None:
        problem = "device count not stated"
    if problem is not None and "memory variant" in problem:
        return HardwareName(raw, None, count, memory, problem, tuple(notes))
    return HardwareName(raw, acc, count, memory, problem, tuple(notes))
