"""
    Memest

Julia bindings of libmemest (memest.h): `ccall` wrappers over the C API. Every number comes
from the C library; a refused request throws a `MemestError` with the status code name and the
request field.

    include("bindings/julia/Memest.jl"); using .Memest
    resp = Memest.request(\"\"\"{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "a100-40gb",
                               "parallel": {"gpus": 8, "tp": 4, "pp": 2}, "training": {"seq_len": 8192}}\"\"\")

Set `ENV["MEMEST_LIBRARY"]` to the path of libmemest.so before loading when it is not on the
loader's path. (Julia is not installed on memest's CI: bindings/julia/test/ drives exactly these
symbols, signatures and calling sequences from Python's ctypes, reading them from this file.)
"""
module Memest

export request, MemestError, version, model_presets, gpu_presets

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

"""The C library's version string, e.g. "0.1.0"."""
version() = unsafe_string(ccall((:memest_version_string, libmemest), Cstring, ()))

"""MAJOR*10000 + MINOR*100 + PATCH."""
version_number() = Int(ccall((:memest_version_number, libmemest), UInt32, ()))

"""The lower-case name of a status code."""
status_name(status::Integer) =
    unsafe_string(ccall((:memest_status_name, libmemest), Cstring, (Cint,), status))

# The thread's last error, read right after the failing call (no yield point in between).
function last_error(status::Integer)
    field = unsafe_string(ccall((:memest_last_error_field, libmemest), Cstring, ()))
    message = unsafe_string(ccall((:memest_last_error, libmemest), Cstring, ()))
    return MemestError(status, status_name(status), field, message)
end

"""
    request(json::AbstractString) -> String

Answers a JSON request (any mode: "pretrain", "model_states", "finetune", "search", ...) with
memest_request_json and returns the response JSON text. Throws `MemestError` for a bad request.
"""
function request(json::AbstractString)::String
    out = Ref{Ptr{Cchar}}(C_NULL)
    status = ccall((:memest_request_json, libmemest), Cint, (Cstring, Ref{Ptr{Cchar}}), json, out)
    err = status == 0 ? nothing : last_error(status)
    text = out[] == C_NULL ? "" : unsafe_string(out[])
    ccall((:memest_string_free, libmemest), Cvoid, (Ptr{Cchar},), out[])
    err === nothing || throw(err)
    return text
end

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
