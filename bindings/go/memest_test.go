package memest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	memest "memest/bindings/go"
)

func mustModel(t *testing.T, id string) *memest.Model {
	t.Helper()
	m, err := memest.ModelPreset(id)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustGPU(t *testing.T, id string) *memest.GPU {
	t.Helper()
	g, err := memest.GPUPreset(id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// A scheduler's question: does this layout fit, and what is the peak per GPU?
func TestPretrainScheduler(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "a100-40gb"))
	r.GPUs, r.TP, r.PP, r.SeqLen, r.GlobalBatch = 8, 4, 2, 8192, 1024
	res, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != "fits" || len(res.Stages) != 2 || res.Stages[0].Layers != 16 || res.DP != 1 {
		t.Fatalf("unexpected result %+v", res)
	}
	gib := res.EstimateBytes / (1 << 30)
	if gib < 27.195 || gib > 27.205 {
		t.Fatalf("estimate %.4f GiB, want 27.20 (README example)", gib)
	}
	if res.PeakBytes < res.EstimateBytes {
		t.Fatalf("peak %v < estimate %v", res.PeakBytes, res.EstimateBytes)
	}
}

func TestTypedEqualsJSON(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "llama-2-70b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.TP, r.PP, r.VPP, r.CP, r.SeqLen, r.GlobalBatch = 512, 8, 8, 2, 2, 4096, 512
	typed, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := memest.Request(map[string]any{
		"mode": "pretrain", "model": "llama-2-70b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 512, "tp": 8, "pp": 8, "vpp": 2, "cp": 2},
		"training": map[string]any{"seq_len": 4096, "global_batch": 512},
	})
	if err != nil {
		t.Fatal(err)
	}
	if resp["estimate_bytes"].(float64) != typed.EstimateBytes || resp["peak_bytes"].(float64) != typed.PeakBytes ||
		resp["verdict"].(string) != typed.Verdict {
		t.Fatalf("typed %+v vs JSON %v", typed, resp)
	}
	stages := resp["stages"].([]any)
	for i, s := range stages {
		if s.(map[string]any)["total_bytes"].(float64) != typed.Stages[i].TotalBytes {
			t.Fatalf("stage %d differs", i)
		}
	}
}

func TestErrorNamesField(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "a100-40gb"))
	r.GPUs, r.TP = 8, 3
	_, err := memest.Pretrain(r)
	var e *memest.Error
	if !errors.As(err, &e) || e.Field != "parallel.tp" || e.Code != "invalid_argument" {
		t.Fatalf("got %v", err)
	}
	if !errors.Is(err, memest.ErrInvalidArgument) || errors.Is(err, memest.ErrParse) {
		t.Fatal("errors.Is does not match the status")
	}
	if _, err := memest.ModelPreset("no-such-model"); !errors.Is(err, memest.ErrUnknownPreset) {
		t.Fatalf("got %v", err)
	}
	_, err = memest.RequestJSON([]byte("{not json"))
	if !errors.As(err, &e) || e.Code != "parse_error" || e.Field != "" {
		t.Fatalf("got %v", err)
	}
	_, err = memest.Request(map[string]any{"mode": "pretrain", "model": "gpt2", "gpu": "a100-40gb",
		"training": map[string]any{"seq_length": 1}})
	if !errors.As(err, &e) || e.Code != "unknown_field" || e.Field != "training.seq_length" {
		t.Fatalf("got %v", err)
	}
	if _, err := memest.ModelFromConfigJSON([]byte(`{"model_type": "llama", "hidden_size": 0}`)); err == nil {
		t.Fatal("a bad config passed")
	}
}

func TestSentinelsMatchLibrary(t *testing.T) {
	for _, s := range []*memest.Error{memest.ErrInvalidArgument, memest.ErrMissingField, memest.ErrWrongType,
		memest.ErrParse, memest.ErrUnknownPreset, memest.ErrUnknownField, memest.ErrUnsupported,
		memest.ErrOverflow, memest.ErrStructSize, memest.ErrNullPointer, memest.ErrOutOfRange,
		memest.ErrNoMemory, memest.ErrInternal} {
		if memest.StatusName(s.Status) != s.Code {
			t.Errorf("status %d: %q vs %q", s.Status, memest.StatusName(s.Status), s.Code)
		}
	}
}

