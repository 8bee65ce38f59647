package memest_test

import (
	"errors"
	"math"
	"reflect"
	"testing"

	memest "memest/bindings/go"
)

// The throughput model (1.5) through the typed API: the step's parts add up to the step time,
// carry the library's names, equal the JSON entry point's, and comm_overlap moves them.
func TestPretrainStepBreakdown(t *testing.T) {
	names := memest.EnumNames(memest.EnumStepPart)
	if len(names) != memest.StepPartCount || names[memest.StepCompute] != "compute" {
		t.Fatalf("step part names %v", names)
	}
	if memest.EnumNames(memest.EnumOverlap)[memest.OverlapTP] != "tp" {
		t.Fatalf("overlap names %v", memest.EnumNames(memest.EnumOverlap))
	}
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	if r.CommOverlap != memest.OverlapStackDefault {
		t.Fatalf("CommOverlap default %d", r.CommOverlap)
	}
	r.GPUs, r.TP, r.PP, r.SeqLen, r.GlobalBatch = 16, 2, 2, 8192, 256
	res, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	tp := res.Throughput
	if tp.StepSeconds <= 0 || tp.TokensPerS <= 0 || tp.TFLOPSPerGPU <= 0 || tp.MFU <= 0 || tp.MFU >= 1 {
		t.Fatalf("throughput %+v", tp)
	}
	sum := 0.0
	for _, v := range tp.Parts {
		sum += v
	}
	if math.Abs(sum-tp.StepSeconds) > 1e-9*tp.StepSeconds {
		t.Errorf("parts add up to %v, step %v", sum, tp.StepSeconds)
	}
	if tp.Parts[memest.StepCompute] <= 0 {
		t.Errorf("no compute: %+v", tp)
	}
	breakdown := tp.Breakdown()
	if len(breakdown) != memest.StepPartCount || breakdown["compute"] != tp.Parts[memest.StepCompute] {
		t.Errorf("breakdown %v", breakdown)
	}

	// the JSON entry point, with the same overlap given by names
	r.CommOverlap, err = memest.OverlapBits("dp", "tp")
	if err != nil {
		t.Fatal(err)
	}
	both, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := memest.Request(map[string]any{
		"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 16, "tp": 2, "pp": 2},
		"training": map[string]any{"seq_len": 8192, "global_batch": 256, "comm_overlap": []string{"dp", "tp"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	js := resp["throughput"].(map[string]any)
	if js["step_seconds"].(float64) != both.Throughput.StepSeconds || js["mfu"].(float64) != both.Throughput.MFU {
		t.Errorf("typed %+v vs JSON %v", both.Throughput, js)
	}
	step := js["step"].(map[string]any)
	jsonParts := map[string]float64{}
	for k, v := range step {
		jsonParts[k] = v.(float64)
	}
	if !reflect.DeepEqual(jsonParts, both.Throughput.Breakdown()) {
		t.Errorf("typed breakdown %v vs JSON %v", both.Throughput.Breakdown(), jsonParts)
	}
	if echoed := resp["training"].(map[string]any)["comm_overlap"]; !reflect.DeepEqual(echoed, []any{"dp", "tp"}) {
		t.Errorf("comm_overlap echoed %v", echoed)
	}

	r.CommOverlap, _ = memest.OverlapBits()
	none, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	if !(both.Throughput.Parts[memest.StepTPComm] < none.Throughput.Parts[memest.StepTPComm]) {
		t.Errorf("TP overlap does not hide TP comm: %v vs %v", both.Throughput.Parts, none.Throughput.Parts)
	}
	if both.PeakBytes != none.PeakBytes {
		t.Errorf("overlap changed memory: %v vs %v", both.PeakBytes, none.PeakBytes)
	}
	if _, err := memest.OverlapBits("dp", "nvlink"); !errors.Is(err, memest.ErrInvalidArgument) {
		t.Errorf("unknown overlap name: %v", err)
	}

	r.GlobalBatch = 0
	plain, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	if plain.Throughput != (memest.Throughput{}) {
		t.Errorf("no global batch, yet %+v", plain.Throughput)
	}
}

// A search with fp8 options through the JSON entry point: every entry's parts add up to its
// step, ties are within the tie margin, and both fp8 settings are ranked.
func TestSearchFP8OptionsAndTies(t *testing.T) {
	resp, err := memest.Request(map[string]any{
		"mode": "search", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 16},
		"training": map[string]any{"seq_len": 4096, "global_batch": 256},
		"search":   map[string]any{"top": 5000, "fp8": []bool{false, true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	margin := resp["tie_margin"].(float64)
	seen := map[bool]bool{}
	for _, x := range resp["results"].([]any) {
		e := x.(map[string]any)
		th := e["throughput"].(map[string]any)
		sum := 0.0
		for _, v := range th["step"].(map[string]any) {
			sum += v.(float64)
		}
		if step := th["step_seconds"].(float64); math.Abs(sum-step) > 1e-9*step {
			t.Errorf("rank %v: parts %v, step %v", e["rank"], sum, step)
		}
		if e["tie"].(bool) != (e["gap_to_best"].(float64) <= margin) {
			t.Errorf("rank %v: tie %v, gap %v, margin %v", e["rank"], e["tie"], e["gap_to_best"], margin)
		}
		seen[e["fp8"].(bool)] = true
	}
	if !seen[true] || !seen[false] {
		t.Errorf("fp8 settings ranked: %v", seen)
	}
}

// The MoE dispatcher (1.5): the names are the library's, the default is all-to-all, and DeepEP
// lowers the step's all-to-all time (ep_comm) when expert parallelism spans two nodes, through
// the typed request as through the JSON one; the memory is the same.
func TestMoeDispatcherDeepEPLowersEPComm(t *testing.T) {
	names := memest.EnumNames(memest.EnumMoeDispatcher)
	if len(names) != 2 || memest.EnumValue(memest.EnumMoeDispatcher, names[memest.MoeDispatcherDeepEP]) != memest.MoeDispatcherDeepEP {
		t.Fatalf("moe_dispatcher names %v", names)
	}
	r := memest.NewPretrainRequest(mustModel(t, "qwen3-30b-a3b"), mustGPU(t, "h100-80gb"))
	if r.MoeDispatcher != memest.MoeDispatcherAllToAll {
		t.Fatalf("MoeDispatcher default %d", r.MoeDispatcher)
	}
	r.GPUs, r.EP, r.GlobalBatch = 16, 16, 64
	alltoall, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	r.MoeDispatcher = memest.MoeDispatcherDeepEP
	deepep, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	a, d := alltoall.Throughput.Parts[memest.StepEPComm], deepep.Throughput.Parts[memest.StepEPComm]
	if !(d > 0 && d < a) {
		t.Errorf("ep_comm: deepep %v, alltoall %v", d, a)
	}
	if deepep.PeakBytes != alltoall.PeakBytes {
		t.Errorf("the dispatcher changed memory: %v vs %v", deepep.PeakBytes, alltoall.PeakBytes)
	}
	resp, err := memest.Request(map[string]any{
		"mode": "pretrain", "model": "qwen3-30b-a3b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 16, "ep": 16},
		"training": map[string]any{"global_batch": 64, "moe_dispatcher": names[memest.MoeDispatcherDeepEP]},
	})
	if err != nil {
		t.Fatal(err)
	}
	if echoed := resp["training"].(map[string]any)["moe_dispatcher"]; echoed != names[memest.MoeDispatcherDeepEP] {
		t.Errorf("moe_dispatcher echoed %v", echoed)
	}
	js := resp["throughput"].(map[string]any)["step"].(map[string]any)
	if js["ep_comm"].(float64) != d {
		t.Errorf("typed ep_comm %v vs JSON %v", d, js["ep_comm"])
	}
}

// The attention kernels (1.5): the names are the library's, the default is auto (FSDP runs
// FlashAttention-2), and on an H100 FlashAttention-2 makes the step's compute longer than the
// fused kernels, through the typed request as through the JSON one; the memory is the same.
func TestAttentionKernelFlash2AgainstFused(t *testing.T) {
	names := memest.EnumNames(memest.EnumAttentionKernel)
	if len(names) != 4 || names[memest.AttentionAuto] != "auto" || names[memest.AttentionTriton] != "triton" ||
		memest.EnumValue(memest.EnumAttentionKernel, names[memest.AttentionFused]) != memest.AttentionFused {
		t.Fatalf("attention_kernel names %v", names)
	}
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	if r.AttentionKernel != memest.AttentionAuto {
		t.Fatalf("AttentionKernel default %d", r.AttentionKernel)
	}
	r.GPUs, r.SeqLen, r.GlobalBatch, r.Framework = 8, 8192, 8, memest.FrameworkFSDP
	auto, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	r.AttentionKernel = memest.AttentionFlash2
	flash2, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	r.AttentionKernel = memest.AttentionFused
	fused, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	f2, fu := flash2.Throughput.Parts[memest.StepCompute], fused.Throughput.Parts[memest.StepCompute]
	if auto.Throughput.Parts[memest.StepCompute] != f2 {
		t.Errorf("auto under fsdp: compute %v, flash2 %v", auto.Throughput.Parts[memest.StepCompute], f2)
	}
	if !(f2 > fu && fu > 0) {
		t.Errorf("compute: flash2 %v, fused %v", f2, fu)
	}
	if flash2.PeakBytes != fused.PeakBytes {
		t.Errorf("the kernels changed memory: %v vs %v", flash2.PeakBytes, fused.PeakBytes)
	}
	resp, err := memest.Request(map[string]any{
		"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 8},
		"training": map[string]any{"seq_len": 8192, "global_batch": 8, "framework": "fsdp",
			"attention_kernel": names[memest.AttentionFused]},
	})
	if err != nil {
		t.Fatal(err)
	}
	if echoed := resp["training"].(map[string]any)["attention_kernel"]; echoed != "fused" {
		t.Errorf("attention_kernel echoed %v", echoed)
	}
	js := resp["throughput"].(map[string]any)["step"].(map[string]any)
	if js["compute"].(float64) != fu {
		t.Errorf("typed compute %v vs JSON %v", fu, js["compute"])
	}
}

// A Triton FlashAttention kernel (1.17, llm-foundry's MPT) runs at the library's share of
// FlashAttention-2's speed: on an H100 under FSDP it makes the step's compute longer than
// flash2's, typed as through JSON, and leaves the memory alone.
func TestAttentionKernelTriton(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.SeqLen, r.GlobalBatch, r.Framework = 8, 8192, 8, memest.FrameworkFSDP
	r.AttentionKernel = memest.AttentionFlash2
	flash2, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	r.AttentionKernel = memest.AttentionTriton
	triton, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	tr, f2 := triton.Throughput.Parts[memest.StepCompute], flash2.Throughput.Parts[memest.StepCompute]
	if !(tr > f2 && f2 > 0) || triton.PeakBytes != flash2.PeakBytes {
		t.Errorf("compute: triton %v, flash2 %v; peak %v vs %v", tr, f2, triton.PeakBytes, flash2.PeakBytes)
	}
	resp, err := memest.Request(map[string]any{
		"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 8},
		"training": map[string]any{"seq_len": 8192, "global_batch": 8, "framework": "fsdp",
			"attention_kernel": "triton"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if js := resp["throughput"].(map[string]any)["step"].(map[string]any); js["compute"].(float64) != tr {
		t.Errorf("typed compute %v vs JSON %v", tr, js["compute"])
	}
}
