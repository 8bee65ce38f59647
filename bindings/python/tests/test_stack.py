"""The training-stack fields (README "Training stack") through the Python binding: keyword
arguments, result fields, the library's enum names and refused combinations. Run against the
installed package (scripts/test.d/20-bindings.sh); MEMEST_CLI (the `memest` program) adds the
check against the command line."""
import json
import os
import subprocess

import pytest

import memest

# Llama-3.1-8B on 8 x H100 under FSDP2 (zero 3 = reshard after forward), torchtitan's per-op
# recomputation and an unfused loss.
FSDP_KW = dict(gpus=8, zero=3, seq_len=4096, micro_batch=2, global_batch=16,
               framework="fsdp", recompute="op_selective", loss="unfused")
FSDP_JSON = {"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
             "parallel": {"gpus": 8, "zero": 3},
             "training": {"seq_len": 4096, "micro_batch": 2, "global_batch": 16,
                          "framework": "fsdp", "recompute": "op_selective", "loss": "unfused"}}


def test_enum_names_come_from_the_library():
    doc = json.loads(memest.request_json('{"mode": "enums"}'))["enums"]
    names = memest.enums()
    for kind in ("framework", "loss", "optimizer", "recompute"):
        assert names[kind] == doc[kind], kind
    assert names["framework"][0] == "megatron"  # the default is value 0
    assert "op_selective" in names["recompute"]


def test_fsdp_keyword_request_equals_json_request():
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", **FSDP_KW)
    j = json.loads(memest.request_json(json.dumps(FSDP_JSON)))
    assert r.to_dict() == j
    assert r.training.framework == "fsdp" and r.training.loss == "unfused"
    assert r.training.recompute == "op_selective"
    # allocated < reserved = peak: the allocator's reserve is the difference
    assert 0 < r.peak_allocated_bytes < r.peak_reserved_bytes
    assert r.peak_reserved_bytes == r.peak_bytes
    assert r.host_bytes == 0
    s = r.stages[r.peak_stage]
    assert isinstance(s.stack, memest.StackParts)
    assert s.stack.framework_buffer_bytes > 0          # FSDP's all-gather / reduce-scatter
    assert s.stack.master_weights_bytes == 0           # FSDP2 keeps no fp32 master
    assert s.stack.loss_bytes >= 0 and s.stack.paged_bytes == 0
    assert s.peak_allocated_bytes == r.peak_allocated_bytes
    # the stack's parts are columns of the flat rows
    row = r.to_rows()[0]
    assert row["framework"] == "fsdp" and "framework_buffer_bytes" in row


def test_fsdp_differs_from_megatron():
    fsdp = memest.pretrain("llama-3.1-8b", "h100-80gb", **FSDP_KW)
    kw = {**FSDP_KW, "framework": "megatron", "recompute": "selective", "loss": None}
    meg = memest.pretrain("llama-3.1-8b", "h100-80gb", **kw)
    assert fsdp.peak_bytes != meg.peak_bytes
    assert meg.training.framework == "megatron" and meg.training.loss == "fused"
    # Megatron keeps an fp32 master beside bf16 weights (sharded by ZeRO 3), FSDP2 none; the
    # framework buffers are FSDP's
    assert meg.stages[0].stack.master_weights_bytes > 0 == fsdp.stages[0].stack.master_weights_bytes
    assert meg.stages[0].stack.framework_buffer_bytes == 0 < fsdp.stages[0].stack.framework_buffer_bytes


@pytest.mark.skipif(not os.environ.get("MEMEST_CLI"), reason="MEMEST_CLI (the memest program) not set")
def test_fsdp_peak_equals_the_cli():
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", **FSDP_KW)
    out = subprocess.run(
        [os.environ["MEMEST_CLI"], "pretrain", "-m", "llama-3.1-8b", "-g", "h100-80gb",
         "--gpus", "8", "--tp", "1", "--cp", "1", "--pp", "1", "--zero", "3", "--seq-len", "4096",
         "--micro-batch", "2",
         "--global-batch", "16", "--framework", "fsdp", "--recompute", "op_selective",
         "--loss", "unfused", "--format", "json"],
        capture_output=True, text=True, check=True)
    cli = json.loads(out.stdout)
    assert cli["peak_bytes"] == r.peak_bytes
    assert cli["peak_allocated_bytes"] == r.peak_allocated_bytes
    assert cli["training"]["framework"] == "fsdp"


