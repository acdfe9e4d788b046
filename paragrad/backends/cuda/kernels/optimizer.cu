// Multi-tensor optimizer updates: one launch updates every parameter of a group. The host
// splits all tensors into chunks of CHUNK elements; block k handles chunk k of tensor
// chunk_tensor[k]. ptrs holds, per tensor, the addresses of (w, g, m, v, vmax, step).
// The learning rate (a float64 device scalar) and Adam's step counts (float32 device scalars,
// PyTorch's layout) are read on the device, so a step captured in a CUDA graph follows LR
// schedules and bias corrections without re-capture.
// The arithmetic matches paragrad/optim/adam.py's adam_update operation for operation (same
// order, float64 constants rounded to float32 as the host does, compiled with --fmad=false),
// so the fused and the composed update give the same bits.
// found_inf (a float32 device scalar, or null) is GradScaler's flag: nonzero skips the whole
// update, step counts included, on the device (what torch's fused path does), so a step captured
// with a scaler needs no host read to decide.

#include "block_reduce.cuh"
#include "last_block.cuh"

#define CHUNK 4096
#define SLOTS 6

// This block's chunk: elements [start, end) of the tensor whose SLOTS addresses start at slots.
struct Chunk {
    const unsigned long long* slots;
    long long start, end;
};

__device__ __forceinline__ Chunk this_chunk(const unsigned long long* ptrs, const long long* sizes,
                                            const int* chunk_tensor, const long long* chunk_start) {
    int t = chunk_tensor[blockIdx.x];
    long long start = chunk_start[blockIdx.x];
    return {ptrs + SLOTS * t, start, min(start + CHUNK, sizes[t])};
}

struct AdamConst {
    float omb1, b2, omb2, eps_c, step_c, decay, wd;
    int decoupled, amsgrad, maximize;
};

// Adam's per-step constants for step count k, in float64 and rounded as the host rounds them.
__device__ AdamConst adam_const(double k, double lr, double beta1, double beta2, double eps, double wd,
                                int decoupled, int amsgrad, int maximize) {
    double c2 = sqrt(1.0 - pow(beta2, k));
    AdamConst c;
    c.eps_c = (float)(eps * c2);
    c.step_c = (float)(lr * c2 / (1.0 - pow(beta1, k)));
    c.decay = (float)(1.0 - lr * wd);
    c.omb1 = (float)(1.0 - beta1); c.b2 = (float)beta2; c.omb2 = (float)(1.0 - beta2); c.wd = (float)wd;
    c.decoupled = decoupled; c.amsgrad = amsgrad; c.maximize = maximize;
    return c;
}

__device__ __forceinline__ void adam_elem(float& w, float g, float& m, float& v, float* vmax, const AdamConst& c) {
    float gi = c.maximize ? -g : g;
    float wi = w;
    if (c.wd != 0.0f) {
        if (c.decoupled) wi = wi * c.decay;
        else gi = gi + wi * c.wd;
    }
    float mi = m + (gi - m) * c.omb1;
    float vi = v * c.b2 + gi * gi * c.omb2;
    m = mi;
    v = vi;
    if (c.amsgrad) { vi = max(*vmax, vi); *vmax = vi; }
    w = wi - mi / (sqrtf(vi) + c.eps_c) * c.step_c;
}

// The step counts are read here and advanced by advance_steps after this launch. (Advancing
// them in the launch's last block, found by a ticket, cost 4-6 us of an 18 us update of 1.9M
// parameters: the ticket's fence and atomic in each of ~900 blocks.)
extern "C" __global__ void adam_f32(const unsigned long long* ptrs, const long long* sizes,
                                    const int* chunk_tensor, const long long* chunk_start,
                                    const double* lr_ptr, double beta1, double beta2, double eps,
                                    double wd, int decoupled, int amsgrad, int maximize,
                                    const float* found_inf) {
    if (found_inf && *found_inf != 0.0f) return;
    Chunk ch = this_chunk(ptrs, sizes, chunk_tensor, chunk_start);
    long long start = ch.start, end = ch.end;
    float* w = (float*)ch.slots[0];
    const float* g = (const float*)ch.slots[1];
    float* m = (float*)ch.slots[2];
    float* v = (float*)ch.slots[3];
    float* vmax = (float*)ch.slots[4];
    // one thread works out the constants (float64 pow in every thread cost ~1 us)
    __shared__ AdamConst shared_c;
    if (threadIdx.x == 0)
        shared_c = adam_const((double)*(const float*)ch.slots[5] + 1.0, *lr_ptr, beta1, beta2, eps, wd,
                              decoupled, amsgrad, maximize);
    __syncthreads();
    const AdamConst c = shared_c;
    // float4 accesses for the bulk when the buffers are 16-byte aligned (chunks start at
    // multiples of CHUNK, so then every chunk is), then the rest one element at a time
    bool aligned = (((unsigned long long)w | (unsigned long long)g | (unsigned long long)m |
                     (unsigned long long)v) & 15) == 0;
    long long n4 = aligned ? (end - start) / 4 : 0;
    for (long long q = threadIdx.x; q < n4; q += blockDim.x) {
        long long i = start + 4 * q;
        float4 w4 = *(float4*)(w + i), g4 = *(const float4*)(g + i), m4 = *(float4*)(m + i), v4 = *(float4*)(v + i);
        adam_elem(w4.x, g4.x, m4.x, v4.x, vmax + i, c);
        adam_elem(w4.y, g4.y, m4.y, v4.y, vmax + i + 1, c);
        adam_elem(w4.z, g4.z, m4.z, v4.z, vmax + i + 2, c);
        adam_elem(w4.w, g4.w, m4.w, v4.w, vmax + i + 3, c);
        *(float4*)(w + i) = w4; *(float4*)(m + i) = m4; *(float4*)(v + i) = v4;
    }
    for (long long i = start + 4 * n4 + threadIdx.x; i < end; i += blockDim.x)
        adam_elem(w[i], g[i], m[i], v[i], vmax + i, c);
}

