"""Result objects: thin, typed views over the C library's JSON response (the same document the
CLI's `memest request` prints). Attributes read the response; .to_dict() returns a copy of it."""
from __future__ import annotations

import copy
from typing import Any, Dict, Generic, Iterator, List, Optional, Type, TypeVar, overload

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


class Stage(Record):
    """One pipeline stage (one GPU of that stage) of a pretraining estimate."""
    stage: _Field[int] = _Field()
    layers: _Field[int] = _Field()
    microbatches_in_flight: _Field[float] = _Field()
    parameters: _Field[float] = _Field()
    weights_bytes: _Field[float] = _Field()
    gradients_bytes: _Field[float] = _Field()
    optimizer_bytes: _Field[float] = _Field()
    activations_bytes: _Field[float] = _Field()
    total_bytes: _Field[float] = _Field()


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


class PretrainResult(Result):
    """Pretraining (4D parallelism): the paper's Eq. 18 estimate, the peak stage, every stage."""
    peak_bytes: _Field[float] = _Field()
    peak_gib: _Field[float] = _Field()
    peak_stage: _Field[int] = _Field()
    stages: _Field[List[Stage]] = _Field(wrap=Stage)


class ModelStatesResult(Result):
    """Model states per GPU under ZeRO (weights, gradients, optimizer)."""
    weights_bytes: _Field[float] = _Field()
    gradients_bytes: _Field[float] = _Field()
    optimizer_bytes: _Field[float] = _Field()
    estimate_gb: _Field[float] = _Field()


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


class FinetuneResult(Result):
    """Fine-tuning (LLMem): the peak per GPU, its terms, and with method="auto" the selection."""
    method: _Field[str] = _Field()
    peak_bytes: _Field[Optional[float]] = _Field(optional=True)
    selected: _Field[Optional[str]] = _Field(optional=True)
    max_batch: _Field[Optional[int]] = _Field(optional=True)
    methods: _Field[Optional[List[FinetuneMethod]]] = _Field(wrap=FinetuneMethod, optional=True)
    parts: _Field[Optional[Record]] = _Field(optional=True)
    per_gpu: _Field[Optional[Record]] = _Field(optional=True)
    environment: _Field[Optional[Record]] = _Field(optional=True)


class SearchResult(Result):
    """A layout search: `.layouts` (or iteration) gives the ranked rows; each row's .to_dict()
    is flat enough for pandas.DataFrame([row.to_dict() for row in result])."""

    @property
    def layouts(self) -> List[Record]:
        for key in ("layouts", "results", "candidates", "top"):
            if isinstance(self._data.get(key), list):
                return [_wrap(v) for v in self._data[key]]
        return []

    def __iter__(self) -> Iterator[Record]:
        return iter(self.layouts)

    def __len__(self) -> int:
        return len(self.layouts)


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
}


def _result(data: Dict[str, Any]) -> Result:
    return _BY_MODE.get(str(data.get("mode")), Result)(data)
