#!/usr/bin/env python3
"""calibrate/probe.py: measure real PyTorch training steps on one GPU and fit the device
profile's context_mib and fragmentation to them.

It builds a small Llama-style decoder (random weights, nothing downloaded: RMSNorm, rotary
embeddings, SwiGLU, grouped-query attention through scaled_dot_product_attention), trains it for
a few steps at several sequence lengths, micro-batches and with / without activation
checkpointing (each run in a fresh process), records torch.cuda.max_memory_allocated /
max_memory_reserved and the device memory held outside the caching allocator, asks memest for its
prediction of the same runs, and fits

    measured_peak = context + modelled * (1 + fragmentation)

(memest's overhead model; see fit.py). It writes the profile it started from (--profile, e.g.
memest-calibrate's output) with context_mib and fragmentation replaced and the runs in
measured.probe.

Training matches memest's pretrain defaults: bf16 weights, fp32 gradient buffers (each bf16
gradient is added into its fp32 buffer as soon as backward produces it), fp32 master weights and
AdamW's two fp32 moments: 2 + 4 + 12 bytes per parameter, as Megatron-LM's mixed precision.

PyTorch (2.1 or later, with CUDA) is needed only to run the probe: --help and --plan (the runs
and memest's predictions) work without it; without it the probe exits with status 2.
"""
from __future__ import annotations

import argparse
import datetime
import itertools
import json
import os
import subprocess
import sys
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit  # noqa: E402  (torch-free: the fit and the memest requests)

EXIT_NO_TORCH = 2
DEFAULT_MODEL = {"hidden": 2048, "layers": 12, "heads": 16, "kv_heads": 4,
                 "intermediate": 5632, "vocab": 32000}


def int_list(text: str) -> List[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers, got {text!r}")
    return values


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="probe.py",
        description="Train a small Llama-style model on one GPU for a few steps per setting, and "
                    "fit the device profile's context_mib and fragmentation to the measured peaks "
                    "(memest's overhead model). Needs PyTorch with CUDA, and memest (the Python "
                    "binding, or the memest command).",
        epilog="Exit status: 0 profile written; 1 no GPU, a run failed or too few runs to fit; "
               "2 PyTorch missing or a bad argument.")
    p.add_argument("--profile", help="device profile to start from (memest-calibrate's output); "
                   "default: name, capacity and GPU count from PyTorch")
    p.add_argument("-o", "--output", help="write the profile here (default: standard output)")
    p.add_argument("--device", type=int, default=0, help="CUDA device index (default 0)")
    m = p.add_argument_group("model (random weights)")
    m.add_argument("--hidden", type=int, default=DEFAULT_MODEL["hidden"])
    m.add_argument("--layers", type=int, default=DEFAULT_MODEL["layers"])
    m.add_argument("--heads", type=int, default=DEFAULT_MODEL["heads"])
    m.add_argument("--kv-heads", type=int, default=DEFAULT_MODEL["kv_heads"])
    m.add_argument("--intermediate", type=int, default=DEFAULT_MODEL["intermediate"])
    m.add_argument("--vocab", type=int, default=DEFAULT_MODEL["vocab"])
    r = p.add_argument_group("runs (every combination)")
    r.add_argument("--seq", type=int_list, default=[1024, 2048, 4096],
                   help="sequence lengths (default 1024,2048,4096)")
    r.add_argument("--micro-batch", type=int_list, default=[1, 2],
                   help="micro-batch sizes (default 1,2)")
    r.add_argument("--checkpointing", choices=["off", "on", "both"], default="both",
                   help="activation checkpointing per layer (memest: recompute full); default both")
    r.add_argument("--steps", type=int, default=3, help="optimizer steps per run (default 3)")
    r.add_argument("--accum", type=int, default=1,
                   help="micro-batches per step, gradient accumulation (default 1)")
    p.add_argument("--memest-cli", help="the memest command to ask (default: the Python binding "
                   "if importable, else $MEMEST_CLI or memest on PATH)")
    p.add_argument("--plan", action="store_true",
                   help="print the runs and memest's predictions as JSON, without PyTorch")
    p.add_argument("--worker", help=argparse.SUPPRESS)  # one run, in a child process
    return p


def model_of(args: argparse.Namespace) -> Dict[str, int]:
    return {"hidden": args.hidden, "layers": args.layers, "heads": args.heads,
            "kv_heads": args.kv_heads, "intermediate": args.intermediate, "vocab": args.vocab}


