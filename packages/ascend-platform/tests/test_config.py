# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""``additional_config`` parsing (``vllm_ascend_platform.startup.config``).

Expected keys, defaults and types are the documented options (README.md, the graph layer's
README and ``GraphOptions``); the upstream keys
come from vLLM 0.32's ``EngineArgs.create_engine_config`` (vllm/engine/arg_utils.py),
which writes gdn_prefill_backend / kda_prefill_backend / kda_decode_backend.
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
from vllm_ascend_platform.startup import config as cfg
from vllm_ascend_platform.startup.config import AscendConfigError, parse_additional_config

#: ``ascend_compilation_config`` is the graph layer's section (its ``GraphOptions``, published in
#: its description): these cases need that layer installed, which the platform's own session
#: hides; the e2e session runs them (``-m requires_meta``, conftest.py).
GRAPH_SECTION = pytest.mark.requires_meta


@GRAPH_SECTION
def test_defaults_from_empty_and_none():
    for raw in ({}, None):
        c = parse_additional_config(raw)
        assert c.enable_weight_nz is False
        cc = c.ascend_compilation_config
        assert (cc.fuse_add_rms_norm, cc.fuse_swiglu, cc.graph_budget) == (True, True, None)


@GRAPH_SECTION
@pytest.mark.parametrize("switch", ["fuse_qk_norm_rope", "fuse_rope_kv_cache"])
@pytest.mark.parametrize("value", [True, False])
def test_fusions_without_a_pass_are_refused_by_name(switch, value):
    with pytest.raises(AscendConfigError, match=rf"not built on Ascend yet.*{switch}: "):
        parse_additional_config({"ascend_compilation_config": {switch: value}})


@GRAPH_SECTION
def test_valid_values_are_taken():
    c = parse_additional_config(
        {"ascend_compilation_config": {"fuse_swiglu": False, "graph_budget": 24}})
    assert c.ascend_compilation_config.fuse_swiglu is False
    assert c.ascend_compilation_config.graph_budget == 24
    assert c.ascend_compilation_config.fuse_add_rms_norm is True


def test_upstream_keys_written_by_vllm_are_the_ones_we_pass():
    import vllm.engine.arg_utils as arg_utils

    source = Path(arg_utils.__file__).read_text()
    written = set(re.findall(r'self\.additional_config\["(\w+)"\]', source))
    assert written == set(cfg.UPSTREAM_KEYS)


def test_upstream_keys_pass_and_supported_values_stay():
    raw = {"kda_prefill_backend": "auto", "kda_decode_backend": "native"}
    c = parse_additional_config(raw)
    assert c == cfg.ascend_config_model()()
    assert raw == {"kda_prefill_backend": "auto", "kda_decode_backend": "native"}


def test_upstream_unsupported_values_warn_and_fall_back(caplog):
    raw = {"gdn_prefill_backend": "triton", "kda_decode_backend": "flashinfer",
           "kda_prefill_backend": "auto"}
    vllm_config = SimpleNamespace(additional_config=raw)
    with caplog.at_level(logging.WARNING, logger="vllm.ascend"):
        cfg.init_ascend_config(vllm_config)
    # dropped: vLLM picks its default; the caller's dict itself is left as it was
    assert vllm_config.additional_config == {"kda_prefill_backend": "auto"}
    assert len(raw) == 3
    text = caplog.text
    assert "gdn_prefill_backend='triton'" in text and "--gdn-prefill-backend" in text
    assert "kda_decode_backend='flashinfer'" in text


@pytest.mark.parametrize("raw,key,closest", [
    ({"enable_weigth_nz": True}, "enable_weigth_nz", "enable_weight_nz"),
    pytest.param({"ascend_compilaton_config": {}}, "ascend_compilaton_config",
                 "ascend_compilation_config", marks=GRAPH_SECTION),
    pytest.param({"ascend_compilation_config": {"fuse_swigl": True}}, "fuse_swigl", "fuse_swiglu",
                 marks=GRAPH_SECTION),
    pytest.param({"ascend_compilation_config": {"graph_budjet": 4}}, "graph_budjet",
                 "graph_budget", marks=GRAPH_SECTION),
])
def test_misspelled_key_names_key_and_closest(raw, key, closest):
    with pytest.raises(AscendConfigError) as err:
        parse_additional_config(raw)
    msg = str(err.value)
    assert repr(key) in msg and f"did you mean {closest!r}" in msg


