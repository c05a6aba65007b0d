// SPDX-License-Identifier: Apache-2.0
// Copyright 2026 The vllm-ascend authors
// pybind11 bindings of ascend_ops._C. No libtorch: arguments are raw addresses, sizes, element
// strides and dtype codes; std::invalid_argument surfaces in Python as ValueError.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common.h"
#include "kernels.h"

namespace py = pybind11;
using namespace ascend_ops;

PYBIND11_MODULE(_C, m) {
  m.doc() = "ascend_ops native CPU kernels (pointer-based; called from ascend_ops._native)";
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const std::invalid_argument& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
  auto nogil = py::call_guard<py::gil_scoped_release>();
  m.def("rms_norm", &rms_norm, nogil);
  m.def("add_rms_norm", &add_rms_norm, nogil);
  m.def("swiglu", &swiglu, nogil);
  m.def("greedy_argmax", &greedy_argmax, nogil);
  m.def("rotary_embedding", &rotary_embedding, nogil);
  m.def("reshape_and_cache", &reshape_and_cache, nogil);
  m.def("paged_attention", &paged_attention, nogil);
  m.def("grouped_matmul", &grouped_matmul, nogil);
  m.def("grouped_weight_packed_size", &grouped_weight_packed_size);
  m.def("pack_grouped_weight", &pack_grouped_weight, nogil);
  m.def("grouped_matmul_packed", &grouped_matmul_packed, nogil);
  m.def("grouped_matmul_packed_swiglu", &grouped_matmul_packed_swiglu, nogil);
  m.def("moe_gating_top_k", &moe_gating_top_k, nogil);
  m.def("moe_init_routing", &moe_init_routing, nogil);
  m.def("moe_finalize_routing", &moe_finalize_routing, nogil);
  m.def("sample_recovered_tokens", &sample_recovered_tokens, nogil);
  m.def("rejection_sample", &rejection_sample, nogil);
  m.def("num_threads", &num_threads, "OpenMP threads the kernels use");
  m.def("vector_isa", [] {
#if defined(__AVX512F__)
    return "avx512";
#elif defined(__AVX2__)
    return "avx2";
#else
    return "generic";
#endif
  }, "the widest x86 vector extension this build was compiled for (-march): avx512, avx2, generic");
  m.attr("openmp") = py::bool_(
#ifdef ASCEND_OPS_OPENMP
      true
#else
      false
#endif
  );
}
