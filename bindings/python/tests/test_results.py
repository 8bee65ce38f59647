"""Result objects a user acts on: the verdict in words (repr, _repr_html_), suggestions and
dominant parts, search results as sequences, flat rows (CSV, DataFrame), and MemestError for
every bad input."""
import csv
import io
import json
import math
import sys

import pytest

import memest

GIB = 2**30

# The 4D paper's OOM run: (tp 4, cp 2, pp 1, mbs 2) on 8 x A100 40GB, Llama-3.1-8B, seq 8192.
OOM_KW = dict(gpus=8, tp=4, cp=2, pp=1, vpp=1, sp=True, zero=1, seq_len=8192, micro_batch=2,
              global_batch=1024, recompute="none", flash_attention=True)
OOM_REQ = {"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "a100-40gb",
           "parallel": {"gpus": 8, "tp": 4, "cp": 2, "pp": 1, "vpp": 1, "sp": True, "zero": 1},
           "training": {"seq_len": 8192, "micro_batch": 2, "global_batch": 1024,
                        "recompute": "none", "flash_attention": True}}
FITS_KW = dict(gpus=8, tp=4, pp=2, seq_len=8192, global_batch=1024)


def oom():
    return memest.pretrain("llama-3.1-8b", "a100-40gb", **OOM_KW)


def search():
    return memest.search("llama-3.1-8b", "a100-40gb", gpus=8, seq_len=8192, global_batch=1024, top=5)


# ---- the OOM request: the same verdict and suggestions as the JSON entry point

def test_oom_request_verdict_and_suggestions_equal_the_json_entry_point():
    r = oom()
    doc = json.loads(memest.request_json(json.dumps(OOM_REQ)))
    assert r.peak_verdict == doc["peak_verdict"] == "oom"
    assert r.verdict == doc["verdict"] == "tight"  # the paper's, on its estimate
    assert r.oom_predicted is True
    assert f"{r.peak_bytes / GIB:.2f}" == "40.70" and f"{r.estimate_bytes / GIB:.2f}" == "33.76"
    assert [s.to_dict() for s in r.suggestions] == doc["suggestions"]
    assert [p.to_dict() for p in r.dominant_parts] == doc["dominant_parts"]
    assert len(r.suggestions) >= 2
    assert all(isinstance(s, memest.Suggestion) for s in r.suggestions)
    assert all(isinstance(p, memest.Part) for p in r.dominant_parts)
    assert r.dominant_parts[0].bytes >= r.dominant_parts[-1].bytes


def test_each_suggestion_applied_fits_as_announced():
    r = oom()
    for s in r.suggestions:
        via_request = memest.request(s.apply(OOM_REQ))
        via_kwargs = memest.pretrain("llama-3.1-8b", "a100-40gb", **{**OOM_KW, **s.kwargs})
        assert via_request == via_kwargs, s.change
        assert via_request.peak_verdict == s.peak_verdict == "fits", s.change
        assert via_request.peak_bytes == s.peak_bytes, s.change
        assert via_request.suggestions == []
    first = next(s for s in r.suggestions if s.change == "recompute full")
    assert first.set == {"training": {"recompute": "full"}} and first.kwargs == {"recompute": "full"}
    first.set["training"]["recompute"] = "changed"  # a copy
    assert first.set["training"]["recompute"] == "full"


def test_fits_has_parts_and_no_suggestions():
    r = memest.pretrain("llama-3.1-8b", "a100-40gb", **FITS_KW)
    assert r.peak_verdict == "fits" and r.suggestions == []
    parts = r.dominant_parts
    assert parts and all(0 < p.share < 1 for p in parts)
    assert [p.bytes for p in parts] == sorted((p.bytes for p in parts), reverse=True)
    assert parts[0].share == pytest.approx(parts[0].bytes / r.peak_bytes)


def test_verdict_words_and_bands_from_the_library():
    assert memest.verdict_words("oom") == "out of memory"
    assert [memest.verdict_words(v) for v in memest.enums()["verdict"]] == \
        ["fits", "tight", "out of memory", "unknown"]
    bands = memest.peak_verdict_bands()
    assert bands == memest.request({"mode": "enums"}).to_dict()["peak_verdict_bands"]
    assert list(bands) == ["fits", "tight"] and bands["fits"] < bands["tight"]
    r = memest.pretrain("llama-3.1-8b", "a100-40gb", **FITS_KW)
    assert r.peak_bytes / r.capacity_bytes <= bands["fits"]


