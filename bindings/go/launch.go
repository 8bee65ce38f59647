package memest

import (
	"fmt"
	"os"
	"unicode/utf8"
)

// ---- launch files: the library's modes "import" and "emit" ----------------

// ImportOptions are what launch files do not say, given beside them (the JSON fields of an
// import request; the CLI's flags). Zero values are not sent, so the library's behaviour applies.
type ImportOptions struct {
	// GPU is a preset id ("h100-80gb") or a GPU object (map[string]any{"memory_gib": 40});
	// launch files never name the GPU, so an import without one fails naming "gpu".
	GPU any
	// GPUs is the number of GPUs (0: the files' own, if they fix it).
	GPUs int
	// Model is a preset id, a Hugging Face id or a config.json object (map), over what the
	// files name (nil: the files').
	Model any
	// SeqLen is the sequence length (0: the files').
	SeqLen int
	// Format is "auto" (the default, for "") or one of "torchtitan", "megatron", "deepspeed",
	// "hf", "torchtune", "axolotl", "llama-factory", "accelerate".
	Format string
	// Set overrides request fields, as a nested object: {"parallel": {"tp": 2}}.
	Set map[string]any
	// Estimate asks for the pretrain estimate of the request too (ImportResult.Estimate).
	Estimate bool
	// HFHome is the Hugging Face hub cache the library looks for config.json files in
	// ("": HF_HUB_CACHE, HF_HOME/hub or ~/.cache/huggingface/hub).
	HFHome string
}

// ImportFile is one file of an import, with the format it was read as.
type ImportFile struct {
	Name   string
	Format string
}

// Origin says where a request field's value came from: From is "file" (File, Line, Key),
// "default" (Framework, Default: the framework's default, DefinedIn: where it is defined),
// "flag" (Flag: the option given beside the files), "derived" (Rule) or "unresolved".
// Fields holds every key as the library wrote it (nested ones included).
type Origin struct {
	From      string
	File      string
	Line      int
	Key       string
	Framework string
	Default   string
	DefinedIn string
	Flag      string
	Rule      string
	Resolved  string
	Fields    map[string]any
}

// ImportWarning is a setting that changes memory but the request cannot represent.
type ImportWarning struct {
	File    string
	Line    int
	Key     string
	Message string
}

// ImportResult is one run's launch files read into a pretrain request.
type ImportResult struct {
	Format   string            // the run's main format ("torchtitan", ...)
	Files    []ImportFile      // each file, named as given, with its format
	Request  map[string]any    // a complete "pretrain" request, for Request()
	Origins  map[string]Origin // request field path ("parallel.tp") -> its origin
	Warnings []ImportWarning   // in the library's order
	Estimate map[string]any    // the pretrain response (ImportOptions.Estimate), else nil
	Response map[string]any    // the whole response
}

// EmitSetting is one flag or key of an emitted launch configuration; Section is the TOML
// table or YAML block it belongs in ("" for flags).
type EmitSetting struct {
	Key     string
	Value   any
	Section string
}

// EmitResult is a layout in a training stack's own terms.
type EmitResult struct {
	Format   string        // "megatron", "torchtitan", "deepspeed", "accelerate"
	Settings []EmitSetting // in order
	Text     string        // what to paste into the launch file
}

// Value is the value of the setting named key (a Megatron flag, a TOML key), and whether
// there is one.
func (e *EmitResult) Value(key string) (any, bool) {
	for _, s := range e.Settings {
		if s.Key == key {
			return s.Value, true
		}
	}
	return nil, false
}

func str(m map[string]any, key string) string {
	s, _ := m[key].(string)
	return s
}

func integer(m map[string]any, key string) int {
	f, _ := m[key].(float64)
	return int(f)
}

func object(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// launchFiles reads each path into {"name", "text"}, named as given. A file that cannot be
// read is an invalid_argument, one that is not UTF-8 text a parse_error, both naming
// "files[i]" (the library names a file holding NUL bytes so).
func launchFiles(paths []string) ([]map[string]any, error) {
	if len(paths) == 0 {
		return nil, ownError(ErrMissingField, "files", "files: give at least one launch file")
	}
	files := make([]map[string]any, 0, len(paths))
	for i, path := range paths {
		field := fmt.Sprintf("files[%d]", i)
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, ownError(ErrInvalidArgument, field, fmt.Sprintf("%s: cannot read %q: %v", field, path, err))
		}
		if !utf8.Valid(data) {
			return nil, ownError(ErrParse, field, fmt.Sprintf("%s: %s is binary (not UTF-8 text), not a launch file", field, path))
		}
		files = append(files, map[string]any{"name": path, "text": string(data)})
	}
	return files, nil
}

