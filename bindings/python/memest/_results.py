"""Result objects: thin, typed views over the C library's JSON response (the same document the
CLI's `memest request` prints). Attributes read the response; .to_dict() returns a copy of it.

Pretraining and search results also give flat rows (.to_rows(), .to_csv(), .to_dataframe(): one
column per field, layouts and overheads spread out, whole byte counts as integers), and show
themselves in words: repr() and, in Jupyter, _repr_html_() lead with the verdict on the overhead
model's peak ("fits", "tight", "out of memory"), then the peak against capacity and the paper's
estimate beside it."""
from __future__ import annotations

import copy
import csv
import html
import io
import os
from typing import (Any, Dict, Generic, Iterator, List, Optional, Sequence, Type, TypeVar, Union,
                    overload)

GIB = float(2**30)

_WORDS = {"oom": "out of memory"}


def verdict_words(verdict: Optional[str]) -> str:
    """A verdict name of the library ("fits", "tight", "oom", "unknown") in words, as the CLI
    prints it: "oom" is "out of memory"; the others are their own names."""
    if verdict is None:
        return "unknown"
    return _WORDS.get(verdict, verdict)


def _gib(value: Optional[float]) -> str:
    return "?" if value is None else f"{value / GIB:.2f} GiB"


def _percent(fraction: Optional[float]) -> str:
    return "?" if fraction is None else f"{round(fraction * 1000) / 10:g} %"


def _is_byte_key(key: str) -> bool:
    return key.endswith("_bytes") or key in ("parameters", "num_parameters")


def _whole(value: Any) -> Any:
    """A float byte count that is whole as an int (36250370048.0 -> 36250370048)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _flatten(row: Dict[str, Any], into: Optional[Dict[str, Any]] = None, prefix: str = "") -> Dict[str, Any]:
    """One level of columns: nested objects (layout, overheads) spread into the row, their keys
    kept as they are unless the row already has one (then parent_key)."""
    out: Dict[str, Any] = {} if into is None else into
    for key, value in row.items():
        if isinstance(value, dict):
            for k, v in value.items():
                if isinstance(v, (dict, list)):
                    continue
                name = k if k not in out and k not in row else f"{key}_{k}"
                out[name] = v
        elif not isinstance(value, list):
            out[prefix + key] = value
    return out


def _columns_whole(rows: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Whole byte counts as ints (a column of them is an int column in pandas); a count with a
    fraction (fragmentation_bytes: 5336651071.488) stays a float."""
    return [{k: (_whole(v) if _is_byte_key(k) else v) for k, v in r.items()} for r in rows]


def _csv(rows: List[Dict[str, Any]], path: Union[str, "os.PathLike[str]", None]) -> Optional[str]:
    columns: List[str] = []
    for r in rows:
        columns.extend(k for k in r if k not in columns)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({k: ("" if v is None else v) for k, v in r.items()})
    if path is None:
        return buf.getvalue()
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(buf.getvalue())
    return None


def _dataframe(rows: List[Dict[str, Any]]) -> Any:
    try:
        import pandas  # noqa: PLC0415 - optional: imported only when a DataFrame is asked for
    except ImportError as e:
        raise ImportError(
            "to_dataframe() needs pandas, which is not installed (Debian: apt install "
            "python3-pandas; or pip install pandas); to_rows() and to_csv() need nothing") from e
    columns: List[str] = []
    for r in rows:
        columns.extend(k for k in r if k not in columns)
    return pandas.DataFrame(rows, columns=columns)

T = TypeVar("T")


class _Field(Generic[T]):
    """A typed attribute that reads one key of the response."""

    def __init__(self, key: Optional[str] = None, wrap: Optional[type] = None, optional: bool = False):
        self.key = key
        self.wrap = wrap
        self.optional = optional
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name
        self.key = self.key or name

    @overload
    def __get__(self, obj: None, owner: type) -> "_Field[T]": ...
    @overload
    def __get__(self, obj: "Record", owner: type) -> T: ...
    def __get__(self, obj, owner):  # type: ignore[no-untyped-def]
        if obj is None:
            return self
        data = obj._data
        if self.key not in data:
            if self.optional:
                return None
            raise AttributeError(f"{type(obj).__name__} has no {self.key!r} in this response")
        return _wrap(data[self.key], self.wrap)


def _wrap(value: Any, cls: Optional[type] = None) -> Any:
    if isinstance(value, dict):
        return (cls or Record)(value)
    if isinstance(value, list):
        return [_wrap(v, cls) for v in value]
    return value


class Record:
    """A read-only view of one JSON object of a response. Declared fields are typed attributes;
    any other key of the object is reachable as an attribute too (r.layout.dp)."""

    __slots__ = ("_data",)

    def __init__(self, data: Dict[str, Any]) -> None:
        object.__setattr__(self, "_data", data)

    def __getattr__(self, name: str) -> Any:
        data = object.__getattribute__(self, "_data")
        if name in data:
            return _wrap(data[name])
        raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is read-only")

    def __getitem__(self, key: str) -> Any:
        return self._data[key]

    def __contains__(self, key: object) -> bool:
        return key in self._data

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Record) and self._data == other._data

    __hash__ = None  # type: ignore[assignment]

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | set(self._data))

    def keys(self) -> List[str]:
        return list(self._data)

    def to_dict(self) -> Dict[str, Any]:
        """A deep copy of the JSON object (plain dicts, lists, numbers, strings)."""
        return copy.deepcopy(self._data)

    def __repr__(self) -> str:
        shown = {k: v for k, v in self._data.items() if not isinstance(v, (dict, list))}
        body = ", ".join(f"{k}={v!r}" for k, v in list(shown.items())[:8])
        return f"{type(self).__name__}({body})"


