// Package memest is the Go binding of libmemest (memest.h): per-GPU memory estimates for LLM
// training, as a Go scheduler would call it. Every number comes from the C library; this package
// converts structs and turns a failed status into an *Error that names the request field.
//
// Build: cgo finds the library with pkg-config (memest.pc, installed by `cmake --install`):
//
//	PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig go build ./...   (and LD_LIBRARY_PATH=$PREFIX/lib to run)
package memest

/*
#cgo pkg-config: memest
#include <stdlib.h>
#include <memest/memest.h>
*/
import "C"

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"unsafe"
)

// Error is a request the library refused: Code is memest_status_name ("invalid_argument"),
// Field the request field at fault ("parallel.tp", "" when not about one field).
type Error struct {
	Status  int
	Code    string
	Field   string
	Message string
}

func (e *Error) Error() string { return "memest: " + e.Code + ": " + e.Message }

// Is makes errors.Is(err, memest.ErrInvalidArgument) match on the status code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Status == e.Status
}

func sentinel(status C.memest_status) *Error {
	return &Error{Status: int(status), Code: C.GoString(C.memest_status_name(status))}
}

// Sentinels for errors.Is, one per memest_status: the numbers are the header's, the codes the
// library's names for them (memest_status_name). StatusError finds them by number; the tests
// check that they cover the library's status table.
var (
	ErrInvalidArgument = sentinel(C.MEMEST_ERR_INVALID_ARGUMENT)
	ErrMissingField    = sentinel(C.MEMEST_ERR_MISSING_FIELD)
	ErrWrongType       = sentinel(C.MEMEST_ERR_TYPE)
	ErrParse           = sentinel(C.MEMEST_ERR_PARSE)
	ErrUnknownPreset   = sentinel(C.MEMEST_ERR_UNKNOWN_PRESET)
	ErrUnknownField    = sentinel(C.MEMEST_ERR_UNKNOWN_FIELD)
	ErrUnsupported     = sentinel(C.MEMEST_ERR_UNSUPPORTED)
	ErrOverflow        = sentinel(C.MEMEST_ERR_OVERFLOW)
	ErrStructSize      = sentinel(C.MEMEST_ERR_STRUCT_SIZE)
	ErrNullPointer     = sentinel(C.MEMEST_ERR_NULL_POINTER)
	ErrOutOfRange      = sentinel(C.MEMEST_ERR_OUT_OF_RANGE)
	ErrNoMemory        = sentinel(C.MEMEST_ERR_NO_MEMORY)
	ErrInternal        = sentinel(C.MEMEST_ERR_INTERNAL)
)

var sentinels = []*Error{ErrInvalidArgument, ErrMissingField, ErrWrongType, ErrParse,
	ErrUnknownPreset, ErrUnknownField, ErrUnsupported, ErrOverflow, ErrStructSize, ErrNullPointer,
	ErrOutOfRange, ErrNoMemory, ErrInternal}

// StatusError is the sentinel of a memest_status (for errors.Is), or nil when there is none.
func StatusError(status int) *Error {
	for _, e := range sentinels {
		if e.Status == status {
			return e
		}
	}
	return nil
}

// ownError is an *Error of this binding's own, for input it cannot hand to the library.
func ownError(sentinel *Error, field, message string) *Error {
	return &Error{Status: sentinel.Status, Code: sentinel.Code, Field: field, Message: message}
}

// check turns a status into an *Error with this thread's last error. Callers hold the OS thread
// (runtime.LockOSThread) from the C call to here: the last error is thread-local.
func check(status C.memest_status) error {
	if status == C.MEMEST_OK {
		return nil
	}
	return &Error{
		Status:  int(status),
		Code:    C.GoString(C.memest_status_name(status)),
		Field:   C.GoString(C.memest_last_error_field()),
		Message: C.GoString(C.memest_last_error()),
	}
}

