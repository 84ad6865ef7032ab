// ruda's native LayerNorm for CUDA: forward, input gradient with per-block weight and bias
// partial sums, and the fixed-order reduction of those partials (a kernel of its own, or the
// last block of a small backward). Built by NVRTC per element type and shape class;
// ruda_cuda/source_task.py appends one extern "C" entry point that instantiates a template
// below. Nothing here checks arguments: the host plan
// (ruda_cuda/layer_norm_plan.py) guarantees every access is in bounds.
//
// Layout. A row of `features` elements is cut into vectors of V elements (V divides features
// and every pointer is aligned to V elements, so one vector is one 4-, 8- or 16-byte access).
// A row is handled by a *row group* of ROW_THREADS = 32 * ROW_WARPS threads: thread t of the
// group owns the vectors i = k * ROW_THREADS + t for k < VPT, the same columns in every row.
// Either the group is one warp and a block holds ROWS groups (rows up to a few thousand
// elements), or the group is the whole block (ROWS == 1, wide rows); so every __syncthreads
// is reached by the whole block.
//
// Arithmetic is in f32 for every element type: sums per thread in vector order, then a warp
// butterfly (__shfl_xor_sync: every lane ends with the same bits, since each step adds the same
// two values on both lanes), then the warps' results in warp order. The variance is a second
// pass over the registers, centred on the mean. The order of every sum is fixed by the launch,
// so results are deterministic.

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace ruda_ln {

__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) {
    return __float2half_rn(v);
}
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

// V consecutive elements, aligned to their size: one vector load or store.
template <typename T, int V> struct alignas(sizeof(T) * V) Vec {
    T v[V];
};

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
    for (int offset = 16; offset > 0; offset >>= 1) {
        v += __shfl_xor_sync(0xffffffffu, v, offset);
    }
    return v;
}

// Sums each of v[0..K) over the row group; every thread of the group gets the same bits.
// scratch holds ROW_WARPS * K floats; it is free again when this returns.
template <int ROW_WARPS, int K>
__device__ __forceinline__ void row_sums(float (&v)[K], float* scratch) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
        v[k] = warp_sum(v[k]);
    }
    if constexpr (ROW_WARPS > 1) {
        const int warp = threadIdx.x >> 5;
        if ((threadIdx.x & 31) == 0) {
#pragma unroll
            for (int k = 0; k < K; ++k) {
                scratch[warp * K + k] = v[k];
            }
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < K; ++k) {
            float total = 0.0f;
#pragma unroll
            for (int w = 0; w < ROW_WARPS; ++w) {
                total += scratch[w * K + k];
            }
            v[k] = total;
        }
        __syncthreads();
    }
}

// out = (x - mean) * rstd * weight (+ bias); mean and rstd (f32) of every row.
template <typename T, int V, int VPT, int ROW_WARPS, int ROWS>
__device__ __forceinline__ void forward(const T* __restrict__ x, const T* __restrict__ weight,
                                        const T* __restrict__ bias, T* __restrict__ out,
                                        float* __restrict__ mean, float* __restrict__ rstd,
                                        unsigned rows, unsigned features, float epsilon,
                                        int has_bias) {
    static_assert(ROW_WARPS == 1 || ROWS == 1, "a multi-warp row group is the whole block");
    constexpr unsigned ROW_THREADS = 32 * ROW_WARPS;
    __shared__ float scratch[ROW_WARPS];
    const unsigned row = blockIdx.x * ROWS + threadIdx.x / ROW_THREADS;
    const unsigned t = threadIdx.x % ROW_THREADS;
    if (row >= rows) {
        return;  // a whole warp (ROWS > 1) or the whole block (ROWS == 1)
    }
    const unsigned vectors = features / V;
    const size_t base = (size_t)row * features;
    const Vec<T, V>* xs = reinterpret_cast<const Vec<T, V>*>(x + base);
    const Vec<T, V>* ws = reinterpret_cast<const Vec<T, V>*>(weight);
    const Vec<T, V>* bs = reinterpret_cast<const Vec<T, V>*>(bias);
    Vec<T, V>* os = reinterpret_cast<Vec<T, V>*>(out + base);
    const float n = (float)features;

    float v[VPT][V];
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const unsigned i = k * ROW_THREADS + t;
        if (i < vectors) {
            const Vec<T, V> a = xs[i];
#pragma unroll
            for (int e = 0; e < V; ++e) v[k][e] = to_float(a.v[e]);
        } else {
#pragma unroll
            for (int e = 0; e < V; ++e) v[k][e] = 0.0f;
        }
    }
    float total[1] = {0.0f};
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
#pragma unroll
        for (int e = 0; e < V; ++e) total[0] += v[k][e];
    }
    row_sums<ROW_WARPS, 1>(total, scratch);
    const float mu = total[0] / n;

    float squares[1] = {0.0f};
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        if (k * ROW_THREADS + t < vectors) {
#pragma unroll
            for (int e = 0; e < V; ++e) {
                const float centred = v[k][e] - mu;
                squares[0] += centred * centred;
            }
        }
    }
    row_sums<ROW_WARPS, 1>(squares, scratch);
    const float inv = 1.0f / sqrtf(squares[0] / n + epsilon);

