"""ABI 1.8 through the Python binding: hybrid models (Mamba-2 / gated DeltaNet layers beside
attention, read from a Hugging Face config.json). The tiny Nemotron-H below is the one derived
by hand in tests/unit/test_hybrid.cpp: 88472 parameters (all active), mixers "M-A-", MLPs "-D-D".
Its config.json carries Python's bare Infinity, as Nemotron-H's released config does. Run
against the installed package (scripts/test.d/20-bindings.sh)."""
import json

import pytest

import memest

TINY_NEMOTRON_H = (
    '{"model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 4, '
    '"hybrid_override_pattern": "M-*-", "num_attention_heads": 4, "num_key_value_heads": 2, '
    '"head_dim": 16, "intermediate_size": 128, "vocab_size": 100, "mamba_num_heads": 8, '
    '"mamba_head_dim": 16, "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4, '
    '"use_bias": false, "use_conv_bias": true, "mlp_bias": false, "attention_bias": false, '
    '"tie_word_embeddings": false, "time_step_limit": [0.0, Infinity]}')
PARAMETERS = 88472


@pytest.fixture()
def config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(TINY_NEMOTRON_H)
    return memest.load_config(path)


def test_load_config_reads_infinity_and_the_library_counts_88472(config):
    # the Infinity the library does not need comes back as None (a request can carry it)
    assert config["time_step_limit"] == [0.0, None]
    assert config["hybrid_override_pattern"] == "M-*-"
    for described in (memest.describe_config(config), memest.describe_config(TINY_NEMOTRON_H)):
        assert described.num_parameters == PARAMETERS
        assert described.mixer_pattern == "M-A-"
        assert described.mlp_pattern == "-D-D"
        assert (described.mamba_num_heads, described.mamba_head_dim, described.mamba_state_size,
                described.mamba_groups, described.mamba_conv_kernel) == (8, 16, 16, 2, 4)
        assert (described.mamba_proj_bias, described.mamba_conv_bias, described.mamba_norm) == (
            False, True, True)
        assert described.linear_key_heads == 0 and described.attention_output_gate is False


def test_model_states_and_pretrain_with_the_loaded_config(config):
    states = memest.model_states(config, "h100-80gb")
    assert states.model.num_parameters == PARAMETERS
    assert states.model.active_parameters == PARAMETERS
    assert states.model.mixer_pattern == "M-A-" and states.model.mlp_pattern == "-D-D"

    r = memest.pretrain(config, "h100-80gb", gpus=1, seq_len=256, global_batch=4)
    assert r.model.num_parameters == PARAMETERS
    assert r.model.mixer_pattern == "M-A-" and r.model.mlp_pattern == "-D-D"
    assert r.model.mamba_num_heads == 8
    # the same request as JSON text with the file's own Infinity: the library's answer
    raw = json.loads(memest.request_json(
        '{"mode": "pretrain", "model": ' + TINY_NEMOTRON_H + ', "gpu": "h100-80gb", '
        '"parallel": {"gpus": 1}, "training": {"seq_len": 256, "global_batch": 4}}'))
    assert raw["ok"] and raw["peak_bytes"] == r.peak_bytes and raw["stages"] == r.to_dict()["stages"]
    # the response's model object, given back as the model, is the same model
    again = memest.pretrain(r.model.to_dict(), "h100-80gb", gpus=1, seq_len=256, global_batch=4)
    assert again.peak_bytes == r.peak_bytes and again.model.num_parameters == PARAMETERS


def test_context_parallel_over_mamba_is_megatrons_all_to_all(config):
    # Megatron-Core's head split (megatron/core/ssm/mamba_context_parallel.py). "M-*-" has one
    # Mamba-2 and one attention layer; its twin "*-*-" two attention layers, each with the same
    # ring exchange. The Mamba layer's all-to-alls per micro-batch: 2 x (6 x 10 us + 116736 / 2
    # / 450e9 s) on h100-80gb (tests/unit/test_hybrid.cpp); 4 micro-batches (global batch 4, dp 1).
    hybrid = memest.pretrain(config, "h100-80gb", gpus=2, cp=2, seq_len=256, global_batch=4)
    twin = dict(config, hybrid_override_pattern="*-*-")
    attention = memest.pretrain(twin, "h100-80gb", gpus=2, cp=2, seq_len=256, global_batch=4)
    per_layer = 2 * (6 * 10e-6 + 116736 / 2 / 450e9)
    assert hybrid.throughput.step["cp_comm"] == pytest.approx(
        attention.throughput.step["cp_comm"] / 2 + 4 * per_layer, rel=1e-9)


def test_lora_targets_the_attention_and_mlp_layers_it_finds(config):
    # "M-*-" at rank 8: q_proj 1024 + v_proj 768 on its attention layer, up_proj and down_proj
    # 1536 each on its two MLP layers: 7936 (tests/unit/test_hybrid.cpp)
    r = memest.pretrain(config, "h100-80gb", gpus=1, framework="pytorch", seq_len=256,
                        global_batch=4, adapter={"type": "lora", "rank": 8,
                                                 "targets": ["q_proj", "v_proj", "up_proj",
                                                             "down_proj"]})
    assert r.trainable_parameters == 7936