# ---- repr and _repr_html_: the peak verdict in words, the peak of capacity, the paper's figure

def test_repr_of_an_oom_pretrain():
    text = repr(oom())
    first, *rest = text.split("\n")
    assert first == "PretrainResult: out of memory"
    assert "Llama-3.1-8B on 8 x NVIDIA A100 SXM 40GB | tp 4, cp 2, pp 1" in text
    assert "peak 40.70 GiB of 39.39 GiB = 103.3 % (stage 0, the overhead model)" in text
    assert "the paper's estimate (Eq. 18): 33.76 GiB = 85.7 %, tight by the paper's bands" in text
    assert "largest parts: activations 11.32 GiB" in text
    assert "would fit: recompute full (peak 31.36 GiB, fits)" in text
    r = oom()
    low, high = r.peak_band_bytes
    assert (f"peak 90 % band {low / GIB:.2f} GiB to {high / GIB:.2f} GiB, probability of running "
            f"out of memory {round(r.oom_probability * 1000) / 10:g} %") in text


def test_repr_of_a_fitting_pretrain():
    text = repr(memest.pretrain("llama-3.1-8b", "a100-40gb", **FITS_KW))
    assert text.startswith("PretrainResult: fits\n")
    assert "peak 30.92 GiB of 39.39 GiB = 78.5 %" in text
    assert "the paper's estimate (Eq. 18): 27.20 GiB = 69.1 %, fits" in text
    assert "would fit" not in text


def test_repr_html():
    page = oom()._repr_html_()
    assert page.startswith("<div>") and page.endswith("</div>")
    assert ">out of memory</span>" in page
    assert "peak 40.70 GiB of 39.39 GiB" in page and "33.76 GiB" in page
    assert "recompute full" in page and "training.recompute=full" in page
    assert "<table>" in page
    # the headline is peak_verdict (1.11): 99.3 % of capacity is tight (LLMem's verdict: fits)
    ft = memest.finetune("opt-2.7b", "v100-16gb", gpus=4, seq_len=512)._repr_html_()
    assert ">tight</span>" in ft and "m_base" in ft and "zero3" in ft
    s = search()._repr_html_()
    assert s.count("<tr>") == 1 + 5 and "TFLOP/s" in s
    ms = memest.model_states("llama-2-7b", "a100-80gb", gpus=8, zero=3)._repr_html_()
    assert ">fits</span>" in ms


def test_repr_of_finetune_search_and_model_states():
    ft = repr(memest.finetune("opt-2.7b", "v100-16gb", gpus=4, seq_len=512))
    assert ft.startswith("FinetuneResult: tight\n")  # 99.3 % of capacity: peak_verdict
    assert "LLMem's Algorithm 1 selects zero3 at batch 10 per GPU" in ft
    assert "peak 15.71 GiB of 15.82 GiB = 99.3 %" in ft
    one = repr(memest.finetune("opt-2.7b", "v100-16gb", gpus=4, seq_len=512, method="cdp", batch=4))
    assert one.startswith("FinetuneResult: out of memory\n") and "cdp at batch 4 per GPU" in one
    s = repr(search())
    assert s.startswith("SearchResult: Llama-3.1-8B on 8 x NVIDIA A100 SXM 40GB: ")
    assert s.count("SearchRow(rank") == 5
    ms = repr(memest.model_states(7.5e9, gpus=64, zero=1, param_dtype="fp16", grad_dtype="fp16"))
    assert ms.startswith("ModelStatesResult: unknown\n") and "(no capacity given)" in ms


# ---- search results are sequences

def test_search_indexing_slicing_iteration():
    s = search()
    rows = s.to_dict()["results"]
    assert len(s) == 5 == len(rows)
    assert isinstance(s[0], memest.SearchRow) and s[0].to_dict() == rows[0]
    assert s[-1].to_dict() == rows[-1] and s[-1].rank == 5
    head = s[:3]
    assert isinstance(head, list) and [r.rank for r in head] == [1, 2, 3]
    assert [r.rank for r in s[::2]] == [1, 3, 5]
    assert [r.to_dict() for r in s] == rows
    assert s[0].layout.tp == rows[0]["layout"]["tp"]
    assert s[0].peak_verdict in ("fits", "tight") and s[0].tflops_per_gpu > 0
    assert s["pruned"] == s.to_dict()["pruned"]  # the response's keys by name
    with pytest.raises(IndexError):
        s[5]
    with pytest.raises(TypeError):
        s[True]
    assert "rank 1" in repr(s[0])


