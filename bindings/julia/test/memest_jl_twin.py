"""The Julia module bindings/julia/Memest.jl, replayed with Python ctypes (Julia cannot be
installed on memest's machines). The ccall sites are READ FROM Memest.jl: every symbol, return
type and argument type below comes from that file, and each function here follows the Julia
function's calling sequence line by line. Run as a script, it is the "julia" front end of
tests/crosslang (lines "name<TAB>request" in, "name<TAB>response" out).

MEMEST_LIBRARY names libmemest.so (as for the Julia module)."""
import ctypes
import json
import os
import re
import sys

JL = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Memest.jl")

# Julia type -> ctypes type, for the types Memest.jl uses.
JULIA_TO_CTYPES = {
    "Cint": ctypes.c_int,
    "Int32": ctypes.c_int32,
    "UInt32": ctypes.c_uint32,
    "Cdouble": ctypes.c_double,
    "Cstring": ctypes.c_char_p,
    "Ptr{Cchar}": ctypes.c_void_p,
    "Ref{Ptr{Cchar}}": ctypes.POINTER(ctypes.c_void_p),
    "Cvoid": None,
}

CCALL = re.compile(r"ccall\(\(:(\w+), libmemest\), ([\w{}]+), \(([^)]*)\)")
ENUM_KINDS = re.compile(r"const ENUM_KINDS = \(([^)]*)\)")


def ccall_signatures(path=JL):
    """{symbol: (return type, [argument types])} of every ccall in Memest.jl (Julia spelling)."""
    sigs = {}
    for name, ret, args in CCALL.findall(open(path, encoding="utf-8").read()):
        argv = [a.strip() for a in args.split(",") if a.strip()]
        if name in sigs and sigs[name] != (ret, argv):
            raise AssertionError(f"{name}: two different signatures in Memest.jl")
        sigs[name] = (ret, argv)
    return sigs


def enum_kinds(path=JL):
    """Memest.jl's ENUM_KINDS: {key: memest_enum value}, in the file's order."""
    body = ENUM_KINDS.search(open(path, encoding="utf-8").read()).group(1)
    pairs = [p.split("=") for p in body.replace("\n", " ").split(",") if p.strip()]
    return {k.strip(): int(v) for k, v in pairs}


class MemestError(Exception):
    """Memest.MemestError: status, code, field, message."""

    def __init__(self, status, code, field, message):
        super().__init__(message)
        self.status, self.code, self.field, self.message = status, code, field, message


