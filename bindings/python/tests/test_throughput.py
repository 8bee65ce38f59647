"""The throughput model through the Python binding: a pretraining result's and every search
row's step time and its parts (Throughput), training.comm_overlap, and the search's fp8 and
compile options with its ties. Run against the installed package (scripts/test.d/20-bindings.sh).
Every name (the step's parts, the overlap kinds) comes from the library's enums."""
import json
import math

import pytest

import memest

KW = dict(gpus=16, tp=2, pp=2, seq_len=8192, micro_batch=1, global_batch=256)


def test_names_come_from_the_library():
    e = memest.enums()
    raw = json.loads(memest.request_json('{"mode": "enums"}'))["enums"]
    assert e["overlap"] == raw["overlap"]
    assert e["step_part"] == raw["step_part"]
    assert "compute" in e["step_part"] and "dp" in e["overlap"]


def test_pretrain_throughput_and_its_parts_add_up():
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", **KW)
    t = r.throughput
    assert isinstance(t, memest.Throughput)
    assert t.step_seconds > 0 and t.tokens_per_s > 0 and t.tflops_per_gpu > 0
    assert 0 < t.mfu < 1
    # the parts are the library's, in its order, and add up to the step
    assert list(t.step) == memest.enums()["step_part"]
    assert math.isclose(sum(t.step.values()), t.step_seconds, rel_tol=1e-9)
    assert t.step["compute"] > 0
    # each part is an attribute too, and the same number as the response's
    assert t.compute_seconds == r.to_dict()["throughput"]["step"]["compute"]
    assert math.isclose(sum(t.fractions().values()), 1.0, rel_tol=1e-9)
    # tokens per second: the global batch's tokens over the step
    assert math.isclose(t.tokens_per_s, 256 * 8192 / t.step_seconds, rel_tol=1e-9)
    assert "step" in repr(r) and "Step time" in r._repr_html_()


def test_pretrain_rows_carry_the_step():
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", **KW)
    rows = r.to_rows()
    assert rows[0]["step_seconds"] == r.throughput.step_seconds
    for part, seconds in r.throughput.step.items():
        assert rows[-1][f"{part}_seconds"] == seconds


def test_no_global_batch_no_throughput():
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", **{**KW, "global_batch": 0})
    assert r.throughput is None
    assert "step_seconds" not in r.to_rows()[0]


def test_comm_overlap_is_sent_and_echoed():
    none = memest.pretrain("llama-3.1-8b", "h100-80gb", comm_overlap="none", **KW)
    both = memest.pretrain("llama-3.1-8b", "h100-80gb", comm_overlap=["dp", "tp"], **KW)
    tupled = memest.pretrain("llama-3.1-8b", "h100-80gb", comm_overlap=("tp", "dp"), **KW)
    assert none.comm_overlap == []
    assert both.comm_overlap == ["dp", "tp"]
    assert sorted(tupled.comm_overlap) == ["dp", "tp"]
    # hiding the TP collectives shortens the step; the memory is the same
    assert both.throughput.tp_comm_seconds < none.throughput.tp_comm_seconds
    assert both.throughput.step_seconds < none.throughput.step_seconds
    assert both.peak_bytes == none.peak_bytes
    default = memest.pretrain("llama-3.1-8b", "h100-80gb", comm_overlap="default", **KW)
    assert default.comm_overlap == memest.pretrain("llama-3.1-8b", "h100-80gb", **KW).comm_overlap


def test_unknown_overlap_names_the_field():
    with pytest.raises(memest.MemestError) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb", comm_overlap=["dp", "nvlink"], **KW)
    assert info.value.field.startswith("training.comm_overlap")


def test_search_rows_have_the_breakdown_and_ties():
    s = memest.search("llama-3.1-8b", "a100-40gb", gpus=64, seq_len=8192, global_batch=1024, top=5)
    assert s.tie_margin is not None and s.tie_margin > 0
    best = s[0]
    assert best.gap_to_best == 0 and best.tie is True
    for row in s:
        t = row.throughput
        assert math.isclose(sum(t.step.values()), t.step_seconds, rel_tol=1e-9)
        assert t.step_seconds == row.step_seconds
        assert row.tie == (row.gap_to_best <= s.tie_margin)
        assert row.mfu == t.mfu
    row = s.to_rows()[0]
    assert row["compute_seconds"] == best.throughput.step["compute"]
    assert row["mfu"] == best.mfu and row["tie"] is True
    assert "tied with the best" in repr(best)


def test_search_fp8_and_compile_options():
    s = memest.search("llama-3.1-8b", "h100-80gb", gpus=16, seq_len=4096, global_batch=256,
                      top=5000, framework="fsdp", fp8_options=[False, True],
                      compile_options=["none", "model"])
    assert {r.fp8 for r in s} == {False, True}
    # the same layout with fp8 is faster on an H100
    assert s[0].fp8 is True
    assert {r.compile for r in s} <= set(memest.enums()["compile"])
    assert {r.compile for r in s} == {"none", "model"}
    only_base = memest.search("llama-3.1-8b", "h100-80gb", gpus=16, seq_len=4096,
                              global_batch=256, top=5000, framework="fsdp")
    assert {r.fp8 for r in only_base} == {False}
    assert {r.compile for r in only_base} == {"none"}


