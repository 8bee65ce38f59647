"""ABI 1.6 through the Python binding: the precision policy and loss fields of the training block
(reduce_dtype, loss_parallel, autocast, fp8_all_gather, no_sync, logits_held, the adapter's
quantize_lm_head), framework "fsdp1", optimizers "adamw_foreach" and "paged_adamw_32bit", the
model's final_logit_softcapping, and what every result now states: the torch.cuda and nvidia-smi
figures, the peak's 90 % band, the probability of running out of memory and the margin, with
search.max_oom_probability. Run against the installed package (scripts/test.d/20-bindings.sh).
Every name and constant comes from the library; numbers are compared with the JSON route."""
import json
import math
from statistics import NormalDist

import pytest

import memest

# Llama-3.1-8B on 8 x H100 under FSDP with gradient accumulation (32 / (1 * 8) = 4 micro-batches)
ACC = dict(gpus=8, zero=3, seq_len=4096, micro_batch=1, global_batch=32)
# the 90 % band's half-width in standard deviations (memest.h: 1.645)
Z95 = NormalDist().inv_cdf(0.95)


def raw(req):
    return json.loads(memest.request_json(json.dumps(req)))


def pretrain_json(training, parallel, model="llama-3.1-8b", gpu="h100-80gb"):
    return raw({"mode": "pretrain", "model": model, "gpu": gpu, "parallel": parallel,
                "training": training})


def field_of(call):
    with pytest.raises(memest.MemestError) as info:
        call()
    assert info.value.message and info.value.code == "invalid_argument"
    return info.value.field


# ---- names and constants from the library


def test_new_enum_values_come_from_the_library():
    e = memest.enums()
    doc = raw({"mode": "enums"})
    assert e["framework"] == doc["enums"]["framework"]
    assert e["optimizer"] == doc["enums"]["optimizer"]
    assert e["framework"][4] == "fsdp1" and len(e["framework"]) == 5
    assert e["optimizer"][6:] == ["adamw_foreach", "paged_adamw_32bit"]
    assert memest._native.enum_value("framework", "fsdp1") == 4
    assert memest._native.enum_value("optimizer", "paged_adamw_32bit") == 7


def test_error_model_constants():
    doc = raw({"mode": "enums"})
    sigma = memest.peak_error_sigma()
    assert sigma == doc["peak_error_sigma"] and 0 < sigma < 1
    limit = memest.search_max_oom_probability()
    assert limit == doc["search_max_oom_probability"] and 0 < limit <= 1
    # the headline FITS band: the peak at most exp(-1.645 sigma) of capacity, rounded down
    fits = memest.peak_verdict_bands()["fits"]
    assert fits <= math.exp(-Z95 * sigma) < fits + 0.01


# ---- what a result states: torch.cuda, nvidia-smi, the band, P(OOM), the margin


def oom_probability(peak, capacity, sigma):
    """P(peak * exp(sigma * Z) > capacity), Z standard normal."""
    return 0.5 * math.erfc(math.log(capacity / peak) / (sigma * math.sqrt(2)))


def test_pretrain_states_band_probability_margin_and_torch_figures():
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", framework="fsdp1", **ACC)
    j = pretrain_json({"seq_len": 4096, "micro_batch": 1, "global_batch": 32, "framework": "fsdp1"},
                      {"gpus": 8, "zero": 3})
    assert r.to_dict() == j  # the keywords are the JSON request
    sigma = memest.peak_error_sigma()
    p = r.oom_probability
    assert 0 < p < 1 and p == j["oom_probability"]
    assert p == pytest.approx(oom_probability(r.peak_bytes, r.capacity_bytes, sigma), rel=1e-9, abs=5e-13)
    assert r.margin_bytes == j["margin_bytes"] == r.capacity_bytes - r.peak_bytes
    low, high = r.peak_band_bytes
    assert [low, high] == j["peak_band_bytes"]
    assert (r.peak_low_bytes, r.peak_high_bytes) == (low, high)
    assert low < r.peak_bytes < high
    assert high / r.peak_bytes == pytest.approx(math.exp(Z95 * sigma), rel=1e-12)
    assert low / r.peak_bytes == pytest.approx(math.exp(-Z95 * sigma), rel=1e-12)
    # the peak is within the margin of capacity: 50 % <=> the margin is 0
    assert (p < 0.5) == (r.margin_bytes > 0)
    # torch.cuda leaves the CUDA context out; nvidia-smi shows reserved + context + paged
    s = r.stages[r.peak_stage]
    context = s.overheads.context_bytes
    assert context > 0
    assert r.torch_max_memory_allocated_bytes == r.peak_allocated_bytes - context
    assert r.torch_max_memory_reserved_bytes == r.peak_reserved_bytes - context
    assert r.nvidia_smi_bytes == r.peak_reserved_bytes + s.stack.paged_bytes
    for key in ("torch_max_memory_allocated_bytes", "torch_max_memory_reserved_bytes",
                "nvidia_smi_bytes"):
        assert getattr(s, key) == getattr(r, key) == j["stages"][r.peak_stage][key], key
    # in words and in the flat rows
    assert "probability of running out of memory" in repr(r)
    row = r.to_rows()[r.peak_stage]
    assert row["oom_probability"] == p and row["nvidia_smi_bytes"] == r.nvidia_smi_bytes
    assert row["unsharded_root_bytes"] == s.stack.unsharded_root_bytes
    assert "optimizer_step_bytes" in row


