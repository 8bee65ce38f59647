#!/usr/bin/env python3
"""Writes the seed corpus of the typed-API fuzz target (tests/fuzz/corpus_typed/) in the
encoding fuzz_typed.cpp reads: mode, model preset index, GPU preset index, then
(field, value) pairs. Run from anywhere: python3 tests/fuzz/make_typed_seeds.py
The indices follow the order of libmemest/data/models.json and gpus.json."""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
OUT = os.path.join(HERE, "corpus_typed")

MODELS = [m["id"] for m in json.load(open(os.path.join(ROOT, "libmemest/data/models.json")))["models"]]
GPUS = [g["id"] for g in json.load(open(os.path.join(ROOT, "libmemest/data/gpus.json")))["gpus"]]

# Modes (fuzz_typed.cpp, run_typed)
MODEL_STATES, PRETRAIN, SEARCH, SHORTLIST, FINETUNE, SELECT, COUNT, CONFIG, PRESET = 0, 1, 3, 4, 5, 6, 7, 8, 9
# Fields (fuzz_typed.cpp, apply)
F = dict(hidden_size=0, layers=1, heads=2, kv_heads=3, model_flag=10, num_parameters=11,
         model_size=12, memory_bytes=13, gpus_per_node=14, peak=15, profile=16, gpu_size=17,
         gpus=18, tp=19, cp=20, pp=21, vpp=22, sp=23, zero=24, seq_len=25, micro_batch=26,
         global_batch=27, recompute=28, flash=29, activation_model=30, param_bytes=31,
         grad_bytes=32, optimizer_bytes=33, uneven=34, request_size=35, max_tp=36, max_cp=37,
         max_pp=38, max_vpp=39, max_mbs=40, recompute_mask=41, zero_mask=42, tp_within_node=43,
         include_oom=44, search_uneven=45, search_size=46, layout=47, layout_count=48,
         ft_gpus=49, ft_method=50, ft_tp=51, ft_batch=52, ft_seq=53, ft_gc=54, ft_fa=55,
         ft_param_bytes=56, ft_base=57, ft_page=58, ft_chunk=59, ft_size=60, states=61,
         outputs=62, wrong_output_sizes=63,
         # appended fields: the framework, the stack's int32 switches (a byte picks which:
         # 2 = loss), 1.9's loss_chunks, its switches (value, then a byte: odd
         # fsdp_use_orig_params, even fp4) and the GPU's NVFP4 fields (value, then a byte: odd
         # fp4, even peak_fp4_tflops)
         framework=64, stack_flag=65, loss_chunks=83, switches_1_9=84, gpu_fp4=85,
         # 1.11: Megatron's recompute modules (bits of memest_recompute_module)
         recompute_modules=86,
         # 1.12: Liger-Kernel in the Hugging Face blocks (int32 0/1)
         use_liger_kernel=87,
         # 1.15: the optimizer's storage (memest_master_weights; the moments' bytes, a double)
         master_weights=88, optimizer_state_bytes=89)


def i(v):
    """An integer value: 248 then 8 little-endian bytes."""
    return bytes([248]) + struct.pack("<q", v)


def d(v):
    """A double value: 240 then 8 little-endian bytes."""
    return bytes([240]) + struct.pack("<d", v)


def seed(mode, model, gpu, *ops):
    out = bytes([mode, MODELS.index(model), GPUS.index(gpu)])
    for field, *value in ops:
        out += bytes([F[field]]) + b"".join(value)
    return out


