#!/usr/bin/env python3
"""Turn the public throughput measurements into memest requests (test data).

Reads  /work/shared/reference/measured-throughput-given.json (or --src)
writes tests/data/measured/throughput-given.json (or --out):
one pretrain request per row, the measured tokens/s per GPU (the source file's
derived.tokens_per_s_per_gpu), the source stack's communication overlap, what each
request assumes, and a skip reason for rows memest cannot express.

Standard library only; re-runnable (the output depends on the source file only).
Run `memest request` on each row's request to validate (see --check).
"""
import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_SRC = "/work/shared/reference/measured-throughput-given.json"
DEFAULT_OUT = os.path.join(ROOT, "tests", "data", "measured", "throughput-given.json")

# memest's built-in model presets (libmemest/data/models.json ids).
with open(os.path.join(ROOT, "libmemest", "data", "models.json")) as fh:
    _models = json.load(fh)
PRESETS = {m["id"] for m in (_models["models"] if isinstance(_models, dict) else _models)}

# The row's memest_model or Hugging Face id, where it names a preset differently.
PRESET_ALIASES = {
    "kimi-k2-instruct": "kimi-k2",            # same shapes as Kimi-K2-Base (what AutoModel loads)
    "meta-llama/Llama-3.1-405B": "llama-3.1-405b",
    "meta-llama/Llama-2-70b-hf": "llama-2-70b",
    "EleutherAI/gpt-neox-20b": "gpt-neox-20b",
    "GPT-3 175B (NeMo/MLPerf)": "gpt3-175b",  # the GPT-3 paper's 175B as a GPT-2-style config
}


# ---------------------------------------------------------------- source keys
def source_key(row):
    """Short key per publication / table family (leave-one-source-out)."""
    src, fw = row["source"], row["framework"]
    if "dgxc-benchmarking" in src:
        if "MaxText" in fw:
            return "maxtext-dgxc"
        if "Paxml" in fw:
            return "paxml-dgxc"
        return "nemo-dgxc"
    if "llm-foundry" in src:
        return "llm-foundry"
    if "bigscience" in src:
        return "bloom"
    if "Megatron-MoE-ModelZoo" in src:
        return "mcore-moe"
    if "Automodel" in src:
        return "automodel"
    if "2205.05198" in src:
        return "korthikanti"
    if "2201.11990" in src:
        return "mtnlg"
    if "2205.01068" in src:
        return "opt"
    if "2204.06745" in src:
        return "gpt-neox"
    raise ValueError("no source key for " + row["id"])


def row_class(row):
    # MoE first; fp16 rows count as bf16.
    if row["model"].get("experts"):
        return "moe"
    if row["precision"].startswith("fp8"):
        return "fp8"
    return "bf16"


# ---------------------------------------------------------------- GPU
def gpu_preset(row):
    t = row["gpu"]["type"]
    if t.startswith("H100"):
        return "h100-80gb"  # every H100 row is an SXM 80 GB (DGX-H100 / DGXC / NVLink4 clusters)
    if t.startswith("A100-SXM-80GB"):
        return "a100-80gb"
    if t.startswith("A100-SXM-40GB"):
        return "a100-40gb"
    raise ValueError("unknown GPU " + t)


# ---------------------------------------------------------------- models
def gpt2_config(m, positions):
    """GPT-3-style dense GELU model: learned positions, biases, LayerNorms, tied head."""
    return {"model_type": "gpt2", "n_embd": m["hidden"], "n_layer": m["layers"],
            "n_head": m["heads"], "n_inner": m["ffn"], "vocab_size": m["vocab"],
            "n_positions": positions, "tie_word_embeddings": True,
            "activation_function": "gelu_new"}


