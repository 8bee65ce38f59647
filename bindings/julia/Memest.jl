"""
    Memest

Julia bindings of libmemest (memest.h): `ccall` wrappers over the C API. Every number comes
from the C library; a refused request throws a `MemestError` with the status code name and the
request field.

    include("bindings/julia/Memest.jl"); using .Memest
    resp = Memest.request(\"\"\"{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "a100-40gb",
                               "parallel": {"gpus": 8, "tp": 4, "pp": 2}, "training": {"seq_len": 8192}}\"\"\")

Every field of the JSON request and response passes through `request` as the library spells it:
with 1.6, training.reduce_dtype / loss_parallel / autocast / fp8_all_gather / no_sync /
logits_held / adapter.quantize_lm_head, framework "fsdp1", optimizers "adamw_foreach" and
"paged_adamw_32bit", search.max_oom_probability, and the results' torch_max_memory_*_bytes,
nvidia_smi_bytes, peak_band_bytes, oom_probability and margin_bytes (names from `enums()`); with 1.7,
training.ddp (DDP around one GPU: true counts its buckets); with 1.8, hybrid models (a nemotron_h,
qwen3_next, falcon_h1, bamba, granitemoehybrid or mamba2 config.json as the request's model, its
text as it is, Python's bare Infinity included) and the response model's mixer_pattern and
mlp_pattern; with 1.9, training.loss_chunks (the chunks of the losses "chunked",
"chunked_lm_head" and "chunked_linear", echoed as the chunks in effect), training.fsdp_use_orig_params
(fsdp1 + LoRA: each block's FlatParameter mixes frozen weights and adapters), training.fp4
(NVFP4 linears under megatron on a GPU with fp4 = 1: B200, GB200), the gpu object's fp4 and
peak_fp4_tflops, and the preset "h100-pcie-80gb" (in `gpu_presets()`); with 1.11,
training.recompute_modules (Megatron-Core's recompute module names, `enum_names(ENUM_KINDS.recompute_module)`,
echoed as the modules in effect) and the fine-tuning response's peak_verdict beside its verdict;
with 1.12, training.use_liger_kernel (Liger-Kernel's fused RMSNorm and SwiGLU/GeGLU in the Hugging
Face blocks, echoed in every pretraining response's training block); with 1.15,
training.master_weights (the copy the optimizer updates, `enum_names(ENUM_KINDS.master_weights)`:
"auto", "fp32", "bf16", "fp16", "remainder", "none"; megatron and deepspeed) and
training.optimizer_state_dtype (the optimizer moments' dtype), the parts of a derived K (leave
training.optimizer_bytes out), both echoed as the values in effect.

Set `ENV["MEMEST_LIBRARY"]` to the path of libmemest.so before loading when it is not on the
loader's path. (Julia is not installed on memest's CI: bindings/julia/test/ drives exactly these
symbols, signatures and calling sequences from Python's ctypes, reading them from this file.)
"""
module Memest

export request, MemestError, version, model_presets, gpu_presets, enums, enum_names, verdict_bands,
       import_launch, emit_launch

const libmemest = get(ENV, "MEMEST_LIBRARY", "libmemest")

"""A request libmemest refused: `code` is memest_status_name ("invalid_argument"), `field` the
request field at fault ("parallel.tp", "" when not about one field)."""
struct MemestError <: Exception
    status::Int
    code::String
    field::String
    message::String
end

Base.showerror(io::IO, e::MemestError) =
    print(io, "MemestError(", e.code, ", field \"", e.field, "\"): ", e.message)

"""The C library's version string, e.g. "1.2.0"."""
version() = unsafe_string(ccall((:memest_version_string, libmemest), Cstring, ()))

"""MAJOR*10000 + MINOR*100 + PATCH."""
version_number() = Int(ccall((:memest_version_number, libmemest), UInt32, ()))

"""The lower-case name of a status code."""
status_name(status::Integer) =
    unsafe_string(ccall((:memest_status_name, libmemest), Cstring, (Cint,), status))