class StackParts(Record):
    """The training stack's named parts of one stage: each is also inside the part its memest.h
    comment names (framework buffers and offload staging in the communication buffers, master
    weights in the optimizer states, fsdp1's unsharded root unit in the weights, ...), except
    paged_bytes (CUDA managed memory of paged optimizers), which is outside peak_bytes.
    Megatron's fp32 master weights are reported here too."""
    framework_buffer_bytes: _Field[float] = _Field()
    master_weights_bytes: _Field[float] = _Field()
    loss_bytes: _Field[float] = _Field()
    recompute_bytes: _Field[float] = _Field()
    offload_staging_bytes: _Field[float] = _Field()
    paged_bytes: _Field[float] = _Field()
    # 1.6: fsdp1 keeps the root unit's parameters unsharded from forward to backward (in
    # weights_bytes too); 0 under the other frameworks
    unsharded_root_bytes: _Field[float] = _Field()


class Stage(Record):
    """One pipeline stage (one GPU of that stage) of a pretraining estimate: the papers' terms
    (total_bytes), the overhead model's additions (overheads, overhead_bytes) and peak_bytes."""
    stage: _Field[int] = _Field()
    layers: _Field[int] = _Field()
    microbatches_in_flight: _Field[float] = _Field()
    parameters: _Field[float] = _Field()
    weights_bytes: _Field[float] = _Field()
    gradients_bytes: _Field[float] = _Field()
    optimizer_bytes: _Field[float] = _Field()
    activations_bytes: _Field[float] = _Field()
    total_bytes: _Field[float] = _Field()
    overheads: _Field[Optional[Record]] = _Field(optional=True)
    overhead_bytes: _Field[Optional[float]] = _Field(optional=True)
    peak_bytes: _Field[Optional[float]] = _Field(optional=True)
    # the training stack (README "Training stack")
    peak_allocated_bytes: _Field[Optional[float]] = _Field(optional=True)
    peak_reserved_bytes: _Field[Optional[float]] = _Field(optional=True)
    host_bytes: _Field[Optional[float]] = _Field(optional=True)
    stack: _Field[Optional[StackParts]] = _Field(wrap=StackParts, optional=True)
    # 1.6: what torch.cuda.max_memory_allocated() / max_memory_reserved() report (the CUDA
    # context left out) and what nvidia-smi shows for the process (reserved + context + paged)
    torch_max_memory_allocated_bytes: _Field[Optional[float]] = _Field(optional=True)
    torch_max_memory_reserved_bytes: _Field[Optional[float]] = _Field(optional=True)
    nvidia_smi_bytes: _Field[Optional[float]] = _Field(optional=True)

    @property
    def optimizer_step_bytes(self) -> Optional[float]:
        """What optimizer.step() allocates beyond what the activations freed (adamw_foreach's
        temporaries; overheads.optimizer_step_bytes, in overhead_bytes), or None."""
        return (self._data.get("overheads") or {}).get("optimizer_step_bytes")

    @property
    def unsharded_root_bytes(self) -> Optional[float]:
        """fsdp1's root unit kept unsharded from forward to backward (stack.unsharded_root_bytes,
        in weights_bytes), or None."""
        return (self._data.get("stack") or {}).get("unsharded_root_bytes")
    # A mixture-of-experts model: the routed experts' share of the stage (in the totals above).
    experts: _Field[Optional[Record]] = _Field(optional=True)
    mtp_parameters: _Field[Optional[float]] = _Field(optional=True)


class Throughput(Record):
    """The throughput model's answer for one layout (present when global_batch is given):
    `step_seconds` per global batch, `tokens_per_s`, `tflops_per_gpu`, `mfu` (model FLOPs
    utilisation, a fraction of the GPU's peak), and `step`: the step's parts in seconds by the
    library's names (enums()["step_part"]: "compute", "recompute", "bubble", "tp_comm", ...),
    which add up to step_seconds. Each part is also an attribute: t.compute_seconds."""
    step_seconds: _Field[float] = _Field()
    tokens_per_s: _Field[float] = _Field()
    tflops_per_gpu: _Field[float] = _Field()
    mfu: _Field[float] = _Field()

    @property
    def step(self) -> Dict[str, float]:
        """The step's parts in seconds, {part name: seconds}, in the library's order (a copy)."""
        return dict(self._data.get("step", {}))

    def __getattr__(self, name: str) -> Any:
        step = object.__getattribute__(self, "_data").get("step", {})
        if name.endswith("_seconds") and name[: -len("_seconds")] in step:
            return step[name[: -len("_seconds")]]
        return super().__getattr__(name)

    def __dir__(self) -> List[str]:
        return sorted(set(super().__dir__()) | {f"{k}_seconds" for k in self._data.get("step", {})})

    def fractions(self) -> Dict[str, float]:
        """Each part's share of the step (0 to 1)."""
        total = self._data.get("step_seconds") or 0.0
        return {k: (v / total if total else 0.0) for k, v in self.step.items()}

    def to_row(self) -> Dict[str, Any]:
        """step_seconds, tokens_per_s, tflops_per_gpu, mfu and one <part>_seconds per part."""
        row = {k: self._data.get(k) for k in ("step_seconds", "tokens_per_s", "tflops_per_gpu", "mfu")}
        row.update({f"{k}_seconds": v for k, v in self.step.items()})
        return row

    def __repr__(self) -> str:
        d = self._data
        parts = ", ".join(f"{k} {v:.3f} s" for k, v in self.step.items() if v)
        return (f"Throughput({d.get('step_seconds', 0):.3f} s per step, "
                f"{d.get('tokens_per_s', 0):.0f} tokens/s, {d.get('tflops_per_gpu', 0):.1f} TFLOP/s "
                f"per GPU, MFU {_percent(d.get('mfu'))}: {parts})")


