"""Launch files through the Python binding: memest.import_launch (the library's mode "import" on
real launch files from tests/data/launch), memest.emit_launch (mode "emit"), search(emit=...)
and the huggingface_hub fallback for a model nobody has cached (a fake hub module: no network)."""
import json
import os
import pathlib
import sys
import types

import pytest

import memest

ROOT = pathlib.Path(__file__).resolve().parents[3]
LAUNCH = ROOT / "tests" / "data" / "launch"
TITAN = LAUNCH / "torchtitan" / "llama3-8b-64xa100-op-sac" / "llama3_8b.toml"
QLORA = LAUNCH / "axolotl" / "gemma2-9b-qlora" / "qlora.yml"

LLAMA_CONFIG = {  # a Hugging Face config.json (Llama-3.1-8B's shape)
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}


def test_torchtitan_llama3_8b():
    r = memest.import_launch(str(TITAN), gpu="a100-80gb", gpus=64)
    assert isinstance(r, memest.ImportResult) and r.mode == "import"
    assert r.format == "torchtitan"
    assert [(f.name, f.format) for f in r.files] == [(str(TITAN), "torchtitan")]
    req = r.request
    assert req["mode"] == "pretrain" and req["gpu"] == "a100-80gb" and req["model"] == "llama-3.1-8b"
    p, t = req["parallel"], req["training"]
    assert (p["tp"], p["pp"], p["gpus"]) == (1, 1, 64)
    assert (t["micro_batch"], t["seq_len"], t["recompute"], t["framework"]) == (1, 8192, "op_selective", "fsdp")
    o = r.origins["training.seq_len"]
    assert (o["from"], o["file"], o["line"], o["key"]) == ("file", str(TITAN), 33, "training.seq_len")
    assert o.line == 33
    assert r.origins["gpu"]["from"] == "flag" and r.origins["parallel.gpus"]["from"] == "flag"
    assert all("message" in w for w in r.warnings)
    assert r.estimate is None
    # the request is a copy, complete enough to answer as it is
    req["parallel"]["tp"] = 99
    assert r.request["parallel"]["tp"] == 1
    again = memest.request(r.request)
    assert isinstance(again, memest.PretrainResult) and again.layout.tp == 1
    assert "torchtitan" in repr(r) and "64 x a100-80gb" in repr(r)


def test_paths_as_given_pathlike_and_list(tmp_path):
    rel = os.path.relpath(TITAN)
    r = memest.import_launch([pathlib.Path(rel)], gpu="a100-80gb", gpus=64)
    assert r.origins["training.seq_len"]["file"] == rel
    assert r.files[0].name == rel


def test_estimate_and_overrides():
    r = memest.import_launch(TITAN, gpu="a100-80gb", gpus=64, seq_len=4096,
                             set={"parallel": {"tp": 2}}, estimate=True, format="torchtitan")
    assert r.request["training"]["seq_len"] == 4096 and r.request["parallel"]["tp"] == 2
    assert r.origins["training.seq_len"]["from"] == "flag"
    assert r.origins["parallel.tp"]["from"] == "flag"
    est = r.estimate
    assert isinstance(est, memest.PretrainResult)
    assert est.layout.tp == 2 and est.peak_verdict in ("fits", "tight", "oom")
    assert est.to_dict() == memest.request(r.request).to_dict()


def test_axolotl_gemma2_qlora():
    r = memest.import_launch(QLORA, gpu="l4-24gb", gpus=1)
    assert r.format == "axolotl"
    adapter = r.request["training"]["adapter"]
    assert adapter["type"] == "qlora"
    assert r.request["model"] == "gemma-2-9b" and r.request["parallel"]["gpus"] == 1


def test_no_gpu_names_gpu():
    with pytest.raises(memest.MemestError) as info:
        memest.import_launch(TITAN, gpus=64)
    assert info.value.field == "gpu" and info.value.code == "missing_field"
    assert "--gpu" in info.value.message


def test_binary_files_name_the_file(tmp_path):
    nul = tmp_path / "weights.toml"  # valid UTF-8 with NUL bytes: the library refuses it
    nul.write_bytes(b"[job]\x00\x00\x01\x02")
    with pytest.raises(memest.MemestError) as info:
        memest.import_launch(nul, gpu="a100-80gb", gpus=8)
    assert info.value.field == "files[0]" and "binary" in info.value.message
    blob = tmp_path / "model.bin"  # not UTF-8: refused before the library
    blob.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(memest.ParseError) as info:
        memest.import_launch([blob, TITAN], gpu="a100-80gb", gpus=8)
    assert info.value.field == "files[0]" and "binary" in info.value.message
    with pytest.raises(memest.ParseError) as info:
        memest.import_launch([TITAN, blob], gpu="a100-80gb", gpus=8)
    assert info.value.field == "files[1]"


def test_missing_file_and_bad_arguments(tmp_path):
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.import_launch(tmp_path / "nope.toml", gpu="a100-80gb")
    assert info.value.field == "files[0]"
    with pytest.raises(memest.FieldTypeError) as info:
        memest.import_launch([TITAN, 3], gpu="a100-80gb")
    assert info.value.field == "files[1]"
    with pytest.raises(memest.MemestError) as info:
        memest.import_launch(TITAN, gpu="a100-80gb", gpus=64, format="fairseq")
    assert info.value.field == "format"


