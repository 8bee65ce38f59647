package memest_test

import (
	"errors"
	"fmt"
	"testing"

	memest "memest/bindings/go"
)

// The training-stack fields (docs/training-stack.md) through the typed API: an FSDP2 request
// with torchtitan's per-op recomputation and an unfused loss gives the JSON entry point's
// numbers, field for field.
func TestStackTypedEqualsJSON(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	if r.Framework != memest.FrameworkMegatron || r.RecomputeEvery != 1 || r.Loss != memest.LossAuto {
		t.Fatalf("defaults %+v", r)
	}
	r.GPUs, r.Zero, r.SeqLen, r.MicroBatch, r.GlobalBatch = 8, 3, 4096, 2, 16
	r.Framework, r.Recompute, r.Loss = memest.FrameworkFSDP, memest.RecomputeOpSelective, memest.LossUnfused
	r.OptimizerBytes = memest.OptimizerBytesDerive // as a JSON request without optimizer_bytes
	r.GradBytes = memest.GradBytesDerive       // and without grad_dtype (1.11)
	typed, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := memest.Request(map[string]any{
		"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 8, "zero": 3},
		"training": map[string]any{"seq_len": 4096, "micro_batch": 2, "global_batch": 16,
			"framework": "fsdp", "recompute": "op_selective", "loss": "unfused"},
	})
	if err != nil {
		t.Fatal(err)
	}
	for key, got := range map[string]float64{"peak_bytes": typed.PeakBytes, "estimate_bytes": typed.EstimateBytes,
		"peak_allocated_bytes": typed.PeakAllocatedBytes, "peak_reserved_bytes": typed.PeakReservedBytes,
		"host_bytes": typed.HostBytes} {
		if resp[key].(float64) != got {
			t.Errorf("%s: typed %v vs JSON %v", key, got, resp[key])
		}
	}
	training := resp["training"].(map[string]any)
	if training["framework"] != typed.Framework || typed.Framework != "fsdp" ||
		training["loss"] != typed.Loss || typed.Loss != "unfused" ||
		training["optimizer_bytes"].(float64) != typed.OptimizerBytesPerParameter {
		t.Fatalf("typed %s/%s/%v vs JSON %v", typed.Framework, typed.Loss, typed.OptimizerBytesPerParameter, training)
	}
	if !(typed.PeakAllocatedBytes > 0 && typed.PeakAllocatedBytes < typed.PeakReservedBytes &&
		typed.PeakReservedBytes == typed.PeakBytes) {
		t.Fatalf("allocated %v, reserved %v, peak %v", typed.PeakAllocatedBytes, typed.PeakReservedBytes, typed.PeakBytes)
	}
	stages := resp["stages"].([]any)
	if len(stages) != len(typed.Stages) {
		t.Fatalf("%d stages vs %d", len(typed.Stages), len(stages))
	}
	for i, st := range stages {
		s := st.(map[string]any)
		parts := s["stack"].(map[string]any)
		ts := typed.Stages[i]
		for key, got := range map[string]float64{
			"framework_buffer_bytes": ts.FrameworkBufferBytes, "master_weights_bytes": ts.MasterWeightsBytes,
			"loss_bytes": ts.LossBytes, "recompute_bytes": ts.RecomputeBytes,
			"offload_staging_bytes": ts.OffloadStagingBytes, "paged_bytes": ts.PagedBytes} {
			if parts[key].(float64) != got {
				t.Errorf("stage %d %s: typed %v vs JSON %v", i, key, got, parts[key])
			}
		}
		if s["overheads"].(map[string]any)["phase_overlap_bytes"].(float64) != ts.PhaseOverlapBytes {
			t.Errorf("stage %d phase_overlap_bytes: typed %v", i, ts.PhaseOverlapBytes)
		}
		for key, got := range map[string]float64{"peak_allocated_bytes": ts.PeakAllocatedBytes,
			"peak_reserved_bytes": ts.PeakReservedBytes, "host_bytes": ts.HostBytes} {
			if s[key].(float64) != got {
				t.Errorf("stage %d %s: typed %v vs JSON %v", i, key, got, s[key])
			}
		}
	}
	if typed.Stages[0].FrameworkBufferBytes <= 0 || typed.Stages[0].MasterWeightsBytes != 0 {
		t.Fatalf("FSDP buffers, no fp32 master: %+v", typed.Stages[0])
	}
}