func TestModelStatesZeroTable(t *testing.T) {
	r := memest.NewModelStatesRequest(memest.BareModel(7.5e9))
	r.GPUs, r.Zero, r.ParamBytes, r.GradBytes = 64, 1, 2, 2
	res, err := memest.ModelStates(r)
	if err != nil {
		t.Fatal(err)
	}
	if gb := res.EstimateBytes / 1e9; gb < 31.35 || gb > 31.45 || res.Verdict != "unknown" {
		t.Fatalf("ZeRO table: 31.4 GB, got %.3f (%s)", gb, res.Verdict)
	}
}

func TestFinetune(t *testing.T) {
	r := memest.NewFinetuneRequest(mustModel(t, "opt-1.3b"), mustGPU(t, "v100-16gb"))
	r.GPUs = 4
	choice, err := memest.FinetuneSelect(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(choice.Options) != 4 || choice.Selected == "unknown" || choice.Batch < 1 {
		t.Fatalf("%+v", choice)
	}
	resp, err := memest.Request(map[string]any{"mode": "finetune", "model": "opt-1.3b", "gpu": "v100-16gb",
		"parallel": map[string]any{"gpus": 4}, "finetune": map[string]any{"method": "auto"}})
	if err != nil {
		t.Fatal(err)
	}
	if resp["selected"] != choice.Selected || int64(resp["max_batch"].(float64)) != choice.Batch {
		t.Fatalf("typed %+v vs JSON %v/%v", choice, resp["selected"], resp["max_batch"])
	}
	r.Method, r.Batch = memest.MethodZero3, 8
	one, err := memest.Finetune(r)
	if err != nil || one.Method != "zero3" || one.PeakBytes <= 0 {
		t.Fatalf("%+v %v", one, err)
	}
	r.Method = memest.MethodAuto
	if _, err := memest.Finetune(r); err == nil {
		t.Fatal("AUTO accepted by Finetune")
	}
}

func TestPresets(t *testing.T) {
	ids := memest.ModelPresets()
	if len(ids) == 0 || len(memest.GPUPresets()) == 0 {
		t.Fatal("no presets")
	}
	for _, id := range ids {
		m := mustModel(t, id)
		if n, err := m.NumParameters(); err != nil || n <= 0 || m.Name() == "" {
			t.Fatalf("%s: %v %v", id, n, err)
		}
	}
	if memest.Version() == "" || memest.VersionNumber() <= 0 {
		t.Fatal("version")
	}
}

// Errors are per OS thread in C; the binding holds the thread, so goroutines see their own.
func TestConcurrentErrors(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			tp := int64(4)
			if i%2 == 1 {
				tp = 3
			}
			_, err := memest.Request(map[string]any{"mode": "pretrain", "model": "llama-3.1-8b",
				"gpu": "a100-40gb", "parallel": map[string]any{"gpus": 8, "tp": tp}})
			var e *memest.Error
			if (i%2 == 1) != errors.As(err, &e) || (e != nil && e.Field != "parallel.tp") {
				errs <- fmt.Errorf("goroutine %d: %v", i, err)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func ExamplePretrain() {
	model, _ := memest.ModelPreset("llama-3.1-8b")
	gpu, _ := memest.GPUPreset("a100-40gb")
	r := memest.NewPretrainRequest(model, gpu)
	r.GPUs, r.TP, r.PP, r.SeqLen = 8, 4, 2, 8192
	res, _ := memest.Pretrain(r)
	fmt.Printf("%.2f GiB %s\n", res.EstimateBytes/(1<<30), res.Verdict)
	// Output: 27.20 GiB fits
}

func ExampleRequest() {
	resp, err := memest.Request(map[string]any{"mode": "model_states", "model": "llama-2-7b",
		"parallel": map[string]any{"gpus": 8, "zero": 3}})
	if err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(resp["verdict"])
	fmt.Println(string(b))
	// Output: "unknown"
}
