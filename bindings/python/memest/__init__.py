"""memest: will this LLM training run fit in GPU memory, and where does the memory go?

Python bindings of libmemest. Every number comes from the C library (memest.h) through
memest_request_json and the typed preset/config functions; nothing here re-implements a formula.

    >>> import memest
    >>> r = memest.pretrain(model="llama-3.1-8b", gpu="a100-40gb", gpus=8, tp=4, pp=2, seq_len=8192)
    >>> r.peak_verdict, round(r.peak_gib, 2), round(r.estimate_gib, 2), r.stages[0].layers
    ('fits', 31.39, 27.2, 16)

The headline verdict is `peak_verdict` ("fits", "tight", "oom": the overhead model's peak against
capacity); `verdict` is the paper's, on its Eq. 18 estimate. repr(r) says it in words ("out of
memory"), with `r.dominant_parts` and, when it does not fit, `r.suggestions`. Search results are
sequences of ranked rows (s[0], s[:3], len(s)); results of both give flat rows: to_rows(),
to_csv(), to_dataframe() (pandas, imported only then).

Functions: pretrain, model_states, finetune, search, request (any mode, as a dict),
import_launch (a run's launch files -> the pretrain request they describe, each value's origin),
emit_launch (a layout -> a training stack's flags or keys),
load_config (a Hugging Face config.json), load_gpu_profile (a calibrate/ device profile), models,
gpus, enums, verdict_bands and peak_verdict_bands (the library's names and bands), verdict_words,
peak_error_sigma and search_max_oom_probability (the library's constants).
Arguments left as None are not sent, so the library's own defaults apply. `model` is a preset id, a config dict (load_config), or
(model_states only) a bare parameter count; `gpu` is a preset id or {"memory_gib": 40, ...}.
Errors raise a MemestError subclass with .code ("invalid_argument") and .field ("parallel.tp"),
for every bad input: values the library refuses, NaN and infinities, NUL characters, values of no
JSON type, unreadable files.
"""
from __future__ import annotations

import json
import math
import os
import re
from typing import Any, Dict, List, Mapping, Optional, Union

from . import _native
from ._errors import (FieldTypeError, InternalError, InvalidArgumentError, MemestError,
                      MissingFieldError, NoMemoryError, NullPointerError, OutOfRangeError,
                      ParseError, SizeOverflowError, StructSizeError, UnknownFieldError,
                      UnknownPresetError, UnsupportedError)
from ._results import (EmitResult, FinetuneMethod, FinetuneResult, GpuPreset, ImportResult,
                       ModelPreset, ModelStatesResult, Part, PretrainResult, Record, Result,
                       SearchResult, SearchRow, Stage, StackParts, Suggestion, Throughput, _result,
                       verdict_words)

__version__: str = _native.version_string()
"""The C library's version (memest_version_string)."""

ModelSpec = Union[str, Mapping[str, Any], float, int]
"""A preset id, a dict of Hugging Face config.json fields, or (model_states) a parameter count."""
GpuSpec = Union[str, Mapping[str, Any]]
"""A GPU preset id, or {"memory_gib": 40, "gpus_per_node": 8} / {"preset": ..., ...}."""

__all__ = [
    "__version__", "pretrain", "model_states", "finetune", "search", "request", "request_json",
    "import_launch", "emit_launch",
    "load_config", "load_gpu_profile", "describe_config", "models", "gpus", "version_number",
    "enums", "verdict_bands", "peak_verdict_bands", "verdict_words", "peak_error_sigma",
    "search_max_oom_probability", "recipes", "recompute_modules", "master_weights_names",
    "request_fields",
    "MemestError", "InvalidArgumentError", "MissingFieldError", "FieldTypeError", "ParseError",
    "UnknownPresetError", "UnknownFieldError", "UnsupportedError", "SizeOverflowError",
    "StructSizeError", "NullPointerError", "OutOfRangeError", "NoMemoryError", "InternalError",
    "Record", "Result", "PretrainResult", "Stage", "StackParts", "ModelStatesResult",
    "FinetuneResult",
    "FinetuneMethod", "SearchResult", "SearchRow", "Part", "Suggestion", "ModelPreset", "GpuPreset",
    "Throughput", "ImportResult", "EmitResult",
]


def version_number() -> int:
    """The C library's version number, MAJOR*10000 + MINOR*100 + PATCH."""
    return int(_native.version_number())


def enums() -> Dict[str, List[str]]:
    """The library's enumerations, each a list of names indexed by value ("status", "family",
    "verdict", "recompute", "activation_model", "prune_reason", "finetune_method", "framework",
    "loss", "optimizer"): the names requests and responses use (memest_enum_count,
    memest_enum_name)."""
    return {k: list(v) for k, v in _native.enums().items()}


def recompute_modules() -> List[str]:
    """Megatron-Core's recompute module names, by value (enums()["recompute_module"], 1.11):
    what pretrain(recompute_modules=[...]) and search() take."""
    return list(_native.enums()["recompute_module"])


def master_weights_names() -> List[str]:
    """The master copies the optimizer may keep, by value (enums()["master_weights"], 1.15):
    what pretrain(master_weights=...) and search() take."""
    return list(_native.enums()["master_weights"])


def verdict_bands() -> Dict[str, float]:
    """The upper bound of each bounded verdict band as a fraction of the GPU's capacity, e.g.
    {"fits": 0.8, "tight": 1.0} (memest_verdict_limit); above the last one the verdict is "oom"."""
    bands = {name: float(_native.verdict_limit(name)) for name in _native.enums()["verdict"]}
    return {name: limit for name, limit in bands.items() if limit > 0}


def peak_verdict_bands() -> Dict[str, float]:
    """The bands of the headline verdict (`peak_verdict`: the overhead model's peak against
    capacity), e.g. {"fits": 0.95, "tight": 1.0}, from the library's enums mode."""
    return {k: float(v) for k, v in
            json.loads(_native.request_json('{"mode": "enums"}'))["peak_verdict_bands"].items()}


def peak_error_sigma() -> float:
    """The spread of memest's peak error where it was not fitted (the standard deviation of
    ln(measured / predicted)), from which every result states its peak band and probability of
    running out of memory; from the library's enums mode (MEMEST_PEAK_ERROR_SIGMA)."""
    return float(json.loads(_native.request_json('{"mode": "enums"}'))["peak_error_sigma"])


