package memest_test

import (
	"testing"

	memest "memest/bindings/go"
)

// ABI 1.16 through the Go binding: an adapter without a dtype takes the stack's, the model's
// param_dtype under Megatron and peft's fp32 elsewhere. Go's typed PretrainRequest has no adapter
// fields, so the requests are JSON (training.adapter without "dtype"). The expected bytes are the
// hand-derived values of tests/unit/test_megatron_lora.cpp.

// megatronLoRA16 is Llama-3.1-8B at r 16 on the seven block linears, 8 x H100 at tp 2.
func megatronLoRA16(adapter map[string]any) map[string]any {
	adapter["type"], adapter["rank"] = "lora", 16
	adapter["targets"] = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
	return map[string]any{
		"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 8, "tp": 2, "pp": 1, "zero": 1},
		"training": map[string]any{"framework": "megatron", "seq_len": 4096, "micro_batch": 1,
			"global_batch": 64, "adapter": adapter}}
}

// adapterOf is a response's training.adapter echo and its first stage's adapter parts.
func adapterOf(resp map[string]any) (echo, stage map[string]any) {
	echo = resp["training"].(map[string]any)["adapter"].(map[string]any)
	stage = resp["stages"].([]any)[0].(map[string]any)["adapter"].(map[string]any)
	return echo, stage
}

// Megatron's fused linears over tp 2: 32 layers x 688128 adapter parameters a rank, bf16 (the
// model's param_dtype) without a dtype: 44040192 bytes; fp32 spelled out is refused by field.
// Under pytorch on one GPU the default stays fp32: 32 x 1310720 x 4 = 167772160 bytes.
func TestAdapterDtypeDerived(t *testing.T) {
	echo, stage := adapterOf(mustRequest(t, megatronLoRA16(map[string]any{})))
	if echo["dtype"] != "bf16" || stage["adapter_weights_bytes"] != 44040192.0 {
		t.Errorf("megatron lora without a dtype: echo %v, stage %v", echo, stage)
	}
	_, err := memest.Request(megatronLoRA16(map[string]any{"dtype": "fp32"}))
	if f := fieldOf(t, err); f != "training.adapter.dtype" {
		t.Errorf("fp32 adapters under megatron: field %q (%v)", f, err)
	}
	req := megatronLoRA16(map[string]any{})
	req["parallel"] = map[string]any{"gpus": 1}
	req["training"].(map[string]any)["framework"] = "pytorch"
	echo, stage = adapterOf(mustRequest(t, req))
	if echo["dtype"] != "fp32" || stage["adapter_weights_bytes"] != 167772160.0 {
		t.Errorf("pytorch lora without a dtype: echo %v, stage %v", echo, stage)
	}
}
