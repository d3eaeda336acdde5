"""The links of a model replica: which one carries its collectives and host-KV reads, and what a message costs.

:class:`LinkTimes` is the part of :class:`~perfmodel.core.step.StepModel` that resolves the scale-up
link (or an override, or a scale-out tier when a stage's group spans several scale-up domains), the
host link, and costs one :class:`~perfmodel.core.ops.Message`: flat within a scale-up domain (the
algorithms of :mod:`perfmodel.core.comm`, hop counts of :mod:`perfmodel.core.topology` on a link that
declares a topology, or a measured whole-collective latency), hierarchical beyond it. It reads
``hardware``, ``parallel`` and ``efficiency``, sets ``domain``, ``out_bandwidth``, ``out_alpha``,
``network`` and ``assumptions`` on the step model, and costs messages on the ``link_bandwidth`` and
``link_alpha`` the step model keeps from :meth:`LinkTimes._collective_link`.
"""

from __future__ import annotations

import numpy as np

from ..errors import ConfigError
from ..hardware import Link, load_link
from . import comm, topology
from .ops import Message


class LinkTimes:
    """Link resolution and message times of a :class:`~perfmodel.core.step.StepModel` (a mixin)."""

    def _collective_link(self, override) -> tuple[float, float, str | None]:
        """Scale-up link (bandwidth per direction, α, id); also sets the scale-out tier if needed.

        When a stage's group spans more devices than the scale-up domain (multi-node TP or EP),
        collectives are costed hierarchically: inside each domain on the scale-up link, across
        domains on the scale-out port (see :meth:`_message_time`).
        """
        self.domain, self.out_bandwidth, self.out_alpha = None, np.inf, 0.0
        self.network = None  # hop-count model of a link that declares a topology (core.topology)
        self.assumptions: list[str] = []
        if self.parallel.group == 1 and self.parallel.pp == 1:
            return np.inf, 0.0, None
        if override is not None:
            link = load_link(override) if not isinstance(override, Link) else override
            self.network = link.network()
            return link.bandwidth.value, link.alpha.value, link.id
        port = self.hardware.scale_up
        if port is None:
            raise ConfigError(f"{self.hardware.id} has no scale-up port in its spec; "
                              f"tp*dp_attention*pp > 1 needs one (or pass scale_up=LINK)")
        link = load_link(port.link)
        self.network = link.network()
        if port.domain is not None and self.parallel.group > port.domain and self.network is None:
            out = self.hardware.scale_out
            if out is None:  # e.g. LP30: racks joined by the same C2C fabric, no separate NIC published
                self.assumptions.append(
                    f"{self.parallel.group} devices exceed {self.hardware.id}'s scale-up domain of "
                    f"{port.domain} and no scale-out port is specified: collectives are costed flat on "
                    f"{link.id} across domains")
                bw = port.bandwidth.value if port.bandwidth else link.bandwidth.value
                return bw, link.alpha.value, link.id
            if self.parallel.group % port.domain:
                raise ConfigError(f"tp*dp_attention = {self.parallel.group} spanning several scale-up "
                                  f"domains must be a multiple of the domain size {port.domain}")
            out_link = load_link(out.link)
            self.domain = port.domain
            self.out_bandwidth = out.bandwidth.value if out.bandwidth else out_link.bandwidth.value
            self.out_alpha = out_link.alpha.value
        bw = port.bandwidth.value if port.bandwidth else link.bandwidth.value
        return bw, link.alpha.value, link.id

    def _host_bandwidth(self) -> float:
        port = self.hardware.host_link
        if port is None:
            raise ConfigError(f"kv_host_fraction > 0 needs a host link; {self.hardware.id}'s spec has none")
        return port.bandwidth.value if port.bandwidth else load_link(port.link).bandwidth.value

    #: Bytes each rank moves, as a fraction of the message size, for n ranks.
    _VOLUME = {"all_reduce": lambda n: 2.0 * (n - 1) / n, "all_gather": lambda n: (n - 1) / n,
               "reduce_scatter": lambda n: (n - 1) / n, "all_to_all": lambda n: (n - 1) / n,
               "p2p": lambda n: 1.0}

    def _message_time(self, msg: Message) -> np.ndarray:
        """Time of one collective [s], flat within a scale-up domain, hierarchical beyond it.

        Hierarchical (n ranks in domains of d, m = n/d domains): the scale-up part moves the
        collective's volume over d ranks; the scale-out part moves it over m ranks on a share S/d
        (all-to-all: the (n − d)/n of the data leaving the domain), with ⌈log2 m⌉ latency steps
        (twice for an all-reduce) at the scale-out α. Each NIC carries its own GPU's share.
        """
        if msg.kind != "p2p" and self.domain is not None and msg.ranks > self.domain:
            d, m = self.domain, msg.ranks / self.domain
            local = self._flat_time(Message(msg.name, msg.kind, msg.size, d))
            bw_out = self.out_bandwidth * self.efficiency.collective_bandwidth
            if msg.kind == "all_to_all":
                volume = (msg.ranks - d) / msg.ranks * msg.size
            else:
                volume = self._VOLUME[msg.kind](m) * msg.size / d
            steps = np.ceil(np.log2(m)) * (2.0 if msg.kind == "all_reduce" else 1.0)
            return local + steps * self.out_alpha + volume / bw_out
        return self._flat_time(msg)

    def _flat_time(self, msg: Message) -> np.ndarray:
        eff = self.efficiency
        bw = self.link_bandwidth * eff.collective_bandwidth
        n = msg.ranks
        if eff.collective_alpha > 0:  # measured whole-collective latency + volume / bandwidth
            return np.where(n > 1, eff.collective_alpha + self._VOLUME[msg.kind](n) * msg.size / bw, 0.0)
        if self.network is not None:  # the link declares a topology: hop counts (core.topology)
            return topology.collective_time(msg.kind, msg.size, int(n), bw, self.network)
        fn = {"all_reduce": comm.all_reduce_time, "all_gather": comm.all_gather_time,
              "reduce_scatter": comm.reduce_scatter_time, "all_to_all": comm.all_to_all_time}
        if msg.kind == "p2p":
            return comm.p2p_time(msg.size, bw, self.link_alpha)
        return fn[msg.kind](msg.size, n, bw, self.link_alpha)
