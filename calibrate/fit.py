"""Torch-free half of calibrate/probe.py: asking memest for its prediction of a probe run, and
fitting the device profile's context_mib and fragmentation to measured peaks.

memest's overhead model (libmemest/src/overheads/overheads.cpp) puts the peak of a stage at

    peak = context + cp_buffers + modelled * (1 + fragmentation)

where `modelled` is everything the model counts but the context and the CP buffers (weights,
gradients, optimizer states, activations, the activation corrections, the bf16 logits, the SP and
PP buffers). For a run on one GPU (no CP) a measured peak R therefore reads

    R - modelled = context + fragmentation * modelled

a straight line in `modelled`: its intercept is the context, its slope the fragmentation.
fit_context_fragmentation() fits that line by least squares.
"""
from __future__ import annotations

import copy
import json
import math
import os
import shutil
import subprocess
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

MIB = 1 << 20
GIB = 1 << 30

# Accepted ranges of the profile fields (libmemest/src/model/gpu_profile.hpp).
FRAGMENTATION_MAX = 10.0


def strip_measured(profile: Mapping[str, Any]) -> Dict[str, Any]:
    """The profile as the library's gpu reader takes it today: without the "measured" block
    (it refuses unknown fields and does not know that one yet)."""
    return {k: v for k, v in profile.items() if k != "measured"}


def modelled_bytes(response: Mapping[str, Any]) -> float:
    """What memest multiplies by (1 + fragmentation) on the peak stage of a pretrain response:
    the stage's peak less its context, fragmentation and CP buffers."""
    stage = response["stages"][response["peak_stage"]]
    overheads = stage["overheads"]
    cp_buffers = 0.0
    if response["layout"]["cp"] > 1:
        cp_buffers = response["gpu"]["profile"]["cp_buffer_mib"] * MIB
    return (stage["peak_bytes"] - overheads["context_bytes"] - overheads["fragmentation_bytes"]
            - cp_buffers)


def fit_context_fragmentation(points: Iterable[Tuple[float, float]]) -> Dict[str, Any]:
    """Least squares of measured = context + modelled * (1 + fragmentation) over
    (modelled_bytes, measured_bytes) pairs.

    Returns context_bytes, fragmentation, rms_residual_bytes, points, and `unclamped` (the
    unconstrained solution). The result is kept in the library's ranges: a negative
    fragmentation is refitted at 0 (context = mean of measured - modelled), a negative context
    at 0 (fragmentation through the origin), and `clamped` says so. Raises ValueError with fewer
    than 2 points or when every point has the same modelled bytes.
    """
    pts = [(float(b), float(r)) for b, r in points]
    if len(pts) < 2:
        raise ValueError("the fit needs 2 or more runs")
    for b, r in pts:
        if not (math.isfinite(b) and math.isfinite(r)) or b <= 0 or r <= 0:
            raise ValueError("modelled and measured bytes must be positive and finite")
    n = len(pts)
    xs = [b for b, _ in pts]
    ys = [r - b for b, r in pts]  # context + fragmentation * modelled
    mx = sum(xs) / n
    my = sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx <= 0:
        raise ValueError("the runs must differ in their modelled bytes (vary seq, micro-batch or checkpointing)")
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    intercept = my - slope * mx
    unclamped = {"context_bytes": intercept, "fragmentation": slope}

    context, frag, clamped = intercept, slope, False
    if frag < 0:
        frag, context, clamped = 0.0, my, True
    if frag > FRAGMENTATION_MAX:
        frag, clamped = FRAGMENTATION_MAX, True
        context = sum(y - frag * x for x, y in zip(xs, ys)) / n
    if context < 0:
        context, clamped = 0.0, True
        frag = sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)
        frag = min(max(frag, 0.0), FRAGMENTATION_MAX)
    rms = math.sqrt(sum((r - (context + b * (1 + frag))) ** 2 for b, r in pts) / n)
    return {"form": "measured_peak = context + modelled * (1 + fragmentation)",
            "context_bytes": context, "fragmentation": frag, "rms_residual_bytes": rms,
            "points": n, "clamped": clamped, "unclamped": unclamped}