def test_probability_follows_the_peak():
    fits = memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=8, tp=4, pp=2, seq_len=8192)
    over = memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=8, tp=4, cp=2, seq_len=8192,
                           micro_batch=2)
    assert over.peak_verdict == "oom" and over.margin_bytes < 0 and over.oom_probability > 0.5
    assert fits.margin_bytes > 0 and fits.oom_probability < over.oom_probability


# ---- the training stack's 1.6 fields


def test_fsdp1_keeps_the_root_unit_unsharded():
    fsdp1 = memest.pretrain("llama-3.1-8b", "h100-80gb", framework="fsdp1", no_sync=False, **ACC)
    fsdp2 = memest.pretrain("llama-3.1-8b", "h100-80gb", framework="fsdp", **ACC)
    assert fsdp1.training.framework == "fsdp1" and fsdp1.training.no_sync is False
    root = fsdp1.stages[0].unsharded_root_bytes
    assert root > 0 and root == fsdp1.stages[0].stack.unsharded_root_bytes
    assert fsdp2.stages[0].stack.unsharded_root_bytes == 0
    assert fsdp1.stages[0].weights_bytes - fsdp2.stages[0].weights_bytes == root


def test_fsdp1_no_sync_default_keeps_unsharded_gradients_over_accumulation():
    default = memest.pretrain("llama-3.1-8b", "h100-80gb", framework="fsdp1", **ACC)
    synced = memest.pretrain("llama-3.1-8b", "h100-80gb", framework="fsdp1", no_sync=False, **ACC)
    kept = memest.pretrain("llama-3.1-8b", "h100-80gb", framework="fsdp1", no_sync=True, **ACC)
    assert default.training.no_sync == "default" and kept.training.no_sync is True
    assert default.stages[0].gradients_bytes == kept.stages[0].gradients_bytes
    assert default.stages[0].gradients_bytes > synced.stages[0].gradients_bytes
    assert default.peak_bytes > synced.peak_bytes
    assert default.oom_probability > synced.oom_probability
    # no_sync is FSDP's
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=1, framework="pytorch",
                                            no_sync=True)) == "training.no_sync"


def test_adamw_foreach_allocates_during_the_step():
    kw = dict(gpus=1, seq_len=2048, micro_batch=1, global_batch=1, framework="pytorch")
    adamw = memest.pretrain("llama-3.1-8b", "h100-80gb", optimizer="adamw", **kw)
    foreach = memest.pretrain("llama-3.1-8b", "h100-80gb", optimizer="adamw_foreach", **kw)
    assert foreach.training.optimizer == "adamw_foreach"
    assert adamw.stages[0].optimizer_step_bytes == 0
    step = foreach.stages[0].optimizer_step_bytes
    assert step > 0 and step == foreach.stages[0].overheads.optimizer_step_bytes
    assert foreach.stages[0].optimizer_bytes == adamw.stages[0].optimizer_bytes  # adamw's states
    assert foreach.peak_bytes > adamw.peak_bytes
    assert math.isclose(sum(foreach.stages[0].overheads.to_dict().values()),
                        foreach.stages[0].overhead_bytes, rel_tol=1e-12)