// Offloading through the typed API: host memory appears, the GPU peak drops.
func TestStackOffload(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.Zero, r.SeqLen = 8, 3, 4096
	r.Framework, r.Optimizer, r.OptimizerBytes = memest.FrameworkDeepSpeed, memest.OptimizerAdamW, memest.OptimizerBytesDerive
	onGPU, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	r.OffloadOptimizer, r.DSReduceBucketSize = true, 2e8
	offloaded, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	if onGPU.HostBytes != 0 || offloaded.HostBytes <= 0 || offloaded.PeakBytes >= onGPU.PeakBytes {
		t.Fatalf("on the GPU %+v, offloaded %+v", onGPU, offloaded)
	}
	if g := mustGPU(t, "a100-80gb"); g.FP8() != 0 || mustGPU(t, "h100-80gb").FP8() != 1 || g.PCIeGBps() <= 0 {
		t.Fatalf("gpu fp8 %v, pcie %v", g.FP8(), g.PCIeGBps())
	}
}

// Refused combinations name their field, through the typed API and through JSON alike.
func TestStackRefusedNamesField(t *testing.T) {
	cases := []struct {
		set   func(r *memest.PretrainRequest)
		field string
	}{
		{func(r *memest.PretrainRequest) { r.Recompute = memest.RecomputeOpSelective }, "training.recompute"},
		{func(r *memest.PretrainRequest) { r.Compile = true }, "training.compile"},
		{func(r *memest.PretrainRequest) { r.Framework = memest.FrameworkPyTorch; r.Zero = 3 }, "parallel.zero"},
		{func(r *memest.PretrainRequest) { r.Framework = 42 }, "training.framework"},
		{func(r *memest.PretrainRequest) {
			r.Framework, r.OffloadParams = memest.FrameworkDeepSpeed, true
		}, "training.offload.params"},
		{func(r *memest.PretrainRequest) { r.Framework, r.RecomputeEvery = memest.FrameworkFSDP, 0 }, "training.recompute_every"},
		// the Llama preset's code casts its logits to fp32 (logits_fp32): no 16-bit logits
		{func(r *memest.PretrainRequest) {
			r.Framework, r.Loss = memest.FrameworkDeepSpeed, memest.LossUnfused16Bit
		}, "training.loss"},
	}
	for i, c := range cases {
		r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
		r.GPUs = 8
		c.set(r)
		_, err := memest.Pretrain(r)
		var e *memest.Error
		if !errors.As(err, &e) || e.Field != c.field || !errors.Is(err, memest.ErrInvalidArgument) && !errors.Is(err, memest.ErrOutOfRange) {
			t.Errorf("case %d: want %s, got %v (%+v)", i, c.field, err, e)
		}
	}
	_, err := memest.Request(map[string]any{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 8}, "training": map[string]any{"recompute": "op_selective"}})
	var e *memest.Error
	if !errors.As(err, &e) || e.Field != "training.recompute" || !errors.Is(err, memest.ErrInvalidArgument) {
		t.Fatalf("JSON op_selective under megatron: %v", err)
	}
}