def model_for(row, assumed):
    m, src = row["model"], source_key(row)
    name = m["name"]
    # 1. a preset, by memest_model, HF id or name.
    for key in (m.get("memest_model"), m.get("hf_id"), name):
        if key is None:
            continue
        pid = PRESET_ALIASES.get(key, key)
        if pid in PRESETS and "proxy" not in name:
            if pid == "kimi-k2":
                assumed.append("model: preset kimi-k2 (Kimi-K2-Instruct shapes = Kimi-K2-Base, which AutoModel loads)")
            if pid == "gpt3-175b":
                assumed.append("model: preset gpt3-175b (GPT-2-style: learned positions, biases, tied head, "
                               "vocab 50257) for NeMo's GPTConfig175B")
            if pid == "deepseek-v3":
                assumed.append("model: preset deepseek-v3 includes its MTP module (num_nextn_predict_layers 1) "
                               "on the last stage; whether the benchmark trained it is not stated")
            return pid
    # 2. inline Hugging Face config fields from the row's dims.
    if "Llama-3.1-405B proxy" in name:
        # DGXC 405B proxy: the 405B layer with fewer layers (7/21/42 of 126).
        assumed.append("model: Llama-3.1-405B proxy with %d layers (405B shapes, fewer layers)" % m["layers"])
        return {"name": name, "model_type": "llama", "hidden_size": m["hidden"],
                "num_hidden_layers": m["layers"], "num_attention_heads": m["heads"],
                "num_key_value_heads": m["kv_heads"], "intermediate_size": m["ffn"],
                "vocab_size": m["vocab"], "max_position_embeddings": 131072,
                "hidden_act": "silu", "tie_word_embeddings": False}
    if name.startswith("Nemotron-4"):
        # Squared-ReLU non-gated MLP, GQA, RoPE, LayerNorm, no biases, untied head: GPT-NeoX's
        # layout (non-gated MLP, LayerNorms, rotary, untied) with biases off and kv heads set.
        assumed.append("model: Nemotron-4 as a gpt_neox config (non-gated squared-ReLU MLP, GQA, "
                       "no biases, untied head); memest has no nemotron family")
        return {"name": name, "model_type": "gpt_neox", "hidden_size": m["hidden"],
                "num_hidden_layers": m["layers"], "num_attention_heads": m["heads"],
                "num_key_value_heads": m["kv_heads"], "intermediate_size": m["ffn"],
                "vocab_size": m["vocab"], "max_position_embeddings": 4096,
                "hidden_act": "relu2", "attention_bias": False, "mlp_bias": False,
                "tie_word_embeddings": False, "use_parallel_residual": False}
    if name.startswith("MPT-"):
        # MPT: ALiBi (no position table), no biases, LayerNorm, GELU 4h MLP, tied embeddings.
        assumed.append("model: MPT as a gpt_neox config with biases off and tied embeddings "
                       "(ALiBi: no position table; GELU non-gated MLP)")
        return {"name": name, "model_type": "gpt_neox", "hidden_size": m["hidden"],
                "num_hidden_layers": m["layers"], "num_attention_heads": m["heads"],
                "intermediate_size": m["ffn"], "vocab_size": m["vocab"],
                "max_position_embeddings": 65536, "hidden_act": "gelu",
                "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": True,
                "use_parallel_residual": False}
    if "BLOOM" in name:
        # BLOOM and the BLOOM-like prequel models: ALiBi, embedding LayerNorm, biases, tied head.
        cfg = {"name": name, "model_type": "bloom", "hidden_size": m["hidden"],
               "n_layer": m["layers"], "n_head": m["heads"], "vocab_size": m["vocab"],
               "tie_word_embeddings": True}
        if m["ffn"] != 4 * m["hidden"]:
            raise ValueError("BLOOM ffn != 4h in " + row["id"])
        return cfg
    if src == "opt":
        assumed.append("model: OPT-175B as an opt config (ReLU, learned positions +2, biases, tied head)")
        return {"name": name, "model_type": "opt", "hidden_size": m["hidden"],
                "num_hidden_layers": m["layers"], "num_attention_heads": m["heads"],
                "ffn_dim": m["ffn"], "vocab_size": m["vocab"], "max_position_embeddings": 2048,
                "word_embed_proj_dim": m["hidden"], "do_layer_norm_before": True,
                "activation_function": "relu", "tie_word_embeddings": True}
    if m.get("act") == "gelu":
        # GPT-3-like dense GELU models (Korthikanti's GPTs, MT-NLG, NeMo GPT3-5B).
        assumed.append("model: GPT-2-style config (learned positions, biases, tied head) from the row's dims")
        return dict(gpt2_config(m, 2048), name=name)
    raise ValueError("no model mapping for " + row["id"])


