"""Tests of the installed memest package (run from a virtual environment holding the wheel,
not from the source tree: see scripts/test.d/20-bindings.sh)."""
import json
import pathlib

import pytest

import memest

LLAMA_CONFIG = {  # a Hugging Face config.json (Llama-3.1-8B's shape)
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
    "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
    "num_key_value_heads": 8, "vocab_size": 128256, "max_position_embeddings": 131072,
    "rms_norm_eps": 1e-05, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
}


def test_installed_not_source_tree():
    here = pathlib.Path(__file__).resolve().parent.parent
    assert here not in pathlib.Path(memest.__file__).resolve().parents


def test_version():
    assert memest.__version__.count(".") == 2
    major, minor, patch = map(int, memest.__version__.split("."))
    assert memest.version_number() == major * 10000 + minor * 100 + patch


def test_pretrain_default_example():
    r = memest.pretrain(model="llama-3.1-8b", gpu="a100-40gb", gpus=8, tp=4, pp=2, seq_len=8192)
    assert isinstance(r, memest.PretrainResult)
    assert r.mode == "pretrain"
    assert r.verdict == "fits"
    assert r.estimate_gib == pytest.approx(27.20, abs=0.005)
    assert len(r.stages) == 2 and isinstance(r.stages[0], memest.Stage)
    assert r.stages[0].layers == 16
    assert r.stages[0].activations_bytes > r.stages[1].activations_bytes
    assert r.peak_bytes >= r.estimate_bytes
    assert r.layout.dp == 1 and r.model.num_parameters > 8e9
    d = r.to_dict()
    assert d["stages"][0]["activations_bytes"] == r.stages[0].activations_bytes
    d["verdict"] = "changed"  # a copy
    assert r.verdict == "fits"


def test_result_equals_json_entry_point():
    req = {"mode": "pretrain", "model": "llama-2-7b", "gpu": "a100-80gb",
           "parallel": {"gpus": 16, "tp": 2, "pp": 2, "sp": False, "zero": 1},
           "training": {"seq_len": 4096, "micro_batch": 2, "recompute": "selective"}}
    r = memest.request(req)
    assert r.to_dict() == json.loads(memest.request_json(json.dumps(req)))
    kw = memest.pretrain("llama-2-7b", "a100-80gb", gpus=16, tp=2, pp=2, sp=False, zero=1,
                         seq_len=4096, micro_batch=2, recompute="selective")
    assert kw == r


def test_none_arguments_use_library_defaults():
    a = memest.pretrain("llama-2-7b", "a100-80gb")
    b = memest.request({"mode": "pretrain", "model": "llama-2-7b", "gpu": "a100-80gb"})
    assert a == b


def test_model_states_bare_count_zero_table():
    r = memest.model_states(7.5e9, gpus=64, zero=1, param_dtype="fp16", grad_dtype="fp16")
    assert isinstance(r, memest.ModelStatesResult)
    assert r.estimate_gb == pytest.approx(31.4, abs=0.05)  # ZeRO paper Table 1: 31.4 GB
    assert r.verdict == "unknown" and r.capacity_bytes is None
    g = memest.model_states("llama-2-7b", "a100-80gb", gpus=8, zero=3)
    # the preset's usable capacity (torch.cuda.mem_get_info's total, 1.6), below the nominal 80 GiB
    usable = {p.id: p for p in memest.gpus()}["a100-80gb"].memory_bytes
    assert g.capacity_bytes == usable and 0.95 * 80 * 2**30 < usable < 80 * 2**30
    assert g.verdict in ("fits", "tight", "oom")


def test_finetune_auto():
    r = memest.finetune("opt-1.3b", "v100-16gb", gpus=4, method="auto")
    assert isinstance(r, memest.FinetuneResult)
    assert r.selected in ("cdp", "zero3", "tp", "dp+tp", "cpu_offload")
    assert r.max_batch >= 1
    assert [m.method for m in r.methods] == ["cdp", "zero3", "tp", "dp+tp"]
    assert all(isinstance(m, memest.FinetuneMethod) for m in r.methods)
    chosen = next(m for m in r.methods if m.method == r.selected)
    assert chosen.max_batch >= r.max_batch


