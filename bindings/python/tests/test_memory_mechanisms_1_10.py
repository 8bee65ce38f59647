"""ABI 1.10 through the Python binding: flash-attn's cross-entropy (loss "flash_attn",
llm-foundry's default), fp8 parameters under Megatron (param_dtype "fp8") and LoRA under Megatron
with tensor, pipeline and expert parallelism; 1.16's adapter dtype by default (the stack's). The
expected values are the hand-derived ones of tests/unit/test_memory_mechanisms_1_10.cpp and
tests/unit/test_megatron_lora.cpp. Run against the installed package
(scripts/test.d/20-bindings.sh)."""
import pytest

import memest

MPT_7B = {"model_type": "gpt_neox", "hidden_size": 4096, "num_hidden_layers": 32,
          "num_attention_heads": 32, "intermediate_size": 16384, "vocab_size": 50368,
          "max_position_embeddings": 65536, "hidden_act": "gelu", "attention_bias": False,
          "mlp_bias": False, "tie_word_embeddings": True, "use_parallel_residual": False}
ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


def test_flash_attn_loss_keeps_four_bytes_per_logit():
    assert "flash_attn" in memest.enums()["loss"]
    # 65536 tokens x 50368 = 3300917248 bf16 logits: 4 bytes each + 4 per token (loss, lse)
    r = memest.pretrain(MPT_7B, "a100-80gb", gpus=8, tp=1, pp=1, zero=3, sp=False,
                        framework="fsdp", seq_len=4096, micro_batch=16, global_batch=256,
                        recompute="full", param_dtype="fp32", grad_dtype="fp32",
                        optimizer="adamw", loss="flash_attn")
    assert r.training.loss == "flash_attn"
    assert r.stages[0].stack.loss_bytes == 13203931136
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8, framework="megatron",
                        seq_len=4096, micro_batch=1, loss="flash_attn")
    assert info.value.field == "training.loss"


def test_fp8_parameters_keep_one_transposed_copy():
    common = dict(gpus=8, tp=1, pp=1, zero=1, framework="megatron", seq_len=4096, micro_batch=1,
                  global_batch=64, fp8=True)
    bf16 = memest.pretrain("llama-3.1-8b", "h100-80gb", param_dtype="bf16", **common)
    fp8 = memest.pretrain("llama-3.1-8b", "h100-80gb", param_dtype="fp8", **common)
    assert bf16.stages[0].weights_bytes == 31069839360
    assert fp8.stages[0].weights_bytes == 16585859072


def test_lora_under_megatron_per_rank():
    # tp 2, dp 4: 32 layers x 688128 adapter parameters a rank; bf16 weights, fp32 main
    # gradients, 12 bytes of optimizer state over dp 4
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8, tp=2, pp=1, zero=1,
                        framework="megatron", seq_len=4096, micro_batch=1, global_batch=64,
                        adapter={"type": "lora", "rank": 16, "dtype": "bf16",
                                 "targets": ALL_LINEAR})
    d = r.to_dict()
    ad = d["stages"][0]["adapter"]
    assert ad["trainable_parameters"] == 22020096
    assert ad["adapter_gradients_bytes"] == 88080384
    assert ad["adapter_optimizer_bytes"] == 66060288
    assert d["trainable_parameters"] == 35651584
    # fp32 adapters are refused under Megatron, which builds adapters in params_dtype (1.16:
    # without a dtype the adapter takes the model's, test_adapter_dtype_derived_1_16)
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8, tp=2, framework="megatron",
                        seq_len=4096, micro_batch=1, adapter={"type": "lora", "dtype": "fp32"})
    assert info.value.field == "training.adapter.dtype"


def test_adapter_dtype_derived_1_16():
    # 1.16: an adapter without a dtype takes the stack's (tests/unit/test_megatron_lora.cpp).
    # Under Megatron the model's param_dtype: 32 layers x 688128 adapter parameters a rank over
    # tp 2 on the fused linears, bf16: 44040192 bytes
    common = dict(gpus=8, tp=2, pp=1, zero=1, framework="megatron", seq_len=4096,
                  micro_batch=1, global_batch=64)
    r = memest.pretrain("llama-3.1-8b", "h100-80gb",
                        adapter={"type": "lora", "rank": 16, "targets": ALL_LINEAR}, **common)
    d = r.to_dict()
    assert d["training"]["adapter"]["dtype"] == "bf16"
    assert d["stages"][0]["adapter"]["adapter_weights_bytes"] == 44040192
    # fp32 spelled out is still refused there, by field
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb",
                        adapter={"type": "lora", "rank": 16, "dtype": "fp32",
                                 "targets": ALL_LINEAR}, **common)
    assert info.value.field == "training.adapter.dtype"
    assert info.value.code == "invalid_argument"
    # elsewhere peft's fp32: one GPU under pytorch, unfused, 32 x 1310720 = 41943040 x 4 bytes
    p = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=1, tp=1, framework="pytorch",
                        seq_len=4096, micro_batch=1, global_batch=64,
                        adapter={"type": "lora", "rank": 16, "targets": ALL_LINEAR}).to_dict()
    assert p["training"]["adapter"]["dtype"] == "fp32"
    assert p["stages"][0]["adapter"]["adapter_weights_bytes"] == 167772160