// The header's constants are the library's tables (names never spelled out here).
func TestStackEnumConstants(t *testing.T) {
	resp, err := memest.Request(map[string]any{"mode": "enums"})
	if err != nil {
		t.Fatal(err)
	}
	tables := resp["enums"].(map[string]any)
	for key, which := range map[string]memest.Enum{"framework": memest.EnumFramework,
		"loss": memest.EnumLoss, "optimizer": memest.EnumOptimizer} {
		got, want := memest.EnumNames(which), tables[key].([]any)
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("%s: %v vs %v", key, got, want)
		}
		for i := range got {
			if got[i] != want[i].(string) {
				t.Fatalf("%s[%d]: %q vs %q", key, i, got[i], want[i])
			}
		}
	}
	names := memest.EnumNames(memest.EnumFramework)
	for v, c := range []int{memest.FrameworkMegatron, memest.FrameworkFSDP, memest.FrameworkDeepSpeed,
		memest.FrameworkPyTorch, memest.FrameworkFSDP1} {
		if c != v || memest.EnumValue(memest.EnumFramework, names[v]) != c {
			t.Errorf("framework %d", v)
		}
	}
	if len(names) != memest.FrameworkFSDP1+1 || names[memest.FrameworkFSDP1] != "fsdp1" {
		t.Errorf("framework names %v", names)
	}
	optimizers := memest.EnumNames(memest.EnumOptimizer)
	for v, c := range []int{memest.OptimizerAdam, memest.OptimizerAdamW, memest.OptimizerAdamW8bit,
		memest.OptimizerPagedAdamW8bit, memest.OptimizerSGDMomentum, memest.OptimizerSGD,
		memest.OptimizerAdamWForeach, memest.OptimizerPagedAdamW32bit} {
		if c != v || memest.EnumValue(memest.EnumOptimizer, optimizers[v]) != c {
			t.Errorf("optimizer %d", v)
		}
	}
	if optimizers[memest.OptimizerAdamWForeach] != "adamw_foreach" || optimizers[memest.OptimizerPagedAdamW32bit] != "paged_adamw_32bit" {
		t.Errorf("optimizer names %v", optimizers)
	}
	if memest.EnumNames(memest.EnumRecompute)[memest.RecomputeOpSelective] != tables["recompute"].([]any)[memest.RecomputeOpSelective] {
		t.Error("op_selective")
	}
	if len(memest.EnumNames(memest.EnumLoss)) != memest.LossFlashAttn+1 ||
		len(memest.EnumNames(memest.EnumOptimizer)) != memest.OptimizerPagedAdamW32bit+1 {
		t.Error("loss / optimizer constants vs the tables")
	}
}

// The 16-bit loss (1.4) by name and by constant: GPT2-XL under DeepSpeed fp16 at micro-batch
// 40 holds 6 bytes per logit, 40*1024 tokens * 50257 = 2058526720 logits: 12351160320 bytes.
func TestStackUnfused16Bit(t *testing.T) {
	if memest.EnumValue(memest.EnumLoss, "unfused_16bit") != memest.LossUnfused16Bit {
		t.Fatalf("unfused_16bit is %d", memest.EnumValue(memest.EnumLoss, "unfused_16bit"))
	}
	resp, err := memest.Request(map[string]any{"mode": "pretrain", "gpu": "a100-40gb",
		"model": map[string]any{"model_type": "gpt2", "n_embd": 1600, "n_layer": 48, "n_head": 25,
			"vocab_size": 50257, "n_positions": 1024},
		"parallel": map[string]any{"gpus": 4, "zero": 3},
		"training": map[string]any{"seq_len": 1024, "micro_batch": 40, "framework": "deepspeed",
			"param_dtype": "fp16", "grad_dtype": "fp16", "recompute": "full", "flash_attention": false,
			"loss": "unfused_16bit"}})
	if err != nil {
		t.Fatal(err)
	}
	stage := resp["stages"].([]any)[0].(map[string]any)
	if got := stage["stack"].(map[string]any)["loss_bytes"].(float64); got != 12351160320 {
		t.Fatalf("loss_bytes %v", got)
	}
	if resp["training"].(map[string]any)["loss"] != "unfused_16bit" {
		t.Fatalf("training %v", resp["training"])
	}
}

