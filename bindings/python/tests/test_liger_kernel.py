"""ABI 1.12 through the Python binding: pretrain(use_liger_kernel=True) / search(...) and the
r.use_liger_kernel echo, on the hand-derived values of tests/unit/test_liger.cpp. Run against the
installed package (scripts/test.d/20-bindings.sh)."""
import json

import pytest

import memest

# Llama-3.1-8B on one H100, seq 2048, micro batch 1, global batch 8, no recomputation, ZeRO 0
ONE_GPU = dict(gpus=1, tp=1, pp=1, zero=0, seq_len=2048, micro_batch=1, global_batch=8,
               recompute="none")


def llama(framework, **kw):
    return memest.pretrain("llama-3.1-8b", "h100-80gb", framework=framework, **{**ONE_GPU, **kw})


def field_of(call):
    with pytest.raises(memest.InvalidArgumentError) as info:
        call()
    return info.value.field


def test_liger_drops_the_hand_derived_activations():
    # pytorch (HF blocks): 32 layers save 61440 B per token less (200840 -> 139400):
    # 32 * 61440 * 2048 = 4026531840 B
    hf, liger = llama("pytorch"), llama("pytorch", use_liger_kernel=True)
    assert hf.stages[0].activations_bytes - liger.stages[0].activations_bytes == 4026531840
    assert liger.use_liger_kernel is True and hf.use_liger_kernel is False
    assert liger.training.use_liger_kernel is True
    assert liger.peak_bytes < hf.peak_bytes
    # fsdp (torchtitan's block, norms already fused): only the SiLU output, 32 * 2 * 14336 * 2048
    fsdp, fsdp_liger = llama("fsdp"), llama("fsdp", use_liger_kernel=True)
    assert fsdp.stages[0].activations_bytes - fsdp_liger.stages[0].activations_bytes == 1879048192
    # the keyword is the JSON field
    raw = json.loads(memest.request_json(json.dumps({
        "mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
        "parallel": {"gpus": 1, "tp": 1, "pp": 1, "zero": 0},
        "training": {"framework": "pytorch", "seq_len": 2048, "micro_batch": 1, "global_batch": 8,
                     "recompute": "none", "use_liger_kernel": True}})))
    assert raw["peak_bytes"] == liger.peak_bytes
    assert raw["training"]["use_liger_kernel"] is True


def test_search_takes_it():
    kw = dict(gpus=8, seq_len=4096, global_batch=64, framework="fsdp", top=3)
    plain = memest.search("llama-3.1-8b", "h100-80gb", **kw)
    liger = memest.search("llama-3.1-8b", "h100-80gb", use_liger_kernel=True, **kw)
    raw = json.loads(memest.request_json(json.dumps({
        "mode": "search", "model": "llama-3.1-8b", "gpu": "h100-80gb", "parallel": {"gpus": 8},
        "training": {"framework": "fsdp", "seq_len": 4096, "global_batch": 64,
                     "use_liger_kernel": True},
        "search": {"top": 3}})))
    peaks = [row.peak_bytes for row in liger]
    assert peaks == [row["peak_bytes"] for row in raw["results"]]
    assert peaks != [row.peak_bytes for row in plain]
    assert field_of(lambda: memest.search("llama-3.1-8b", "h100-80gb", gpus=8, seq_len=4096,
                                          global_batch=64, framework="megatron",
                                          use_liger_kernel=True)) == "training.use_liger_kernel"


def test_refusals_name_the_field():
    assert field_of(lambda: llama("megatron", use_liger_kernel=True)) == "training.use_liger_kernel"
    assert field_of(lambda: memest.pretrain("gpt2", "h100-80gb", framework="pytorch",
                                            use_liger_kernel=True, **ONE_GPU)) == \
        "training.use_liger_kernel"
    # a number is not a boolean: a type error naming the field
    with pytest.raises(memest.FieldTypeError) as info:
        llama("pytorch", use_liger_kernel=1)
    assert info.value.field == "training.use_liger_kernel"