MOE = dict(gpus=16, ep=16, global_batch=64)  # Qwen3-30B-A3B, ep over two 8-GPU nodes


def test_moe_dispatcher_deepep_lowers_ep_comm():
    names = memest.enums()["moe_dispatcher"]
    assert names == json.loads(memest.request_json('{"mode": "enums"}'))["enums"]["moe_dispatcher"]
    assert "deepep" in names
    default = memest.pretrain("qwen3-30b-a3b", "h100-80gb", **MOE)
    alltoall = memest.pretrain("qwen3-30b-a3b", "h100-80gb", moe_dispatcher="alltoall", **MOE)
    deepep = memest.pretrain("qwen3-30b-a3b", "h100-80gb", moe_dispatcher="deepep", **MOE)
    assert default.moe_dispatcher == names[0] == alltoall.moe_dispatcher
    assert deepep.moe_dispatcher == "deepep"
    assert default.throughput.step == alltoall.throughput.step
    # DeepEP sends a token once per remote node holding its experts: less all-to-all time
    assert 0 < deepep.throughput.step["ep_comm"] < alltoall.throughput.step["ep_comm"]
    assert deepep.throughput.step_seconds < alltoall.throughput.step_seconds
    assert deepep.peak_bytes == alltoall.peak_bytes


def test_moe_dispatcher_on_search_and_unknown_name():
    layouts = [{"tp": 1, "pp": 1, "ep": 16, "micro_batch": 1}]
    rows = {d: memest.search("qwen3-30b-a3b", "h100-80gb", gpus=16, global_batch=64, layouts=layouts,
                             include_oom=True, moe_dispatcher=d)[0]
            for d in memest.enums()["moe_dispatcher"]}
    assert rows["deepep"].throughput.step["ep_comm"] < rows["alltoall"].throughput.step["ep_comm"]
    with pytest.raises(memest.MemestError) as info:
        memest.pretrain("qwen3-30b-a3b", "h100-80gb", moe_dispatcher="nvshmem", **MOE)
    assert info.value.field == "training.moe_dispatcher"


ATTN = dict(gpus=8, seq_len=8192, global_batch=8, framework="fsdp")  # Llama-3.1-8B, one H100 node


def test_attention_kernel_flash2_against_fused():
    names = memest.enums()["attention_kernel"]
    assert names == json.loads(memest.request_json('{"mode": "enums"}'))["enums"]["attention_kernel"]
    assert names[0] == "auto" and {"flash2", "fused"} <= set(names)
    default = memest.pretrain("llama-3.1-8b", "h100-80gb", **ATTN)
    flash2 = memest.pretrain("llama-3.1-8b", "h100-80gb", attention_kernel="flash2", **ATTN)
    fused = memest.pretrain("llama-3.1-8b", "h100-80gb", attention_kernel="fused", **ATTN)
    # auto: the PyTorch stacks run FlashAttention-2, which on Hopper is slower than the fused kernels
    assert default.attention_kernel == "flash2" == flash2.attention_kernel
    assert fused.attention_kernel == "fused"
    assert default.throughput.step == flash2.throughput.step
    assert flash2.throughput.step["compute"] > fused.throughput.step["compute"]
    assert flash2.peak_bytes == fused.peak_bytes
    megatron = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8, seq_len=8192, global_batch=8)
    assert megatron.attention_kernel == "fused"


def test_attention_kernel_on_search_and_unknown_name():
    layouts = [{"tp": 1, "pp": 1, "micro_batch": 1}]
    rows = {k: memest.search("llama-3.1-8b", "h100-80gb", layouts=layouts, include_oom=True,
                             attention_kernel=k, **ATTN)[0]
            for k in ("flash2", "fused")}
    assert rows["flash2"].throughput.step["compute"] > rows["fused"].throughput.step["compute"]
    with pytest.raises(memest.MemestError) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb", attention_kernel="flash3", **ATTN)
    assert info.value.field == "training.attention_kernel"


def test_attention_kernel_triton_at_its_share_of_flash2():
    """1.17: a Triton FlashAttention kernel (llm-foundry's MPT) on an A100: the compute grows by
    the attention's FLOPs at 0.49 x 0.76 of the peak instead of 0.76 (hand-derived as in
    tests/unit/test_throughput.cpp), the memory does not move."""
    kw = dict(framework="fsdp", gpus=8, zero=3, seq_len=8192, micro_batch=1, global_batch=8,
              recompute="full")
    flash2 = memest.pretrain("llama-3.1-8b", "a100-80gb", attention_kernel="flash2", **kw)
    triton = memest.pretrain("llama-3.1-8b", "a100-80gb", attention_kernel="triton", **kw)
    assert triton.attention_kernel == "triton" and "triton" in memest.enums()["attention_kernel"]
    flops = 32 * 3.5 * 2 * 8192.0 * 8192 * 4096
    rate = 312e12 * (8192 / (8192 + 512)) * (128 / 144)
    slower = triton.throughput.step["compute"] - flash2.throughput.step["compute"]
    assert slower == pytest.approx(flops / rate * (1 / (0.49 * 0.76) - 1 / 0.76), rel=1e-6)
    assert triton.peak_bytes == flash2.peak_bytes
