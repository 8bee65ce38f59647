package memest_test

import (
	"errors"
	"testing"

	memest "memest/bindings/go"
)

// What torch.compile compiles (memest_compile) through the typed API. Llama-3.1-8B on one H100
// under plain PyTorch, s = 2048, b = 1: the unfused loss on 2048 x 128256 = 262668288 bf16 logits
// keeps 12 B/logit eager (3152019456 bytes) and 4 compiled (1050673152) at its backward peak.
func TestCompileParts(t *testing.T) {
	names := memest.EnumNames(memest.EnumCompile)
	for v, c := range []int{memest.CompileNone, memest.CompileAll, memest.CompileModel, memest.CompileLoss} {
		if c != v || memest.EnumValue(memest.EnumCompile, names[v]) != c {
			t.Fatalf("compile constant %d vs the library's %v", c, names)
		}
	}
	if names[memest.CompileModel] != "model" || len(names) != memest.CompileLoss+1 {
		t.Fatalf("compile names %v", names)
	}
	const eager, compiled = 3152019456.0, 1050673152.0
	cases := []struct {
		compile bool
		parts   int
		loss    float64
	}{
		{false, memest.CompileNone, eager},
		{true, memest.CompileNone, compiled}, // Compile alone is CompileAll
		{false, memest.CompileAll, compiled},
		{false, memest.CompileModel, eager},
		{false, memest.CompileLoss, compiled},
	}
	for i, c := range cases {
		r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
		r.GPUs, r.TP, r.PP, r.SeqLen, r.MicroBatch = 1, 1, 1, 2048, 1
		r.Framework, r.Compile, r.CompileParts = memest.FrameworkPyTorch, c.compile, c.parts
		res, err := memest.Pretrain(r)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if got := res.Stages[0].LossBytes; got != c.loss {
			t.Errorf("case %d: loss bytes %v, want %v", i, got, c.loss)
		}
	}
	for _, bad := range []int{-1, memest.CompileLoss + 1} {
		r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
		r.GPUs, r.TP, r.PP = 1, 1, 1
		r.Framework, r.CompileParts = memest.FrameworkPyTorch, bad
		_, err := memest.Pretrain(r)
		var e *memest.Error
		if !errors.As(err, &e) || e.Field != "training.compile" || !errors.Is(err, memest.ErrInvalidArgument) {
			t.Errorf("compile %d: %v", bad, err)
		}
	}
	r := memest.NewPretrainRequest(mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100-80gb"))
	r.GPUs, r.CompileParts = 8, memest.CompileModel // megatron runs eagerly
	_, err := memest.Pretrain(r)
	var e *memest.Error
	if !errors.As(err, &e) || e.Field != "training.compile" {
		t.Errorf("megatron with CompileModel: %v", err)
	}
}