"""The library's enumerations (memest_enum values of memest.h), by the keys of the JSON
"enums" mode. Their names come from the library: `enum_names`, `enums`."""
const ENUM_KINDS = (status = 0, family = 1, verdict = 2, recompute = 3, activation_model = 4,
                    prune_reason = 5, finetune_method = 6, framework = 7, loss = 8,
                    optimizer = 9, adapter = 10, lora_target = 11, compile = 12, overlap = 13,
                    step_part = 14, moe_dispatcher = 15, attention_kernel = 16,
                    recompute_module = 17, master_weights = 18)

"""
    enum_names(which::Integer) -> Vector{String}

The names of enumeration `which` (a value of `ENUM_KINDS`) by value, from the library's table
(memest_enum_count, memest_enum_name): the names JSON requests and responses use.
"""
function enum_names(which::Integer)
    n = ccall((:memest_enum_count, libmemest), UInt32, (Cint,), which)
    return [unsafe_string(ccall((:memest_enum_name, libmemest), Cstring, (Cint, Int32), which, v)) for v in 0:Int(n)-1]
end

"""The value named `name` in enumeration `which`, or -1 (memest_enum_value)."""
enum_value(which::Integer, name::AbstractString) =
    Int(ccall((:memest_enum_value, libmemest), Int32, (Cint, Cstring), which, name))

"""Every enumeration's names, by the keys of `ENUM_KINDS`."""
enums() = Dict(String(k) => enum_names(v) for (k, v) in pairs(ENUM_KINDS))

"""The upper bound of each bounded verdict band as a fraction of capacity, e.g.
Dict("fits" => 0.8, "tight" => 1.0) (memest_verdict_limit); above the last, the verdict is "oom"."""
function verdict_bands()
    bands = Dict{String,Float64}()
    for (v, name) in enumerate(enum_names(ENUM_KINDS.verdict))
        limit = ccall((:memest_verdict_limit, libmemest), Cdouble, (Cint,), v - 1)
        limit > 0 && (bands[name] = limit)
    end
    return bands
end

# The thread's last error, read right after the failing call (no yield point in between).
function last_error(status::Integer)
    field = unsafe_string(ccall((:memest_last_error_field, libmemest), Cstring, ()))
    message = unsafe_string(ccall((:memest_last_error, libmemest), Cstring, ()))
    return MemestError(status, status_name(status), field, message)
end

"""
    request(json::AbstractString) -> String

Answers a JSON request (any mode: "pretrain", "model_states", "finetune", "search", ...) with
memest_request_json and returns the response JSON text. Throws `MemestError` for a bad request,
a parse error for text holding a NUL character (a C string would end there).
"""
function request(json::AbstractString)::String
    nul = findfirst(==('\0'), json)
    if nul !== nothing
        status = enum_value(ENUM_KINDS.status, "parse_error")
        throw(MemestError(status, status_name(status), "",
                          "request is not valid JSON: a NUL byte at offset $(nul - 1) (a C string ends there)"))
    end
    out = Ref{Ptr{Cchar}}(C_NULL)
    status = ccall((:memest_request_json, libmemest), Cint, (Cstring, Ref{Ptr{Cchar}}), json, out)
    err = status == 0 ? nothing : last_error(status)
    text = out[] == C_NULL ? "" : unsafe_string(out[])
    ccall((:memest_string_free, libmemest), Cvoid, (Ptr{Cchar},), out[])
    err === nothing || throw(err)
    return text
end

# An error of this module's own, for input it cannot hand to the library.
function own_error(code::AbstractString, field::AbstractString, message::AbstractString)
    status = enum_value(ENUM_KINDS.status, code)
    return MemestError(status, status_name(status), field, message)
end

"""`s` as a JSON string literal (quotes, backslashes and control characters escaped)."""
function json_string(s::AbstractString)::String
    io = IOBuffer()
    print(io, '"')
    for c in s
        if c == '"' || c == '\\'
            print(io, '\\', c)
        elseif c < ' '
            print(io, "\\u", lpad(string(UInt32(c), base = 16), 4, '0'))
        else
            print(io, c)
        end
    end
    print(io, '"')
    return String(take!(io))