#pragma unroll
    for (int k = 0; k < VPT; ++k) {
        const unsigned i = k * ROW_THREADS + t;
        if (i < vectors) {
            const Vec<T, V> w = ws[i];
            Vec<T, V> b;
            if (has_bias) b = bs[i];
            Vec<T, V> o;
#pragma unroll
            for (int e = 0; e < V; ++e) {
                float y = (v[k][e] - mu) * inv * to_float(w.v[e]);
                if (has_bias) y += to_float(b.v[e]);
                o.v[e] = from_float<T>(y);
            }
            os[i] = o;
        }
    }
    if (t == 0) {
        mean[row] = mu;
        rstd[row] = inv;
    }
}

// grad_input = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = grad * weight, for the rows
// blockIdx.x * ROWS + group, stepping by gridDim.x * ROWS. Each thread also sums grad * xhat and
// grad over those rows for its own columns, in row order; the block then writes one row of
// partial sums, partial_*[blockIdx.x * features + column] (the ROWS groups of a warp-group block
// added in group order). The second pass over the row re-reads x, grad and weight, which the
// first pass has just brought into L1, so that registers hold little more than the partial sums.
template <typename T, int V, int VPT, int ROW_WARPS, int ROWS>
__device__ __forceinline__ void backward(const T* __restrict__ x, const T* __restrict__ weight,
                                         const T* __restrict__ grad,
                                         const float* __restrict__ mean,
                                         const float* __restrict__ rstd,
                                         T* __restrict__ grad_input,
                                         float* __restrict__ partial_weight,
                                         float* __restrict__ partial_bias, unsigned rows,
                                         unsigned features) {
    static_assert(ROW_WARPS == 1 || ROWS == 1, "a multi-warp row group is the whole block");
    constexpr unsigned ROW_THREADS = 32 * ROW_WARPS;
    constexpr unsigned CAPACITY = ROW_THREADS * VPT * V;  // the widest row of this class
    __shared__ float scratch[ROW_WARPS * 2];
    const unsigned group = threadIdx.x / ROW_THREADS;
    const unsigned t = threadIdx.x % ROW_THREADS;
    const unsigned vectors = features / V;
    const Vec<T, V>* ws = reinterpret_cast<const Vec<T, V>*>(weight);
    const float n = (float)features;

    float acc_weight[VPT][V];
    float acc_bias[VPT][V];
#pragma unroll
    for (int k = 0; k < VPT; ++k) {
#pragma unroll
        for (int e = 0; e < V; ++e) {
            acc_weight[k][e] = 0.0f;
            acc_bias[k][e] = 0.0f;
        }
    }

    for (unsigned row = blockIdx.x * ROWS + group; row < rows; row += gridDim.x * ROWS) {
        const size_t base = (size_t)row * features;
        const Vec<T, V>* xs = reinterpret_cast<const Vec<T, V>*>(x + base);
        const Vec<T, V>* gs = reinterpret_cast<const Vec<T, V>*>(grad + base);
        Vec<T, V>* dxs = reinterpret_cast<Vec<T, V>*>(grad_input + base);
        const float mu = mean[row];
        const float inv = rstd[row];

        float sums[2] = {0.0f, 0.0f};  // g, g * xhat
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const unsigned i = k * ROW_THREADS + t;
            if (i < vectors) {
                const Vec<T, V> a = xs[i];
                const Vec<T, V> d = gs[i];
                const Vec<T, V> w = ws[i];
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const float xhat = (to_float(a.v[e]) - mu) * inv;
                    const float g = to_float(d.v[e]) * to_float(w.v[e]);
                    sums[0] += g;
                    sums[1] += g * xhat;
                }
            }
        }
        row_sums<ROW_WARPS, 2>(sums, scratch);
        const float mean_g = sums[0] / n;
        const float mean_gx = sums[1] / n;

