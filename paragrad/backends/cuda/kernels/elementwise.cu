// Elementwise arithmetic on contiguous float/double buffers (and half ones for binary), launched
// straight from Python:
// the common shapes of eager code (same shape, a row broadcast such as a bias, one element)
// without the general broadcasting and type dispatch of a CuPy ufunc call, which costs about
// twice the host time of a raw launch. Results are bit-identical to the ufuncs they replace:
// one IEEE operation per element, no fused multiply-add.
//
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include "pack.cuh"
#include "elementwise_ops.cuh"

// Operand layouts (template parameters LA, LB): 0 = full (n elements), 1 = a row repeated
// (index i % row), 2 = one element (index 0).

template <int L> __device__ __forceinline__ long long at(long long i, long long row) {
    return L == 0 ? i : (L == 1 ? i % row : 0);
}

// float16/bfloat16 operands compute in float32 and round once, as NumPy's ml_dtypes and CuPy do
template <typename T> struct Compute { typedef T type; };
template <> struct Compute<__half> { typedef float type; };
template <> struct Compute<__nv_bfloat16> { typedef float type; };

template <typename T, typename Op, int LA, int LB>
__global__ void binary(const T* a, const T* b, T* c, long long n, long long row) {
    typedef typename Compute<T>::type C;
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        c[i] = T(Op::f(C(a[at<LA>(i, row)]), C(b[at<LB>(i, row)])));
}

// The same arithmetic V elements at a time through one 16-byte access per operand (half types,
// V = 8): CuPy's and the one-element kernels ran bf16 operands at about half the memory
// bandwidth. The caller ensures n and row are multiples of V and the pointers 16-byte aligned,
// so a repeated row's V elements never wrap.
template <typename T, int L, int V>
__device__ __forceinline__ Pack<T, V> load_pack(const T* x, long long i, long long row) {
    if (L == 2) {
        Pack<T, V> p;
        for (int k = 0; k < V; k++) p.v[k] = x[0];
        return p;
    }
    return load<T, V>(x + at<L>(i, row));
}

template <typename T, typename Op, int LA, int LB, int V>
__global__ void binary_vec(const T* a, const T* b, T* c, long long n, long long row) {
    typedef typename Compute<T>::type C;
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < n / V;
         p += (long long)gridDim.x * blockDim.x) {
        long long i = p * V;
        Pack<T, V> x = load_pack<T, LA, V>(a, i, row), y = load_pack<T, LB, V>(b, i, row), z;
        for (int k = 0; k < V; k++) z.v[k] = T(Op::f(C(x.v[k]), C(y.v[k])));
        store<T, V>(c + i, z);
    }
}

// Views of rows: element (r, j) of operand x at x[r * ldx + j] (a C-contiguous matrix, or a
// slice of its last dim such as split's pieces), rows x cols elements, V per access (cols and
// every ld multiples of V, pointers aligned to V elements).
template <typename T, typename Op, int V>
__global__ void binary_rows(const T* a, long long lda, const T* b, long long ldb, T* c, long long ldc,
                            long long rows, long long cols) {
    typedef typename Compute<T>::type C;
    long long per_row = cols / V;
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < rows * per_row;
         p += (long long)gridDim.x * blockDim.x) {
        long long r = p / per_row, j = (p - r * per_row) * V;
        Pack<T, V> x = load<T, V>(a + r * lda + j), y = load<T, V>(b + r * ldb + j), z;
        for (int k = 0; k < V; k++) z.v[k] = T(Op::f(C(x.v[k]), C(y.v[k])));
        store<T, V>(c + r * ldc + j, z);
    }
}

// y[r, j] = x[r, j] for views of rows; T is an unsigned integer of the element's size (a copy
// moves bits, whatever the dtype)
template <typename T, int V>
__global__ void copy_rows(const T* x, long long ldx, T* y, long long ldy, long long rows, long long cols) {
    long long per_row = cols / V;
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < rows * per_row;
         p += (long long)gridDim.x * blockDim.x) {
        long long r = p / per_row, j = (p - r * per_row) * V;
        store<T, V>(y + r * ldy + j, load<T, V>(x + r * ldx + j));
    }
}