class Part(Record):
    """One of the dominant parts of the most loaded stage's peak (largest first): `part`
    ("activations", "optimizer", "fragmentation", ...), its `bytes` and its `share` of the peak."""
    part: _Field[str] = _Field()
    bytes: _Field[float] = _Field()
    share: _Field[float] = _Field()

    def __repr__(self) -> str:
        return f"Part({self.part!r}, {_gib(self.bytes)}, {_percent(self.share)})"


class Suggestion(Record):
    """A change the library predicts to fit (it ran the request with it): `change` in words,
    `set` the request fields to change ({"training": {"recompute": "full"}}), their
    `peak_bytes` and `peak_verdict`, and `tflops_per_gpu` when known."""
    change: _Field[str] = _Field()
    peak_bytes: _Field[float] = _Field()
    peak_verdict: _Field[str] = _Field()
    tflops_per_gpu: _Field[Optional[float]] = _Field(optional=True)

    @property
    def set(self) -> Dict[str, Dict[str, Any]]:  # noqa: A003 - the response's own name
        """The request fields to change, by block, as a plain dict (a copy)."""
        return copy.deepcopy(self._data.get("set", {}))

    @property
    def kwargs(self) -> Dict[str, Any]:
        """The change as keyword arguments of memest.pretrain() (whose names are the request's
        fields): memest.pretrain(model, gpu, **{**my_kwargs, **suggestion.kwargs})."""
        return {k: v for block in self.set.values() for k, v in block.items()}

    def apply(self, request: Dict[str, Any]) -> Dict[str, Any]:
        """A copy of a request dict with this change applied (for memest.request)."""
        out = copy.deepcopy(dict(request))
        for block, fields in self.set.items():
            out[block] = {**out.get(block, {}), **fields}
        return out

    def __repr__(self) -> str:
        extra = f", {self.tflops_per_gpu:.1f} TFLOP/s per GPU" if self.tflops_per_gpu else ""
        return f"Suggestion({self.change!r}: peak {_gib(self.peak_bytes)}, {verdict_words(self.peak_verdict)}{extra})"


class Result(Record):
    """Any successful response. `mode` says which estimator answered."""
    mode: _Field[str] = _Field()
    model: _Field[Record] = _Field(optional=True)
    gpu: _Field[Optional[Record]] = _Field(optional=True)
    layout: _Field[Record] = _Field(optional=True)
    training: _Field[Record] = _Field(optional=True)
    estimate_bytes: _Field[float] = _Field()
    estimate_gib: _Field[float] = _Field()
    capacity_bytes: _Field[Optional[float]] = _Field(optional=True)
    usage_fraction: _Field[Optional[float]] = _Field(optional=True)
    verdict: _Field[str] = _Field()


_VERDICT_COLOURS = {"fits": ("#1a7f37", "#fff"), "tight": ("#d4a72c", "#1b1f24"),
                    "oom": ("#cf222e", "#fff")}


def _badge(verdict: Optional[str]) -> str:
    bg, fg = _VERDICT_COLOURS.get(verdict or "", ("#57606a", "#fff"))
    return (f'<span style="background:{bg};color:{fg};border-radius:4px;padding:1px 6px;'
            f'font-weight:600">{html.escape(verdict_words(verdict))}</span>')


def _html_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _layout_text(layout: Optional[Dict[str, Any]], training: Optional[Dict[str, Any]]) -> str:
    lay = layout or {}
    tr = training or {}
    parts = [f"{k} {lay[k]}" for k in ("tp", "cp", "pp", "vpp", "dp") if k in lay]
    if "micro_batch" in tr or "micro_batch" in lay:
        parts.append(f"micro-batch {tr.get('micro_batch', lay.get('micro_batch'))}")
    if "recompute" in tr or "recompute" in lay:
        parts.append(f"recompute {tr.get('recompute', lay.get('recompute'))}")
    if "zero" in lay:
        parts.append(f"ZeRO {lay['zero']}")
    return ", ".join(parts)


