package memest_test

import (
	"encoding/json"
	"errors"
	"testing"

	memest "memest/bindings/go"
)

// ABI 1.8 through the Go binding: hybrid models. The tiny Nemotron-H is the one derived by hand
// in tests/unit/test_hybrid.cpp: 88472 parameters (all active), mixers "M-A-", MLPs "-D-D".
// Its config.json carries Python's bare Infinity, as Nemotron-H's released config does.
const tinyNemotronH = `{"model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 4,
 "hybrid_override_pattern": "M-*-", "num_attention_heads": 4, "num_key_value_heads": 2,
 "head_dim": 16, "intermediate_size": 128, "vocab_size": 100, "mamba_num_heads": 8,
 "mamba_head_dim": 16, "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4, "use_bias": false,
 "use_conv_bias": true, "mlp_bias": false, "attention_bias": false,
 "tie_word_embeddings": false, "time_step_limit": [0.0, Infinity]}`

const tinyNemotronHParameters = 88472

func tinyHybridRequest(m *memest.Model, t *testing.T) *memest.PretrainRequest {
	r := memest.NewPretrainRequest(m, mustGPU(t, "h100-80gb"))
	r.GPUs, r.TP, r.CP, r.PP, r.VPP, r.SeqLen, r.MicroBatch, r.GlobalBatch = 1, 1, 1, 1, 1, 256, 1, 4
	return r
}

