package memest_test

import (
	"testing"

	memest "memest/bindings/go"
)

// ABI 1.9 through the Go binding: LossChunks with the two chunked losses, FSDPUseOrigParams,
// FP4 and the GPU's FP4 / PeakFP4TFLOPS, the H100 PCIe preset. The expected bytes are the
// hand-derived values of tests/unit/test_memory_mechanisms_1_9.cpp.

// The new names come from the library: the loss constants are the enum table's values, the
// preset is listed.
func TestNames19(t *testing.T) {
	losses := memest.EnumNames(memest.EnumLoss)
	if memest.EnumValue(memest.EnumLoss, "chunked_lm_head") != memest.LossChunkedLMHead ||
		memest.EnumValue(memest.EnumLoss, "chunked_linear") != memest.LossChunkedLinear ||
		len(losses) <= memest.LossChunkedLinear {
		t.Errorf("losses %v: chunked_lm_head %d, chunked_linear %d", losses, memest.LossChunkedLMHead,
			memest.LossChunkedLinear)
	}
	listed := false
	for _, id := range memest.GPUPresets() {
		listed = listed || id == "h100-pcie-80gb"
	}
	if !listed {
		t.Errorf("GPU presets %v lack h100-pcie-80gb", memest.GPUPresets())
	}
	pcie := mustGPU(t, "h100-pcie-80gb")
	b200 := mustGPU(t, "b200-180gb")
	if pcie.FP4() != 0 || b200.FP4() != 1 || b200.PeakFP4TFLOPS() != 9000 {
		t.Errorf("fp4: h100-pcie %v, b200 %v at %v TFLOP/s", pcie.FP4(), b200.FP4(), b200.PeakFP4TFLOPS())
	}
}

// torchtitan's ChunkedLossWrapper on Llama-3.1-8B, one GPU under plain PyTorch, 4096 tokens,
// full recompute: 525336576 logits x 14 / 8 + the fp32 accumulator 4 x 4096 x 4096 = 986447872
// bytes at the default 8 chunks, 459669504 + 67108864 = 526778368 at 16; the JSON route agrees.
func TestLossChunks(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	if r.LossChunks != 0 || r.FSDPUseOrigParams || r.FP4 {
		t.Fatalf("1.9 defaults: %d %v %v", r.LossChunks, r.FSDPUseOrigParams, r.FP4)
	}
	r.GPUs, r.TP, r.PP, r.SeqLen, r.MicroBatch = 1, 1, 1, 4096, 1
	r.Recompute, r.Framework, r.OptimizerBytes = memest.RecomputeFull, memest.FrameworkPyTorch, memest.OptimizerBytesDerive
	r.GradBytes = memest.GradBytesDerive // as a JSON request without grad_dtype (1.11)
	r.Loss = memest.LossChunkedLinear
	eight := mustPretrain(t, r)
	if eight.Loss != "chunked_linear" || eight.Stages[0].LossBytes != 986447872 {
		t.Errorf("chunked_linear, 8 chunks: loss %q, %v bytes, want 986447872", eight.Loss, eight.Stages[0].LossBytes)
	}
	r.LossChunks = 16
	sixteen := mustPretrain(t, r)
	if sixteen.Stages[0].LossBytes != 526778368 {
		t.Errorf("chunked_linear, 16 chunks: %v bytes, want 526778368", sixteen.Stages[0].LossBytes)
	}
	resp := mustRequest(t, map[string]any{
		"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb", "parallel": map[string]any{"gpus": 1},
		"training": map[string]any{"seq_len": 4096, "micro_batch": 1, "framework": "pytorch",
			"recompute": "full", "loss": "chunked_linear", "loss_chunks": 16}})
	if resp["peak_bytes"] != sixteen.PeakBytes || resp["training"].(map[string]any)["loss_chunks"] != 16.0 {
		t.Errorf("JSON peak %v vs typed %v; training %v", resp["peak_bytes"], sixteen.PeakBytes, resp["training"])
	}
	// LitGPT's chunked LM head runs, and a count for a loss that is not chunked is refused
	r.Loss, r.LossChunks = memest.LossChunkedLMHead, 0
	mustPretrain(t, r)
	r.Loss, r.LossChunks = memest.LossUnfused, 4
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.loss_chunks" {
		t.Errorf("loss_chunks under unfused: %v", err)
	}
	r.Loss, r.LossChunks = memest.LossChunkedLinear, -1
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.loss_chunks" {
		t.Errorf("loss_chunks -1: %v", err)
	}
}

