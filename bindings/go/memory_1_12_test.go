package memest_test

import (
	"testing"

	memest "memest/bindings/go"
)

// ABI 1.12 through the Go binding: PretrainRequest.UseLigerKernel (Liger-Kernel's fused RMSNorm
// and SwiGLU in the Hugging Face blocks) on the hand-derived values of tests/unit/test_liger.cpp,
// typed and as a JSON request.

// Llama-3.1-8B on one H100: seq 2048, micro batch 1, global batch 8, no recomputation, ZeRO 0.
func ligerRequest(t *testing.T, framework int, liger bool) *memest.PretrainRequest {
	t.Helper()
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.TP, r.PP, r.Zero = 1, 1, 1, 0
	r.SeqLen, r.MicroBatch, r.GlobalBatch = 2048, 1, 8
	r.Framework, r.Recompute = framework, memest.RecomputeNone
	r.GradBytes, r.OptimizerBytes = memest.GradBytesDerive, memest.OptimizerBytesDerive
	r.UseLigerKernel = liger
	return r
}

func ligerJSON(framework string, liger bool) map[string]any {
	training := map[string]any{"framework": framework, "seq_len": 2048, "micro_batch": 1,
		"global_batch": 8, "recompute": "none"}
	if liger {
		training["use_liger_kernel"] = true
	}
	return map[string]any{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 1, "tp": 1, "pp": 1, "zero": 0}, "training": training}
}

func TestUseLigerKernel(t *testing.T) {
	if memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb")).UseLigerKernel {
		t.Error("UseLigerKernel defaults to true")
	}
	// pytorch (HF blocks): 32 layers * 61440 B per token less * 2048 tokens = 4026531840 B
	hf := mustPretrain(t, ligerRequest(t, memest.FrameworkPyTorch, false))
	liger := mustPretrain(t, ligerRequest(t, memest.FrameworkPyTorch, true))
	if d := hf.Stages[0].ActivationsBytes - liger.Stages[0].ActivationsBytes; d != 4026531840 {
		t.Errorf("pytorch: %v bytes dropped, want 4026531840", d)
	}
	// fsdp (torchtitan's block): the SiLU output only, 32 * 2 * 14336 * 2048 = 1879048192 B
	fsdp := mustPretrain(t, ligerRequest(t, memest.FrameworkFSDP, false))
	fsdpLiger := mustPretrain(t, ligerRequest(t, memest.FrameworkFSDP, true))
	if d := fsdp.Stages[0].ActivationsBytes - fsdpLiger.Stages[0].ActivationsBytes; d != 1879048192 {
		t.Errorf("fsdp: %v bytes dropped, want 1879048192", d)
	}
	// typed == JSON, and the response echoes the field
	resp := mustRequest(t, ligerJSON("pytorch", true))
	stage := resp["stages"].([]any)[0].(map[string]any)
	if resp["peak_bytes"] != liger.PeakBytes || stage["activations_bytes"] != liger.Stages[0].ActivationsBytes {
		t.Errorf("JSON %v / %v vs typed %v / %v", resp["peak_bytes"], stage["activations_bytes"],
			liger.PeakBytes, liger.Stages[0].ActivationsBytes)
	}
	if echo := resp["training"].(map[string]any)["use_liger_kernel"]; echo != true {
		t.Errorf("training.use_liger_kernel echoed as %v", echo)
	}
	if echo := mustRequest(t, ligerJSON("pytorch", false))["training"].(map[string]any)["use_liger_kernel"]; echo != false {
		t.Errorf("training.use_liger_kernel echoed as %v without it", echo)
	}
	// refused under megatron and for a LayerNorm model
	if _, err := memest.Pretrain(ligerRequest(t, memest.FrameworkMegatron, true)); fieldOf(t, err) != "training.use_liger_kernel" {
		t.Errorf("megatron: %v", err)
	}
	gpt2 := ligerRequest(t, memest.FrameworkPyTorch, true)
	gpt2.Model = mustModel(t, "gpt2")
	if _, err := memest.Pretrain(gpt2); fieldOf(t, err) != "training.use_liger_kernel" {
		t.Errorf("gpt2: %v", err)
	}
}
