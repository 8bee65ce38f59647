package memest_test

import (
	"errors"
	"fmt"
	"math"
	"testing"

	memest "memest/bindings/go"
)

// z95 is the 90 % band's half-width in standard deviations (memest.h: 1.645).
var z95 = math.Sqrt2 * math.Erfinv(0.9)

// oomProbability is P(peak * exp(sigma * Z) > capacity), Z standard normal.
func oomProbability(peak, capacity, sigma float64) float64 {
	return 0.5 * math.Erfc(math.Log(capacity/peak)/(sigma*math.Sqrt2))
}

func near(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(math.Abs(a), math.Abs(b)) }

// nearProbability: the library rounds P(OOM) to 1e-12 (the same number from glibc's and
// emscripten's erfc), so a small probability is within half of that of the formula's.
func nearProbability(p, want float64) bool { return math.Abs(p-want) <= 5e-13 || near(p, want, 1e-9) }

func mustPretrain(t *testing.T, r *memest.PretrainRequest) *memest.PretrainResult {
	t.Helper()
	res, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func mustRequest(t *testing.T, req map[string]any) map[string]any {
	t.Helper()
	resp, err := memest.Request(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// fieldOf is the field an invalid_argument error names ("" and a test failure for anything else).
func fieldOf(t *testing.T, err error) string {
	t.Helper()
	var e *memest.Error
	if !errors.As(err, &e) || !errors.Is(err, memest.ErrInvalidArgument) || e.Message == "" {
		t.Errorf("want an invalid_argument *memest.Error, got %v", err)
		return ""
	}
	return e.Field
}

// fsdp1Request is Llama-3.1-8B on 8 x H100 under FSDP1 with gradient accumulation (32 / 8 = 4
// micro-batches), K derived as JSON requests derive it.
func fsdp1Request(t *testing.T) *memest.PretrainRequest {
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.Zero, r.SeqLen, r.MicroBatch, r.GlobalBatch = 8, 3, 4096, 1, 32
	r.Framework, r.OptimizerBytes = memest.FrameworkFSDP1, memest.OptimizerBytesDerive
	r.GradBytes = memest.GradBytesDerive // as a JSON request without grad_dtype (1.11)
	return r
}

// What a result states (1.6), typed and through JSON: torch.cuda's and nvidia-smi's figures, the
// peak's 90 % band, the probability of running out of memory and the margin.
func TestOOMProbabilityBandMarginTypedEqualsJSON(t *testing.T) {
	r := fsdp1Request(t)
	if !r.LossParallel || r.Autocast != memest.StackDefault || r.NoSync != memest.StackDefault ||
		r.ReduceBytes != 0 || r.FP8AllGather || r.LogitsHeld {
		t.Fatalf("1.6 defaults %+v", r)
	}
	typed := mustPretrain(t, r)
	resp := mustRequest(t, map[string]any{
		"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 8, "zero": 3},
		"training": map[string]any{"seq_len": 4096, "micro_batch": 1, "global_batch": 32, "framework": "fsdp1"},
	})
	band := resp["peak_band_bytes"].([]any)
	for key, got := range map[string]float64{
		"oom_probability": typed.OOMProbability, "margin_bytes": typed.MarginBytes,
		"torch_max_memory_allocated_bytes": typed.TorchMaxMemoryAllocatedBytes,
		"torch_max_memory_reserved_bytes":  typed.TorchMaxMemoryReservedBytes,
		"nvidia_smi_bytes":                 typed.NvidiaSMIBytes, "peak_bytes": typed.PeakBytes,
	} {
		if resp[key].(float64) != got {
			t.Errorf("%s: typed %v vs JSON %v", key, got, resp[key])
		}
	}
	if band[0].(float64) != typed.PeakLowBytes || band[1].(float64) != typed.PeakHighBytes {
		t.Errorf("band: typed [%v, %v] vs JSON %v", typed.PeakLowBytes, typed.PeakHighBytes, band)
	}
	p := typed.OOMProbability
	if !(p > 0 && p < 1) || !nearProbability(p, oomProbability(typed.PeakBytes, typed.CapacityBytes, memest.PeakErrorSigma)) {
		t.Errorf("oom_probability %v, want %v", p, oomProbability(typed.PeakBytes, typed.CapacityBytes, memest.PeakErrorSigma))
	}
	if typed.MarginBytes != typed.CapacityBytes-typed.PeakBytes || (p < 0.5) != (typed.MarginBytes > 0) {
		t.Errorf("margin %v, capacity %v, peak %v, p %v", typed.MarginBytes, typed.CapacityBytes, typed.PeakBytes, p)
	}
	if !(typed.PeakLowBytes < typed.PeakBytes && typed.PeakBytes < typed.PeakHighBytes) ||
		!near(typed.PeakHighBytes/typed.PeakBytes, math.Exp(z95*memest.PeakErrorSigma), 1e-12) ||
		!near(typed.PeakLowBytes/typed.PeakBytes, math.Exp(-z95*memest.PeakErrorSigma), 1e-12) {
		t.Errorf("band [%v, %v] around %v", typed.PeakLowBytes, typed.PeakHighBytes, typed.PeakBytes)
	}
	// torch.cuda leaves the CUDA context out; nvidia-smi shows reserved + context + paged
	stage := typed.Stages[typed.PeakStage]
	js := resp["stages"].([]any)[typed.PeakStage].(map[string]any)
	context := js["overheads"].(map[string]any)["context_bytes"].(float64)
	if context <= 0 || typed.TorchMaxMemoryReservedBytes != typed.PeakReservedBytes-context ||
		typed.TorchMaxMemoryAllocatedBytes != typed.PeakAllocatedBytes-context ||
		typed.NvidiaSMIBytes != typed.PeakReservedBytes+stage.PagedBytes {
		t.Errorf("torch %v/%v, nvidia-smi %v, reserved %v, allocated %v, context %v", typed.TorchMaxMemoryAllocatedBytes,
			typed.TorchMaxMemoryReservedBytes, typed.NvidiaSMIBytes, typed.PeakReservedBytes, typed.PeakAllocatedBytes, context)
	}
	for key, got := range map[string]float64{
		"torch_max_memory_allocated_bytes": stage.TorchMaxMemoryAllocatedBytes,
		"torch_max_memory_reserved_bytes":  stage.TorchMaxMemoryReservedBytes,
		"nvidia_smi_bytes":                 stage.NvidiaSMIBytes,
		"weights_bytes":                    stage.WeightsBytes,
	} {
		if js[key].(float64) != got {
			t.Errorf("stage %s: typed %v vs JSON %v", key, got, js[key])
		}
	}
	if js["stack"].(map[string]any)["unsharded_root_bytes"].(float64) != stage.UnshardedRootBytes ||
		js["overheads"].(map[string]any)["optimizer_step_bytes"].(float64) != stage.OptimizerStepBytes {
		t.Errorf("stage parts: typed %v/%v vs JSON %v", stage.UnshardedRootBytes, stage.OptimizerStepBytes, js)
	}
	// the error model's constants are the enums mode's
	enums := mustRequest(t, map[string]any{"mode": "enums"})
	if enums["peak_error_sigma"].(float64) != memest.PeakErrorSigma ||
		enums["search_max_oom_probability"].(float64) != memest.SearchMaxOOMProbability ||
		enums["peak_verdict_bands"].(map[string]any)["fits"].(float64) != memest.PeakFitsFraction {
		t.Errorf("constants %v / %v / %v vs %v", memest.PeakErrorSigma, memest.SearchMaxOOMProbability, memest.PeakFitsFraction, enums)
	}
	if f := memest.PeakFitsFraction; !(f <= math.Exp(-z95*memest.PeakErrorSigma) && math.Exp(-z95*memest.PeakErrorSigma) < f+0.01) {
		t.Errorf("fits fraction %v vs sigma %v", f, memest.PeakErrorSigma)
	}
}

// FSDP1 (1.6): the root unit's parameters stay unsharded from forward to backward (the weights
// differ from FSDP2's by exactly that), and by default (no_sync) the unsharded gradients are kept
// across accumulation micro-batches.
func TestFSDP1RootUnitAndNoSync(t *testing.T) {
	names := memest.EnumNames(memest.EnumFramework)
	if names[memest.FrameworkFSDP1] != "fsdp1" {
		t.Fatalf("framework names %v", names)
	}
	r := fsdp1Request(t)
	def := mustPretrain(t, r)
	r.NoSync = 0
	synced := mustPretrain(t, r)
	r.NoSync = 1
	kept := mustPretrain(t, r)
	r.NoSync, r.Framework = 0, memest.FrameworkFSDP
	fsdp2 := mustPretrain(t, r)
	if def.Framework != "fsdp1" || fsdp2.Framework != "fsdp" {
		t.Fatalf("frameworks %s %s", def.Framework, fsdp2.Framework)
	}
	root := synced.Stages[0].UnshardedRootBytes
	if root <= 0 || fsdp2.Stages[0].UnshardedRootBytes != 0 || synced.Stages[0].WeightsBytes-fsdp2.Stages[0].WeightsBytes != root {
		t.Errorf("root %v; weights fsdp1 %v, fsdp %v", root, synced.Stages[0].WeightsBytes, fsdp2.Stages[0].WeightsBytes)
	}
	if def.Stages[0].GradientsBytes != kept.Stages[0].GradientsBytes ||
		!(def.Stages[0].GradientsBytes > synced.Stages[0].GradientsBytes) || !(def.OOMProbability > synced.OOMProbability) {
		t.Errorf("gradients default %v, no_sync %v, synced %v", def.Stages[0].GradientsBytes,
			kept.Stages[0].GradientsBytes, synced.Stages[0].GradientsBytes)
	}
	r.NoSync = 2
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.no_sync" {
		t.Errorf("NoSync 2: %v", err)
	}
}

// The 1.6 optimizers: adamw_foreach allocates a moment-sized temporary in step() (in the
// overheads), paged_adamw_32bit keeps fp32 states in managed memory (nvidia-smi sees them, the
// allocator's peak does not).
func TestOptimizersAdamWForeachAndPaged32bit(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.SeqLen, r.GlobalBatch, r.Framework = 1, 2048, 1, memest.FrameworkPyTorch
	r.OptimizerBytes, r.Optimizer = memest.OptimizerBytesDerive, memest.OptimizerAdamW
	r.GradBytes = memest.GradBytesDerive
	adamw := mustPretrain(t, r)
	r.Optimizer = memest.OptimizerAdamWForeach
	foreach := mustPretrain(t, r)
	step := foreach.Stages[0].OptimizerStepBytes
	if adamw.Stages[0].OptimizerStepBytes != 0 || step <= 0 || !(foreach.PeakBytes > adamw.PeakBytes) ||
		foreach.Stages[0].OptimizerBytes != adamw.Stages[0].OptimizerBytes {
		t.Errorf("step bytes %v (adamw %v), peaks %v vs %v", step, adamw.Stages[0].OptimizerStepBytes, foreach.PeakBytes, adamw.PeakBytes)
	}
	r.Optimizer, r.SeqLen = memest.OptimizerPagedAdamW32bit, 1024
	paged := mustPretrain(t, r)
	pb := paged.Stages[0].PagedBytes
	if pb <= 0 || paged.NvidiaSMIBytes != paged.PeakReservedBytes+pb || paged.PeakReservedBytes != paged.PeakBytes {
		t.Errorf("paged %v, nvidia-smi %v, reserved %v", pb, paged.NvidiaSMIBytes, paged.PeakReservedBytes)
	}
	resp := mustRequest(t, map[string]any{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 1},
		"training": map[string]any{"seq_len": 1024, "global_batch": 1, "framework": "pytorch",
			"optimizer": memest.EnumNames(memest.EnumOptimizer)[memest.OptimizerPagedAdamW32bit]}})
	if resp["nvidia_smi_bytes"].(float64) != paged.NvidiaSMIBytes || resp["oom_probability"].(float64) != paged.OOMProbability {
		t.Errorf("typed %v/%v vs JSON %v/%v", paged.NvidiaSMIBytes, paged.OOMProbability, resp["nvidia_smi_bytes"], resp["oom_probability"])
	}
}

// The precision policy and the loss (1.6) through the typed request: each field moves the part
// it names, and a value or combination the library refuses names its field.
func TestPrecisionPolicyFields(t *testing.T) {
	llama, h100 := mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb")
	fsdp := func() *memest.PretrainRequest {
		r := memest.NewPretrainRequest(llama, h100)
		r.GPUs, r.Zero, r.SeqLen, r.GlobalBatch, r.Framework = 8, 3, 4096, 8, memest.FrameworkFSDP
		r.OptimizerBytes = memest.OptimizerBytesDerive
		r.GradBytes = memest.GradBytesDerive
		return r
	}
	// reduce_dtype: an fp32 reduce-scatter of bf16 gradients doubles its buffer
	r := fsdp()
	r.GradBytes = 2
	bf16 := mustPretrain(t, r)
	r.ReduceBytes = 4
	fp32 := mustPretrain(t, r)
	if !(fp32.Stages[0].FrameworkBufferBytes > bf16.Stages[0].FrameworkBufferBytes) {
		t.Errorf("reduce_dtype fp32: buffers %v vs %v", fp32.Stages[0].FrameworkBufferBytes, bf16.Stages[0].FrameworkBufferBytes)
	}
	resp := mustRequest(t, map[string]any{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 8, "zero": 3},
		"training": map[string]any{"seq_len": 4096, "global_batch": 8, "framework": "fsdp", "grad_dtype": "bf16",
			"reduce_dtype": "fp32"}})
	if resp["peak_bytes"].(float64) != fp32.PeakBytes || resp["training"].(map[string]any)["reduce_dtype"] != "fp32" {
		t.Errorf("reduce_dtype: typed %v vs JSON %v", fp32.PeakBytes, resp["peak_bytes"])
	}
	r.ReduceBytes = 3
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.reduce_dtype" {
		t.Errorf("ReduceBytes 3: %v", err)
	}

	// loss_parallel off under tp 2: the logits are gathered to the whole vocabulary
	r = fsdp()
	r.TP = 2
	on := mustPretrain(t, r)
	r.LossParallel = false
	off := mustPretrain(t, r)
	if !(off.Stages[0].LossBytes > on.Stages[0].LossBytes) {
		t.Errorf("loss_parallel off: loss %v vs %v", off.Stages[0].LossBytes, on.Stages[0].LossBytes)
	}
	r.Framework = memest.FrameworkMegatron
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.loss_parallel" {
		t.Errorf("loss_parallel off under megatron: %v", err)
	}

	// fp8_all_gather: FSDP2 gathers one byte per weight
	r = fsdp()
	r.FP8 = true
	bf16Gather := mustPretrain(t, r)
	r.FP8AllGather = true
	fp8Gather := mustPretrain(t, r)
	if !(fp8Gather.Stages[0].FrameworkBufferBytes < bf16Gather.Stages[0].FrameworkBufferBytes) {
		t.Errorf("fp8_all_gather: buffers %v vs %v", fp8Gather.Stages[0].FrameworkBufferBytes, bf16Gather.Stages[0].FrameworkBufferBytes)
	}
	r.FP8 = false
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.fp8_all_gather" {
		t.Errorf("fp8_all_gather without fp8: %v", err)
	}

	// logits_held: the output stays referenced through backward
	r = memest.NewPretrainRequest(llama, h100)
	r.GPUs, r.SeqLen, r.GlobalBatch, r.Framework = 1, 1024, 1, memest.FrameworkPyTorch
	dropped := mustPretrain(t, r)
	r.LogitsHeld = true
	held := mustPretrain(t, r)
	if !(held.Stages[0].LossBytes > dropped.Stages[0].LossBytes) {
		t.Errorf("logits_held: loss %v vs %v", held.Stages[0].LossBytes, dropped.Stages[0].LossBytes)
	}

	// autocast off: fp32 parameters compute in fp32 (gpt2 under plain PyTorch)
	r = memest.NewPretrainRequest(mustModel(t, "gpt2"), h100)
	r.GPUs, r.SeqLen, r.GlobalBatch, r.Framework = 1, 1024, 1, memest.FrameworkPyTorch
	r.ParamBytes, r.GradBytes, r.OptimizerBytes = 4, 4, memest.OptimizerBytesDerive
	auto := mustPretrain(t, r)
	r.Autocast = 1
	autocast := mustPretrain(t, r)
	r.Autocast = 0
	pure := mustPretrain(t, r)
	if auto.PeakBytes != autocast.PeakBytes || !(pure.Stages[0].ActivationsBytes > autocast.Stages[0].ActivationsBytes) {
		t.Errorf("autocast: default %v, on %v; activations off %v vs on %v", auto.PeakBytes, autocast.PeakBytes,
			pure.Stages[0].ActivationsBytes, autocast.Stages[0].ActivationsBytes)
	}
	r.Autocast = 2
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.autocast" {
		t.Errorf("Autocast 2: %v", err)
	}
}

