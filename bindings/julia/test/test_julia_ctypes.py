"""Julia's Memest.jl, exercised through its ctypes twin (memest_jl_twin.py): the same exported
symbols, signatures (read from Memest.jl) and calling sequences. Needs MEMEST_LIBRARY."""
import ctypes
import json
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memest_jl_twin as twin  # noqa: E402

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                      "libmemest", "include", "memest", "memest.h")


@pytest.fixture(scope="module")
def m():
    return twin.Memest()


def test_every_ccall_symbol_is_public_and_typed_as_in_the_header():
    header = open(HEADER, encoding="utf-8").read()
    sigs = twin.ccall_signatures()
    assert {"memest_request_json", "memest_string_free", "memest_last_error",
            "memest_last_error_field", "memest_status_name"} <= set(sigs)
    c_types = {"Cint": {"memest_status", "memest_enum", "memest_verdict"}, "Int32": {"int32_t"},
               "UInt32": {"uint32_t"}, "Cdouble": {"double"}, "Cstring": {"const char *"},
               "Ptr{Cchar}": {"char *"}, "Ref{Ptr{Cchar}}": {"char **"}, "Cvoid": {"void"}}
    for name, (ret, args) in sigs.items():
        decl = re.search(r"MEMEST_API ([\w ]+?\s*\**)\s*" + name + r"\(([^)]*)\)", header)
        assert decl, f"{name} is not declared in memest.h"
        c_ret = decl.group(1).strip()
        assert c_ret in c_types[ret] or c_ret.replace(" *", " *") in c_types[ret], (name, c_ret, ret)
        c_args = [a.strip() for a in decl.group(2).split(",")]
        if c_args == ["void"]:
            c_args = []
        assert len(c_args) == len(args), name
        for c_arg, jl in zip(c_args, args):
            c_type = re.sub(r"\s*\w+$", "", c_arg).replace("*", " *").replace("  ", " ").strip()
            c_type = re.sub(r"\s+\*", " *", c_type).replace("* *", "**")
            assert any(c_type.replace(" ", "") == t.replace(" ", "") for t in c_types[jl]), (name, c_arg, jl)


def test_version(m):
    major, minor, patch = map(int, m.version().split("."))
    assert m.version_number() == major * 10000 + minor * 100 + patch


def test_request_pretrain(m):
    resp = json.loads(m.request(json.dumps({
        "mode": "pretrain", "model": "llama-3.1-8b", "gpu": "a100-40gb",
        "parallel": {"gpus": 8, "tp": 4, "pp": 2}, "training": {"seq_len": 8192}})))
    assert resp["ok"] and resp["verdict"] == "fits"
    assert abs(resp["estimate_gib"] - 27.20) < 0.005


def test_request_error(m):
    with pytest.raises(twin.MemestError) as info:
        m.request('{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "a100-40gb", "parallel": {"tp": 3}}')
    assert info.value.code == "invalid_argument" and info.value.field == "parallel.tp"
    with pytest.raises(twin.MemestError) as info:
        m.request("{oops")
    assert info.value.code == "parse_error" and info.value.status == 4


def test_presets(m):
    models, gpus = m.model_presets(), m.gpu_presets()
    assert "llama-3.1-8b" in models and "a100-40gb" in gpus
    for model in models[:3]:
        resp = json.loads(m.request(json.dumps({"mode": "model_states", "model": model})))
        assert resp["estimate_bytes"] > 0


def test_string_free_accepts_null(m):
    m.f["memest_string_free"](None)


def test_enum_kinds_are_the_header_values():
    """Memest.jl's ENUM_KINDS (written in Julia) against memest.h's memest_enum and the keys of
    the JSON "enums" mode: fails when either changes."""
    header = open(HEADER, encoding="utf-8").read()
    values = {name.lower(): int(v) for name, v in
              re.findall(r"MEMEST_ENUM_(\w+) = (\d+)", header) if name != "COUNT"}
    count = int(re.search(r"MEMEST_ENUM_COUNT = (\d+)", header).group(1))
    kinds = twin.enum_kinds()
    assert kinds == values and len(kinds) == count