def test_offload_and_optimizer_fields():
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8, zero=3, seq_len=4096,
                        framework="deepspeed", optimizer="adamw",
                        offload={"optimizer": True}, buckets={"reduce_bucket_size": 2e8})
    assert r.training.offload.optimizer is True and r.training.offload.params is False
    assert r.host_bytes > 0
    assert r.stages[0].stack.offload_staging_bytes >= 0
    on_gpu = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8, zero=3, seq_len=4096,
                             framework="deepspeed", optimizer="adamw")
    assert on_gpu.host_bytes == 0 and r.peak_bytes < on_gpu.peak_bytes


def test_op_selective_under_megatron_is_refused_naming_the_field():
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8, recompute="op_selective")
    assert info.value.field == "training.recompute"
    assert "op_selective" in str(info.value)


@pytest.mark.parametrize("kw, field", [
    (dict(framework="jax"), "training.framework"),
    (dict(framework="fsdp", loss="fancy"), "training.loss"),
    (dict(framework="fsdp", optimizer="lion"), "training.optimizer"),
    (dict(framework="pytorch", zero=3), "parallel.zero"),
    (dict(framework="megatron", compile=True), "training.compile"),
    (dict(framework="fsdp", recompute="full", recompute_every=0), "training.recompute_every"),
    (dict(framework="fsdp", offload={"gpu": True}), "training.offload.gpu"),
    (dict(framework="pytorch", buckets={"bucket_cap_mb": -1}), "training.buckets.bucket_cap_mb"),
    (dict(framework="fsdp", offload=True), "training.offload"),
    # the Llama preset's code casts its logits to fp32 (logits_fp32): no 16-bit logits to keep
    (dict(framework="deepspeed", loss="unfused_16bit"), "training.loss"),
])
def test_bad_stack_input_names_the_field(kw, field):
    with pytest.raises(memest.MemestError) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8, **kw)
    assert info.value.field == field, (info.value.field, str(info.value))


def test_unfused_16bit_loss_keeps_the_fp16_logits():
    # GPT2-XL under DeepSpeed fp16 (the ColossalAI-Pytorch-lightning benchmark): the loss holds
    # logits + shifted copy + fp16 log-probs, 6 bytes per logit of 40 * 1024 * 50257 =
    # 2058526720 logits = 12351160320 bytes (unfused, upcast to fp32: 12 bytes per logit)
    assert "unfused_16bit" in memest.enums()["loss"]
    gpt2xl = {"model_type": "gpt2", "n_embd": 1600, "n_layer": 48, "n_head": 25,
              "vocab_size": 50257, "n_positions": 1024}
    kw = dict(gpus=4, zero=3, seq_len=1024, micro_batch=40, framework="deepspeed",
              param_dtype="fp16", grad_dtype="fp16", recompute="full", flash_attention=False)
    r = memest.pretrain(gpt2xl, "a100-40gb", loss="unfused_16bit", **kw)
    assert r.training.loss == "unfused_16bit"
    assert r.stages[0].stack.loss_bytes == 12351160320
    assert memest.pretrain(gpt2xl, "a100-40gb", loss="unfused", **kw).stages[0].stack.loss_bytes == 24702320640
    # under autocast (fp32 parameters) log_softmax runs in fp32 anyway: refused
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain(gpt2xl, "a100-40gb", loss="unfused_16bit", **{**kw, "param_dtype": "fp32"})
    assert info.value.field == "training.loss" and "autocast" in str(info.value)


def test_search_takes_the_stack():
    s = memest.search("llama-3.1-8b", "h100-80gb", gpus=8, seq_len=4096, global_batch=16,
                      framework="fsdp", recompute=["none", "op_selective"], zero=[3], top=3)
    assert len(s) >= 1
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.search("llama-3.1-8b", "h100-80gb", gpus=8, framework="megatron", compile=True)
    assert info.value.field == "training.compile"


# The small Qwen3-MoE of tests/data/measured/h100-stacks.json (489,441,280 parameters).
QWEN3_MOE_SMALL = {"model_type": "qwen3_moe", "hidden_size": 1024, "intermediate_size": 3072,
                   "moe_intermediate_size": 512, "num_hidden_layers": 8,
                   "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 64,
                   "num_experts": 32, "num_experts_per_tok": 4, "vocab_size": 32000,
                   "tie_word_embeddings": False}


