// Multi-tensor optimizer updates: one launch updates every parameter of a group. The host
// splits all tensors into chunks of CHUNK elements; block k handles chunk k of tensor
// chunk_tensor[k]. ptrs holds, per tensor, the addresses of (w, g, m, v, vmax).
// The arithmetic matches paragrad/optim/adam.py's adam_update operation for operation (same
// order, constants rounded to float32 on the host the same way, compiled with --fmad=false),
// so the fused and the composed update give the same bits.

#define CHUNK 65536

extern "C" __global__ void adam_f32(const unsigned long long* ptrs, const long long* sizes,
                                    const int* chunk_tensor, const long long* chunk_start,
                                    float omb1, float beta2, float omb2, float eps_c, float step_c,
                                    float wd, float decay, int decoupled, int amsgrad, int maximize) {
    int t = chunk_tensor[blockIdx.x];
    long long start = chunk_start[blockIdx.x];
    long long end = min(start + CHUNK, sizes[t]);
    float* w = (float*)ptrs[5 * t];
    const float* g = (const float*)ptrs[5 * t + 1];
    float* m = (float*)ptrs[5 * t + 2];
    float* v = (float*)ptrs[5 * t + 3];
    float* vmax = (float*)ptrs[5 * t + 4];
    for (long long i = start + threadIdx.x; i < end; i += blockDim.x) {
        float gi = maximize ? -g[i] : g[i];
        float wi = w[i];
        if (wd != 0.0f) {
            if (decoupled) wi = wi * decay;
            else gi = gi + wi * wd;
        }
        float mi = m[i] + (gi - m[i]) * omb1;
        float vi = v[i] * beta2 + gi * gi * omb2;
        m[i] = mi;
        v[i] = vi;
        if (amsgrad) { vi = max(vmax[i], vi); vmax[i] = vi; }
        w[i] = wi - mi / (sqrtf(vi) + eps_c) * step_c;
    }
}

// SGD with momentum: buf = mom * buf + omd * g  (omd = 1 - dampening) (buf = g on the first step);
// update = nesterov ? g + mom * buf : buf;  w -= lr * update
extern "C" __global__ void sgd_f32(const unsigned long long* ptrs, const long long* sizes,
                                   const int* chunk_tensor, const long long* chunk_start,
                                   float lr, float mom, float omd, float wd, int nesterov,
                                   int maximize, int first) {
    int t = chunk_tensor[blockIdx.x];
    long long start = chunk_start[blockIdx.x];
    long long end = min(start + CHUNK, sizes[t]);
    float* w = (float*)ptrs[5 * t];
    const float* g = (const float*)ptrs[5 * t + 1];
    float* buf = (float*)ptrs[5 * t + 2];
    for (long long i = start + threadIdx.x; i < end; i += blockDim.x) {
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