def search_max_oom_probability() -> float:
    """The search's default max_oom_probability: a layout is ranked only when its probability of
    running out of memory is at most this (MEMEST_SEARCH_MAX_OOM_PROBABILITY, from the enums
    mode)."""
    return float(json.loads(_native.request_json('{"mode": "enums"}'))["search_max_oom_probability"])


def request_fields() -> List[Record]:
    """The pretraining request's plain fields, from the library's field registry
    ({"mode": "fields"}): each with its dotted `path`, `kind` ("integer", "number", "boolean",
    "enum"), `default`, range (`min`, `max`) or `choices`, `cli` flag and `doc`."""
    return [Record(f) for f in
            json.loads(_native.request_json('{"mode": "fields"}'))["fields"]]


def recipes() -> List[Record]:
    """The library's fine-tuning recipes (pretrain(recipe=...)): each with its name,
    description, source (repository, commit, file) and the request fields it sets
    ("fields", by dotted path) with the setting that defines each ("field_sources")."""
    return [Record(r) for r in
            json.loads(_native.request_json('{"mode": "presets"}'))["recipes"]]


def _model(model: ModelSpec) -> Any:
    if isinstance(model, bool):
        raise FieldTypeError("model: expected a preset id, a config dict or a parameter count, "
                             f"got {model!r}", field="model")
    if isinstance(model, (int, float)):
        return {"num_parameters": float(model)}
    if isinstance(model, Mapping):
        return dict(model)
    return model


def _section(**values: Any) -> Dict[str, Any]:
    return {k: v for k, v in values.items() if v is not None}


def _block(value: Any) -> Any:
    """A nested block of the training section (offload, buckets) as given: a mapping becomes a
    dict; anything else is sent as it is, for the library to refuse naming the field."""
    return dict(value) if isinstance(value, Mapping) else value


def _overlap(comm_overlap: Any) -> Any:
    """training.comm_overlap: "default", "none", or a list of enums()["overlap"] names (a tuple
    or set becomes a list); anything else is sent as it is for the library to refuse."""
    if isinstance(comm_overlap, (tuple, set, frozenset)):
        return sorted(comm_overlap) if isinstance(comm_overlap, (set, frozenset)) else list(comm_overlap)
    return comm_overlap


def _names(names: Any) -> Any:
    """A list-valued field (training.recompute_modules): a tuple becomes a list, a set a sorted
    list; anything else is sent as it is for the library to refuse."""
    if isinstance(names, (set, frozenset)):
        return sorted(names)
    return list(names) if isinstance(names, tuple) else names


def _stack(framework: Optional[str], optimizer_in_backward: Optional[bool],
           recompute_every: Optional[int], loss: Optional[str], fp8: Optional[bool],
           compile: Optional[Union[bool, str]],  # noqa: A002
           offload: Optional[Mapping[str, bool]],
           buckets: Optional[Mapping[str, Any]],
           comm_overlap: Any = None, moe_dispatcher: Optional[str] = None,
           attention_kernel: Optional[str] = None, reduce_dtype: Optional[str] = None,
           loss_parallel: Optional[bool] = None, autocast: Optional[bool] = None,
           fp8_all_gather: Optional[bool] = None, no_sync: Optional[bool] = None,
           logits_held: Optional[bool] = None, ddp: Optional[bool] = None,
           loss_chunks: Optional[int] = None, fsdp_use_orig_params: Optional[bool] = None,
           fp4: Optional[bool] = None,
           recompute_modules: Any = None,
           use_liger_kernel: Optional[bool] = None,
           master_weights: Optional[str] = None,
           optimizer_state_dtype: Optional[str] = None) -> Dict[str, Any]:
    """The training-stack fields of the training block (docs/training-stack.md), by their JSON
    names; None leaves a field out (the library's default). The library checks every value and
    combination."""
    return _section(framework=framework, optimizer_in_backward=optimizer_in_backward,
                    recompute_every=recompute_every, loss=loss, fp8=fp8, compile=compile,
                    offload=None if offload is None else _block(offload),
                    buckets=None if buckets is None else _block(buckets),
                    comm_overlap=None if comm_overlap is None else _overlap(comm_overlap),
                    moe_dispatcher=moe_dispatcher, attention_kernel=attention_kernel,
                    reduce_dtype=reduce_dtype, loss_parallel=loss_parallel, autocast=autocast,
                    fp8_all_gather=fp8_all_gather, no_sync=no_sync, logits_held=logits_held,
                    ddp=ddp, loss_chunks=loss_chunks,
                    fsdp_use_orig_params=fsdp_use_orig_params, fp4=fp4,
                    recompute_modules=None if recompute_modules is None
                    else _names(recompute_modules),
                    use_liger_kernel=use_liger_kernel, master_weights=master_weights,
                    optimizer_state_dtype=optimizer_state_dtype)


def request_json(request: Union[str, bytes]) -> str:
    """Answers a JSON request text with the C library's memest_request_json and returns the
    response text. Raises a MemestError subclass for a bad request (ParseError for text that is
    not JSON, a NUL character or bytes that are not UTF-8 included; FieldTypeError for anything
    but text)."""
    if isinstance(request, (bytes, bytearray)):
        try:
            request = bytes(request).decode("utf-8")
        except UnicodeDecodeError as e:
            raise ParseError(f"request is not valid JSON: not UTF-8 ({e})") from None
    if not isinstance(request, str):
        raise FieldTypeError(f"request: expected JSON text, got {type(request).__name__}")
    return _native.request_json(request)


def _path(parent: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


def _non_finite(value: Any, at: str = "") -> Optional[str]:
    """The request field holding a NaN or an infinity ("training.optimizer_bytes"), if any."""
    if isinstance(value, float) and not math.isfinite(value):
        return at
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, (list, tuple)):
        items = enumerate(value)
    else:
        return None
    for k, v in items:
        found = _non_finite(v, _path(at, k))
        if found is not None:
            return found
    return None