class Memest:
    """Memest.jl's functions over ctypes."""

    def __init__(self, library=None):
        self.lib = ctypes.CDLL(library or os.environ.get("MEMEST_LIBRARY", "libmemest.so.1"))
        self.sigs = ccall_signatures()
        self.kinds = enum_kinds()
        self.f = {}
        for name, (ret, args) in self.sigs.items():
            fn = getattr(self.lib, name)  # AttributeError: the symbol is not exported
            fn.restype = JULIA_TO_CTYPES[ret]
            fn.argtypes = [JULIA_TO_CTYPES[a] for a in args]
            self.f[name] = fn

    def version(self):
        return self.f["memest_version_string"]().decode()

    def version_number(self):
        return int(self.f["memest_version_number"]())

    def status_name(self, status):
        return self.f["memest_status_name"](status).decode()

    def enum_names(self, which):
        n = self.f["memest_enum_count"](which)
        return [self.f["memest_enum_name"](which, v).decode() for v in range(n)]

    def enum_value(self, which, name):
        return int(self.f["memest_enum_value"](which, name.encode()))

    def enums(self):
        return {k: self.enum_names(v) for k, v in self.kinds.items()}

    def verdict_bands(self):
        bands = {}
        for v, name in enumerate(self.enum_names(self.kinds["verdict"])):
            limit = self.f["memest_verdict_limit"](v)
            if limit > 0:
                bands[name] = limit
        return bands

    def last_error(self, status):
        field = self.f["memest_last_error_field"]().decode()
        message = self.f["memest_last_error"]().decode()
        return MemestError(status, self.status_name(status), field, message)

    def request(self, text):
        nul = text.find("\0")
        if nul >= 0:
            status = self.enum_value(self.kinds["status"], "parse_error")
            raise MemestError(status, self.status_name(status), "",
                              f"request is not valid JSON: a NUL byte at offset "
                              f"{len(text[:nul].encode())} (a C string ends there)")
        out = ctypes.c_void_p(None)
        status = self.f["memest_request_json"](text.encode(), ctypes.byref(out))
        err = None if status == 0 else self.last_error(status)
        answer = "" if not out.value else ctypes.string_at(out.value).decode()
        self.f["memest_string_free"](out.value)
        if err is not None:
            raise err
        return answer

    def own_error(self, code, field, message):
        status = self.enum_value(self.kinds["status"], code)
        return MemestError(status, self.status_name(status), field, message)

    @staticmethod
    def json_string(s):
        out = ['"']
        for c in s:
            if c == '"' or c == "\\":
                out.append("\\" + c)
            elif c < " ":
                out.append("\\u" + format(ord(c), "x").rjust(4, "0"))
            else:
                out.append(c)
        out.append('"')
        return "".join(out)

    def import_launch(self, paths, *, gpu=None, gpu_json=None, gpus=None, model=None,
                      model_json=None, seq_len=None, format="auto", set_json=None,
                      estimate=False, hf_home=None):
        if isinstance(paths, str):
            paths = [paths]
        files = []
        for i, path in enumerate(paths):
            field = f"files[{i}]"
            try:
                with open(path, "rb") as f:  # read(path, String): the bytes as they are
                    data = f.read()
            except OSError as e:
                raise self.own_error("invalid_argument", field, f'{field}: cannot read "{path}": {e}')
            try:  # isvalid(String, text)
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                raise self.own_error("parse_error", field,
                                     f"{field}: {path} is binary (not UTF-8 text), not a launch file")
            files.append('{"name": ' + self.json_string(str(path)) + ', "text": ' + self.json_string(text) + "}")
        doc = '{"mode": "import", "files": [' + ", ".join(files) + '], "format": ' + self.json_string(format)
        if gpu is not None:
            doc += ', "gpu": ' + self.json_string(gpu)
        if gpu_json is not None:
            doc += ', "gpu": ' + gpu_json
        if gpus is not None:
            doc += ', "gpus": ' + str(int(gpus))
        if model is not None:
            doc += ', "model": ' + self.json_string(model)
        if model_json is not None:
            doc += ', "model": ' + model_json
        if seq_len is not None:
            doc += ', "seq_len": ' + str(int(seq_len))
        if set_json is not None:
            doc += ', "set": ' + set_json
        if hf_home is not None:
            doc += ', "hf_home": ' + self.json_string(hf_home)
        if estimate:
            doc += ', "estimate": true'
        return self.request(doc + "}")

    def emit_launch(self, request_json, format):
        return self.request('{"mode": "emit", "format": ' + self.json_string(format) + ', "request": '
                            + request_json + "}")

    def model_presets(self):
        n = self.f["memest_model_preset_count"]()
        return [self.f["memest_model_preset_id"](i).decode() for i in range(n)]

    def gpu_presets(self):
        n = self.f["memest_gpu_preset_count"]()
        return [self.f["memest_gpu_preset_id"](i).decode() for i in range(n)]


def main(path):
    m = Memest()
    with open(path, encoding="utf-8") as f:
        for line in f:
            name, _, text = line.rstrip("\n").partition("\t")
            try:
                out = json.loads(m.request(text))
            except MemestError as e:
                out = {"ok": False, "error": {"code": e.code, "field": e.field, "message": e.message}}
            print(name + "\t" + json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