class PretrainResult(Result):
    """Pretraining (4D parallelism). The headline is `peak_verdict` ("fits", "tight" or "oom"):
    the overhead model's peak (`peak_bytes`, the most loaded stage `peak_stage`) against
    capacity; beside it the paper's Eq. 18 estimate (`estimate_bytes`) and its `verdict`.
    `dominant_parts` says where the memory goes, `suggestions` (when it does not fit) what
    would; `stages` has every stage. `to_dataframe()` / `to_rows()` / `to_csv()`: one row per
    stage."""
    peak_bytes: _Field[float] = _Field()
    peak_gib: _Field[float] = _Field()
    peak_stage: _Field[int] = _Field()
    peak_verdict: _Field[str] = _Field()
    oom_predicted: _Field[Optional[bool]] = _Field(optional=True)
    paper_peak_bytes: _Field[Optional[float]] = _Field(optional=True)
    overheads: _Field[Optional[Record]] = _Field(optional=True)
    stages: _Field[List[Stage]] = _Field(wrap=Stage)
    # the training stack: torch.cuda.max_memory_allocated's and max_memory_reserved's peaks (the
    # reserved one is peak_bytes) and the host memory per GPU process of what is offloaded
    peak_allocated_bytes: _Field[Optional[float]] = _Field(optional=True)
    peak_reserved_bytes: _Field[Optional[float]] = _Field(optional=True)
    host_bytes: _Field[Optional[float]] = _Field(optional=True)
    # the throughput model (when global_batch is given; else None): step time and its parts
    throughput: _Field[Optional[Throughput]] = _Field(wrap=Throughput, optional=True)
    # 1.6, of the peak stage: what torch.cuda and nvidia-smi would report, the peak's 90 % band
    # ([low, high] from memest's measured error, peak_error_sigma()), the probability that the
    # real peak exceeds capacity, and capacity - peak (negative: over by that much)
    torch_max_memory_allocated_bytes: _Field[Optional[float]] = _Field(optional=True)
    torch_max_memory_reserved_bytes: _Field[Optional[float]] = _Field(optional=True)
    nvidia_smi_bytes: _Field[Optional[float]] = _Field(optional=True)
    peak_band_bytes: _Field[Optional[List[float]]] = _Field(optional=True)
    oom_probability: _Field[Optional[float]] = _Field(optional=True)
    margin_bytes: _Field[Optional[float]] = _Field(optional=True)

    @property
    def peak_low_bytes(self) -> Optional[float]:
        """The lower end of the peak's 90 % band (peak_band_bytes[0])."""
        band = self._data.get("peak_band_bytes")
        return band[0] if isinstance(band, list) and len(band) == 2 else None

    @property
    def peak_high_bytes(self) -> Optional[float]:
        """The upper end of the peak's 90 % band (peak_band_bytes[1])."""
        band = self._data.get("peak_band_bytes")
        return band[1] if isinstance(band, list) and len(band) == 2 else None

    @property
    def comm_overlap(self) -> List[str]:
        """The communication kinds overlapped with compute in the step time (enums()["overlap"]
        names; training.comm_overlap of the response)."""
        return list((self._data.get("training") or {}).get("comm_overlap", []))

    @property
    def recompute_modules(self) -> List[str]:
        """The modules selective recomputation checkpoints under Megatron, in effect (1.11;
        recompute_modules() names; training.recompute_modules of the response): ["core_attn"]
        by default, [] when recomputation is not selective or the framework is not megatron."""
        return list((self._data.get("training") or {}).get("recompute_modules", []))

    @property
    def use_liger_kernel(self) -> bool:
        """Whether Liger-Kernel's fused RMSNorm and SwiGLU/GeGLU kernels are modelled (1.12;
        training.use_liger_kernel of the response)."""
        return bool((self._data.get("training") or {}).get("use_liger_kernel", False))

    @property
    def master_weights(self) -> Optional[str]:
        """The master copy the optimizer updates, in effect (1.15; a master_weights_names() name:
        "fp32" by default under megatron and deepspeed with 16-bit weights, "none" where there is
        none, "auto" when optimizer_bytes gave K whole; training.master_weights of the
        response)."""
        return (self._data.get("training") or {}).get("master_weights")

    @property
    def optimizer_state_dtype(self) -> Optional[str]:
        """The optimizer moments' dtype in effect (1.15; "fp32", "bf16", "fp16", "fp8", or
        "default" for an optimizer without moments or when optimizer_bytes gave K whole;
        training.optimizer_state_dtype of the response)."""
        return (self._data.get("training") or {}).get("optimizer_state_dtype")

    @property
    def moe_dispatcher(self) -> Optional[str]:
        """How MoE tokens cross expert-parallel ranks in the step time (an enums()["moe_dispatcher"]
        name; training.moe_dispatcher of the response)."""
        return (self._data.get("training") or {}).get("moe_dispatcher")

    @property
    def attention_kernel(self) -> Optional[str]:
        """The attention kernels in effect in the step time (an enums()["attention_kernel"] name,
        "auto" resolved by framework; training.attention_kernel of the response)."""
        return (self._data.get("training") or {}).get("attention_kernel")

    @property
    def dominant_parts(self) -> List[Part]:
        """The most loaded stage's parts, largest first (empty when the library gives none)."""
        return [Part(p) for p in self._data.get("dominant_parts", [])]

    @property
    def suggestions(self) -> List[Suggestion]:
        """Changes the library predicts to fit, when the peak verdict is not "fits" (else [])."""
        return [Suggestion(s) for s in self._data.get("suggestions", [])]

    @property
    def capacity_gib(self) -> Optional[float]:
        cap = self._data.get("capacity_bytes")
        return None if cap is None else cap / GIB

    def to_rows(self) -> List[Dict[str, Any]]:
        """One flat dict per pipeline stage: the run (model, gpus, tp, cp, pp, vpp, dp, sp, zero,
        seq_len, micro_batch, global_batch, recompute, framework, capacity_bytes, peak_verdict,
        verdict, oom_probability, margin_bytes), then the stage's fields with its overheads and training-stack parts spread
        out; is_peak_stage marks the stage that sets the peak. Whole byte counts are ints."""
        d = self._data
        lay = d.get("layout", {})
        tr = d.get("training", {})
        run: Dict[str, Any] = {"model": (d.get("model") or {}).get("name")}
        for k in ("gpus", "tp", "cp", "pp", "vpp", "dp", "sp", "zero"):
            if k in lay:
                run[k] = lay[k]
        for k in ("seq_len", "micro_batch", "global_batch", "recompute", "framework"):
            if k in tr:
                run[k] = tr[k]
        run.update(capacity_bytes=d.get("capacity_bytes"), peak_verdict=d.get("peak_verdict"),
                   verdict=d.get("verdict"))
        for k in ("oom_probability", "margin_bytes"):
            if k in d:
                run[k] = d[k]
        rows = []
        for s in d.get("stages", []):
            row = dict(run)
            _flatten(s, row)
            row["is_peak_stage"] = s.get("stage") == d.get("peak_stage")
            if isinstance(d.get("throughput"), dict):
                row.update(Throughput(d["throughput"]).to_row())  # the run's step, on every stage
            rows.append(row)
        return _columns_whole(rows)

    def to_csv(self, path: Union[str, "os.PathLike[str]", None] = None) -> Optional[str]:
        """The stages as CSV (to_rows()): the text, or written to `path`."""
        return _csv(self.to_rows(), path)

    def to_dataframe(self) -> Any:
        """The stages as a pandas DataFrame with flat columns (to_rows()). pandas is imported
        here, only now; without it this raises ImportError saying so."""
        return _dataframe(self.to_rows())

    def _summary_lines(self) -> List[str]:
        d = self._data
        cap = d.get("capacity_bytes")
        who = f"{(d.get('model') or {}).get('name', '?')} on {(d.get('layout') or {}).get('gpus', '?')} x " \
              f"{(d.get('gpu') or {}).get('name', '?')}"
        lines = [f"{who} | {_layout_text(d.get('layout'), d.get('training'))}"]
        if cap:
            lines.append(f"peak {_gib(d.get('peak_bytes'))} of {_gib(cap)} = "
                         f"{_percent(d['peak_bytes'] / cap)} (stage {d.get('peak_stage')}, the overhead model)")
            lines.append(f"the paper's estimate (Eq. 18): {_gib(d.get('estimate_bytes'))} = "
                         f"{_percent(d.get('usage_fraction'))}, {verdict_words(d.get('verdict'))} by the paper's bands")
            if "oom_probability" in d and self.peak_low_bytes is not None:
                lines.append(f"peak 90 % band {_gib(self.peak_low_bytes)} to {_gib(self.peak_high_bytes)}, "
                             f"probability of running out of memory {_percent(d['oom_probability'])}")
        else:
            lines.append(f"peak {_gib(d.get('peak_bytes'))}; the paper's estimate {_gib(d.get('estimate_bytes'))} "
                         "(no capacity given)")
        tr = d.get("training") or {}
        if tr.get("framework", "megatron") != "megatron" and "peak_allocated_bytes" in d:
            lines.append(f"{tr['framework']}: allocated {_gib(d.get('peak_allocated_bytes'))}, "
                         f"reserved {_gib(d.get('peak_reserved_bytes'))}, "
                         f"host {_gib(d.get('host_bytes'))}")
        parts = self.dominant_parts[:4]
        if parts:
            lines.append("largest parts: " + ", ".join(
                f"{p.part} {_gib(p.bytes)} ({round(p.share * 100)} %)" for p in parts))
        for s in self.suggestions:
            lines.append(f"would fit: {s.change} (peak {_gib(s.peak_bytes)}, {verdict_words(s.peak_verdict)})")
        tp = d.get("throughput")
        if isinstance(tp, dict):
            lines.append(f"step {tp.get('step_seconds', 0):.3f} s, {tp.get('tokens_per_s', 0):.0f} tokens/s, "
                         f"{tp.get('tflops_per_gpu', 0):.1f} TFLOP/s per GPU, MFU {_percent(tp.get('mfu'))}")
        return lines

    def __repr__(self) -> str:
        head = f"PretrainResult: {verdict_words(self._data.get('peak_verdict'))}"
        return "\n  ".join([head, *self._summary_lines()])

    def _repr_html_(self) -> str:
        d = self._data
        lines = self._summary_lines()
        out = [f"<div><p><b>PretrainResult</b> {_badge(d.get('peak_verdict'))}</p><ul>"]
        out += [f"<li>{html.escape(line)}</li>" for line in lines if not line.startswith(("would fit:", "largest parts:"))]
        out.append("</ul>")
        if isinstance(d.get("throughput"), dict):
            t = Throughput(d["throughput"])
            out.append("<p>Step time (the throughput model):</p>")
            out.append(_html_table(["part", "seconds", "share"],
                                   [[k, f"{v:.3f}", _percent(t.fractions()[k])] for k, v in t.step.items() if v]))
        parts = self.dominant_parts
        if parts:
            out.append("<p>Where the memory goes (the most loaded stage):</p>")
            out.append(_html_table(["part", "GiB", "share"],
                                   [[p.part, f"{p.bytes / GIB:.2f}", _percent(p.share)] for p in parts]))
        sugg = self.suggestions
        if sugg:
            out.append("<p>Changes predicted to fit:</p>")
            out.append(_html_table(["change", "peak GiB", "verdict", "set"],
                                   [[s.change, f"{s.peak_bytes / GIB:.2f}", verdict_words(s.peak_verdict),
                                     ", ".join(f"{b}.{k}={v}" for b, f in s.set.items() for k, v in f.items())]
                                    for s in sugg]))
        stages = d.get("stages", [])
        if stages:
            out.append("<p>Stages (GiB):</p>")
            out.append(_html_table(
                ["stage", "layers", "weights", "gradients", "optimizer", "activations", "total (paper)", "overheads", "peak"],
                [[s.get("stage"), s.get("layers")] + [f"{(s.get(k) or 0) / GIB:.2f}" for k in (
                    "weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "total_bytes",
                    "overhead_bytes", "peak_bytes")] for s in stages]))
        out.append("</div>")
        return "".join(out)


