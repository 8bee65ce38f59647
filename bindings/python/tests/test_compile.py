"""training.compile through the Python binding: a bool (True = "all") or a name of
enums()["compile"] ("none", "all", "model", "loss"). Run against the installed package
(scripts/test.d/20-bindings.sh)."""
import pytest

import memest

# Llama-3.1-8B on one H100 under plain PyTorch, s = 2048, b = 1: the unfused loss on
# 2048 x 128256 = 262668288 bf16 logits keeps 12 B/logit eager (3152019456 bytes) and 4 B/logit
# compiled (1050673152 bytes) at its backward peak (loss_memory).
KW = dict(gpus=1, tp=1, pp=1, seq_len=2048, micro_batch=1, global_batch=1024, framework="pytorch")
EAGER_LOSS, COMPILED_LOSS = 3152019456.0, 1050673152.0


def test_compile_names_come_from_the_library():
    assert memest.enums()["compile"] == ["none", "all", "model", "loss"]


@pytest.mark.parametrize("given, echoed, name, loss_bytes", [
    (False, False, "none", EAGER_LOSS),
    (True, True, "all", COMPILED_LOSS),
    ("all", True, "all", COMPILED_LOSS),
    ("model", True, "model", EAGER_LOSS),
    ("loss", True, "loss", COMPILED_LOSS),
])
def test_compile_takes_a_bool_or_a_name(given, echoed, name, loss_bytes):
    r = memest.pretrain("llama-3.1-8b", "h100-80gb", compile=given, **KW)
    assert r.training.compile is echoed
    assert r.training.compile_components == name
    assert r.stages[0].stack.loss_bytes == loss_bytes


def test_model_keeps_the_blocks_of_all_and_the_loss_of_none():
    # the blocks are compiled under both "model" and "all": the activations of the stage differ
    # only by the loss, which the stage reports apart. With gradient accumulation (1024
    # sequences a step) the gradients are alive at the loss's backward, which is then the peak.
    model = memest.pretrain("llama-3.1-8b", "h100-80gb", compile="model", **KW)
    all_ = memest.pretrain("llama-3.1-8b", "h100-80gb", compile="all", **KW)
    assert model.stages[0].activations_bytes == all_.stages[0].activations_bytes
    assert (model.peak_allocated_bytes - all_.peak_allocated_bytes
            == EAGER_LOSS - COMPILED_LOSS)


@pytest.mark.parametrize("kw, error", [
    (dict(compile="blocks"), memest.InvalidArgumentError),
    (dict(compile=2), memest.FieldTypeError),
    (dict(compile="model", framework="megatron"), memest.InvalidArgumentError),
])
def test_bad_compile_names_the_field(kw, error):
    args = dict(KW, **kw)
    with pytest.raises(error) as info:
        memest.pretrain("llama-3.1-8b", "h100-80gb", **args)
    assert info.value.field == "training.compile", str(info.value)