def _json_value(value: Any) -> Any:
    """A value json cannot write itself, as JSON: a NumPy / pandas scalar (numpy.int64 from a
    DataFrame row) as its Python number; anything else is refused."""
    item = getattr(value, "item", None)
    if callable(item) and getattr(value, "shape", None) == ():
        return item()
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _dumps(req: Any) -> str:
    """The JSON text of a request dict. What JSON cannot hold raises a MemestError, as the
    library raises for text it cannot read: NaN and infinities (which the library refuses as
    numbers past a double's range) a ParseError naming the field, values of no JSON type a
    FieldTypeError. NumPy scalars are written as the numbers they hold."""
    try:
        return json.dumps(req, allow_nan=False, default=_json_value)
    except ValueError as e:
        field = _non_finite(req) or ""
        where = f"{field}: " if field else ""
        raise ParseError(f"request is not valid JSON: {where}{e}", field=field,
                         code=ParseError.code, status=ParseError.status) from None
    except (TypeError, RecursionError) as e:
        raise FieldTypeError(f"request is not valid JSON: {e}", code=FieldTypeError.code,
                             status=FieldTypeError.status) from None


def request(req: Mapping[str, Any]) -> Result:
    """Answers any request, given as a dict in the JSON request format (docs/json-reference.md),
    for every mode the library knows ("pretrain", "model_states", "finetune",
    "search", "enums", ...). Returns the typed result for the mode (a Result for modes it does
    not know). Raises a MemestError subclass for a bad request: a field set to None (JSON null)
    is refused like any wrong type; leave it out for the library's default."""
    return _result(json.loads(_native.request_json(_dumps(req))))


