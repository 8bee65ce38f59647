package memest_test

import (
	"testing"

	memest "memest/bindings/go"
)

// ABI 1.15 through the Go binding: PretrainRequest.MasterWeights and OptimizerStateBytes (how the
// optimizer stores what it updates, the parts of a derived K) on the hand-derived values of
// tests/unit/test_optimizer_storage.cpp, typed and as a JSON request.

// Llama-3.1-8B (8,030,261,248 parameters) on 8 H100s, data-parallel, the distributed optimizer
// (zero 1) sharding K over 8: 1,003,782,656 parameters' worth per GPU. Megatron, seq 2048,
// micro batch 1, global batch 8, no recomputation, K derived.
const storageShard = 8030261248.0 / 8

func storageRequest(t *testing.T, master int, stateBytes float64) *memest.PretrainRequest {
	t.Helper()
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.TP, r.PP, r.Zero = 8, 1, 1, 1
	r.SeqLen, r.MicroBatch, r.GlobalBatch = 2048, 1, 8
	r.Framework, r.Recompute = memest.FrameworkMegatron, memest.RecomputeNone
	r.GradBytes, r.OptimizerBytes = memest.GradBytesDerive, memest.OptimizerBytesDerive
	r.MasterWeights, r.OptimizerStateBytes = master, stateBytes
	return r
}

func storageJSON(extra map[string]any) map[string]any {
	training := map[string]any{"framework": "megatron", "seq_len": 2048, "micro_batch": 1,
		"global_batch": 8, "recompute": "none"}
	for k, v := range extra {
		training[k] = v
	}
	return map[string]any{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 8, "tp": 1, "pp": 1, "zero": 1}, "training": training}
}

func TestMasterWeightsNames(t *testing.T) {
	names := memest.EnumNames(memest.EnumMasterWeights)
	want := []string{"auto", "fp32", "bf16", "fp16", "remainder", "none"}
	if len(names) != len(want) {
		t.Fatalf("master_weights names %v", names)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Errorf("master_weights[%d]: %q vs %q", i, names[i], want[i])
		}
	}
	for name, v := range map[string]int{"auto": memest.MasterAuto, "fp32": memest.MasterFP32,
		"bf16": memest.MasterBF16, "fp16": memest.MasterFP16, "remainder": memest.MasterRemainder,
		"none": memest.MasterNone} {
		if memest.EnumValue(memest.EnumMasterWeights, name) != v {
			t.Errorf("%s: constant %d, table %d", name, v, memest.EnumValue(memest.EnumMasterWeights, name))
		}
	}
	// the field registry's choices are the same table
	rows, err := memest.RequestFields()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, row := range rows {
		switch row["path"] {
		case "training.master_weights":
			found++
			choices := row["choices"].([]any)
			if row["default"] != "auto" || row["cli"] != "--master-weights" || len(choices) != len(want) {
				t.Errorf("master_weights row %v", row)
			}
			for i := range choices {
				if i < len(want) && choices[i] != want[i] {
					t.Errorf("choice %d: %v", i, choices[i])
				}
			}
		case "training.optimizer_state_dtype":
			found++
			if row["cli"] != "--optimizer-state-dtype" {
				t.Errorf("optimizer_state_dtype row %v", row)
			}
		}
	}
	if found != 2 {
		t.Errorf("%d of the 2 rows in the registry", found)
	}
}

