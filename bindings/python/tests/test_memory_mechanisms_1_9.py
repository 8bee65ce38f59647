"""ABI 1.9 through the Python binding: loss_chunks and the two chunked losses ("chunked_lm_head",
LitGPT; "chunked_linear", torchtitan's ChunkedLossWrapper), fsdp_use_orig_params (fsdp1 + LoRA
with FlatParameters that mix frozen weights and adapters), fp4 (NVFP4 linears under Megatron on
a GPU with gpu.fp4 = 1) and the H100 PCIe preset. The expected bytes are the hand-derived values
of tests/unit/test_memory_mechanisms_1_9.cpp; loss names and presets come from the library. Run
against the installed package (scripts/test.d/20-bindings.sh)."""
import json

import pytest

import memest

# Llama-3.1-8B on one GPU under plain PyTorch, 4096 tokens, full recompute: the loss term at the
# (only, last) stage
ONE_GPU = dict(gpus=1, seq_len=4096, micro_batch=1, framework="pytorch", recompute="full")
# Llama-3.1-8B, fsdp1 + LoRA (q_proj, v_proj, r 8) in bf16 on 8 GPUs at zero 3, no accumulation
FSDP1_LORA = dict(gpus=8, zero=3, seq_len=2048, micro_batch=1, global_batch=8, framework="fsdp1",
                  adapter={"type": "lora", "dtype": "bf16"})
# Llama-3.1-8B under Megatron on 8 x B200, tp = pp = 1, 8192 tokens, full recompute
B200 = dict(gpus=8, tp=1, pp=1, seq_len=8192, micro_batch=1, global_batch=8, recompute="full")


def raw(req):
    return json.loads(memest.request_json(json.dumps(req)))


def field_of(call):
    with pytest.raises(memest.InvalidArgumentError) as info:
        call()
    return info.value.field


def test_the_new_names_come_from_the_library():
    assert {"chunked", "chunked_lm_head", "chunked_linear"} <= set(memest.enums()["loss"])
    assert "h100-pcie-80gb" in [g.id for g in memest.gpus()]
    # the new preset runs a request by its id
    r = memest.pretrain("llama-3.1-8b", "h100-pcie-80gb", **ONE_GPU)
    assert r.to_dict()["gpu"]["profile"]["fp4"] == 0


def test_loss_chunks_of_torchtitans_chunked_linear_loss():
    # 4096 tokens x 128256 = 525336576 logits; 8 chunks: 525336576 x 14 / 8 + the fp32
    # accumulator 4 x 4096 x 4096 = 919339008 + 67108864 = 986447872; 16 chunks: 459669504 +
    # 67108864 = 526778368
    default = memest.pretrain("llama-3.1-8b", "h100-80gb", loss="chunked_linear", **ONE_GPU)
    eight = memest.pretrain("llama-3.1-8b", "h100-80gb", loss="chunked_linear", loss_chunks=8,
                            **ONE_GPU)
    sixteen = memest.pretrain("llama-3.1-8b", "h100-80gb", loss="chunked_linear", loss_chunks=16,
                              **ONE_GPU)
    assert default.training.loss == "chunked_linear"
    assert default.training.loss_chunks == 8 and sixteen.training.loss_chunks == 16
    assert default.stages[-1].stack.loss_bytes == 986447872
    assert eight.stages[-1].stack.loss_bytes == 986447872
    assert sixteen.stages[-1].stack.loss_bytes == 526778368
    # the keyword is the JSON field
    resp = raw({"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
                "parallel": {"gpus": 1},
                "training": {"seq_len": 4096, "micro_batch": 1, "framework": "pytorch",
                             "recompute": "full", "loss": "chunked_linear", "loss_chunks": 16}})
    assert resp["stages"][-1]["stack"]["loss_bytes"] == sixteen.stages[-1].stack.loss_bytes
    assert resp["peak_bytes"] == sixteen.peak_bytes


def test_loss_chunks_of_litgpts_chunked_lm_head_and_refusals():
    # LitGPT's head chunks are 128 tokens of each sequence: 4096 / 128 = 32 in effect
    lit = memest.pretrain("llama-3.1-8b", "h100-80gb", loss="chunked_lm_head", **ONE_GPU)
    assert lit.training.loss == "chunked_lm_head" and lit.training.loss_chunks == 32
    # not a chunked loss: 0 echoed
    plain = memest.pretrain("llama-3.1-8b", "h100-80gb", **ONE_GPU)
    assert plain.training.loss_chunks == 0
    for bad in (dict(loss="chunked_linear", loss_chunks=-1),
                dict(loss="chunked_linear", loss_chunks=4097),  # more chunks than tokens
                dict(loss="unfused", loss_chunks=4)):           # not a chunked loss
        assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", **bad,
                                                **ONE_GPU)) == "training.loss_chunks"
    # LitGPT's loss is not Megatron's
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=1, seq_len=4096,
                                            loss="chunked_lm_head")) == "training.loss"
    # the search takes loss_chunks too
    assert field_of(lambda: memest.search("llama-3.1-8b", "h100-80gb", gpus=1, seq_len=4096,
                                          global_batch=4, framework="pytorch",
                                          loss="unfused", loss_chunks=4)) == "training.loss_chunks"
    s = memest.search("llama-3.1-8b", "h100-80gb", gpus=1, seq_len=4096, global_batch=4,
                      framework="pytorch", loss="chunked_linear", loss_chunks=16, top=1,
                      include_oom=True)
    assert len(s) >= 1