def test_finetune_one_method():
    r = memest.finetune("opt-1.3b", "v100-16gb", gpus=4, method="zero3", batch=8, seq_len=512)
    assert r.method == "zero3" and r.selected is None
    assert r.peak_bytes == r.estimate_bytes
    assert r.per_gpu.m_base > 0 and r.parts.m_p > 0


@pytest.mark.parametrize("kwargs, cls, code, field", [
    (dict(tp=3, gpus=8), memest.InvalidArgumentError, "invalid_argument", "parallel.tp"),
    (dict(gpus=8, recompute="sometimes"), memest.InvalidArgumentError, "invalid_argument",
     "training.recompute"),
])
def test_pretrain_errors(kwargs, cls, code, field):
    with pytest.raises(cls) as info:
        memest.pretrain("llama-3.1-8b", "a100-40gb", **kwargs)
    e = info.value
    assert isinstance(e, memest.MemestError) and isinstance(e, ValueError)
    assert e.code == code and e.field == field and field in str(e)


def test_pretrain_lora_adapter():
    # Llama-3.1-8B, q_proj + v_proj at r 8 (peft's defaults): q 8(4096 + 4096) = 65536,
    # v 8(4096 + 1024) = 40960 per layer, 32 layers: 3407872 trainable; fp32 adapters 4 bytes
    # each, AdamW's two fp32 moments 8 bytes each.
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=1, tp=1, pp=1, seq_len=2048,
                        micro_batch=1, framework="pytorch", optimizer="adamw",
                        adapter={"type": "lora"})
    assert r.trainable_parameters == 3407872
    assert r.adapter.adapter_weights_bytes == 3407872 * 4
    assert r.adapter.adapter_optimizer_bytes == 3407872 * 8
    assert r.training.adapter.targets == ["q_proj", "v_proj"]
    assert memest.enums()["adapter"] == ["none", "lora", "qlora"]
    assert "embed_tokens" in memest.enums()["lora_target"]
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=1, tp=1, pp=1, framework="pytorch",
                        param_dtype="fp32", adapter={"type": "qlora"})
    assert info.value.field == "training.param_dtype"


def test_error_classes_per_status():
    cases = [
        ({"mode": "pretrain", "model": "no-such-model", "gpu": "a100-40gb"},
         memest.UnknownPresetError, "model"),
        ({"mode": "pretrain", "model": "llama-2-7b"}, memest.MissingFieldError, "gpu"),
        ({"mode": "pretrain", "model": "llama-2-7b", "gpu": "a100-40gb", "parallel": {"tpp": 2}},
         memest.UnknownFieldError, "parallel.tpp"),
        ({"mode": "pretrain", "model": 7, "gpu": "a100-40gb"}, memest.FieldTypeError, "model"),
    ]
    for req, cls, field in cases:
        with pytest.raises(cls) as info:
            memest.request(req)
        assert info.value.field == field, req
        assert info.value.code == cls.code


def test_parse_error():
    with pytest.raises(memest.ParseError) as info:
        memest.request_json("{not json")
    assert info.value.code == "parse_error" and info.value.status == 4


def test_error_classes_match_the_library_status_table():
    """One class per status of the library's table (by name), with the library's numbers."""
    from memest import _native
    names = memest.enums()["status"]
    classes = memest.MemestError.__subclasses__()
    assert names[0] == "ok"
    assert sorted(cls.code for cls in classes) == sorted(names[1:])
    for cls in classes:
        assert cls.status == names.index(cls.code), cls
        assert _native.status_name(cls.status) == cls.code, cls


def test_enums_are_the_library_tables():
    e = memest.enums()
    assert e == memest.request({"mode": "enums"}).to_dict()["enums"]
    assert e["verdict"][:3] == ["fits", "tight", "oom"] and "selective" in e["recompute"]
    assert "tp_heads" in e["prune_reason"] and "dp+tp" in e["finetune_method"]
    e["status"].append("changed")  # a copy
    assert "changed" not in memest.enums()["status"]
    bands = memest.verdict_bands()
    assert bands == memest.request({"mode": "enums"}).to_dict()["verdict_bands"]
    assert list(bands) == ["fits", "tight"] and bands["fits"] < bands["tight"]
    # the bands are those the verdicts follow
    r = memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=8, tp=4, pp=2, seq_len=8192)
    assert r.usage_fraction <= bands["fits"] and r.verdict == "fits"