def test_paged_adamw_32bit_shows_in_nvidia_smi_not_in_the_peak():
    kw = dict(gpus=1, seq_len=1024, micro_batch=1, global_batch=1, framework="pytorch")
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", optimizer="paged_adamw_32bit", **kw)
    paged = r.stages[0].stack.paged_bytes
    assert paged > 0 and r.peak_reserved_bytes == r.peak_bytes
    assert r.nvidia_smi_bytes == r.peak_reserved_bytes + paged
    assert r.nvidia_smi_bytes - r.torch_max_memory_reserved_bytes == \
        pytest.approx(r.stages[0].overheads.context_bytes + paged, rel=1e-12)


def test_reduce_dtype():
    kw = dict(gpus=8, zero=3, seq_len=4096, global_batch=8, framework="fsdp", grad_dtype="bf16")
    default = memest.pretrain("llama-3.1-8b", "h100-80gb", **kw)
    fp32 = memest.pretrain("llama-3.1-8b", "h100-80gb", reduce_dtype="fp32", **kw)
    assert default.training.reduce_dtype == "bf16" and fp32.training.reduce_dtype == "fp32"
    assert fp32.stages[0].stack.framework_buffer_bytes > default.stages[0].stack.framework_buffer_bytes
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", reduce_dtype="fp8", **kw)) \
        == "training.reduce_dtype"
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8,
                                            reduce_dtype="fp32")) == "training.reduce_dtype"


def test_loss_parallel_off_gathers_the_logits():
    kw = dict(gpus=8, tp=2, zero=3, seq_len=4096, global_batch=8, framework="fsdp")
    on = memest.pretrain("llama-3.1-8b", "h100-80gb", **kw)
    off = memest.pretrain("llama-3.1-8b", "h100-80gb", loss_parallel=False, **kw)
    assert on.training.loss_parallel is True and off.training.loss_parallel is False
    assert off.stages[0].stack.loss_bytes > on.stages[0].stack.loss_bytes
    assert off.peak_bytes > on.peak_bytes
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8, tp=2,
                                            loss_parallel=False)) == "training.loss_parallel"


def test_autocast_off_computes_in_fp32():
    kw = dict(gpus=1, seq_len=1024, micro_batch=1, global_batch=1, framework="pytorch",
              param_dtype="fp32", grad_dtype="fp32")
    default = memest.pretrain("gpt2", "h100-80gb", **kw)
    on = memest.pretrain("gpt2", "h100-80gb", autocast=True, **kw)
    off = memest.pretrain("gpt2", "h100-80gb", autocast=False, **kw)
    assert default.training.autocast == "default" and off.training.autocast is False
    assert default.peak_bytes == on.peak_bytes  # fp32 parameters run under autocast by default
    assert off.stages[0].activations_bytes > on.stages[0].activations_bytes  # fp32 activations
    assert off.stages[0].weights_bytes < on.stages[0].weights_bytes  # no 16-bit weight copies


def test_fp8_all_gather():
    kw = dict(gpus=8, zero=3, seq_len=4096, global_batch=8, framework="fsdp", fp8=True)
    bf16 = memest.pretrain("llama-3.1-8b", "h100-80gb", **kw)
    fp8 = memest.pretrain("llama-3.1-8b", "h100-80gb", fp8_all_gather=True, **kw)
    assert fp8.training.fp8_all_gather is True and bf16.training.fp8_all_gather is False
    assert fp8.stages[0].stack.framework_buffer_bytes < bf16.stages[0].stack.framework_buffer_bytes
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", fp8_all_gather=True,
                                            **{**kw, "fp8": False})) == "training.fp8_all_gather"


def test_logits_held_keeps_the_output_through_backward():
    kw = dict(gpus=1, seq_len=1024, micro_batch=1, global_batch=1, framework="pytorch")
    dropped = memest.pretrain("llama-3.1-8b", "h100-80gb", **kw)
    held = memest.pretrain("llama-3.1-8b", "h100-80gb", logits_held=True, **kw)
    assert held.training.logits_held is True and dropped.training.logits_held is False
    assert held.stages[0].stack.loss_bytes > dropped.stages[0].stack.loss_bytes
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8,
                                            logits_held=True)) == "training.logits_held"