def test_enums_are_the_library_tables(m):
    resp = json.loads(m.request('{"mode": "enums"}'))
    assert m.enums() == resp["enums"]
    assert m.verdict_bands() == resp["verdict_bands"]
    for key, which in m.kinds.items():
        for v, name in enumerate(m.enum_names(which)):
            assert m.enum_value(which, name) == v, (key, name)
    assert m.enum_value(m.kinds["recompute"], "sometimes") == -1


def test_nul_in_request_is_a_parse_error(m):
    good = '{"mode": "model_states", "model": "llama-2-7b"}'
    assert json.loads(m.request(good))["ok"]
    with pytest.raises(twin.MemestError) as info:
        m.request(good + "\0 lost")
    assert info.value.code == "parse_error" and info.value.field == ""
    assert info.value.status == m.enum_value(m.kinds["status"], "parse_error")


def test_strict_json(m):
    with pytest.raises(twin.MemestError) as info:
        m.request('{"mode": "pretrain", "model": "gpt2", "gpu": "a100-40gb", "training": {"recompute": null}}')
    assert info.value.code == "wrong_type" and info.value.field == "training.recompute"
    with pytest.raises(twin.MemestError) as info:
        m.request('{"mode": "model_states", "model": "gpt2", "model": "gpt2"}')
    assert info.value.code == "parse_error"


def test_1_6_enum_values_by_the_library(m):
    frameworks = m.enum_names(m.kinds["framework"])
    optimizers = m.enum_names(m.kinds["optimizer"])
    assert frameworks[4] == "fsdp1" and m.enum_value(m.kinds["framework"], "fsdp1") == 4
    assert optimizers[6:] == ["adamw_foreach", "paged_adamw_32bit"]
    resp = json.loads(m.request('{"mode": "enums"}'))
    assert 0 < resp["peak_error_sigma"] < 1 and 0 < resp["search_max_oom_probability"] <= 1


def _erfc_probability(peak, capacity, sigma):
    import math
    return 0.5 * math.erfc(math.log(capacity / peak) / (sigma * math.sqrt(2)))


def test_1_6_request_fields_and_results(m):
    """The 1.6 request fields reach the library through Memest.request, and the 1.6 results
    come back: fsdp1 with accumulation (no_sync by default), the peak's band, P(OOM), margin."""
    def pretrain(**training):
        return json.loads(m.request(json.dumps({
            "mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
            "parallel": {"gpus": 8, "zero": 3},
            "training": {"seq_len": 4096, "micro_batch": 1, "global_batch": 32, **training}})))
    fsdp1, synced = pretrain(framework="fsdp1"), pretrain(framework="fsdp1", no_sync=False)
    fsdp2 = pretrain(framework="fsdp")
    sigma = json.loads(m.request('{"mode": "enums"}'))["peak_error_sigma"]
    p = fsdp1["oom_probability"]
    assert 0 < p < 1 and abs(p - _erfc_probability(fsdp1["peak_bytes"], fsdp1["capacity_bytes"], sigma)) < 1e-9
    assert fsdp1["margin_bytes"] == fsdp1["capacity_bytes"] - fsdp1["peak_bytes"]
    low, high = fsdp1["peak_band_bytes"]
    assert low < fsdp1["peak_bytes"] < high
    stage = fsdp1["stages"][0]
    assert fsdp1["nvidia_smi_bytes"] == fsdp1["peak_reserved_bytes"] + stage["stack"]["paged_bytes"]
    assert fsdp1["torch_max_memory_reserved_bytes"] == \
        fsdp1["peak_reserved_bytes"] - stage["overheads"]["context_bytes"]
    root = synced["stages"][0]["stack"]["unsharded_root_bytes"]
    assert root > 0 and synced["stages"][0]["weights_bytes"] - fsdp2["stages"][0]["weights_bytes"] == root
    assert fsdp1["stages"][0]["gradients_bytes"] > synced["stages"][0]["gradients_bytes"]
    assert fsdp1["training"]["no_sync"] == "default" and synced["training"]["no_sync"] is False
    fp32 = pretrain(framework="fsdp", grad_dtype="bf16", reduce_dtype="fp32")
    assert fp32["training"]["reduce_dtype"] == "fp32"
    assert fp32["stages"][0]["stack"]["framework_buffer_bytes"] > \
        pretrain(framework="fsdp", grad_dtype="bf16")["stages"][0]["stack"]["framework_buffer_bytes"]