// The adapter's quantize_lm_head (1.6), through JSON as every adapter field in Go: the NF4 head
// lowers the frozen base; a tied head or LoRA is refused naming the field.
func TestQLoRAQuantizeLMHead(t *testing.T) {
	req := func(model string, adapter map[string]any) map[string]any {
		return map[string]any{"mode": "pretrain", "model": model, "gpu": "h100-80gb",
			"parallel": map[string]any{"gpus": 1},
			"training": map[string]any{"seq_len": 2048, "global_batch": 1, "framework": "pytorch", "adapter": adapter}}
	}
	plain := mustRequest(t, req("llama-3.1-8b", map[string]any{"type": "qlora"}))
	head := mustRequest(t, req("llama-3.1-8b", map[string]any{"type": "qlora", "quantize_lm_head": true}))
	base := func(resp map[string]any) float64 {
		return resp["adapter"].(map[string]any)["base_weights_bytes"].(float64)
	}
	if !(base(head) < base(plain)) || head["training"].(map[string]any)["adapter"].(map[string]any)["quantize_lm_head"] != true {
		t.Errorf("quantize_lm_head: base %v vs %v", base(head), base(plain))
	}
	_, err := memest.Request(req("gemma-3-1b", map[string]any{"type": "qlora", "quantize_lm_head": true}))
	if fieldOf(t, err) != "training.adapter.quantize_lm_head" {
		t.Errorf("tied head: %v", err)
	}
	_, err = memest.Request(req("llama-3.1-8b", map[string]any{"type": "lora", "quantize_lm_head": true}))
	if fieldOf(t, err) != "training.adapter.quantize_lm_head" {
		t.Errorf("lora: %v", err)
	}
}

