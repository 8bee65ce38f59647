package memest_test

import (
	"errors"
	"testing"

	memest "memest/bindings/go"
)

// A library recipe (docs/adapters.md "Recipes") through Go's JSON path: the request's top-level
// "recipe" fills what the request leaves out. The counts are worked by hand in
// tests/unit/test_recipes.cpp; tests/crosslang holds the same requests for every front end.
func TestRecipeThroughJSON(t *testing.T) {
	req := func(recipe string, adapter map[string]any) map[string]any {
		training := map[string]any{"seq_len": 2048, "micro_batch": 1, "global_batch": 8}
		if adapter != nil {
			training["adapter"] = adapter
		}
		return map[string]any{"mode": "pretrain", "recipe": recipe, "model": "llama-3.1-8b",
			"gpu": "h100-80gb", "parallel": map[string]any{"gpus": 2}, "training": training}
	}
	// answerai-fsdp-qlora: r 64 on q, k, v, gate, up, down of Llama-3.1-8B:
	// 64 x (8192 + 5120 + 5120 + 3 x 18432) x 32 layers = 150994944
	resp := mustRequest(t, req("answerai-fsdp-qlora", nil))
	if resp["trainable_parameters"] != 150994944.0 {
		t.Errorf("answerai-fsdp-qlora: trainable %v, want 150994944", resp["trainable_parameters"])
	}
	set := resp["recipe"].(map[string]any)["set"].(map[string]any)
	if set["training.framework"] != "fsdp1" || set["training.adapter.rank"] != 64.0 {
		t.Errorf("answerai-fsdp-qlora: set %v", set)
	}
	// the request's own rank wins: torchtune-lora at r 16 on q, v, o and the MLP:
	// 16 x (8192 + 5120 + 8192 + 3 x 18432) x 32 = 39321600
	mine := mustRequest(t, req("torchtune-lora", map[string]any{"rank": 16}))
	if mine["trainable_parameters"] != 39321600.0 {
		t.Errorf("torchtune-lora r 16: trainable %v, want 39321600", mine["trainable_parameters"])
	}
	_, err := memest.Request(req("axolotl", nil))
	var e *memest.Error
	if !errors.As(err, &e) || !errors.Is(err, memest.ErrUnknownPreset) || e.Field != "recipe" {
		t.Errorf("unknown recipe: %v", err)
	}
}
