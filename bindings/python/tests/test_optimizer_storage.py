"""ABI 1.15 through the Python binding: pretrain(master_weights=..., optimizer_state_dtype=...) /
search(...), the r.master_weights / r.optimizer_state_dtype echoes and master_weights_names(),
on the hand-derived values of tests/unit/test_optimizer_storage.cpp. Run against the installed
package (scripts/test.d/20-bindings.sh)."""
import json

import pytest

import memest

# Llama-3.1-8B (8,030,261,248 parameters) on 8 H100s, data-parallel, the distributed optimizer
# (zero 1) sharding K over 8: 1,003,782,656 parameters' worth of optimizer states per GPU.
# Megatron, seq 2048, micro batch 1, global batch 8, no recomputation; K derived.
LAYOUT = dict(gpus=8, tp=1, pp=1, zero=1, framework="megatron", seq_len=2048, micro_batch=1,
              global_batch=8, recompute="none")
SHARD = 8030261248 // 8


def llama(**kw):
    return memest.pretrain("llama-3.1-8b", "h100-80gb", **{**LAYOUT, **kw})


def raw(**training):
    """The same request as JSON text through request_json: what the keywords must send."""
    t = {"framework": "megatron", "seq_len": 2048, "micro_batch": 1, "global_batch": 8,
         "recompute": "none", **training}
    return json.loads(memest.request_json(json.dumps({
        "mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
        "parallel": {"gpus": 8, "tp": 1, "pp": 1, "zero": 1}, "training": t})))


def field_of(call, error=memest.InvalidArgumentError):
    with pytest.raises(error) as info:
        call()
    return info.value.field


def test_the_names_come_from_the_library():
    names = memest.master_weights_names()
    assert names == ["auto", "fp32", "bf16", "fp16", "remainder", "none"]
    assert names == memest.enums()["master_weights"]
    fields = {f.path: f for f in memest.request_fields()}
    assert list(fields["training.master_weights"].choices) == names
    assert fields["training.master_weights"].default == "auto"
    assert fields["training.master_weights"].cli == "--master-weights"
    assert fields["training.optimizer_state_dtype"].cli == "--optimizer-state-dtype"


def test_k_from_the_master_and_the_moments_by_hand():
    # the default: an fp32 master beside bf16 weights, fp32 moments: K = 4 + 2 * 4 = 12
    base = llama()
    assert base.stages[0].optimizer_bytes == 12 * SHARD == 12045391872
    assert base.stages[0].stack.master_weights_bytes == 4 * SHARD
    assert (base.master_weights, base.optimizer_state_dtype) == ("fp32", "fp32")
    # NeMo's Llama 3.1 recipes (Apex, fp32 states over bf16 weights): remainders, K = 2 + 8 = 10
    rem = llama(master_weights="remainder")
    assert rem.stages[0].optimizer_bytes == 10 * SHARD == 10037826560
    assert rem.stages[0].stack.master_weights_bytes == 2 * SHARD == 2007565312
    assert (rem.master_weights, rem.optimizer_state_dtype) == ("remainder", "fp32")
    assert rem.training.master_weights == "remainder"
    # the weights and activations do not move; the peak falls by at least the 2 bytes
    assert rem.stages[0].weights_bytes == base.stages[0].weights_bytes
    assert rem.stages[0].activations_bytes == base.stages[0].activations_bytes
    assert base.peak_bytes - rem.peak_bytes >= 2 * SHARD
    # Nemotron-4 340B's optim.dtype bf16 = the model's: no master, bf16 moments, K = 2 * 2 = 4
    bf16 = llama(master_weights="none", optimizer_state_dtype="bf16")
    assert bf16.stages[0].optimizer_bytes == 4 * SHARD == 4015130624
    assert bf16.stages[0].stack.master_weights_bytes == 0
    assert (bf16.master_weights, bf16.optimizer_state_dtype) == ("none", "bf16")
    # deepspeed keeps masters too: remainders there are 10 bytes as well
    ds = llama(framework="deepspeed", master_weights="remainder")
    assert ds.stages[0].optimizer_bytes == 10 * SHARD


def test_the_keywords_are_the_json_fields():
    for kw in ({}, {"master_weights": "remainder"},
               {"master_weights": "none", "optimizer_state_dtype": "bf16"}):
        typed, answer = llama(**kw), raw(**kw)
        assert typed.peak_bytes == answer["peak_bytes"], kw
        assert typed.stages[0].optimizer_bytes == answer["stages"][0]["optimizer_bytes"], kw
        assert typed.master_weights == answer["training"]["master_weights"], kw
        assert typed.optimizer_state_dtype == answer["training"]["optimizer_state_dtype"], kw
    assert raw(master_weights="remainder")["stages"][0]["optimizer_bytes"] == 10037826560
    # the default request echoes the values in effect
    assert raw()["training"]["master_weights"] == "fp32"
    assert raw()["training"]["optimizer_state_dtype"] == "fp32"


def test_search_takes_them():
    kw = dict(gpus=8, seq_len=4096, global_batch=64, framework="megatron", top=3)
    plain = memest.search("llama-3.1-8b", "h100-80gb", **kw)
    none = memest.search("llama-3.1-8b", "h100-80gb", master_weights="none",
                         optimizer_state_dtype="bf16", **kw)
    answer = json.loads(memest.request_json(json.dumps({
        "mode": "search", "model": "llama-3.1-8b", "gpu": "h100-80gb", "parallel": {"gpus": 8},
        "training": {"framework": "megatron", "seq_len": 4096, "global_batch": 64,
                     "master_weights": "none", "optimizer_state_dtype": "bf16"},
        "search": {"top": 3}})))
    peaks = [row.peak_bytes for row in none]
    assert len(peaks) == 3 and peaks == [row["peak_bytes"] for row in answer["results"]]
    assert peaks != [row.peak_bytes for row in plain]
    assert field_of(lambda: memest.search("llama-3.1-8b", "h100-80gb", gpus=8, seq_len=4096,
                                          global_batch=64, framework="fsdp",
                                          master_weights="remainder")) == "training.master_weights"


def test_refusals_name_the_field():
    # only megatron and deepspeed keep a master beside the weights
    assert field_of(lambda: llama(framework="fsdp", master_weights="fp32")) == \
        "training.master_weights"
    # K given whole beside its parts
    assert field_of(lambda: llama(master_weights="remainder", optimizer_bytes=12)) == \
        "training.master_weights"
    assert field_of(lambda: llama(optimizer_state_dtype="bf16", optimizer_bytes=12)) == \
        "training.optimizer_state_dtype"
    # unknown names, optimizers without dtyped moments
    assert field_of(lambda: llama(master_weights="fp64")) == "training.master_weights"
    assert field_of(lambda: llama(optimizer_state_dtype="int4")) == \
        "training.optimizer_state_dtype"
    assert field_of(lambda: llama(optimizer_state_dtype="bf16", optimizer="sgd")) == \
        "training.optimizer_state_dtype"
    assert field_of(lambda: llama(optimizer_state_dtype="bf16", optimizer="adamw_8bit")) == \
        "training.optimizer_state_dtype"
    # a number is not a name: a type error naming the field
    assert field_of(lambda: llama(master_weights=1), memest.FieldTypeError) == \
        "training.master_weights"
    assert field_of(lambda: llama(optimizer_state_dtype=2), memest.FieldTypeError) == \
        "training.optimizer_state_dtype"