end

"""
    import_launch(paths; gpu, gpu_json, gpus, model, model_json, seq_len, format = "auto",
                  set_json, estimate = false, hf_home) -> String

Reads one run's launch files (a torchtitan TOML, a Megatron launch script, a DeepSpeed JSON
with its launcher, a torchtune / axolotl / LLaMA-Factory / accelerate YAML: the library's mode
"import") into the pretrain request they describe, and returns the response JSON text:
"format", "files", "request", "origins" (where each value came from), "warnings" and, with
`estimate = true`, "estimate". `paths`: a path or a vector of paths, each named as given.
What the files do not say: `gpu` (a preset id; `gpu_json` a GPU object's JSON text), `gpus`,
`model` (a preset or Hugging Face id; `model_json` a config.json's text), `seq_len`;
`set_json` overrides request fields (`"{\"parallel\": {\"tp\": 2}}"`); `hf_home` is the
Hugging Face hub cache to look in. Throws `MemestError` naming the field: "gpu" when none is
given, "files[i]" for a file that cannot be read (invalid_argument) or is binary (parse_error).
"""
function import_launch(paths; gpu = nothing, gpu_json = nothing, gpus = nothing, model = nothing,
                        model_json = nothing, seq_len = nothing, format = "auto",
                        set_json = nothing, estimate = false, hf_home = nothing)::String
    paths isa AbstractString && (paths = [paths])
    files = String[]
    for (i, path) in enumerate(paths)
        field = "files[$(i - 1)]"
        text = try
            read(path, String)
        catch e
            throw(own_error("invalid_argument", field, "$field: cannot read \"$path\": $(sprint(showerror, e))"))
        end
        isvalid(String, text) ||
            throw(own_error("parse_error", field, "$field: $path is binary (not UTF-8 text), not a launch file"))
        push!(files, "{\"name\": " * json_string(string(path)) * ", \"text\": " * json_string(text) * "}")
    end
    doc = "{\"mode\": \"import\", \"files\": [" * join(files, ", ") * "], \"format\": " * json_string(format)
    gpu === nothing || (doc *= ", \"gpu\": " * json_string(gpu))
    gpu_json === nothing || (doc *= ", \"gpu\": " * gpu_json)
    gpus === nothing || (doc *= ", \"gpus\": " * string(Int(gpus)))
    model === nothing || (doc *= ", \"model\": " * json_string(model))
    model_json === nothing || (doc *= ", \"model\": " * model_json)
    seq_len === nothing || (doc *= ", \"seq_len\": " * string(Int(seq_len)))
    set_json === nothing || (doc *= ", \"set\": " * set_json)
    hf_home === nothing || (doc *= ", \"hf_home\": " * json_string(hf_home))
    estimate && (doc *= ", \"estimate\": true")
    return request(doc * "}")
end

"""
    emit_launch(request_json, format) -> String

The layout of a pretrain request (its JSON text, e.g. an import's "request") in a training
stack's own terms, `format` "megatron", "torchtitan", "deepspeed" or "accelerate": the response
JSON text with "settings" ([{"key", "value", "section"?}]) and "text".
"""
emit_launch(request_json::AbstractString, format::AbstractString)::String =
    request("{\"mode\": \"emit\", \"format\": " * json_string(format) * ", \"request\": " * request_json * "}")

"""The built-in model preset ids."""
function model_presets()
    n = ccall((:memest_model_preset_count, libmemest), UInt32, ())
    return [unsafe_string(ccall((:memest_model_preset_id, libmemest), Cstring, (UInt32,), i)) for i in 0:n-1]
end

"""The built-in GPU preset ids."""
function gpu_presets()
    n = ccall((:memest_gpu_preset_count, libmemest), UInt32, ())
    return [unsafe_string(ccall((:memest_gpu_preset_id, libmemest), Cstring, (UInt32,), i)) for i in 0:n-1]
end

end # module
