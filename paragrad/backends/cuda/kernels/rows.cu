// Row-wise fused kernels: one block per row of a (rows, cols) contiguous matrix.
//   softmax / log_softmax forward and backward, cross-entropy forward and backward,
//   layer_norm forward and backward (the per-row part), and layer_norm's weight and bias
//   gradients, column sums (blocks over strips of 32 columns and chunks of rows).
// T is float or double; accumulation is in the same type (float32 rows are short enough).

#include "block_reduce.cuh"

template <typename T> __device__ __forceinline__ T qnan();
template <> __device__ __forceinline__ float qnan<float>() { return __int_as_float(0x7fc00000); }
template <> __device__ __forceinline__ double qnan<double>() { return __longlong_as_double(0x7ff8000000000000ULL); }

// y = softmax(x) or log_softmax(x) along each row
template <typename T> __device__ void softmax_fwd(const T* x, T* y, long long cols, int log) {
    __shared__ T shm[32];
    const T* xr = x + blockIdx.x * cols;
    T* yr = y + blockIdx.x * cols;
    T m = neg_inf<T>();
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = max(m, xr[j]);
    m = block_max(m, shm);
    if (m == neg_inf<T>()) m = T(0);       // a row of -inf: exp(-inf - 0) = 0, as the composite
    T s = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += exp(xr[j] - m);
    s = block_sum(s, shm);
    if (log) {
        T lse = m + ::log(s);
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = xr[j] - lse;
    } else {
        T inv = T(1) / s;
        for (long long j = threadIdx.x; j < cols; j += blockDim.x) yr[j] = exp(xr[j] - m) * inv;
    }
}

// dx = y * (g - sum(g * y))  (softmax)   or   dx = g - exp(y) * sum(g)  (log_softmax)
template <typename T> __device__ void softmax_bwd(const T* y, const T* g, T* dx, long long cols, int log) {
    __shared__ T shm[32];
    const T* yr = y + blockIdx.x * cols;
    const T* gr = g + blockIdx.x * cols;
    T* dr = dx + blockIdx.x * cols;
    T s = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += log ? gr[j] : gr[j] * yr[j];
    s = block_sum(s, shm);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        dr[j] = log ? gr[j] - exp(yr[j]) * s : yr[j] * (gr[j] - s);
}

// Cross-entropy forward in one launch. Block r computes row r's logsumexp and its loss
// (lse - x[target]) * valid into rows[r], its valid flag into rows[n + r]. The last block to
// finish (a ticket counter, reset by that block for the next launch) sums both halves in a
// fixed order, so the result is deterministic, and writes out = [loss (mean: sum / count), count].
// An out-of-range target gives NaN (the host checks bounds when it is not capturing a graph).
template <typename T> __device__ void xent_fwd(const T* x, const long long* target, T* rows, T* lse_out,
                                               T* out, unsigned int* ticket, long long cols,
                                               long long ignore_index, int mean) {
    __shared__ T shm[32];
    __shared__ bool last;
    const T* xr = x + blockIdx.x * cols;
    T m = neg_inf<T>();
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) m = max(m, xr[j]);
    m = block_max(m, shm);
    T s = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += exp(xr[j] - m);
    s = block_sum(s, shm);
    if (threadIdx.x == 0) {
        T lse = m + ::log(s);
        long long t = target[blockIdx.x];
        lse_out[blockIdx.x] = lse;
        bool ignored = t == ignore_index;
        bool bad = !ignored && (t < 0 || t >= cols);
        rows[blockIdx.x] = ignored ? T(0) : (bad ? qnan<T>() : lse - xr[t]);
        rows[gridDim.x + blockIdx.x] = ignored ? T(0) : T(1);
        __threadfence();                    // the row is visible before the ticket says so
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    const volatile T* vr = rows;
    T total = T(0), count = T(0);
    for (long long i = threadIdx.x; i < gridDim.x; i += blockDim.x) {
        total += vr[i];
        count += vr[gridDim.x + i];
    }
    total = block_sum(total, shm);
    count = block_sum(count, shm);
    if (threadIdx.x == 0) {
        out[0] = mean ? total / count : total;
        out[1] = count;
        *ticket = 0u;
    }
}

// dx = (softmax(x) - onehot(target)) * valid * k, k = g / max(count, 1) for a mean, else g
template <typename T> __device__ void xent_bwd(const T* x, const long long* target, const T* lse,
                                               const T* g, const T* count, T* dx, long long cols,
                                               long long ignore_index, int mean) {
    const T* xr = x + blockIdx.x * cols;
    T* dr = dx + blockIdx.x * cols;
    long long t = target[blockIdx.x];
    T scale = mean ? g[0] / max(count[0], T(1)) : g[0];
    T k = t == ignore_index ? T(0) : ((t < 0 || t >= cols) ? qnan<T>() : scale);
    T l = lse[blockIdx.x];
    for (long long j = threadIdx.x; j < cols; j += blockDim.x)
        dr[j] = (exp(xr[j] - l) - (j == t ? T(1) : T(0))) * k;
}

// y = (x - mean) * rstd * w + b over each row; saves mean and rstd per row
template <typename T> __device__ void ln_fwd(const T* x, const T* w, const T* b, T* y, T* mean_out,
                                             T* rstd_out, long long cols, T eps) {
    __shared__ T shm[32];
    const T* xr = x + blockIdx.x * cols;
    T* yr = y + blockIdx.x * cols;
    T s = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) s += xr[j];
    T mean = block_sum(s, shm) / T(cols);
    T v = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) { T d = xr[j] - mean; v += d * d; }
    T rstd = T(1) / sqrt(block_sum(v, shm) / T(cols) + eps);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        T h = (xr[j] - mean) * rstd;
        yr[j] = h * (w ? w[j] : T(1)) + (b ? b[j] : T(0));
    }
    if (threadIdx.x == 0) { mean_out[blockIdx.x] = mean; rstd_out[blockIdx.x] = rstd; }
}