#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const unsigned i = k * ROW_THREADS + t;
            if (i < vectors) {
                const Vec<T, V> a = xs[i];
                const Vec<T, V> d = gs[i];
                const Vec<T, V> w = ws[i];
                Vec<T, V> o;
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    const float xhat = (to_float(a.v[e]) - mu) * inv;
                    const float dy = to_float(d.v[e]);
                    const float g = dy * to_float(w.v[e]);
                    o.v[e] = from_float<T>(inv * (g - mean_g - xhat * mean_gx));
                    acc_weight[k][e] += dy * xhat;
                    acc_bias[k][e] += dy;
                }
                dxs[i] = o;
            }
        }
    }

    float* pw = partial_weight + (size_t)blockIdx.x * features;
    float* pb = partial_bias + (size_t)blockIdx.x * features;
    if constexpr (ROWS == 1) {
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const unsigned i = k * ROW_THREADS + t;
            if (i < vectors) {
                Vec<float, V> a;
                Vec<float, V> b;
#pragma unroll
                for (int e = 0; e < V; ++e) {
                    a.v[e] = acc_weight[k][e];
                    b.v[e] = acc_bias[k][e];
                }
                reinterpret_cast<Vec<float, V>*>(pw)[i] = a;
                reinterpret_cast<Vec<float, V>*>(pb)[i] = b;
            }
        }
    } else {
        __shared__ float groups[ROWS][2][CAPACITY];
#pragma unroll
        for (int k = 0; k < VPT; ++k) {
            const unsigned i = k * ROW_THREADS + t;
#pragma unroll
            for (int e = 0; e < V; ++e) {
                groups[group][0][i * V + e] = acc_weight[k][e];
                groups[group][1][i * V + e] = acc_bias[k][e];
            }
        }
        __syncthreads();
        for (unsigned j = threadIdx.x; j < features; j += ROWS * ROW_THREADS) {
            float a = 0.0f;
            float b = 0.0f;
#pragma unroll
            for (int r = 0; r < ROWS; ++r) {
                a += groups[r][0][j];
                b += groups[r][1][j];
            }
            pw[j] = a;
            pb[j] = b;
        }
    }
}

// grad_weight[j] and grad_bias[j] from `parts` rows of partial sums, in a fixed order: the parts
// y, y + FINISH_Y, ... are added for each y < FINISH_Y, then those FINISH_Y sums in y order.
// finish() spreads this over a FINISH_X x FINISH_Y block (unit (tx, ty) adds the parts of
// ty for column blockIdx.x * FINISH_X + tx, then unit (tx, 0) adds the FINISH_Y results);
// backward_fused() runs it one column per thread. Both add the same values in the same order,
// so a backward gives the same bits whichever of them reduces.
constexpr int FINISH_X = 32;
constexpr int FINISH_Y = 16;