// final_logit_softcapping (1.6): Gemma 2's preset and config carry it; the library counts one
// more logits-sized tensor for it.
func TestFinalLogitSoftcapping(t *testing.T) {
	if c := mustModel(t, "gemma-2-9b").FinalLogitSoftcapping(); c != 30 {
		t.Errorf("gemma-2-9b cap %v", c)
	}
	if c := mustModel(t, "llama-3.1-8b").FinalLogitSoftcapping(); c != 0 {
		t.Errorf("llama cap %v", c)
	}
	config := `{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 5632, "num_attention_heads": 32,
		"num_hidden_layers": 22, "num_key_value_heads": 4, "vocab_size": 32000, "tie_word_embeddings": false%s}`
	plain, err := memest.ModelFromConfigJSON([]byte(fmt.Sprintf(config, "")))
	if err != nil {
		t.Fatal(err)
	}
	capped, err := memest.ModelFromConfigJSON([]byte(fmt.Sprintf(config, `, "final_logit_softcapping": 30.0`)))
	if err != nil {
		t.Fatal(err)
	}
	if plain.FinalLogitSoftcapping() != 0 || capped.FinalLogitSoftcapping() != 30 {
		t.Fatalf("caps %v %v", plain.FinalLogitSoftcapping(), capped.FinalLogitSoftcapping())
	}
	loss := func(m *memest.Model) float64 {
		r := memest.NewPretrainRequest(m, mustGPU(t, "h100-80gb"))
		r.GPUs, r.SeqLen, r.GlobalBatch, r.Framework = 1, 2048, 1, memest.FrameworkPyTorch
		return mustPretrain(t, r).Stages[0].LossBytes
	}
	if d := loss(capped) - loss(plain); d != 2048*32000*2 {
		t.Errorf("soft-capping adds %v bytes, want one bf16 logits tensor %v", d, 2048*32000*2)
	}
	_, err = memest.ModelFromConfigJSON([]byte(fmt.Sprintf(config, `, "final_logit_softcapping": -1`)))
	var e *memest.Error
	if !errors.As(err, &e) || e.Field != "model.final_logit_softcapping" {
		t.Errorf("negative cap: %v", err)
	}
}

