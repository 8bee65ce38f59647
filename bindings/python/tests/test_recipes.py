"""The library's fine-tuning recipes and peft's "all-linear" target through the Python binding
(docs/adapters.md): pretrain(recipe=...), recipes(), and the same answer as `memest pretrain
--recipe` when MEMEST_CLI names the program. The trainable counts are worked by hand in
tests/unit/test_recipes.cpp."""
import json
import os
import subprocess

import pytest

import memest


def test_recipes_are_the_library_s():
    names = [r.name for r in memest.recipes()]
    assert names == json.loads(memest.request_json('{"mode": "enums"}'))["recipes"]
    answerai = memest.recipes()[0]
    assert answerai.name == "answerai-fsdp-qlora"
    assert answerai.fields["training.adapter.rank"] == 64
    assert "lora_rank" in answerai.field_sources["training.adapter.rank"]


def test_pretrain_recipe_kwarg():
    # r 64 on q, k, v, gate, up, down: 64 x (8192 + 5120 + 5120 + 3 x 18432) x 32 = 150994944
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=2, seq_len=2048, micro_batch=1,
                        global_batch=8, recipe="answerai-fsdp-qlora")
    assert r.trainable_parameters == 150994944
    assert r.recipe.set["training.framework"] == "fsdp1"
    # an argument given wins: recompute and the adapter's rank (16: 37748736)
    mine = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=2, seq_len=2048, micro_batch=1,
                           global_batch=8, recompute="none", adapter={"rank": 16},
                           recipe="answerai-fsdp-qlora")
    assert mine.trainable_parameters == 37748736
    assert list(mine.recipe.kept) == ["training.recompute", "training.adapter.rank"]
    with pytest.raises(memest.UnknownPresetError) as e:
        memest.pretrain("llama-3.1-8b", "h100-80gb", recipe="axolotl")
    assert e.value.field == "recipe"


def test_all_linear_target():
    # Llama-3.1-8B r 16, the seven projections: 16 x (8192 + 5120 + 5120 + 8192 + 3 x 18432)
    # x 32 = 41943040
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=1, tp=1, pp=1, zero=0, seq_len=2048,
                        framework="pytorch",
                        adapter={"type": "lora", "rank": 16, "targets": ["all-linear"]})
    assert r.trainable_parameters == 41943040
    assert list(r.training.adapter.targets) == ["q_proj", "k_proj", "v_proj", "o_proj",
                                                "gate_proj", "up_proj", "down_proj"]


@pytest.mark.skipif(not os.environ.get("MEMEST_CLI"), reason="MEMEST_CLI (the memest program) not set")
def test_the_same_answer_as_the_cli():
    out = subprocess.run(
        [os.environ["MEMEST_CLI"], "pretrain", "-m", "llama-3.1-8b", "-g", "h100-80gb", "--gpus", "2",
         "--seq", "2048", "--global-batch", "8", "--recipe", "torchtune-lora", "--format", "json"],
        check=True, capture_output=True, text=True).stdout
    cli = json.loads(out)
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", gpus=2, seq_len=2048, micro_batch=1,
                        global_batch=8, cp=1, vpp=1, sp=True, recipe="torchtune-lora")
    # r 8 on q, v, o and the MLP: 8 x (8192 + 5120 + 8192 + 3 x 18432) x 32 = 19660800
    assert cli["trainable_parameters"] == r.trainable_parameters == 19660800
    assert cli["peak_bytes"] == r.peak_bytes