class ModelStatesResult(Result):
    """Model states per GPU under ZeRO (weights, gradients, optimizer)."""
    weights_bytes: _Field[float] = _Field()
    gradients_bytes: _Field[float] = _Field()
    optimizer_bytes: _Field[float] = _Field()
    estimate_gb: _Field[float] = _Field()

    def __repr__(self) -> str:
        d = self._data
        cap = d.get("capacity_bytes")
        where = f" of {_gib(cap)} = {_percent(d.get('usage_fraction'))}" if cap else " (no capacity given)"
        return (f"ModelStatesResult: {verdict_words(d.get('verdict'))}\n  model states per GPU "
                f"{_gib(d.get('estimate_bytes'))}{where} (weights {_gib(d.get('weights_bytes'))}, "
                f"gradients {_gib(d.get('gradients_bytes'))}, optimizer {_gib(d.get('optimizer_bytes'))})")

    def _repr_html_(self) -> str:
        return (f"<div><p><b>ModelStatesResult</b> {_badge(self._data.get('verdict'))}</p>"
                f"<pre>{html.escape(repr(self).split(chr(10), 1)[1].strip())}</pre></div>")


class FinetuneMethod(Record):
    """One method's row of LLMem's Algorithm 1 (finetune with method="auto")."""
    method: _Field[str] = _Field()
    applicable: _Field[bool] = _Field()
    tp: _Field[Optional[int]] = _Field(optional=True)
    dp: _Field[Optional[int]] = _Field(optional=True)
    max_batch: _Field[Optional[int]] = _Field(optional=True)
    score: _Field[Optional[float]] = _Field(optional=True)
    peak_bytes: _Field[Optional[float]] = _Field(optional=True)
    reason: _Field[Optional[str]] = _Field(optional=True)