def test_emit_megatron():
    req = {"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "h100-80gb",
           "parallel": {"gpus": 8, "tp": 2}, "training": {"seq_len": 4096, "global_batch": 64}}
    e = memest.emit_launch(req, "megatron")
    assert isinstance(e, memest.EmitResult) and e.format == "megatron" and e.mode == "emit"
    flags = e.as_dict()
    assert flags["--tensor-model-parallel-size"] == 2
    assert {"key": "--tensor-model-parallel-size", "value": 2} in [s.to_dict() for s in e.settings]
    assert "--tensor-model-parallel-size 2" in e.text and str(e) == e.text
    with pytest.raises(memest.FieldTypeError) as info:
        memest.emit_launch({**req, "parallel": {"gpus": 8, "tp": "two"}}, "megatron")
    assert info.value.field == "request.parallel.tp"
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.emit_launch({**req, "parallel": {"gpus": 8, "tp": 3}}, "megatron")
    # the library names a layout it refuses without the "request." prefix (so far)
    assert info.value.field.endswith("parallel.tp")
    with pytest.raises(memest.MemestError) as info:
        memest.emit_launch(req, "fairseq")
    assert info.value.field == "format"


def test_emit_from_an_import():
    r = memest.import_launch(TITAN, gpu="a100-80gb", gpus=64)
    e = memest.emit_launch(r, "torchtitan")
    keys = e.as_dict()
    assert keys and all(isinstance(s.key, str) for s in e.settings)
    assert e.text


def test_search_emit():
    s = memest.search("llama-3.1-8b", "h100-80gb", gpus=8, seq_len=4096, global_batch=64, top=3,
                      emit="megatron")
    launch = s.launch
    assert isinstance(launch, memest.EmitResult) and launch.format == "megatron"
    assert launch.as_dict()["--tensor-model-parallel-size"] == s[0].layout.tp
    assert memest.search("llama-3.1-8b", "h100-80gb", gpus=8, seq_len=4096, global_batch=64,
                         top=1).launch is None


# ---- the huggingface_hub fallback ------------------------------------------------------------

def _fake_hub(tmp_path, config=LLAMA_CONFIG, fail=None):
    """A stand-in for huggingface_hub: hf_hub_download writes `config` and records its calls."""
    hub = types.ModuleType("huggingface_hub")
    hub.calls = []

    def hf_hub_download(repo_id, filename, **kwargs):
        hub.calls.append((repo_id, filename, kwargs))
        if fail is not None:
            raise fail
        path = tmp_path / "hub" / repo_id.replace("/", "--") / filename
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(config), encoding="utf-8")
        return str(path)

    hub.hf_hub_download = hf_hub_download
    return hub


@pytest.fixture
def unknown_model_file(tmp_path):
    """The axolotl QLoRA run with a base model no preset and no cache knows."""
    path = tmp_path / "qlora.yml"
    path.write_text(QLORA.read_text(encoding="utf-8").replace("google/gemma-2-9b", "someorg/Some-Llama-8B"),
                    encoding="utf-8")
    return path


def test_hub_fallback_for_a_model_argument(tmp_path, monkeypatch):
    hub = _fake_hub(tmp_path)
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    r = memest.import_launch(TITAN, gpu="a100-80gb", gpus=64, model="someorg/Some-Llama-8B",
                             hf_home=tmp_path / "empty-cache", estimate=True)
    assert [c[:2] for c in hub.calls] == [("someorg/Some-Llama-8B", "config.json")]
    assert hub.calls[0][2] == {"cache_dir": str(tmp_path / "empty-cache")}
    assert r.request["model"] == LLAMA_CONFIG
    assert "huggingface_hub" in r.origins["model"]["resolved"]
    assert r.estimate.model.num_parameters > 8e9


def test_hub_fallback_for_a_model_the_file_names(tmp_path, monkeypatch, unknown_model_file):
    hub = _fake_hub(tmp_path)
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    r = memest.import_launch(unknown_model_file, gpu="l4-24gb", gpus=1,
                             hf_home=tmp_path / "empty-cache")
    assert [c[:2] for c in hub.calls] == [("someorg/Some-Llama-8B", "config.json")]
    assert r.request["model"]["hidden_size"] == 4096
    assert r.request["training"]["adapter"]["type"] == "qlora"


def test_without_hub_the_library_error_is_raised(tmp_path, monkeypatch, unknown_model_file):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import raises ImportError
    with pytest.raises(memest.MemestError) as info:
        memest.import_launch(unknown_model_file, gpu="l4-24gb", gpus=1, hf_home=tmp_path / "empty")
    assert info.value.field == "model" and "Hugging Face cache" in info.value.message
    # a Hugging Face id given as model= is looked up as a file's would be: the same error
    with pytest.raises(memest.MissingFieldError) as info:
        memest.import_launch(TITAN, gpu="a100-80gb", gpus=64, model="someorg/Some-Llama-8B",
                             hf_home=tmp_path / "empty")
    assert info.value.field == "model" and "Hugging Face cache" in info.value.message


def test_hub_failure_raises_the_library_error(tmp_path, monkeypatch, unknown_model_file):
    hub = _fake_hub(tmp_path, fail=OSError("offline"))
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    with pytest.raises(memest.MemestError) as info:
        memest.import_launch(unknown_model_file, gpu="l4-24gb", gpus=1, hf_home=tmp_path / "empty")
    assert info.value.field == "model" and len(hub.calls) == 1
    assert isinstance(info.value.__cause__, OSError)


def test_hub_not_asked_for_presets_or_other_errors(tmp_path, monkeypatch):
    hub = _fake_hub(tmp_path)
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    memest.import_launch(TITAN, gpu="a100-80gb", gpus=64, model="llama-3.1-8b")
    with pytest.raises(memest.UnknownPresetError):
        memest.import_launch(TITAN, gpu="a100-80gb", gpus=64, model="no-such-preset")
    with pytest.raises(memest.MemestError) as info:
        memest.import_launch(TITAN, gpus=64, model="someorg/Some-Llama-8B")
    assert info.value.field == "gpu" and hub.calls == []