def test_nul_in_json_text_is_a_parse_error():
    good = json.dumps({"mode": "model_states", "model": "llama-2-7b"})
    assert json.loads(memest.request_json(good))["ok"]
    with pytest.raises(memest.ParseError) as info:
        memest.request_json(good + "\0 trailing text the C string would lose")
    assert info.value.code == "parse_error" and info.value.field == ""
    assert "NUL" in info.value.message
    with pytest.raises(memest.ParseError):
        memest.request_json("\0")
    with pytest.raises(memest.ParseError):
        memest.describe_config('{"model_type": "llama"}\0')
    from memest import _native
    with pytest.raises(memest.UnknownPresetError) as preset:
        _native.model_from_preset("gpt2\0")
    assert preset.value.field == "model"
    with pytest.raises(memest.UnknownPresetError):
        _native.gpu_from_preset("a100-40gb\0")
    # a NUL inside a JSON string of a dict request is an escaped character, not the end
    with pytest.raises(memest.UnknownPresetError):
        memest.pretrain("llama-3.1-8b\0", "a100-40gb")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_non_finite_numbers_raise_memest_errors(value):
    with pytest.raises(memest.ParseError) as info:
        memest.pretrain("llama-3.1-8b", "a100-40gb", optimizer_bytes=value)
    assert info.value.code == "parse_error"
    assert info.value.field == "training.optimizer_bytes"
    assert isinstance(info.value, ValueError)
    with pytest.raises(memest.ParseError) as info:
        memest.search("llama-3.1-8b", "a100-40gb", gpus=8, seq_len=8192, global_batch=1024,
                      layouts=[{"tp": 4}, {"tp": value}])
    assert info.value.field == "search.layouts[1].tp"
    # the library refuses the same number written out in text
    with pytest.raises(memest.ParseError):
        memest.request_json('{"mode": "model_states", "model": {"num_parameters": 1e999}}')


def test_values_of_no_json_type_raise_memest_errors():
    with pytest.raises(memest.FieldTypeError) as info:
        memest.request({"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "a100-40gb",
                        "parallel": {"gpus": {8}}})
    assert isinstance(info.value, TypeError) and info.value.code == "wrong_type"


def test_strict_requests():
    # null is not a value: the field is named (leave it out for the default)
    with pytest.raises(memest.FieldTypeError) as info:
        memest.request({"mode": "pretrain", "model": "llama-3.1-8b", "gpu": "a100-40gb",
                        "training": {"recompute": None}})
    assert info.value.field == "training.recompute"
    # duplicate keys in text
    with pytest.raises(memest.ParseError):
        memest.request_json('{"mode": "model_states", "model": "gpt2", "model": "gpt2"}')
    # a GPU object may carry measurements (ignored)
    a = memest.pretrain("llama-3.1-8b", {"preset": "a100-40gb", "measured": {"peak_gib": 30}},
                        gpus=8, tp=4, pp=2, seq_len=8192)
    b = memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=8, tp=4, pp=2, seq_len=8192)
    assert a.estimate_bytes == b.estimate_bytes


def test_search_pins_training_recompute_and_micro_batch():
    r = memest.request({"mode": "search", "model": "llama-3.1-8b", "gpu": "a100-40gb",
                        "parallel": {"gpus": 8},
                        "training": {"seq_len": 8192, "global_batch": 1024, "recompute": "full",
                                     "micro_batch": 2}})
    rows = [row.to_dict() for row in r]
    assert rows and all(row["layout"]["recompute"] == "full" for row in rows)
    assert all(row["layout"]["micro_batch"] == 2 for row in rows)


def test_models_and_gpus():
    ms = memest.models()
    ids = [m.id for m in ms]
    assert "llama-3.1-8b" in ids and len(ids) == len(set(ids))
    llama = ms[ids.index("llama-3.1-8b")]
    assert llama.num_parameters == pytest.approx(8.03e9, rel=1e-3)
    assert llama.num_key_value_heads == 8
    gs = {g.id: g for g in memest.gpus()}
    # usable capacity in bytes (1.6: what torch.cuda.mem_get_info reports, not the nominal 40 GiB)
    assert 0.95 * 40 * 2**30 < gs["a100-40gb"].memory_bytes < 40 * 2**30
    assert memest.pretrain(ids[0], next(iter(gs))).verdict in ("fits", "tight", "oom")


