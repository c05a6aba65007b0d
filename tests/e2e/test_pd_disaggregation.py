# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Prefill-decode disaggregation through vLLM's ``ExampleConnector`` in CPU emulation
(docs/pd-disaggregation.md): a producer engine computes each prompt and writes its KV blocks
to a shared directory through the Ascend layout seam (vllm_ascend_platform/kv_transfer/), a
consumer engine loads them into its own cache and decodes.

The two engines run one after the other in this process (vLLM keeps one KV-transfer agent per
process, ``vllm/distributed/kv_transfer/kv_transfer_state.py``). The producer is a whole
instance, so its greedy tokens are one instance's tokens; the consumer, a fresh engine with
disjoint prompts (no local prefix hits), must give the same tokens while reporting the
transferred tokens as cached (``RequestOutput.num_cached_tokens`` = local + external hits,
vllm/v1/metrics/stats.py). Faults: a corrupt transfer fails its request naming the file while
the engine keeps serving; an unserved connector and an unwritable directory stop start-up by
name before the weights load.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from engine import close_llm, generate_ids, make_llm
from packaging.version import Version

vllm = pytest.importorskip("vllm")
if Version(Version(str(vllm.__version__)).base_version) < Version("0.34"):
    pytest.skip("KV connectors are served on vLLM >= 0.34 (Model Runner V2)",
                allow_module_level=True)

N = 8
BLOCK = 128  # the KV block size vLLM picks for ASCEND_ATTN here (whole blocks move)
#: disjoint ordinary SmolLM2 ids (vocab 49152): 1 and 2 whole blocks of prompt to transfer
PROMPTS = [list(range(1000, 1200)), list(range(3000, 3300))]
UNSEEN = list(range(6000, 6150))


def _kv(role: str, path: Path | str, **extra) -> dict:
    return {"kv_connector": "ExampleConnector", "kv_role": role,
            "kv_connector_extra_config": {"shared_storage_path": str(path)}, **extra}


def _transferred(prompt: list[int]) -> int:
    """Tokens ExampleConnector moves: whole blocks of the prompt less its last token
    (``align_to_block_size`` in vLLM's example_connector.py)."""
    return (len(prompt) - 2) // BLOCK * BLOCK


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("pd-shared")


@pytest.fixture(scope="module")
def produced(model_path, shared):
    """The producer instance's greedy outputs (it writes the prompts' KV to ``shared``)."""
    llm = make_llm(model_path, kv_transfer_config=_kv("kv_producer", shared))
    try:
        return generate_ids(llm, PROMPTS + [UNSEEN], N)
    finally:
        close_llm(llm)


@pytest.fixture(scope="module")
def consumer(model_path, shared, produced):
    llm = make_llm(model_path, kv_transfer_config=_kv("kv_consumer", shared))
    yield llm
    close_llm(llm)


def test_consumer_reuses_producer_blocks_same_tokens(produced, consumer, shared):
    folders = [p for p in shared.iterdir() if not p.name.startswith(".")]
    assert len(folders) == 3 and all(len(list(f.iterdir())) == 30 for f in folders)  # 30 layers
    outs = generate_ids(consumer, PROMPTS, N)
    for prompt, ref, out in zip(PROMPTS, produced[:2], outs, strict=True):
        assert list(out.outputs[0].token_ids) == list(ref.outputs[0].token_ids)
        assert ref.num_cached_tokens == 0  # the producer computed every prompt token
        # the decode instance computed only the tail: the transferred blocks were reused
        assert out.num_cached_tokens == _transferred(prompt) > 0


def test_corrupt_transfer_fails_its_request_by_name_and_the_engine_serves_on(
        consumer, shared, caplog):
    """A transfer cut short (a producer that died while another tool copied its files, a
    truncated file): the load fails, the request ends with an error (vLLM's default
    ``kv_load_failure_policy`` "fail") and the cause is logged with the file."""
    ref = generate_ids(consumer, [UNSEEN], N)  # loads fine (its folder exists)
    victim = sorted(p for p in shared.iterdir() if not p.name.startswith("."))
    prompt = list(range(9000, 9200))
    # a folder for a prompt no producer computed: hash name from a fresh connector helper
    from vllm.distributed.kv_transfer.kv_connector.v1.example_connector import (
        ExampleConnector,
        align_to_block_size,
    )
    from vllm.utils.torch_utils import token_ids_to_tensor

    helper = ExampleConnector.__new__(ExampleConnector)
    helper._storage_path = str(shared)
    name = helper._generate_foldername_debug(
        token_ids_to_tensor(prompt)[:align_to_block_size(len(prompt) - 1, BLOCK)], [])
    os.makedirs(name)
    for f in victim[0].iterdir():
        (Path(name) / f.name).write_bytes(f.read_bytes()[:100])  # truncated safetensors
    caplog.clear()
    start = time.monotonic()
    (bad,) = generate_ids(consumer, [prompt], N)
    assert bad.outputs[0].finish_reason == "error"
    assert time.monotonic() - start < 60
    assert "loading the KV of 128 prompt tokens" in caplog.text
    assert f"from {name}/model.layers." in caplog.text  # the file, named
    assert "SafetensorError" in caplog.text  # the cause
    again = generate_ids(consumer, [UNSEEN], N)  # the engine keeps serving
    assert list(again[0].outputs[0].token_ids) == list(ref[0].outputs[0].token_ids)


def test_an_unserved_connector_stops_start_up_by_name(model_path, shared):
    from vllm_ascend_platform.options.refusal import UnsupportedFeatureError

    start = time.monotonic()
    with pytest.raises(UnsupportedFeatureError, match="KV connector 'MooncakeConnector'"):
        make_llm(model_path, kv_transfer_config={"kv_connector": "MooncakeConnector",
                                                 "kv_role": "kv_both"})
    assert time.monotonic() - start < 60  # before the weights load


def test_an_unwritable_shared_directory_stops_a_producer_by_name(model_path, tmp_path):
    from vllm_ascend_platform.options.kv_connectors import SharedStorageError

    (tmp_path / "file").write_text("")
    bad = tmp_path / "file" / "kv"  # under a regular file: unwritable, for root too
    with pytest.raises(SharedStorageError, match=f"'{bad}' is not writable"):
        make_llm(model_path, kv_transfer_config=_kv("kv_producer", bad))