_LLMEM_TERMS = (("m_base", "CUDA context, framework"), ("m_p", "fp16 + fp32 parameters"),
                ("m_os", "momentum + variance"), ("m_out", "kept outputs"),
                ("m_lm", "logits, loss, LM head"), ("m_back", "TP backward buffer"))


class FinetuneResult(Result):
    """Fine-tuning (LLMem): the peak per GPU, its terms, and with method="auto" the selection.
    The headline is `peak_verdict` (1.11): "fits" up to the fits band of capacity
    (peak_verdict_bands()), "tight" up to capacity, else "oom" ("oom" too when Algorithm 1
    selects CPU offloading); `verdict` is LLMem's own test: "fits" when the peak is within
    capacity."""
    method: _Field[str] = _Field()
    peak_verdict: _Field[Optional[str]] = _Field(optional=True)
    peak_bytes: _Field[Optional[float]] = _Field(optional=True)
    selected: _Field[Optional[str]] = _Field(optional=True)
    max_batch: _Field[Optional[int]] = _Field(optional=True)
    methods: _Field[Optional[List[FinetuneMethod]]] = _Field(wrap=FinetuneMethod, optional=True)
    parts: _Field[Optional[Record]] = _Field(optional=True)
    per_gpu: _Field[Optional[Record]] = _Field(optional=True)
    environment: _Field[Optional[Record]] = _Field(optional=True)

    def _summary_lines(self) -> List[str]:
        d = self._data
        cap = d.get("capacity_bytes")
        who = f"{(d.get('model') or {}).get('name', '?')} on {(d.get('layout') or {}).get('gpus', '?')} x " \
              f"{(d.get('gpu') or {}).get('name', '?')}"
        if d.get("selected") == "cpu_offload":
            return [f"{who} | LLMem's Algorithm 1: no method fits, CPU offloading"]
        method = d.get("selected") or d.get("method")
        batch = d.get("max_batch") if d.get("selected") else (d.get("training") or {}).get("batch")
        how = "LLMem's Algorithm 1 selects " if d.get("selected") else "LLMem: "
        lines = [f"{who} | {how}{method} at batch {batch} per GPU"]
        peak = d.get("peak_bytes", d.get("estimate_bytes"))
        if cap:
            lines.append(f"peak {_gib(peak)} of {_gib(cap)} = {_percent(peak / cap)}")
        per_gpu = d.get("per_gpu") or {}
        if per_gpu:
            lines.append("per GPU: " + ", ".join(f"{k} {_gib(per_gpu[k])}" for k, _ in _LLMEM_TERMS if k in per_gpu))
        return lines

    def _headline(self) -> Optional[str]:
        return self._data.get("peak_verdict", self._data.get("verdict"))

    def __repr__(self) -> str:
        head = f"FinetuneResult: {verdict_words(self._headline())}"
        return "\n  ".join([head, *self._summary_lines()])

    def _repr_html_(self) -> str:
        d = self._data
        out = [f"<div><p><b>FinetuneResult</b> {_badge(self._headline())}</p><ul>"]
        out += [f"<li>{html.escape(line)}</li>" for line in self._summary_lines() if not line.startswith("per GPU")]
        out.append("</ul>")
        parts, per_gpu = d.get("parts") or {}, d.get("per_gpu") or {}
        if parts or per_gpu:
            out.append(_html_table(["term", "what it holds", "single GPU (GiB)", "per GPU (GiB)"], [
                [k, what, f"{parts[k] / GIB:.2f}" if k in parts else "", f"{per_gpu[k] / GIB:.2f}" if k in per_gpu else ""]
                for k, what in _LLMEM_TERMS if k in parts or k in per_gpu]))
        if isinstance(d.get("methods"), list):
            out.append(_html_table(["method", "applies", "max batch", "score", "peak GiB"], [
                [m.get("method"), "yes" if m.get("applicable") else "no", m.get("max_batch", ""),
                 m.get("score", ""), f"{m['peak_bytes'] / GIB:.2f}" if m.get("peak_bytes") else ""]
                for m in d["methods"]]))
        out.append("</div>")
        return "".join(out)