// Every tensor's step count (slot 5) plus one, unless found_inf skipped the update. One block.
extern "C" __global__ void advance_steps(const unsigned long long* ptrs, int ntensors, const float* found_inf) {
    if (found_inf && *found_inf != 0.0f) return;
    for (int i = threadIdx.x; i < ntensors; i += blockDim.x) *(float*)ptrs[SLOTS * i + 5] += 1.0f;
}

// SGD with momentum: buf = mom * buf + omd * g  (omd = 1 - dampening) (buf = g on the first step);
// update = nesterov ? g + mom * buf : buf;  w -= lr * update
extern "C" __global__ void sgd_f32(const unsigned long long* ptrs, const long long* sizes,
                                   const int* chunk_tensor, const long long* chunk_start,
                                   const double* lr_ptr, float mom, float omd, float wd, int nesterov,
                                   int maximize, int first, const float* found_inf) {
    if (found_inf && *found_inf != 0.0f) return;
    Chunk ch = this_chunk(ptrs, sizes, chunk_tensor, chunk_start);
    float* w = (float*)ch.slots[0];
    const float* g = (const float*)ch.slots[1];
    float* buf = (float*)ch.slots[2];
    float lr = (float)*lr_ptr;
    for (long long i = ch.start + threadIdx.x; i < ch.end; i += blockDim.x) {
        float gi = maximize ? -g[i] : g[i];
        if (wd != 0.0f) gi = gi + w[i] * wd;
        if (mom != 0.0f) {
            float b = first ? gi : buf[i] * mom + gi * omd;
            buf[i] = b;
            gi = nesterov ? gi + b * mom : b;
        }
        w[i] = w[i] - gi * lr;
    }
}

// GradScaler's unscale (torch's _amp_foreach_non_finite_check_and_unscale_): every gradient
// (slot 0 of each tensor) times *inv_scale, in place; *found_inf becomes 1 where any element
// is inf or NaN (a benign race: every writer writes 1).
extern "C" __global__ void unscale_f32(const unsigned long long* ptrs, const long long* sizes,
                                       const int* chunk_tensor, const long long* chunk_start,
                                       float* found_inf, const float* inv_scale_ptr) {
    Chunk ch = this_chunk(ptrs, sizes, chunk_tensor, chunk_start);
    float* g = (float*)ch.slots[0];
    float inv_scale = *inv_scale_ptr;
    bool bad = false;
    for (long long i = ch.start + threadIdx.x; i < ch.end; i += blockDim.x) {
        float v = g[i];
        bad |= !isfinite(v);
        if (inv_scale != 1.0f) g[i] = v * inv_scale;
    }
    if (bad) *found_inf = 1.0f;
}

// clip_grad_norm_'s squared 2-norm of all gradients (slot 0 of each tensor) together: each
// block writes its chunk's sum of squares to partial[block]; the last block to finish
// (arrived_last) adds the partials in order, in double, into *out, so the
// result does not depend on timing.
extern "C" __global__ void sum_squares_f32(const unsigned long long* ptrs, const long long* sizes,
                                           const int* chunk_tensor, const long long* chunk_start,
                                           float* partial, float* out, unsigned int* ticket) {
    __shared__ float shm[32];
    __shared__ double shm64[32];
    Chunk ch = this_chunk(ptrs, sizes, chunk_tensor, chunk_start);
    const float* g = (const float*)ch.slots[0];
    float s = 0.0f;
    for (long long i = ch.start + threadIdx.x; i < ch.end; i += blockDim.x) s += g[i] * g[i];
    s = block_sum(s, shm);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
    if (!arrived_last(ticket, gridDim.x)) return;
    const volatile float* vp = partial;
    double t = 0.0;
    for (long long k = threadIdx.x; k < gridDim.x; k += blockDim.x) t += vp[k];
    t = block_sum(t, shm64);
    if (threadIdx.x == 0) *out = (float)t;
}