@pytest.mark.parametrize("request_json, field", [
    ('{"mode": "search", "model": "llama-3.1-8b", "gpu": "a100-40gb", "parallel": {"gpus": 8},'
     ' "training": {"seq_len": 8192, "global_batch": 64}, "search": {"max_oom_probability": 2.0}}',
     "search.max_oom_probability"),
    ('{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb", "parallel": {"gpus": 8},'
     ' "training": {"reduce_dtype": "fp32"}}', "training.reduce_dtype"),
    ('{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb", "parallel": {"gpus": 8, "tp": 2},'
     ' "training": {"loss_parallel": false}}', "training.loss_parallel"),
    ('{"mode": "pretrain", "model": "gemma-3-1b", "gpu": "h100-80gb", "parallel": {"gpus": 1},'
     ' "training": {"framework": "pytorch", "adapter": {"type": "qlora", "quantize_lm_head": true}}}',
     "training.adapter.quantize_lm_head"),
])
def test_1_6_bad_input_names_the_field(m, request_json, field):
    with pytest.raises(twin.MemestError) as info:
        m.request(request_json)
    assert info.value.code == "invalid_argument" and info.value.field == field and info.value.message


def test_1_6_search_max_oom_probability(m):
    def search(limit):
        return json.loads(m.request(json.dumps({
            "mode": "search", "model": "llama-3.1-8b", "gpu": "a100-40gb", "parallel": {"gpus": 8},
            "training": {"seq_len": 8192, "global_batch": 64},
            "search": {"top": 1000, "max_oom_probability": limit}})))
    strict, loose = search(0.01), search(0.5)
    assert 0 < len(strict["results"]) < len(loose["results"])
    for resp, limit in ((strict, 0.01), (loose, 0.5)):
        assert resp["max_oom_probability"] == limit
        assert all(0 <= e["oom_probability"] <= limit for e in resp["results"])
        assert all(e["peak_high_bytes"] > e["peak_bytes"] for e in resp["results"])


# The tiny Nemotron-H derived by hand in tests/unit/test_hybrid.cpp, as a config.json text with
# Python's bare Infinity (Nemotron-H's released config writes time_step_limit so): 88472
# parameters, all active; mixers "M-A-", MLPs "-D-D".
TINY_NEMOTRON_H = (
    '{"model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 4, '
    '"hybrid_override_pattern": "M-*-", "num_attention_heads": 4, "num_key_value_heads": 2, '
    '"head_dim": 16, "intermediate_size": 128, "vocab_size": 100, "mamba_num_heads": 8, '
    '"mamba_head_dim": 16, "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4, '
    '"use_bias": false, "use_conv_bias": true, "mlp_bias": false, "attention_bias": false, '
    '"tie_word_embeddings": false, "time_step_limit": [0.0, Infinity]}')


def test_1_8_hybrid_config_through_request(m):
    """A pasted config.json text goes into Memest.request as it is: the library reads the
    hybrid model (and the bare Infinity it does not need); cp 2 over its scans is Megatron's
    all-to-all head split, refused under FSDP."""
    resp = json.loads(m.request(
        '{"mode": "pretrain", "model": ' + TINY_NEMOTRON_H + ', "gpu": "h100-80gb", '
        '"parallel": {"gpus": 1}, "training": {"seq_len": 256, "global_batch": 4}}'))
    assert resp["ok"] and resp["model"]["num_parameters"] == 88472
    assert resp["model"]["active_parameters"] == 88472
    assert (resp["model"]["mixer_pattern"], resp["model"]["mlp_pattern"]) == ("M-A-", "-D-D")
    split = json.loads(m.request(
        '{"mode": "pretrain", "model": ' + TINY_NEMOTRON_H + ', "gpu": "h100-80gb", '
        '"parallel": {"gpus": 2, "cp": 2}, "training": {"seq_len": 256, "global_batch": 4}}'))
    assert split["ok"] and split["throughput"]["step"]["cp_comm"] > 0
    with pytest.raises(twin.MemestError) as info:
        m.request('{"mode": "pretrain", "model": ' + TINY_NEMOTRON_H + ', "gpu": "h100-80gb", '
                  '"parallel": {"gpus": 2, "cp": 2}, "training": {"framework": "fsdp", '
                  '"seq_len": 256, "global_batch": 4}}')
    assert info.value.code == "unsupported" and info.value.field == "parallel.cp"