def test_load_config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(LLAMA_CONFIG))
    cfg = memest.load_config(path)
    assert cfg["hidden_size"] == 4096
    a = memest.pretrain(cfg, "a100-40gb", gpus=8, tp=4, pp=2, seq_len=8192)
    b = memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=8, tp=4, pp=2, seq_len=8192)
    assert a.estimate_bytes == b.estimate_bytes and a.stages == b.stages
    assert memest.describe_config(cfg).num_parameters == b.model.num_parameters


def test_load_config_bad(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**LLAMA_CONFIG, "num_attention_heads": 0}))
    with pytest.raises(memest.MemestError) as info:
        memest.load_config(path)
    assert info.value.field.endswith("num_attention_heads")


def test_load_config_and_profile_refuse_duplicates_and_deep_nesting(tmp_path):
    # json.loads kept the last of two equal keys, and ~1,000 levels of nesting raised
    # RecursionError instead of a MemestError
    dup = tmp_path / "dup.json"
    dup.write_text('{"memory_gib": 80, "memory_gib": 40}')
    with pytest.raises(memest.ParseError) as info:
        memest.load_gpu_profile(dup)
    assert info.value.field == "gpu" and "twice" in str(info.value)
    cfg = tmp_path / "config.json"
    text = json.dumps(LLAMA_CONFIG)
    cfg.write_text(text[:-1] + ', "hidden_size": 2048}')
    with pytest.raises(memest.ParseError) as info:
        memest.load_config(cfg)
    assert info.value.field == "model" and "hidden_size" in str(info.value)
    deep = tmp_path / "deep.json"
    deep.write_text('{"a": ' + "[" * 5000 + "]" * 5000 + "}")
    with pytest.raises(memest.ParseError) as info:
        memest.load_gpu_profile(deep)
    assert info.value.field == "gpu"


def test_search():
    r = memest.search("llama-3.1-8b", "a100-40gb", gpus=64, seq_len=8192, global_batch=1024, top=5)
    assert isinstance(r, memest.SearchResult) and r.mode == "search"
    rows = [row.to_dict() for row in r]
    assert len(rows) == 5 and all(isinstance(row, dict) for row in rows)
    speeds = [row["tflops_per_gpu"] for row in rows]
    assert speeds == sorted(speeds, reverse=True)
    assert not any(row["oom_predicted"] for row in rows)
    # The same layout through pretrain(): one computation, the same peak.
    best = rows[0]["layout"]
    p = memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=64, tp=best["tp"], cp=best["cp"],
                        pp=best["pp"], vpp=best["vpp"], micro_batch=best["micro_batch"],
                        seq_len=8192, global_batch=1024, recompute=best["recompute"])
    assert p.peak_bytes == rows[0]["peak_bytes"]
    # A shortlist, with a bad layout counted rather than raised.
    short = memest.search("llama-3.1-8b", "a100-40gb", gpus=16, seq_len=8192, global_batch=1024,
                          layouts=[{"tp": 4, "pp": 2}, {"tp": 3}])
    assert len(short) == 1 and short.to_dict()["pruned"]["tp_heads"] == 1
    with pytest.raises(memest.MemestError) as info:
        memest.search("llama-3.1-8b", "a100-40gb", gpus=64, seq_len=8192)
    assert info.value.field == "training.global_batch"


def test_help_reads_well():
    import pydoc
    text = pydoc.render_doc(memest.pretrain, renderer=pydoc.plaintext)
    assert "4D" in text and "recompute" in text
    assert memest.__doc__ and "MemestError" in memest.__doc__


def test_typed_package():
    pkg = pathlib.Path(memest.__file__).parent
    assert (pkg / "py.typed").exists()


def test_threads_get_their_own_errors():
    import concurrent.futures
    def run(i):
        if i % 2:
            try:
                memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=8, tp=3)
            except memest.InvalidArgumentError as e:
                return e.field
        return memest.pretrain("llama-3.1-8b", "a100-40gb", gpus=8, tp=4, pp=2).verdict
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        out = list(pool.map(run, range(32)))
    assert out == ["fits" if i % 2 == 0 else "parallel.tp" for i in range(32)]


