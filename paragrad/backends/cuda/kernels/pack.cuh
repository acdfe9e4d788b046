// V elements moved by one access of sizeof(T) * V bytes (16 for the widest loads), shared by the
// kernels that go wide (#include "pack.cuh": runtime/compile.py pastes this file in its place).
// A caller checks that the element count is a multiple of V and the addresses are aligned.
#pragma once

template <typename T, int V> struct alignas(sizeof(T) * V) Pack { T v[V]; };

template <typename T, int V> __device__ __forceinline__ Pack<T, V> load(const T* p) {
    return *reinterpret_cast<const Pack<T, V>*>(p);
}

template <typename T, int V> __device__ __forceinline__ void store(T* p, const Pack<T, V>& x) {
    *reinterpret_cast<Pack<T, V>*>(p) = x;
}
