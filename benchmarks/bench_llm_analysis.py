"""CPU time of one llm-analysis inference estimate, for the README's comparison with ``predict``.

llm-analysis (PyPI ``llm-analysis``, https://github.com/cli99/llm-analysis) is not a dependency of
perfmodel: install it into a separate environment and run this script there, e.g.
``python -m venv /tmp/venv-llma && /tmp/venv-llma/bin/pip install llm-analysis &&
/tmp/venv-llma/bin/python benchmarks/bench_llm_analysis.py``.

The call timed is ``LLMAnalysis.inference(batch_size_per_gpu=b, seq_len=i, num_tokens_to_generate=o)``
on an analysis object built once (model, GPU, dtype and parallelism configs resolved beforehand, as
perfmodel's step-model cache does), with (b, i, o) near 8 / 2048 / 256 as in ``bench_predict.py``,
logging silenced. CPU seconds of this process, best of 5 runs of 200 calls.
"""

from __future__ import annotations

import logging
import platform
import time
from importlib.metadata import version


def main() -> None:
    from llm_analysis import analysis
    from llm_analysis.config import (
        ParallelismConfig,
        get_dtype_config_by_name,
        get_gpu_config_by_name,
        get_model_config_by_name,
    )

    logging.disable(logging.CRITICAL)
    print(f"python {platform.python_version()}, llm-analysis {version('llm-analysis')}")
    gpu = get_gpu_config_by_name("h100-sxm-80gb")
    dtype = get_dtype_config_by_name("w16a16e16")
    args = [(8 + k % 3, 2048 + 16 * (k % 7), 256 + 8 * (k % 5)) for k in range(200)]
    for model, tp in (("NousResearch_Llama-2-7b-hf", 1), ("upstage_Llama-2-70b-instruct-v2", 8)):
        la = analysis.LLMAnalysis(get_model_config_by_name(model), gpu, dtype, ParallelismConfig(tp_size=tp),
                                  flops_efficiency=0.6, hbm_memory_efficiency=0.8)
        times = []
        for _ in range(5):
            t0 = time.process_time()
            for b, i, o in args:
                la.inference(batch_size_per_gpu=b, seq_len=i, num_tokens_to_generate=o)
            times.append((time.process_time() - t0) / len(args))
        print(f"{model} tp{tp} on h100-sxm-80gb: {min(times) * 1e3:.3f} ms per inference() call")


if __name__ == "__main__":
    main()