def test_1_14_lora_on_the_mixers_through_request(m):
    """in_proj and out_proj are library target names (10 and 11); on the Mamba-2 mixer at rank
    8 they hold 3136 + 1536 = 4672 adapter parameters (tests/unit/test_hybrid.cpp)."""
    names = m.enum_names(m.kinds["lora_target"])
    assert names[10:12] == ["in_proj", "out_proj"]
    resp = json.loads(m.request(
        '{"mode": "pretrain", "model": ' + TINY_NEMOTRON_H + ', "gpu": "h100-80gb", '
        '"parallel": {"gpus": 1}, "training": {"framework": "pytorch", "seq_len": 256, '
        '"global_batch": 4, "adapter": {"type": "lora", "rank": 8, '
        '"targets": ["in_proj", "out_proj"]}}}'))
    assert resp["trainable_parameters"] == 4672



def test_1_9_request_fields_through_request(m):
    """The 1.9 fields pass through Memest.request as the library spells them, on the hand-derived
    values of tests/unit/test_memory_mechanisms_1_9.cpp; the new loss names and preset come from
    the library."""
    assert {"chunked_lm_head", "chunked_linear"} <= set(m.enum_names(m.kinds["loss"]))
    assert "h100-pcie-80gb" in m.gpu_presets()

    def pretrain(gpu, parallel, **training):
        return json.loads(m.request(json.dumps({
            "mode": "pretrain", "model": "llama-3.1-8b", "gpu": gpu, "parallel": parallel,
            "training": training})))
    one = dict(seq_len=4096, micro_batch=1, framework="pytorch", recompute="full",
               loss="chunked_linear")
    titan16 = pretrain("h100-80gb", {"gpus": 1}, loss_chunks=16, **one)
    assert titan16["training"]["loss_chunks"] == 16
    assert titan16["stages"][0]["stack"]["loss_bytes"] == 526778368
    lora = dict(seq_len=2048, micro_batch=1, global_batch=8, framework="fsdp1",
                adapter={"type": "lora", "dtype": "bf16"})
    mixed = pretrain("h100-80gb", {"gpus": 8, "zero": 3}, fsdp_use_orig_params=True, **lora)
    assert mixed["training"]["fsdp_use_orig_params"] is True
    assert mixed["stages"][0]["adapter"]["adapter_gradients_bytes"] == 1745747968
    nvfp4 = dict(seq_len=8192, micro_batch=1, global_batch=8, recompute="full", fp4=True)
    b200 = pretrain("b200-180gb", {"gpus": 8, "tp": 1, "pp": 1}, **nvfp4)
    assert b200["training"]["fp4"] is True and b200["gpu"]["profile"]["fp4"] == 1
    with pytest.raises(twin.MemestError) as info:
        pretrain("h100-80gb", {"gpus": 8, "tp": 1, "pp": 1}, **nvfp4)
    assert info.value.code == "invalid_argument" and info.value.field == "training.fp4"


MPT_7B = {"model_type": "gpt_neox", "hidden_size": 4096, "num_hidden_layers": 32,
          "num_attention_heads": 32, "intermediate_size": 16384, "vocab_size": 50368,
          "max_position_embeddings": 65536, "hidden_act": "gelu", "attention_bias": False,
          "mlp_bias": False, "tie_word_embeddings": True, "use_parallel_residual": False}


def test_1_10_flash_attn_loss_through_request(m):
    """flash-attn's CrossEntropyLoss (1.10): its name is the library's (MEMEST_LOSS_FLASH_ATTN =
    8), and llm-foundry's MPT-7B run keeps 4 bytes per bf16 logit (the hand value of
    tests/unit/test_memory_mechanisms_1_10.cpp): 65536 x 50368 logits x 4 + 4 x 65536 =
    13203931136 bytes; refused under Megatron, naming training.loss."""
    names = m.enum_names(m.kinds["loss"])
    assert names[8] == "flash_attn" and m.enum_value(m.kinds["loss"], "flash_attn") == 8
    assert "flash_attn" in m.enums()["loss"]
    request = {"mode": "pretrain", "model": MPT_7B, "gpu": "a100-80gb",
               "parallel": {"gpus": 8, "tp": 1, "pp": 1, "zero": 3, "sp": False},
               "training": {"framework": "fsdp", "seq_len": 4096, "micro_batch": 16,
                            "global_batch": 256, "recompute": "full", "param_dtype": "fp32",
                            "grad_dtype": "fp32", "optimizer": "adamw", "loss": "flash_attn"}}
    resp = json.loads(m.request(json.dumps(request)))
    assert resp["training"]["loss"] == "flash_attn"
    assert resp["stages"][0]["stack"]["loss_bytes"] == 13203931136
    request["training"].update(framework="megatron", param_dtype="bf16")
    request["parallel"]["zero"] = 1
    with pytest.raises(twin.MemestError) as info:
        m.request(json.dumps(request))
    assert info.value.code == "invalid_argument" and info.value.field == "training.loss"

