package memest_test

import (
	"testing"

	memest "memest/bindings/go"
)

// ABI 1.10 through the Go binding: LossFlashAttn (flash-attn's cross-entropy, llm-foundry's
// default), fp8 parameters under Megatron (ParamBytes 1) and LoRA under Megatron with tensor
// parallelism. The expected bytes are the hand-derived values of
// tests/unit/test_memory_mechanisms_1_10.cpp and tests/unit/test_megatron_lora.cpp.

// MPT-7B as llm-foundry runs it: 65536 tokens x 50368 = 3300917248 bf16 logits, 4 bytes each
// in backward + 4 per token: 13203931136 bytes.
func TestFlashAttnLoss(t *testing.T) {
	if memest.EnumValue(memest.EnumLoss, "flash_attn") != memest.LossFlashAttn {
		t.Fatalf("flash_attn is %d in the table, LossFlashAttn %d",
			memest.EnumValue(memest.EnumLoss, "flash_attn"), memest.LossFlashAttn)
	}
	resp := mustRequest(t, map[string]any{
		"mode": "pretrain",
		"model": map[string]any{"model_type": "gpt_neox", "hidden_size": 4096, "num_hidden_layers": 32,
			"num_attention_heads": 32, "intermediate_size": 16384, "vocab_size": 50368,
			"max_position_embeddings": 65536, "hidden_act": "gelu", "attention_bias": false,
			"mlp_bias": false, "tie_word_embeddings": true, "use_parallel_residual": false},
		"gpu":      "a100-80gb",
		"parallel": map[string]any{"gpus": 8, "tp": 1, "pp": 1, "zero": 3, "sp": false},
		"training": map[string]any{"framework": "fsdp", "seq_len": 4096, "micro_batch": 16,
			"global_batch": 256, "recompute": "full", "param_dtype": "fp32", "grad_dtype": "fp32",
			"optimizer": "adamw", "loss": "flash_attn"}})
	stage := resp["stages"].([]any)[0].(map[string]any)
	if got := stage["stack"].(map[string]any)["loss_bytes"]; got != 13203931136.0 {
		t.Errorf("flash_attn loss bytes %v, want 13203931136", got)
	}
	// the typed request under Megatron is refused by field
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.SeqLen, r.MicroBatch = 8, 4096, 1
	r.Loss = memest.LossFlashAttn
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.loss" {
		t.Errorf("flash_attn under megatron: %v", err)
	}
}

// Llama-3.1-8B under Megatron with fp8, tp = pp = 1 on 8 GPUs: bf16 parameters 31069839360
// bytes of weights (two fp8 copies), fp8 parameters 16585859072 (one transposed copy, the
// embedding, output layer and norms in bf16).
func TestFP8Parameters(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.TP, r.PP, r.SeqLen, r.MicroBatch, r.GlobalBatch = 8, 1, 1, 4096, 1, 64
	r.FP8 = true
	if got := mustPretrain(t, r).Stages[0].WeightsBytes; got != 31069839360 {
		t.Errorf("bf16 parameters: %v bytes of weights, want 31069839360", got)
	}
	r.ParamBytes = 1
	if got := mustPretrain(t, r).Stages[0].WeightsBytes; got != 16585859072 {
		t.Errorf("fp8 parameters: %v bytes of weights, want 16585859072", got)
	}
}

// LoRA on Llama-3.1-8B under Megatron, tp 2 and dp 4: 22020096 adapter parameters a rank, their
// fp32 main gradients 88080384 bytes; 35651584 adapter parameters in the model.
func TestMegatronLoRA(t *testing.T) {
	resp := mustRequest(t, map[string]any{
		"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 8, "tp": 2, "pp": 1, "zero": 1},
		"training": map[string]any{"framework": "megatron", "seq_len": 4096, "micro_batch": 1,
			"global_batch": 64, "adapter": map[string]any{"type": "lora", "rank": 16, "dtype": "bf16",
				"targets": []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}}}})
	ad := resp["stages"].([]any)[0].(map[string]any)["adapter"].(map[string]any)
	if ad["trainable_parameters"] != 22020096.0 || ad["adapter_gradients_bytes"] != 88080384.0 ||
		resp["trainable_parameters"] != 35651584.0 {
		t.Errorf("megatron lora: %v, model %v", ad, resp["trainable_parameters"])
	}
}