def test_pretrain_expert_parallelism():
    # Mixtral 8x7B as Megatron-LM's example runs it: TP1, PP4, EP8 on 32 GPUs; edp = 32/(1*8*4).
    r = memest.pretrain("mixtral-8x7b", "h100-80gb", gpus=32, pp=4, ep=8, seq_len=4096)
    assert r.layout.ep == 8 and r.layout.etp == 1 and r.layout.edp == 1
    assert r.model.active_parameters < r.model.num_parameters
    # 8 MoE layers per stage, each 8 experts of 3*4096*14336 over ep*etp = 8 GPUs.
    assert r.stages[0].experts.moe_layers == 8
    assert r.stages[0].experts.parameters == 8 * 3 * 4096 * 14336
    assert r.peak_verdict != "oom"
    same = memest.request({"mode": "pretrain", "model": "mixtral-8x7b", "gpu": "h100-80gb",
                           "parallel": {"gpus": 32, "pp": 4, "ep": 8},
                           "training": {"seq_len": 4096}})
    assert same == r
    with pytest.raises(memest.InvalidArgumentError) as e:
        memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=8, ep=2)
    assert e.value.field == "parallel.ep"
    s = memest.search("mixtral-8x7b", "h100-80gb", gpus=64, seq_len=4096, global_batch=256,
                      max_vpp=1, max_ep=4)
    assert all(row.layout.ep <= 4 for row in s)


def test_first_last_stage_layers_and_pipeline_layout_1_7():
    # Llama-3.1-8B's 32 layers over pp 4: first 6, last 6, the two between 10 each.
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=4, tp=1, pp=4, first_stage_layers=6,
                        last_stage_layers=6)
    assert r.layout.first_stage_layers == 6 and r.layout.last_stage_layers == 6
    assert [s.layers for s in r.stages] == [6, 10, 10, 6]
    # first alone: the other three split 27
    f = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=4, tp=1, pp=4, first_stage_layers=5)
    assert [s.layers for s in f.stages] == [5, 9, 9, 9]
    layout = "Et*3|t*5|t*5|t*3|t*3|t*5|t*5|t*3L"
    p = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=4, tp=1, pp=4, vpp=2,
                        pipeline_layout=layout)
    assert p.layout.pipeline_layout == layout
    assert [s.layers for s in p.stages] == [6, 10, 10, 6]
    with pytest.raises(memest.InvalidArgumentError) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=4, tp=1, pp=4, vpp=2,
                        pipeline_layout="Et*3|t*5|t*5|t*3L")
    assert info.value.field == "parallel.pipeline_layout"


def test_lora_router_target_1_7():
    assert "router" in memest.enums()["lora_target"]
    # Qwen3-30B-A3B, r = 8: q_proj 8 * (2048 + 4096) and the router 8 * (2048 + 128) a layer, x 48
    r = memest.pretrain("qwen3-30b-a3b", "h100-80gb", gpus=8, tp=1, pp=1, framework="fsdp",
                        adapter={"type": "lora", "targets": ["q_proj", "router"]})
    assert r.adapter.trainable_parameters == 48 * (49152 + 17408)


def test_finetune_mixture_of_experts_by_hand():
    # Mixtral-8x7B under LLMem (tests/unit/test_finetune.cpp derives the same numbers): all
    # eight experts of every layer in the parameter count; without checkpointing each layer
    # keeps 13 h-wide bytes per token of LLMem's block and 262244 bytes of the sparse block.
    r = memest.finetune("mixtral-8x7b", "v100-16gb", gpus=8, method="cdp", batch=1, seq_len=512,
                        page_bytes=1, chunk_bytes=2 * 64 * 2**20, flash_attention=True,
                        gradient_checkpointing=False)
    assert r.model.num_parameters == 46702792704
    assert r.parts.m_out == (13 * 4096 + 262244) * 512 * 32 + 512 * 4096 * 2


def test_request_fields_are_the_library_registry():
    fields = {f.path: f for f in memest.request_fields()}
    assert len(fields) == len(memest.request_fields())  # one row per path
    liger = fields["training.use_liger_kernel"]
    assert liger.kind == "boolean" and liger.default is False and liger.cli == "--use-liger-kernel"
    recompute = fields["training.recompute"]
    assert recompute.kind == "enum" and recompute.default == "none"
    assert list(recompute.choices) == memest.enums()["recompute"]
    # the registry's defaults are what a request without the field answers with
    assert fields["parallel.tp"].default == 1
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=1, seq_len=1024, global_batch=1)
    assert r.training.recompute == recompute.default
