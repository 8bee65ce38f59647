package memest_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
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
	if res.UsageFraction > memest.VerdictBands()["fits"] {
		t.Fatalf("usage %v above the fits band", res.UsageFraction)
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

// A LoRA adapter through the JSON entry point: its parts named in the response, a refused
// QLoRA naming its field, the names from the library's tables.
func TestAdapter(t *testing.T) {
	// Llama-3.1-8B, q_proj + v_proj at r 8: (8*(4096+4096) + 8*(4096+1024)) * 32 = 3407872
	out, err := memest.Request(map[string]any{"mode": "pretrain", "model": "llama-3.1-8b",
		"gpu": "h100-80gb", "parallel": map[string]any{"gpus": 1},
		"training": map[string]any{"framework": "pytorch", "seq_len": 2048,
			"adapter": map[string]any{"type": "lora"}}})
	if err != nil {
		t.Fatal(err)
	}
	if out["trainable_parameters"].(float64) != 3407872 {
		t.Fatalf("trainable %v", out["trainable_parameters"])
	}
	parts := out["adapter"].(map[string]any)
	if parts["adapter_weights_bytes"].(float64) != 3407872*4 {
		t.Fatalf("adapter weights %v", parts["adapter_weights_bytes"])
	}
	_, err = memest.Request(map[string]any{"mode": "pretrain", "model": "llama-3.1-8b",
		"gpu": "h100-80gb", "parallel": map[string]any{"gpus": 1},
		"training": map[string]any{"framework": "pytorch", "param_dtype": "fp32",
			"adapter": map[string]any{"type": "qlora"}}})
	var e *memest.Error
	if !errors.As(err, &e) || e.Field != "training.param_dtype" {
		t.Fatalf("got %v", err)
	}
	names := memest.EnumNames(memest.EnumAdapter)
	if len(names) != 3 || names[2] != "qlora" || memest.EnumNames(memest.EnumLoraTarget)[8] != "embed_tokens" {
		t.Fatalf("names %v", names)
	}
}

// The sentinels cover the library's status table: one per failure status, with its name.
func TestSentinelsMatchLibrary(t *testing.T) {
	names := memest.EnumNames(memest.EnumStatus)
	if len(names) < 2 || names[0] != "ok" {
		t.Fatalf("status table %v", names)
	}
	for status, name := range names[1:] {
		s := memest.StatusError(status + 1)
		if s == nil {
			t.Errorf("no sentinel for status %d (%s)", status+1, name)
			continue
		}
		if s.Code != name || memest.StatusName(s.Status) != name {
			t.Errorf("status %d: sentinel %q, library %q", s.Status, s.Code, name)
		}
	}
	for _, s := range []*memest.Error{memest.ErrInvalidArgument, memest.ErrMissingField, memest.ErrWrongType,
		memest.ErrParse, memest.ErrUnknownPreset, memest.ErrUnknownField, memest.ErrUnsupported,
		memest.ErrOverflow, memest.ErrStructSize, memest.ErrNullPointer, memest.ErrOutOfRange,
		memest.ErrNoMemory, memest.ErrInternal} {
		if s.Status <= 0 || s.Status >= len(names) || names[s.Status] != s.Code {
			t.Errorf("sentinel %d %q is not in the library's table", s.Status, s.Code)
		}
	}
	if memest.StatusError(0) != nil || memest.StatusError(len(names)) != nil {
		t.Error("a sentinel outside the failure statuses")
	}
}

// The enumerations and bands are the library's, as the JSON "enums" mode lists them.
func TestEnumsAreTheLibraryTables(t *testing.T) {
	resp, err := memest.Request(map[string]any{"mode": "enums"})
	if err != nil {
		t.Fatal(err)
	}
	tables := resp["enums"].(map[string]any)
	for key, which := range map[string]memest.Enum{"status": memest.EnumStatus, "family": memest.EnumFamily,
		"verdict": memest.EnumVerdict, "recompute": memest.EnumRecompute,
		"activation_model": memest.EnumActivationModel, "prune_reason": memest.EnumPruneReason,
		"finetune_method": memest.EnumFinetuneMethod} {
		got := memest.EnumNames(which)
		want := tables[key].([]any)
		if len(got) != len(want) || len(got) == 0 {
			t.Fatalf("%s: %v vs %v", key, got, want)
		}
		for i := range got {
			if got[i] != want[i].(string) || memest.EnumValue(which, got[i]) != i {
				t.Fatalf("%s[%d]: %q vs %q", key, i, got[i], want[i])
			}
		}
	}
	if memest.EnumValue(memest.EnumRecompute, "sometimes") != -1 || memest.EnumNames(memest.Enum(99)) == nil ||
		len(memest.EnumNames(memest.Enum(99))) != 0 {
		t.Fatal("unknown names and enumerations")
	}
	// the header's constants are the table's values
	for name, v := range map[string]int{"none": memest.RecomputeNone, "selective": memest.RecomputeSelective,
		"full": memest.RecomputeFull} {
		if memest.EnumValue(memest.EnumRecompute, name) != v {
			t.Errorf("recompute %s: %d", name, v)
		}
	}
	for name, v := range map[string]int{"cdp": memest.MethodCDP, "zero3": memest.MethodZero3, "tp": memest.MethodTP,
		"dp+tp": memest.MethodDPTP, "cpu_offload": memest.MethodCPUOffload, "auto": memest.MethodAuto} {
		if memest.EnumValue(memest.EnumFinetuneMethod, name) != v || memest.MethodName(v) != name {
			t.Errorf("method %s: %d", name, v)
		}
	}
	bands := memest.VerdictBands()
	want := resp["verdict_bands"].(map[string]any)
	if len(bands) != len(want) || len(bands) == 0 {
		t.Fatalf("bands %v vs %v", bands, want)
	}
	for k, v := range want {
		if bands[k] != v.(float64) {
			t.Fatalf("band %s: %v vs %v", k, bands[k], v)
		}
	}
	if m := mustModel(t, "gpt2"); m.Family() != "gpt" {
		t.Fatalf("family %q", m.Family())
	}
}

// Text the C library cannot be handed as is: refused with the binding's *Error.
func TestRefusedInput(t *testing.T) {
	var e *memest.Error
	good := []byte(`{"mode": "model_states", "model": "llama-2-7b"}`)
	if _, err := memest.RequestJSON(good); err != nil {
		t.Fatal(err)
	}
	_, err := memest.RequestJSON(append(append([]byte{}, good...), []byte("\x00 lost")...))
	if !errors.As(err, &e) || e.Code != "parse_error" || !errors.Is(err, memest.ErrParse) || e.Field != "" {
		t.Fatalf("NUL byte: %v", err)
	}
	if _, err := memest.ModelFromConfigJSON([]byte("{}\x00")); !errors.Is(err, memest.ErrParse) {
		t.Fatalf("NUL byte in a config: %v", err)
	}
	if _, err := memest.ModelPreset("gpt2\x00x"); !errors.Is(err, memest.ErrUnknownPreset) {
		t.Fatalf("NUL byte in a preset id: %v", err)
	}
	for _, v := range []float64{math.NaN(), math.Inf(1)} {
		_, err = memest.Request(map[string]any{"mode": "model_states", "model": map[string]any{"num_parameters": v}})
		if !errors.Is(err, memest.ErrParse) {
			t.Fatalf("%v: %v", v, err)
		}
	}
	_, err = memest.Request(map[string]any{"mode": "model_states", "model": make(chan int)})
	if !errors.Is(err, memest.ErrWrongType) {
		t.Fatalf("a channel: %v", err)
	}
	// strict JSON: null refused with the field named, duplicate keys and 1e999 are parse errors
	_, err = memest.Request(map[string]any{"mode": "pretrain", "model": "gpt2", "gpu": "a100-40gb",
		"training": map[string]any{"recompute": nil}})
	if !errors.As(err, &e) || e.Code != "wrong_type" || e.Field != "training.recompute" {
		t.Fatalf("null: %v", err)
	}
	for _, text := range []string{`{"mode": "model_states", "model": "gpt2", "model": "gpt2"}`,
		`{"mode": "model_states", "model": {"num_parameters": 1e999}}`} {
		if _, err := memest.RequestJSON([]byte(text)); !errors.Is(err, memest.ErrParse) {
			t.Fatalf("%s: %v", text, err)
		}
	}
}

// The search pins training.recompute and training.micro_batch.
func TestSearchPinsTraining(t *testing.T) {
	resp, err := memest.Request(map[string]any{"mode": "search", "model": "llama-3.1-8b", "gpu": "a100-40gb",
		"parallel": map[string]any{"gpus": 8},
		"training": map[string]any{"seq_len": 8192, "global_batch": 1024, "recompute": "full", "micro_batch": 2}})
	if err != nil {
		t.Fatal(err)
	}
	results := resp["results"].([]any)
	if len(results) == 0 {
		t.Fatal("no layout ranked")
	}
	for _, r := range results {
		l := r.(map[string]any)["layout"].(map[string]any)
		if l["recompute"] != "full" || l["micro_batch"].(float64) != 2 {
			t.Fatalf("layout %v", l)
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
	for i, o := range choice.Options {
		if o.Method != memest.EnumNames(memest.EnumFinetuneMethod)[i] {
			t.Fatalf("option %d is %s", i, o.Method)
		}
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

// Mixtral 8x7B as Megatron-LM's example runs it: TP1, PP4, EP8 on 32 GPUs (edp 1); 8 MoE
// layers per stage, 8 experts of 3*4096*14336 each over ep*etp = 8 GPUs.
func TestPretrainExpertParallel(t *testing.T) {
	r := memest.NewPretrainRequest(mustModel(t, "mixtral-8x7b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.TP, r.PP, r.EP, r.SeqLen = 32, 1, 4, 8, 4096
	res, err := memest.Pretrain(r)
	if err != nil {
		t.Fatal(err)
	}
	if res.EP != 8 || res.ETP != 1 || res.EDP != 1 {
		t.Fatalf("ep/etp/edp = %d/%d/%d", res.EP, res.ETP, res.EDP)
	}
	if res.Stages[0].MoeLayers != 8 || res.Stages[0].ExpertParameters != 8*3*4096*14336 {
		t.Fatalf("stage 0 experts: %d layers, %g parameters", res.Stages[0].MoeLayers, res.Stages[0].ExpertParameters)
	}
	if res.Verdict == "oom" {
		t.Fatalf("the published layout is predicted not to fit")
	}
	r.EP = 3
	if _, err := memest.Pretrain(r); err == nil {
		t.Fatal("ep 3 does not divide 8 experts: expected an error")
	}
}

// The request fields are the library's registry: the recompute row's choices are the
// recompute enumeration, the Liger-Kernel row a boolean defaulting to false.
func TestRequestFieldsAreTheLibraryRegistry(t *testing.T) {
	rows, err := memest.RequestFields()
	if err != nil {
		t.Fatal(err)
	}
	byPath := map[string]map[string]any{}
	for _, r := range rows {
		byPath[r["path"].(string)] = r
	}
	if len(byPath) != len(rows) || len(rows) < 40 {
		t.Fatalf("%d rows, %d paths", len(rows), len(byPath))
	}
	rc := byPath["training.recompute"]
	choices := rc["choices"].([]any)
	names := memest.EnumNames(memest.EnumRecompute)
	if rc["default"] != "none" || len(choices) != len(names) {
		t.Fatalf("recompute row %v", rc)
	}
	for i := range names {
		if choices[i].(string) != names[i] {
			t.Fatalf("choice %d: %v vs %q", i, choices[i], names[i])
		}
	}
	liger := byPath["training.use_liger_kernel"]
	if liger["kind"] != "boolean" || liger["default"] != false || liger["cli"] != "--use-liger-kernel" {
		t.Fatalf("liger row %v", liger)
	}
}
