"""serving/vllm_shim.py: the PIL twin answers only its one module, only without
torchvision."""

import importlib.util
import sys

import pytest

from serving import vllm_shim


def test_shim_maps_only_the_target_module(monkeypatch):
    finder = vllm_shim.PilTwinFinder()
    assert finder.find_spec("transformers.models.qwen2_vl.other") is None
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torchvision" else real(name, *a),
    )
    spec = finder.find_spec(vllm_shim.TARGET)
    assert spec is not None and spec.name == vllm_shim.TARGET
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: object())
    assert finder.find_spec(vllm_shim.TARGET) is None  # torchvision present


def test_shim_loads_the_pil_twin(monkeypatch):
    pytest.importorskip("transformers.models.qwen2_vl.image_processing_pil_qwen2_vl")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "torchvision" else real(name, *a),
    )
    monkeypatch.delitem(sys.modules, vllm_shim.TARGET, raising=False)
    monkeypatch.setattr(sys, "meta_path", [vllm_shim.PilTwinFinder(), *sys.meta_path])
    module = importlib.import_module(vllm_shim.TARGET)
    assert module.Qwen2VLImageProcessor is module.Qwen2VLImageProcessorPil
    assert callable(module.smart_resize)
    monkeypatch.delitem(sys.modules, vllm_shim.TARGET, raising=False)
