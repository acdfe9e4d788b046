// GEMMs for small batches (M <= 64 rows), float32, with the MLP's epilogues fused:
//   out[m, n] = sum_k A[m, k] * B(k, n)
//   B_NT 1: B(k, n) = W[n * ldw + k]   the forward x @ W^T, W is (out, in)
//   B_NT 0: B(k, n) = W[k * ldw + n]   the data gradient dz @ W
//   EPI 0: out = acc
//   EPI 1: z = acc + vec[n]; out = act(z); aux_out = z (GELU only: its backward needs z)
//   EPI 2: out = acc * act'(aux_in[m, n]) (aux_in: y for ReLU, z for GELU); vec[n] = sum_m out
//
// Why not cuBLAS: with 64 rows a 784x784 layer has 13 output tiles of cuBLAS's size, so cuBLAS
// splits K and reduces in a second kernel, ~14 us for 39 MFLOP. These GEMMs are latency-bound,
// so the kernel is built to wait as little as possible:
// - a block owns all rows of a 64x32 tile (25 tiles for 784 columns) and at most MAX_STAGES
//   32-wide K stages; SPLIT blocks of one thread-block cluster share the tile's K range;
// - each thread issues the global loads of all its stages at once (one memory latency per
//   block, not one per stage);
// - the partial tiles are added through distributed shared memory: each block *stores* the
//   columns that block r finishes into r's shared memory (remote stores don't stall, remote
//   loads do), and r adds the SPLIT slots in a fixed order: deterministic, no second kernel.
// Owning all M rows also makes the bias gradient (a column sum over the batch) block-local.
//
// Compiled once per (SPLIT, B_NT, EPI, ACT) by small_gemm.py with -D options (runtime/compile.py).
#ifndef SPLIT
#define SPLIT 1
#endif

#define BM 64
#define BN 32
#define BK 32
#define THREADS 256
#define AS_LD (BM + 4)   // As[k][m]: the +4 makes the transposing stores conflict-free
#define BS_LD (BN + 4)   // Bs[k][n]
#define MAX_STAGES 7      // K stages per block at most (their loads all in flight at once)
#define COLS ((BN + SPLIT - 1) / SPLIT)   // tile columns each block of the cluster finishes
#define R_LD (COLS | 1)                   // odd: the column reads across rows are conflict-free

__device__ __forceinline__ unsigned cluster_rank() {
    unsigned r;
    asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
    return r;
}

__device__ __forceinline__ void cluster_sync() {
#if SPLIT > 1
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
#else
    __syncthreads();
#endif
}

// store v into the shared memory of block `rank` of this cluster, at the address p has here
__device__ __forceinline__ void store_cluster(float* p, unsigned rank, float v) {
    unsigned local = (unsigned)__cvta_generic_to_shared(p), remote;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(rank));
    asm volatile("st.shared::cluster.f32 [%0], %1;" :: "r"(remote), "f"(v) : "memory");
}

__device__ __forceinline__ float act_fwd(float z) {
#if ACT == 1
    return z < 0.f ? 0.f : z;       // NaN stays NaN, as torch.relu
#elif ACT == 2
    float t = tanhf(0.7978845608028654f * (z + 0.044715f * z * z * z));
    return 0.5f * z * (1.f + t);
#else
    return z;
#endif
}

__device__ __forceinline__ float act_grad(float g, float aux) {
#if ACT == 1
    return aux <= 0.f ? 0.f : g;    // aux is y = relu(z); torch's threshold_backward rule
#elif ACT == 2
    float t = tanhf(0.7978845608028654f * (aux + 0.044715f * aux * aux * aux));
    float d = 0.5f * (1.f + t) + 0.5f * aux * (1.f - t * t) * 0.7978845608028654f
              * (1.f + 3.f * 0.044715f * aux * aux);
    return g * d;
#else
    return g;
#endif
}

