#!/usr/bin/env python3
"""Measure real training peaks on one GPU under several training stacks, as reference data.

Each case trains a model built from a Hugging Face config (random weights, nothing downloaded)
for a few optimizer steps in a fresh process and records what PyTorch's caching allocator saw:
torch.cuda.max_memory_allocated / max_memory_reserved (and the peak of active bytes), the memory
held after the model was built and after the first optimizer step, and the step time.

The stacks, written the way their own code does it (read, not copied):
  pytorch   plain PyTorch: bf16 parameters with AdamW states in bf16 (torchtune's full-bf16
            recipes), or fp32 parameters under torch.autocast(bf16) with fp32 AdamW states;
  fsdp      FSDP2 `fully_shard` on every decoder block and the root, fp32 sharded parameters,
            MixedPrecisionPolicy(param bf16, reduce fp32), as torchtitan applies it
            (torchtitan/models/llama3/infra/parallelize.py); one process (world size 1);
  lora      peft LoRA on a bf16 base (adapters in fp32, peft's autocast_adapter_dtype).
Recomputation: `full` wraps every decoder block in non-reentrant checkpointing; `op_selective`
is torchtitan's per-op policy (torchtitan/distributed/activation_checkpoint.py): outputs of
matrix products are saved except every second one, attention outputs are saved, the rest is
recomputed. Losses: `unfused` = the model's own F.cross_entropy on logits upcast to fp32
(transformers' ForCausalLMLoss); `chunked` = torchtune's CEWithChunkedOutputLoss (8 chunks of
bf16 logits, each upcast just before its cross-entropy; the recipe drops the logits before
backward).

Usage:  python3 calibrate/measure_stacks.py -o results.json [--jobs 3] [--only NAME,...]
        python3 calibrate/measure_stacks.py --list
Needs PyTorch with CUDA and transformers (peft for the LoRA cases). Each case runs in its own
process, so allocator statistics are per case even when cases run side by side.
"""
import argparse
import json
import os
import subprocess
import sys
import time

GiB = 1024 ** 3

# Llama 3.2 1B's shapes (meta-llama/Llama-3.2-1B config.json), random weights.
LLAMA_1B = {
    "model_type": "llama", "architectures": ["LlamaForCausalLM"],
    "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64,
    "vocab_size": 128256, "tie_word_embeddings": True, "rms_norm_eps": 1e-5,
    "rope_theta": 500000.0, "max_position_embeddings": 131072, "hidden_act": "silu",
    "attention_bias": False, "mlp_bias": False,
}
# A small Qwen3-MoE (the qwen3_moe architecture at reduced size), random weights.
QWEN3_MOE_SMALL = {
    "model_type": "qwen3_moe", "architectures": ["Qwen3MoeForCausalLM"],
    "hidden_size": 1024, "intermediate_size": 3072, "moe_intermediate_size": 512,
    "num_hidden_layers": 8, "num_attention_heads": 16, "num_key_value_heads": 4,
    "head_dim": 64, "num_experts": 32, "num_experts_per_tok": 4, "decoder_sparse_step": 1,
    "mlp_only_layers": [], "norm_topk_prob": True, "vocab_size": 32000,
    "tie_word_embeddings": False, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
    "max_position_embeddings": 32768, "hidden_act": "silu", "attention_bias": False,
}
# A small Mixtral (8 experts, top-2), random weights.
MIXTRAL_SMALL = {
    "model_type": "mixtral", "architectures": ["MixtralForCausalLM"],
    "hidden_size": 1024, "intermediate_size": 2048, "num_hidden_layers": 8,
    "num_attention_heads": 16, "num_key_value_heads": 4, "num_local_experts": 8,
    "num_experts_per_tok": 2, "vocab_size": 32000, "tie_word_embeddings": False,
    "rms_norm_eps": 1e-5, "rope_theta": 1000000.0, "max_position_embeddings": 32768,
    "hidden_act": "silu", "sliding_window": None,
}
LORA_TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def case(name, stack, model, seq, mbs, recompute="none", loss="unfused", **extra):
    c = {"id": name, "stack": stack, "model": model, "seq_len": seq, "micro_batch": mbs,
         "recompute": recompute, "loss": loss, "steps": 3}
    c.update(extra)
    return c