// dtype conversion of a contiguous buffer between float and a half type, V elements a thread
// (n a multiple of V, aligned): round to nearest even, NaN kept, as CuPy's astype (CuPy's copy
// kernel moved one element a thread, about a third of the bandwidth)
template <typename S, typename D> __device__ __forceinline__ D convert(S x) { return D(x); }
template <> __device__ __forceinline__ __nv_bfloat16 convert(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ __half convert(float x) { return __float2half_rn(x); }
template <> __device__ __forceinline__ float convert(__nv_bfloat16 x) { return __bfloat162float(x); }
template <> __device__ __forceinline__ float convert(__half x) { return __half2float(x); }

template <typename S, typename D, int V>
__global__ void cast_vec(const S* x, D* y, long long n) {
    for (long long p = blockIdx.x * (long long)blockDim.x + threadIdx.x; p < n / V;
         p += (long long)gridDim.x * blockDim.x) {
        Pack<S, V> a = load<S, V>(x + p * V);
        Pack<D, V> b;
        for (int k = 0; k < V; k++) b.v[k] = convert<S, D>(a.v[k]);
        store<D, V>(y + p * V, b);
    }
}

// Several contiguous buffers of one dtype cast in one launch (autocast's casts of a layer's
// weight, bias and input, and their gradients' casts back): table[4t..4t+3] = (source, result,
// elements, first block) of buffer t. A block casts MANY_PACKS * V * blockDim.x elements of one
// buffer; a thread loads all its packs before it stores any (the stores might alias the next
// loads as far as the compiler knows: a load-store loop waits out a memory latency per pack).
#define MANY_PACKS 4
template <typename S, typename D, int V>
__global__ void cast_many(const long long* table, int count) {
    int t = 0;
    while (t + 1 < count && table[4 * (t + 1) + 3] <= blockIdx.x) ++t;      // a few buffers: a scan
    const S* x = (const S*)table[4 * t];
    D* y = (D*)table[4 * t + 1];
    const long long chunk = (long long)MANY_PACKS * V * blockDim.x;
    const long long n = table[4 * t + 2], start = (blockIdx.x - table[4 * t + 3]) * chunk;
    const long long end = min(start + chunk, n);
    if (((unsigned long long)x % (V * sizeof(S))) == 0 && ((unsigned long long)y % (V * sizeof(D))) == 0) {
        Pack<S, V> a[MANY_PACKS];
#pragma unroll
        for (int k = 0; k < MANY_PACKS; k++) {
            const long long p = start + ((long long)k * blockDim.x + threadIdx.x) * V;
            if (p + V <= end) a[k] = load<S, V>(x + p);
        }
#pragma unroll
        for (int k = 0; k < MANY_PACKS; k++) {
            const long long p = start + ((long long)k * blockDim.x + threadIdx.x) * V;
            if (p + V <= end) {
                Pack<D, V> b;
                for (int j = 0; j < V; j++) b.v[j] = convert<S, D>(a[k].v[j]);
                store<D, V>(y + p, b);
            }
        }
        const long long tail = start + (end - start) / V * V;       // the last partial pack
        if (threadIdx.x < end - tail) y[tail + threadIdx.x] = convert<S, D>(x[tail + threadIdx.x]);
        return;
    }
    for (long long i = start + threadIdx.x; i < end; i += blockDim.x) y[i] = convert<S, D>(x[i]);
}

// a op s, the scalar s passed by value (already rounded to T, as the ufunc's weak scalar)
template <typename T, typename Op>
__global__ void binary_scalar(const T* a, T s, T* c, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        c[i] = Op::f(a[i], s);
}

template <typename T, typename Op>
__global__ void unary(const T* x, T* y, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = Op::f(x[i]);
}

template <typename T>
__global__ void fill(T* y, T v, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        y[i] = v;
}