@GRAPH_SECTION
def test_unrelated_key_lists_valid_keys():
    with pytest.raises(AscendConfigError, match="unknown key 'zzz'.*valid keys: "
                       "ascend_compilation_config, enable_weight_nz"):
        parse_additional_config({"zzz": 1})


@pytest.mark.parametrize("raw,key,expected", [
    ({"enable_weight_nz": "true"}, "enable_weight_nz", "JSON boolean"),
    ({"enable_weight_nz": 1}, "enable_weight_nz", "JSON boolean"),
    ({"enable_weight_nz": {"a": 1}}, "enable_weight_nz", "JSON boolean"),
    pytest.param({"ascend_compilation_config": {"fuse_swiglu": "false"}},
                 "ascend_compilation_config.fuse_swiglu", "JSON boolean", marks=GRAPH_SECTION),
    pytest.param({"ascend_compilation_config": {"graph_budget": "8"}},
                 "ascend_compilation_config.graph_budget", "JSON integer or null",
                 marks=GRAPH_SECTION),
    pytest.param({"ascend_compilation_config": {"graph_budget": {"x": 1}}},
                 "ascend_compilation_config.graph_budget", "JSON integer or null",
                 marks=GRAPH_SECTION),
    pytest.param({"ascend_compilation_config": True}, "ascend_compilation_config", "JSON object",
                 marks=GRAPH_SECTION),
])
def test_wrong_type_names_key_and_expected_type(raw, key, expected):
    with pytest.raises(AscendConfigError) as err:
        parse_additional_config(raw)
    msg = str(err.value)
    assert repr(key) in msg and expected in msg


@GRAPH_SECTION
def test_graph_budget_below_one_names_the_rule():
    # the rule lives in the graph layer's section model; the platform reports it by key
    with pytest.raises(AscendConfigError,
                       match=r"'ascend_compilation_config.graph_budget' must be >= 1"):
        parse_additional_config({"ascend_compilation_config": {"graph_budget": 0}})


def test_non_dict_additional_config_refused():
    with pytest.raises(AscendConfigError, match="JSON object"):
        parse_additional_config(["enable_weight_nz"])


@GRAPH_SECTION
def test_init_and_get(monkeypatch):
    import vllm.config

    monkeypatch.setattr(cfg, "_current", None)
    monkeypatch.setattr(vllm.config, "get_current_vllm_config_or_none", lambda: None)
    with pytest.raises(RuntimeError, match="init_ascend_config"):
        cfg.get_ascend_config()
    current = SimpleNamespace(additional_config={"ascend_compilation_config": {"fuse_swiglu": False}})
    monkeypatch.setattr(vllm.config, "get_current_vllm_config_or_none", lambda: current)
    assert cfg.get_ascend_config().ascend_compilation_config.fuse_swiglu is False
    c = cfg.init_ascend_config(SimpleNamespace(additional_config={"enable_weight_nz": False}))
    assert cfg.get_ascend_config() is c


@pytest.mark.parametrize("text,fragment", [
    ('{"enable_weight_nz": tru', "not valid JSON"),
    ('{"enable_weight_nz": tru}', "not valid JSON"),
    ("enable_weight_nz=true", "not valid JSON"),
    ("[1, 2]", "must be a JSON object"),
])
def test_strict_additional_config_argument(text, fragment, capsys):
    from vllm.engine.arg_utils import EngineArgs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = EngineArgs.add_cli_args(FlexibleArgumentParser())
    cfg.strict_additional_config_argument(parser)
    ok = parser.parse_args(["--additional-config", '{"enable_weight_nz": false}'])
    assert ok.additional_config == {"enable_weight_nz": False}
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["--additional-config", text])
    assert exc.value.code == 2  # argparse's usage error
    err = capsys.readouterr().err
    assert "--additional-config" in err and fragment in err
