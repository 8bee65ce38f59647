// The state side of LoRA and QLoRA (README "LoRA and QLoRA"): a frozen base that keeps only
// its weights (in param_dtype, or NF4 for QLoRA's linears) and trainable adapters that keep
// weights, gradients and optimizer states in the adapter dtype. Both go through the training
// stack's own partitioning (states/stack_states.hpp), so FSDP2 / ZeRO-3 shard the frozen base
// when the request says so.
#pragma once

#include "plan/requests.hpp"
#include "states/stack_states.hpp"

namespace memest {

// NF4 storage of `weights` quantised weights (bitsandbytes functional.py quantize_4bit with
// quant_type "nf4", blocksize 64, as transformers' Bnb4BitHfQuantizer calls it; QLoRA paper
// Sec. 3): two 4-bit codes per uint8 (0.5 byte per weight) and one fp32 absmax per block of 64
// (4/64 byte). compress_statistics (bnb_4bit_use_double_quant) quantises the absmax values
// (less their mean) with quantize_blockwise in blocks of 256: one uint8 per absmax (1/64) and
// one fp32 absmax per 256 of them (4/16384): the paper's 32/64 = 0.5 bits per parameter become
// 8/64 + 32/(64*256) = 0.127 bits. Per-tensor constants (the 16-value NF4 code, the mean, the
// shared 256-value dynamic map) are under 1.1 KiB a tensor and not counted.
struct Nf4Bytes {
  double data = 0;      // the packed 4-bit codes
  double metadata = 0;  // absmax statistics
};
Nf4Bytes nf4_bytes(double weights, bool double_quant);

// Weights of the linears bitsandbytes quantises (transformers integrations/bitsandbytes.py
// replace_with_bnb_linear: every nn.Linear but modules_to_not_convert, which
// get_keys_to_not_convert fills with the output embedding): the blocks' linear weights. Norms,
// biases, the embedding (nn.Embedding is never replaced) and the LM head stay in param_dtype.
double quantised_weights(const memest_model& m);
// The LM head's weight when the adapter quantises it too (adapter.quantize_lm_head: LitGPT's
// `--quantize bnb.nf4-dq` runs Lightning's BitsandbytesPrecision, which replaces every
// nn.Linear outside `ignore_modules`, lm_head included, lightning/fabric/plugins/precision/
// bitsandbytes.py; litgpt/finetune/lora.py passes no ignore_modules); 0 otherwise
// (transformers keeps the output embedding unquantised, see quantised_weights).
double quantised_head_weights(const memest_model& m, const Adapter& a);
// The largest of them: the one weight dequantised to param_dtype at a time (bitsandbytes
// autograd/_functions.py MatMul4Bit: F.dequantize_4bit(B) in forward, and again in backward
// for grad_A; freed after each matmul).
double largest_quantised_weight(const memest_model& m);

struct AdapterStates {
  double base_weights = 0;      // frozen base (NF4 data for the quantised linears)
  double quant_metadata = 0;    // qlora absmax statistics
  double adapter_weights = 0;
  double adapter_gradients = 0;
  double adapter_optimizer = 0;  // states + master, when the framework keeps one
  StackStates total;             // the sums, with master / paged / host as stack_state_bytes
};
// `base_params`: every parameter of the stage (all frozen); `adapter_params`: the adapters'.
// The base keeps weights only (no gradient, no optimizer state: requires_grad False); the
// adapters keep weights, gradients (autograd gives a gradient the parameter's dtype) and
// optimizer states derived for the adapter dtype (plan/stack.hpp derived_optimizer_bytes: fp32
// adapters under AdamW 8 bytes, no master). `in` gives the framework, ZeRO stage, shard group
// and offload settings; its params and precision are replaced. `mixed_base_params` (> 0 under
// fsdp1 with training.fsdp_use_orig_params): the frozen parameters that share FlatParameters
// with the adapters, whose flat gradient spans them too.
AdapterStates adapter_state_bytes(const StackStateInput& in, const Adapter& a,
                                  const memest_model& m, double base_params,
                                  double adapter_params,
                                  double mixed_base_params = 0);

}  // namespace memest