// ImportLaunch reads one run's launch files (a torchtitan TOML, a Megatron launch script, a
// DeepSpeed JSON with its launcher, a torchtune / axolotl / LLaMA-Factory / accelerate YAML:
// the library's mode "import") into the pretrain request they describe, each value with its
// origin. Each file is named as its path is given. Errors are *Error naming the field: "gpu"
// when no GPU is given, "files[i]" for a file that cannot be read or is binary, the request's
// fields (with their origin in the message) for values the library refuses.
func ImportLaunch(paths []string, opts ImportOptions) (*ImportResult, error) {
	files, err := launchFiles(paths)
	if err != nil {
		return nil, err
	}
	req := map[string]any{"mode": "import", "files": files, "format": "auto"}
	if opts.Format != "" {
		req["format"] = opts.Format
	}
	if opts.GPU != nil {
		req["gpu"] = opts.GPU
	}
	if opts.GPUs != 0 {
		req["gpus"] = opts.GPUs
	}
	if opts.Model != nil {
		req["model"] = opts.Model
	}
	if opts.SeqLen != 0 {
		req["seq_len"] = opts.SeqLen
	}
	if opts.Set != nil {
		req["set"] = opts.Set
	}
	if opts.HFHome != "" {
		req["hf_home"] = opts.HFHome
	}
	if opts.Estimate {
		req["estimate"] = true
	}
	resp, err := Request(req)
	if err != nil {
		return nil, err
	}
	out := &ImportResult{Format: str(resp, "format"), Request: object(resp["request"]),
		Origins: map[string]Origin{}, Estimate: object(resp["estimate"]), Response: resp}
	files2, _ := resp["files"].([]any)
	for _, f := range files2 {
		m := object(f)
		out.Files = append(out.Files, ImportFile{Name: str(m, "name"), Format: str(m, "format")})
	}
	for field, o := range object(resp["origins"]) {
		m := object(o)
		out.Origins[field] = Origin{From: str(m, "from"), File: str(m, "file"), Line: integer(m, "line"),
			Key: str(m, "key"), Framework: str(m, "framework"), Default: str(m, "default"),
			DefinedIn: str(m, "defined_in"), Flag: str(m, "flag"), Rule: str(m, "rule"),
			Resolved: str(m, "resolved"), Fields: m}
	}
	warnings, _ := resp["warnings"].([]any)
	for _, w := range warnings {
		m := object(w)
		out.Warnings = append(out.Warnings, ImportWarning{File: str(m, "file"), Line: integer(m, "line"),
			Key: str(m, "key"), Message: str(m, "message")})
	}
	return out, nil
}

// EmitResultFrom reads an emitted configuration out of a response: an "emit" response, or a
// search response's "launch" (search.emit); nil when there is none.
func EmitResultFrom(resp map[string]any) *EmitResult {
	if resp == nil {
		return nil
	}
	if str(resp, "mode") != "emit" {
		resp = object(resp["launch"])
		if resp == nil {
			return nil
		}
	}
	out := &EmitResult{Format: str(resp, "format"), Text: str(resp, "text")}
	settings, _ := resp["settings"].([]any)
	for _, s := range settings {
		m := object(s)
		out.Settings = append(out.Settings, EmitSetting{Key: str(m, "key"), Value: m["value"], Section: str(m, "section")})
	}
	return out
}

// EmitLaunch writes the layout of a pretrain request (a map or struct in the JSON request
// format, e.g. ImportResult.Request) in a training stack's own terms (the library's mode
// "emit"): format "megatron" (launch flags), "torchtitan" (TOML keys), "deepspeed" (a
// DeepSpeed JSON) or "accelerate" (an accelerate config). Numbers in Value are float64 (JSON).
func EmitLaunch(request any, format string) (*EmitResult, error) {
	resp, err := Request(map[string]any{"mode": "emit", "format": format, "request": request})
	if err != nil {
		return nil, err
	}
	return EmitResultFrom(resp), nil
}