def check_args(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    model = model_of(args)
    for key, value in model.items():
        if value <= 0:
            p.error(f"--{key.replace('_', '-')}: expected a positive integer")
    if args.hidden % args.heads or args.heads % args.kv_heads or (args.hidden // args.heads) % 2:
        p.error("--hidden must split into --heads heads of even size, --heads into --kv-heads groups")
    if args.steps <= 0 or args.accum <= 0:
        p.error("--steps and --accum: expected positive integers")


def runs_of(args: argparse.Namespace) -> List[Dict[str, Any]]:
    ckpt = {"off": [False], "on": [True], "both": [False, True]}[args.checkpointing]
    return [{"seq_len": s, "micro_batch": b, "checkpointing": c, "accum": args.accum,
             "steps": args.steps}
            for c, s, b in itertools.product(ckpt, args.seq, args.micro_batch)]


def base_gpu_for_plan(args: argparse.Namespace) -> Dict[str, Any]:
    if args.profile:
        return load_profile(args.profile)
    return {"name": "probe plan (no profile)", "memory_gib": 80, "gpus_per_node": 1}


def load_profile(path: str) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            profile = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        raise SystemExit(f"probe.py: --profile {path}: {e}")
    if not isinstance(profile, dict):
        raise SystemExit(f"probe.py: --profile {path}: expected a JSON object")
    return profile


def predict(args: argparse.Namespace, gpu: Dict[str, Any], run: Dict[str, Any]) -> Dict[str, Any]:
    req = fit.probe_request(model_of(args), gpu, run["seq_len"], run["micro_batch"], run["accum"],
                            run["checkpointing"], max(args.seq))
    resp = fit.memest_request(req, args.memest_cli)
    return {"modelled_bytes": fit.modelled_bytes(resp), "memest_peak_bytes": resp["peak_bytes"],
            "num_parameters": resp["model"]["num_parameters"]}


# ------------------------------------------------------------------------------------------------
# The worker: one run in its own process (a fresh CUDA context and caching allocator)

def build_model(torch: Any, cfg: Dict[str, int]) -> Any:
    """The decoder in bf16, on the current device context (torch.device(...) around the call)."""
    nn = torch.nn
    F = torch.nn.functional
    head_dim = cfg["hidden"] // cfg["heads"]
    dt = torch.bfloat16

    def linear(i: int, o: int) -> Any:
        return nn.Linear(i, o, bias=False, dtype=dt)

    class RMSNorm(nn.Module):
        def __init__(self, dim: int, eps: float = 1e-5) -> None:
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim, dtype=dt))

        def forward(self, x: Any) -> Any:
            xf = x.float()
            xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
            return xf.to(x.dtype) * self.weight

    def rotate(x: Any, cos: Any, sin: Any) -> Any:
        half = x.shape[-1] // 2
        x1, x2 = x[..., :half], x[..., half:]
        return x * cos + torch.cat((-x2, x1), dim=-1) * sin

    class Attention(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            h, nh, nkv = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
            self.nh, self.nkv = nh, nkv
            self.wq = linear(h, nh * head_dim)
            self.wk = linear(h, nkv * head_dim)
            self.wv = linear(h, nkv * head_dim)
            self.wo = linear(nh * head_dim, h)

        def forward(self, x: Any, cos: Any, sin: Any) -> Any:
            b, s, _ = x.shape
            q = self.wq(x).view(b, s, self.nh, head_dim).transpose(1, 2)
            k = self.wk(x).view(b, s, self.nkv, head_dim).transpose(1, 2)
            v = self.wv(x).view(b, s, self.nkv, head_dim).transpose(1, 2)
            q, k = rotate(q, cos, sin), rotate(k, cos, sin)
            if self.nkv != self.nh:
                if GQA_IN_SDPA:
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
                else:
                    rep = self.nh // self.nkv
                    o = F.scaled_dot_product_attention(q, k.repeat_interleave(rep, dim=1),
                                                       v.repeat_interleave(rep, dim=1), is_causal=True)
            else:
                o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            return self.wo(o.transpose(1, 2).reshape(b, s, self.nh * head_dim))

    class SwiGLU(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            h, f = cfg["hidden"], cfg["intermediate"]
            self.gate = linear(h, f)
            self.up = linear(h, f)
            self.down = linear(f, h)

        def forward(self, x: Any) -> Any:
            return self.down(F.silu(self.gate(x)) * self.up(x))

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attn_norm = RMSNorm(cfg["hidden"])
            self.attn = Attention()
            self.mlp_norm = RMSNorm(cfg["hidden"])
            self.mlp = SwiGLU()

        def forward(self, x: Any, cos: Any, sin: Any) -> Any:
            x = x + self.attn(self.attn_norm(x), cos, sin)
            return x + self.mlp(self.mlp_norm(x))

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(cfg["vocab"], cfg["hidden"], dtype=dt)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg["layers"]))
            self.norm = RMSNorm(cfg["hidden"])
            self.head = linear(cfg["hidden"], cfg["vocab"])

        def rope(self, s: int, device: Any, dtype: Any) -> Any:
            inv = 1.0 / (500000.0 ** (torch.arange(0, head_dim, 2, device=device).float() / head_dim))
            freqs = torch.outer(torch.arange(s, device=device).float(), inv)
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos().to(dtype), emb.sin().to(dtype)

        def forward(self, tokens: Any, checkpointing: bool) -> Any:
            x = self.embed(tokens)
            cos, sin = self.rope(tokens.shape[1], tokens.device, x.dtype)
            for block in self.blocks:
                if checkpointing:
                    x = torch.utils.checkpoint.checkpoint(block, x, cos, sin, use_reentrant=False)
                else:
                    x = block(x, cos, sin)
            return self.head(self.norm(x))

    return Decoder()