def pretrain(model: ModelSpec, gpu: GpuSpec, *, gpus: Optional[int] = None,
             tp: Optional[int] = None, cp: Optional[int] = None, pp: Optional[int] = None,
             vpp: Optional[int] = None, sp: Optional[bool] = None, zero: Optional[int] = None,
             seq_len: Optional[int] = None, micro_batch: Optional[int] = None,
             global_batch: Optional[int] = None, recompute: Optional[str] = None,
             flash_attention: Optional[bool] = None, activation_model: Optional[str] = None,
             param_dtype: Optional[str] = None, grad_dtype: Optional[str] = None,
             optimizer: Optional[str] = None, optimizer_bytes: Optional[float] = None,
             framework: Optional[str] = None, optimizer_in_backward: Optional[bool] = None,
             recompute_every: Optional[int] = None, loss: Optional[str] = None,
             fp8: Optional[bool] = None, compile: Optional[Union[bool, str]] = None,  # noqa: A002
             offload: Optional[Mapping[str, bool]] = None,
             buckets: Optional[Mapping[str, Any]] = None,
             ep: Optional[int] = None, etp: Optional[int] = None,
             moe_capacity_factor: Optional[float] = None,
             last_stage_layers: Optional[int] = None,
             first_stage_layers: Optional[int] = None,
             pipeline_layout: Optional[str] = None,
             adapter: Optional[Mapping[str, Any]] = None,
             comm_overlap: Optional[Union[str, List[str]]] = None,
             moe_dispatcher: Optional[str] = None,
             attention_kernel: Optional[str] = None,
             reduce_dtype: Optional[str] = None, loss_parallel: Optional[bool] = None,
             autocast: Optional[bool] = None, fp8_all_gather: Optional[bool] = None,
             no_sync: Optional[bool] = None,
             logits_held: Optional[bool] = None,
             ddp: Optional[bool] = None,
             loss_chunks: Optional[int] = None,
             fsdp_use_orig_params: Optional[bool] = None,
             fp4: Optional[bool] = None,
             recompute_modules: Optional[List[str]] = None,
             use_liger_kernel: Optional[bool] = None,
             master_weights: Optional[str] = None,
             optimizer_state_dtype: Optional[str] = None,
             recipe: Optional[str] = None) -> PretrainResult:
    """Per-GPU memory of 4D-parallel pretraining (DP x TP x PP x CP, SP, ZeRO/distributed
    optimizer, recomputation), per the 4D-parallelism paper (Llama) or Korthikanti et al. (GPT).

    Names come from the library (enums()): recompute (enums()["recompute"]: "none",
    "selective", "full", "op_selective"), activation_model, optimizer (enums()["optimizer"]);
    dtypes: "bf16" | "fp16" | "fp32" | "fp8".

    The training stack (docs/training-stack.md): framework (enums()["framework"]: "megatron"
    by default, "fsdp", "deepspeed", "pytorch", "fsdp1"), loss (enums()["loss"]),
    optimizer_in_backward, recompute_every (one block in N checkpointed), fp8, compile (True =
    "all", False = "none",
    or a name of enums()["compile"]: "model" compiles each block with the loss eager, "loss"
    the loss alone), offload ({"optimizer": True,
    "params": True, "activations": True}) and buckets ({"bucket_cap_mb": 25,
    "gradient_as_bucket_view": True, "reduce_bucket_size": 5e8, ...: the JSON names}). The
    optimizer state bytes are derived from optimizer, framework and param_dtype unless
    optimizer_bytes is given. A combination the library refuses (op_selective under megatron)
    raises InvalidArgumentError naming the field ("training.recompute").
    The adapter (docs/adapters.md): {"type": "lora" | "qlora", "rank", "alpha",
    "dropout", "targets": ["q_proj", ...] (enums()["lora_target"]), "dtype", "double_quant"};
    the response's `trainable_parameters` and `adapter` (base, adapter weights/gradients/
    optimizer, quantisation metadata) name its parts.

    Returns a PretrainResult: estimate_bytes/estimate_gib (Eq. 18, first stage), peak_bytes,
    peak_stage, verdict ("fits", "tight" or "oom": the bands of verdict_bands()),
    peak_allocated_bytes / peak_reserved_bytes / host_bytes, stages[i].*_bytes and
    stages[i].stack (framework_buffer_bytes, master_weights_bytes, loss_bytes, ...).
    Mixture-of-experts models: ep (expert parallel), etp (expert tensor
    parallel, 0 = tp), moe_capacity_factor (0 = drop-less); each stage then has `.experts`
    (moe_layers, parameters, weights/gradients/optimizer/activations bytes, dispatch buffers)
    and the layout ep, etp, edp. last_stage_layers: the last stage's layers, the others split
    the rest (Megatron's --decoder-last-pipeline-num-layers); first_stage_layers (1.7): the
    first stage's (--decoder-first-pipeline-num-layers), with last_stage_layers the stages
    between split the rest. pipeline_layout (1.7): Megatron's --pipeline-model-parallel-layout
    string, e.g. "Et*3|(tt|)*29,m|L" (vpp must equal its virtual stages / pp); a bad one raises
    InvalidArgumentError naming "parallel.pipeline_layout". All three are echoed in r.layout.
    Under framework "fsdp" (1.7) an MoE model takes ep > 1 (torchtitan's expert parallelism)
    and etp 0 or 1; the adapter's targets may name the MoE "router" (1.7).

    The throughput model (with global_batch): `.throughput` (a Throughput: step_seconds,
    tokens_per_s, tflops_per_gpu, mfu, and `.step`, the step's parts in seconds by the names of
    enums()["step_part"]). comm_overlap: the communication hidden behind compute, "default"
    (what the training stack overlaps by itself), "none", or a list of enums()["overlap"] names
    (["dp", "tp"]); the response's training.comm_overlap (r.comm_overlap) says which applied.
    moe_dispatcher: how MoE layers send tokens between expert-parallel ranks, a name of
    enums()["moe_dispatcher"] ("alltoall" by default, "deepep"); it changes the step's ep_comm
    when ep spans nodes (r.moe_dispatcher echoes it). attention_kernel: which attention kernels
    run, a name of enums()["attention_kernel"] ("auto" by default: megatron "fused", the other
    frameworks "flash2"; "triton", 1.17: a Triton FlashAttention kernel such as llm-foundry's MPT
    runs); it changes the step's compute (r.attention_kernel echoes the kernels in effect, never
    "auto").

    The precision policy and the loss beside the stored dtypes (1.6; each echoed in the
    response's training block): reduce_dtype (FSDP's MixedPrecisionPolicy reduce_dtype, "fp32",
    "bf16" or "fp16"; default: grad_dtype), loss_parallel (False: under tp > 1 the logits are
    gathered to the full vocabulary before the loss), autocast (False: fp32 parameters outside
    FSDP compute in their stored dtype without torch.autocast), fp8_all_gather (FSDP2 gathers
    fp8 weights), no_sync (True/False: keep unsharded gradients across accumulation
    micro-batches; default: fsdp1 does, the others do not), logits_held (the loop keeps the
    model's output through backward), and the adapter's "quantize_lm_head" (qlora on an untied
    model: the LM head in NF4 too). framework "fsdp1" is FSDP1 FullyShardedDataParallel;
    optimizer "adamw_foreach" and "paged_adamw_32bit" are torch.optim.AdamW's multi-tensor
    step and bitsandbytes' PagedAdamW32bit.

    ddp (1.7; echoed as training.ddp: "default", True or False): DistributedDataParallel
    around the model. By default DDP wraps the model when the data-parallel size is above 1;
    True also wraps one process (torchrun with DDP around one GPU), so DDP's gradient buckets
    are counted there; False is one GPU, not wrapped. A bucket size (buckets={"bucket_cap_mb":
    25}) alone no longer wraps one process. Read under framework "pytorch" and "fsdp" at zero
    0-1 only; elsewhere, or False with more than one data-parallel rank, InvalidArgumentError
    names "training.ddp".

    The 1.9 fields (each echoed in the response's training block): loss_chunks, the chunks of
    a chunked loss (enums()["loss"]: "chunked", torchtune's num_output_chunks, default 8;
    "chunked_lm_head", LitGPT's LM head in 128-token chunks, default ceil(seq_len / 128);
    "chunked_linear", torchtitan's ChunkedLossWrapper, default 8; None or 0: the loss's own
    default; r.training.loss_chunks echoes the chunks in effect, 0 for a loss that is not
    chunked; a count for another loss, below 0 or above the tokens raises InvalidArgumentError
    naming "training.loss_chunks"). fsdp_use_orig_params: framework "fsdp1" with a "lora"
    adapter in param_dtype, zero 2/3, each block's FlatParameter holding its frozen weights
    with the adapters (use_orig_params=True with a policy wrapping whole blocks: LitGPT's Fabric
    FSDPStrategy, accelerate's TRANSFORMER_BASED_WRAP without peft's policy), so the blocks'
    frozen weights get a gradient too (stages[i].adapter.adapter_gradients_bytes); elsewhere
    InvalidArgumentError names "training.fsdp_use_orig_params". fp4: NVFP4 linear layers
    (Transformer Engine NVFP4BlockScaling, Megatron-LM --fp4-format e2m1) under framework
    "megatron" with fp8 off on a GPU whose profile has fp4 = 1 (B200, GB200: the gpu object's
    fp4 and peak_fp4_tflops); elsewhere InvalidArgumentError names "training.fp4".

    recompute_modules (1.11): Megatron-Core's --recompute-modules, what recompute="selective"
    checkpoints under framework "megatron", a list of enums()["recompute_module"] names
    (recompute_modules()): "core_attn" (the default), "moe_act", "layernorm", "mla_up_proj",
    "mlp", "moe", "shared_experts"; r.recompute_modules (the response's
    training.recompute_modules) lists the modules in effect ([] unless recomputation is
    selective under megatron). An unknown name raises InvalidArgumentError naming
    "training.recompute_modules[i]"; an empty list, another framework, an MoE module on a dense
    model or mla_up_proj without latent attention, "training.recompute_modules".

    use_liger_kernel (1.12): Liger-Kernel's fused RMSNorm and SwiGLU/GeGLU kernels in the
    Hugging Face blocks (frameworks "pytorch", "deepspeed", "fsdp", "fsdp1"), which save fewer
    activations (docs/stack-activations.md); r.use_liger_kernel echoes training.use_liger_kernel.
    Under "megatron", for LayerNorm models and hybrids InvalidArgumentError names
    "training.use_liger_kernel".

    How the optimizer stores what it updates (1.15), the parts of a derived K (leave
    optimizer_bytes out): master_weights, the copy the optimizer updates beside the weights,
    a name of enums()["master_weights"] (master_weights_names()): "auto" (the default: fp32
    beside 16-bit weights under "megatron" and "deepspeed", none elsewhere), "fp32", "bf16",
    "fp16" (Megatron-Core's --main-params-dtype), "remainder" (the 16 bits an fp32 value has
    beyond bf16 weights: store_param_remainders) or "none"; optimizer_state_dtype, the moments'
    dtype ("fp32", "bf16", "fp16", "fp8": Megatron-Core's --exp-avg-dtype, NeMo's optim.dtype;
    default fp32 beside a master, else the weights'). r.master_weights and
    r.optimizer_state_dtype echo the values in effect (training.master_weights,
    training.optimizer_state_dtype). An unknown name, master_weights other than "auto" under
    another framework, a master the weights' dtype rules out (fp32 beside fp32 weights,
    remainders over fp8) or master_weights beside optimizer_bytes raises InvalidArgumentError
    naming "training.master_weights"; an unknown dtype, optimizer_state_dtype with optimizer
    "adamw_8bit" or "sgd" or beside optimizer_bytes, "training.optimizer_state_dtype".

    What a user compares with a measured run, and the verdict's margin (1.6):
    torch_max_memory_allocated_bytes / torch_max_memory_reserved_bytes (what torch.cuda reports,
    the CUDA context left out), nvidia_smi_bytes (reserved + context + paged memory), the peak's
    90 % band (peak_band_bytes, peak_low_bytes, peak_high_bytes) from memest's measured error
    (peak_error_sigma()), oom_probability (of the real peak exceeding capacity) and
    margin_bytes (capacity - peak); each stage has the torch and nvidia-smi figures too, its
    overheads optimizer_step_bytes and its stack unsharded_root_bytes (fsdp1's root unit).

    recipe: a fine-tuning recipe of the library (recipes(): "answerai-fsdp-qlora",
    "torchtune-lora", ...). Its fields fill what this call leaves out; an argument given wins,
    and an adapter dict given is merged field by field (adapter={"rank": 16} keeps the recipe's
    type, alpha and targets). The result's `recipe` says which fields it set and which of yours
    it kept; an unknown name raises UnknownPresetError naming "recipe". The adapter's targets may
    be ["all-linear"] (peft's: every linear but the output layer, expanded for the model).
    """
    req = {
        "mode": "pretrain", "model": _model(model), "gpu": gpu,
        "parallel": _section(gpus=gpus, tp=tp, cp=cp, pp=pp, vpp=vpp, sp=sp, zero=zero, ep=ep,
                             etp=etp, last_stage_layers=last_stage_layers,
                             first_stage_layers=first_stage_layers,
                             pipeline_layout=pipeline_layout),
        "training": _section(seq_len=seq_len, micro_batch=micro_batch, global_batch=global_batch,
                             recompute=recompute, flash_attention=flash_attention,
                             activation_model=activation_model, param_dtype=param_dtype,
                             grad_dtype=grad_dtype, optimizer=optimizer,
                             optimizer_bytes=optimizer_bytes,
                             moe_capacity_factor=moe_capacity_factor,
                             **_stack(framework, optimizer_in_backward, recompute_every, loss, fp8,
                                      compile, offload, buckets, comm_overlap,
                                      moe_dispatcher, attention_kernel, reduce_dtype,
                                      loss_parallel, autocast, fp8_all_gather, no_sync,
                                      logits_held, ddp, loss_chunks,
                                      fsdp_use_orig_params, fp4, recompute_modules,
                                      use_liger_kernel, master_weights,
                                      optimizer_state_dtype),
                             adapter=dict(adapter) if adapter is not None else None),
    }
    if recipe is not None:
        req["recipe"] = recipe
    return request(req)  # type: ignore[return-value]