def test_lora_on_the_mixers_under_peft_and_megatron(config):
    # ABI 1.14. The Mamba-2 mixer's in_proj (64 -> 328) and out_proj (128 -> 64) at rank 8:
    # 3136 + 1536 = 4672. Megatron-Bridge's Nemotron-H targets (linear_qkv, linear_proj, fc1,
    # fc2, in_proj, out_proj): 2560 + 2 x 3072 + 4672 = 13376, stage 0 of pp 2 ("M-") 7744
    # (tests/unit/test_hybrid.cpp)
    assert "in_proj" in memest.enums()["lora_target"]
    mixers = {"type": "lora", "rank": 8, "targets": ["in_proj", "out_proj"]}
    r = memest.pretrain(config, "h100-80gb", gpus=1, framework="pytorch", seq_len=256,
                        global_batch=4, adapter=mixers)
    assert r.trainable_parameters == 4672
    bridge = {"type": "lora", "rank": 8, "dtype": "bf16",
              "targets": ["q_proj", "o_proj", "up_proj", "down_proj", "in_proj", "out_proj"]}
    m = memest.pretrain(config, "h100-80gb", gpus=2, pp=2, framework="megatron", seq_len=256,
                        global_batch=4, adapter=bridge)
    assert m.trainable_parameters == 13376
    assert m.stages[0].adapter.trainable_parameters == 7744


def test_hybrid_refusals_name_the_field(config):
    with pytest.raises(memest.UnsupportedError) as info:
        memest.pretrain(config, "h100-80gb", gpus=2, cp=2, seq_len=256, global_batch=4,
                        framework="fsdp")
    assert info.value.field == "parallel.cp" and info.value.code == "unsupported"
    assert "framework fsdp has none" in str(info.value)
    # in_proj / out_proj need a Mamba or gated DeltaNet mixer: a dense model has none
    dense = dict(config, hybrid_override_pattern="*-*-")
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain(dense, "h100-80gb", gpus=1, framework="pytorch",
                        adapter={"type": "lora", "targets": ["in_proj"]})
    assert info.value.field == "training.adapter.targets" and "has none" in str(info.value)
    # LLMem's 1D TP splits heads and MLP columns, not a Mamba scan's heads
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.finetune(config, "h100-80gb", gpus=2, method="tp")
    assert info.value.field == "finetune.method"


def test_finetune_keeps_the_mamba_layers_saved_tensors(config):
    # LLMem cdp, 2 x 256 tokens, no checkpointing: the Mamba-2 layer saves 920 bytes per token
    # (tests/unit/test_hybrid.cpp) where attention keeps 384, so (920 - 384) x 512 = 274432
    # more kept outputs than its all-attention twin
    twin = dict(config, hybrid_override_pattern="*-*-")
    common = dict(gpus=1, seq_len=256, method="cdp", batch=2, gradient_checkpointing=False,
                  flash_attention=True, page_bytes=1)
    hybrid = memest.finetune(config, "h100-80gb", **common)
    dense = memest.finetune(twin, "h100-80gb", **common)
    assert hybrid.parts["m_out"] - dense.parts["m_out"] == 274432


def test_a_needed_value_that_is_not_finite_is_the_library_error(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(TINY_NEMOTRON_H.replace('"hidden_size": 64', '"hidden_size": Infinity'))
    with pytest.raises(memest.MemestError) as info:
        memest.load_config(path)
    assert info.value.field == "model.hidden_size"


def test_presets_carry_empty_patterns():
    llama = {m.id: m for m in memest.models()}["llama-3.1-8b"]
    assert llama.mixer_pattern == "" and llama.mlp_pattern == "" and llama.mamba_num_heads == 0


# ABI 1.13: Mamba-1 ('S') and Kimi Delta Attention ('K') layers. The tiny Jamba is the one derived
# by hand in tests/unit/test_hybrid.cpp: 281960 parameters (Mamba-1 mixer 29588), mixers
# "SASA", MLPs "DEDE", dt_rank "auto" = 4.
TINY_JAMBA = {
    "model_type": "jamba", "hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
    "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 100,
    "attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2,
    "expert_layer_offset": 1, "num_experts": 4, "num_experts_per_tok": 2, "mamba_expand": 2,
    "mamba_d_state": 8, "mamba_d_conv": 4, "mamba_dt_rank": "auto", "mamba_conv_bias": True,
    "mamba_proj_bias": False, "tie_word_embeddings": False}


def test_jamba_mamba1_layers_through_the_binding():
    described = memest.describe_config(TINY_JAMBA)
    assert described.num_parameters == 281960
    assert described.mixer_pattern == "SASA" and described.mlp_pattern == "DEDE"
    assert (described.mamba_num_heads, described.mamba_head_dim, described.mamba_groups,
            described.mamba_dt_rank) == (128, 1, 1, 4)
    r = memest.pretrain(TINY_JAMBA, "h100-80gb", gpus=2, tp=2, seq_len=256, global_batch=2)
    assert r.model.num_parameters == 281960 and r.model.mamba_dt_rank == 4
    # Mamba-1's single B/C group does not hold tp back; cp is refused over a scan
    with pytest.raises(memest.UnsupportedError) as info:
        memest.pretrain(TINY_JAMBA, "h100-80gb", gpus=2, cp=2, seq_len=256, global_batch=2)
    assert info.value.field == "parallel.cp"
    bad = dict(TINY_JAMBA, mamba_dt_rank="half")
    with pytest.raises(memest.MemestError) as info:
        memest.describe_config(bad)
    assert info.value.field == "model.mamba_dt_rank"