# ---- flat rows: CSV and DataFrame

SEARCH_COLUMNS = ["rank", "tp", "cp", "pp", "vpp", "dp", "micro_batch", "recompute", "zero"]


def test_search_rows_are_flat_with_whole_bytes_as_ints():
    rows = search().to_rows()
    assert list(rows[0])[:len(SEARCH_COLUMNS)] == SEARCH_COLUMNS
    for key in ("peak_bytes", "peak_verdict", "verdict", "estimate_bytes", "tflops_per_gpu", "reason"):
        assert key in rows[0]
    assert not any(isinstance(v, (dict, list)) for r in rows for v in r.values())
    assert isinstance(rows[0]["estimate_bytes"], int)  # 36250370048.0 in the JSON


def test_pretrain_rows_one_per_stage():
    r = memest.pretrain("llama-3.1-8b", "a100-40gb", **FITS_KW)
    rows = r.to_rows()
    assert [row["stage"] for row in rows] == [0, 1]
    for key in ("tp", "cp", "pp", "vpp", "dp", "micro_batch", "recompute", "zero", "peak_bytes",
                "peak_verdict", "weights_bytes", "fragmentation_bytes", "overhead_bytes"):
        assert key in rows[0], key
    assert rows[0]["peak_bytes"] == r.stages[0].peak_bytes
    assert rows[0]["tp"] == 4 and rows[0]["pp"] == 2 and rows[0]["peak_verdict"] == "fits"
    assert [row["is_peak_stage"] for row in rows] == [r.peak_stage == 0, r.peak_stage == 1]
    assert isinstance(rows[0]["weights_bytes"], int) and rows[0]["weights_bytes"] == r.stages[0].weights_bytes
    frag = r.stages[0].overheads.fragmentation_bytes
    assert rows[0]["fragmentation_bytes"] == frag
    assert isinstance(rows[0]["fragmentation_bytes"], int) == float(frag).is_integer()


def test_csv(tmp_path):
    r = memest.pretrain("llama-3.1-8b", "a100-40gb", **FITS_KW)
    text = r.to_csv()
    table = list(csv.DictReader(io.StringIO(text)))
    assert len(table) == 2 and table[0]["stage"] == "0"
    assert table[0]["weights_bytes"] == str(int(r.stages[0].weights_bytes))  # no ".0"
    path = tmp_path / "search.csv"
    assert search().to_csv(path) is None
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == 5 and list(rows[0])[:len(SEARCH_COLUMNS)] == SEARCH_COLUMNS
    assert "." not in rows[0]["estimate_bytes"]


def test_to_dataframe_without_pandas_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    for result in (search(), oom()):
        with pytest.raises(ImportError) as info:
            result.to_dataframe()
        assert "to_dataframe() needs pandas" in str(info.value)
        assert "python3-pandas" in str(info.value)


def test_to_dataframe():
    pd = pytest.importorskip("pandas", reason="pandas not installed (the ImportError is tested above)")
    df = search().to_dataframe()
    assert isinstance(df, pd.DataFrame) and len(df) == 5
    assert list(df.columns[:len(SEARCH_COLUMNS)]) == SEARCH_COLUMNS
    assert str(df["estimate_bytes"].dtype) == "int64" and str(df["tp"].dtype) == "int64"
    assert list(df["rank"]) == [1, 2, 3, 4, 5]
    assert df.iloc[0]["peak_bytes"] == search()[0].peak_bytes
    stages = oom().to_dataframe()
    assert len(stages) == 1 and stages.loc[0, "peak_verdict"] == "oom"
    assert str(stages["weights_bytes"].dtype) == "int64"
    # a DataFrame row's numpy numbers go back into a request
    row = df.iloc[1]
    p = memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=8, tp=row["tp"], cp=row["cp"], pp=row["pp"],
                        vpp=row["vpp"], micro_batch=row["micro_batch"], recompute=row["recompute"],
                        zero=row["zero"], seq_len=8192, global_batch=1024)
    assert p.peak_bytes == row["peak_bytes"]