SMALL_QWEN3_MOE = {"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 4,
                   "num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 16,
                   "intermediate_size": 256, "moe_intermediate_size": 32, "num_experts": 8,
                   "num_experts_per_tok": 2, "vocab_size": 100, "max_position_embeddings": 64,
                   "decoder_sparse_step": 1, "mlp_only_layers": [], "tie_word_embeddings": False}


def test_1_11_recompute_modules_and_finetune_peak_verdict_through_request(m):
    """Megatron-Core's recompute modules (1.11) pass through Memest.request as the library
    spells them, its names from the library's table (ENUM_KINDS.recompute_module = 17), on the
    hand-derived values of tests/unit/test_recompute_modules.cpp: a small qwen3_moe at s 16, tp 2
    with SP drops 4 x 9600 bytes of activations with ["moe"], 4 x (9600 + 1024) with
    ["layernorm", "moe"]; an unknown name is refused by its index. The fine-tuning response
    carries peak_verdict: 98.8 % of capacity is "tight", LLMem's own verdict "fits"."""
    names = m.enum_names(m.kinds["recompute_module"])
    assert names == m.enums()["recompute_module"] and names[5] == "moe"
    assert m.enum_value(m.kinds["recompute_module"], "layernorm") == 2

    def stage_activations(modules):
        training = {"framework": "megatron", "seq_len": 16, "micro_batch": 1, "global_batch": 4,
                    "recompute": "selective"}
        if modules is not None:
            training["recompute_modules"] = modules
        resp = json.loads(m.request(json.dumps({
            "mode": "pretrain", "model": SMALL_QWEN3_MOE, "gpu": "h100-80gb",
            "parallel": {"gpus": 2, "tp": 2, "pp": 1, "zero": 1, "sp": True}, "training": training})))
        assert resp["training"]["recompute_modules"] == (modules or ["core_attn"])
        return resp["stages"][0]["activations_bytes"]
    plain = stage_activations(None)
    assert plain - stage_activations(["moe"]) == 4 * 9600
    assert plain - stage_activations(["layernorm", "moe"]) == 4 * (9600 + 1024)
    with pytest.raises(twin.MemestError) as info:
        stage_activations(["moe", "attn"])
    assert info.value.code == "invalid_argument" and info.value.field == "training.recompute_modules[1]"
    ft = json.loads(m.request(json.dumps({
        "mode": "finetune", "model": "llama-3.1-8b", "gpu": "a100-80gb", "parallel": {"gpus": 8},
        "training": {"seq_len": 2048}, "finetune": {"method": "auto"}})))
    assert (ft["verdict"], ft["peak_verdict"]) == ("fits", "tight")


def test_1_12_use_liger_kernel_through_request(m):
    """Liger-Kernel (1.12) passes through Memest.request as training.use_liger_kernel, on the
    hand-derived values of tests/unit/test_liger.cpp: Llama-3.1-8B on one H100, seq 2048, no
    recomputation, saves 32 * 61440 * 2048 = 4026531840 bytes less under pytorch and
    32 * 2 * 14336 * 2048 = 1879048192 under fsdp; refused by field under megatron."""
    def stage_activations(framework, liger):
        training = {"framework": framework, "seq_len": 2048, "micro_batch": 1, "global_batch": 8,
                    "recompute": "none"}
        if liger is not None:
            training["use_liger_kernel"] = liger
        resp = json.loads(m.request(json.dumps({
            "mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
            "parallel": {"gpus": 1, "tp": 1, "pp": 1, "zero": 0}, "training": training})))
        assert resp["training"]["use_liger_kernel"] is bool(liger)
        return resp["stages"][0]["activations_bytes"]
    assert stage_activations("pytorch", None) - stage_activations("pytorch", True) == 4026531840
    assert stage_activations("fsdp", False) - stage_activations("fsdp", True) == 1879048192
    with pytest.raises(twin.MemestError) as info:
        stage_activations("megatron", True)
    assert info.value.code == "invalid_argument" and info.value.field == "training.use_liger_kernel"