// fsdp1 + LoRA (q_proj, v_proj, r 8, bf16) on Llama-3.1-8B, 8 GPUs at zero 3: the adapters'
// gradient 3407872 x 2 / 8 = 851968 bytes wrapped apart, (6979584000 + 3407872) x 2 / 8 =
// 1745747968 with the blocks' frozen weights in each flat parameter. The adapter is a JSON
// request's (as every adapter field in Go); the typed field is refused by name under FSDP2.
func TestFSDPUseOrigParams(t *testing.T) {
	req := func(mixed bool) map[string]any {
		return map[string]any{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
			"parallel": map[string]any{"gpus": 8, "zero": 3},
			"training": map[string]any{"seq_len": 2048, "micro_batch": 1, "global_batch": 8,
				"framework": "fsdp1", "fsdp_use_orig_params": mixed,
				"adapter": map[string]any{"type": "lora", "dtype": "bf16"}}}
	}
	grads := func(resp map[string]any) float64 {
		return resp["stages"].([]any)[0].(map[string]any)["adapter"].(map[string]any)["adapter_gradients_bytes"].(float64)
	}
	apart, mixed := mustRequest(t, req(false)), mustRequest(t, req(true))
	if grads(apart) != 851968 || grads(mixed) != 1745747968 ||
		mixed["training"].(map[string]any)["fsdp_use_orig_params"] != true {
		t.Errorf("adapter gradients %v apart, %v mixed; training %v", grads(apart), grads(mixed), mixed["training"])
	}
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.Zero, r.SeqLen, r.MicroBatch, r.GlobalBatch = 8, 3, 2048, 1, 8
	r.Framework, r.OptimizerBytes = memest.FrameworkFSDP, memest.OptimizerBytesDerive
	r.GradBytes = memest.GradBytesDerive
	mustPretrain(t, r)
	r.FSDPUseOrigParams = true
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.fsdp_use_orig_params" {
		t.Errorf("fsdp_use_orig_params under FSDP2: %v", err)
	}
}

// NVFP4 on 8 x B200 under Megatron, Llama-3.1-8B, 8192 tokens, full recompute: the linears'
// 7504658432 parameters in two 0.5625-byte copies instead of fp8's two 1-byte copies, 6566576128
// bytes less; faster than fp8; refused on an H100 and with fp8, both naming "training.fp4"; a
// custom GPU with SetFP4(1) trains in NVFP4, SetFP4(2) is refused naming "gpu.fp4".
func TestFP4(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "b200-180gb"))
	r.GPUs, r.TP, r.PP, r.SeqLen, r.MicroBatch, r.GlobalBatch = 8, 1, 1, 8192, 1, 8
	r.Recompute, r.FP8 = memest.RecomputeFull, true
	fp8 := mustPretrain(t, r)
	r.FP8, r.FP4 = false, true
	fp4 := mustPretrain(t, r)
	if d := fp8.Stages[0].WeightsBytes - fp4.Stages[0].WeightsBytes; d != 6566576128 {
		t.Errorf("weights fp8 - fp4 = %v, want 6566576128", d)
	}
	if !(fp4.Throughput.TokensPerS > fp8.Throughput.TokensPerS) {
		t.Errorf("tokens/s fp4 %v, fp8 %v", fp4.Throughput.TokensPerS, fp8.Throughput.TokensPerS)
	}
	r.FP8 = true
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.fp4" {
		t.Errorf("fp4 with fp8: %v", err)
	}
	r.FP8, r.GPU = false, mustGPU(t, "h100-80gb")
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.fp4" {
		t.Errorf("fp4 on an H100: %v", err)
	}
	custom := mustGPU(t, "h100-80gb")
	custom.SetFP4(1)
	custom.SetPeakFP4TFLOPS(3958)
	r.GPU = custom
	mustPretrain(t, r)
	custom.SetFP4(2)
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "gpu.fp4" {
		t.Errorf("gpu fp4 2: %v", err)
	}
}
