// One time step of an LSTM, GRU or Elman RNN, its elementwise part in one launch (the GEMM
// h_prev W_hh^T is done before, by cuBLAS). The math and the buffers are those of the fast-path
// seam in paragrad/ops/neural/recurrent.py; one thread per (row, hidden unit), gates side by side in
// rows of width k*H. T is float or double.

template <typename T> __device__ __forceinline__ T sigmoid(T x) {
    return x >= T(0) ? T(1) / (T(1) + exp(-x)) : exp(x) / (T(1) + exp(x));
}

#define FOR_EACH_UNIT(N, H)                                                                  \
    for (long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x; u < (N) * (H);        \
         u += (long long)gridDim.x * blockDim.x)

// act = [sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)] of gi + hh; c = f c_prev + i g;
// tanh_c = tanh(c); h = o tanh_c. c may be c_prev.
template <typename T>
__global__ void lstm_forward(const T* gi, const T* hh, const T* c_prev, T* act, T* c, T* tanh_c,
                             T* h, long long N, long long H) {
    FOR_EACH_UNIT(N, H) {
        long long n = u / H, j = u % H, r = n * 4 * H + j;
        T i = sigmoid(gi[r] + hh[r]);
        T f = sigmoid(gi[r + H] + hh[r + H]);
        T g = tanh(gi[r + 2 * H] + hh[r + 2 * H]);
        T o = sigmoid(gi[r + 3 * H] + hh[r + 3 * H]);
        T cn = f * c_prev[u] + i * g;
        T tc = tanh(cn);
        act[r] = i; act[r + H] = f; act[r + 2 * H] = g; act[r + 3 * H] = o;
        c[u] = cn; tanh_c[u] = tc; h[u] = o * tc;
    }
}

// dc_t = dc + dh o (1 - tanh_c^2); dgates = (dc_t g i(1-i), dc_t c_prev f(1-f),
// dc_t i (1-g^2), dh tanh_c o(1-o)); dc_prev = dc_t f. dc_prev may be dc.
template <typename T>
__global__ void lstm_backward(const T* dh, const T* dc, const T* act, const T* c_prev,
                              const T* tanh_c, T* dgates, T* dc_prev, long long N, long long H) {
    FOR_EACH_UNIT(N, H) {
        long long n = u / H, j = u % H, r = n * 4 * H + j;
        T i = act[r], f = act[r + H], g = act[r + 2 * H], o = act[r + 3 * H];
        T tc = tanh_c[u], d = dh[u];
        T dct = dc[u] + d * o * (T(1) - tc * tc);
        dgates[r] = dct * g * i * (T(1) - i);
        dgates[r + H] = dct * c_prev[u] * f * (T(1) - f);
        dgates[r + 2 * H] = dct * i * (T(1) - g * g);
        dgates[r + 3 * H] = d * tc * o * (T(1) - o);
        dc_prev[u] = dct * f;
    }
}

// r = sigmoid(gi_r + hh_r), z = sigmoid(gi_z + hh_z), ghn = hh_n + b_hn,
// n = tanh(gi_n + r ghn), h = (1 - z) n + z h_prev; act = [r, z, n]. b_hn may be null.
template <typename T>
__global__ void gru_forward(const T* gi, const T* hh, const T* b_hn, const T* h_prev, T* act,
                            T* ghn, T* h, long long N, long long H) {
    FOR_EACH_UNIT(N, H) {
        long long n = u / H, j = u % H, r = n * 3 * H + j;
        T rg = sigmoid(gi[r] + hh[r]);
        T z = sigmoid(gi[r + H] + hh[r + H]);
        T gn = hh[r + 2 * H] + (b_hn ? b_hn[j] : T(0));
        T nn = tanh(gi[r + 2 * H] + rg * gn);
        act[r] = rg; act[r + H] = z; act[r + 2 * H] = nn;
        ghn[u] = gn;
        h[u] = nn + z * (h_prev[u] - nn);
    }
}

// dgi = (dn_pre ghn r(1-r), dh (h_prev - n) z(1-z), dn_pre) with dn_pre = dh (1-z)(1-n^2);
// dgh = (dgi_r, dgi_z, dn_pre r); dh_prev = dh z (the direct path only).
template <typename T>
__global__ void gru_backward(const T* dh, const T* h_prev, const T* act, const T* ghn, T* dgi,
                             T* dgh, T* dh_prev, long long N, long long H) {
    FOR_EACH_UNIT(N, H) {
        long long n = u / H, j = u % H, r = n * 3 * H + j;
        T rg = act[r], z = act[r + H], nn = act[r + 2 * H], d = dh[u];
        T dn = d * (T(1) - z) * (T(1) - nn * nn);
        T dz = d * (h_prev[u] - nn) * z * (T(1) - z);
        T dr = dn * ghn[u] * rg * (T(1) - rg);
        dgi[r] = dr; dgi[r + H] = dz; dgi[r + 2 * H] = dn;
        dgh[r] = dr; dgh[r + H] = dz; dgh[r + 2 * H] = dn * rg;
        dh_prev[u] = d * z;
    }
}

// h = tanh(gi + hh) or relu(gi + hh)
template <typename T>
__global__ void rnn_forward(const T* gi, const T* hh, T* h, long long n, int relu) {
    for (long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x; u < n;
         u += (long long)gridDim.x * blockDim.x) {
        T p = gi[u] + hh[u];
        h[u] = relu ? (p < T(0) ? T(0) : p) : tanh(p);
    }
}

// dpre = dh (1 - h^2) (tanh) or dh where h > 0 (relu)
template <typename T>
__global__ void rnn_backward(const T* dh, const T* h, T* dpre, long long n, int relu) {
    for (long long u = blockIdx.x * (long long)blockDim.x + threadIdx.x; u < n;
         u += (long long)gridDim.x * blockDim.x)
        dpre[u] = relu ? (h[u] > T(0) ? dh[u] : T(0)) : dh[u] * (T(1) - h[u] * h[u]);
}
