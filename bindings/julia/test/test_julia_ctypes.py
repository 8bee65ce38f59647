"""Julia's Memest.jl, exercised through its ctypes twin (memest_jl_twin.py): the same exported
symbols, signatures (read from Memest.jl) and calling sequences. Needs MEMEST_LIBRARY."""
import ctypes
import json
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import memest_jl_twin as twin  # noqa: E402

HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                      "libmemest", "include", "memest", "memest.h")


@pytest.fixture(scope="module")
def m():
    return twin.Memest()


def test_every_ccall_symbol_is_public_and_typed_as_in_the_header():
    header = open(HEADER, encoding="utf-8").read()
    sigs = twin.ccall_signatures()
    assert {"memest_request_json", "memest_string_free", "memest_last_error",
            "memest_last_error_field", "memest_status_name"} <= set(sigs)
    c_types = {"Cint": {"memest_status", "memest_enum", "memest_verdict"}, "Int32": {"int32_t"},
               "UInt32": {"uint32_t"}, "Cdouble": {"double"}, "Cstring": {"const char *"},
               "Ptr{Cchar}": {"char *"}, "Ref{Ptr{Cchar}}": {"char **"}, "Cvoid": {"void"}}
    for name, (ret, args) in sigs.items():
        decl = re.search(r"MEMEST_API ([\w ]+?\s*\**)\s*" + name + r"\(([^)]*)\)", header)
        assert decl, f"{name} is not declared in memest.h"
        c_ret = decl.group(1).strip()
        assert c_ret in c_types[ret] or c_ret.replace(" *", " *") in c_types[ret], (name, c_ret, ret)
        c_args = [a.strip() for a in decl.group(2).split(",")]
        if c_args == ["void"]:
            c_args = []
        assert len(c_args) == len(args), name
        for c_arg, jl in zip(c_args, args):
            c_type = re.sub(r"\s*\w+$", "", c_arg).replace("*", " *").replace("  ", " ").strip()
            c_type = re.sub(r"\s+\*", " *", c_type).replace("* *", "**")
            assert any(c_type.replace(" ", "") == t.replace(" ", "") for t in c_types[jl]), (name, c_arg, jl)


def test_version(m):
    major, minor, patch = map(int, m.version().split("."))
    assert m.version_number() == major * 10000 + minor * 100 + patch


def test_request_pretrain(m):
    resp = json.loads(m.request(json.dumps({
        "mode": "pretrain", "model": "llama-3.1-8b", "gpu": "a100-40gb",
        "parallel": {"gpus": 8, "tp": 4, "pp": 2}, "training": {"seq_len": 8192}})))
    assert resp["ok"] and resp["verdict"] == "fits"
    assert abs(resp["estimate_gib"] - 27.20) < 0.005


def test_request_error(m):
    with pytest.raises(twin.MemestError) as info:
        m.request('{"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "a100-40gb", "parallel": {"tp": 3}}')
    assert info.value.code == "invalid_argument" and info.value.field == "parallel.tp"
    with pytest.raises(twin.MemestError) as info:
        m.request("{oops")
    assert info.value.code == "parse_error" and info.value.status == 4


def test_presets(m):
    models, gpus = m.model_presets(), m.gpu_presets()
    assert "llama-3.1-8b" in models and "a100-40gb" in gpus
    for model in models[:3]:
        resp = json.loads(m.request(json.dumps({"mode": "model_states", "model": model})))
        assert resp["estimate_bytes"] > 0


def test_string_free_accepts_null(m):
    m.f["memest_string_free"](None)


def test_enum_kinds_are_the_header_values():
    """Memest.jl's ENUM_KINDS (written in Julia) against memest.h's memest_enum and the keys of
    the JSON "enums" mode: fails when either changes."""
    header = open(HEADER, encoding="utf-8").read()
    values = {name.lower(): int(v) for name, v in
              re.findall(r"MEMEST_ENUM_(\w+) = (\d+)", header) if name != "COUNT"}
    count = int(re.search(r"MEMEST_ENUM_COUNT = (\d+)", header).group(1))
    kinds = twin.enum_kinds()
    assert kinds == values and len(kinds) == count


def test_enums_are_the_library_tables(m):
    resp = json.loads(m.request('{"mode": "enums"}'))
    assert m.enums() == resp["enums"]
    assert m.verdict_bands() == resp["verdict_bands"]
    for key, which in m.kinds.items():
        for v, name in enumerate(m.enum_names(which)):
            assert m.enum_value(which, name) == v, (key, name)
    assert m.enum_value(m.kinds["recompute"], "sometimes") == -1


def test_nul_in_request_is_a_parse_error(m):
    good = '{"mode": "model_states", "model": "llama-2-7b"}'
    assert json.loads(m.request(good))["ok"]
    with pytest.raises(twin.MemestError) as info:
        m.request(good + "\0 lost")
    assert info.value.code == "parse_error" and info.value.field == ""
    assert info.value.status == m.enum_value(m.kinds["status"], "parse_error")


def test_strict_json(m):
    with pytest.raises(twin.MemestError) as info:
        m.request('{"mode": "pretrain", "model": "gpt2", "gpu": "a100-40gb", "training": {"recompute": null}}')
    assert info.value.code == "wrong_type" and info.value.field == "training.recompute"
    with pytest.raises(twin.MemestError) as info:
        m.request('{"mode": "model_states", "model": "gpt2", "model": "gpt2"}')
    assert info.value.code == "parse_error"
