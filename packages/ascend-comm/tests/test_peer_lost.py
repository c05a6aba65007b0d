# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""A collective that lost a peer waits ``PEER_LOST_GRACE_S`` before raising ``CollectiveError``.

The wait lets the process that owns the workers (vLLM's ``MultiprocExecutor`` monitor) report the
dead worker before the survivor's transport error reaches it. The error texts below are gloo's
TCP transport messages as a survivor sees them when its peer is SIGKILLed mid all-reduce.
"""

from __future__ import annotations

import pytest
from vllm_ascend_comm import communicator
from vllm_ascend_comm.communicator import CollectiveError, NPUCommunicator, peer_lost


@pytest.mark.parametrize("text, lost", [
    ("[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
     "[127.0.0.1]:40213", True),
    ("[../third_party/gloo/gloo/transport/tcp/pair.cc:576] Read error [127.0.0.1]:5361: "
     "Connection reset by peer", True),
    ("Timed out waiting 1800000ms for recv operation to complete", False),
    ("Tensors must be contiguous", False),
])
def test_peer_lost_reads_the_transport_error(text, lost):
    assert peer_lost(RuntimeError(text)) is lost


def test_peer_lost_follows_the_cause_chain():
    try:
        try:
            raise RuntimeError("Connection reset by peer")
        except RuntimeError as inner:
            raise ValueError("wrapped") from inner
    except ValueError as outer:
        assert peer_lost(outer)


def _communicator() -> NPUCommunicator:
    comm = object.__new__(NPUCommunicator)  # no process group: only _fail's inputs are set
    comm.unique_name, comm.ranks, comm.rank_in_group, comm.world_size = "tp:0", [0, 1], 0, 2
    return comm


@pytest.mark.parametrize("text, waited", [
    ("Connection reset by peer", [communicator.PEER_LOST_GRACE_S]),
    ("Timed out waiting 100ms for recv operation to complete", []),
])
def test_fail_waits_only_for_a_lost_peer(monkeypatch, text, waited):
    sleeps: list[float] = []
    monkeypatch.setattr(communicator.time, "sleep", sleeps.append)
    err = _communicator()._fail("all_reduce", RuntimeError(text))
    assert isinstance(err, CollectiveError)
    assert str(err).startswith("all_reduce failed on group 'tp:0' (ranks [0, 1], this rank 0 of 2)")
    assert text in str(err)
    assert sleeps == waited