// search.max_oom_probability (1.6, JSON as every search in Go): a stricter limit ranks fewer
// layouts, each row's probability is within it and follows its peak; a limit outside (0, 1] is
// refused naming the field.
func TestSearchMaxOOMProbability(t *testing.T) {
	search := func(limit any) (map[string]any, error) {
		s := map[string]any{"top": 1000}
		if limit != nil {
			s["max_oom_probability"] = limit
		}
		return memest.Request(map[string]any{"mode": "search", "model": "llama-3.1-8b", "gpu": "a100-40gb",
			"parallel": map[string]any{"gpus": 8}, "training": map[string]any{"seq_len": 8192, "global_batch": 64},
			"search": s})
	}
	ranked := map[float64]int{}
	capacity := mustGPU(t, "a100-40gb").MemoryBytes()
	for _, limit := range []any{nil, 0.01, 0.5} {
		resp, err := search(limit)
		if err != nil {
			t.Fatal(err)
		}
		max := resp["max_oom_probability"].(float64)
		if limit == nil && max != memest.SearchMaxOOMProbability || limit != nil && max != limit.(float64) {
			t.Errorf("max_oom_probability echoed %v for %v", max, limit)
		}
		rows := resp["results"].([]any)
		ranked[max] = len(rows)
		for _, x := range rows {
			e := x.(map[string]any)
			p, peak := e["oom_probability"].(float64), e["peak_bytes"].(float64)
			if p < 0 || p > max || !nearProbability(p, oomProbability(peak, capacity, memest.PeakErrorSigma)) {
				t.Errorf("rank %v: p %v, limit %v", e["rank"], p, max)
			}
			if e["margin_bytes"].(float64) != capacity-peak ||
				!near(e["peak_high_bytes"].(float64)/peak, math.Exp(z95*memest.PeakErrorSigma), 1e-12) {
				t.Errorf("rank %v: margin %v, band %v, peak %v", e["rank"], e["margin_bytes"], e["peak_high_bytes"], peak)
			}
		}
	}
	if !(0 < ranked[0.01] && ranked[0.01] < ranked[memest.SearchMaxOOMProbability] && ranked[memest.SearchMaxOOMProbability] < ranked[0.5]) {
		t.Errorf("ranked by limit %v", ranked)
	}
	for _, bad := range []float64{2.0, 0, -0.1} {
		if _, err := search(bad); fieldOf(t, err) != "search.max_oom_probability" {
			t.Errorf("max_oom_probability %v: %v", bad, err)
		}
	}
}