// call runs f on a locked OS thread so that a failure's last error is read on its own thread.
func call(f func() C.memest_status) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	return check(f())
}

// Version is the C library's version string (memest_version_string).
func Version() string { return C.GoString(C.memest_version_string()) }

// VersionNumber is MAJOR*10000 + MINOR*100 + PATCH (memest_version_number).
func VersionNumber() int { return int(C.memest_version_number()) }

// StatusName is memest_status_name.
func StatusName(status int) string { return C.GoString(C.memest_status_name(C.memest_status(status))) }

// RequestFields lists the pretraining request's plain fields from the library's field
// registry (the JSON "fields" mode): each a map with "path", "kind", "default", "min"/"max" or
// "choices", "cli" and "doc".
func RequestFields() ([]map[string]any, error) {
	resp, err := Request(map[string]any{"mode": "fields"})
	if err != nil {
		return nil, err
	}
	rows, _ := resp["fields"].([]any)
	out := make([]map[string]any, 0, len(rows))
	for _, row := range rows {
		if m, ok := row.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, nil
}

// ---- enumerations -------------------------------------------------------

// Enum names one of the library's enumerations (memest_enum).
type Enum int

// The enumerations, by the keys of the JSON "enums" mode.
const (
	EnumStatus          = Enum(C.MEMEST_ENUM_STATUS)
	EnumFamily          = Enum(C.MEMEST_ENUM_FAMILY)
	EnumVerdict         = Enum(C.MEMEST_ENUM_VERDICT)
	EnumRecompute       = Enum(C.MEMEST_ENUM_RECOMPUTE)
	EnumActivationModel = Enum(C.MEMEST_ENUM_ACTIVATION_MODEL)
	EnumPruneReason     = Enum(C.MEMEST_ENUM_PRUNE_REASON)
	EnumFinetuneMethod  = Enum(C.MEMEST_ENUM_FINETUNE_METHOD)
	EnumFramework       = Enum(C.MEMEST_ENUM_FRAMEWORK)
	EnumLoss            = Enum(C.MEMEST_ENUM_LOSS)
	EnumOptimizer       = Enum(C.MEMEST_ENUM_OPTIMIZER)
	EnumAdapter         = Enum(C.MEMEST_ENUM_ADAPTER)
	EnumLoraTarget      = Enum(C.MEMEST_ENUM_LORA_TARGET)
	EnumCompile         = Enum(C.MEMEST_ENUM_COMPILE)
	EnumOverlap         = Enum(C.MEMEST_ENUM_OVERLAP)          // 1.5: "dp", "tp", "pp", "ep"
	EnumStepPart        = Enum(C.MEMEST_ENUM_STEP_PART)        // 1.5: "compute", "recompute", ...
	EnumMoeDispatcher   = Enum(C.MEMEST_ENUM_MOE_DISPATCHER)   // 1.5: "alltoall", "deepep"
	EnumAttentionKernel = Enum(C.MEMEST_ENUM_ATTENTION_KERNEL) // 1.5: "auto", "flash2", "fused"
	EnumRecomputeModule = Enum(C.MEMEST_ENUM_RECOMPUTE_MODULE) // 1.11: "core_attn", "moe_act", ...
	EnumMasterWeights   = Enum(C.MEMEST_ENUM_MASTER_WEIGHTS)   // 1.15: "auto", "fp32", ...
)

// EnumNames lists an enumeration's names by value, from the library's table
// (memest_enum_count, memest_enum_name): the names JSON requests and responses use.
func EnumNames(which Enum) []string {
	n := int(C.memest_enum_count(C.memest_enum(which)))
	names := make([]string, 0, n)
	for v := 0; v < n; v++ {
		names = append(names, C.GoString(C.memest_enum_name(C.memest_enum(which), C.int32_t(v))))
	}
	return names
}

// EnumValue is the value named `name` in an enumeration, or -1 (memest_enum_value).
func EnumValue(which Enum, name string) int {
	if strings.IndexByte(name, 0) >= 0 {
		return -1
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	return int(C.memest_enum_value(C.memest_enum(which), cname))
}

// VerdictBands maps each bounded verdict band to its upper bound as a fraction of capacity
// ({"fits": 0.8, "tight": 1.0}; memest_verdict_limit). Above the last, the verdict is "oom".
func VerdictBands() map[string]float64 {
	bands := map[string]float64{}
	for v, name := range EnumNames(EnumVerdict) {
		if limit := float64(C.memest_verdict_limit(C.memest_verdict(v))); limit > 0 {
			bands[name] = limit
		}
	}
	return bands
}

// ---- the JSON entry point -----------------------------------------------

// RequestJSON answers a JSON request text (every mode: pretrain, model_states, finetune, search,
// enums, ...) with memest_request_json and returns the response text, or an *Error. Text with a
// NUL byte is refused as a parse error (the C string would end there).
func RequestJSON(request []byte) ([]byte, error) {
	if i := bytes.IndexByte(request, 0); i >= 0 {
		return nil, ownError(ErrParse, "", fmt.Sprintf(
			"request is not valid JSON: a NUL byte at offset %d (a C string ends there)", i))
	}
	creq := C.CString(string(request))
	defer C.free(unsafe.Pointer(creq))
	var resp *C.char
	err := call(func() C.memest_status { return C.memest_request_json(creq, &resp) })
	defer C.memest_string_free(resp)
	if err != nil {
		return nil, err
	}
	return []byte(C.GoString(resp)), nil
}

// Request marshals req (a map or struct in the JSON request format) and returns the decoded
// response, or an *Error. A value JSON cannot hold is an *Error too: NaN and infinities a parse
// error (the library refuses numbers past a double's range), values of no JSON type wrong_type.
// A nil field marshals to null, which the library refuses: leave the key out for its default.
func Request(req any) (map[string]any, error) {
	text, err := json.Marshal(req)
	if err != nil {
		var value *json.UnsupportedValueError
		if errors.As(err, &value) {
			return nil, ownError(ErrParse, "", "request is not valid JSON: "+err.Error())
		}
		return nil, ownError(ErrWrongType, "", "request is not valid JSON: "+err.Error())
	}
	out, err := RequestJSON(text)
	if err != nil {
		return nil, err
	}
	var resp map[string]any
	if err := json.Unmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("memest: decoding the response: %w", err)
	}
	return resp, nil
}

// ---- models and GPUs ----------------------------------------------------

// Model is a model's dimensions (memest_model).
type Model struct{ c C.memest_model }

func newModel() *Model {
	m := &Model{}
	C.memest_model_init(&m.c, C.uint32_t(unsafe.Sizeof(m.c)))
	return m
}

// ModelPreset looks up a built-in model ("llama-3.1-8b").
func ModelPreset(id string) (*Model, error) {
	if strings.IndexByte(id, 0) >= 0 {
		return nil, ownError(ErrUnknownPreset, "model", fmt.Sprintf("model: no preset %q (a NUL byte)", id))
	}
	m := newModel()
	cid := C.CString(id)
	defer C.free(unsafe.Pointer(cid))
	if err := call(func() C.memest_status { return C.memest_model_from_preset(cid, &m.c) }); err != nil {
		return nil, err
	}
	return m, nil
}

// ModelFromConfigJSON reads a Hugging Face config.json text.
func ModelFromConfigJSON(config []byte) (*Model, error) {
	if i := bytes.IndexByte(config, 0); i >= 0 {
		return nil, ownError(ErrParse, "", fmt.Sprintf(
			"config_json is not valid JSON: a NUL byte at offset %d (a C string ends there)", i))
	}
	m := newModel()
	ctext := C.CString(string(config))
	defer C.free(unsafe.Pointer(ctext))
	err := call(func() C.memest_status {
		if s := C.memest_model_from_config_json(ctext, &m.c); s != C.MEMEST_OK {
			return s
		}
		return C.memest_model_validate(&m.c)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// BareModel is a bare parameter count, accepted by ModelStates only.
func BareModel(numParameters float64) *Model {
	m := newModel()
	m.c.num_parameters = C.double(numParameters)
	return m
}

// Name is the model's display name.
func (m *Model) Name() string { return C.GoString(&m.c.name[0]) }

// HiddenSize is h; NumLayers is L.
func (m *Model) HiddenSize() int64 { return int64(m.c.hidden_size) }
func (m *Model) NumLayers() int64  { return int64(m.c.num_hidden_layers) }

// FinalLogitSoftcapping is the cap of logits = cap * tanh(logits / cap) before the loss (Gemma 2:
// 30), 0 when the model has none (1.6; memest_model.final_logit_softcapping).
func (m *Model) FinalLogitSoftcapping() float64 { return float64(m.c.final_logit_softcapping) }

// MixerPattern and MLPPattern are a hybrid model's layers, one character each (1.8;
// memest_model.mixer_pattern, mlp_pattern): mixers 'A' attention, 'M' Mamba-2, 'G' gated
// DeltaNet, 'P' attention beside Mamba-2, '-' none, and since 1.13 'S' Mamba-1 (Jamba) and 'K'
// Kimi Delta Attention (Kimi Linear); MLPs 'D' dense, 'E' experts, '-' none.
// Both "" for a model of attention layers only.
func (m *Model) MixerPattern() string { return C.GoString(&m.c.mixer_pattern[0]) }
func (m *Model) MLPPattern() string   { return C.GoString(&m.c.mlp_pattern[0]) }

// MambaHeads and MambaHeadDim are the Mamba-2 mixer's heads and head width (1.8;
// memest_model.mamba_num_heads, mamba_head_dim), LinearValueHeads the gated DeltaNet's value
// heads (linear_value_heads): 0 without such layers.
func (m *Model) MambaHeads() int64       { return int64(m.c.mamba_num_heads) }
func (m *Model) MambaHeadDim() int64     { return int64(m.c.mamba_head_dim) }
func (m *Model) LinearValueHeads() int64 { return int64(m.c.linear_value_heads) }

// MambaDtRank is the Mamba-1 mixer's dt_rank (1.13; memest_model.mamba_dt_rank): 0 without 'S'
// layers. A Mamba-1 model holds its d_inner channels as MambaHeads of MambaHeadDim 1.
func (m *Model) MambaDtRank() int64 { return int64(m.c.mamba_dt_rank) }

// NumParameters counts the model's parameters (memest_model_parameter_count).
func (m *Model) NumParameters() (float64, error) {
	if m.c.hidden_size == 0 {
		return float64(m.c.num_parameters), nil
	}
	var c C.memest_param_count
	c.struct_size = C.uint32_t(unsafe.Sizeof(c))
	if err := call(func() C.memest_status { return C.memest_model_parameter_count(&m.c, &c) }); err != nil {
		return 0, err
	}
	return float64(c.total), nil
}

// Family is the model's architecture family, by the library's name ("llama", "gpt").
func (m *Model) Family() string {
	return C.GoString(C.memest_enum_name(C.MEMEST_ENUM_FAMILY, m.c.family))
}

// cModel is a copy of m in C memory, for a request to point at (cgo lets C memory hold no Go
// pointer, and a request passed to C may hold only C pointers). Free it with C.free.
func cModel(m *Model) *C.memest_model {
	if m == nil {
		return nil
	}
	p := (*C.memest_model)(C.malloc(C.size_t(unsafe.Sizeof(m.c))))
	*p = m.c
	return p
}

// GPU is a GPU kind (memest_gpu).
type GPU struct{ c C.memest_gpu }

func newGPU() *GPU {
	g := &GPU{}
	C.memest_gpu_init(&g.c, C.uint32_t(unsafe.Sizeof(g.c)))
	return g
}

// GPUPreset looks up a built-in GPU ("a100-40gb").
func GPUPreset(id string) (*GPU, error) {
	if strings.IndexByte(id, 0) >= 0 {
		return nil, ownError(ErrUnknownPreset, "gpu", fmt.Sprintf("gpu: no preset %q (a NUL byte)", id))
	}
	g := newGPU()
	cid := C.CString(id)
	defer C.free(unsafe.Pointer(cid))
	if err := call(func() C.memest_status { return C.memest_gpu_from_preset(cid, &g.c) }); err != nil {
		return nil, err
	}
	return g, nil
}

// CustomGPU is a GPU given by its capacity; the rest keeps the library's defaults.
func CustomGPU(memoryBytes float64, gpusPerNode int) *GPU {
	g := newGPU()
	g.c.memory_bytes = C.double(memoryBytes)
	g.c.gpus_per_node = C.int32_t(gpusPerNode)
	return g
}

func (g *GPU) Name() string         { return C.GoString(&g.c.name[0]) }
func (g *GPU) MemoryBytes() float64 { return float64(g.c.memory_bytes) }

// PCIeGBps is the host <-> GPU bandwidth offload transfers use (GB/s per GPU); FP8 is 1 when
// the GPU has fp8 tensor cores (a training.fp8 request needs it), 0 when not.
func (g *GPU) PCIeGBps() float64 { return float64(g.c.pcie_gbps) }
func (g *GPU) FP8() float64      { return float64(g.c.fp8) }

// SetPCIeGBps and SetFP8 change them (a custom GPU; the library checks the values).
func (g *GPU) SetPCIeGBps(gbps float64) { g.c.pcie_gbps = C.double(gbps) }
func (g *GPU) SetFP8(fp8 float64)       { g.c.fp8 = C.double(fp8) }

// FP4 is 1 when the GPU trains in NVFP4 (1.9: Transformer Engine's NVFP4BlockScaling on B200
// and GB200; a PretrainRequest.FP4 needs it), 0 when not (the default, custom GPUs too);
// PeakFP4TFLOPS is its dense FP4 Tensor Core peak (0: twice the FP8 peak when FP4 is 1).
func (g *GPU) FP4() float64           { return float64(g.c.fp4) }
func (g *GPU) PeakFP4TFLOPS() float64 { return float64(g.c.peak_fp4_tflops) }

// SetFP4 and SetPeakFP4TFLOPS change them (a custom GPU; the library checks the values: FP4
// other than 0 or 1 is refused naming "gpu.fp4").
func (g *GPU) SetFP4(fp4 float64)              { g.c.fp4 = C.double(fp4) }
func (g *GPU) SetPeakFP4TFLOPS(tflops float64) { g.c.peak_fp4_tflops = C.double(tflops) }

// cGPU is a copy of g in C memory (see cModel), or nil. Free it with C.free.
func cGPU(g *GPU) *C.memest_gpu {
	if g == nil {
		return nil
	}
	p := (*C.memest_gpu)(C.malloc(C.size_t(unsafe.Sizeof(g.c))))
	*p = g.c
	return p
}

// ModelPresets and GPUPresets list the built-in ids.
func ModelPresets() []string {
	ids := []string{}
	for i := C.uint32_t(0); i < C.memest_model_preset_count(); i++ {
		ids = append(ids, C.GoString(C.memest_model_preset_id(i)))
	}
	return ids
}

func GPUPresets() []string {
	ids := []string{}
	for i := C.uint32_t(0); i < C.memest_gpu_preset_count(); i++ {
		ids = append(ids, C.GoString(C.memest_gpu_preset_id(i)))
	}
	return ids
}

func verdictName(v C.int32_t) string { return C.GoString(C.memest_verdict_name(C.memest_verdict(v))) }

func boolInt(b bool) C.int32_t {
	if b {
		return 1
	}
	return 0
}