def model_states(model: ModelSpec, gpu: Optional[GpuSpec] = None, *, gpus: Optional[int] = None,
                 zero: Optional[int] = None, param_dtype: Optional[str] = None,
                 grad_dtype: Optional[str] = None, optimizer: Optional[str] = None,
                 optimizer_bytes: Optional[float] = None) -> ModelStatesResult:
    """Weights, gradients and optimizer states per GPU under data parallelism with ZeRO 0-3.
    `model` may be a bare parameter count (7.5e9). The default is ZeRO 0 with 18 bytes/param.
    Returns a ModelStatesResult (estimate_bytes, estimate_gb in decimal GB, verdict)."""
    req: Dict[str, Any] = {
        "mode": "model_states", "model": _model(model),
        "parallel": _section(gpus=gpus, zero=zero),
        "training": _section(param_dtype=param_dtype, grad_dtype=grad_dtype, optimizer=optimizer,
                             optimizer_bytes=optimizer_bytes),
    }
    if gpu is not None:
        req["gpu"] = gpu
    return request(req)  # type: ignore[return-value]


def finetune(model: ModelSpec, gpu: GpuSpec, *, gpus: Optional[int] = None,
             seq_len: Optional[int] = None, method: str = "auto", tp: Optional[int] = None,
             batch: Optional[int] = None, gradient_checkpointing: Optional[bool] = None,
             flash_attention: Optional[bool] = None, dtype: Optional[str] = None,
             base_bytes: Optional[float] = None, page_bytes: Optional[float] = None,
             chunk_bytes: Optional[float] = None) -> FinetuneResult:
    """LLMem's peak GPU memory for fine-tuning with method "cdp", "zero3", "tp" or "dp+tp"
    at `batch`, or with method="auto" its Algorithm 1: `.selected` (a method or "cpu_offload"),
    `.max_batch`, and `.methods` (max batch, score and peak per method)."""
    req = {
        "mode": "finetune", "model": _model(model), "gpu": gpu,
        "parallel": _section(gpus=gpus),
        "training": _section(seq_len=seq_len),
        "finetune": _section(method=method, tp=tp, batch=batch,
                             gradient_checkpointing=gradient_checkpointing,
                             flash_attention=flash_attention, dtype=dtype, base_bytes=base_bytes,
                             page_bytes=page_bytes, chunk_bytes=chunk_bytes),
    }
    return request(req)  # type: ignore[return-value]


