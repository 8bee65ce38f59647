package memest_test

import (
	"encoding/json"
	"reflect"
	"testing"

	memest "memest/bindings/go"
)

// ABI 1.11 through the Go binding: PretrainRequest.RecomputeModules (Megatron-Core's recompute
// modules) on the hand-derived values of tests/unit/test_recompute_modules.cpp, typed and as a
// JSON request, and FinetuneResult.PeakVerdict beside LLMem's own Verdict.

// The small MoE of tests/unit/test_recompute_modules.cpp as a qwen3_moe config.json: h 64, 4
// layers, 4 heads, 8 experts of 32, top-2, every layer an MoE layer, no shared expert.
var smallQwen3Moe = map[string]any{
	"model_type": "qwen3_moe", "hidden_size": 64, "num_hidden_layers": 4,
	"num_attention_heads": 4, "num_key_value_heads": 4, "head_dim": 16,
	"intermediate_size": 256, "moe_intermediate_size": 32, "num_experts": 8,
	"num_experts_per_tok": 2, "vocab_size": 100, "max_position_embeddings": 64,
	"decoder_sparse_step": 1, "mlp_only_layers": []any{}, "tie_word_embeddings": false}

// s = 16, b = 1, tp 2 with SP (etp = tp), pp 1, ZeRO 1, recompute selective under Megatron.
func smallMoeRequest(t *testing.T) *memest.PretrainRequest {
	t.Helper()
	config, err := json.Marshal(smallQwen3Moe)
	if err != nil {
		t.Fatal(err)
	}
	model, err := memest.ModelFromConfigJSON(config)
	if err != nil {
		t.Fatal(err)
	}
	r := memest.NewPretrainRequest(model, mustGPU(t, "h100-80gb"))
	r.GPUs, r.TP, r.PP, r.Zero, r.SequenceParallel = 2, 2, 1, 1, true
	r.SeqLen, r.MicroBatch, r.GlobalBatch = 16, 1, 4
	r.Framework, r.Recompute = memest.FrameworkMegatron, memest.RecomputeSelective
	r.OptimizerBytes = memest.OptimizerBytesDerive
	return r
}

func smallMoeJSON(modules any) map[string]any {
	training := map[string]any{"framework": "megatron", "seq_len": 16, "micro_batch": 1,
		"global_batch": 4, "recompute": "selective"}
	if modules != nil {
		training["recompute_modules"] = modules
	}
	return map[string]any{"mode": "pretrain", "model": smallQwen3Moe, "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 2, "tp": 2, "pp": 1, "zero": 1, "sp": true},
		"training": training}
}

// The constants are the library's table; the names are Megatron's spellings.
func TestRecomputeModuleNames(t *testing.T) {
	names := memest.EnumNames(memest.EnumRecomputeModule)
	resp := mustRequest(t, map[string]any{"mode": "enums"})
	want := resp["enums"].(map[string]any)["recompute_module"].([]any)
	if len(names) != len(want) || len(names) != 7 {
		t.Fatalf("names %v vs enums mode %v", names, want)
	}
	for i := range names {
		if names[i] != want[i].(string) {
			t.Errorf("recompute_module[%d]: %q vs %q", i, names[i], want[i])
		}
	}
	for name, v := range map[string]int{"core_attn": memest.RecomputeModuleCoreAttn,
		"moe_act": memest.RecomputeModuleMoeAct, "layernorm": memest.RecomputeModuleLayernorm,
		"mla_up_proj": memest.RecomputeModuleMLAUpProj, "mlp": memest.RecomputeModuleMLP,
		"moe": memest.RecomputeModuleMoe, "shared_experts": memest.RecomputeModuleSharedExperts} {
		if memest.EnumValue(memest.EnumRecomputeModule, name) != v {
			t.Errorf("%s: constant %d, table %d", name, v, memest.EnumValue(memest.EnumRecomputeModule, name))
		}
	}
	bits, err := memest.RecomputeModuleBits("layernorm", "moe")
	if err != nil || bits != 1<<memest.RecomputeModuleLayernorm|1<<memest.RecomputeModuleMoe {
		t.Errorf("RecomputeModuleBits(layernorm, moe) = %b, %v", bits, err)
	}
	if _, err := memest.RecomputeModuleBits("moe", "attn"); fieldOf(t, err) != "training.recompute_modules[1]" {
		t.Errorf("unknown name: %v", err)
	}
}