class SearchRow(Record):
    """One ranked layout of a search: `rank`, `layout` (tp, cp, pp, vpp, dp, micro_batch,
    recompute, zero, ...), `peak_bytes` and `peak_verdict` (the overhead model), the paper's
    `estimate_bytes` and `verdict`, `tflops_per_gpu`, `tokens_per_s`, `reason`."""
    rank: _Field[int] = _Field()
    layout: _Field[Record] = _Field()
    peak_bytes: _Field[float] = _Field()
    peak_verdict: _Field[str] = _Field()
    estimate_bytes: _Field[float] = _Field()
    verdict: _Field[str] = _Field()
    oom_predicted: _Field[bool] = _Field()
    tflops_per_gpu: _Field[Optional[float]] = _Field(optional=True)
    tokens_per_s: _Field[Optional[float]] = _Field(optional=True)
    step_seconds: _Field[Optional[float]] = _Field(optional=True)
    reason: _Field[Optional[str]] = _Field(optional=True)
    # the searched training-stack options and the ranking's ties
    fp8: _Field[Optional[bool]] = _Field(optional=True)
    compile: _Field[Optional[str]] = _Field(optional=True)
    tie: _Field[Optional[bool]] = _Field(optional=True)
    gap_to_best: _Field[Optional[float]] = _Field(optional=True)
    throughput: _Field[Optional[Throughput]] = _Field(wrap=Throughput, optional=True)
    # 1.6: the probability of running out of memory (as PretrainResult's), capacity - peak, and
    # the upper end of the peak's 90 % band
    oom_probability: _Field[Optional[float]] = _Field(optional=True)
    margin_bytes: _Field[Optional[float]] = _Field(optional=True)
    peak_high_bytes: _Field[Optional[float]] = _Field(optional=True)

    @property
    def mfu(self) -> Optional[float]:
        tp = self._data.get("throughput")
        return tp.get("mfu") if isinstance(tp, dict) else None

    def to_row(self) -> Dict[str, Any]:
        """The row with its layout spread into columns (rank, tp, cp, pp, vpp, dp, micro_batch,
        recompute, zero, ..., peak_bytes, peak_verdict, ..., fp8, compile, tie, gap_to_best,
        mfu, <part>_seconds of the step); whole byte counts as ints."""
        row = _flatten({"rank": self._data.get("rank"), "layout": self._data.get("layout", {})})
        _flatten({k: v for k, v in self._data.items() if k not in ("rank", "layout", "throughput")}, row)
        if isinstance(self._data.get("throughput"), dict):
            for k, v in Throughput(self._data["throughput"]).to_row().items():
                row.setdefault(k, v)
        return {k: (_whole(v) if _is_byte_key(k) else v) for k, v in row.items()}

    def __repr__(self) -> str:
        d = self._data
        tf = d.get("tflops_per_gpu")
        speed = f", {tf:.1f} TFLOP/s per GPU" if isinstance(tf, (int, float)) else ""
        tie = " (tied with the best)" if d.get("tie") else ""
        return (f"SearchRow(rank {d.get('rank')}{tie}: {_layout_text(d.get('layout'), None)}; peak "
                f"{_gib(d.get('peak_bytes'))}, {verdict_words(d.get('peak_verdict'))}{speed})")


class SearchResult(Result):
    """A layout search: a sequence of its ranked rows, best first (SearchRow): `s[0]`, `s[:3]`
    (a list), `len(s)`, `for row in s`. `to_dataframe()` / `to_rows()` / `to_csv()` give flat
    columns. `s["pruned"]` and the other response keys stay reachable by name."""

    @property
    def layouts(self) -> List[SearchRow]:
        for key in ("layouts", "results", "candidates", "top"):
            if isinstance(self._data.get(key), list):
                return [SearchRow(v) if isinstance(v, dict) else v for v in self._data[key]]
        return []

    @property
    def tie_margin(self) -> Optional[float]:
        """The relative tokens/s difference below which rows are ties with the best (row.tie)."""
        return self._data.get("tie_margin")

    @property
    def max_oom_probability(self) -> Optional[float]:
        """The largest probability of running out of memory a ranked row may have (the request's
        search.max_oom_probability, or the library's default)."""
        return self._data.get("max_oom_probability")

    @property
    def rows(self) -> List[SearchRow]:
        """The ranked rows, best first (as iteration gives them)."""
        return self.layouts

    def __iter__(self) -> Iterator[SearchRow]:  # type: ignore[override]
        return iter(self.layouts)

    def __len__(self) -> int:
        return len(self.layouts)

    @overload  # type: ignore[override]
    def __getitem__(self, key: int) -> SearchRow: ...
    @overload
    def __getitem__(self, key: slice) -> List[SearchRow]: ...
    @overload
    def __getitem__(self, key: str) -> Any: ...
    def __getitem__(self, key):  # type: ignore[no-untyped-def]
        if isinstance(key, bool):
            raise TypeError("search results are indexed by position (int or slice) or key (str)")
        if isinstance(key, (int, slice)):
            return self.layouts[key]
        return self._data[key]

    def to_rows(self) -> List[Dict[str, Any]]:
        """One flat dict per ranked layout (SearchRow.to_row()), best first."""
        return _columns_whole([r.to_row() for r in self.layouts])

    def to_csv(self, path: Union[str, "os.PathLike[str]", None] = None) -> Optional[str]:
        """The ranked layouts as CSV (to_rows()): the text, or written to `path`."""
        return _csv(self.to_rows(), path)

    def to_dataframe(self) -> Any:
        """The ranked layouts as a pandas DataFrame with flat columns (to_rows()). pandas is
        imported here, only now; without it this raises ImportError saying so."""
        return _dataframe(self.to_rows())

    @property
    def launch(self) -> Optional["EmitResult"]:
        """The best layout in a training stack's own flags or keys (search(..., emit=
        "megatron")): an EmitResult, or None when the search was not asked to emit one or
        ranked no layout."""
        launch = self._data.get("launch")
        return EmitResult(launch) if isinstance(launch, dict) else None

    def _summary(self) -> str:
        d = self._data
        gpu = (d.get("gpu") or {})
        who = f"{(d.get('model') or {}).get('name', '?')} on {d.get('gpus', '?')} x {gpu.get('name', '?')}"
        if not len(self):
            return f"{who}: no layout of the {d.get('candidates', '?')} considered fits"
        return (f"{who}: {d.get('ranked', len(self))} of {d.get('candidates', '?')} layouts ranked; "
                f"the best {len(self)}, fastest first")

    def __repr__(self) -> str:
        rows = self.layouts
        lines = [f"SearchResult: {self._summary()}"]
        lines += [f"  {r!r}" for r in rows[:10]]
        if len(rows) > 10:
            lines.append(f"  ... {len(rows) - 10} more")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        header = ["rank", "tp", "cp", "pp", "vpp", "dp", "micro_batch", "recompute", "zero",
                  "peak GiB", "verdict", "paper's estimate GiB", "TFLOP/s per GPU"]
        body = []
        for r in self.layouts:
            lay = r._data.get("layout", {})
            tf = r._data.get("tflops_per_gpu")
            rank = f"{r._data.get('rank')}{'=' if r._data.get('tie') else ''}"
            body.append([rank, *[lay.get(k, "") for k in header[1:9]],
                         f"{r._data.get('peak_bytes', 0) / GIB:.2f}", verdict_words(r._data.get("peak_verdict")),
                         f"{r._data.get('estimate_bytes', 0) / GIB:.2f}", f"{tf:.1f}" if tf else ""])
        return (f"<div><p><b>SearchResult</b> {html.escape(self._summary())}</p>"
                f"{_html_table(header, body)}</div>")


