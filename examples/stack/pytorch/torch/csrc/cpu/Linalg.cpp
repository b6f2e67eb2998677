// The sample torch's CPU linear algebra (torch/lib/libtorch_cpu.so): torch.linalg.svd through
// LAPACK's sgesdd, as ATen's BatchLinearAlgebra.cpp (lapackSvd) calls it. Linked against the
// BLAS the build found (OpenBLAS_HOME, -l$OpenBLAS_LIB_NAME), as torch's FindOpenBLAS does.
#include <algorithm>
#include <cstddef>
#include <vector>

// LAPACK's Fortran interface; the trailing length is gfortran's hidden CHARACTER length.
extern "C" void sgesdd_(const char* jobz, const int* m, const int* n, float* a, const int* lda, float* s,
                        float* u, const int* ldu, float* vt, const int* ldvt, float* work, const int* lwork,
                        int* iwork, int* info, std::size_t jobz_len);

// Full SVD of the column-major m x n matrix `a` (overwritten): `s` gets min(m, n) singular
// values, `u` the m x m and `vt` the n x n factors, column-major. Returns LAPACK's info.
extern "C" int torch_sample_svd(int m, int n, float* a, float* s, float* u, float* vt) {
  const char jobz = 'A';
  const int lda = std::max(1, m), ldu = std::max(1, m), ldvt = std::max(1, n);
  std::vector<int> iwork(8 * static_cast<std::size_t>(std::max(1, std::min(m, n))));
  float query = 0;
  int lwork = -1, info = 0;
  sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, &query, &lwork, iwork.data(), &info, 1);
  if (info != 0) return info;
  lwork = std::max(1, static_cast<int>(query));
  std::vector<float> work(static_cast<std::size_t>(lwork));
  sgesdd_(&jobz, &m, &n, a, &lda, s, u, &ldu, vt, &ldvt, work.data(), &lwork, iwork.data(), &info, 1);
  return info;
}
