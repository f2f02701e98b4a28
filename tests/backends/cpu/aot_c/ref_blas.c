/* A tiny reference Fortran BLAS (sgemm_, dgemm_): what an object compiled with blas=True links against in the
   tests, where no system BLAS is installed. Column-major, every argument by pointer, 32-bit integers. */
#define GEMM(NAME, T)                                                                                     \
  void NAME(const char* ta, const char* tb, const int* m, const int* n, const int* k, const T* alpha,     \
            const T* a, const int* lda, const T* b, const int* ldb, const T* beta, T* c, const int* ldc) { \
    for (int j = 0; j < *n; j++)                                                                          \
      for (int i = 0; i < *m; i++) {                                                                      \
        T sum = 0;                                                                                        \
        for (int l = 0; l < *k; l++) {                                                                    \
          T x = (*ta == 'N' || *ta == 'n') ? a[i + (long)l * *lda] : a[l + (long)i * *lda];               \
          T y = (*tb == 'N' || *tb == 'n') ? b[l + (long)j * *ldb] : b[j + (long)l * *ldb];               \
          sum += x * y;                                                                                   \
        }                                                                                                 \
        T* out = &c[i + (long)j * *ldc];                                                                  \
        *out = *alpha * sum + (*beta == 0 ? 0 : *beta * *out);                                            \
      }                                                                                                   \
  }

GEMM(sgemm_, float)
GEMM(dgemm_, double)
