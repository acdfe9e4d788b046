// Elementwise arithmetic on contiguous float/double buffers (and half ones for binary), launched
// straight from Python:
// the common shapes of eager code (same shape, a row broadcast such as a bias, one element)
// without the general broadcasting and type dispatch of a CuPy ufunc call, which costs about
// twice the host time of a raw launch. Results are bit-identical to the ufuncs they replace:
// one IEEE operation per element, no fused multiply-add.
//
#include <cuda_fp16.h>
#include <cuda_bf16.h>

// Operand layouts (template parameters LA, LB): 0 = full (n elements), 1 = a row repeated
// (index i % row), 2 = one element (index 0).

struct Add { template <typename T> __device__ static T f(T a, T b) { return a + b; } };
struct Sub { template <typename T> __device__ static T f(T a, T b) { return a - b; } };
struct Mul { template <typename T> __device__ static T f(T a, T b) { return a * b; } };
struct Div { template <typename T> __device__ static T f(T a, T b) { return a / b; } };

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

// a op s, the scalar s passed by value (already rounded to T, as the ufunc's weak scalar)
template <typename T, typename Op>
__global__ void binary_scalar(const T* a, T s, T* c, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        c[i] = Op::f(a[i], s);
}

struct Neg { template <typename T> __device__ static T f(T x) { return -x; } };
struct Exp { template <typename T> __device__ static T f(T x) { return exp(x); } };
struct Log { template <typename T> __device__ static T f(T x) { return log(x); } };
struct Sqrt { template <typename T> __device__ static T f(T x) { return sqrt(x); } };
struct Rsqrt { template <typename T> __device__ static T f(T x) { return rsqrt(x); } };
struct Tanh { template <typename T> __device__ static T f(T x) { return tanh(x); } };
struct Abs { template <typename T> __device__ static T f(T x) { return fabs(x); } };
struct Reciprocal { template <typename T> __device__ static T f(T x) { return T(1) / x; } };
// the CUDA backend's sigmoid and relu (NaN stays NaN, as torch)
struct Sigmoid {
    template <typename T> __device__ static T f(T x) {
        return x >= T(0) ? T(1) / (T(1) + exp(-x)) : exp(x) / (T(1) + exp(x));
    }
};
struct Relu { template <typename T> __device__ static T f(T x) { return x < T(0) ? T(0) : x; } };
// activation gradients from the output y, as one kernel each, rounded as the buffer formulas of
// ops/elementwise/unary.py they replace: sigmoid -((g y)(y - 1)), tanh -(g (y y - 1))
struct SigmoidGrad { template <typename T> __device__ static T f(T g, T y) { T t = g * y; return -(t * (y - T(1))); } };
struct TanhGrad { template <typename T> __device__ static T f(T g, T y) { T t = y * y - T(1); return -(g * t); } };
// small integer powers, rounded as the multiplies the op layer composes them from
struct Cube { template <typename T> __device__ static T f(T x) { T s = x * x; return s * x; } };
struct Fourth { template <typename T> __device__ static T f(T x) { T s = x * x; return s * s; } };
struct InvSquare { template <typename T> __device__ static T f(T x) { return T(1) / (x * x); } };

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