def _layouts(layouts: Any) -> Optional[List[Dict[str, Any]]]:
    if not layouts:
        return None
    if isinstance(layouts, (str, bytes, Mapping)) or not hasattr(layouts, "__iter__"):
        raise FieldTypeError("search.layouts: expected a list of layouts ({\"tp\": 2, ...})",
                             field="search.layouts")
    out = []
    for i, x in enumerate(layouts):
        if not isinstance(x, Mapping):
            raise FieldTypeError(f"search.layouts[{i}]: expected an object ({{\"tp\": 2, ...}}), "
                                 f"got {type(x).__name__}", field=f"search.layouts[{i}]")
        out.append(dict(x))
    return out


def search(model: ModelSpec, gpu: GpuSpec, *, gpus: Optional[int] = None,
           seq_len: Optional[int] = None, global_batch: Optional[int] = None,
           top: Optional[int] = None, layouts: Optional[List[Mapping[str, Any]]] = None,
           max_tp: Optional[int] = None, max_cp: Optional[int] = None,
           max_pp: Optional[int] = None, max_vpp: Optional[int] = None,
           max_micro_batch: Optional[int] = None, recompute: Optional[List[str]] = None,
           zero: Optional[List[int]] = None, tp_within_node: Optional[bool] = None,
           include_oom: Optional[bool] = None, uneven_pipeline: Optional[bool] = None,
           sp: Optional[bool] = None, flash_attention: Optional[bool] = None,
           param_dtype: Optional[str] = None, grad_dtype: Optional[str] = None,
           optimizer: Optional[str] = None, optimizer_bytes: Optional[float] = None,
           framework: Optional[str] = None, optimizer_in_backward: Optional[bool] = None,
           recompute_every: Optional[int] = None, loss: Optional[str] = None,
           fp8: Optional[bool] = None, compile: Optional[Union[bool, str]] = None,  # noqa: A002
           offload: Optional[Mapping[str, bool]] = None,
           buckets: Optional[Mapping[str, Any]] = None,
           max_ep: Optional[int] = None,
           comm_overlap: Optional[Union[str, List[str]]] = None,
           moe_dispatcher: Optional[str] = None,
           attention_kernel: Optional[str] = None,
           fp8_options: Optional[List[bool]] = None,
           compile_options: Optional[List[Union[bool, str]]] = None,
           reduce_dtype: Optional[str] = None, loss_parallel: Optional[bool] = None,
           autocast: Optional[bool] = None, fp8_all_gather: Optional[bool] = None,
           no_sync: Optional[bool] = None, logits_held: Optional[bool] = None,
           ddp: Optional[bool] = None,
           loss_chunks: Optional[int] = None, fsdp_use_orig_params: Optional[bool] = None,
           fp4: Optional[bool] = None,
           recompute_modules: Optional[List[str]] = None,
           use_liger_kernel: Optional[bool] = None,
           master_weights: Optional[str] = None,
           optimizer_state_dtype: Optional[str] = None,
           max_oom_probability: Optional[float] = None,
           emit: Optional[str] = None) -> SearchResult:
    """Ranks parallel layouts by predicted throughput among those predicted to fit (the
    library's search mode). Enumerates tp/cp/pp (divisors of `gpus`, tp within a node unless
    tp_within_node=False), vpp, micro-batches dividing the global batch, the `recompute` and
    `zero` options, or ranks exactly `layouts` ([{"tp": 2, "pp": 2, "micro_batch": 1}, ...]).
    The result is a sequence of its rows, best first (s[0], s[:3], len(s), iteration): each has
    layout, peak_bytes, peak_verdict, tflops_per_gpu, tokens_per_s and a reason; s["pruned"]
    counts what was dropped and why. s.to_dataframe() gives a table with flat columns.
    The training-stack arguments (framework, loss, offload, ...) are pretrain()'s; the search
    enumerates "op_selective" only when `recompute` lists it; comm_overlap, moe_dispatcher
    and attention_kernel are pretrain()'s.
    fp8_options ([False, True]) and compile_options (["none", "model"]: enums()["compile"]
    names) are searched as well (default: the fp8 and compile arguments'); each row then has
    `fp8` and `compile`, `tie` (within s.tie_margin of the best's tokens/s), `gap_to_best` and
    `throughput` (the step's parts, as pretrain()'s).
    reduce_dtype, loss_parallel, autocast, fp8_all_gather, no_sync, logits_held, ddp (1.7),
    loss_chunks, fsdp_use_orig_params and fp4 (1.9), recompute_modules (1.11),
    use_liger_kernel (1.12), master_weights and optimizer_state_dtype (1.15) are pretrain()'s.
    max_oom_probability (default search_max_oom_probability()) ranks only the layouts whose
    probability of running out of memory is at most this (the rest are pruned as "oom"); each
    row has `oom_probability`, `margin_bytes` and `peak_high_bytes`.
    emit ("megatron", "torchtitan", "deepspeed", "accelerate"): the result's `launch` is the best
    layout in that stack's own flags or keys (an EmitResult, as emit_launch() gives it)."""
    req = {
        "mode": "search", "model": _model(model), "gpu": gpu,
        "parallel": _section(gpus=gpus, sp=sp),
        "training": _section(seq_len=seq_len, global_batch=global_batch,
                             flash_attention=flash_attention, param_dtype=param_dtype,
                             grad_dtype=grad_dtype, optimizer=optimizer,
                             optimizer_bytes=optimizer_bytes,
                             **_stack(framework, optimizer_in_backward, recompute_every, loss, fp8,
                                      compile, offload, buckets, comm_overlap,
                                      moe_dispatcher, attention_kernel, reduce_dtype,
                                      loss_parallel, autocast, fp8_all_gather, no_sync,
                                      logits_held, ddp, loss_chunks,
                                      fsdp_use_orig_params, fp4, recompute_modules,
                                      use_liger_kernel, master_weights,
                                      optimizer_state_dtype)),
        "search": _section(top=top, layouts=_layouts(layouts),
                           max_tp=max_tp, max_cp=max_cp, max_pp=max_pp, max_vpp=max_vpp,
                           max_micro_batch=max_micro_batch, recompute=recompute, zero=zero,
                           tp_within_node=tp_within_node, include_oom=include_oom,
                           uneven_pipeline=uneven_pipeline, max_ep=max_ep,
                           fp8=None if fp8_options is None else list(fp8_options),
                           compile=None if compile_options is None else list(compile_options),
                           max_oom_probability=max_oom_probability, emit=emit),
    }
    return request(req)  # type: ignore[return-value]


