// The instruction set of a vector-path translation unit. Every file of trainer/kernels/vector/
// is compiled once per instruction set (trainer/CMakeLists.txt: -march=x86-64-v3 with
// TPUPERF_VECTOR_NS=avx2, -march=x86-64-v4 with TPUPERF_VECTOR_NS=avx512) and puts all
// it defines in namespace tpuperf::kernels::TPUPERF_VECTOR_NS, so the two copies never
// share a symbol; they include no LibTorch header, whose inline functions compiled here for
// AVX-512 could be the copy the linker keeps for every caller (tests/trainer/kernels/
// check_vector_symbols.sh checks both objects for symbols outside their namespace).
#pragma once

#ifndef TPUPERF_VECTOR_NS
#error "trainer/kernels/vector/ is compiled once per instruction set: define TPUPERF_VECTOR_NS"
#endif
#if !defined(__AVX2__) || !defined(__FMA__)
#error "trainer/kernels/vector/ needs at least AVX2 and FMA (-march=x86-64-v3)"
#endif