def test_moe_under_pytorch_and_fsdp():
    r = memest.pretrain(QWEN3_MOE_SMALL, "h100-80gb", gpus=1, seq_len=2048, micro_batch=4,
                        global_batch=4, framework="pytorch", param_dtype="bf16",
                        grad_dtype="bf16", optimizer="adamw")
    assert r.model.num_parameters == 489441280
    # every expert on the GPU, counted once: bf16 weights of all parameters
    assert r.stages[0].weights_bytes == 2 * 489441280
    assert r.stages[0].experts.parameters == 8 * 32 * 3 * 1024 * 512
    f = memest.pretrain(QWEN3_MOE_SMALL, "h100-80gb", gpus=8, seq_len=2048, micro_batch=4,
                        framework="fsdp", recompute="full")
    assert f.layout.ep == 1 and f.training.framework == "fsdp"
    # (1.7) the search enumerates ep under fsdp too (torchtitan's expert parallelism)
    s = memest.search(QWEN3_MOE_SMALL, "h100-80gb", gpus=8, seq_len=2048, global_batch=64,
                      framework="fsdp", top=50)
    assert {row["layout"]["ep"] for row in s} == {1, 2, 4, 8}


def test_moe_expert_parallel_under_fsdp_and_refusals_naming_the_field():
    # (1.7) torchtitan's EP under fsdp: ep 2 of 8 GPUs, the 8 layers' 32 experts of
    # 3 * 1024 * 512 split over ep: 8 * 16 * 1572864 = 201326592 parameters per GPU.
    r = memest.pretrain(QWEN3_MOE_SMALL, "h100-80gb", gpus=8, tp=1, pp=1, ep=2, seq_len=2048,
                        micro_batch=4, recompute="full", framework="fsdp")
    assert r.layout.ep == 2 and r.layout.edp == 4
    assert r.stages[0].experts.parameters == 8 * 16 * 3 * 1024 * 512
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain(QWEN3_MOE_SMALL, "h100-80gb", gpus=8, tp=1, pp=1, ep=2, etp=2,
                        framework="fsdp")
    assert info.value.field == "parallel.etp"
    # deepspeed: a Hugging Face MoE as plain ZeRO with ep 1 (every expert, 402653184), ep 2 refused
    d = memest.pretrain(QWEN3_MOE_SMALL, "h100-80gb", gpus=8, tp=1, pp=1, framework="deepspeed")
    assert d.layout.ep == 1 and d.stages[0].experts.parameters == 8 * 32 * 3 * 1024 * 512
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain(QWEN3_MOE_SMALL, "h100-80gb", gpus=8, tp=1, pp=1, ep=2,
                        framework="deepspeed")
    assert info.value.field == "parallel.ep"


def test_ddp_on_one_gpu_counts_the_buckets_a_bucket_size_alone_does_not():
    # (1.7) Llama-3.1-8B under plain PyTorch, fp32 gradients, one GPU: a bucket size alone
    # (DDP's default 25 MB) does not wrap one process; ddp=True (torchrun with DDP around one
    # GPU) buckets every gradient, 4 bytes x num_parameters; the result echoes training.ddp.
    kw = dict(gpus=1, tp=1, pp=1, framework="pytorch", param_dtype="fp32", grad_dtype="fp32",
              buckets={"bucket_cap_mb": 25})
    plain = memest.pretrain("llama-3.1-8b", "h100-80gb", **kw)
    assert plain.training.ddp == "default"
    assert plain.stages[0].stack.framework_buffer_bytes == 0
    on = memest.pretrain("llama-3.1-8b", "h100-80gb", ddp=True, **kw)
    assert on.training.ddp is True
    assert on.model.num_parameters > 8e9
    assert on.stages[0].stack.framework_buffer_bytes == 4 * on.model.num_parameters
    assert on.peak_bytes > plain.peak_bytes
    off = memest.pretrain("llama-3.1-8b", "h100-80gb", ddp=False, **kw)
    assert off.training.ddp is False and off.peak_bytes == plain.peak_bytes
    # the keyword is the JSON field
    req = {"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
           "parallel": {"gpus": 1, "tp": 1, "pp": 1},
           "training": {"framework": "pytorch", "param_dtype": "fp32", "grad_dtype": "fp32",
                        "buckets": {"bucket_cap_mb": 25}, "ddp": True}}
    assert json.loads(memest.request_json(json.dumps(req)))["peak_bytes"] == on.peak_bytes
    # refused by name: ddp False with two data-parallel ranks, ddp under megatron
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=2, tp=1, pp=1, framework="pytorch",
                        ddp=False)
    assert info.value.field == "training.ddp"
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=1, tp=1, pp=1, ddp=True)
    assert info.value.field == "training.ddp"
    # the search takes it too
    s = memest.search("llama-3.1-8b", "h100-80gb", gpus=1, seq_len=2048, global_batch=4,
                      framework="pytorch", ddp=False, top=1, include_oom=True)
    assert len(s) >= 1
