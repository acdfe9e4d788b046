// Block-wide reductions shared by the kernels (#include "block_reduce.cuh": runtime/compile.py pastes
// this file in its place). Every thread of the block passes its value and gets the
// block's result; shm holds one value per warp. The per-warp partials are combined in a fixed
// order, so a result doesn't depend on timing.
#pragma once

template <typename T> __device__ __forceinline__ T neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return __int_as_float(0xff800000); }
template <> __device__ __forceinline__ double neg_inf<double>() { return __longlong_as_double(0xfff0000000000000ULL); }

template <typename T> __device__ T block_sum(T v, T* shm) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();                       // shm may still be read by a previous reduction
    if (lane == 0) shm[warp] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = threadIdx.x < nw ? shm[threadIdx.x] : T(0);
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffff, v, o);
    if (threadIdx.x == 0) shm[0] = v;
    __syncthreads();
    return shm[0];
}

template <typename T> __device__ T block_max(T v, T* shm) {
    for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffff, v, o));
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    __syncthreads();
    if (lane == 0) shm[warp] = v;
    __syncthreads();
    int nw = (blockDim.x + 31) >> 5;
    v = threadIdx.x < nw ? shm[threadIdx.x] : neg_inf<T>();
    if (warp == 0)
        for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffff, v, o));
    if (threadIdx.x == 0) shm[0] = v;
    __syncthreads();
    return shm[0];
}