# ---- MemestError for every bad input

BAD_INPUTS = [
    ("bool model", lambda: memest.pretrain(True, "a100-40gb"), memest.FieldTypeError, "model"),
    ("None model", lambda: memest.pretrain(None, "a100-40gb"), memest.FieldTypeError, "model"),
    ("list model", lambda: memest.pretrain(["llama"], "a100-40gb"), memest.FieldTypeError, "model"),
    ("NaN tp", lambda: memest.pretrain("llama-3.1-8b", "a100-40gb", tp=float("nan")), memest.ParseError, "parallel.tp"),
    ("inf memory", lambda: memest.pretrain("llama-3.1-8b", {"memory_gib": math.inf}), memest.ParseError, "gpu.memory_gib"),
    ("NaN parameter count", lambda: memest.model_states(float("nan")), memest.ParseError, "model.num_parameters"),
    ("-inf seq", lambda: memest.finetune("opt-1.3b", "v100-16gb", seq_len=-math.inf), memest.ParseError, "training.seq_len"),
    ("NUL in model id", lambda: memest.pretrain("llama-3.1-8b\0", "a100-40gb"), memest.UnknownPresetError, "model"),
    ("NUL in GPU id", lambda: memest.pretrain("llama-3.1-8b", "a100-40gb\0x"), memest.UnknownPresetError, "gpu"),
    ("NUL in recompute", lambda: memest.pretrain("llama-3.1-8b", "a100-40gb", recompute="full\0"), memest.InvalidArgumentError, "training.recompute"),
    ("NUL in JSON text", lambda: memest.request_json('{"mode": "enums"}\0'), memest.ParseError, ""),
    ("NUL in config text", lambda: memest.describe_config('{"model_type": "llama"}\0'), memest.ParseError, ""),
    ("bytes not UTF-8", lambda: memest.request_json(b'{"mode": "\xff"}'), memest.ParseError, ""),
    ("request_json(None)", lambda: memest.request_json(None), memest.FieldTypeError, ""),
    ("request(list)", lambda: memest.request([1, 2]), memest.FieldTypeError, ""),
    ("non-JSON value", lambda: memest.pretrain("llama-3.1-8b", "a100-40gb", tp=object()), memest.FieldTypeError, ""),
    ("string tp", lambda: memest.pretrain("llama-3.1-8b", "a100-40gb", tp="4"), memest.FieldTypeError, "parallel.tp"),
    ("huge gpus", lambda: memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=10**30), memest.MemestError, "parallel.gpus"),
    ("negative batch", lambda: memest.finetune("opt-1.3b", "v100-16gb", method="cdp", batch=-1), memest.InvalidArgumentError, "finetune.batch"),
    ("layouts not objects", lambda: memest.search("llama-3.1-8b", "a100-40gb", gpus=8, seq_len=8192, global_batch=1024, layouts=[4]), memest.FieldTypeError, "search.layouts[0]"),
    ("describe_config(int)", lambda: memest.describe_config(7), memest.FieldTypeError, "model"),
    ("missing config file", lambda: memest.load_config("/nonexistent/config.json"), memest.InvalidArgumentError, "model"),
    ("NUL in config path", lambda: memest.load_config("config\0.json"), memest.InvalidArgumentError, "model"),
    ("config path not a path", lambda: memest.load_config(3.5), memest.InvalidArgumentError, "model"),
    ("NUL in profile path", lambda: memest.load_gpu_profile("gpu\0.json"), memest.InvalidArgumentError, "gpu"),
]


@pytest.mark.parametrize("name, call, cls, field", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_input_raises_memest_error(name, call, cls, field):
    with pytest.raises(memest.MemestError) as info:
        call()
    assert isinstance(info.value, cls), f"{name}: {type(info.value).__name__}: {info.value}"
    assert info.value.field == field, f"{name}: {info.value!r}"
    assert info.value.code in memest.enums()["status"]


def test_numpy_scalars_are_numbers():
    np = pytest.importorskip("numpy")
    a = memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=np.int64(8), tp=np.int32(4), pp=np.int64(2),
                        seq_len=np.int64(8192))
    b = memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=8, tp=4, pp=2, seq_len=8192)
    assert a == b
    with pytest.raises(memest.ParseError):
        memest.pretrain("llama-3.1-8b", "a100-40gb", optimizer_bytes=np.float64("nan"))
