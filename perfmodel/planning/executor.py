"""Running many independent simulations: serially, on a local pool, or on a Dask cluster.

The analytic sweep is one numpy pass and needs none of this; serving simulations (one event loop per
load point) are independent tasks. :func:`map_tasks` accepts

- ``None``: run in this process, in order;
- any :class:`concurrent.futures.Executor` (``ProcessPoolExecutor`` for CPU-bound simulations on
  one machine, ``ThreadPoolExecutor``);
- a :class:`dask.distributed.Client` for more than one machine (``pip install perfmodel[dist]``):
  ``Client("tcp://scheduler:8786")`` or a ``LocalCluster`` to test.

Tasks and the function must be picklable (module-level functions, plain data). ``progress`` draws a
bar of the tasks done (:mod:`perfmodel.progress`; off by default).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError
from ..progress import Bar

if TYPE_CHECKING:   # pandas is imported where a frame is made (it takes about 1 s to import)
    import pandas as pd


def _is_dask(executor: Any) -> bool:
    return type(executor).__module__.split(".")[0] == "distributed"


def map_tasks(fn: Callable[[Any], Any], tasks: Sequence[Any], executor: Any = None,
              progress: bool | None = False, label: str = "tasks") -> list[Any]:
    """Apply ``fn`` to every task and return the results in task order.

    Parameters
    ----------
    fn : callable
        Module-level function of one argument (picklable for process pools and Dask).
    tasks : sequence
        Arguments.
    executor : None | concurrent.futures.Executor | dask.distributed.Client
        Where to run (see the module docstring).
    progress : bool | None
        A bar of the tasks done (:mod:`perfmodel.progress`: True always, None only when stderr is a
        terminal, False never).
    label : str
        Name of one task on the bar (``"candidates"``).

    Returns
    -------
    list
        ``[fn(t) for t in tasks]``, whatever the completion order was. An exception in a task is
        raised here.
    """
    tasks = list(tasks)
    with Bar(len(tasks), label, progress, unit="task") as bar:
        return _run(fn, tasks, executor, bar)


def _run(fn: Callable[[Any], Any], tasks: list[Any], executor: Any, bar: Bar) -> list[Any]:
    if executor is None:
        out = []
        for t in tasks:
            out.append(fn(t))
            bar.update()
        return out
    if not hasattr(executor, "submit"):
        raise ConfigError(f"executor: expected None, a concurrent.futures.Executor or a "
                          f"dask.distributed.Client, got {type(executor).__name__}")
    futures = [executor.submit(fn, t, pure=False) if _is_dask(executor) else executor.submit(fn, t)
               for t in tasks]
    if _is_dask(executor):
        from distributed import as_completed as dask_completed

        for _ in dask_completed(futures):
            bar.update()
        return list(executor.gather(futures))
    from concurrent.futures import as_completed

    index = {id(f): k for k, f in enumerate(futures)}
    results: list[Any] = [None] * len(tasks)
    for f in as_completed(futures):
        results[index[id(f)]] = f.result()
        bar.update()
    return results


def _simulate_task(task: Mapping[str, Any]) -> dict[str, Any]:
    """One simulation of a serving sweep (module level so that it pickles)."""
    from ..serving import simulate

    w = task["workload"]
    w = w.with_load(rate=task["rate"]) if task.get("rate") is not None else w
    if task.get("concurrency") is not None:
        w = w.with_load(concurrency=int(task["concurrency"]))
    res = simulate(task["step_model"], w, engine=task["engine"], replicas=task["replicas"],
                   seed=task["seed"], requests=task["requests"])
    keep = {k: v for k, v in task.items() if k not in ("workload", "step_model")}
    return {**keep, **res.summary()}


def serving_sweep(step_models: Mapping[str, Any], workload: Any, *, rates: Iterable[float] | None = None,
                  concurrencies: Iterable[int] | None = None, replicas: Iterable[int] = (1,),
                  engine: Any = "vllm", seed: int = 0, requests: int | None = None, executor: Any = None,
                  progress: bool | None = False) -> pd.DataFrame:
    """Simulate every (deployment, load, replicas) combination, possibly in parallel.

    Parameters
    ----------
    step_models : mapping
        Name -> step model (a :class:`~perfmodel.core.step.StepModel`, a stand-in, or ``StepModel``
        keyword arguments, which pickle cheaply and are built on the worker).
    workload : Workload | str | dict
        Lengths, SLO and arrival process; the load is replaced by each rate or concurrency.
    rates, concurrencies : iterable
        Open-loop arrival rates [requests/s] or closed-loop client counts (exactly one).
    replicas : iterable of int
        Replica counts.
    engine, seed, requests
        As for :func:`perfmodel.serving.simulate`.
    executor : None | Executor | dask.distributed.Client
        See :func:`map_tasks`.
    progress : bool | None
        A bar of the simulations done (see :func:`map_tasks`).

    Returns
    -------
    pandas.DataFrame
        One row per simulation: the task's fields and the simulation summary (attainment, goodput,
        percentiles...).
    """
    from ..serving import load_workload

    if (rates is None) == (concurrencies is None):
        raise ConfigError("serving_sweep: give exactly one of rates= or concurrencies=")
    w = load_workload(workload)
    loads = [("rate", float(r)) for r in rates] if rates is not None else [
        ("concurrency", int(c)) for c in concurrencies]  # type: ignore[union-attr]
    tasks = [{"deployment": name, "step_model": sm, "workload": w, key: value, "replicas": int(r),
              "engine": engine, "seed": seed, "requests": requests}
             for name, sm in step_models.items() for key, value in loads for r in replicas]
    import pandas as pd

    return pd.DataFrame(map_tasks(_simulate_task, tasks, executor, progress, "simulations"))