// The JSON answer to tinyHybridRequest's pretraining with `parallel`, the config's text (with
// its Infinity) as the model.
func tinyHybridJSON(t *testing.T, parallel string) map[string]any {
	t.Helper()
	resp, err := memest.RequestJSON([]byte(`{"mode": "pretrain", "model": ` + tinyNemotronH +
		`, "gpu": "h100-80gb", "parallel": ` + parallel +
		`, "training": {"seq_len": 256, "micro_batch": 1, "global_batch": 4}}`))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(resp, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestHybridConfigTyped(t *testing.T) {
	m, err := memest.ModelFromConfigJSON([]byte(tinyNemotronH))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := m.NumParameters(); err != nil || n != tinyNemotronHParameters {
		t.Fatalf("parameters %v (%v), want %d", n, err, tinyNemotronHParameters)
	}
	if m.MixerPattern() != "M-A-" || m.MLPPattern() != "-D-D" {
		t.Fatalf("patterns %q %q", m.MixerPattern(), m.MLPPattern())
	}
	if m.MambaHeads() != 8 || m.MambaHeadDim() != 16 || m.LinearValueHeads() != 0 || m.NumLayers() != 4 {
		t.Fatalf("mixer dimensions %d %d %d", m.MambaHeads(), m.MambaHeadDim(), m.LinearValueHeads())
	}
	// a preset has no patterns
	if l := mustModel(t, "llama-3.1-8b"); l.MixerPattern() != "" || l.MLPPattern() != "" {
		t.Fatalf("llama patterns %q %q", l.MixerPattern(), l.MLPPattern())
	}

	states, err := memest.ModelStates(memest.NewModelStatesRequest(m))
	if err != nil || states.NumParameters != tinyNemotronHParameters {
		t.Fatalf("model states %+v (%v)", states, err)
	}
	typed, err := memest.Pretrain(tinyHybridRequest(m, t))
	if err != nil {
		t.Fatal(err)
	}
	if typed.NumParameters != tinyNemotronHParameters || len(typed.Stages) != 1 || typed.Stages[0].Layers != 4 {
		t.Fatalf("pretrain %+v", typed)
	}
	// the same request as JSON, the config's text (with its Infinity) as the model
	doc := tinyHybridJSON(t, `{"gpus": 1, "tp": 1, "cp": 1, "pp": 1, "vpp": 1}`)
	model := doc["model"].(map[string]any)
	if model["num_parameters"].(float64) != tinyNemotronHParameters || model["mixer_pattern"] != "M-A-" ||
		model["mlp_pattern"] != "-D-D" {
		t.Fatalf("JSON model %v", model)
	}
	if doc["peak_bytes"].(float64) != typed.PeakBytes || doc["estimate_bytes"].(float64) != typed.EstimateBytes {
		t.Fatalf("typed peak %v estimate %v vs JSON %v %v", typed.PeakBytes, typed.EstimateBytes,
			doc["peak_bytes"], doc["estimate_bytes"])
	}
	// the response's model object, given back as the request's model: the same answer
	again, err := memest.Request(map[string]any{"mode": "pretrain", "model": model, "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 1}, "training": map[string]any{"seq_len": 256, "global_batch": 4}})
	if err != nil || again["peak_bytes"].(float64) != typed.PeakBytes {
		t.Fatalf("model echo given back: %v (%v)", again["peak_bytes"], err)
	}
}

// Context parallelism over the Mamba-2 layers is Megatron-Core's all-to-all head split: the
// typed result carries its all-to-alls in the CP part and equals the JSON answer; under FSDP it
// is refused by name. Per Mamba layer and micro-batch (tests/unit/test_hybrid.cpp): 2 x (6 x
// 10 us + 116736 / 2 / 450e9 s) on h100-80gb, less the attention ring exchange it replaces.
func TestHybridContextParallel(t *testing.T) {
	m, err := memest.ModelFromConfigJSON([]byte(tinyNemotronH))
	if err != nil {
		t.Fatal(err)
	}
	r := tinyHybridRequest(m, t)
	r.GPUs, r.CP = 2, 2
	typed, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	doc := tinyHybridJSON(t, `{"gpus": 2, "cp": 2}`)
	step := doc["throughput"].(map[string]any)["step"].(map[string]any)
	if cp := typed.Throughput.Parts[memest.StepCPComm]; cp <= 0 || cp != step["cp_comm"].(float64) {
		t.Fatalf("cp_comm typed %v, JSON %v", cp, step["cp_comm"])
	}
	r.Framework = memest.FrameworkFSDP
	_, err = memest.Pretrain(r)
	var e *memest.Error
	if !errors.As(err, &e) || e.Field != "parallel.cp" || e.Code != "unsupported" || !errors.Is(err, memest.ErrUnsupported) {
		t.Fatalf("cp 2 on a hybrid model under FSDP: got %v", err)
	}
	// LLMem cdp, 2 x 256 tokens, no checkpointing, pages of 1 byte: the Mamba-2 layer keeps
	// 920 bytes per token where attention keeps 384 (tests/unit/test_hybrid.cpp), so
	// (920 - 384) x 512 = 274432 more kept outputs than the all-attention twin; 1D TP refused.
	keptOutputs := func(pattern, method string, gpus int) (float64, error) {
		out, err := memest.Request(map[string]any{"mode": "finetune", "model": map[string]any{
			"model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 4, "hybrid_override_pattern": pattern,
			"num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 128,
			"vocab_size": 100, "mamba_num_heads": 8, "mamba_head_dim": 16, "ssm_state_size": 16, "n_groups": 2,
			"conv_kernel": 4, "use_bias": false, "use_conv_bias": true, "mlp_bias": false, "attention_bias": false,
			"tie_word_embeddings": false}, "gpu": "h100-80gb", "parallel": map[string]any{"gpus": gpus},
			"training": map[string]any{"seq_len": 256},
			"finetune": map[string]any{"method": method, "batch": 2, "gradient_checkpointing": false,
				"flash_attention": true, "page_bytes": 1}})
		if err != nil {
			return 0, err
		}
		return out["parts"].(map[string]any)["m_out"].(float64), nil
	}
	hybrid, err := keptOutputs("M-*-", "cdp", 1)
	if err != nil {
		t.Fatal(err)
	}
	twin, err := keptOutputs("*-*-", "cdp", 1)
	if err != nil {
		t.Fatal(err)
	}
	if hybrid-twin != 274432 {
		t.Fatalf("fine-tuning a hybrid: kept outputs %v - %v, want 274432 more", hybrid, twin)
	}
	_, err = keptOutputs("M-*-", "tp", 2)
	if !errors.As(err, &e) || e.Field != "finetune.method" || !errors.Is(err, memest.ErrInvalidArgument) {
		t.Fatalf("1D TP fine-tuning of a hybrid model: got %v", err)
	}
}

// ABI 1.13: Mamba-1 layers (Jamba). The tiny Jamba of tests/unit/test_hybrid.cpp: 281960
// parameters, mixers "SASA", d_inner 128 held as 128 heads of dimension 1, dt_rank "auto" = 4.
const tinyJamba = `{"model_type": "jamba", "hidden_size": 64, "num_hidden_layers": 4,
 "num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 96, "vocab_size": 100,
 "attn_layer_period": 2, "attn_layer_offset": 1, "expert_layer_period": 2,
 "expert_layer_offset": 1, "num_experts": 4, "num_experts_per_tok": 2, "mamba_expand": 2,
 "mamba_d_state": 8, "mamba_d_conv": 4, "mamba_dt_rank": "auto", "mamba_conv_bias": true,
 "mamba_proj_bias": false, "tie_word_embeddings": false}`

func TestMamba1ConfigTyped(t *testing.T) {
	m, err := memest.ModelFromConfigJSON([]byte(tinyJamba))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := m.NumParameters(); err != nil || n != 281960 {
		t.Fatalf("parameters %v (%v), want 281960", n, err)
	}
	if m.MixerPattern() != "SASA" || m.MLPPattern() != "DEDE" {
		t.Fatalf("patterns %q %q", m.MixerPattern(), m.MLPPattern())
	}
	if m.MambaHeads() != 128 || m.MambaHeadDim() != 1 || m.MambaDtRank() != 4 {
		t.Fatalf("Mamba-1 dimensions %d %d %d", m.MambaHeads(), m.MambaHeadDim(), m.MambaDtRank())
	}
	r := tinyHybridRequest(m, t)
	r.GPUs, r.TP, r.GlobalBatch = 2, 2, 2
	typed, err := memest.Pretrain(r)
	if err != nil || typed.NumParameters != 281960 {
		t.Fatalf("pretrain %+v (%v)", typed, err)
	}
}

// ABI 1.14: LoRA on the mixers' in_proj and out_proj. The tiny Nemotron-H's Mamba-2 mixer at
// rank 8: in_proj 64 -> 328 (3136) and out_proj 128 -> 64 (1536), 4672 under peft; with
// Megatron-Bridge's Nemotron-H targets under Megatron 13376, stage 0 of pp 2 ("M-") 7744
// (tests/unit/test_hybrid.cpp).
func TestHybridMixerLoRA(t *testing.T) {
	if names := memest.EnumNames(memest.EnumLoraTarget); len(names) < 12 || names[10] != "in_proj" || names[11] != "out_proj" {
		t.Fatalf("lora_target names %v", names)
	}
	var config map[string]any
	// (the config without its Infinity: encoding/json reads standard JSON only)
	if err := json.Unmarshal([]byte(`{"model_type": "nemotron_h", "hidden_size": 64, "num_hidden_layers": 4,
	 "hybrid_override_pattern": "M-*-", "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
	 "intermediate_size": 128, "vocab_size": 100, "mamba_num_heads": 8, "mamba_head_dim": 16,
	 "ssm_state_size": 16, "n_groups": 2, "conv_kernel": 4, "use_bias": false, "use_conv_bias": true,
	 "tie_word_embeddings": false}`), &config); err != nil {
		t.Fatal(err)
	}
	ask := func(framework string, parallel map[string]any, adapter map[string]any) map[string]any {
		t.Helper()
		doc, err := memest.Request(map[string]any{"mode": "pretrain", "model": config, "gpu": "h100-80gb",
			"parallel": parallel, "training": map[string]any{"seq_len": 256, "global_batch": 4,
				"framework": framework, "adapter": adapter}})
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	peft := ask("pytorch", map[string]any{"gpus": 1},
		map[string]any{"type": "lora", "rank": 8, "targets": []string{"in_proj", "out_proj"}})
	if peft["trainable_parameters"].(float64) != 4672 {
		t.Fatalf("peft trainable %v, want 4672", peft["trainable_parameters"])
	}
	bridge := ask("megatron", map[string]any{"gpus": 2, "pp": 2}, map[string]any{"type": "lora", "rank": 8,
		"dtype": "bf16", "targets": []string{"q_proj", "o_proj", "up_proj", "down_proj", "in_proj", "out_proj"}})
	stage0 := bridge["stages"].([]any)[0].(map[string]any)["adapter"].(map[string]any)
	if bridge["trainable_parameters"].(float64) != 13376 || stage0["trainable_parameters"].(float64) != 7744 {
		t.Fatalf("Megatron trainable %v, stage 0 %v; want 13376, 7744", bridge["trainable_parameters"],
			stage0["trainable_parameters"])
	}
}