def test_fsdp_use_orig_params_gives_the_frozen_weights_a_gradient():
    # LoRA q_proj, v_proj at r 8: 106496 adapters a layer x 32 = 3407872, bf16 over 8 GPUs:
    # 3407872 x 2 / 8 = 851968 bytes wrapped apart; mixed with the blocks' 6979584000 frozen
    # weights: (6979584000 + 3407872) x 2 / 8 = 1745747968
    apart = memest.pretrain("llama-3.1-8b", "h100-80gb", **FSDP1_LORA)
    mixed = memest.pretrain("llama-3.1-8b", "h100-80gb", fsdp_use_orig_params=True, **FSDP1_LORA)
    assert apart.training.fsdp_use_orig_params is False
    assert mixed.training.fsdp_use_orig_params is True
    assert apart.to_dict()["stages"][0]["adapter"]["adapter_gradients_bytes"] == 851968
    assert mixed.to_dict()["stages"][0]["adapter"]["adapter_gradients_bytes"] == 1745747968
    assert mixed.stages[0].gradients_bytes == 1745747968
    # under no_sync with accumulation (32 / 8 = 4 micro-batches) the flat gradient is unsharded:
    # 6982991872 x 2 = 13965983744
    acc = memest.pretrain("llama-3.1-8b", "h100-80gb", fsdp_use_orig_params=True,
                          **{**FSDP1_LORA, "global_batch": 32})
    assert acc.to_dict()["stages"][0]["adapter"]["adapter_gradients_bytes"] == 13965983744
    # FSDP2 has no FlatParameter; QLoRA's frozen NF4 weights take no gradient
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", fsdp_use_orig_params=True,
                                            **{**FSDP1_LORA, "framework": "fsdp"})
                    ) == "training.fsdp_use_orig_params"
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", fsdp_use_orig_params=True,
                                            **{**FSDP1_LORA, "adapter": {"type": "qlora"}})
                    ) == "training.fsdp_use_orig_params"
    assert field_of(lambda: memest.search("llama-3.1-8b", "h100-80gb", gpus=8, seq_len=2048,
                                          global_batch=8, framework="fsdp",
                                          fsdp_use_orig_params=True)
                    ) == "training.fsdp_use_orig_params"


def test_fp4_nvfp4_linears_on_b200_refused_on_h100():
    fp8 = memest.pretrain("llama-3.1-8b", "b200-180gb", fp8=True, **B200)
    fp4 = memest.pretrain("llama-3.1-8b", "b200-180gb", fp4=True, **B200)
    assert fp4.training.fp4 is True and fp8.training.fp4 is False
    # the linears' 7504658432 parameters in two NVFP4 copies (2 x 0.5625 bytes) instead of fp8's
    # two 1-byte copies: 7504658432 x 0.875 = 6566576128 bytes less
    assert fp8.stages[0].weights_bytes - fp4.stages[0].weights_bytes == 6566576128
    assert fp4.throughput.tokens_per_s > fp8.throughput.tokens_per_s
    # the GPU profile's 1.9 fields: B200 trains in NVFP4 at twice its FP8 peak
    profile = fp4.to_dict()["gpu"]["profile"]
    assert profile["fp4"] == 1 and profile["peak_fp4_tflops"] == 2 * profile["peak_fp8_tflops"]
    # refused by name: a GPU without NVFP4, fp8 with it, a framework other than megatron, a
    # custom profile's fp4 outside {0, 1}
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "h100-80gb", fp4=True, **B200)
                    ) == "training.fp4"
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "b200-180gb", fp4=True, fp8=True,
                                            **B200)) == "training.fp4"
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", "b200-180gb", fp4=True,
                                            framework="fsdp", **B200)) == "training.fp4"
    assert field_of(lambda: memest.pretrain("llama-3.1-8b", {"preset": "b200-180gb", "fp4": 2},
                                            fp4=True, **B200)) == "gpu.fp4"
    assert field_of(lambda: memest.search("llama-3.1-8b", "h100-80gb", gpus=8, seq_len=8192,
                                          global_batch=8, fp4=True)) == "training.fp4"
    # a custom GPU's fp4 and peak_fp4_tflops are read: fp4 1 with an explicit peak trains there
    custom = memest.pretrain("llama-3.1-8b",
                             {"preset": "h100-80gb", "fp4": 1, "peak_fp4_tflops": 3958},
                             fp4=True, **B200)
    assert custom.to_dict()["gpu"]["profile"]["peak_fp4_tflops"] == 3958
    assert custom.training.fp4 is True
