"""Micro-batch ping-pong of the GPU/LPU split: two micro-batches beat one where the arithmetic says so."""

from __future__ import annotations

import numpy as np
import pytest

from perfmodel.deployment import predict_deployment
from perfmodel.deployment.split import micro_batch_count, pipelined_layers_time

US = 1e-6


def test_overlap_by_hand():
    """a = f = 100 us per layer for the whole batch (work halves with the micro-batch), 50 us per
    message, 10 layers. One micro-batch: 10 (100 + 100 + 2*50) = 3,000 us. Two: each micro-batch
    takes 50 + 50 + 100 = 200 us per layer, the busiest pool works 50 us per micro-batch:
    max(2*10*50 + 200 - 50, 10*200 + 50) = 2,050 us."""
    one = pipelined_layers_time(100 * US, 100 * US, 50 * US, 0.0, 10, 1)
    two = pipelined_layers_time(50 * US, 50 * US, 50 * US, 0.0, 10, 2)
    assert float(one) == pytest.approx(3000 * US)
    assert float(two) == pytest.approx(2050 * US)
    # fixed work per micro-batch (does not halve): two micro-batches cannot win
    fixed = pipelined_layers_time(100 * US, 100 * US, 5 * US, 0.0, 10, 2)
    assert float(fixed) > float(pipelined_layers_time(100 * US, 100 * US, 5 * US, 0.0, 10, 1))


def test_collective_latency_is_not_busy_time():
    """a = 60 us of which 40 us is a collective's latency: the pool is busy 20 us per micro-batch, so
    the dependency chain (10 * (60 + 60 + 2*10) + 40 = 1,440 us) sets the time, not 2*10*60."""
    t = pipelined_layers_time(60 * US, 60 * US, 10 * US, 0.0, 10, 2, a_latency=40 * US, f_latency=40 * US)
    assert float(t) == pytest.approx(10 * 140 * US + 20 * US)


def test_micro_batches_capped_by_sequences():
    assert np.array_equal(micro_batch_count(4, [1, 2, 3, 8, 0.5]), [1, 2, 3, 4, 1])


def _split(alpha: str, n: int) -> dict:
    return {"model": "llama-3.1-70b", "precision": {"weights": "fp8", "kv_cache": "fp8"}, "efficiency": "datasheet",
            "pools": {"gpu": {"hardware": "h200-sxm", "count": 8, "tp": 8},
                      "lpu": {"hardware": "groq-lp30", "count": 512}},
            "placement": {"prefill": "gpu", "decode_attention": "gpu", "decode_ffn": "lpu"},
            "links": {"gpu-lpu": {"bandwidth": "200 GB/s", "alpha": alpha}}, "options": {"micro_batches": n}}


def test_two_micro_batches_beat_one_on_the_split():
    """Llama-3.1-70B, attention on 8 H200 (datasheet), FFN on 512 LP30, 25 us per message: at 64 and
    256 sequences the attention and FFN work shrink with the micro-batch and 2L alpha = 4 ms of exchange
    is there to hide, so two micro-batches beat one; at batch 1 only one micro-batch can form and the
    step is unchanged."""
    b = [1, 64, 256]
    one = predict_deployment(_split("25 us", 1), isl=4096, osl=256, batch=b)
    two = predict_deployment(_split("25 us", 2), isl=4096, osl=256, batch=b)
    t1, t2 = np.asarray(one.tpot_s), np.asarray(two.tpot_s)
    assert t2[0] == t1[0]
    assert np.all(t2[1:] < t1[1:])
    assert np.all(np.asarray(two.comm_s_per_token)[1:] < np.asarray(one.comm_s_per_token)[1:])


@pytest.mark.slow  # runs every generating command: about 50 s of CPU, 3 min wall on a loaded 2-core VM
def test_docs_numbers_are_generated():
    """Every command output quoted in the pages of scripts/gen_doc_blocks.py (README, placement, sram,
    calibration, planning) is what the code prints today."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, str(root / "scripts" / "gen_doc_blocks.py"), "--check"],
                         capture_output=True, text=True, timeout=300, cwd=root)
    assert out.returncode == 0, out.stdout + out.stderr