CASES = [
    # plain PyTorch, bf16 parameters and AdamW states (torchtune full-bf16 style)
    case("pt-bf16-none-unfused-s2048b4", "pytorch", "llama1b", 2048, 4, dtype="bf16"),
    case("pt-bf16-none-unfused-s2048b2", "pytorch", "llama1b", 2048, 2, dtype="bf16"),
    case("pt-bf16-full-unfused-s2048b4", "pytorch", "llama1b", 2048, 4, "full", dtype="bf16"),
    case("pt-bf16-full-unfused-s4096b4", "pytorch", "llama1b", 4096, 4, "full", dtype="bf16"),
    case("pt-bf16-full-chunked-s2048b4", "pytorch", "llama1b", 2048, 4, "full", "chunked",
         dtype="bf16"),
    case("pt-bf16-full-chunked-oib-s2048b4", "pytorch", "llama1b", 2048, 4, "full", "chunked",
         dtype="bf16", optimizer_in_backward=True),
    case("pt-bf16-none-unfused-compile-s2048b4", "pytorch", "llama1b", 2048, 4, dtype="bf16",
         compile=True),
    # plain PyTorch, fp32 parameters, autocast bf16, fp32 AdamW
    case("pt-fp32amp-none-unfused-s2048b4", "pytorch", "llama1b", 2048, 4, dtype="fp32amp"),
    case("pt-fp32amp-full-unfused-s2048b4", "pytorch", "llama1b", 2048, 4, "full",
         dtype="fp32amp"),
    # FSDP2, torchtitan style (fp32 sharded parameters, bf16 compute, fp32 reduce)
    case("fsdp-z3-none-unfused-s2048b4", "fsdp", "llama1b", 2048, 4, reshard=True),
    case("fsdp-z2-none-unfused-s2048b4", "fsdp", "llama1b", 2048, 4, reshard=False),
    case("fsdp-z3-full-unfused-s2048b4", "fsdp", "llama1b", 2048, 4, "full", reshard=True),
    case("fsdp-z3-opsel-unfused-s2048b4", "fsdp", "llama1b", 2048, 4, "op_selective",
         reshard=True),
    case("fsdp-z3-opsel-unfused-s4096b4", "fsdp", "llama1b", 4096, 4, "op_selective",
         reshard=True),
    # 32k tokens per GPU: where the loss's memory shows
    case("pt-bf16-full-unfused-s8192b4", "pytorch", "llama1b", 8192, 4, "full", dtype="bf16"),
    case("pt-bf16-full-chunked-s8192b4", "pytorch", "llama1b", 8192, 4, "full", "chunked",
         dtype="bf16"),
    # DDP (one process): gradient buckets beside the gradients, or as their storage
    case("ddp-fp32amp-full-unfused-s2048b4", "ddp", "llama1b", 2048, 4, "full", dtype="fp32amp"),
    case("ddp-fp32amp-full-unfused-bucketview-s2048b4", "ddp", "llama1b", 2048, 4, "full",
         dtype="fp32amp", bucket_view=True),
    # torchtitan's layer policy (every second block checkpointed) and CPU offload
    case("fsdp-z3-every2-unfused-s2048b4", "fsdp", "llama1b", 2048, 4, "every2", reshard=True),
    case("fsdp-z3-offload-full-unfused-s2048b4", "fsdp", "llama1b", 2048, 4, "full",
         reshard=True, offload=True),
    # peft LoRA r16 on every linear of the blocks, bf16 base
    case("lora-bf16-none-unfused-s2048b4", "lora", "llama1b", 2048, 4, dtype="bf16"),
    case("lora-bf16-full-unfused-s2048b4", "lora", "llama1b", 2048, 4, "full", dtype="bf16"),
    case("lora-bf16-none-unfused-nodropout-s2048b4", "lora", "llama1b", 2048, 4, dtype="bf16",
         lora_dropout=0.0),
    case("lora-bf16-none-unfused-qv-s2048b4", "lora", "llama1b", 2048, 4, dtype="bf16",
         lora_targets=["q_proj", "v_proj"]),
    case("lora-bf16-full-unfused-r64-s2048b4", "lora", "llama1b", 2048, 4, "full", dtype="bf16",
         lora_rank=64),
    # torchtitan's per-op policy without FSDP, and at torchtitan's default shape under FSDP
    case("pt-bf16-opsel-unfused-s2048b4", "pytorch", "llama1b", 2048, 4, "op_selective",
         dtype="bf16"),
    case("fsdp-z3-opsel-unfused-s8192b1", "fsdp", "llama1b", 8192, 1, "op_selective",
         reshard=True),
    # a small mixture-of-experts model, plain PyTorch bf16
    case("moe-bf16-none-unfused-s2048b4", "pytorch", "qwen3moe_small", 2048, 4, dtype="bf16"),
    case("moe-bf16-full-unfused-s2048b4", "pytorch", "qwen3moe_small", 2048, 4, "full",
         dtype="bf16"),
    case("mixtral-bf16-none-unfused-s2048b4", "pytorch", "mixtral_small", 2048, 4, dtype="bf16"),
    case("mixtral-bf16-full-unfused-s2048b4", "pytorch", "mixtral_small", 2048, 4, "full",
         dtype="bf16"),
]
MODELS = {"llama1b": LLAMA_1B, "qwen3moe_small": QWEN3_MOE_SMALL,
          "mixtral_small": MIXTRAL_SMALL}


