"""memest.load_gpu_profile: a calibrate/ device profile as the gpu of an estimate."""
import json
import pathlib

import pytest

import memest

EXAMPLE = (pathlib.Path(__file__).resolve().parents[3] / "calibrate" / "examples"
           / "h100-sxm-80gb.example.json")


def test_example_profile_runs_a_pretrain():
    gpu = memest.load_gpu_profile(EXAMPLE)
    assert gpu["name"] == "H100 SXM 80GB (example profile, not measured)"
    assert "measured" not in gpu  # raw figures stay in the file
    r = memest.pretrain("llama-3.1-8b", gpu, gpus=8, tp=4, pp=2, seq_len=8192, micro_batch=1,
                        global_batch=1024)
    d = r.to_dict()
    assert d["capacity_bytes"] == gpu["memory_gib"] * 2**30
    assert d["overheads"]["context_bytes"] == gpu["context_mib"] * 2**20
    assert d["gpu"]["profile"]["fragmentation"] == gpu["fragmentation"]
    assert d["gpu"]["name"] == gpu["name"]


@pytest.mark.parametrize("content, error", [
    (None, memest.InvalidArgumentError),           # no such file
    ("{not json", memest.ParseError),
    ("[1, 2]", memest.FieldTypeError),
])
def test_bad_profile_files(tmp_path, content, error):
    path = tmp_path / "profile.json"
    if content is not None:
        path.write_text(content)
    with pytest.raises(error) as info:
        memest.load_gpu_profile(path)
    assert isinstance(info.value, memest.MemestError)
    assert info.value.field == "gpu"


def test_profile_fields_are_checked_when_used(tmp_path):
    path = tmp_path / "profile.json"
    path.write_text(json.dumps({"memory_gib": 80, "fragmentation": -1}))
    gpu = memest.load_gpu_profile(path)
    with pytest.raises(memest.MemestError) as info:
        memest.pretrain("llama-3.1-8b", gpu)
    assert info.value.field == "gpu.fragmentation"