def test_1_15_optimizer_storage_through_request(m):
    """How the optimizer stores what it updates (1.15) passes through Memest.request as
    training.master_weights and training.optimizer_state_dtype, its names from the library's
    table (ENUM_KINDS.master_weights = 18), on the hand-derived values of
    tests/unit/test_optimizer_storage.cpp: Llama-3.1-8B (8,030,261,248 parameters) on 8 H100s,
    megatron, zero 1 sharding K over 8, so stage 0's optimizer bytes are K * 1003782656:
    12045391872 by default (K 12), 10037826560 with remainders (K 10, a 2007565312-byte
    master), 4015130624 without a master and bf16 moments (K 4); refused by field under fsdp."""
    names = m.enum_names(m.kinds["master_weights"])
    assert names == ["auto", "fp32", "bf16", "fp16", "remainder", "none"]
    assert m.enum_value(m.kinds["master_weights"], "remainder") == 4

    def stage(framework="megatron", **extra):
        training = {"framework": framework, "seq_len": 2048, "micro_batch": 1, "global_batch": 8,
                    "recompute": "none", **extra}
        resp = json.loads(m.request(json.dumps({
            "mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
            "parallel": {"gpus": 8, "tp": 1, "pp": 1, "zero": 1}, "training": training})))
        s = resp["stages"][0]
        return (s["optimizer_bytes"], s["stack"]["master_weights_bytes"],
                resp["training"]["master_weights"], resp["training"]["optimizer_state_dtype"])
    assert stage() == (12045391872, 4015130624, "fp32", "fp32")
    assert stage(master_weights="remainder") == (10037826560, 2007565312, "remainder", "fp32")
    assert stage(master_weights="none", optimizer_state_dtype="bf16") == \
        (4015130624, 0, "none", "bf16")
    with pytest.raises(twin.MemestError) as info:
        stage("fsdp", master_weights="fp32")
    assert info.value.code == "invalid_argument" and info.value.field == "training.master_weights"
    with pytest.raises(twin.MemestError) as info:
        stage(optimizer_state_dtype="bf16", optimizer="sgd")
    assert info.value.code == "invalid_argument" and \
        info.value.field == "training.optimizer_state_dtype"


def test_1_16_adapter_dtype_derived_through_request(m):
    """An adapter without a dtype (1.16) takes the stack's: the model's bf16 under megatron,
    peft's fp32 elsewhere, on the hand-derived values of tests/unit/test_megatron_lora.cpp:
    Llama-3.1-8B at r 16 on the seven block linears, tp 2 on Megatron's fused linears: 32 x 688128
    adapter parameters a rank, 44040192 bytes in bf16; one GPU under pytorch, 32 x 1310720 in fp32:
    167772160 bytes. fp32 spelled out under megatron is refused by field."""
    def lora(framework, parallel, **adapter):
        resp = json.loads(m.request(json.dumps({
            "mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb", "parallel": parallel,
            "training": {"framework": framework, "seq_len": 4096, "micro_batch": 1,
                         "global_batch": 64,
                         "adapter": {"type": "lora", "rank": 16, "targets": [
                             "q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj",
                             "down_proj"], **adapter}}})))
        return (resp["training"]["adapter"]["dtype"],
                resp["stages"][0]["adapter"]["adapter_weights_bytes"])
    tp2 = {"gpus": 8, "tp": 2, "pp": 1, "zero": 1}
    assert lora("megatron", tp2) == ("bf16", 44040192)
    assert lora("pytorch", {"gpus": 1}) == ("fp32", 167772160)
    with pytest.raises(twin.MemestError) as info:
        lora("megatron", tp2, dtype="fp32")
    assert info.value.code == "invalid_argument" and info.value.field == "training.adapter.dtype"


# ---- launch files: Memest.import_launch and Memest.emit_launch --------------------------------