def test_qlora_quantize_lm_head():
    kw = dict(gpus=1, seq_len=2048, micro_batch=1, global_batch=1, framework="pytorch")
    plain = memest.pretrain("llama-3.1-8b", "h100-80gb", adapter={"type": "qlora"}, **kw)
    head = memest.pretrain("llama-3.1-8b", "h100-80gb",
                           adapter={"type": "qlora", "quantize_lm_head": True}, **kw)
    assert head.training.adapter.quantize_lm_head is True
    assert plain.training.adapter.quantize_lm_head is False
    assert head.adapter.base_weights_bytes < plain.adapter.base_weights_bytes
    # Gemma 3 ties its LM head to the embedding; LoRA quantises nothing
    assert field_of(lambda: memest.pretrain("gemma-3-1b", "h100-80gb",
                                            adapter={"type": "qlora", "quantize_lm_head": True},
                                            **kw)) == "training.adapter.quantize_lm_head"
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb",
                                            adapter={"type": "lora", "quantize_lm_head": True},
                                            **kw)) == "training.adapter.quantize_lm_head"


# ---- the model's final_logit_softcapping

TINY = {"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632,
        "num_attention_heads": 32, "num_hidden_layers": 22, "num_key_value_heads": 4,
        "vocab_size": 32000, "tie_word_embeddings": False}


def test_final_logit_softcapping():
    presets = {m.id: m for m in memest.models()}
    assert presets["gemma-2-9b"].final_logit_softcapping == 30.0
    assert presets["llama-3.1-8b"].final_logit_softcapping == 0.0
    assert memest.describe_config({**TINY, "final_logit_softcapping": 30.0}).final_logit_softcapping == 30.0
    kw = dict(gpus=1, seq_len=2048, micro_batch=1, global_batch=1, framework="pytorch")
    plain = memest.pretrain(TINY, "h100-80gb", **kw)
    capped = memest.pretrain({**TINY, "final_logit_softcapping": 30.0}, "h100-80gb", **kw)
    assert capped.model.final_logit_softcapping == 30.0 and "final_logit_softcapping" not in plain.model
    # one more logits-sized tensor: 2048 tokens x 32000 x 2 bytes
    assert capped.stages[0].stack.loss_bytes - plain.stages[0].stack.loss_bytes == 2048 * 32000 * 2
    with pytest.raises(memest.MemestError) as info:
        memest.pretrain({**TINY, "final_logit_softcapping": -1}, "h100-80gb", **kw)
    assert info.value.field == "model.final_logit_softcapping"


# ---- the search: max_oom_probability, and every row's probability, margin and band

SEARCH = dict(gpus=8, seq_len=8192, global_batch=64, top=1000)


def test_search_max_oom_probability():
    default = memest.search("llama-3.1-8b", "a100-40gb", **SEARCH)
    strict = memest.search("llama-3.1-8b", "a100-40gb", max_oom_probability=0.01, **SEARCH)
    loose = memest.search("llama-3.1-8b", "a100-40gb", max_oom_probability=0.5, **SEARCH)
    assert default.max_oom_probability == memest.search_max_oom_probability()
    assert strict.max_oom_probability == 0.01 and loose.max_oom_probability == 0.5
    assert 0 < len(strict) < len(default) < len(loose)
    assert strict["pruned"]["oom"] > default["pruned"]["oom"] > loose["pruned"]["oom"]
    sigma = memest.peak_error_sigma()
    capacity = default.to_dict()["gpu"]["memory_bytes"]
    for s in (default, strict, loose):
        for row in s:
            assert 0 <= row.oom_probability <= s.max_oom_probability
            assert row.margin_bytes == capacity - row.peak_bytes
            assert row.peak_high_bytes / row.peak_bytes == pytest.approx(math.exp(Z95 * sigma), rel=1e-12)
            assert row.oom_probability == pytest.approx(
                oom_probability(row.peak_bytes, capacity, sigma), rel=1e-9, abs=5e-13)
    assert max(r.oom_probability for r in loose) > memest.search_max_oom_probability()
    # the same numbers as the JSON route
    j = raw({"mode": "search", "model": "llama-3.1-8b", "gpu": "a100-40gb", "parallel": {"gpus": 8},
             "training": {"seq_len": 8192, "global_batch": 64},
             "search": {"top": 1000, "max_oom_probability": 0.01}})
    assert strict.to_dict() == j
    row = strict.to_rows()[0]
    assert row["oom_probability"] == strict[0].oom_probability and "peak_high_bytes" in row


@pytest.mark.parametrize("bad", [2.0, 0, -0.1])
def test_search_max_oom_probability_refused(bad):
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.search("llama-3.1-8b", "a100-40gb", max_oom_probability=bad, **SEARCH)
    assert info.value.field == "search.max_oom_probability"
    assert "search.max_oom_probability" in str(info.value)