// The parts y, y + FINISH_Y, ... of column j, read through L2 (another block wrote them in
// this launch, or the previous launch did).
__device__ __forceinline__ void part_sums(const float* __restrict__ partial_weight,
                                          const float* __restrict__ partial_bias, unsigned j,
                                          unsigned y, unsigned features, unsigned parts,
                                          float& a, float& b) {
    a = 0.0f;
    b = 0.0f;
#pragma unroll 4
    for (unsigned p = y; p < parts; p += FINISH_Y) {
        a += __ldcg(partial_weight + (size_t)p * features + j);
        b += __ldcg(partial_bias + (size_t)p * features + j);
    }
}

template <typename T>
__device__ __forceinline__ void finish(const float* __restrict__ partial_weight,
                                       const float* __restrict__ partial_bias,
                                       T* __restrict__ grad_weight, T* __restrict__ grad_bias,
                                       unsigned features, unsigned parts) {
    __shared__ float sw[FINISH_Y][FINISH_X + 1];
    __shared__ float sb[FINISH_Y][FINISH_X + 1];
    const unsigned tx = threadIdx.x;
    const unsigned ty = threadIdx.y;
    const unsigned j = blockIdx.x * FINISH_X + tx;
    float a = 0.0f;
    float b = 0.0f;
    if (j < features) {
        part_sums(partial_weight, partial_bias, j, ty, features, parts, a, b);
    }
    sw[ty][tx] = a;
    sb[ty][tx] = b;
    __syncthreads();
    if (ty == 0 && j < features) {
        float tw = 0.0f;
        float tb = 0.0f;
#pragma unroll
        for (int y = 0; y < FINISH_Y; ++y) {
            tw += sw[y][tx];
            tb += sb[y][tx];
        }
        grad_weight[j] = from_float<T>(tw);
        grad_bias[j] = from_float<T>(tb);
    }
}

// backward() and finish() in one launch, for backwards whose partial sums are few. `scratch`
// holds the partial rows of the weight, then those of the bias, then a u32 ticket counter.
// Every block writes its partial row as backward() does, then takes a ticket; the block that
// takes the last one adds the partial rows as finish() does and sets the counter back to 0
// for the next launch. The host gives each stream a scratch of its own, zeroed when made:
// launches on one stream run one after another, so no two running launches share one.
template <typename T, int V, int VPT, int ROW_WARPS, int ROWS>
__device__ __forceinline__ void backward_fused(
    const T* __restrict__ x, const T* __restrict__ weight, const T* __restrict__ grad,
    const float* __restrict__ mean, const float* __restrict__ rstd, T* __restrict__ grad_input,
    T* __restrict__ grad_weight, T* __restrict__ grad_bias, float* __restrict__ scratch,
    unsigned rows, unsigned features) {
    const size_t parts = (size_t)gridDim.x * features;
    float* partial_weight = scratch;
    float* partial_bias = scratch + parts;
    unsigned* counter = reinterpret_cast<unsigned*>(scratch + 2 * parts);
    backward<T, V, VPT, ROW_WARPS, ROWS>(x, weight, grad, mean, rstd, grad_input, partial_weight,
                                         partial_bias, rows, features);
    __shared__ bool last;
    __threadfence();  // this block's partial row, visible before its ticket
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(counter, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) {
        return;
    }
    __threadfence();
    for (unsigned j = threadIdx.x; j < features; j += blockDim.x) {
        float tw = 0.0f;
        float tb = 0.0f;
#pragma unroll
        for (unsigned y = 0; y < FINISH_Y; ++y) {
            float a;
            float b;
            part_sums(partial_weight, partial_bias, j, y, features, gridDim.x, a, b);
            tw += a;
            tb += b;
        }
        grad_weight[j] = from_float<T>(tw);
        grad_bias[j] = from_float<T>(tb);
    }
    if (threadIdx.x == 0) {
        *counter = 0u;
    }
}

}  // namespace ruda_ln
