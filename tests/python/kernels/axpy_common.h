/* Shared by the axpy test callable's orchestration and kernels: the bias
 * the add kernel adds (f32 bits of 0.0f); tests/python/test_build.py edits
 * a copy of this file to check that build_callable's cache notices. */
#ifndef AXPY_COMMON_H
#define AXPY_COMMON_H

#define AXPY_BIAS_BITS 0x00000000u

#endif