# ---------------------------------------------------------------- training stack
def optimizer_storage(row, training, assumed):
    """NeMo 24.09's DGXC recipes (dgxc-benchmarking@e6afea3aea) run Apex's DistributedFusedAdam
    (optim.name distributed_fused_adam, megatron_amp_O2: bf16 weights) and fp8 runs keep fp8
    weights (+model.fp8_params in llama3.1/ and nemotron/configure.sh; fp8_params: true in
    nemo_megatron/gpt3_175b_hydra.yaml). NeMo's megatron_base_model.py setup_optimization then
    sets the optimizer's store: fp8_params -> store_params (a master in optim.dtype); optim.dtype
    equal to the model's -> no master; fp32 states over bf16 weights -> store_param_remainders.
    Only Nemotron-4 340B's yaml sets optim.dtype: bf16."""
    src_file = row["source_file"]
    fp8 = row["precision"].startswith("fp8")
    fp8_params = fp8 or "nemo_megatron/" in src_file  # the 175B yaml sets it for both
    bf16_states = "nemotron/README_340b" in src_file
    why = ("optimizer: Apex DistributedFusedAdam (NeMo megatron_base_model.py "
           "setup_optimization, dgxc-benchmarking@e6afea3aea recipe yaml): ")
    if fp8:
        training["param_dtype"] = "fp8"
    if bf16_states:
        training["optimizer_state_dtype"] = "bf16"
        training["master_weights"] = "bf16" if fp8_params else "none"
        assumed.append(why + "optim.dtype bf16; " + (
            "fp8_params: a bf16 master (store_params) beside fp8 weights" if fp8_params else
            "equal to the model's dtype: no master, bf16 moments"))
    elif fp8_params:
        assumed.append(why + "fp8_params: an fp32 master (store_params) and fp32 moments" +
                       (", fp8 weights" if fp8 else ""))
    else:
        training["master_weights"] = "remainder"
        assumed.append(why + "fp32 moments over bf16 weights: store_param_remainders (2 bytes "
                       "of master per parameter)")

def framework_for(row):
    """memest framework and the row's ZeRO stage under it."""
    src, fw, p = source_key(row), row["framework"], row["parallel"]
    if src == "nemo-dgxc":
        return "megatron", 1          # NeMo's distributed optimizer = ZeRO-1 under megatron
    if src in ("maxtext-dgxc", "paxml-dgxc"):
        return "fsdp", 3              # JAX FSDP shards params, grads and optimizer: ZeRO-3-like
    if src == "llm-foundry":
        return "fsdp", 3              # FULL_SHARD
    if src == "bloom":
        return "megatron", p["zero"]  # Megatron-DeepSpeed, the row's own ZeRO stage
    if src in ("mtnlg", "gpt-neox"):
        return "megatron", 1          # Megatron TP + DeepSpeed PP + ZeRO-1 DP
    if src == "korthikanti":
        return "megatron", 0          # Megatron-LM 2022, no distributed optimizer (dp = 1 anyway)
    if src == "opt":
        return "fsdp", 3              # metaseq FSDP (full shard) + Megatron TP
    if src == "mcore-moe":
        return "megatron", 3 if p.get("fsdp") == "On" else 1  # Megatron FSDP, else dist. optimizer
    if src == "automodel":
        return "fsdp", 3              # FSDP2 fully_shard (with ep for the MoE rows, below)
    raise ValueError(src)


# The ModelZoo tables' recompute column -> Megatron-Core's --recompute-modules names.
RECOMPUTE_MODULES = {
    "norm, act": ["layernorm", "moe_act"],
    "selective (layernorm, moe)": ["layernorm", "moe"],
}


def recompute_for(row, src, assumed):
    r = row["training"]["recompute"]
    if r.startswith("full"):
        return "full"
    if r.startswith("selective (attention core)"):
        return "selective"
    if r in RECOMPUTE_MODULES:
        # Megatron --recompute-granularity selective with --recompute-modules (the table's own
        # short names: "norm" is layernorm, "act" moe_act): training.recompute_modules
        return "selective"
    if r == "none":
        return "none"
    if r == "not stated":
        if src == "nemo-dgxc" and "nemotron/README_340b" in row["source_file"]:
            assumed.append("recompute: not stated in the table; the recipe's "
                           "nemotron/nemotron4-340b-synth.yaml (dgxc-benchmarking@e6afea3aea) sets "
                           "activations_checkpoint_granularity: selective (core attention)")
            return "selective"
        if src == "nemo-dgxc":
            assumed.append("recompute: not stated; NeMo 24.09 DGXC recipes run without activation recompute")
            return "none"
        if src in ("maxtext-dgxc", "paxml-dgxc"):
            # MaxText's base.yml remat_policy is 'full'; without remat the 70B/175B runs cannot fit
            # (memest: ~255 GiB / ~195 GiB per GPU with none).
            assumed.append("recompute: not stated; full assumed (JAX remat; MaxText default "
                           "remat_policy 'full'; no remat would not fit 80 GB)")
            return "full"
        if src == "opt":
            assumed.append("recompute: not stated; full assumed (metaseq 175B checkpointed activations)")
            return "full"
        if src == "gpt-neox":
            assumed.append("recompute: not stated; full assumed (20B config checkpoint-activations true)")
            return "full"
    if r == "per yaml (not in table)":
        ac = AUTOMODEL_AC.get(row["id"])
        assumed.append("recompute: from the benchmark yaml (stored version, may differ from the "
                       "table's commit): activation_checkpointing %s" % ("true" if ac else "absent"))
        return "full" if ac else "none"
    raise ValueError("recompute %r in %s" % (r, row["id"]))


