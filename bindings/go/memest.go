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
	"encoding/json"
	"fmt"
	"runtime"
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

// Sentinels for errors.Is, one per memest_status.
var (
	ErrInvalidArgument = &Error{Status: 1, Code: "invalid_argument"}
	ErrMissingField    = &Error{Status: 2, Code: "missing_field"}
	ErrWrongType       = &Error{Status: 3, Code: "wrong_type"}
	ErrParse           = &Error{Status: 4, Code: "parse_error"}
	ErrUnknownPreset   = &Error{Status: 5, Code: "unknown_preset"}
	ErrUnknownField    = &Error{Status: 6, Code: "unknown_field"}
	ErrUnsupported     = &Error{Status: 7, Code: "unsupported"}
	ErrOverflow        = &Error{Status: 8, Code: "overflow"}
	ErrStructSize      = &Error{Status: 9, Code: "struct_size"}
	ErrNullPointer     = &Error{Status: 10, Code: "null_pointer"}
	ErrOutOfRange      = &Error{Status: 11, Code: "out_of_range"}
	ErrNoMemory        = &Error{Status: 12, Code: "no_memory"}
	ErrInternal        = &Error{Status: 13, Code: "internal"}
)

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

// RequestJSON answers a JSON request text (every mode: pretrain, model_states, finetune, search,
// ...) with memest_request_json and returns the response text, or an *Error.
func RequestJSON(request []byte) ([]byte, error) {
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
// response, or an *Error.
func Request(req any) (map[string]any, error) {
	text, err := json.Marshal(req)
	if err != nil {
		return nil, err
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

// ModelPreset looks up a built-in model ("llama-3.1-8b").
func ModelPreset(id string) (*Model, error) {
	m := &Model{}
	cid := C.CString(id)
	defer C.free(unsafe.Pointer(cid))
	C.memest_model_init(&m.c)
	if err := call(func() C.memest_status { return C.memest_model_from_preset(cid, &m.c) }); err != nil {
		return nil, err
	}
	return m, nil
}

// ModelFromConfigJSON reads a Hugging Face config.json text.
func ModelFromConfigJSON(config []byte) (*Model, error) {
	m := &Model{}
	ctext := C.CString(string(config))
	defer C.free(unsafe.Pointer(ctext))
	C.memest_model_init(&m.c)
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
	m := &Model{}
	C.memest_model_init(&m.c)
	m.c.num_parameters = C.double(numParameters)
	return m
}

// Name is the model's display name.
func (m *Model) Name() string { return C.GoString(&m.c.name[0]) }

// HiddenSize is h; NumLayers is L.
func (m *Model) HiddenSize() int64 { return int64(m.c.hidden_size) }
func (m *Model) NumLayers() int64  { return int64(m.c.num_hidden_layers) }

// NumParameters counts the model's parameters (memest_model_parameter_count).
func (m *Model) NumParameters() (float64, error) {
	if m.c.hidden_size == 0 {
		return float64(m.c.num_parameters), nil
	}
	var c C.memest_param_count
	if err := call(func() C.memest_status { return C.memest_model_parameter_count(&m.c, &c) }); err != nil {
		return 0, err
	}
	return float64(c.total), nil
}

// GPU is a GPU kind (memest_gpu).
type GPU struct{ c C.memest_gpu }

// GPUPreset looks up a built-in GPU ("a100-40gb").
func GPUPreset(id string) (*GPU, error) {
	g := &GPU{}
	cid := C.CString(id)
	defer C.free(unsafe.Pointer(cid))
	C.memest_gpu_init(&g.c)
	if err := call(func() C.memest_status { return C.memest_gpu_from_preset(cid, &g.c) }); err != nil {
		return nil, err
	}
	return g, nil
}

// CustomGPU is a GPU given by its capacity; the rest keeps the library's defaults.
func CustomGPU(memoryBytes float64, gpusPerNode int) *GPU {
	g := &GPU{}
	C.memest_gpu_init(&g.c)
	g.c.memory_bytes = C.double(memoryBytes)
	g.c.gpus_per_node = C.int32_t(gpusPerNode)
	return g
}

func (g *GPU) Name() string         { return C.GoString(&g.c.name[0]) }
func (g *GPU) MemoryBytes() float64 { return float64(g.c.memory_bytes) }

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