GIB = 1024.0 ** 3
SEEDS = {
    # The 4D paper's Table 2 cell: 27.20 GiB
    "pretrain_table2": seed(PRETRAIN, "llama-3.1-8b", "a100-40gb", ("gpus", i(8)), ("tp", i(4)),
                            ("pp", i(2)), ("seq_len", i(8192)), ("global_batch", i(1024))),
    "pretrain_gpt_cp": seed(PRETRAIN, "gpt3-175b", "h100-80gb", ("gpus", i(1024)), ("tp", i(8)),
                            ("cp", i(2)), ("pp", i(8)), ("vpp", i(2)), ("seq_len", i(4096)),
                            ("global_batch", i(512)), ("recompute", i(1))),
    "pretrain_uneven": seed(PRETRAIN, "llama-3.1-405b", "h100-80gb", ("gpus", i(2048)), ("tp", i(8)),
                            ("pp", i(16)), ("uneven", i(1)), ("global_batch", i(2048))),
    "pretrain_bad_tp": seed(PRETRAIN, "llama-3.1-8b", "a100-40gb", ("tp", i(3))),
    "pretrain_nan_bytes": seed(PRETRAIN, "llama-3.1-8b", "a100-40gb", ("param_bytes", d(float("nan")))),
    "pretrain_tiny_capacity": seed(PRETRAIN, "llama-3.1-8b", "a100-40gb", ("memory_bytes", d(1e-307))),
    "pretrain_small_sizes": seed(PRETRAIN, "llama-2-7b", "a100-80gb", ("request_size", bytes([2]))),
    "model_states": seed(MODEL_STATES, "llama-2-70b", "a100-80gb", ("states", bytes([0]), i(64)),
                         ("states", bytes([1]), i(3))),
    "model_states_bare": seed(MODEL_STATES, "gpt2", "v100-16gb", ("hidden_size", i(0)),
                              ("num_parameters", d(7.5e9))),
    "search_space": seed(SEARCH, "llama-3.1-8b", "a100-40gb", ("gpus", i(64)), ("seq_len", i(8192)),
                         ("global_batch", i(1024)), ("max_tp", i(4)), ("max_pp", i(4))),
    "search_huge": seed(SEARCH, "llama-3.1-8b", "a100-40gb", ("gpus", i(1 << 24)),
                        ("global_batch", i(1 << 40)), ("max_tp", i(1)), ("max_pp", i(1)),
                        ("include_oom", i(1))),
    "search_no_peak": seed(SEARCH, "llama-3.1-8b", "a100-40gb", ("peak", d(0.0))),
    "search_shortlist": seed(SHORTLIST, "llama-3.1-8b", "a100-40gb", ("gpus", i(8)),
                             ("layout_count", bytes([2])), ("layout", bytes([0, 0]), i(4)),
                             ("layout", bytes([0, 2]), i(2))),
    "search_shortlist_invalid": seed(SHORTLIST, "llama-3.1-8b", "a100-40gb", ("layout_count", bytes([2])),
                                     ("layout", bytes([1, 0]), i(0))),
    "finetune_zero3": seed(FINETUNE, "opt-2.7b", "v100-16gb", ("ft_method", i(1)), ("ft_batch", i(8))),
    "finetune_dp_tp": seed(FINETUNE, "bloom-3b", "a100-40gb", ("ft_gpus", i(8)), ("ft_method", i(3)),
                           ("ft_tp", i(2))),
    "finetune_tiny_page": seed(FINETUNE, "opt-1.3b", "v100-16gb", ("ft_page", d(1e-310))),
    "finetune_select": seed(SELECT, "opt-1.3b", "v100-16gb", ("ft_gpus", i(4))),
    "finetune_select_options": seed(SELECT, "bloom-3b", "v100-32gb", ("ft_gpus", i(8)),
                                    ("outputs", bytes([2, 4]))),
    "count_custom": seed(COUNT, "llama-2-7b", "a100-40gb", ("hidden_size", i(1024)), ("heads", i(8)),
                         ("kv_heads", i(8)), ("layers", i(4))),
    "count_null_model": seed(COUNT, "llama-2-7b", "a100-40gb", ("outputs", bytes([6]))),
    "config_json": bytes([CONFIG, 0, 0]) + json.dumps(
        {"model_type": "llama", "hidden_size": 2048, "num_hidden_layers": 16,
         "num_attention_heads": 16, "num_key_value_heads": 4, "intermediate_size": 5632,
         "vocab_size": 32000}).encode(),
    "preset_id": bytes([PRESET, 0, 0]) + b"mistral-7b",
    # 1.9: torchtitan's chunked loss (loss 7) at 16 chunks on one GPU under plain PyTorch (3);
    # NVFP4 under Megatron on a B200 with its FP4 peak given
    "pretrain_chunked_linear_16": seed(PRETRAIN, "llama-3.1-8b", "h100-80gb", ("gpus", i(1)),
                                       ("tp", i(1)), ("pp", i(1)), ("seq_len", i(4096)),
                                       ("framework", i(3)), ("stack_flag", bytes([2]), i(7)),
                                       ("loss_chunks", i(16))),
    "pretrain_nvfp4_b200": seed(PRETRAIN, "llama-3.1-8b", "b200-180gb", ("gpus", i(8)), ("tp", i(1)),
                                ("pp", i(1)), ("seq_len", i(8192)), ("global_batch", i(8)),
                                ("recompute", i(2)), ("switches_1_9", i(1), bytes([0])),
                                ("gpu_fp4", d(9000.0), bytes([0]))),
    # 1.11: Qwen3-30B-A3B under Megatron, tp 2 ep 4, selective with layernorm (bit 2) + moe (5)
    "pretrain_recompute_modules": seed(PRETRAIN, "qwen3-30b-a3b", "h100-80gb", ("gpus", i(8)),
                                       ("tp", i(2)), ("pp", i(1)), ("seq_len", i(4096)),
                                       ("global_batch", i(64)), ("recompute", i(1)),
                                       ("recompute_modules", i((1 << 2) | (1 << 5)))),
    # 1.12: Llama-3.1-8B under pytorch (framework 3) with Liger-Kernel, one GPU, seq 2048
    "pretrain_liger_kernel": seed(PRETRAIN, "llama-3.1-8b", "h100-80gb", ("gpus", i(1)), ("tp", i(1)),
                                  ("pp", i(1)), ("zero", i(0)), ("seq_len", i(2048)),
                                  ("global_batch", i(8)), ("recompute", i(0)), ("framework", i(3)),
                                  ("use_liger_kernel", i(1))),
    # 1.15: Llama-3.1-8B under Megatron on 8 GPUs, K derived (optimizer_bytes -1) with the fp32
    # remainders (master_weights 4) and bf16 moments (2 bytes): K 6
    "pretrain_optimizer_storage": seed(PRETRAIN, "llama-3.1-8b", "h100-80gb", ("gpus", i(8)),
                                       ("tp", i(1)), ("pp", i(1)), ("seq_len", i(2048)),
                                       ("global_batch", i(8)), ("optimizer_bytes", d(-1.0)),
                                       ("master_weights", i(4)), ("optimizer_state_bytes", d(2.0))),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in sorted(SEEDS.items()):
        with open(os.path.join(OUT, name + ".bin"), "wb") as f:
            f.write(data)
    print(f"{len(SEEDS)} seeds in {OUT}")


if __name__ == "__main__":
    main()
