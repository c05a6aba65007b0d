# SPDX-License-Identifier: Apache-2.0
# Copyright 2026 The vllm-ascend authors
"""Qualified names of the graph layer's classes, as the platform's hooks hand them to vLLM.

A leaf module (no imports), so the package's description and ``execution_mode`` share them
without importing each other.
"""

#: ``Platform.get_static_graph_wrapper_cls()``
WRAPPER_CLS = "vllm_ascend_graph.wrapper.ACLGraphWrapper"
#: ``Platform.get_compile_backend()`` (a vLLM ``CompilerInterface``)
COMPILER_CLS = "vllm_ascend_graph.compiler.AscendCompiler"
#: ``Platform.get_pass_manager_cls()``
PASS_MANAGER_CLS = "vllm_ascend_graph.pass_manager.AscendPassManager"