def update_profile(base: Mapping[str, Any], fit: Mapping[str, Any],
                   probe: Mapping[str, Any]) -> Dict[str, Any]:
    """The base profile with the fitted context_mib and fragmentation, and the probe's record
    (runs, fit, settings) as measured.probe; other fields and measured figures are kept."""
    out = {k: copy.deepcopy(v) for k, v in base.items() if k != "measured"}
    out["context_mib"] = round(fit["context_bytes"] / MIB, 1)
    out["fragmentation"] = round(fit["fragmentation"], 4)
    measured = copy.deepcopy(dict(base.get("measured", {})))
    record = dict(probe)
    record["fit"] = dict(fit)
    measured["probe"] = record
    out["measured"] = measured
    return out


def hf_config(model: Mapping[str, int], max_seq: int) -> Dict[str, Any]:
    """The probe's model as a Hugging Face Llama config.json, which memest reads as a model."""
    return {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "hidden_size": model["hidden"], "intermediate_size": model["intermediate"],
        "num_attention_heads": model["heads"], "num_hidden_layers": model["layers"],
        "num_key_value_heads": model["kv_heads"], "vocab_size": model["vocab"],
        "max_position_embeddings": max_seq, "rms_norm_eps": 1e-5, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
    }


def probe_request(model: Mapping[str, int], gpu: Mapping[str, Any], seq_len: int,
                  micro_batch: int, accum: int, checkpointing: bool,
                  max_seq: Optional[int] = None) -> Dict[str, Any]:
    """memest's pretrain request for one probe run on one GPU. Its defaults match the probe's
    training: bf16 weights, fp32 gradients, Adam(W) with fp32 master weights (2 + 4 + 12 bytes
    per parameter), FlashAttention (SDPA), full recomputation for activation checkpointing."""
    return {
        "mode": "pretrain", "model": hf_config(model, max_seq or seq_len), "gpu": strip_measured(gpu),
        "parallel": {"gpus": 1, "tp": 1, "cp": 1, "pp": 1},
        "training": {"seq_len": seq_len, "micro_batch": micro_batch,
                     "global_batch": micro_batch * accum,
                     "recompute": "full" if checkpointing else "none",
                     "flash_attention": True},
    }


def find_memest_cli(explicit: Optional[str] = None) -> Optional[str]:
    """The memest command: --memest-cli, else $MEMEST_CLI, else memest on PATH."""
    if explicit:
        return explicit
    if os.environ.get("MEMEST_CLI"):
        return os.environ["MEMEST_CLI"]
    return shutil.which("memest")


def memest_request(request: Mapping[str, Any], cli: Optional[str] = None) -> Dict[str, Any]:
    """memest's answer to a request: through the Python binding (memest.request) when it is
    importable and no command is named, else through `memest request` (the JSON entry point on
    stdin). Raises RuntimeError with the library's message on a refused request."""
    if cli is None:
        try:
            import memest  # type: ignore[import-not-found]
        except ImportError:
            memest = None
        if memest is not None:
            return memest.request(dict(request)).to_dict()
    command = find_memest_cli(cli)
    if not command:
        raise RuntimeError("memest is not available: install the Python binding "
                           "(bindings/python) or put the memest command on PATH (or --memest-cli)")
    done = subprocess.run([command, "request"], input=json.dumps(request), capture_output=True,
                          text=True, check=False)
    try:
        doc = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise RuntimeError(f"{command} request: exit {done.returncode}: {done.stderr.strip()}") from None
    if not doc.get("ok", False):
        err = doc.get("error", {})
        raise RuntimeError(f"memest refused the request: {err.get('field', '')}: {err.get('message', '')}")
    return doc


def fit_runs(runs: Sequence[Mapping[str, Any]]) -> Dict[str, Any]:
    """fit_context_fragmentation over probe runs that hold modelled_bytes and measured_peak_bytes
    (runs without a measurement, e.g. out of memory, are left out)."""
    pts: List[Tuple[float, float]] = [(r["modelled_bytes"], r["measured_peak_bytes"]) for r in runs
                                      if r.get("measured_peak_bytes") and r.get("modelled_bytes")]
    return fit_context_fragmentation(pts)