def _read_text(path: Any, field: str, what: str) -> str:
    """A file's text; a path that cannot be read (missing, a directory, a NUL in its name, not
    UTF-8, not a path) raises InvalidArgumentError naming `field`."""
    try:
        with open(path, encoding="utf-8") as f:
            return f.read()
    except (OSError, UnicodeDecodeError, ValueError, TypeError) as e:
        shown = os.fspath(path) if isinstance(path, (str, bytes, os.PathLike)) else path
        raise InvalidArgumentError(f"{field}: cannot read the {what} {shown!r}: {e}",
                                   field=field) from e


def _strict_loads(text: str, field: str, what: str) -> Any:
    """json.loads that refuses what the C library refuses too: a key given twice in one object
    (json.loads keeps the last silently) and nesting too deep for Python's recursion (a
    RecursionError, not a MemestError, before); ParseError naming `field`."""
    def pairs(items: list) -> dict:
        seen: dict = {}
        for key, value in items:
            if key in seen:
                raise ParseError(f"{field}: the {what} gives the key {key!r} twice in one object",
                                 field=field)
            seen[key] = value
        return seen

    try:
        return json.loads(text, object_pairs_hook=pairs)
    except json.JSONDecodeError as e:
        raise ParseError(f"{field}: the {what} is not valid JSON: {e}", field=field) from e
    except RecursionError as e:
        raise ParseError(f"{field}: the {what} is nested too deeply to read", field=field) from e