#if SPLIT > 1
#define CLUSTER __cluster_dims__(1, SPLIT, 1)
#else
#define CLUSTER           // one block per tile: a plain launch (a cluster launch costs ~0.7 us more)
#endif
extern "C" __global__ void CLUSTER __launch_bounds__(THREADS)
gemm_small(const float* __restrict__ A, const float* __restrict__ W, const float* __restrict__ vec_in,
           const float* __restrict__ aux_in, float* __restrict__ out, float* __restrict__ aux_out,
           float* __restrict__ vec_out, int M, int N, int K, int lda, int ldw, int stages_per_split) {
    __shared__ __align__(16) float As[2][BK * AS_LD];
    __shared__ __align__(16) float Bs[2][BK * BS_LD];
    const int t = threadIdx.x, n0 = blockIdx.x * BN;
    const unsigned rank = cluster_rank();
    const int k_begin = rank * stages_per_split * BK;
    const int k_end = min(K, k_begin + stages_per_split * BK);

    // global -> registers, every stage of this block at once. Lanes take 4 rows x 8 consecutive
    // k (4 full 32-byte sectors per warp load), which also makes the transposing smem stores
    // conflict-free.
    float ra[MAX_STAGES][8], rb[MAX_STAGES][4];
#pragma unroll
    for (int st = 0; st < MAX_STAGES; ++st) {
        const int k0 = k_begin + st * BK;
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            int idx = i * THREADS + t, kk = (idx & 7) + 8 * (idx >> 9), m = (idx >> 3) & 63, k = k0 + kk;
            ra[st][i] = (m < M && k < k_end) ? A[(size_t)m * lda + k] : 0.f;
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            int idx = i * THREADS + t;
#if B_NT
            int kk = (idx & 7) + 8 * (idx >> 8), n = (idx >> 3) & 31, k = k0 + kk;
            rb[st][i] = (n0 + n < N && k < k_end) ? W[(size_t)(n0 + n) * ldw + k] : 0.f;
#else
            int kk = idx >> 5, n = idx & 31, k = k0 + kk;
            rb[st][i] = (n0 + n < N && k < k_end) ? W[(size_t)k * ldw + n0 + n] : 0.f;
#endif
        }
    }
    auto store = [&](int st) {
        float* as = As[st & 1];
        float* bs = Bs[st & 1];
#pragma unroll
        for (int i = 0; i < 8; ++i) {
            int idx = i * THREADS + t, kk = (idx & 7) + 8 * (idx >> 9), m = (idx >> 3) & 63;
            as[kk * AS_LD + m] = ra[st][i];
        }
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            int idx = i * THREADS + t;
#if B_NT
            int kk = (idx & 7) + 8 * (idx >> 8), n = (idx >> 3) & 31;
#else
            int kk = idx >> 5, n = idx & 31;
#endif
            bs[kk * BS_LD + n] = rb[st][i];
        }
    };

    // each thread: rows 2*ty, 2*ty+1 and columns 4*tx .. 4*tx+3 of the 64x32 tile
    const int tx = t & 7, ty = t >> 3;
    float acc[2][4] = {};
    const int stages = max(0, min(stages_per_split, (k_end - k_begin + BK - 1) / BK));
    store(0);
    __syncthreads();
#pragma unroll
    for (int st = 0; st < MAX_STAGES; ++st) {
        if (st >= stages) break;
        if (st + 1 < stages) store(st + 1);     // the other buffer: last read before the sync
        const float* as = As[st & 1];
        const float* bs = Bs[st & 1];
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float2 a = *reinterpret_cast<const float2*>(as + k * AS_LD + 2 * ty);
            float4 b = *reinterpret_cast<const float4*>(bs + k * BS_LD + 4 * tx);
            acc[0][0] += a.x * b.x; acc[0][1] += a.x * b.y; acc[0][2] += a.x * b.z; acc[0][3] += a.x * b.w;
            acc[1][0] += a.y * b.x; acc[1][1] += a.y * b.y; acc[1][2] += a.y * b.z; acc[1][3] += a.y * b.w;
        }
        __syncthreads();
    }

    // the partial sums of columns [r * COLS, (r+1) * COLS) go to block r of the cluster, into
    // slot `rank` of its R[SPLIT][64][R_LD] (As, which every block is done reading after the sync)
    float* R = As[0];
    cluster_sync();
#pragma unroll
    for (int i = 0; i < 2; ++i)
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int c = 4 * tx + j, r = c / COLS;
            float* dst = &R[(rank * 64 + 2 * ty + i) * R_LD + c - r * COLS];
            if (SPLIT == 1) *dst = acc[i][j];
            else store_cluster(dst, r, acc[i][j]);
        }
    cluster_sync();

    // this block finishes columns [c0, c0 + ncols) of the tile: the SPLIT slots added in a fixed
    // order, the epilogue, and row-major stores (consecutive threads, consecutive columns: a
    // lane-per-row layout here cost more than the GEMM's arithmetic)
    const int c0 = rank * COLS, ncols = min(BN, c0 + COLS) - c0, nc = n0 + c0;
    float* D = Bs[0];      // EPI 2: the finished tile, for the bias gradient's column sums
    for (int e = t; e < 64 * COLS; e += THREADS) {
        const int m = e / COLS, cl = e - m * COLS, n = nc + cl;
        if (cl >= ncols) continue;
        float v = 0.f;
        if (m < M && n < N) {
#pragma unroll
            for (int s = 0; s < SPLIT; ++s) v += R[(s * 64 + m) * R_LD + cl];
            const size_t o = (size_t)m * N + n;
#if EPI == 1
            const float z = v + vec_in[n];
            out[o] = act_fwd(z);
#if ACT == 2
            aux_out[o] = z;
#endif
#elif EPI == 2
            v = act_grad(v, aux_in[o]);
            out[o] = v;
#else
            out[o] = v;
#endif
        }
#if EPI == 2
        D[m * R_LD + cl] = v;      // 0 outside the matrix
#endif
    }
#if EPI == 2
    __syncthreads();
    const int warp = t >> 5, lane = t & 31;
    for (int cl = warp; cl < ncols; cl += THREADS / 32) {
        float colsum = D[lane * R_LD + cl] + D[(lane + 32) * R_LD + cl];
        for (int off = 16; off > 0; off >>= 1) colsum += __shfl_xor_sync(0xffffffff, colsum, off);
        if (lane == 0 && nc + cl < N) vec_out[nc + cl] = colsum;
    }
#endif
}