# ------------------------------------------------------------------------------------------
# One case, in this process.

def op_selective_context_fn():
    """torchtitan's per-op selective checkpointing policy, written from its description."""
    from collections import defaultdict
    import torch
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    save = {torch.ops.aten.mm.default}
    for op in ("_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
               "_scaled_dot_product_cudnn_attention"):
        if hasattr(torch.ops.aten, op):
            save.add(getattr(torch.ops.aten, op).default)
    counts = defaultdict(int)

    def policy(ctx, func, *args, **kwargs):
        key = "recompute" if ctx.is_recompute else "forward"
        if func == torch.ops.aten.mm.default:
            counts[key] += 1
            if counts[key] % 2 == 0:  # every second matrix product is recomputed
                return CheckpointPolicy.PREFER_RECOMPUTE
        return CheckpointPolicy.MUST_SAVE if func in save else CheckpointPolicy.PREFER_RECOMPUTE

    return create_selective_checkpoint_contexts(policy)


def wrap_blocks(layers, recompute):
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper
    for i, block in enumerate(layers):
        if recompute == "every2" and (i + 1) % 2 != 0:
            continue  # torchtitan's ac_freq 2: the 2nd, 4th, ... block is checkpointed
        if recompute in ("full", "every2"):
            layers[i] = checkpoint_wrapper(block, preserve_rng_state=False)
        elif recompute == "op_selective":
            layers[i] = checkpoint_wrapper(block, context_fn=op_selective_context_fn,
                                           preserve_rng_state=False)


def build_model(c, torch):
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM
    fields = dict(MODELS[c["model"]])
    model_type = fields.pop("model_type")
    fields.pop("architectures")
    config = AutoConfig.for_model(model_type, **fields)
    dtype = torch.bfloat16 if c.get("dtype") in ("bf16",) or c["stack"] == "lora" else torch.float32
    with torch.device("cuda"):
        try:
            model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa", dtype=dtype)
        except TypeError:
            model = AutoModelForCausalLM.from_config(config, attn_implementation="sdpa",
                                                     torch_dtype=dtype)
    model.to(dtype)
    model.train()
    return model, config, transformers.__version__


def chunked_loss(model, input_ids, labels, chunks=8):
    import torch
    import torch.nn.functional as F
    hidden = model.model(input_ids=input_ids).last_hidden_state
    logits = [model.lm_head(h) for h in hidden.chunk(chunks, dim=1)]
    pad = labels.new_full((labels.shape[0], 1), -100)
    targets = torch.cat([labels[:, 1:], pad], dim=1).chunk(chunks, dim=1)
    total = 0.0
    for lg, tg in zip(logits, targets):
        total = total + F.cross_entropy(lg.float().flatten(0, 1), tg.flatten(), reduction="sum",
                                        ignore_index=-100)
    del logits  # torchtune's recipe drops the logits before backward
    return total / (labels.numel() - labels.shape[0])