# examples/llm_benchmark/*.yaml of NVIDIA-NeMo/Automodel: distributed.activation_checkpointing.
AUTOMODEL_AC = {
    "automodel-pretrain-deepseek-v3-1024gpu": True,
    "automodel-pretrain-deepseek-v3-256gpu": True,
    "automodel-pretrain-kimi-k2-256gpu": True,
    "automodel-pretrain-qwen3-30b-a3b-8gpu": True,
    "automodel-pretrain-gpt-oss-20b-8gpu": False,
    "automodel-pretrain-gpt-oss-120b-64gpu": True,
    "automodel-pretrain-llama-3.1-70b-64gpu": True,
    "automodel-lora-llama-3.1-8b-1gpu": False,
    "automodel-lora-llama-3.1-70b-8gpu": True,
}
# Rows memest refuses with no faithful alternative: the refusal text of memest 1.4 (HEAD),
# kept here so the file does not depend on running --check.
KNOWN_REFUSALS = {
    "automodel-lora-llama-3.1-70b-8gpu":
        "memest refused: parallel.tp: adapters (peft, torchtune) run data-parallel or sharded "
        "(FSDP, ZeRO): tp must be 1 (the run uses tp 2 with async TP; tp 1 would be another layout)",
}
# Rows whose own figures contradict each other: kept in the file, not fitted or scored.
INCONSISTENT = {
    # 2048 x 2048 tokens / 205.52 s / 8 GPUs = 2551 tokens/s per GPU, which for a 10-layer
    # h=14336 model (about 28 B parameters with its 250k embedding) is over 400 TFLOP/s per
    # A100 (peak 312) with full recomputation; the same row reports 142.59 TFLOP/s.
    "bloom-prequel-t14-18B-h14336L10a64-dp1tp8pp1mbs1-gbs2048":
        "inconsistent: its step time implies more than an A100's peak FLOP/s; its TFLOP/s column says 142.59",
}
# gpt-oss-20b's config.json fields as memest reads them, with logits_fp32 false (above).
GPT_OSS_20B_CONFIG = {
    "architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": 2880,
    "intermediate_size": 2880, "num_hidden_layers": 24, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 201088,
    "max_position_embeddings": 131072, "tie_word_embeddings": False, "attention_bias": True,
    "num_local_experts": 32, "num_experts_per_tok": 4, "experts_per_token": 4,
    "sliding_window": 128, "hidden_act": "silu", "name": "gpt-oss-20b", "logits_fp32": False}
# The same yamls' ep_size for the gpt-oss rows, whose table shows EP "-" but runs DeepEP.
AUTOMODEL_GPTOSS_EP = {"automodel-pretrain-gpt-oss-20b-8gpu": 8,
                       "automodel-pretrain-gpt-oss-120b-64gpu": 64}


def overlap_for(row, src, p, assumed):
    """The source stack's communication overlap, from its recipe."""
    tp, cp, vpp = p["tp"], p.get("cp", 1), p.get("vpp", 1)
    if src == "nemo-dgxc":
        # NeMo 24.09 DGXC recipes: overlapped grad reduce / param gather, TP comm overlap
        # (userbuffers) on H100 when tp > 1, overlapped p2p with interleaving, CP ring overlap.
        o = ["dp"]
        if tp > 1:
            o.append("tp")
        if vpp > 1:
            o.append("pp")
        # (CP's ring exchange is always overlapped with attention in Transformer Engine: memest
        # models that without a flag)
        return o
    if src in ("maxtext-dgxc", "paxml-dgxc"):
        assumed.append("overlap: XLA's latency-hiding scheduler overlaps the FSDP all-gathers and "
                       "reduce-scatters (dp)")
        return ["dp"]
    if src == "llm-foundry":
        return ["dp"]  # FSDP backward/forward prefetch
    if src in ("bloom", "korthikanti", "mtnlg"):
        return []      # 2021-22 Megatron(-DeepSpeed): no overlap
    if src == "gpt-neox":
        assumed.append("overlap: DeepSpeed ZeRO-1 overlap_comm (20B config) overlaps the gradient reduction")
        return ["dp"]
    if src == "opt":
        assumed.append("overlap: metaseq FSDP overlaps its all-gathers/reduce-scatters (dp)")
        return ["dp"]
    if src == "mcore-moe":
        o = ["dp"]     # --overlap-grad-reduce --overlap-param-gather
        if vpp > 1:
            o.append("pp")
        if row["id"].endswith("-2"):
            o.append("ep")  # "+1f1b overlap": EP all-to-all overlapped with the other micro-batch
        assumed.append("overlap: TP comm overlap not stated for the ModelZoo runs; not counted")
        return o
    if src == "automodel":
        o = ["dp"]     # FSDP2 prefetch / overlapped reduce-scatter
        if row["id"] == "automodel-lora-llama-3.1-70b-8gpu":
            o.append("tp")  # enable_async_tensor_parallel: true
        if p["pp"] > 1 or row["model"].get("experts"):
            assumed.append("overlap: torch pipelining p2p and DeepEP all-to-all not counted as overlapped")
        return o
    raise ValueError(src)


