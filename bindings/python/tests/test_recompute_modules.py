"""ABI 1.11 through the Python binding: Megatron-Core's recompute modules
(pretrain(recompute_modules=[...]), search(...), r.recompute_modules, recompute_modules()) on the
hand-derived values of tests/unit/test_recompute_modules.cpp, and the fine-tuning result's
peak_verdict beside LLMem's own verdict. Run against the installed package
(scripts/test.d/20-bindings.sh)."""
import json

import pytest

import memest

# The small MoE of tests/unit/test_recompute_modules.cpp as a qwen3_moe config.json: h 64, 4
# layers, 4 heads, 8 experts of 32, top-2, every layer an MoE layer, no shared expert.
SMALL_QWEN3_MOE = {
    "model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 4,
    "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 16,
    "intermediate_size": 256, "moe_intermediate_size": 32, "num_experts": 8,
    "num_experts_per_tok": 2, "vocab_size": 100, "max_position_embeddings": 64,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "tie_word_embeddings": False}
# s = 16, b = 1, tp 2 with SP (etp = tp), pp 1, ZeRO 1, recompute selective under megatron
MOE = dict(gpus=2, tp=2, pp=1, zero=1, sp=True, framework="megatron", seq_len=16, micro_batch=1,
           global_batch=4, recompute="selective")


def moe(**kw):
    return memest.pretrain(SMALL_QWEN3_MOE, "h100-80gb", **{**MOE, **kw})


def field_of(call):
    with pytest.raises(memest.InvalidArgumentError) as info:
        call()
    return info.value.field


def test_the_names_come_from_the_library():
    names = memest.recompute_modules()
    assert names == memest.enums()["recompute_module"]
    tables = json.loads(memest.request_json('{"mode": "enums"}'))["enums"]
    assert names == tables["recompute_module"]
    assert names[:3] == ["core_attn", "moe_act", "layernorm"] and "shared_experts" in names


def test_each_module_drops_what_it_recomputes():
    # per MoE layer the routed parts 320 + 4096 + 3072 + 2112 = 9600 bytes and the pre-MLP
    # norm's output 2 s b h / t = 1024; the experts' activation output 1024
    plain = moe()
    assert plain.recompute_modules == ["core_attn"]
    assert plain.stages[0].experts.activations_bytes == 4 * 9600
    only_moe = moe(recompute_modules=["moe"])
    assert only_moe.recompute_modules == ["moe"]
    assert only_moe.training.recompute_modules == ["moe"]
    assert plain.stages[0].activations_bytes - only_moe.stages[0].activations_bytes == 4 * 9600
    assert only_moe.stages[0].experts.activations_bytes == 0
    both = moe(recompute_modules=("layernorm", "moe"))  # a tuple is sent as a list
    assert both.recompute_modules == ["layernorm", "moe"]
    assert plain.stages[0].activations_bytes - both.stages[0].activations_bytes == 4 * (9600 + 1024)
    act = moe(recompute_modules={"moe_act"})
    assert plain.stages[0].activations_bytes - act.stages[0].activations_bytes == 4 * 1024
    assert both.peak_bytes < plain.peak_bytes
    # the keyword is the JSON field
    raw = json.loads(memest.request_json(json.dumps({
        "mode": "pretrain", "model": SMALL_QWEN3_MOE, "gpu": "h100-80gb",
        "parallel": {"gpus": 2, "tp": 2, "pp": 1, "zero": 1, "sp": True},
        "training": {"framework": "megatron", "seq_len": 16, "micro_batch": 1, "global_batch": 4,
                     "recompute": "selective", "recompute_modules": ["layernorm", "moe"]}})))
    assert raw["peak_bytes"] == both.peak_bytes
    assert raw["stages"][0]["activations_bytes"] == both.stages[0].activations_bytes
    # outside selective recomputation the modules change nothing, and the echo says so
    none = moe(recompute="none", recompute_modules=["moe"])
    assert none.recompute_modules == []
    assert none.peak_bytes == moe(recompute="none").peak_bytes


def test_refusals_name_the_field():
    assert field_of(lambda: moe(recompute_modules=["attn"])) == "training.recompute_modules[0]"
    assert field_of(lambda: moe(recompute_modules=["moe", "mlp_up"])) == "training.recompute_modules[1]"
    assert field_of(lambda: moe(recompute_modules=[])) == "training.recompute_modules"
    # mla_up_proj without latent attention; the MoE modules on a dense model; another framework
    assert field_of(lambda: moe(recompute_modules=["mla_up_proj"])) == "training.recompute_modules"
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8, recompute="selective",
                                            recompute_modules=["moe_act"])) == "training.recompute_modules"
    assert field_of(lambda: moe(framework="fsdp", recompute_modules=["moe"])) == "training.recompute_modules"


def test_the_search_takes_them():
    assert field_of(lambda: memest.search("llama-3.1-8b", "h100-80gb", gpus=8, seq_len=4096,
                                          global_batch=64, recompute_modules=["moe"])
                    ) == "training.recompute_modules"
    # under megatron the searched layouts keep less: the best one's peak falls
    kw = dict(gpus=2, seq_len=16, global_batch=4, recompute=["selective"], top=1)
    plain = memest.search(SMALL_QWEN3_MOE, "h100-80gb", **kw)
    fewer = memest.search(SMALL_QWEN3_MOE, "h100-80gb", recompute_modules=["layernorm", "moe"], **kw)
    assert len(plain) == len(fewer) == 1
    assert fewer[0].layout.to_dict() == plain[0].layout.to_dict()
    assert fewer[0].peak_bytes < plain[0].peak_bytes


def test_finetune_peak_verdict_is_the_headline():
    # LLMem's Algorithm 1 on Llama-3.1-8B, 8 x A100 80GB, 2048 tokens: the selected method's peak
    # is 98.8 % of capacity: within it ("fits", LLMem's test) but past the fits band ("tight")
    ft = memest.finetune("llama-3.1-8b", "a100-80gb", gpus=8, seq_len=2048, method="auto")
    assert ft.verdict == "fits"
    assert ft.peak_verdict == "tight"
    assert 0.98 < ft.peak_bytes / ft.capacity_bytes < 0.99
    assert repr(ft).startswith("FinetuneResult: tight\n")
    assert ">tight</span>" in ft._repr_html_()
    raw = json.loads(memest.request_json(json.dumps({
        "mode": "finetune", "model": "llama-3.1-8b", "gpu": "a100-80gb", "parallel": {"gpus": 8},
        "training": {"seq_len": 2048}, "finetune": {"method": "auto"}})))
    assert (raw["verdict"], raw["peak_verdict"]) == ("fits", "tight")