LAUNCH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "tests", "data", "launch")
TITAN = os.path.join(LAUNCH, "torchtitan", "llama3-8b-64xa100-op-sac", "llama3_8b.toml")
QLORA = os.path.join(LAUNCH, "axolotl", "gemma2-9b-qlora", "qlora.yml")


def _julia_keywords(function):
    """The keyword arguments of a Julia function of Memest.jl, with their defaults."""
    text = open(twin.JL, encoding="utf-8").read()
    sig = re.search(r"function " + function + r"\(([^)]*)\)", text)
    assert sig, f"Memest.jl defines no {function}"
    _, _, kw = sig.group(1).partition(";")
    return {k.strip(): v.strip() for k, _, v in (p.partition("=") for p in kw.split(","))}


def test_import_launch_keywords_are_memest_jl_s():
    import inspect
    jl = _julia_keywords("import_launch")
    py = inspect.signature(twin.Memest.import_launch).parameters
    assert set(jl) == {n for n, p in py.items() if p.kind == p.KEYWORD_ONLY}
    for name, default in jl.items():
        assert json.loads(default.replace("nothing", "null")) == py[name].default, name
    text = open(twin.JL, encoding="utf-8").read()
    assert re.search(r"export [^\n]*\n\s+import_launch, emit_launch", text)
    assert "emit_launch(request_json::AbstractString, format::AbstractString)" in text


def test_json_string_escapes(m):
    s = 'a "quoted" \\ back\x00slash\ttab\n\u00e9'
    assert json.loads(m.json_string(s)) == s
    assert m.json_string("\x1f") == '"\\u001f"'


def test_import_launch_torchtitan(m):
    r = json.loads(m.import_launch(TITAN, gpu="a100-80gb", gpus=64))
    assert r["format"] == "torchtitan" and r["files"] == [{"name": TITAN, "format": "torchtitan"}]
    p, t = r["request"]["parallel"], r["request"]["training"]
    assert (p["tp"], p["pp"], p["gpus"]) == (1, 1, 64)
    assert (t["micro_batch"], t["seq_len"], t["recompute"], t["framework"]) == (1, 8192, "op_selective", "fsdp")
    o = r["origins"]["training.seq_len"]
    assert (o["from"], o["file"], o["line"]) == ("file", TITAN, 33)
    assert "estimate" not in r
    est = json.loads(m.import_launch([TITAN], gpu="a100-80gb", gpus=64, seq_len=4096,
                                     set_json='{"parallel": {"tp": 2}}', estimate=True))
    assert est["estimate"]["layout"]["tp"] == 2 and est["request"]["training"]["seq_len"] == 4096
    assert est["estimate"] == json.loads(m.request(json.dumps(est["request"])))


def test_import_launch_axolotl_qlora(m):
    r = json.loads(m.import_launch([QLORA], gpu="l4-24gb", gpus=1))
    assert r["format"] == "axolotl" and r["request"]["training"]["adapter"]["type"] == "qlora"


def test_import_launch_errors(m, tmp_path):
    with pytest.raises(twin.MemestError) as info:
        m.import_launch(TITAN, gpus=64)
    assert info.value.field == "gpu" and info.value.code == "missing_field"
    nul, blob = tmp_path / "weights.toml", tmp_path / "model.bin"
    nul.write_bytes(b"[job]\x00\x00\x01")
    blob.write_bytes(b"\xff\xfe\x00\x01\x80")
    for files in ([str(nul)], [str(blob), TITAN]):
        with pytest.raises(twin.MemestError) as info:
            m.import_launch(files, gpu="a100-80gb", gpus=8)
        assert info.value.field == "files[0]" and info.value.code == "parse_error"
        assert "binary" in info.value.message
    with pytest.raises(twin.MemestError) as info:
        m.import_launch([TITAN, str(tmp_path / "missing.toml")], gpu="a100-80gb")
    assert info.value.field == "files[1]" and info.value.code == "invalid_argument"


def test_emit_launch_megatron(m):
    req = json.dumps({"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
                      "parallel": {"gpus": 8, "tp": 2}, "training": {"seq_len": 4096, "global_batch": 64}})
    e = json.loads(m.emit_launch(req, "megatron"))
    assert {"key": "--tensor-model-parallel-size", "value": 2} in e["settings"]
    with pytest.raises(twin.MemestError) as info:
        m.emit_launch(req, "fairseq")
    assert info.value.field == "format"