// Per MoE layer the routed parts 320 + 4096 + 3072 + 2112 = 9600 bytes and the pre-MLP norm's
// output 2 s b h / t = 1024; 4 layers, one micro-batch in flight.
func TestRecomputeModules(t *testing.T) {
	r := smallMoeRequest(t)
	if r.RecomputeModules != 0 {
		t.Fatalf("default RecomputeModules %b", r.RecomputeModules)
	}
	plain := mustPretrain(t, r)
	if plain.Stages[0].ExpertActivationsBytes != 4*9600 {
		t.Errorf("experts' activations %v, want %v", plain.Stages[0].ExpertActivationsBytes, 4*9600)
	}
	activations := func(modules ...string) (*memest.PretrainResult, float64) {
		t.Helper()
		bits, err := memest.RecomputeModuleBits(modules...)
		if err != nil {
			t.Fatal(err)
		}
		r.RecomputeModules = bits
		res := mustPretrain(t, r)
		return res, plain.Stages[0].ActivationsBytes - res.Stages[0].ActivationsBytes
	}
	moe, dropped := activations("moe")
	if dropped != 4*9600 || moe.Stages[0].ExpertActivationsBytes != 0 {
		t.Errorf("moe: %v bytes dropped (want %v), experts keep %v", dropped, 4*9600, moe.Stages[0].ExpertActivationsBytes)
	}
	both, dropped := activations("layernorm", "moe")
	if dropped != 4*(9600+1024) {
		t.Errorf("layernorm + moe: %v bytes dropped, want %v", dropped, 4*(9600+1024))
	}
	if _, dropped := activations("moe_act"); dropped != 4*1024 {
		t.Errorf("moe_act: %v bytes dropped, want %v", dropped, 4*1024)
	}
	if both.PeakBytes >= plain.PeakBytes {
		t.Errorf("peak %v not below %v", both.PeakBytes, plain.PeakBytes)
	}
	// the JSON route agrees with the typed one, and echoes the modules in effect
	resp := mustRequest(t, smallMoeJSON([]string{"layernorm", "moe"}))
	stage := resp["stages"].([]any)[0].(map[string]any)
	if resp["peak_bytes"] != both.PeakBytes || stage["activations_bytes"] != both.Stages[0].ActivationsBytes {
		t.Errorf("JSON peak %v, activations %v vs typed %v, %v", resp["peak_bytes"], stage["activations_bytes"],
			both.PeakBytes, both.Stages[0].ActivationsBytes)
	}
	echo := resp["training"].(map[string]any)["recompute_modules"]
	if !reflect.DeepEqual(echo, []any{"layernorm", "moe"}) {
		t.Errorf("echo %v", echo)
	}
	if echo := mustRequest(t, smallMoeJSON(nil))["training"].(map[string]any)["recompute_modules"]; !reflect.DeepEqual(echo, []any{"core_attn"}) {
		t.Errorf("default echo %v", echo)
	}
	// refused where they mean nothing: mla_up_proj without latent attention, another framework,
	// a bit past the last module
	r.RecomputeModules = 1 << memest.RecomputeModuleMLAUpProj
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.recompute_modules" {
		t.Errorf("mla_up_proj on a model without MLA: %v", err)
	}
	r.RecomputeModules, r.Framework = 1<<memest.RecomputeModuleMoe, memest.FrameworkFSDP
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.recompute_modules" {
		t.Errorf("moe under fsdp: %v", err)
	}
	r.RecomputeModules, r.Framework = 1<<7, memest.FrameworkMegatron
	if _, err := memest.Pretrain(r); fieldOf(t, err) != "training.recompute_modules" {
		t.Errorf("bit 7: %v", err)
	}
	if _, err := memest.Request(smallMoeJSON([]string{"attn"})); fieldOf(t, err) != "training.recompute_modules[0]" {
		t.Errorf("JSON unknown name: %v", err)
	}
}

// LLMem's Algorithm 1 on Llama-3.1-8B, 8 x A100 80GB, 2048 tokens: the selected method's peak is
// 98.8 % of capacity, within it (Verdict "fits", LLMem's test) but past the fits band
// (PeakVerdict "tight"); the typed call at the selected method and batch says the same.
func TestFinetunePeakVerdict(t *testing.T) {
	resp := mustRequest(t, map[string]any{"mode": "finetune", "model": "llama-3.1-8b", "gpu": "a100-80gb",
		"parallel": map[string]any{"gpus": 8}, "training": map[string]any{"seq_len": 2048},
		"finetune": map[string]any{"method": "auto"}})
	if resp["verdict"] != "fits" || resp["peak_verdict"] != "tight" {
		t.Fatalf("JSON verdict %v, peak_verdict %v", resp["verdict"], resp["peak_verdict"])
	}
	r := memest.NewFinetuneRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "a100-80gb"))
	r.GPUs, r.SeqLen = 8, 2048
	choice, err := memest.FinetuneSelect(r)
	if err != nil {
		t.Fatal(err)
	}
	if choice.Selected != resp["selected"] {
		t.Fatalf("typed selects %s, JSON %v", choice.Selected, resp["selected"])
	}
	r.Method, r.Batch = memest.EnumValue(memest.EnumFinetuneMethod, choice.Selected), choice.Batch
	one, err := memest.Finetune(r)
	if err != nil {
		t.Fatal(err)
	}
	if one.Verdict != "fits" || one.PeakVerdict != "tight" || one.PeakBytes != resp["peak_bytes"] {
		t.Errorf("typed %+v vs JSON peak %v", one, resp["peak_bytes"])
	}
	if u := one.PeakBytes / one.CapacityBytes; u < 0.98 || u > 0.99 {
		t.Errorf("usage %v", u)
	}
}