// 1.7: FirstStageLayers, LastStageLayers and PipelineLayout through the typed API. Llama-3.1-8B's
// 32 layers over PP 4: first 6, last 6, the two between 10 each; the layout string's 8 virtual
// stages (VPP 2) hold the same. A layout of 16 layers is refused naming the field.
func TestStackPipelineEndsAndLayout(t *testing.T) {
	stages := func(r *memest.PretrainRequest) []int64 {
		t.Helper()
		res, err := memest.Pretrain(r)
		if err != nil {
			t.Fatal(err)
		}
		var layers []int64
		for _, s := range res.Stages {
			layers = append(layers, s.Layers)
		}
		return layers
	}
	want := "[6 10 10 6]"
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	if r.FirstStageLayers != 0 || r.PipelineLayout != "" {
		t.Fatalf("defaults %+v", r)
	}
	r.GPUs, r.TP, r.PP, r.FirstStageLayers, r.LastStageLayers = 4, 1, 4, 6, 6
	if got := fmt.Sprint(stages(r)); got != want {
		t.Errorf("first/last 6: stages %s, want %s", got, want)
	}
	r.FirstStageLayers, r.LastStageLayers = 5, 0
	if got := fmt.Sprint(stages(r)); got != "[5 9 9 9]" {
		t.Errorf("first 5: stages %s, want [5 9 9 9]", got)
	}
	r.FirstStageLayers, r.VPP, r.PipelineLayout = 0, 2, "Et*3|t*5|t*5|t*3|t*3|t*5|t*5|t*3L"
	if got := fmt.Sprint(stages(r)); got != want {
		t.Errorf("layout: stages %s, want %s", got, want)
	}
	r.PipelineLayout = "Et*3|t*5|t*5|t*3L"
	_, err := memest.Pretrain(r)
	var e *memest.Error
	if !errors.As(err, &e) || e.Field != "parallel.pipeline_layout" {
		t.Errorf("a 16-layer layout: %v", err)
	}
	if memest.EnumNames(memest.EnumLoraTarget)[9] != "router" {
		t.Errorf("lora targets %v", memest.EnumNames(memest.EnumLoraTarget))
	}
}

// 1.7: DDP on one process. Llama-3.1-8B under plain PyTorch with fp32 gradients on one GPU: a
// bucket size alone (DDPBucketMiB 25) does not wrap one process; DDP 1 (torchrun with DDP around
// one GPU) buckets every gradient, 4 bytes x NumParameters, the same as the JSON route's
// training.ddp true; DDP 0 with two data-parallel ranks is refused naming "training.ddp".
func TestStackDDPOnOneGPU(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	if r.DDP != memest.StackDefault {
		t.Fatalf("DDP default %d, want %d", r.DDP, memest.StackDefault)
	}
	r.GPUs, r.TP, r.PP, r.Framework = 1, 1, 1, memest.FrameworkPyTorch
	r.ParamBytes, r.GradBytes, r.OptimizerBytes, r.DDPBucketMiB = 4, 4, memest.OptimizerBytesDerive, 25
	plain := mustPretrain(t, r)
	if plain.Stages[0].FrameworkBufferBytes != 0 {
		t.Errorf("a bucket size alone: buffers %v, want 0", plain.Stages[0].FrameworkBufferBytes)
	}
	r.DDP = 1
	on := mustPretrain(t, r)
	if on.NumParameters < 8e9 || on.Stages[0].FrameworkBufferBytes != 4*on.NumParameters || !(on.PeakBytes > plain.PeakBytes) {
		t.Errorf("DDP 1: buffers %v for %v parameters, peak %v vs %v", on.Stages[0].FrameworkBufferBytes,
			on.NumParameters, on.PeakBytes, plain.PeakBytes)
	}
	resp := mustRequest(t, map[string]any{
		"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 1, "tp": 1, "pp": 1},
		"training": map[string]any{"framework": "pytorch", "param_dtype": "fp32", "grad_dtype": "fp32",
			"buckets": map[string]any{"bucket_cap_mb": 25}, "ddp": true},
	})
	buffers := resp["stages"].([]any)[0].(map[string]any)["stack"].(map[string]any)["framework_buffer_bytes"]
	if buffers != on.Stages[0].FrameworkBufferBytes || resp["training"].(map[string]any)["ddp"] != true {
		t.Errorf("JSON ddp true: buffers %v, typed %v; training %v", buffers, on.Stages[0].FrameworkBufferBytes, resp["training"])
	}
	r.DDP = 0
	if off := mustPretrain(t, r); off.PeakBytes != plain.PeakBytes {
		t.Errorf("DDP 0 on one GPU: peak %v, want %v", off.PeakBytes, plain.PeakBytes)
	}
	r.GPUs = 2
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.ddp" {
		t.Errorf("DDP 0 on two GPUs: %v", err)
	}
	r.GPUs, r.DDP, r.Framework = 1, 1, memest.FrameworkMegatron
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.ddp" {
		t.Errorf("DDP 1 under megatron: %v", err)
	}
}