# ---------------------------------------------------------------- pipeline split
def pipeline_split(layers, pp, vpp, framework, assumed):
    """Fields that make `layers` split over pp (x vpp) stages as the source did; or a skip."""
    if pp <= 1 or layers % (pp * vpp) == 0:
        return {}, None
    if framework == "fsdp":
        return {}, None  # memest splits FSDP pipeline chunks unevenly itself
    out = {}
    if vpp > 1:
        # memest needs layers divisible by pp*vpp under megatron; the uneven split needs vpp = 1.
        assumed.append("pipeline: %d layers do not split into pp %d x vpp %d chunks in memest; "
                       "expressed without interleaving (vpp 1)" % (layers, pp, vpp))
        out["vpp"] = 1
        if layers % pp == 0:
            return out, None
    middle = -(-layers // pp)
    fewer = middle * pp - layers
    if fewer <= 2 and middle >= 2:
        # the embedding (and the head) counted as a layer (BLOOM's 'type:transformer|embedding',
        # Megatron's uneven split): the end stages hold one layer fewer.
        out["uneven_pipeline"] = True
        assumed.append("pipeline: uneven split, %d layers on the middle stages and one fewer on "
                       "the end stages that hold the embedding/head" % middle)
        return out, None
    last = layers - (pp - 1) * middle
    if last >= 1:
        out["last_stage_layers"] = last
        assumed.append("pipeline: %d layers on each stage but the last, which has %d "
                       "(DeepSpeed/torch uniform partition puts the remainder last)" % (middle, last))
        return out, None
    return None, "%d layers cannot be split over pp %d in memest" % (layers, pp)


# ---------------------------------------------------------------- one row
def convert(row):
    src = source_key(row)
    assumed = []
    skip = None
    m, p, t = row["model"], row["parallel"], row["training"]
    out = {"id": row["id"], "source": src, "groups": row["groups"], "class": row_class(row),
           "measured_tokens_per_s_per_gpu": row["derived"]["tokens_per_s_per_gpu"],
           "how": row["derived"]["how"]}
    if out["measured_tokens_per_s_per_gpu"] is None:
        skip = "no measured throughput (%s)" % row["derived"]["how"]
    skip = skip or KNOWN_REFUSALS.get(row["id"]) or INCONSISTENT.get(row["id"])

    model = model_for(row, assumed)
    framework, zero = framework_for(row)
    moe = bool(m.get("experts"))
    ep = p.get("ep") or 1
    if src == "automodel" and moe:
        ep = AUTOMODEL_GPTOSS_EP.get(row["id"], ep)
        if ep != (p.get("ep") or 1):
            assumed.append("ep: table shows EP '-', the benchmark yaml sets ep_size %d (DeepEP)" % ep)
        # FSDP2 + expert parallelism (AutoModel's parallelizer: experts sharded over the ep mesh
        # dimension, everything else fully_shard over dp): memest's fsdp framework with ep.
        assumed.append("framework: AutoModel FSDP2 + EP as fsdp zero 3 with ep (experts over ep, "
                       "the rest sharded over all GPUs)")
    if src in ("maxtext-dgxc", "paxml-dgxc"):
        assumed.append("framework: JAX FSDP expressed as fsdp zero 3 (params, grads, optimizer sharded)")
        if p.get("dp", 1) > 1 and p.get("fsdp") not in (None, row["gpu"]["count"]):
            assumed.append("sharding: MaxText shards over %s GPUs and replicates over dp %s (HSDP); "
                           "memest shards over all GPUs" % (p["fsdp"], p["dp"]))

    tp, pp = p.get("tp") or 1, p.get("pp") or 1
    cp, vpp = p.get("cp") or 1, p.get("vpp") or 1
    gpus = row["gpu"]["count"]
    parallel = {"gpus": gpus, "tp": tp, "cp": cp, "pp": pp, "vpp": vpp, "zero": zero}
    sp = p.get("sp")
    parallel["sp"] = bool(sp) if sp is not None else tp > 1
    if moe and framework in ("megatron", "fsdp"):
        parallel["ep"] = ep
        parallel["etp"] = p.get("etp") or 1  # AutoModel: tp 1, so etp 1

    # pipeline split
    layers = m["layers"]
    split, why = pipeline_split(layers, pp, vpp, framework, assumed)
    if split is None:
        skip = skip or why
    else:
        parallel.update(split)

    # batches
    seq, mb, gb = t["seq_len"], t.get("micro_batch"), t["global_batch"]
    dp = gpus // (tp * cp * pp)
    if mb is None:
        if src == "gpt-neox":
            mb, gb = 4, 1536
            assumed.append("batch: micro_batch 4 x grad-accum 32 x dp 12 = 1536 (20B config); the paper's "
                           "1538 does not divide by dp 12")
        elif src == "opt":
            mb, gb = 8, 992
            assumed.append("batch: 2M tokens = 1024 sequences do not divide by dp 124; micro_batch 8, "
                           "global_batch 992 (8 x 124) assumed")
        else:
            raise ValueError("no micro batch for " + row["id"])
    if gb % (mb * dp) != 0:
        skip = skip or "global_batch %d not a multiple of micro_batch %d x dp %d" % (gb, mb, dp)

    training = {"framework": framework, "seq_len": seq, "micro_batch": mb, "global_batch": gb,
                "recompute": recompute_for(row, src, assumed), "fp8": row["precision"].startswith("fp8")}
    if row["training"]["recompute"] in RECOMPUTE_MODULES:
        training["recompute_modules"] = RECOMPUTE_MODULES[row["training"]["recompute"]]
    if "DeepEP" in row["quote"] or "deepep" in json.dumps(row.get("notes") or "").lower():
        # the row's own dispatcher column (ModelZoo) or benchmark yaml (AutoModel): DeepEP
        training["moe_dispatcher"] = "deepep"
    if src in ("maxtext-dgxc", "paxml-dgxc"):
        # JAX on H100 (DGXC recipes): XLA's cuDNN flash attention (Transformer Engine), the fused
        # kernels, not FlashAttention-2 as memest assumes for framework fsdp by default
        training["attention_kernel"] = "fused"
        assumed.append("attention: cuDNN fused flash attention through XLA/Transformer Engine")
        # JAX differentiates the fp32 weights (MaxText weight_dtype float32, Praxis' fp32
        # variables under bf16 compute): fp32 gradients, not torch's .grad-like-the-parameter
        # rule memest derives for framework fsdp when grad_dtype is left out
        training["grad_dtype"] = "fp32"
        assumed.append("states: fp32 gradients of JAX's fp32 weights (grad_dtype fp32)")
    if src in ("bloom", "korthikanti", "mtnlg", "gpt-neox", "opt"):
        training["flash_attention"] = False  # 2021-22 stacks: fused softmax, no FlashAttention
    if row["precision"].startswith("fp16"):
        assumed.append("precision: fp16 expressed as memest's default 16-bit mixed precision (same bytes)")
    if src == "llm-foundry":
        # FSDP1 MixedPrecision keeps fp32 sharded parameters and gradients; bf16 compute copies.
        training["param_dtype"] = "fp32"
        training["grad_dtype"] = "fp32"
        training["optimizer"] = "adamw"
        assumed.append("states: FSDP1 fp32 sharded params/grads, bf16 compute (amp_bf16 and PURE alike); "
                       "optimizer decoupled AdamW (MPT yamls)")
        # llm-foundry's default loss_fn is fused_crossentropy: flash-attn's CrossEntropyLoss on
        # the bf16 logits (llmfoundry/models/mpt/modeling_mpt.py ComposerMPTCausalLM at the
        # table's commits 5e85bd62d and 8c8dd48f7; setup.py's gpu extra installs flash-attn
        # 1.0.9 with its xentropy kernel)
        training["loss"] = "flash_attn"
        assumed.append("loss: flash-attn's CrossEntropyLoss, llm-foundry's default loss_fn "
                       "fused_crossentropy (llmfoundry/models/mpt/modeling_mpt.py)")
        # Every benchmark table was run by scripts/train/benchmarking/submit_benchmarks.py, whose
        # --attn_impl defaults to triton (at 300cc5c58 for the A100 tables, b2a43a147 for the
        # H100 ones, 5e85bd62d for the H100 large-scale one): MPT's ALiBi attention in the Triton
        # FlashAttention kernel (llmfoundry/models/layers/attention.py triton_flash_attn_fn) on
        # setup.py's triton-pre-mlir fork (branch triton_pre_mlir_sm90)
        # ... except where the large-scale H100 table's sweep.py (5e85bd62d) passes --attn_impl
        # flash: its 1b, 3b, 7b and 70b runs use flash-attn 2.4.2 (setup.py gpu-flash2) with
        # ALiBi as alibi_slopes; 13b and 30b keep triton
        large_scale_flash = ("Large Scale" in row["source_file"] and
                             row["model"]["name"].split("-")[-1] in ("1b", "3b", "7b", "70b"))
        if large_scale_flash:
            training["attention_kernel"] = "flash2"
            assumed.append("attention: FlashAttention-2 (flash-attn 2.4.2) with ALiBi slopes: "
                           "scripts/train/benchmarking/sweep.py at 5e85bd62d passes --attn_impl flash "
                           "for this model")
        else:
            training["attention_kernel"] = "triton"
            assumed.append("attention: Triton FlashAttention with ALiBi (submit_benchmarks.py --attn_impl "
                           "default triton, not overridden by the table's sweep, at 300cc5c58, "
                           "b2a43a147, 5e85bd62d)")
    if src == "nemo-dgxc":
        # NVIDIA's performance recipes reduce gradients in bf16: Megatron's main grads in bf16
        # (grad_reduce_in_fp32=False, --grad-reduce-in-bf16), not its fp32 default under --bf16.
        training["grad_dtype"] = "bf16"
        assumed.append("states: main grads in bf16 (grad_reduce_in_fp32 False): NeMo-Framework-Launcher "
                       "examples/training/llama/h100/llama3_8b_bf16.sh, llama3_70b_bf16.sh, "
                       "llama3_70b_fp8.sh pass +training.model.optim.grad_sync_dtype=bf16; NeMo "
                       "nemo/collections/nlp/models/language_modeling/megatron_gpt_model.py "
                       "setup_mcore_distributed_parallel sets DistributedDataParallelConfig("
                       "grad_reduce_in_fp32=(optim.grad_sync_dtype == 'fp32'))")
    if src == "nemo-dgxc":
        optimizer_storage(row, training, assumed)
        if "nemo_megatron/" in row["source_file"] or "nemotron/README_340b" in row["source_file"]:
            # configure.sh exports NVTE_FUSED_ATTN=0 for GPT-3 175B and Nemotron-4 340B:
            # Transformer Engine's FlashAttention backend, not cuDNN's fused attention
            training["attention_kernel"] = "flash2"
            assumed.append("attention: NVTE_FUSED_ATTN=0 in the recipe's configure.sh "
                           "(dgxc-benchmarking@e6afea3aea): FlashAttention-2 through Transformer Engine")
    if src == "opt":
        training["param_dtype"] = "fp32"
        training["grad_dtype"] = "fp32"
        assumed.append("states: fp32 sharded params, grads and Adam states (FSDP mixed precision), fp16 compute")
    if src == "automodel" and row["id"] in ("automodel-pretrain-llama-3.1-70b-64gpu",
                                             "automodel-lora-llama-3.1-70b-8gpu"):
        training["compile"] = "model"  # enable_compile: true in the yaml
        assumed.append("compile: enable_compile true (yaml) expressed as compile 'model'")
    if src == "automodel" and "TE" in row["framework"] and "FlexAttn" not in row["framework"]:
        # the table's kernel column: Transformer Engine's DotProductAttention (cuDNN fused
        # attention) in AutoModel's own models; the HF LoRA row runs SDPA inside AutoModel's
        # sdpa_kernel patch, cuDNN first (_transformers/kernel_patches.py _patch_attention).
        # gpt-oss's FlexAttention (sinks, sliding window) keeps the FlashAttention-2 default.
        training["attention_kernel"] = "fused"
        assumed.append("attention: Transformer Engine / cuDNN fused attention (kernel column 'TE')")
    if row["id"] == "automodel-pretrain-gpt-oss-20b-8gpu":
        # AutoModel's own gpt-oss code computes the loss on bf16 logits (the benchmark yaml's
        # MaskedCrossEntropy(fp32_upcast=False)): the preset's config with logits_fp32 false
        model = dict(GPT_OSS_20B_CONFIG)
        training["loss"] = "unfused_16bit"
        assumed.append("loss: the benchmark yaml's MaskedCrossEntropy(fp32_upcast=False) on the "
                       "bf16 logits of AutoModel's own gpt-oss code: loss unfused_16bit with "
                       "model.logits_fp32 false")
    if src == "automodel" and "lora" in row["id"]:
        # PeftConfig target_modules '*_proj', dim 16, alpha 32 (dropout 0.1 in the 8B yaml).
        training["adapter"] = {"type": "lora", "rank": 16, "alpha": 32,
                               "dropout": 0.1 if "8b" in row["id"] else 0.0,
                               "targets": ["q_proj", "k_proj", "v_proj", "o_proj",
                                           "gate_proj", "up_proj", "down_proj"],
                               # PeftConfig.lora_dtype None: the adapters take the base
                               # weight's dtype (components/_peft/lora.py LinearLoRA._init_adapter),
                               # not peft's fp32
                               "dtype": "bf16"}
        assumed.append("adapter: LoRA rank 16, alpha 32 on every *_proj (benchmark yaml), bf16 "
                       "adapters (AutoModel's lora_dtype None: the base weight's dtype)")
        if "8b" in row["id"]:
            assumed.append("adapter: AutoModel's dropout is on the LoRA output (dropout_position "
                           "'post'), counted as peft's dropout on the input (memest has pre only)")
            # force_hf: true runs Hugging Face's LlamaForCausalLM, which AutoModel patches with
            # Liger-Kernel by default (_transformers/auto_model.py use_liger_kernel=True,
            # kernel_patches.py _patch_liger_kernel; liger-kernel is a dependency in pyproject.toml)
            training["use_liger_kernel"] = True
            assumed.append("kernels: Liger-Kernel's RMSNorm and SwiGLU (AutoModel's default for "
                           "Hugging Face models)")
    if src == "mcore-moe" and "longctx" in row["id"]:
        assumed.append("batch: micro_batch 1 (not in the long-context table); measured is forced-balance routing")

    gpu = gpu_preset(row)
    if src == "bloom":
        # Jean Zay's A100 nodes (BLOOM paper, arXiv:2211.05100 Sec. 3.4.1): 8 GPUs per node,
        # 4 Omni-Path 100 Gb/s links per node between nodes: 50 Gb/s = 6.25 GB/s per GPU.
        gpu = {"preset": gpu, "inter_node_gbps": 6.25}
        assumed.append("network: Jean Zay's 4 x 100 Gb/s Omni-Path per 8-GPU node (BLOOM paper Sec. 3.4.1)")
    request = {"mode": "pretrain", "model": model, "gpu": gpu,
               "parallel": parallel, "training": training}
    out.update({"request": request,
                # the source's own layout (its vpp even where the request drops it)
                "overlap": overlap_for(row, src, {"tp": tp, "cp": cp, "pp": pp, "vpp": vpp}, assumed),
                "assumed": assumed, "skip": skip})
    return out


# ---------------------------------------------------------------- check with memest
def check(rows, binary):
    """Run each non-skipped request through `memest request`; refusals become skips."""
    for r in rows:
        if r["skip"]:
            continue
        res = subprocess.run([binary, "request"], input=json.dumps(r["request"]),
                             capture_output=True, text=True)
        try:
            doc = json.loads(res.stdout)
        except ValueError:
            r["skip"] = "memest: " + (res.stderr.strip() or "no output")
            continue
        if not doc.get("ok"):
            e = doc.get("error", {})
            r["skip"] = "memest refused: %s: %s" % (e.get("field"), e.get("message"))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", default=DEFAULT_SRC)
    ap.add_argument("--out", default=DEFAULT_OUT)
    ap.add_argument("--check", metavar="MEMEST",
                    help="memest binary: mark rows it refuses as skipped (their refusal as reason)")
    a = ap.parse_args()
    with open(a.src) as fh:
        src_rows = json.load(fh)
    rows = [convert(r) for r in src_rows]
    if a.check:
        check(rows, a.check)
    doc = {"note": "Made by scripts/throughput/convert_given.py from %s (%d rows): one memest "
                   "pretrain request per row, measured_tokens_per_s_per_gpu = derived."
                   "tokens_per_s_per_gpu of the source, overlap = the source stack's communication "
                   "overlap, assumed = what each request assumes, skip = why a row is not "
                   "expressible." % (os.path.basename(a.src), len(src_rows)),
           "rows": rows}
    os.makedirs(os.path.dirname(a.out), exist_ok=True)
    with open(a.out, "w") as fh:
        json.dump(doc, fh, indent=1)
        fh.write("\n")
    n_skip = sum(1 for r in rows if r["skip"])
    print("%d rows, %d skipped -> %s" % (len(rows), n_skip, a.out))


if __name__ == "__main__":
    sys.exit(main())