GQA_IN_SDPA = False


def fused_attention_only(torch: Any) -> Any:
    """A context in which scaled_dot_product_attention may not fall back to its math backend
    (which would keep the s x s scores that memest's FlashAttention formulas leave out): a run
    that no fused kernel accepts fails instead of measuring something else."""
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
    except ImportError:  # PyTorch < 2.3
        return torch.backends.cuda.sdp_kernel(enable_math=False)
    backends = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION]
    if hasattr(SDPBackend, "CUDNN_ATTENTION"):
        backends.append(SDPBackend.CUDNN_ATTENTION)
    return sdpa_kernel(backends)


def gqa_in_fused_sdpa(torch: Any, dev: Any, head_dim: int) -> bool:
    """Whether a fused SDPA kernel takes grouped K/V directly (enable_gqa, PyTorch 2.5+); else
    the probe repeats K and V to the query heads."""
    F = torch.nn.functional
    q = torch.randn(1, 4, 128, head_dim, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(1, 2, 128, head_dim, device=dev, dtype=torch.bfloat16, requires_grad=True)
    try:
        with fused_attention_only(torch):
            F.scaled_dot_product_attention(q, k, k, is_causal=True, enable_gqa=True).sum().backward()
        return True
    except (TypeError, RuntimeError):
        return False


def worker(spec: Dict[str, Any]) -> Dict[str, Any]:
    import torch  # only in the child process
    import torch.nn.functional as F
    import torch.utils.checkpoint  # noqa: F401

    global GQA_IN_SDPA
    dev = torch.device("cuda", spec["device"])
    torch.cuda.set_device(dev)
    cfg = spec["model"]
    free, total = torch.cuda.mem_get_info(dev)  # creates the context
    GQA_IN_SDPA = gqa_in_fused_sdpa(torch, dev, cfg["hidden"] // cfg["heads"])
    a = torch.ones(256, 256, device=dev, dtype=torch.bfloat16)
    (a @ a).sum().item()  # cuBLAS handle and workspace
    del a
    torch.cuda.synchronize()
    free, _ = torch.cuda.mem_get_info(dev)
    outside_start = (total - free) - torch.cuda.memory_reserved(dev)

    torch.manual_seed(0)
    with torch.device(dev):
        model = build_model(torch, cfg)
    params = [p for p in model.parameters()]
    masters = [p.detach().float() for p in params]            # fp32 master weights (4 B)
    grads = [torch.zeros_like(m) for m in masters]             # fp32 gradient buffers (4 B)
    per_param_hooks = hasattr(params[0], "register_post_accumulate_grad_hook")
    if per_param_hooks:
        for p, g in zip(params, grads):
            def accumulate(param: Any, g: Any = g) -> None:
                g.add_(param.grad)
                param.grad = None
            p.register_post_accumulate_grad_hook(accumulate)
    for m, g in zip(masters, grads):
        m.requires_grad_(True)
        m.grad = g
    try:
        opt = torch.optim.AdamW(masters, lr=1e-4, weight_decay=0.1, fused=True)  # 2 x 4 B moments
    except (TypeError, RuntimeError):
        opt = torch.optim.AdamW(masters, lr=1e-4, weight_decay=0.1)
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats(dev)

    s, b = spec["seq_len"], spec["micro_batch"]
    gen = torch.Generator(device=dev).manual_seed(1)
    loss_value = float("nan")
    start = time.perf_counter()
    with fused_attention_only(torch):
        for _ in range(spec["steps"]):
            for _ in range(spec["accum"]):
                tokens = torch.randint(cfg["vocab"], (b, s + 1), device=dev, generator=gen)
                logits = model(tokens[:, :-1], spec["checkpointing"])
                loss = F.cross_entropy(logits.float().view(-1, cfg["vocab"]),
                                       tokens[:, 1:].reshape(-1))
                del logits
                (loss / spec["accum"]).backward()
                loss_value = float(loss.detach())
                del loss
                if not per_param_hooks:
                    for p, g in zip(params, grads):
                        g.add_(p.grad)
                        p.grad = None
            opt.step()
            with torch.no_grad():
                for p, m in zip(params, masters):
                    p.copy_(m)
            for g in grads:
                g.zero_()
    torch.cuda.synchronize()
    seconds = (time.perf_counter() - start) / spec["steps"]

    free, _ = torch.cuda.mem_get_info(dev)
    outside = (total - free) - torch.cuda.memory_reserved(dev)
    max_reserved = torch.cuda.max_memory_reserved(dev)
    return {
        "ok": True,
        "max_memory_allocated": torch.cuda.max_memory_allocated(dev),
        "max_memory_reserved": max_reserved,
        "outside_allocator_bytes": outside,
        "outside_allocator_bytes_at_start": outside_start,
        "measured_peak_bytes": max_reserved + outside,
        "total_bytes": total,
        "seconds_per_step": seconds,
        "last_loss": loss_value,
        "parameters": sum(p.numel() for p in params),
        "per_parameter_gradient_hooks": per_param_hooks,
        "gqa_in_sdpa": GQA_IN_SDPA,
    }


def run_worker(spec_text: str) -> int:
    spec = json.loads(spec_text)
    import torch
    try:
        result = worker(spec)
    except torch.cuda.OutOfMemoryError as e:
        result = {"ok": False, "oom": True, "message": str(e).splitlines()[0]}
    print(json.dumps(result))
    return 0


# ------------------------------------------------------------------------------------------------

def main(argv: List[str]) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.worker:
        return run_worker(args.worker)
    check_args(p, args)
    runs = runs_of(args)

    if args.plan:
        gpu = base_gpu_for_plan(args)
        for run in runs:
            run.update(predict(args, gpu, run))
        print(json.dumps({"model": model_of(args), "runs": runs}, indent=2))
        return 0

    try:
        import torch
    except ImportError as e:
        print(f"probe.py: PyTorch is not installed ({e}); the probe trains on the GPU with it "
              "(--plan works without it)", file=sys.stderr)
        return EXIT_NO_TORCH
    version = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2] if x.isdigit())
    if version < (2, 1):  # scaled_dot_product_attention, torch.device(...) as context, grad hooks
        print(f"probe.py: PyTorch {torch.__version__} is too old (2.1 or later)", file=sys.stderr)
        return EXIT_NO_TORCH
    if not torch.cuda.is_available() or args.device >= torch.cuda.device_count():
        print(f"probe.py: no CUDA device {args.device} visible to PyTorch", file=sys.stderr)
        return 1

    if args.profile:
        base = load_profile(args.profile)
    else:
        props = torch.cuda.get_device_properties(args.device)
        base = {"name": props.name, "memory_gib": props.total_memory / fit.GIB,
                "gpus_per_node": torch.cuda.device_count()}
    records = []
    for run in runs:
        spec = dict(run, device=args.device, model=model_of(args))
        label = (f"seq {run['seq_len']} micro-batch {run['micro_batch']} "
                 f"checkpointing {'on' if run['checkpointing'] else 'off'}")
        print(f"probe.py: {label}", file=sys.stderr)
        child = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", json.dumps(spec)],
                               capture_output=True, text=True, check=False)
        lines = child.stdout.strip().splitlines()
        if child.returncode != 0 or not lines:
            tail = child.stderr.strip().splitlines()[-1:] or ["no output"]
            print(f"probe.py: run failed ({label}): {tail[0]}", file=sys.stderr)
            return 1
        result = json.loads(lines[-1])
        record = dict(run, **result)
        record.update(predict(args, base, run))
        records.append(record)
        if not result.get("ok"):
            print(f"probe.py: out of memory ({label}): left out of the fit", file=sys.stderr)

    try:
        result_fit = fit.fit_runs(records)
    except ValueError as e:
        print(f"probe.py: cannot fit: {e}", file=sys.stderr)
        return 1
    probe = {
        "tool": "calibrate/probe.py",
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(args.device),
        "model": model_of(args),
        "training": "bf16 weights, fp32 gradient buffers, fp32 master weights + AdamW moments "
                    "(2 + 4 + 12 bytes per parameter), SDPA attention, per-layer checkpointing "
                    "when on",
        "measured_peak": "max_memory_reserved + device memory held outside the caching allocator "
                         "(total - free - memory_reserved after the steps)",
        "runs": records,
    }
    profile = fit.update_profile(base, result_fit, probe)
    text = json.dumps(profile, indent=2) + "\n"
    if args.output:
        with open(args.output, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    print(f"probe.py: context_mib {profile['context_mib']}, fragmentation {profile['fragmentation']} "
          f"({result_fit['points']} runs, rms residual "
          f"{result_fit['rms_residual_bytes'] / fit.MIB:.0f} MiB)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