class EmitResult(Result):
    """A layout written in a training stack's own terms (emit_launch(), or a search's
    `launch`): `format` ("megatron", "torchtitan", "deepspeed", "accelerate"), `settings` (one
    Record per flag or key: .key, .value and, for TOML and YAML formats, .section) and `text`
    (what to paste into the launch file). `as_dict()` maps each key to its value."""
    format: _Field[str] = _Field()  # noqa: A003 - the response's own name
    settings: _Field[List[Record]] = _Field()
    text: _Field[str] = _Field()

    def as_dict(self) -> Dict[str, Any]:
        """{key: value} of the settings, in their order ({"--tensor-model-parallel-size": 2})."""
        return {s["key"]: s.get("value") for s in self._data.get("settings", [])}

    def __str__(self) -> str:
        return str(self._data.get("text", ""))

    def __repr__(self) -> str:
        n = len(self._data.get("settings", []))
        return f"EmitResult({self._data.get('format')!r}: {n} settings)"


class ImportResult(Result):
    """One run's launch files read into a pretrain request (import_launch()): `request` (a
    complete "pretrain" request, as a dict to pass to request() or change), `origins` (request
    field path -> a Record saying where its value came from: o["from"] is "file" with .file,
    .line, .key; "default" with .framework, .default, .defined_in; "flag" with .flag; "derived"
    with .rule), `warnings` (settings that change memory but the request cannot represent: .file,
    .line, .key, .message), `format` (the run's main format), `files` (each file with the
    format it was read as) and `estimate` (the PretrainResult, when asked for with
    estimate=True; else None)."""
    format: _Field[str] = _Field()  # noqa: A003 - the response's own name
    files: _Field[List[Record]] = _Field()
    warnings: _Field[List[Record]] = _Field()

    @property
    def request(self) -> Dict[str, Any]:
        """The pretrain request the files describe: a copy, yours to change and send."""
        return copy.deepcopy(self._data.get("request", {}))

    @property
    def origins(self) -> Dict[str, Record]:
        """Where each request field's value came from, by its dotted path ("parallel.tp");
        each a Record (o["from"], o["line"], ...)."""
        return {k: Record(v) if isinstance(v, dict) else v
                for k, v in self._data.get("origins", {}).items()}

    @property
    def estimate(self) -> Optional["PretrainResult"]:
        """The estimate of the request (estimate=True), or None."""
        est = self._data.get("estimate")
        return PretrainResult(est) if isinstance(est, dict) else None

    def __repr__(self) -> str:
        req = self._data.get("request", {})
        par, tr = req.get("parallel", {}), req.get("training", {})
        model = req.get("model")
        model = model if isinstance(model, str) else (model or {}).get("model_type", "a config")
        gpu = req.get("gpu")
        gpu = gpu if isinstance(gpu, str) else "a custom GPU"
        names = ", ".join(f.get("name", "?") for f in self._data.get("files", []))
        layout = ", ".join(f"{k} {par[k]}" for k in ("tp", "pp", "cp", "zero") if k in par)
        lines = [f"ImportResult({self._data.get('format')}: {names}): {model} on "
                 f"{par.get('gpus', '?')} x {gpu}; {layout}; micro_batch "
                 f"{tr.get('micro_batch', '?')}, seq_len {tr.get('seq_len', '?')}, "
                 f"{len(self._data.get('warnings', []))} warnings"]
        est = self.estimate
        if est is not None:
            lines.append(f"  {est!r}")
        return "\n".join(lines)


class ModelPreset(Record):
    """A built-in model preset (memest_model_from_preset), with its parameter count."""
    id: _Field[str] = _Field()
    name: _Field[str] = _Field()
    family: _Field[str] = _Field()
    num_parameters: _Field[float] = _Field()
    hidden_size: _Field[int] = _Field()
    num_hidden_layers: _Field[int] = _Field()
    num_attention_heads: _Field[int] = _Field()
    num_key_value_heads: _Field[int] = _Field()
    intermediate_size: _Field[int] = _Field()
    vocab_size: _Field[int] = _Field()
    # 1.6: > 0: logits = cap * tanh(logits / cap) before the loss (Gemma 2); 0: none
    final_logit_softcapping: _Field[float] = _Field()
    # 1.8: hybrid models' layers, one character each ("" for attention layers only): mixers
    # 'A' attention, 'M' Mamba-2, 'G' gated DeltaNet, 'P' both side by side, '-' none, and
    # since 1.13 'S' Mamba-1 and 'K' Kimi Delta Attention; MLPs 'D' dense, 'E' experts, '-' none
    mixer_pattern: _Field[str] = _Field()
    mlp_pattern: _Field[str] = _Field()


class GpuPreset(Record):
    """A built-in GPU preset (memest_gpu_from_preset)."""
    id: _Field[str] = _Field()
    name: _Field[str] = _Field()
    memory_bytes: _Field[float] = _Field()
    gpus_per_node: _Field[int] = _Field()
    peak_bf16_tflops: _Field[float] = _Field()
    context_bytes: _Field[float] = _Field()
    page_bytes: _Field[float] = _Field()


_BY_MODE: Dict[str, Type[Result]] = {
    "pretrain": PretrainResult,
    "model_states": ModelStatesResult,
    "finetune": FinetuneResult,
    "search": SearchResult,
    "import": ImportResult,
    "emit": EmitResult,
}


def _result(data: Dict[str, Any]) -> Result:
    return _BY_MODE.get(str(data.get("mode")), Result)(data)
