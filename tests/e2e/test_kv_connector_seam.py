# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""KV connectors on Ascend: the layout-aware block seam (kv_transfer/block_io.py), the served /
refused connector policy and its routing (options/kv_connectors.py), and the shared-directory
checks of ``AscendExampleConnector`` (kv_transfer/example_connector.py). No engine starts: these
are unit tests of the platform's seam over the attention layer's real backends, so they live
where every layer is installed (the platform's own test session has no attention layer)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from vllm_ascend_attention.backends.dense import AscendAttentionBackend
from vllm_ascend_attention.backends.mla import AscendMLABackend
from vllm_ascend_platform.kv_transfer import block_io
from vllm_ascend_platform.options import kv_connectors

NB, BS, H, D = 6, 16, 2, 8


def _dense_layer():
    """vLLM's logical [NB, H, BS, 2D] view of one LBNHC slab, and a layer on the dense backend."""
    raw = torch.zeros(NB * BS * H * 2 * D)
    view = raw.view(NB, BS, H, 2 * D).transpose(1, 2)  # logical view, physical [B, N, H, C]
    layer = SimpleNamespace(head_size=D, get_attn_backend=lambda: AscendAttentionBackend)
    return raw, view, layer


def test_parts_are_the_backends_key_and_value_caches_not_vllms_view():
    raw, view, layer = _dense_layer()
    k, v = block_io.layer_parts(layer, view, "l0")
    assert k.shape == v.shape == (NB, BS, H, D)
    assert k.data_ptr() == raw.data_ptr()  # the slab's first half is K, then V
    assert v.data_ptr() == raw.data_ptr() + k.numel() * 4


def test_read_tokens_is_vllms_per_token_layout_of_the_ascend_caches():
    _, view, layer = _dense_layer()
    k, v = block_io.layer_parts(layer, view)
    k.copy_(torch.randn_like(k))
    v.copy_(torch.randn_like(v))
    ids = torch.tensor([4, 1])
    tokens = block_io.read_tokens(k, v, ids, mla=False)
    assert tokens.shape == (2 * BS, H, 2 * D)
    for i, b in enumerate((4, 1)):
        for t in range(BS):
            assert torch.equal(tokens[i * BS + t], torch.cat((k[b, t], v[b, t]), dim=-1))


def test_write_tokens_restores_exactly_those_blocks():
    _, view, layer = _dense_layer()
    k, v = block_io.layer_parts(layer, view)
    k.copy_(torch.randn_like(k))
    v.copy_(torch.randn_like(v))
    ids = torch.tensor([0, 3, 5])
    tokens = block_io.read_tokens(k, v, ids, mla=False).clone()
    before_k, before_v = k.clone(), v.clone()
    k.zero_()
    v.zero_()
    block_io.write_tokens(tokens, k, v, ids)
    for b in range(NB):
        if b in (0, 3, 5):
            assert torch.equal(k[b], before_k[b]) and torch.equal(v[b], before_v[b])
        else:
            assert (k[b] == 0).all() and (v[b] == 0).all()


def test_write_tokens_refuses_a_buffer_of_the_wrong_size():
    _, view, layer = _dense_layer()
    k, v = block_io.layer_parts(layer, view)
    with pytest.raises(ValueError, match="does not fill 2 blocks"):
        block_io.write_tokens(torch.zeros(BS, H, 2 * D), k, v, torch.tensor([0, 1]))


def test_mla_tokens_drop_the_head_dim_and_round_trip():
    raw = torch.randn(3 * BS * 24)
    view = raw.view(3, BS, 24)  # vLLM's MLA view [num_blocks, block_size, kv_lora + rope]
    layer = SimpleNamespace(kv_lora_rank=16, get_attn_backend=lambda: AscendMLABackend)
    nope, rope = block_io.layer_parts(layer, view)
    assert nope.shape == (3, BS, 1, 16) and rope.shape == (3, BS, 1, 8)
    tokens = block_io.read_tokens(nope, rope, torch.tensor([2]), mla=True)
    assert tokens.shape == (BS, 24)
    assert torch.equal(tokens[5], torch.cat((nope[2, 5, 0], rope[2, 5, 0])))
    block_io.write_tokens(torch.zeros_like(tokens), nope, rope, torch.tensor([2]))
    assert (nope[2] == 0).all() and (rope[2] == 0).all() and not (nope[1] == 0).all()


def test_manager_blocks_map_to_their_kernel_blocks():
    cache = torch.zeros(8, 16, 1, 4)  # kernel block size 16
    ids = block_io.kernel_block_ids(torch.tensor([3, 1]), 32, cache)
    assert ids.tolist() == [6, 7, 2, 3]
    with pytest.raises(ValueError, match="multiple of the kernel block size"):
        block_io.kernel_block_ids(torch.tensor([0]), 24, cache)


def test_a_backend_without_parts_is_named():
    layer = SimpleNamespace(get_attn_backend=lambda: type("TritonAttentionBackend", (), {}))
    with pytest.raises(block_io.KVLayoutError, match="'l7'.*TritonAttentionBackend"):
        block_io.layer_parts(layer, torch.zeros(1, 1, 16, 4), "l7")


# ---- which connectors are served -------------------------------------------------------------
def _kvt(name, module=None, role="kv_consumer", path=None):
    return SimpleNamespace(kv_connector=name, kv_connector_module_path=module, kv_role=role,
                           kv_connector_extra_config={"shared_storage_path": path} if path else {})


def test_example_connector_is_served_and_routed_to_the_ascend_class():
    cfg = SimpleNamespace(kv_transfer_config=_kvt("ExampleConnector"))
    assert kv_connectors.connector_refusals(cfg) == []
    kv_connectors.route_served_connector(cfg)
    module = cfg.kv_transfer_config.kv_connector_module_path
    assert module == "vllm_ascend_platform.kv_transfer.example_connector"
    # routed configs stay served (the check runs again where the config is rebuilt)
    assert kv_connectors.connector_refusals(cfg) == []
    import importlib

    from vllm.distributed.kv_transfer.kv_connector.v1.example_connector import ExampleConnector

    cls = importlib.import_module(module).ExampleConnector
    assert cls.__name__ == "AscendExampleConnector" and issubclass(cls, ExampleConnector)


@pytest.mark.parametrize("name, why", [
    ("MooncakeConnector", "Mooncake transfer engine"),
    ("NixlConnector", "discover_numa_topology"),
    ("OffloadingConnector", "CUDA block-copy kernels"),
    ("NoSuchConnector", "page layout"),
])
def test_other_connectors_are_refused_by_name_with_why(name, why):
    (refusal,) = kv_connectors.connector_refusals(SimpleNamespace(kv_transfer_config=_kvt(name)))
    assert name in refusal.feature and why in refusal.fix and "ExampleConnector" in refusal.fix


def test_an_external_module_is_refused_and_no_config_is_fine():
    (refusal,) = kv_connectors.connector_refusals(
        SimpleNamespace(kv_transfer_config=_kvt("ExampleConnector", "my.connectors")))
    assert "'my.connectors'" in refusal.fix
    assert kv_connectors.connector_refusals(SimpleNamespace(kv_transfer_config=None)) == []


def test_refused_features_name_the_connector():
    from vllm_ascend_platform.options.features import refused_features
    from vllm_ascend_platform.startup.config import AscendConfig

    cfg = SimpleNamespace(kv_transfer_config=_kvt("MooncakeConnector"))
    names = [r.feature for r in refused_features(cfg, AscendConfig())]
    assert "KV connector 'MooncakeConnector' (--kv-transfer-config)" in names
    ok = SimpleNamespace(kv_transfer_config=_kvt("ExampleConnector"))
    assert not any("KV connector" in r.feature for r in refused_features(ok, AscendConfig()))


# ---- the shared directory ----------------------------------------------------------------------
def test_an_unwritable_shared_directory_is_named(tmp_path):
    from vllm_ascend_platform.options.kv_connectors import (
        SharedStorageError,
        check_writable,
    )

    blocker = tmp_path / "a-file"
    blocker.write_text("")
    bad = str(blocker / "kv")  # under a regular file: fails for root too
    with pytest.raises(SharedStorageError, match=f"shared_storage_path '{bad}' is not writable"):
        check_writable(bad)
    check_writable(str(tmp_path / "new" / "dir"))
    assert (tmp_path / "new" / "dir").is_dir()
    assert list((tmp_path / "new" / "dir").iterdir()) == []  # the probe file is gone


def test_a_producer_with_an_unwritable_directory_stops_at_routing(tmp_path):
    from vllm_ascend_platform.options.kv_connectors import SharedStorageError

    (tmp_path / "f").write_text("")
    bad = SimpleNamespace(kv_transfer_config=_kvt("ExampleConnector", role="kv_producer",
                                                  path=str(tmp_path / "f" / "kv")))
    with pytest.raises(SharedStorageError, match="not writable"):
        kv_connectors.route_served_connector(bad)
    # a consumer only reads: no check
    kv_connectors.route_served_connector(SimpleNamespace(
        kv_transfer_config=_kvt("ExampleConnector", path=str(tmp_path / "f" / "kv"))))


def test_example_connector_is_refused_on_the_v1_runner_line(monkeypatch):
    from vllm_ascend_platform.options import table_lines

    monkeypatch.setattr(table_lines, "installed_vllm", lambda: "0.33.1")
    (refusal,) = kv_connectors.connector_refusals(
        SimpleNamespace(kv_transfer_config=_kvt("ExampleConnector")))
    assert "Model Runner V2 only" in refusal.fix
    monkeypatch.setattr(table_lines, "installed_vllm", lambda: "0.34.0+empty")
    assert kv_connectors.connector_refusals(
        SimpleNamespace(kv_transfer_config=_kvt("ExampleConnector"))) == []


# ---- AscendExampleConnector's worker half, without an engine ------------------------------------
def _worker_connector(tmp_path, layers=2):
    """The connector's worker half on hand-made caches (two dense layers on the Ascend backend),
    without vLLM's constructor (it needs a whole VllmConfig)."""
    from vllm.distributed.kv_transfer.kv_connector.v1.example_connector import (
        ExampleConnectorMetadata,
    )
    from vllm_ascend_platform.kv_transfer.example_connector import AscendExampleConnector

    conn = AscendExampleConnector.__new__(AscendExampleConnector)
    conn._storage_path = str(tmp_path)
    conn._block_size = BS
    conn._load_errors = set()
    conn.saved_tokens = conn.loaded_tokens = 0
    caches, conn._layers = {}, {}
    for i in range(layers):
        _, view, layer = _dense_layer()
        k, v = block_io.layer_parts(layer, view)
        k.copy_(torch.randn_like(k))
        v.copy_(torch.randn_like(v))
        caches[f"l{i}"], conn._layers[f"l{i}"] = view, layer
    conn.register_kv_caches(caches)
    meta = ExampleConnectorMetadata()
    conn._get_connector_metadata = lambda: meta
    conn.has_connector_metadata = lambda: True
    return conn, meta


def _add(meta, tokens, blocks, store):
    meta.add_request(token_ids=tokens, block_ids=blocks, block_size=BS, is_store=store,
                     mm_hashes=[])


def test_save_then_load_moves_exactly_the_prompts_blocks(tmp_path):
    import safetensors.torch

    prompt = list(range(100, 100 + 2 * BS + 5))  # 2 whole blocks move (len - 1 aligned)
    src, meta = _worker_connector(tmp_path)
    _add(meta, prompt, [4, 1, 2], store=True)
    src.wait_for_save()
    assert src.saved_tokens == 2 * BS
    (folder,) = [p for p in tmp_path.iterdir()]  # no temporary folder left behind
    assert not folder.name.startswith(".")
    k, v = block_io.layer_parts(src._layers["l1"], src._kv_caches["l1"])
    saved = safetensors.torch.load_file(str(folder / "l1.safetensors"))["kv_cache"]
    # vLLM's per-token layout: token t of block 4 = cat(K, V) of that slot
    assert saved.shape == (2 * BS, H, 2 * D)
    assert torch.equal(saved[3], torch.cat((k[4, 3], v[4, 3]), dim=-1))
    assert torch.equal(saved[BS + 7], torch.cat((k[1, 7], v[1, 7]), dim=-1))

    dst, meta2 = _worker_connector(tmp_path)
    _add(meta2, prompt, [0, 5, 3], store=False)
    before = {n: [p.clone() for p in block_io.layer_parts(dst._layers[n], c)]
              for n, c in dst._kv_caches.items()}
    dst.start_load_kv(None)
    assert dst.loaded_tokens == 2 * BS and dst.get_block_ids_with_load_errors() == set()
    for name in ("l0", "l1"):
        sk, sv = block_io.layer_parts(src._layers[name], src._kv_caches[name])
        dk, dv = block_io.layer_parts(dst._layers[name], dst._kv_caches[name])
        for s_block, d_block in ((4, 0), (1, 5)):
            assert torch.equal(dk[d_block], sk[s_block]) and torch.equal(dv[d_block], sv[s_block])
        for b in (1, 2, 3, 4):  # untouched (block 3 holds the prompt's unsent tail)
            assert torch.equal(dk[b], before[name][0][b]) and torch.equal(dv[b], before[name][1][b])


def test_a_missing_transfer_is_a_load_error_not_a_crash(tmp_path):
    prompt = list(range(100, 100 + BS + 5))
    src, meta = _worker_connector(tmp_path)
    _add(meta, prompt, [2, 3], store=True)
    src.wait_for_save()
    (folder,) = list(tmp_path.iterdir())
    (folder / "l1.safetensors").unlink()  # half a transfer
    dst, meta2 = _worker_connector(tmp_path)
    _add(meta2, prompt, [5, 0], store=False)
    dst.start_load_kv(None)
    assert dst.get_block_ids_with_load_errors() == {5}  # the request's manager blocks
    assert dst.get_block_ids_with_load_errors() == set()  # reported once
    assert dst.loaded_tokens == 0


def test_a_failed_save_is_logged_and_leaves_no_hit(tmp_path):
    src, meta = _worker_connector(tmp_path / "gone")
    _add(meta, list(range(100, 100 + BS + 5)), [2, 3], store=True)
    src.wait_for_save()  # the directory does not exist: logged, not raised
    assert src.saved_tokens == 0 and not (tmp_path / "gone").exists()