func TestOptimizerStorage(t *testing.T) {
	def := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	if def.MasterWeights != memest.MasterAuto || def.OptimizerStateBytes != 0 {
		t.Errorf("defaults MasterWeights %d, OptimizerStateBytes %v", def.MasterWeights, def.OptimizerStateBytes)
	}
	cases := []struct {
		name                  string
		master                int
		stateBytes            float64
		json                  map[string]any
		optimizer, masterPart float64
		echoMaster, echoState string
	}{
		// the default: an fp32 master beside bf16 weights, fp32 moments: K = 4 + 2 * 4 = 12
		{"default", memest.MasterAuto, 0, nil, 12045391872, 4 * storageShard, "fp32", "fp32"},
		// NeMo's Llama 3.1 recipes: remainders over bf16 weights, K = 2 + 8 = 10
		{"remainder", memest.MasterRemainder, 0, map[string]any{"master_weights": "remainder"},
			10037826560, 2007565312, "remainder", "fp32"},
		// no master, bf16 moments (NeMo's optim.dtype bf16): K = 2 * 2 = 4
		{"none+bf16", memest.MasterNone, 2, map[string]any{"master_weights": "none", "optimizer_state_dtype": "bf16"},
			4015130624, 0, "none", "bf16"},
	}
	var peaks []float64
	for _, c := range cases {
		typed := mustPretrain(t, storageRequest(t, c.master, c.stateBytes))
		st := typed.Stages[0]
		if st.OptimizerBytes != c.optimizer {
			t.Errorf("%s: optimizer %v, want %v", c.name, st.OptimizerBytes, c.optimizer)
		}
		if st.MasterWeightsBytes != c.masterPart {
			t.Errorf("%s: master %v, want %v", c.name, st.MasterWeightsBytes, c.masterPart)
		}
		// typed == JSON, and the response echoes the values in effect
		resp := mustRequest(t, storageJSON(c.json))
		stage := resp["stages"].([]any)[0].(map[string]any)
		if resp["peak_bytes"] != typed.PeakBytes || stage["optimizer_bytes"] != st.OptimizerBytes {
			t.Errorf("%s: JSON %v / %v vs typed %v / %v", c.name, resp["peak_bytes"], stage["optimizer_bytes"],
				typed.PeakBytes, st.OptimizerBytes)
		}
		training := resp["training"].(map[string]any)
		if training["master_weights"] != c.echoMaster || training["optimizer_state_dtype"] != c.echoState {
			t.Errorf("%s: echoed %v / %v", c.name, training["master_weights"], training["optimizer_state_dtype"])
		}
		peaks = append(peaks, typed.PeakBytes)
	}
	if peaks[0]-peaks[1] < 2*storageShard || peaks[1] <= peaks[2] {
		t.Errorf("peaks %v", peaks)
	}
	// deepspeed keeps masters too: remainders there are 10 bytes as well
	ds := storageRequest(t, memest.MasterRemainder, 0)
	ds.Framework = memest.FrameworkDeepSpeed
	if got := mustPretrain(t, ds).Stages[0].OptimizerBytes; got != 10*storageShard {
		t.Errorf("deepspeed remainders: %v", got)
	}
}

func TestOptimizerStorageRefusals(t *testing.T) {
	// a K given whole beside its parts
	whole := storageRequest(t, memest.MasterNone, 2)
	whole.OptimizerBytes = 12
	if _, err := memest.Pretrain(whole); fieldOf(t, err) != "training.master_weights" {
		t.Errorf("K whole beside master_weights: %v", err)
	}
	whole.MasterWeights = memest.MasterAuto
	if _, err := memest.Pretrain(whole); fieldOf(t, err) != "training.optimizer_state_dtype" {
		t.Errorf("K whole beside optimizer_state_bytes: %v", err)
	}
	// past the last value, a dtype of 3 bytes
	if _, err := memest.Pretrain(storageRequest(t, memest.MasterNone+1, 0)); fieldOf(t, err) != "training.master_weights" {
		t.Errorf("master past the last: %v", err)
	}
	if _, err := memest.Pretrain(storageRequest(t, memest.MasterAuto, 3)); fieldOf(t, err) != "training.optimizer_state_dtype" {
		t.Errorf("3-byte moments: %v", err)
	}
	// only megatron and deepspeed keep a master beside the weights
	fsdp := storageRequest(t, memest.MasterFP32, 0)
	fsdp.Framework = memest.FrameworkFSDP
	if _, err := memest.Pretrain(fsdp); fieldOf(t, err) != "training.master_weights" {
		t.Errorf("fsdp: %v", err)
	}
	// optimizers whose states take no dtype
	sgd := storageRequest(t, memest.MasterAuto, 2)
	sgd.Optimizer = memest.OptimizerSGD
	if _, err := memest.Pretrain(sgd); fieldOf(t, err) != "training.optimizer_state_dtype" {
		t.Errorf("sgd: %v", err)
	}
	// the JSON request refuses the same by field
	if _, err := memest.Request(storageJSON(map[string]any{"master_weights": "fp32", "framework": "fsdp"})); fieldOf(t, err) != "training.master_weights" {
		t.Errorf("JSON fsdp: %v", err)
	}
	if _, err := memest.Request(storageJSON(map[string]any{"optimizer_state_dtype": "int4"})); fieldOf(t, err) != "training.optimizer_state_dtype" {
		t.Errorf("JSON int4: %v", err)
	}
}