// dx = rstd * (gw - mean(gw) - xhat * mean(gw * xhat)), gw = g * w
template <typename T> __device__ void ln_bwd(const T* g, const T* x, const T* w, const T* mean,
                                             const T* rstd, T* dx, long long cols) {
    __shared__ T shm[32];
    const T* gr = g + blockIdx.x * cols;
    const T* xr = x + blockIdx.x * cols;
    T* dr = dx + blockIdx.x * cols;
    T mu = mean[blockIdx.x], r = rstd[blockIdx.x];
    T a = T(0), c = T(0);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        T gw = gr[j] * (w ? w[j] : T(1));
        a += gw;
        c += gw * (xr[j] - mu) * r;
    }
    a = block_sum(a, shm) / T(cols);
    c = block_sum(c, shm) / T(cols);
    for (long long j = threadIdx.x; j < cols; j += blockDim.x) {
        T gw = gr[j] * (w ? w[j] : T(1));
        dr[j] = r * (gw - a - (xr[j] - mu) * r * c);
    }
}

// layer_norm's dw = sum over rows of g * xhat, db = sum of g, for (rows, cols) g and x.
// Grid (column strips of 32, row chunks), block (32, 8): each block sums its chunk for its 32
// columns, in a fixed order. With one chunk it writes dw and db; with several it writes
// partials (2, chunks, cols) and the last block to finish (a ticket counter, reset by that
// block for the next launch) adds the chunks in order, so the result is deterministic.
template <typename T> __device__ void ln_bwd_params(const T* g, const T* x, const T* mean, const T* rstd,
                                                    T* part, T* dw, T* db, unsigned int* ticket,
                                                    long long rows, long long cols, long long chunk) {
    __shared__ T sw[8][33], sb[8][33];
    __shared__ bool last;
    int tx = threadIdx.x, ty = threadIdx.y;
    long long c = blockIdx.x * 32LL + tx;
    long long r0 = blockIdx.y * chunk, r1 = min(rows, r0 + chunk);
    T aw = T(0), ab = T(0);
    if (c < cols)
        for (long long r = r0 + ty; r < r1; r += 8) {
            T gv = g[r * cols + c];
            aw += gv * ((x[r * cols + c] - mean[r]) * rstd[r]);
            ab += gv;
        }
    sw[ty][tx] = aw;
    sb[ty][tx] = ab;
    __syncthreads();
    int chunks = gridDim.y;
    if (ty == 0 && c < cols) {
        T w = T(0), b = T(0);
        for (int k = 0; k < 8; k++) { w += sw[k][tx]; b += sb[k][tx]; }
        if (chunks == 1) { dw[c] = w; db[c] = b; }
        else { part[blockIdx.y * cols + c] = w; part[(chunks + blockIdx.y) * cols + c] = b; }
    }
    if (chunks == 1) return;
    __threadfence();                        // the partials are visible before the ticket says so
    __syncthreads();
    if (tx == 0 && ty == 0) last = atomicAdd(ticket, 1u) == gridDim.x * gridDim.y - 1;
    __syncthreads();
    if (!last) return;
    __threadfence();
    const volatile T* vp = part;
    for (long long j = ty * 32LL + tx; j < cols; j += 256) {
        T w = T(0), b = T(0);
        for (int k = 0; k < chunks; k++) { w += vp[k * cols + j]; b += vp[(chunks + k) * cols + j]; }
        dw[j] = w;
        db[j] = b;
    }
    if (tx == 0 && ty == 0) *ticket = 0u;
}

#define ROWS(T, S) \
extern "C" __global__ void softmax_fwd_##S(const T* x, T* y, long long cols, int log) { softmax_fwd<T>(x, y, cols, log); } \
extern "C" __global__ void softmax_bwd_##S(const T* y, const T* g, T* dx, long long cols, int log) { softmax_bwd<T>(y, g, dx, cols, log); } \
extern "C" __global__ void xent_fwd_##S(const T* x, const long long* t, T* rows, T* lse, T* out, unsigned int* ticket, long long cols, long long ig, int mean) { xent_fwd<T>(x, t, rows, lse, out, ticket, cols, ig, mean); } \
extern "C" __global__ void xent_bwd_##S(const T* x, const long long* t, const T* lse, const T* g, const T* count, T* dx, long long cols, long long ig, int mean) { xent_bwd<T>(x, t, lse, g, count, dx, cols, ig, mean); } \
extern "C" __global__ void ln_fwd_##S(const T* x, const T* w, const T* b, T* y, T* mean, T* rstd, long long cols, T eps) { ln_fwd<T>(x, w, b, y, mean, rstd, cols, eps); } \
extern "C" __global__ void ln_bwd_##S(const T* g, const T* x, const T* w, const T* mean, const T* rstd, T* dx, long long cols) { ln_bwd<T>(g, x, w, mean, rstd, dx, cols); } \
extern "C" __global__ void ln_bwd_params_##S(const T* g, const T* x, const T* mean, const T* rstd, T* part, T* dw, T* db, unsigned int* ticket, long long rows, long long cols, long long chunk) { ln_bwd_params<T>(g, x, mean, rstd, part, dw, db, ticket, rows, cols, chunk); }

ROWS(float, f32)
ROWS(double, f64)