def _non_finite_as_none(value: Any) -> Any:
    """`value` with every NaN and infinity (anywhere inside) replaced by None."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _non_finite_as_none(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_non_finite_as_none(v) for v in value]
    return value


def load_config(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """Reads a Hugging Face config.json into a dict usable as `model=`. The file is checked
    by the C library (memest_model_from_config_json); a bad one raises a MemestError (an
    unreadable one InvalidArgumentError with field "model"). Python's bare Infinity, -Infinity
    and NaN (Nemotron-H's "time_step_limit": [0.0, Infinity]) are read where the library does
    not need the value, and come back as None (JSON null, which a request can carry); a value
    the library needs that is not finite is its error, naming the field."""
    text = _read_text(path, "model", "config")
    try:
        _native.model_from_config_json(text)
    except MemestError as e:
        if e.field:
            raise
        # the library's parse errors name no field: this one is the model's
        raise type(e)(f"model: {e.message}", field="model", code=e.code, status=e.status) from e
    config = _strict_loads(text, "model", "config")
    if not isinstance(config, dict):
        raise FieldTypeError("config: expected a JSON object", field="model",
                             code=FieldTypeError.code, status=FieldTypeError.status)
    return _non_finite_as_none(config)


def load_gpu_profile(path: Union[str, "os.PathLike[str]"]) -> Dict[str, Any]:
    """Reads a device profile (memest-calibrate's or calibrate/probe.py's JSON) into a dict usable
    as `gpu=`. The raw figures of its "measured" block are left out: the estimate reads only the
    profile fields. A file that cannot be read, is not JSON or is not an object raises a
    MemestError (InvalidArgumentError, ParseError, FieldTypeError) with field "gpu"; the fields
    themselves are checked by the library when the profile is used."""
    text = _read_text(path, "gpu", "profile")
    profile = _strict_loads(text, "gpu", f"profile {os.fspath(path)!r}")
    if not isinstance(profile, dict):
        raise FieldTypeError(f"gpu: the profile {os.fspath(path)!r} is not a JSON object",
                             field="gpu")
    return {k: v for k, v in profile.items() if k != "measured"}


def describe_config(config: Union[Mapping[str, Any], str]) -> Record:
    """The model memest reads from a config dict or config.json text: its dimensions and
    parameter count (memest_model_from_config_json + memest_model_parameter_count)."""
    if isinstance(config, str):
        text = config
    elif isinstance(config, Mapping):
        text = _dumps(dict(config))
    else:
        raise FieldTypeError(f"model: expected a config dict or config.json text, got "
                             f"{type(config).__name__}", field="model")
    return Record(_native.model_from_config_json(text))


def models() -> List[ModelPreset]:
    """The built-in model presets, with dimensions and parameter counts."""
    return [ModelPreset({"id": i, **_native.model_from_preset(i)}) for i in _native.model_preset_ids()]


def gpus() -> List[GpuPreset]:
    """The built-in GPU presets (capacity in bytes; the 4D paper's nominal GiB)."""
    return [GpuPreset({"id": i, **_native.gpu_from_preset(i)}) for i in _native.gpu_preset_ids()]


# ---- launch files -----------------------------------------------------------------------

PathSpec = Union[str, "os.PathLike[str]"]

_HF_CACHE_WORDS = "Hugging Face cache"
# the name a launch file gives its model, in the library's message when it cannot resolve it
_UNRESOLVED_NAME = re.compile(r' names "([^"\\]+)", which is neither')


def _launch_files(paths: Union[PathSpec, List[PathSpec]]) -> List[Dict[str, str]]:
    """{"name", "text"} of each path, named as given. A file that cannot be read raises
    InvalidArgumentError, one that is not UTF-8 text ParseError, both naming "files[i]" (the
    library names a file holding NUL bytes so)."""
    if isinstance(paths, (str, bytes, os.PathLike)):
        paths = [paths]
    elif not hasattr(paths, "__iter__") or isinstance(paths, Mapping):
        raise FieldTypeError(f"files: expected a path or a list of paths, got {type(paths).__name__}",
                             field="files")
    files = []
    for i, path in enumerate(paths):
        field = f"files[{i}]"
        if not isinstance(path, (str, bytes, os.PathLike)):
            raise FieldTypeError(f"{field}: expected a path, got {type(path).__name__}", field=field)
        name = os.fsdecode(path)
        try:
            with open(path, "rb") as f:
                data = f.read()
        except (OSError, ValueError) as e:
            raise InvalidArgumentError(f"{field}: cannot read {name!r}: {e}", field=field) from e
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ParseError(f"{field}: {name} is binary (not UTF-8 text: {e.reason} at byte "
                             f"{e.start}), not a launch file", field=field) from None
        files.append({"name": name, "text": text})
    return files


def _hub_model_id(error: MemestError, model: Any) -> Optional[str]:
    """The Hugging Face id to fetch config.json for after `error`, or None: the `model` given
    (an "org/name" id the library could not resolve), or, with no model given, the name the
    launch file gives when the library says it is not in the local Hugging Face cache."""
    if error.field != "model":
        return None
    hub_id = (lambda s: isinstance(s, str) and s.count("/") == 1 and not s.startswith((".", "/", "~"))
              and all(s.split("/")))
    if isinstance(model, str):
        # the library says "unknown model preset" for a --model id it cannot resolve, and names
        # the Hugging Face cache for a file's
        if hub_id(model) and (error.code == UnknownPresetError.code or _HF_CACHE_WORDS in error.message):
            return model
        return None
    if model is None and _HF_CACHE_WORDS in error.message:
        m = _UNRESOLVED_NAME.search(error.message)
        if m and hub_id(m.group(1)):
            return m.group(1)
    return None


def import_launch(paths: Union[PathSpec, List[PathSpec]], *, gpu: Optional[GpuSpec] = None,
                  gpus: Optional[int] = None, model: Optional[Union[str, Mapping[str, Any]]] = None,
                  seq_len: Optional[int] = None, format: str = "auto",  # noqa: A002
                  set: Optional[Mapping[str, Any]] = None,  # noqa: A002
                  estimate: bool = False, hf_home: Optional[PathSpec] = None) -> ImportResult:
    """Reads one run's launch files (a torchtitan TOML, a Megatron launch script, a DeepSpeed
    JSON with its launcher, a torchtune / axolotl / LLaMA-Factory / accelerate YAML: the
    library's mode "import") into the pretrain request they describe.

    paths: a path or a list of paths; each file's name in the result (origins, warnings) is the
    path as given. format: "auto" (the library recognises each file) or one of "torchtitan",
    "megatron", "deepspeed", "hf", "torchtune", "axolotl", "llama-factory", "accelerate".
    What launch files do not say is given here: gpu (a preset id or a GPU dict; launch files
    never name the GPU), gpus, model (a preset id, a Hugging Face id or a config dict, over
    what the files name), seq_len; set overrides any request field as a nested dict
    ({"parallel": {"tp": 2}}). hf_home: the Hugging Face hub cache the library reads cached
    config.json files from (default: HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub).
    estimate=True estimates the request too (result.estimate).

    Returns an ImportResult: .request (a pretrain request dict), .origins (where each value
    came from: file and line, framework default, flag, derived), .warnings, .format, .files,
    .estimate. Raises a MemestError naming the field: "gpu" when no GPU is given, "files[0]"
    for a file that cannot be read or is binary, "model" for a model nobody can resolve, and
    the request's own fields (with their origin in the message) for values the library refuses.

    When the model is a Hugging Face id the library cannot resolve (neither a preset nor in
    the local cache) and huggingface_hub is installed, its config.json is fetched with
    huggingface_hub.hf_hub_download (which honours HF_ENDPOINT, HF_HOME, HF_TOKEN and
    HF_HUB_OFFLINE; into hf_home when given) and the import is retried with that config as the
    model; the result's origins["model"]["resolved"] says so. Without huggingface_hub, or when
    the download fails, the library's error is raised."""
    files = _launch_files(paths)
    req: Dict[str, Any] = {"mode": "import", "files": files, "format": format}
    if gpu is not None:
        req["gpu"] = dict(gpu) if isinstance(gpu, Mapping) else gpu
    if gpus is not None:
        req["gpus"] = gpus
    if model is not None:
        req["model"] = dict(model) if isinstance(model, Mapping) else model
    if seq_len is not None:
        req["seq_len"] = seq_len
    if set is not None:
        req["set"] = json.loads(_dumps(dict(set))) if isinstance(set, Mapping) else set
    if hf_home is not None:
        req["hf_home"] = os.fsdecode(hf_home) if isinstance(hf_home, (str, bytes, os.PathLike)) else hf_home
    if estimate:
        req["estimate"] = estimate
    try:
        return request(req)  # type: ignore[return-value]
    except MemestError as e:
        hub_id = _hub_model_id(e, model)
        if hub_id is None:
            raise
        try:
            import huggingface_hub  # noqa: PLC0415 - optional: only for an id nobody has cached
        except ImportError:
            raise e from None
        kwargs = {} if hf_home is None else {"cache_dir": req["hf_home"]}
        try:
            config_path = huggingface_hub.hf_hub_download(hub_id, "config.json", **kwargs)
        except Exception as hub_error:  # noqa: BLE001 - any failure of the hub: the library's error
            raise e from hub_error
        req["model"] = load_config(config_path)
        result = request(req)
        origin = result._data.get("origins", {}).get("model")
        if isinstance(origin, dict):
            origin["resolved"] = f"huggingface_hub: {hub_id} config.json ({os.fspath(config_path)})"
        return result  # type: ignore[return-value]


def emit_launch(req: Union[Mapping[str, Any], ImportResult], format: str) -> EmitResult:  # noqa: A002
    """A pretrain request's layout written in a training stack's own terms (the library's mode
    "emit"): format "megatron" (launch flags), "torchtitan" (TOML keys), "deepspeed" (a
    DeepSpeed JSON) or "accelerate" (an accelerate config). req: a pretrain request dict (or an
    ImportResult, for its request). Returns an EmitResult: .settings ([{"key", "value",
    "section"?}]), .text, .as_dict(). A bad request raises a MemestError naming the field as
    "request.<field>"; a layout the stack cannot run, naming "format"."""
    if isinstance(req, ImportResult):
        req = req.request
    if not isinstance(req, Mapping):
        raise FieldTypeError(f"request: expected a pretrain request dict, got {type(req).__name__}",
                             field="request")
    return request({"mode": "emit", "format": format, "request": dict(req)})  # type: ignore[return-value]
