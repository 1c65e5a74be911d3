// The hand-written CUDA kernel the NVRTC and HIP compiler tests compile and run: a 16x16-tiled
// SGEMM with shared memory and barriers, in the CUDA spelling HIP also accepts.
#pragma once

namespace mt::gpu_test {

// A 16x16-tiled SGEMM, c = a * b for n x n row-major matrices; bounds-checked so that n need
// not be a multiple of the tile. Written like generated kernels: no #include of its own.
inline constexpr const char* kTiledMatmul = R"(
#define TILE 16
extern "C" __global__ void matmul(const float* __restrict__ a, const float* __restrict__ b,
                                  float* __restrict__ c, int n) {
  __shared__ float as[TILE][TILE];
  __shared__ float bs[TILE][TILE];
  const int row = blockIdx.y * TILE + threadIdx.y;
  const int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int t = 0; t < (n + TILE - 1) / TILE; ++t) {
    const int ac = t * TILE + threadIdx.x;
    const int br = t * TILE + threadIdx.y;
    as[threadIdx.y][threadIdx.x] = (row < n && ac < n) ? a[row * n + ac] : 0.f;
    bs[threadIdx.y][threadIdx.x] = (br < n && col < n) ? b[br * n + col] : 0.f;
    __syncthreads();
    for (int k = 0; k < TILE; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < n && col < n) c[row * n + col] = acc;
}
)";

} // namespace mt::gpu_test