def run_case(c):
    import torch
    torch.cuda.set_device(0)
    torch.manual_seed(0)
    out = {"id": c["id"], "settings": c, "torch": torch.__version__,
           "device": torch.cuda.get_device_name(0)}
    free0, total0 = torch.cuda.mem_get_info()
    out["device_total_bytes"] = total0

    if c["stack"] in ("fsdp", "ddp"):
        import torch.distributed as dist
        dist.init_process_group("nccl", init_method="file:///tmp/pg_" + c["id"], rank=0,
                                world_size=1)
    model, config, tf_version = build_model(c, torch)
    out["transformers"] = tf_version
    out["config"] = MODELS[c["model"]]
    out["num_parameters"] = sum(p.numel() for p in model.parameters())

    if c["stack"] == "lora":
        import peft
        from peft import LoraConfig, get_peft_model
        rank = c.get("lora_rank", 16)
        dropout = c.get("lora_dropout", 0.05)
        targets = c.get("lora_targets", LORA_TARGETS)
        lcfg = LoraConfig(r=rank, lora_alpha=2 * rank, lora_dropout=dropout,
                          target_modules=targets, task_type="CAUSAL_LM")
        model = get_peft_model(model, lcfg)
        out["peft"] = peft.__version__
        out["lora"] = {"rank": rank, "alpha": 2 * rank, "dropout": dropout, "targets": targets}
        adapter = [p for p in model.parameters() if p.requires_grad]
        out["adapter_dtypes"] = sorted({str(p.dtype) for p in adapter})
        inner = model.base_model.model
    else:
        inner = model
    out["trainable_parameters"] = sum(p.numel() for p in model.parameters() if p.requires_grad)

    if c["recompute"] != "none":
        wrap_blocks(inner.model.layers, c["recompute"])
    if c.get("compile"):
        for i, block in enumerate(inner.model.layers):
            inner.model.layers[i] = torch.compile(block)

    if c["stack"] == "fsdp":
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        kw = {"mp_policy": mp}
        if c.get("offload"):
            from torch.distributed.fsdp import CPUOffloadPolicy
            kw["offload_policy"] = CPUOffloadPolicy(pin_memory=True)
        layers = inner.model.layers
        for i, block in enumerate(layers):
            # torchtitan: the last block is not resharded, backward needs it at once
            fully_shard(block, reshard_after_forward=bool(c.get("reshard")) and i < len(layers) - 1,
                        **kw)
        fully_shard(model, reshard_after_forward=bool(c.get("reshard")), **kw)
    if c["stack"] == "ddp":
        from torch.nn.parallel import DistributedDataParallel
        model = DistributedDataParallel(model, device_ids=[0],
                                        gradient_as_bucket_view=bool(c.get("bucket_view")))

    torch.cuda.synchronize()
    out["allocated_after_model_bytes"] = torch.cuda.memory_allocated()

    params = [p for p in model.parameters() if p.requires_grad]
    in_backward = bool(c.get("optimizer_in_backward"))
    if in_backward:
        per_param = {p: torch.optim.AdamW([p], lr=1e-5, fused=True) for p in params}

        def step_hook(p):
            per_param[p].step()
            per_param[p].zero_grad(set_to_none=True)

        for p in params:
            p.register_post_accumulate_grad_hook(step_hook)
        optimizer = None
    else:
        # CPU-offloaded parameters step on the CPU, where there is no fused AdamW
        optimizer = torch.optim.AdamW(params, lr=1e-5, fused=not c.get("offload"))

    vocab = MODELS[c["model"]]["vocab_size"]
    g = torch.Generator(device="cuda").manual_seed(1)
    amp = c.get("dtype") == "fp32amp"
    times = []
    for step in range(c["steps"]):
        if step == 1:
            out["allocated_after_first_step_bytes"] = torch.cuda.memory_allocated()
            out["first_step_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
            out["first_step_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        ids = torch.randint(0, vocab, (c["micro_batch"], c["seq_len"]), device="cuda",
                            generator=g)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=amp):
            if c["loss"] == "chunked":
                loss = chunked_loss(inner if c["stack"] != "lora" else model.base_model.model,
                                    ids, ids)
            else:
                loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        if optimizer is not None:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
        if not torch.isfinite(loss.detach()):
            raise RuntimeError("loss is not finite")
        del loss

    stats = torch.cuda.memory_stats()
    out["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
    out["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    out["peak_active_bytes"] = stats.get("active_bytes.all.peak")
    out["allocated_end_bytes"] = torch.cuda.memory_allocated()
    out["step_seconds"] = times
    out["status"] = "ran"
    return out


def child(case_id, path):
    c = next(x for x in CASES if x["id"] == case_id)
    try:
        result = run_case(c)
    except Exception as e:  # an OOM or a missing package is a result too
        import traceback
        result = {"id": case_id, "settings": c, "status": "error",
                  "error": f"{type(e).__name__}: {e}"[:2000],
                  "traceback": traceback.format_exc()[-3000:]}
        if "out of memory" in str(e).lower():
            result["status"] = "oom"
    with open(path, "w") as f:
        json.dump(result, f, indent=1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-o", "--output", default="measured-stacks.json")
    ap.add_argument("--jobs", type=int, default=3, help="cases run side by side (default 3)")
    ap.add_argument("--only", default="", help="comma-separated case ids")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per case")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--child", nargs=2, metavar=("CASE", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(*a.child)
        return 0
    chosen = [c for c in CASES if not a.only or c["id"] in a.only.split(",")]
    if a.list:
        for c in chosen:
            print(c["id"])
        return 0
    tmp = "/tmp/measure_stacks"
    os.makedirs(tmp, exist_ok=True)
    order = {c["id"]: i for i, c in enumerate(CASES)}
    results = {}

    def save():
        done = sorted(results.values(), key=lambda r: order[r["id"]])
        with open(a.output, "w") as f:
            json.dump({"note": "written by calibrate/measure_stacks.py", "cases": done}, f,
                      indent=1)

    def run_batch(batch, jobs):
        pending, running = list(batch), []
        while pending or running:
            while pending and len(running) < jobs:
                c = pending.pop(0)
                path = os.path.join(tmp, c["id"] + ".json")
                if os.path.exists(path):
                    os.remove(path)
                log = open(os.path.join(tmp, c["id"] + ".log"), "w")
                p = subprocess.Popen([sys.executable, __file__, "--child", c["id"], path],
                                     stdout=log, stderr=subprocess.STDOUT)
                running.append((c, p, path, time.time(), log))
            time.sleep(0.5)
            for item in list(running):
                c, p, path, t0, log = item
                timed_out = time.time() - t0 > a.timeout
                if p.poll() is None and not timed_out:
                    continue
                if p.poll() is None:
                    p.kill()
                    p.wait()
                log.close()
                running.remove(item)
                if os.path.exists(path):
                    with open(path) as f:
                        r = json.load(f)
                else:
                    with open(os.path.join(tmp, c["id"] + ".log")) as f:
                        tail = f.read()[-2000:]
                    r = {"id": c["id"], "settings": c,
                         "status": "timeout" if timed_out else "crashed", "log_tail": tail}
                r["wall_seconds"] = round(time.time() - t0, 1)
                r["ran_alone"] = jobs == 1
                results[c["id"]] = r
                save()
                peak = r.get("peak_allocated_bytes")
                print(f"{c['id']:40s} {r['status']:8s} "
                      + (f"alloc {peak / GiB:7.3f} GiB  reserved "
                         f"{r['peak_reserved_bytes'] / GiB:7.3f} GiB  {r['wall_seconds']} s"
                         if peak else str(r.get("error", r.get("log_tail", "")))[-400:]),
                      flush=True)

    run_batch(chosen, a.jobs)
    # An out-of-memory beside other cases may be theirs: run those again alone.
    again = [c for c in chosen if results[c["id"]]["status"] == "oom"]
    if again and a.jobs > 1:
        print("again, alone:", ", ".join(c["id"] for c in again), flush=True)
        run_batch(again, 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
