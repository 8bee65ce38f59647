package memest_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	memest "memest/bindings/go"
)

// Real launch files (tests/data/launch), from this package's directory.
var (
	titanToml = filepath.Join("..", "..", "tests", "data", "launch", "torchtitan", "llama3-8b-64xa100-op-sac", "llama3_8b.toml")
	qloraYml  = filepath.Join("..", "..", "tests", "data", "launch", "axolotl", "gemma2-9b-qlora", "qlora.yml")
)

func num(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var v any = m
	for _, p := range path {
		o, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("%v: no object at %s", path, p)
		}
		v = o[p]
	}
	return v
}

func TestImportTorchtitan(t *testing.T) {
	r, err := memest.ImportLaunch([]string{titanToml}, memest.ImportOptions{GPU: "a100-80gb", GPUs: 64})
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != "torchtitan" || len(r.Files) != 1 || r.Files[0] != (memest.ImportFile{Name: titanToml, Format: "torchtitan"}) {
		t.Fatalf("format %q files %+v", r.Format, r.Files)
	}
	want := map[string]any{"tp": 1.0, "pp": 1.0, "gpus": 64.0}
	for k, v := range want {
		if got := num(t, r.Request, "parallel", k); got != v {
			t.Errorf("parallel.%s = %v, want %v", k, got, v)
		}
	}
	training := map[string]any{"micro_batch": 1.0, "seq_len": 8192.0, "recompute": "op_selective", "framework": "fsdp"}
	for k, v := range training {
		if got := num(t, r.Request, "training", k); got != v {
			t.Errorf("training.%s = %v, want %v", k, got, v)
		}
	}
	o := r.Origins["training.seq_len"]
	if o.From != "file" || o.File != titanToml || o.Line != 33 || o.Key != "training.seq_len" {
		t.Errorf("origin of training.seq_len: %+v", o)
	}
	if g := r.Origins["gpu"]; g.From != "flag" || g.Flag == "" {
		t.Errorf("origin of gpu: %+v", g)
	}
	if r.Estimate != nil {
		t.Error("an estimate nobody asked for")
	}
	for _, w := range r.Warnings {
		if w.Message == "" {
			t.Errorf("warning without a message: %+v", w)
		}
	}
	// the request answers as it is
	resp, err := memest.Request(r.Request)
	if err != nil || resp["ok"] != true {
		t.Fatal(resp, err)
	}
}

func TestImportEstimateAndOverrides(t *testing.T) {
	r, err := memest.ImportLaunch([]string{titanToml}, memest.ImportOptions{GPU: "a100-80gb", GPUs: 64,
		SeqLen: 4096, Set: map[string]any{"parallel": map[string]any{"tp": 2}}, Estimate: true, Format: "torchtitan"})
	if err != nil {
		t.Fatal(err)
	}
	if num(t, r.Request, "parallel", "tp") != 2.0 || num(t, r.Request, "training", "seq_len") != 4096.0 {
		t.Fatalf("overrides not applied: %v", r.Request)
	}
	if r.Origins["parallel.tp"].From != "flag" || r.Origins["training.seq_len"].From != "flag" {
		t.Errorf("origins: %+v %+v", r.Origins["parallel.tp"], r.Origins["training.seq_len"])
	}
	if r.Estimate == nil || num(t, r.Estimate, "layout", "tp") != 2.0 {
		t.Fatalf("estimate: %v", r.Estimate)
	}
	direct, err := memest.Request(r.Request)
	if err != nil || !reflect.DeepEqual(direct, r.Estimate) {
		t.Errorf("the import's estimate differs from the request's: %v", err)
	}
}

func TestImportAxolotlQLoRA(t *testing.T) {
	r, err := memest.ImportLaunch([]string{qloraYml}, memest.ImportOptions{GPU: "l4-24gb", GPUs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Format != "axolotl" || num(t, r.Request, "training", "adapter", "type") != "qlora" {
		t.Fatalf("format %q request %v", r.Format, r.Request)
	}
}

func TestImportErrors(t *testing.T) {
	_, err := memest.ImportLaunch([]string{titanToml}, memest.ImportOptions{GPUs: 64})
	var e *memest.Error
	if !errors.As(err, &e) || e.Field != "gpu" || !errors.Is(err, memest.ErrMissingField) {
		t.Fatalf("no gpu: %v", err)
	}
	dir := t.TempDir()
	nul := filepath.Join(dir, "weights.toml") // UTF-8 with NUL bytes: the library refuses it
	blob := filepath.Join(dir, "model.bin")   // not UTF-8: refused before the library
	if os.WriteFile(nul, []byte("[job]\x00\x00\x01"), 0o644) != nil || os.WriteFile(blob, []byte{0xff, 0xfe, 0, 1, 0x80}, 0o644) != nil {
		t.Fatal("writing test files")
	}
	for _, files := range [][]string{{nul}, {blob, titanToml}} {
		_, err = memest.ImportLaunch(files, memest.ImportOptions{GPU: "a100-80gb", GPUs: 8})
		if !errors.As(err, &e) || e.Field != "files[0]" || !errors.Is(err, memest.ErrParse) || !strings.Contains(e.Message, "binary") {
			t.Errorf("%v: %v", files, err)
		}
	}
	_, err = memest.ImportLaunch([]string{titanToml, filepath.Join(dir, "missing.toml")}, memest.ImportOptions{GPU: "a100-80gb"})
	if !errors.As(err, &e) || e.Field != "files[1]" || !errors.Is(err, memest.ErrInvalidArgument) {
		t.Errorf("missing file: %v", err)
	}
	_, err = memest.ImportLaunch([]string{titanToml}, memest.ImportOptions{GPU: "a100-80gb", GPUs: 64, Format: "fairseq"})
	if !errors.As(err, &e) || e.Field != "format" {
		t.Errorf("unknown format: %v", err)
	}
}

func TestEmitMegatron(t *testing.T) {
	req := map[string]any{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 8, "tp": 2}, "training": map[string]any{"seq_len": 4096, "global_batch": 64}}
	e, err := memest.EmitLaunch(req, "megatron")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := e.Value("--tensor-model-parallel-size"); !ok || v != 2.0 || e.Format != "megatron" {
		t.Fatalf("--tensor-model-parallel-size = %v (%v), format %q", v, ok, e.Format)
	}
	if !strings.Contains(e.Text, "--tensor-model-parallel-size 2") {
		t.Errorf("text: %q", e.Text)
	}
	_, err = memest.EmitLaunch(req, "fairseq")
	var me *memest.Error
	if !errors.As(err, &me) || me.Field != "format" {
		t.Errorf("unknown format: %v", err)
	}
	// a search's best layout, emitted
	resp, err := memest.Request(map[string]any{"mode": "search", "model": "llama-3.1-8b", "gpu": "h100-80gb",
		"parallel": map[string]any{"gpus": 8}, "training": map[string]any{"seq_len": 4096, "global_batch": 64},
		"search": map[string]any{"top": 1, "emit": "megatron"}})
	if err != nil {
		t.Fatal(err)
	}
	launch := memest.EmitResultFrom(resp)
	best := resp["results"].([]any)[0].(map[string]any)["layout"].(map[string]any)
	if launch == nil {
		t.Fatal("no launch in the search response")
	}
	if v, _ := launch.Value("--tensor-model-parallel-size"); v != best["tp"] {
		t.Errorf("search launch %+v, best %v", launch, best)
	}
}
